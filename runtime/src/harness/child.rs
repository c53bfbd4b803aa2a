//! The child process of one run (`run_loadgen_test <dir>`): the plan's backend behind a SUT and a
//! QSL, LoadGen's `StartTest` with the run directory's `user.conf` (and `audit.config`), and the
//! accuracy score after an accuracy run.
//!
//! A stop signal at any time aborts LoadGen (which flushes the logs written so far), marks the run
//! directory ABORTED and ends the process at once with `_exit`: engine and LoadGen threads may
//! still be running, and running exit handlers under them crashed the process (a tract worker
//! "overflowed its stack" in 2 of 3 Ctrl-Cs).

use super::backends::{EmptyQsl, FixedLatencyEngine, NullSut};
use super::batcher::{BatcherConfig, BatchingSut};
use super::probe::{EngineMeasure, Measure, ProbeError};
use super::serving_sut::ServingSut;
use super::{batcher_config, engine_batcher_config, probe};
use crate::benchmarks::{self, Drive, WorkloadSpec};
use crate::dataset::qsl::SampleLibrary;
use crate::engines::Engine;
use crate::engines::serving::client::ServingWork;
use crate::engines::serving::measure;
use crate::fsutil::{FsError, write_atomic};
use crate::progress::{Progress, Work};
use crate::rundir::plan::{Backend, RunMode, RunPlan, read_plan};
use crate::rundir::{ACCURACY_LOG, ACCURACY_NOTE, ACCURACY_TXT, AUDIT_CONFIG, EFFECTIVE_SETTINGS, PROBE, USER_CONF, mark_aborted};
use crate::signals;
use crate::submittable::NonSubmittable;
use mlperf_config::render::{self, ConfPurpose};
use mlperf_config::{Scenario, Tables};
use mlperf_loadgen::{Qsl, Sut};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// What stopped a run's child once its plan was read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ChildError {
    /// LoadGen refused the settings or the test.
    #[error(transparent)]
    Loadgen(#[from] mlperf_loadgen::LoadgenError),
    /// A file of the run directory could not be written.
    #[error(transparent)]
    Write(#[from] FsError),
    #[error(transparent)]
    Probe(#[from] ProbeError),
    /// Scoring the accuracy log failed (the `Benchmark::score` boundary is still text).
    #[error("{0}")]
    Score(String),
    /// The serving SUT failed (its boundary is still text).
    #[error("{0}")]
    Serving(String),
    /// The run directory names a config, round or benchmark this binary does not hold.
    #[error("this binary has no {0}")]
    NotInBinary(String),
    #[error("the engine failed on {count} batches; first: {first}")]
    EngineFailed { count: usize, first: String },
}

impl From<ChildError> for crate::Error {
    fn from(e: ChildError) -> crate::Error {
        match e {
            ChildError::NotInBinary(_) => crate::Error::Config(e.to_string()),
            _ => crate::Error::Other(e.to_string()),
        }
    }
}

/// One LoadGen test in `dir`, as its plan says.
pub fn run_one(tables: &'static Tables, dir: &Path) -> Result<(), crate::Error> {
    signals::install()?;
    stop_on_signal(dir);
    let plan = read_plan(dir)?;
    if mlperf_loadgen::LINKED_VERSION != plan.loadgen_version {
        return Err(crate::Error::Config(format!(
            "round {} needs LoadGen {}, but this binary links {}; build with the round's LoadGen feature",
            plan.round,
            plan.loadgen_version,
            mlperf_loadgen::LINKED_VERSION
        )));
    }
    let set = plan.sample_set();
    if plan.performance_sample_count > plan.total_sample_count {
        // LoadGen would index past the sample library (a crash, not an error).
        return Err(crate::Error::Config(format!(
            "performance_sample_count {} is more than the {} samples of {}'s {} set; lower performance_sample_count_override",
            plan.performance_sample_count,
            plan.total_sample_count,
            plan.benchmark,
            set.name()
        )));
    }
    let audit = plan.audit_test.map(|_| dir.join(AUDIT_CONFIG));
    let run = LoadgenRun { dir, plan: &plan, audit: audit.as_deref() };
    let qsl = EmptyQsl { total: plan.total_sample_count as usize, performance: plan.performance_sample_count as usize };
    let engine_errors = match plan.backend {
        Backend::Null => {
            let completed = Arc::new(AtomicU64::new(0));
            let sut = NullSut { completed: completed.clone(), token_latencies: plan.token_latencies };
            run.start(&sut, &qsl, completed)?;
            Vec::new()
        }
        Backend::FixedLatency { latency_us } => {
            let engine: Arc<dyn Engine> = Arc::new(FixedLatencyEngine { latency: Duration::from_micros(latency_us), tokens: plan.token_latencies });
            let config = BatcherConfig { token_latencies: plan.token_latencies, ..batcher_config(&plan.settings, &plan.benchmark) };
            run.batched("mlperf fixed-latency SUT", vec![engine; plan.devices], Arc::new(qsl), config)?
        }
        Backend::Config => {
            let family = benchmarks::family(&plan.benchmark);
            let work = family.open(&WorkloadSpec::of_plan(&plan))?;
            if !work.caveats.is_empty() {
                mark_non_submittable(dir, &work.caveats)?;
            }
            let library = work.library.clone();
            let errors = match &work.drive {
                Drive::Batched(devices) => {
                    let config = BatcherConfig { token_latencies: plan.token_latencies, ..engine_batcher_config(&plan.settings, &plan.benchmark) };
                    if plan.probe_rate {
                        probe_rate(tables, dir, &plan, &library, &|loaded, settings| {
                            probe::probe(plan.scenario, &EngineMeasure { devices, source: library.as_ref(), loaded, batcher: config }, settings)
                        })?;
                    }
                    run.batched(&format!("mlperf {} SUT", plan.benchmark), devices.clone(), library.clone(), config)?
                }
                Drive::Serving(work) => {
                    if plan.probe_rate {
                        probe_rate(tables, dir, &plan, &library, &|loaded, settings| probe::probe(plan.scenario, &ServingMeasure { work, loaded }, settings))?;
                    }
                    run.serving(work.clone(), library.clone())?;
                    Vec::new()
                }
            };
            if plan.mode == RunMode::AccuracyOnly && errors.is_empty() {
                score(dir, &plan, family, &work)?;
            }
            errors
        }
    };
    remove_empty_trace(dir);
    if !engine_errors.is_empty() {
        return Err(ChildError::EngineFailed { count: engine_errors.len(), first: engine_errors[0].to_string() }.into());
    }
    Ok(())
}

/// Adds `reasons` found while opening the workload to the run's `NON_SUBMITTABLE.txt` (its
/// plan's reasons first), and says so.
fn mark_non_submittable(dir: &Path, reasons: &[NonSubmittable]) -> Result<(), crate::rundir::RunDirError> {
    for reason in reasons {
        tracing::warn!("not submittable: {reason}");
    }
    crate::rundir::add_non_submittable(dir, reasons)
}

/// Scores an accuracy run into `accuracy.txt`. Synthetic workloads say what their score means
/// (or that there is nothing to score) in `ACCURACY_NOTE.txt`.
fn score(dir: &Path, plan: &RunPlan, family: &dyn benchmarks::Benchmark, work: &benchmarks::Workload) -> Result<(), ChildError> {
    if let Drive::Serving(_) = work.drive
        && work.synthetic
        && !family.scores_generated_data()
    {
        let note = "synthetic prompts answered by the configured endpoints: there is no reference output to score, so no accuracy.txt; never submittable\n";
        return Ok(write_atomic(&dir.join(ACCURACY_NOTE), note.as_bytes())?);
    }
    let scoring = Progress::phase(format!("{} accuracy scoring", plan.label()));
    let scored = family.score(&plan.settings, &dir.join(ACCURACY_LOG), plan.sample_set()).map_err(|e| ChildError::Score(e.to_string()))?;
    drop(scoring);
    crate::accuracy::write_accuracy_txt(&dir.join(ACCURACY_TXT), &scored.text)?;
    if work.synthetic {
        let note = "synthetic workload: accuracy measures agreement with the generated data's own ground truth (the CPU engines: the reference CPU engine's labels), not the benchmark's dataset; never submittable\n";
        write_atomic(&dir.join(ACCURACY_NOTE), note.as_bytes())?;
    }
    tracing::info!("{}: {}", plan.benchmark, scored.text.trim());
    Ok(())
}

/// A watcher that, on a stop signal, aborts LoadGen, marks the run and ends the process.
fn stop_on_signal(dir: &Path) {
    let dir = dir.to_path_buf();
    std::thread::spawn(move || {
        let signal = loop {
            if let Some(signal) = signals::received() {
                break signal;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        // LoadGen cannot resume after an abort: flush its logs, record why, and leave.
        mlperf_loadgen::abort_test();
        remove_empty_trace(&dir);
        mark_aborted(&dir, signal);
        tracing::warn!("{}: run aborted, partial logs kept in {}", signal.name(), dir.display());
        // SAFETY: _exit ends the process without running exit handlers or destructors, which
        // other threads (LoadGen's, the engines') may still be using; the logs are flushed above.
        unsafe { libc::_exit(signal.exit_code()) }
    });
}

/// LoadGen always creates the trace file; it is empty with tracing off and no submission wants it.
fn remove_empty_trace(dir: &Path) {
    let trace = dir.join("mlperf_log_trace.json");
    if std::fs::metadata(&trace).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(trace);
    }
}

/// The LoadGen test of a run directory.
struct LoadgenRun<'a> {
    dir: &'a Path,
    plan: &'a RunPlan,
    audit: Option<&'a Path>,
}

impl LoadgenRun<'_> {
    /// Runs the test with `sut` and `qsl`, showing progress from `completed`.
    fn start(&self, sut: &dyn Sut, qsl: &dyn Qsl, completed: Arc<AtomicU64>) -> Result<(), ChildError> {
        let plan = self.plan;
        let scenario = match plan.scenario.loadgen() {
            Scenario::Offline => mlperf_loadgen::Scenario::Offline,
            Scenario::Server | Scenario::Interactive => mlperf_loadgen::Scenario::Server,
            Scenario::SingleStream => mlperf_loadgen::Scenario::SingleStream,
            Scenario::MultiStream => mlperf_loadgen::Scenario::MultiStream,
        };
        let mut settings = mlperf_loadgen::TestSettings::from_user_conf(self.dir.join(USER_CONF), &plan.loadgen_model, scenario)?;
        settings.set_mode(plan.mode.loadgen());
        write_atomic(&self.dir.join(EFFECTIVE_SETTINGS), format!("{:#?}\n", settings.effective()).as_bytes())?;
        let accuracy = plan.mode == RunMode::AccuracyOnly;
        let work = Work {
            label: plan.label(),
            unit: Some("samples"),
            expected: accuracy.then_some(plan.total_sample_count),
            min_duration: (!accuracy).then(|| Duration::from_millis(plan.min_duration_ms)),
        };
        let _progress = Progress::start(work, completed);
        let log = mlperf_loadgen::LogSettings::in_dir(self.dir);
        Ok(mlperf_loadgen::start_test(sut, qsl, &settings, &log, self.audit)?)
    }

    /// Runs the test through the batching SUT over `devices`; returns the engine errors.
    fn batched<L: Qsl + crate::engines::SampleSource + 'static>(
        &self,
        name: &str,
        devices: Vec<Arc<dyn Engine>>,
        library: Arc<L>,
        config: BatcherConfig,
    ) -> Result<Vec<String>, ChildError> {
        let sut = BatchingSut::start(name, devices, library.clone(), config);
        let result = self.start(&sut, library.as_ref(), sut.counters_completed());
        let errors = sut.finish();
        result?;
        Ok(errors)
    }

    /// Runs the test through the serving SUT; a failed request ends the process (see
    /// [`ServingSut`]). The endpoints' record goes into `serving.json`.
    fn serving(&self, work: ServingWork, library: Arc<SampleLibrary>) -> Result<(), ChildError> {
        let sut = ServingSut::start(work, self.plan.token_latencies, self.dir).map_err(serving_failed)?;
        let result = self.start(&sut, library.as_ref(), sut.completed());
        let stats = sut.finish().map_err(serving_failed)?;
        for s in stats.iter().filter(|s| s.down.is_some()) {
            tracing::warn!("serving endpoint {} went down during the run: {}", s.url, s.down.as_deref().unwrap_or_default());
        }
        result
    }
}

