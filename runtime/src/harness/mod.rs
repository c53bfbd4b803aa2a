//! `run_harness`: one LoadGen test per (config, mode), each in a child process of this binary
//! (LoadGen applies mlperf.conf only on the first `FromConfig` of a process, and a child keeps a
//! crash contained to one run).
//!
//! Parent ([`run_all`]): plan every run ([`plan()`]), check the log directory is writable before
//! anything runs, write each run directory (`user.conf`, `run_plan.json`, `audit.config`,
//! `NON_SUBMITTABLE.txt`), run the child, read the logs and return the result rows (`rundir::report`).
//! A stop signal (SIGINT, SIGTERM, SIGHUP) is forwarded to the running child, which flushes
//! LoadGen's logs and leaves; the run is reported ABORTED and nothing further runs.
//! Child ([`child::run_one`], `run_loadgen_test <dir>`): settings from user.conf through LoadGen's
//! own parser, the backend's SUT and QSL, `StartTest`, logs and the accuracy score in the run
//! directory.

pub mod backends;
pub mod batcher;
pub mod child;
pub mod preflight;
pub mod probe;
pub mod rescore;
pub mod serving_engines;
pub mod serving_sut;
pub mod user_conf;

use crate::dataset::SampleSet;
use crate::error::Error;
use crate::fsutil::write_atomic;
use crate::rundir::logs::DetailLog;
use crate::rundir::plan::{self, Backend, RunMode, RunPlan, TestMode, prepare_dir};
use crate::rundir::report::{Outcome, RunStatus};
use crate::rundir::{self, mark_aborted};
use crate::select::Selected;
use crate::signals::{self, ChildExit};
use crate::submittable::NonSubmittable;
use batcher::BatcherConfig;
use mlperf_config::render::{self, ConfPurpose, TestRunLimits};
use mlperf_config::{AuditTest, BenchmarkRound, CompiledConfig, DatasetSource, EngineKind, Round, Scenario, Settings, SystemInfo};
use serving_engines::ServingEngines;
use std::fmt::Write as _;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The resolved command: what to run and how.
pub struct RunRequest {
    pub system: &'static SystemInfo,
    pub round: &'static Round,
    /// The configs, each with its effective settings (command-line overrides applied).
    pub configs: Vec<Selected>,
    pub test_mode: TestMode,
    pub test_run: bool,
    pub audit_test: Option<AuditTest>,
    pub backend: Backend,
    /// `--<field>=<value>` overrides as given (development builds only), for the record.
    pub overrides: Vec<(String, String)>,
    /// Reasons that make every run non-submittable (overrides, a system chosen against the hardware).
    pub caveats: Vec<NonSubmittable>,
    /// `--user_conf_path`: LoadGen's user.conf as given (checked), instead of the config's (a caveat).
    pub user_conf: Option<user_conf::UserConf>,
    pub log_dir: PathBuf,
    pub timestamp: String,
}

/// Now in NVIDIA's log timestamp format, `%Y.%m.%d-%H.%M.%S`, in local time as NVIDIA's run
/// directories are (`TZ` applies).
pub fn timestamp() -> String {
    // SAFETY: time(2) with no out-pointer, and localtime_r(3) writing into a zeroed tm we own.
    let tm = unsafe {
        let now = libc::time(std::ptr::null_mut());
        let mut tm: libc::tm = std::mem::zeroed();
        libc::localtime_r(&now, &mut tm);
        tm
    };
    format!("{:04}.{:02}.{:02}-{:02}.{:02}.{:02}", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec)
}

/// Samples the QSL holds in memory during a performance run: the config's override, else the round's.
pub fn performance_sample_count(bench: &BenchmarkRound, settings: &Settings) -> u64 {
    settings.performance_sample_count_override.unwrap_or(bench.performance_sample_count)
}

/// Devices the harness runs one engine instance on: the system's GPUs, or the whole machine as one
/// device when it has none.
pub fn device_count(system: &SystemInfo) -> usize {
    system.hardware.gpus_per_node.max(1) as usize
}

