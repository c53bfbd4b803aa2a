//! `mlperf bench engine`: how much of an engine's speed reaches LoadGen through our harness.
//!
//! For one config, in one command and under the same machine load:
//! - (a) the configured engines alone: every device with as many concurrent workers as the harness
//!   gives it, running batches of the configured size on loaded samples (no batcher, no LoadGen);
//! - (b) the same engines through the batching SUT under a real LoadGen Offline run; (b)/(a) is the
//!   harness's efficiency;
//! - (c) a null engine (answers at once) through the same batching SUT under LoadGen Offline and
//!   Server (the highest VALID QPS): the harness's ceiling and its CPU cost per sample.
//!
//! The engines come from the benchmark family's `open`, the function the harness runs them with,
//! so nothing here depends on the benchmark or the kind of engine.

use super::{BenchError, highest_passing, server_settings, setting};
use crate::benchmarks::{self, WorkloadSpec};
use crate::cpu::CpuClock;
use crate::dataset::SampleSet;
use crate::dataset::qsl::SampleLibrary;
use crate::engines::Engine;
use crate::engines::gpu::spec::PlanIdentity;
use crate::harness::backends::FixedLatencyEngine;
use crate::harness::batcher::{BatcherConfig, BatchingSut};
use crate::harness::probe::{self, HEADROOM};
use crate::harness::{device_count, engine_batcher_config, performance_sample_count};
use crate::rundir::logs::{DetailLog, Validity};
use crate::select::Selected;
use mlperf_config::{Round, Scenario, SystemInfo};
use mlperf_loadgen::{LogSettings, Qsl, TestMode, TestSettings};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

/// Rate the null engine's Offline pilot run asks LoadGen for, before its real rate is known.
const NULL_PILOT_QPS: f64 = 100_000.0;
/// No Server search goes above this rate (LoadGen would allocate its schedule for nothing).
const SERVER_QPS_CEILING: f64 = 64e6;

#[derive(Debug, Clone, Copy)]
pub struct EngineBenchOptions {
    /// Length of each measurement: the engine-alone loop and every LoadGen run's minimum duration.
    pub seconds: f64,
    /// Whether to search the null engine's highest VALID Server QPS (many LoadGen runs).
    pub server_search: bool,
}

/// One measured row.
#[derive(Debug, Clone, PartialEq)]
pub struct Measurement {
    pub samples_per_s: f64,
    /// Process CPU time (all threads: LoadGen, batcher, workers, engine) per completed sample. For
    /// LoadGen runs this spans the whole test, so it includes loading the performance sample set
    /// (for synthetic data: generating it), which (a) does before its clock starts.
    pub cpu_us_per_sample: f64,
    /// LoadGen's `result_validity` (None for runs without LoadGen).
    pub validity: Option<Validity>,
}

/// What the table describes, besides the measurements.
#[derive(Debug, Clone, PartialEq)]
pub struct Subject {
    pub system: String,
    pub benchmark: String,
    pub scenario: String,
    pub engine: String,
    pub devices: usize,
    pub batcher: BatcherConfig,
    pub seconds: f64,
    pub loadgen_version: String,
    /// Synthetic data and model (never submittable): said in the table's heading.
    pub synthetic: bool,
}

/// Every row of the table. `null_server` is Err with the reason when there is no Server bound.
#[derive(Debug, Clone, PartialEq)]
pub struct EngineBenchReport {
    pub subject: Subject,
    pub engine_alone: Measurement,
    pub through_harness: Measurement,
    pub null_offline: Measurement,
    pub null_server: Result<(Measurement, u64), String>,
}