/// The serving SUT's failure, whatever text or error type its boundary gives.
fn serving_failed(e: impl std::fmt::Display) -> ChildError {
    ChildError::Serving(e.to_string())
}

/// Serving endpoints on loaded samples: closed loops of requests.
struct ServingMeasure<'a> {
    work: &'a ServingWork,
    loaded: &'a [usize],
}

impl ServingMeasure<'_> {
    fn closed_loop(&self, in_flight: usize, duration: Duration) -> Result<measure::ClosedLoop, ProbeError> {
        let request = |k: usize| (self.work.request)(self.loaded[k % self.loaded.len()]);
        Ok(measure::closed_loop(self.work.options.clone(), &request, measure::Shape::all_at_once(in_flight, Duration::from_millis(500), duration))?)
    }
}

impl Measure for ServingMeasure<'_> {
    fn throughput(&self, duration: Duration) -> Result<f64, ProbeError> {
        // As many in flight as the endpoints take: what an Offline query keeps them at.
        let options = &self.work.options;
        let in_flight = (options.per_endpoint_limit * options.endpoints.len()).min(self.loaded.len().max(1));
        Ok(self.closed_loop(in_flight, duration)?.samples_per_s())
    }

    fn query_latency(&self, query: usize, duration: Duration) -> Result<Duration, ProbeError> {
        let measured = self.closed_loop(query, duration)?;
        Ok(measured.elapsed / (measured.completed / query as u64).max(1) as u32)
    }
}