/// Batcher knobs from the config, with NVIDIA's LWIS defaults where the config is silent.
pub fn batcher_config(settings: &Settings, benchmark: &str) -> BatcherConfig {
    let component = mlperf_config::benchmark::find(benchmark).map_or(benchmark, |b| b.components[0]);
    BatcherConfig {
        batch_size: settings.batch_size(component).unwrap_or(1).max(1) as usize,
        deque_timeout: Duration::from_micros(settings.deque_timeout_usec.unwrap_or(10_000)),
        workers_per_device: settings.gpu_inference_streams.unwrap_or(1).max(1) as usize,
        use_deque_limit: settings.use_deque_limit.unwrap_or(false),
        token_latencies: false,
    }
}

/// How the batching SUT drives the configured engine: the config's batcher knobs, except that a
/// CPU engine's "device" is the whole machine and runs one single-threaded batch per core.
/// `gpu_inference_streams` (CUDA streams per GPU) does not apply to it: every scenario config
/// inherits NVIDIA's GPU value (1 for ResNet50 Offline), which once held the CPU engine to one
/// core of two (200 samples/s against 400).
pub fn engine_batcher_config(settings: &Settings, benchmark: &str) -> BatcherConfig {
    let mut config = batcher_config(settings, benchmark);
    if settings.engine == Some(EngineKind::Cpu) {
        config.workers_per_device = std::thread::available_parallelism().map_or(1, |n| n.get());
    }
    config
}

/// `--test_run`'s limits for a run with these command-line overrides and effective settings: an
/// explicit `--min_duration` or `--min_query_count` wins over the test run's defaults.
pub fn test_run_limits(overrides: &[(String, String)], settings: &Settings) -> TestRunLimits {
    let explicit = |field: &str| overrides.iter().any(|(f, _)| f == field);
    TestRunLimits { min_duration_ms: settings.min_duration.filter(|_| explicit("min_duration")), min_query_count: settings.min_query_count.filter(|_| explicit("min_query_count")) }
}