/// Runs the benchmark for `selected` (its effective settings) on `system` (round `round`), LoadGen
/// logs under `out`.
pub fn run(system: &SystemInfo, selected: &Selected, round: &Round, out: &Path, options: EngineBenchOptions) -> Result<EngineBenchReport, crate::Error> {
    let (config, settings) = (selected.config, &selected.settings);
    let bench = round.benchmark(&config.benchmark).ok_or_else(|| BenchError::NotInRound { round: round.id.to_string(), benchmark: config.benchmark.to_string() })?;
    let performance = performance_sample_count(bench, settings) as usize;
    let spec = WorkloadSpec {
        settings,
        plan: PlanIdentity { system: &config.system, scenario: config.scenario, workload: config.workload },
        total_samples: bench.accuracy_sample_count() as usize,
        performance_samples: performance,
        set: SampleSet::Accuracy,
        devices: device_count(system),
        output_limit: None,
    };
    let work = benchmarks::family(&config.benchmark).open(&spec)?;
    let devices = work.engines()?;
    let batcher = engine_batcher_config(settings, &config.benchmark);
    let duration = Duration::from_secs_f64(options.seconds);
    let mut runs = LoadgenRuns { dir: out.to_path_buf(), count: 0, library: work.library.clone(), batcher };

    let loaded: Vec<usize> = (0..performance.min(work.library.total_sample_count())).collect();
    work.library.load_samples(&loaded);
    let engine_alone = probe::engines_alone(devices, work.library.as_ref(), &loaded, batcher, duration);
    work.library.unload_samples(&loaded);
    let engine_alone = engine_alone?;
    let engine_alone = Measurement { samples_per_s: engine_alone.samples_per_s(), cpu_us_per_sample: engine_alone.cpu_us / engine_alone.samples.max(1) as f64, validity: None };

    let through_harness = runs.run("engine-offline", devices, &offline_settings(HEADROOM * engine_alone.samples_per_s, duration)?)?;

    let null_engine: Arc<dyn Engine> = Arc::new(FixedLatencyEngine::NULL);
    let null = vec![null_engine; devices.len()];
    let pilot = runs.run("null-offline-pilot", &null, &offline_settings(NULL_PILOT_QPS, Duration::from_secs(1))?)?;
    let null_offline = runs.run("null-offline", &null, &offline_settings(HEADROOM * pilot.samples_per_s, duration)?)?;

    let null_server = match bench.latency_constraint_ns(Scenario::Server) {
        None => Err(format!("round {} sets no Server latency bound for {}", round.id, config.benchmark)),
        Some(_) if !options.server_search => Err("--skip_server_search".to_string()),
        Some(latency_ns) => {
            let mut best: Option<(f64, Measurement)> = None;
            highest_passing::<BenchError>(null_offline.samples_per_s / 4.0, SERVER_QPS_CEILING, |qps| {
                let m = runs.run("null-server", &null, &server_settings(qps, latency_ns, duration.as_millis() as u64)?)?;
                let valid = m.validity == Some(Validity::Valid);
                if valid && best.as_ref().is_none_or(|(q, _)| qps > *q) {
                    best = Some((qps, m));
                }
                Ok(valid)
            })?;
            let (_, measured) = best.ok_or("the Server search found no VALID run")?;
            Ok((measured, latency_ns))
        }
    };

    let subject = Subject {
        system: system.id.to_string(),
        benchmark: config.benchmark.to_string(),
        scenario: config.scenario.name().to_string(),
        engine: devices[0].name().to_string(),
        devices: devices.len(),
        batcher,
        seconds: options.seconds,
        loadgen_version: mlperf_loadgen::LINKED_VERSION.to_string(),
        synthetic: work.synthetic,
    };
    Ok(EngineBenchReport { subject, engine_alone, through_harness, null_offline, null_server })
}

/// Performance-only Offline settings that issue about `duration` worth of samples at `expected_qps`.
fn offline_settings(expected_qps: f64, duration: Duration) -> Result<TestSettings, BenchError> {
    let mut s = TestSettings::new();
    s.set_scenario(mlperf_loadgen::Scenario::Offline);
    s.set_mode(TestMode::PerformanceOnly);
    s.set_u64("min_duration_ms", duration.as_millis() as u64).map_err(setting)?;
    s.set_u64("min_query_count", 1).map_err(setting)?;
    s.set_f64("offline_expected_qps", expected_qps.max(1.0)).map_err(setting)?;
    Ok(s)
}

/// LoadGen runs of engines through a fresh batching SUT each (as a harness run has), numbered
/// directories under `dir`.
struct LoadgenRuns {
    dir: PathBuf,
    count: usize,
    library: Arc<SampleLibrary>,
    batcher: BatcherConfig,
}

impl LoadgenRuns {
    fn run(&mut self, label: &str, devices: &[Arc<dyn Engine>], settings: &TestSettings) -> Result<Measurement, BenchError> {
        self.count += 1;
        let dir = self.dir.join(format!("{:02}-{label}", self.count));
        let sut = BatchingSut::start(&format!("mlperf bench {label}"), devices.to_vec(), self.library.clone(), self.batcher);
        let completed = sut.counters_completed();
        let cpu = CpuClock::start();
        let result = mlperf_loadgen::start_test(&sut, self.library.as_ref(), settings, &LogSettings::in_dir(&dir), None);
        let cpu_us = cpu.elapsed_us();
        let errors = sut.finish();
        result.map_err(|source| BenchError::Loadgen { dir: Some(dir.clone()), source })?;
        if let Some(first) = errors.first() {
            return Err(BenchError::EngineFailed { dir, batches: errors.len(), first: first.clone() });
        }
        let log = DetailLog::read(&dir.join(crate::rundir::DETAIL_LOG))?;
        let key = match settings.scenario() {
            mlperf_loadgen::Scenario::Server => "result_completed_samples_per_sec",
            _ => "result_samples_per_second",
        };
        let samples_per_s = log.f64(key).ok_or_else(|| BenchError::NoMetric { key, path: dir.join(crate::rundir::DETAIL_LOG) })?;
        let samples = completed.load(std::sync::atomic::Ordering::SeqCst).max(1);
        Ok(Measurement { samples_per_s, cpu_us_per_sample: cpu_us / samples as f64, validity: log.validity() })
    }
}