/// Probes on the loaded samples, setting the expected rate in the settings; a line for the user.
type ProbeOn<'a> = dyn Fn(&[usize], &mut mlperf_config::Settings) -> Result<String, ProbeError> + 'a;

/// Measures what answers the samples and rewrites the run's `user.conf` with the expected rate it
/// supports (`probe`), recording the measurement in `probe.txt`.
fn probe_rate(tables: &'static Tables, dir: &Path, plan: &RunPlan, library: &SampleLibrary, probe_on: &ProbeOn) -> Result<(), ChildError> {
    let config = tables
        .configs
        .iter()
        .find(|c| c.system == plan.system && c.benchmark == plan.benchmark && c.scenario == plan.scenario && c.workload == plan.workload)
        .ok_or_else(|| ChildError::NotInBinary(format!("config {}/{}/{}/{}", plan.system, plan.benchmark, plan.scenario, plan.workload.section_name())))?;
    let round = tables.round(&plan.round).ok_or_else(|| ChildError::NotInBinary(format!("round {}", plan.round)))?;
    let bench = round.benchmark(&plan.benchmark).ok_or_else(|| ChildError::NotInBinary(format!("benchmark {} in round {}", plan.benchmark, round.id)))?;
    let loaded: Vec<usize> = (0..(plan.performance_sample_count as usize).min(library.total_sample_count())).collect();
    library.load_samples(&loaded);
    let mut settings = plan.settings.clone();
    let measured = probe_on(&loaded, &mut settings);
    library.unload_samples(&loaded);
    let line = measured?;
    tracing::info!("{}: {line}", plan.label());
    write_atomic(&dir.join(PROBE), format!("{line}\n").as_bytes())?;
    let field = probe::rate_field(plan.scenario).expect("probed scenarios have a rate field");
    let probed = probe::probed_config(config, settings, field);
    let purpose = ConfPurpose::TestRun(super::test_run_limits(&plan.overrides, &plan.settings));
    Ok(write_atomic(&dir.join(USER_CONF), render::user_conf(&probed, round, bench, purpose).as_bytes())?)
}