/// What went wrong in the parent around the runs.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum HarnessError {
    #[error("cannot write logs under {}: {source}; fix the permissions or pass --log_dir", .dir.display())]
    LogDir { dir: PathBuf, source: std::io::Error },
    #[error("cannot find this binary: {0}")]
    NoExe(std::io::Error),
    #[error("round {round} has no {benchmark}")]
    NotInRound { round: String, benchmark: String },
    #[error("cannot start the run of {}: {source}", .dir.display())]
    Spawn { dir: PathBuf, source: std::io::Error },
    #[error("waiting for the run of {}: {source}", .dir.display())]
    Wait { dir: PathBuf, source: std::io::Error },
    /// A file of a run directory or the log root could not be written (a full disk).
    #[error(transparent)]
    Write(#[from] crate::rundir::RunDirError),
    #[error(transparent)]
    Signals(#[from] signals::SignalError),
}

impl From<HarnessError> for Error {
    fn from(e: HarnessError) -> Error {
        match e {
            HarnessError::NotInRound { .. } => Error::Config(e.to_string()),
            _ => Error::Other(e.to_string()),
        }
    }
}

/// What [`run_all`] ran: the rows of the runs that finished, and the error that stopped it before
/// the rest (a file that could not be written, a serving engine that did not start). The rows are
/// shown either way.
pub struct Ran {
    pub outcomes: Vec<Outcome>,
    pub error: Option<Error>,
}

impl Ran {
    /// The rows, or the error, for callers that show nothing of a partial set of runs.
    pub fn into_result(self) -> Result<Vec<Outcome>, Error> {
        match self.error {
            Some(e) => Err(e),
            None => Ok(self.outcomes),
        }
    }
}

/// Runs every planned test and returns the outcome rows. A stop signal ends the loop after the
/// running child has stopped; its row says ABORTED. An error ends it too, keeping the rows of the
/// runs that finished before it.
pub fn run_all(req: &RunRequest) -> Ran {
    let mut outcomes = Vec::new();
    let error = run_each(req, &mut outcomes).err();
    if error.is_some() && !outcomes.is_empty() {
        let total = req.configs.len() * req.test_mode.runs().len();
        tracing::warn!("{} of {total} runs finished before the error below; the rest did not run", outcomes.len());
    }
    Ran { outcomes, error }
}

/// [`run_all`]'s loop, pushing each finished run's row onto `outcomes`.
fn run_each(req: &RunRequest, outcomes: &mut Vec<Outcome>) -> Result<(), Error> {
    let root = new_run_root(&req.log_dir, &req.timestamp)?;
    let exe = std::env::current_exe().map_err(HarnessError::NoExe)?;
    signals::install().map_err(HarnessError::from)?;
    let (total, started) = (req.configs.len() * req.test_mode.runs().len(), Instant::now());
    for selected in &req.configs {
        let config = selected.config;
        let mut settings = selected.settings.clone();
        if req.audit_test.is_some() {
            // Audits of Server run at the config's derated target (a Server-only field).
            if let Some(derating) = settings.audit_server_target_qps_adj_factor {
                settings.server_target_qps_adj_factor = Some(settings.server_target_qps_adj_factor.unwrap_or(1.0) * derating);
            }
        }
        let effective = CompiledConfig { settings, ..config.clone() };
        let bench = req.round.benchmark(&config.benchmark).ok_or_else(|| HarnessError::NotInRound { round: req.round.id.to_string(), benchmark: config.benchmark.to_string() })?;
        let system_name = render::system_name(&req.system.id, config.workload);
        let bench_dir = bench.checker_model(config.workload.accuracy).unwrap_or(&config.benchmark).to_string();
        let scenario_dir = root.join(&system_name).join(&bench_dir).join(config.scenario.name());
        if req.backend == Backend::Config {
            preflight::check(req, &effective, bench, &system_name, &bench_dir).map_err(|e| e.context(selected.label()))?;
        }
        // An LLM config's serving engine runs for all of the config's runs.
        let mut serving = None;
        if effective.settings.engine == Some(EngineKind::Serving) && req.backend == Backend::Config {
            match ServingEngines::start(&effective.settings, &config.benchmark, req.system, &scenario_dir) {
                Ok(engines) => serving = Some(engines),
                Err(e) if signals::received().is_some() => {
                    tracing::warn!("{e}");
                    return Ok(());
                }
                Err(e) => return Err(Error::from(e).context(selected.label())),
            }
        }
        for (mode, sub) in req.test_mode.runs() {
            if signals::received().is_some() {
                return Ok(());
            }
            let dir = sub.map_or_else(|| scenario_dir.clone(), |s| scenario_dir.join(s));
            let mut plan = plan(req, &effective, bench, &system_name, &bench_dir, mode);
            let mut user_conf = match &req.user_conf {
                Some(given) => given.text.clone(),
                None => {
                    let purpose = if req.test_run { ConfPurpose::TestRun(test_run_limits(&req.overrides, &effective.settings)) } else { ConfPurpose::Submission };
                    render::user_conf(&effective, req.round, bench, purpose)
                }
            };
            if plan.sample_set() == SampleSet::Test07 {
                // LoadGen crashes on a performance sample count above the library's samples.
                let _ = writeln!(
                    user_conf,
                    "# TEST07 loads its whole compliance set (rounds/{}.toml, test07.samples)\n{}.{}.performance_sample_count_override = {}",
                    req.round.id,
                    plan.loadgen_model,
                    config.scenario.loadgen().name(),
                    plan.performance_sample_count
                );
            }
            let audit = match req.audit_test {
                Some(test) => Some(plan::audit_config(req.round, &plan.loadgen_model, config.scenario, test).map_err(HarnessError::from)?),
                None => None,
            };
            prepare_dir(&dir, &plan, &user_conf, audit.as_deref()).map_err(HarnessError::from)?;
            tracing::info!("[{}/{total}] {}{}", outcomes.len() + 1, plan.label(), time_left(started.elapsed(), outcomes.len(), total));
            let mut exit = run_child(&exe, &dir, &mut || serving.as_mut().and_then(ServingEngines::exited))?;
            if let Some(again) = rerun_ended_early(req, &effective, bench, &dir, &plan, audit.as_deref())? {
                plan = again;
                exit = run_child(&exe, &dir, &mut || serving.as_mut().and_then(ServingEngines::exited))?;
            }
            let outcome = Outcome::read(&dir, &plan, exit, req.round);
            if outcome.status == RunStatus::Failed && exit != ChildExit::Code(0) && rundir::failed(&dir).is_none() {
                // How the child ended is known only here: record it, so that whoever reads the
                // run directory later (audits, staging) sees the same FAILED run.
                let _ = rundir::mark_failed(&dir, outcome.advice.as_deref().unwrap_or("the run failed"));
            }
            let stopped = outcome.status == RunStatus::Aborted;
            outcomes.push(outcome);
            rundir::summaries::write_summaries(&root, &outcomes[outcomes.len() - 1..]).map_err(HarnessError::from)?;
            if stopped {
                return Ok(());
            }
        }
    }
    Ok(())
}

/// A probed Offline test run that ended before its minimum duration goes once more, at the rate it
/// measured itself: a probe on a busy machine can measure the engines far below what they then do
/// (in CI the README's main job probed 134.3 samples/s beside other tests, then ran at 363.7), and
/// the run was INVALID for no fault of theirs. The short run is kept in `short_run/`, the rerun's
/// plan and user.conf written in its place; LoadGen takes a user.conf once per process, so the
/// rerun is a child of its own. Returns the rerun's plan, `None` where there is none to make.
fn rerun_ended_early(req: &RunRequest, config: &CompiledConfig, bench: &BenchmarkRound, dir: &Path, plan: &RunPlan, audit: Option<&str>) -> Result<Option<RunPlan>, Error> {
    if !plan.probe_rate || plan.scenario != Scenario::Offline || signals::received().is_some() {
        return Ok(None);
    }
    let Some(measured) = DetailLog::read(&dir.join(rundir::DETAIL_LOG)).ok().and_then(|log| log.offline_ended_early()) else { return Ok(None) };
    let kept = rundir::set_aside_short_run(dir)?;
    let mut settings = plan.settings.clone();
    let line = probe::rerun(measured, &mut settings)?;
    tracing::warn!("{}: ended before its minimum duration at {measured:.1} samples/s (kept in {}); it runs again at that rate", plan.label(), kept.display());
    write_atomic(&dir.join(rundir::PROBE), format!("{line}\n").as_bytes())?;
    let purpose = ConfPurpose::TestRun(test_run_limits(&req.overrides, &plan.settings));
    let user_conf = render::user_conf(&probe::probed_config(config, settings.clone(), "offline_expected_qps"), req.round, bench, purpose);
    let again = RunPlan { probe_rate: false, settings, ..plan.clone() };
    prepare_dir(dir, &again, &user_conf, audit).map_err(HarnessError::from)?;
    Ok(Some(again))
}

/// `, about N min left` once some runs are done: their mean time for each run still to come.
fn time_left(elapsed: Duration, done: usize, total: usize) -> String {
    if done == 0 {
        return String::new();
    }
    let left = elapsed.as_secs_f64() / done as f64 * (total - done) as f64;
    format!(", about {:.0} min left", (left / 60.0).ceil())
}

/// How long a child may take to flush its logs and leave after the parent forwarded a signal.
const STOP_GRACE: Duration = Duration::from_secs(20);

/// Runs `run_loadgen_test <dir>` and waits for it, forwarding a stop signal to it. A child that
/// does not stop within [`STOP_GRACE`] is killed; either way its run directory is marked ABORTED.
/// `gone` says why something the run depends on (a serving engine) is gone: the child is then
/// stopped and the run marked FAILED with that reason. Returns how the child ended.
fn run_child(exe: &Path, dir: &Path, gone: &mut dyn FnMut() -> Option<String>) -> Result<ChildExit, HarnessError> {
    let mut command = Command::new(exe);
    // The child stops with this process (the signal forwarded below, or PR_SET_PDEATHSIG), not with
    // a starter further up: one stop, decided here.
    command.args(crate::logging::options().args()).arg("run_loadgen_test").arg(dir).env_remove(signals::STOP_WITH);
    // SAFETY: the closure runs in the forked child before exec and only makes one async-signal-safe
    // system call. PR_SET_PDEATHSIG makes the kernel send SIGTERM to the child if this process
    // dies without forwarding a signal (SIGKILL, a crash), so no run outlives its parent.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().map_err(|source| HarnessError::Spawn { dir: dir.to_path_buf(), source })?;
    let mut stopping: Option<(signals::Signal, Instant)> = None;
    loop {
        if let Some(status) = child.try_wait().map_err(|source| HarnessError::Wait { dir: dir.to_path_buf(), source })? {
            if let Some((signal, _)) = stopping {
                mark_aborted(dir, signal);
            }
            return Ok(ChildExit::of(status));
        }
        if stopping.is_none()
            && let Some(why) = gone()
        {
            let _ = rundir::mark_failed(dir, &why);
            tracing::error!("{why}");
            // SAFETY: plain kill(2) on the child we spawned and have not reaped yet.
            unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
            let status = child.wait().map_err(|source| HarnessError::Wait { dir: dir.to_path_buf(), source })?;
            return Ok(ChildExit::of(status));
        }
        match (signals::received(), stopping) {
            (Some(signal), None) => {
                // SAFETY: plain kill(2) on the child we spawned and have not reaped yet.
                unsafe { libc::kill(child.id() as i32, signal.number()) };
                stopping = Some((signal, Instant::now()));
            }
            (Some(_), Some((signal, since))) if since.elapsed() > STOP_GRACE => {
                tracing::warn!("the run in {} did not stop within {} s of {}; killing it", dir.display(), STOP_GRACE.as_secs(), signal.name());
                let _ = child.kill();
                let status = child.wait().map_err(|source| HarnessError::Wait { dir: dir.to_path_buf(), source })?;
                mark_aborted(dir, signal);
                return Ok(ChildExit::of(status));
            }
            _ => {}
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn plan(req: &RunRequest, config: &CompiledConfig, bench: &BenchmarkRound, system_name: &str, bench_dir: &str, mode: RunMode) -> RunPlan {
    let set = SampleSet::of_run(mode == RunMode::AccuracyOnly, req.audit_test);
    let mut settings = config.settings.clone();
    if set == SampleSet::Test07 {
        // TEST07's set is loaded whole (the reference QSL is the file it reads), in user.conf too.
        settings.performance_sample_count_override = Some(set.size(bench));
    }
    let settings = &settings;
    let mut non_submittable = req.caveats.clone();
    // What the run's user.conf sets: an explicit --min_duration beats --test_run's.
    let min_duration_ms =
        if req.test_run { test_run_limits(&req.overrides, settings).min_duration_ms(req.round) } else { settings.min_duration.unwrap_or(req.round.min_duration_ms) };
    if req.test_run {
        non_submittable.push(NonSubmittable::TestRun { min_duration_ms });
    }
    if req.backend.is_test_double() {
        non_submittable.push(NonSubmittable::TestBackend { backend: format!("{:?}", req.backend) });
    }
    let synthetic = settings.dataset == Some(DatasetSource::Synthetic);
    if synthetic {
        non_submittable.push(NonSubmittable::SyntheticData);
    }
    // Development runs are sized by the engine's measured speed unless the command line sets it.
    // A user.conf given by the user is the run's as given: the probe would rewrite it.
    let probe_rate = req.test_run
        && req.user_conf.is_none()
        && synthetic
        && req.backend == Backend::Config
        && mode == RunMode::PerformanceOnly
        && probe::rate_field(config.scenario).is_some_and(|field| !req.overrides.iter().any(|(f, _)| f == field));
    if probe_rate {
        non_submittable.push(NonSubmittable::ProbedRate { seconds: probe::PROBE.as_secs() });
    }
    RunPlan {
        system: req.system.id.to_string(),
        system_name: system_name.to_string(),
        benchmark: config.benchmark.to_string(),
        bench_dir: bench_dir.to_string(),
        scenario: config.scenario,
        workload: config.workload,
        round: req.round.id.to_string(),
        loadgen_version: req.round.loadgen.version.to_string(),
        loadgen_model: bench.loadgen_model_for(config.scenario).to_string(),
        mode,
        backend: req.backend,
        devices: device_count(req.system),
        // gpt-oss-120b's accuracy set (4,395) is not its performance set (6,396), nor TEST07's (990).
        total_sample_count: bench.scenario_set_size(config.scenario, set.size(bench)),
        performance_sample_count: performance_sample_count(bench, settings).min(bench.scenario_set_size(config.scenario, u64::MAX)),
        min_duration_ms,
        token_latencies: bench.use_token_latencies.unwrap_or(false),
        output_limit: bench.max_output_tokens_for(mode == RunMode::AccuracyOnly),
        audit_test: req.audit_test,
        overrides: req.overrides.clone(),
        settings: settings.clone(),
        probe_rate,
        non_submittable,
    }
}

/// Creates this invocation's own log directory, `<log_dir>/<timestamp>`, before any run (so a
/// log directory that cannot be written fails at once). Timestamps have whole seconds: when an
/// earlier invocation of the same second holds that name, this one gets `<timestamp>_2`, `_3`, ...,
/// which still sort after it ("newest" is the greatest name).
fn new_run_root(log_dir: &Path, timestamp: &str) -> Result<PathBuf, HarnessError> {
    let fail = |source: std::io::Error| HarnessError::LogDir { dir: log_dir.to_path_buf(), source };
    std::fs::create_dir_all(log_dir).map_err(fail)?;
    let mut n = 1;
    loop {
        let root = log_dir.join(if n == 1 { timestamp.to_string() } else { format!("{timestamp}_{n}") });
        match std::fs::create_dir(&root) {
            Ok(()) => return Ok(root),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
            Err(e) => return Err(fail(e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_directories_are_named_in_local_time() {
        let date = || String::from_utf8(Command::new("date").arg("+%Y.%m.%d-%H.%M").output().unwrap().stdout).unwrap().trim().to_string();
        let (before, stamp, after) = (date(), timestamp(), date());
        assert!(stamp.len() == 19 && (stamp.starts_with(&before) || stamp.starts_with(&after)), "{stamp} against date(1)'s {before} / {after}");
    }

    #[test]
    fn invocations_in_the_same_second_get_their_own_log_directory_that_sorts_newest() {
        let logs = std::env::temp_dir().join(format!("mlperf-run-root-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&logs);
        let stamp = "2026.11.22-10.00.00";
        let roots: Vec<_> = (0..3).map(|_| new_run_root(&logs, stamp).unwrap()).collect();
        let names: Vec<_> = roots.iter().map(|r| r.file_name().unwrap().to_str().unwrap().to_string()).collect();
        assert_eq!(names, [stamp.to_string(), format!("{stamp}_2"), format!("{stamp}_3")]);
        let mut sorted = names.clone();
        sorted.sort();
        assert_eq!(sorted, names, "a later invocation's directory is the newest by name");
        assert!(new_run_root(&logs, "2026.11.22-10.00.01").unwrap().file_name().unwrap() > std::ffi::OsStr::new(&names[2]));
        std::fs::remove_dir_all(&logs).unwrap();
    }

    #[test]
    fn cpu_engines_run_one_worker_per_core_whatever_gpu_streams_they_inherit() {
        let cores = std::thread::available_parallelism().unwrap().get();
        let mut settings =
            Settings { engine: Some(EngineKind::Cpu), gpu_inference_streams: Some(1), gpu_batch_size: Some(vec![("resnet50".into(), 8)].into()), ..Settings::default() };
        let cpu = engine_batcher_config(&settings, "resnet50");
        assert_eq!((cpu.workers_per_device, cpu.batch_size), (cores, 8));
        assert_eq!(batcher_config(&settings, "resnet50").workers_per_device, 1, "test doubles keep the config's streams");

        // GPU engines keep the config's streams as workers per device.
        settings.engine = Some(EngineKind::Gpu);
        settings.gpu_inference_streams = Some(3);
        assert_eq!(engine_batcher_config(&settings, "resnet50").workers_per_device, 3);
    }
}