/// The table, ratio first (each row against (a), the engine alone).
pub fn render(report: &EngineBenchReport) -> String {
    let s = &report.subject;
    let b = &s.batcher;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{} {} config of {}: engine {}, {} device(s) x {} workers, batch {}, deque timeout {} us; {} s per measurement; LoadGen {}{}",
        s.benchmark,
        s.scenario,
        s.system,
        s.engine,
        s.devices,
        b.workers_per_device,
        b.batch_size,
        b.deque_timeout.as_micros(),
        s.seconds,
        s.loadgen_version,
        if s.synthetic { "; synthetic data and model (never submittable)" } else { "" }
    );
    let _ = writeln!(out, "| measurement | ratio to (a) | samples/s | wall us/sample | CPU us/sample | LoadGen result |");
    let _ = writeln!(out, "|---|---|---|---|---|---|");
    let base = report.engine_alone.samples_per_s;
    let mut row = |what: String, m: &Measurement| {
        let _ = writeln!(
            out,
            "| {what} | {:.3} | {:.1} | {:.2} | {:.2} | {} |",
            m.samples_per_s / base,
            m.samples_per_s,
            1e6 / m.samples_per_s,
            m.cpu_us_per_sample,
            m.validity.map_or("-", Validity::name)
        );
    };
    let workers = s.devices * b.workers_per_device;
    row(format!("(a) engine alone, {workers} concurrent workers, loaded samples"), &report.engine_alone);
    row("(b) engine through batching SUT, LoadGen Offline (ratio = harness efficiency)".into(), &report.through_harness);
    row("(c) null engine through batching SUT, LoadGen Offline (harness ceiling)".into(), &report.null_offline);
    match &report.null_server {
        Ok((m, latency_ns)) => row(format!("(c) null engine through batching SUT, LoadGen Server, highest VALID QPS at p99 <= {} ms", *latency_ns as f64 / 1e6), m),
        Err(why) => {
            let _ = writeln!(out, "| (c) null engine, LoadGen Server | - | - | - | - | not run: {why} |");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report() -> EngineBenchReport {
        let m = |samples_per_s: f64, cpu_us_per_sample: f64, validity: Option<Validity>| Measurement { samples_per_s, cpu_us_per_sample, validity };
        EngineBenchReport {
            subject: Subject {
                system: "CPU-dev".into(),
                benchmark: "resnet50".into(),
                scenario: "Offline".into(),
                engine: "cpu-tract:resnet50-32px".into(),
                devices: 1,
                batcher: BatcherConfig { batch_size: 8, deque_timeout: Duration::from_millis(10), workers_per_device: 2, use_deque_limit: false, token_latencies: false },
                seconds: 10.0,
                loadgen_version: "6.0.17".into(),
                synthetic: true,
            },
            engine_alone: m(400.0, 4990.0, None),
            through_harness: m(380.0, 5100.0, Some(Validity::Valid)),
            null_offline: m(200_000.0, 9.5, Some(Validity::Valid)),
            null_server: Ok((m(50_000.0, 14.25, Some(Validity::Valid)), 15_000_000)),
        }
    }

    #[test]
    fn table_puts_the_ratio_to_the_engine_alone_first() {
        let table = render(&report());
        let lines: Vec<&str> = table.lines().collect();
        assert_eq!(
            lines[0],
            "resnet50 Offline config of CPU-dev: engine cpu-tract:resnet50-32px, 1 device(s) x 2 workers, batch 8, deque timeout 10000 us; \
             10 s per measurement; LoadGen 6.0.17; synthetic data and model (never submittable)"
        );
        assert_eq!(lines[1], "| measurement | ratio to (a) | samples/s | wall us/sample | CPU us/sample | LoadGen result |");
        assert_eq!(lines[3], "| (a) engine alone, 2 concurrent workers, loaded samples | 1.000 | 400.0 | 2500.00 | 4990.00 | - |");
        assert_eq!(lines[4], "| (b) engine through batching SUT, LoadGen Offline (ratio = harness efficiency) | 0.950 | 380.0 | 2631.58 | 5100.00 | VALID |");
        assert_eq!(lines[5], "| (c) null engine through batching SUT, LoadGen Offline (harness ceiling) | 500.000 | 200000.0 | 5.00 | 9.50 | VALID |");
        assert_eq!(lines[6], "| (c) null engine through batching SUT, LoadGen Server, highest VALID QPS at p99 <= 15 ms | 125.000 | 50000.0 | 20.00 | 14.25 | VALID |");
        assert_eq!(lines.len(), 7);
    }

    #[test]
    fn table_says_why_the_server_row_is_missing() {
        let mut r = report();
        r.null_server = Err("round v6.1 sets no Server latency bound for llama2-70b".into());
        r.subject.synthetic = false;
        let table = render(&r);
        assert!(!table.lines().next().unwrap().contains("synthetic"));
        assert!(table.ends_with("| (c) null engine, LoadGen Server | - | - | - | - | not run: round v6.1 sets no Server latency bound for llama2-70b |\n"), "{table}");
    }
}
