//! `mlperf bench loadgen`: LoadGen's overhead through our binding against the same null SUT written
//! in C++ against the same LoadGen library, in one process and one run, interleaved so that machine
//! noise hits both sides alike. Reported: SingleStream "QPS w/ loadgen overhead" (median of the
//! repeats) and the highest Server QPS that stays VALID with a worker-pool SUT.
//!
//! `mlperf bench engine` (module [`engine`]): the configured engines alone, through the batching
//! SUT under LoadGen, and the harness's own ceiling with a null engine.
//!
//! `mlperf bench dataset` (module [`dataset`]): reading an LLM dataset pickle against pandas.

pub mod dataset;
pub mod engine;
pub mod llm;

use crate::benchmarks::llm::dataset::LlmDataError;
use crate::rundir::RunDirError;
use crate::rundir::logs::DetailLog;
use mlperf_loadgen::bench::{NullSutKind, run_cpp_null_sut, run_rust_null_sut};
use mlperf_loadgen::{LoadgenError, LogSettings, Scenario, TestMode, TestSettings};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Why a `mlperf bench` measurement has no figure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A LoadGen setting or test, with the run's directory where there is one.
    #[error("{where_}{source}", where_ = dir.as_ref().map(|d| format!("{}: ", d.display())).unwrap_or_default())]
    Loadgen { dir: Option<PathBuf>, source: LoadgenError },
    #[error(transparent)]
    Log(#[from] RunDirError),
    #[error("no {key} in {}", path.display())]
    NoMetric { key: &'static str, path: PathBuf },
    #[error("no rate down to {lo:.1}/s passes (started at {start:.1}/s)")]
    NoRatePasses { lo: f64, start: f64 },
    #[error("{}: the engine failed on {batches} batches; first: {first}", dir.display())]
    EngineFailed { dir: PathBuf, batches: usize, first: String },
    #[error("round {round} has no {benchmark}")]
    NotInRound { round: String, benchmark: String },
    #[error("--repeats must be at least 1")]
    NoRepeats,
    #[error("the two readers disagree: {ours:?} samples / prompt tokens here, {theirs:?} through pandas")]
    Disagree { ours: (usize, usize), theirs: (usize, usize) },
    #[error(transparent)]
    Dataset(#[from] LlmDataError),
    #[error("cannot read /proc/self/status: {0}")]
    ProcStatus(std::io::Error),
    #[error("/proc/self/status has no VmHWM")]
    NoPeakRss,
    #[error("cannot run the comparator {python}: {source}")]
    ComparatorSpawn { python: String, source: std::io::Error },
    #[error("the comparator ({python} with pandas) failed: {stderr}")]
    ComparatorFailed { python: String, stderr: String },
    #[error("the comparator printed {0:?}")]
    ComparatorOutput(String),
}

impl From<BenchError> for crate::Error {
    fn from(e: BenchError) -> crate::Error {
        match e {
            BenchError::Dataset(e) => e.into(),
            BenchError::NoRepeats => crate::Error::Usage(e.to_string()),
            e => crate::Error::Other(e.to_string()),
        }
    }
}

/// LoadGen's error outside a run directory (a setting).
fn setting(source: LoadgenError) -> BenchError {
    BenchError::Loadgen { dir: None, source }
}

#[derive(Debug, Clone, Copy)]
pub struct LoadgenBenchOptions {
    pub repeats: usize,
    pub duration_ms: u64,
    pub threads: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Side {
    Rust,
    Cpp,
}

struct Runner {
    dir: PathBuf,
    count: usize,
}

impl Runner {
    fn run(&mut self, side: Side, kind: NullSutKind, settings: &TestSettings) -> Result<DetailLog, BenchError> {
        self.count += 1;
        let dir = self.dir.join(format!("{:03}-{side:?}", self.count));
        let log = LogSettings::in_dir(&dir);
        match side {
            Side::Rust => run_rust_null_sut(kind, settings, &log),
            Side::Cpp => run_cpp_null_sut(kind, settings, &log),
        }
        .map_err(|source| BenchError::Loadgen { dir: Some(dir.clone()), source })?;
        Ok(DetailLog::read(&dir.join(crate::rundir::DETAIL_LOG))?)
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn single_stream_settings(duration_ms: u64) -> Result<TestSettings, BenchError> {
    let mut s = TestSettings::new();
    s.set_scenario(Scenario::SingleStream);
    s.set_mode(TestMode::PerformanceOnly);
    s.set_u64("min_duration_ms", duration_ms).map_err(setting)?;
    // A 1 us expectation makes LoadGen schedule far more queries than a null SUT can use in time.
    s.set_f64("single_stream_expected_latency_ns", 1000.0).map_err(setting)?;
    Ok(s)
}

/// A Server performance run at `qps` with a `latency_ns` bound on the 99th percentile.
pub(crate) fn server_settings(qps: f64, latency_ns: u64, duration_ms: u64) -> Result<TestSettings, BenchError> {
    let mut s = TestSettings::new();
    s.set_scenario(Scenario::Server);
    s.set_mode(TestMode::PerformanceOnly);
    s.set_u64("min_duration_ms", duration_ms).map_err(setting)?;
    s.set_f64("server_target_qps", qps).map_err(setting)?;
    s.set_u64("server_target_latency_ns", latency_ns).map_err(setting)?;
    Ok(s)
}

/// The highest rate (to 5 %) for which `passes` holds, assuming it holds below some threshold and
/// fails above it: doubling up from `start` (or halving down when `start` fails) to bracket the
/// threshold, then bisecting. Stops doubling at `ceiling` and fails after ten halvings.
pub(crate) fn highest_passing<E: From<BenchError>>(start: f64, ceiling: f64, mut passes: impl FnMut(f64) -> Result<bool, E>) -> Result<f64, E> {
    let (mut lo, mut hi);
    if passes(start)? {
        (lo, hi) = (start, start * 2.0);
        while passes(hi)? {
            lo = hi;
            hi *= 2.0;
            if hi > ceiling {
                return Ok(lo);
            }
        }
    } else {
        (lo, hi) = (start / 2.0, start);
        while !passes(lo)? {
            hi = lo;
            lo /= 2.0;
            if lo < start / 1024.0 {
                return Err(BenchError::NoRatePasses { lo, start }.into());
            }
        }
    }
    while hi - lo > 0.05 * hi {
        let mid = (lo + hi) / 2.0;
        if passes(mid)? { lo = mid } else { hi = mid }
    }
    Ok(lo)
}

/// The highest Server QPS (to 5 %) at which `side` stays VALID.
fn max_valid_server_qps(runner: &mut Runner, side: Side, threads: usize, duration_ms: u64) -> Result<f64, BenchError> {
    let kind = NullSutKind::WorkerPool { threads };
    highest_passing(50_000.0, 64e6, |qps| Ok(runner.run(side, kind, &server_settings(qps, 15_000_000, duration_ms)?)?.str("result_validity") == Some("VALID")))
}

/// Runs the comparison and returns the table (ratio first).
pub fn loadgen(out: &Path, options: LoadgenBenchOptions) -> Result<String, BenchError> {
    let mut runner = Runner { dir: out.to_path_buf(), count: 0 };
    let ss = single_stream_settings(options.duration_ms)?;
    let (mut rust_qps, mut cpp_qps) = (Vec::new(), Vec::new());
    for _ in 0..options.repeats.max(1) {
        for (side, acc) in [(Side::Rust, &mut rust_qps), (Side::Cpp, &mut cpp_qps)] {
            let log = runner.run(side, NullSutKind::Synchronous, &ss)?;
            let key = "result_qps_with_loadgen_overhead";
            acc.push(log.f64(key).ok_or_else(|| BenchError::NoMetric { key, path: runner.dir.join(format!("{:03}-{side:?}", runner.count)).join(crate::rundir::DETAIL_LOG) })?);
        }
    }
    let (rust_ss, cpp_ss) = (median(rust_qps.clone()), median(cpp_qps.clone()));
    let rust_server = max_valid_server_qps(&mut runner, Side::Rust, options.threads, options.duration_ms)?;
    let cpp_server = max_valid_server_qps(&mut runner, Side::Cpp, options.threads, options.duration_ms)?;
    let mut table = String::new();
    let _ = writeln!(
        table,
        "LoadGen {} null SUT, our binding (Rust) vs C++ on the same library; {} repeats, {} ms runs, {} Server workers",
        mlperf_loadgen::LINKED_VERSION,
        options.repeats,
        options.duration_ms,
        options.threads
    );
    let _ = writeln!(table, "| metric | ratio Rust/C++ | Rust | C++ |");
    let _ = writeln!(table, "|---|---|---|---|");
    let _ = writeln!(table, "| SingleStream QPS w/ loadgen overhead (median) | {:.3} | {rust_ss:.0} | {cpp_ss:.0} |", rust_ss / cpp_ss);
    let _ = writeln!(
        table,
        "| SingleStream QPS w/ loadgen overhead (min..max) | | {:.0}..{:.0} | {:.0}..{:.0} |",
        rust_qps.iter().copied().fold(f64::INFINITY, f64::min),
        rust_qps.iter().copied().fold(0.0, f64::max),
        cpp_qps.iter().copied().fold(f64::INFINITY, f64::min),
        cpp_qps.iter().copied().fold(0.0, f64::max)
    );
    let _ = writeln!(table, "| Server max VALID QPS (worker pool) | {:.3} | {rust_server:.0} | {cpp_server:.0} |", rust_server / cpp_server);
    Ok(table)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records every rate tried against a fixed threshold.
    fn search(start: f64, threshold: f64) -> (Result<f64, BenchError>, Vec<f64>) {
        let mut tried = Vec::new();
        let found = highest_passing::<BenchError>(start, 1e9, |r| {
            tried.push(r);
            Ok(r <= threshold)
        });
        (found, tried)
    }

    #[test]
    fn highest_passing_brackets_then_bisects_to_five_percent() {
        for (start, threshold) in [(1000.0, 37_000.0), (1000.0, 1000.0), (50_000.0, 3_100.0), (8.0, 7.99)] {
            let (found, tried) = search(start, threshold);
            let found = found.unwrap();
            assert!(found <= threshold && found > 0.95 * threshold, "start {start}, threshold {threshold}: {found} ({tried:?})");
            assert!(tried.len() < 20, "{tried:?}");
        }
    }

    #[test]
    fn highest_passing_stops_at_the_ceiling_and_gives_up_when_nothing_passes() {
        let mut tried = 0;
        assert_eq!(
            highest_passing::<BenchError>(1.0, 100.0, |_| {
                tried += 1;
                Ok(true)
            })
            .unwrap(),
            64.0
        );
        assert_eq!(tried, 7, "1, 2, ..., 64, then 128 is past the ceiling");
        let (found, tried) = search(100.0, -1.0);
        assert!(found.unwrap_err().to_string().contains("no rate"), "{tried:?}");
        assert_eq!(tried.len(), 11);
    }

    #[test]
    fn highest_passing_reports_errors_of_the_probe() {
        let found = highest_passing(1.0, 100.0, |_| Err(BenchError::NoPeakRss)).map_err(|e| e.to_string());
        assert_eq!(found, Err("/proc/self/status has no VmHWM".to_string()));
    }
}
