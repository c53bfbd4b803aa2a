//! `run_harness`: one LoadGen test per (config, mode), each in a child process of this binary
//! (LoadGen applies mlperf.conf only on the first `FromConfig` of a process, and a child keeps a
//! Ctrl-C or a crash contained to one run).
//!
//! Parent: plan every run, check the log directory is writable before anything runs, write each
//! run directory (`user.conf`, `run_plan.json`, `NON_SUBMITTABLE.txt`), run the child, read the logs
//! and print the result table. Child (`run_loadgen_test <dir>`): settings from user.conf through
//! LoadGen's own parser, the backend's SUT and QSL, `StartTest`, logs in the run directory.

pub mod backends;
pub mod batcher;
pub mod engine;
pub mod logs;
pub mod progress;
pub mod report;
pub mod signals;
pub mod workload;

use crate::fsutil::write_atomic;
use batcher::{BatcherConfig, BatchingSut};
use engine::{Engine, FixedLatencyEngine};
use mlperf_config::render::{self, ConfPurpose};
use mlperf_config::{BenchmarkRound, CompiledConfig, Round, Scenario, Settings, SystemInfo, Tables};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

/// `--test_mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum TestMode {
    PerformanceOnly,
    AccuracyOnly,
    /// An accuracy run, then a performance run.
    SubmissionRun,
    FindPeakPerformance,
}

impl TestMode {
    pub fn parse(text: &str) -> Result<TestMode, String> {
        match text.to_ascii_lowercase().as_str() {
            "performanceonly" => Ok(TestMode::PerformanceOnly),
            "accuracyonly" => Ok(TestMode::AccuracyOnly),
            "submissionrun" => Ok(TestMode::SubmissionRun),
            "findpeakperformance" => Ok(TestMode::FindPeakPerformance),
            _ => Err(format!("--test_mode={text}: use PerformanceOnly, AccuracyOnly, SubmissionRun or FindPeakPerformance")),
        }
    }

    /// The LoadGen runs this mode consists of, with their directory (None = the scenario dir).
    fn runs(self) -> Vec<(mlperf_loadgen::TestMode, Option<&'static str>)> {
        use mlperf_loadgen::TestMode as Lg;
        match self {
            TestMode::PerformanceOnly => vec![(Lg::PerformanceOnly, None)],
            TestMode::AccuracyOnly => vec![(Lg::AccuracyOnly, None)],
            TestMode::FindPeakPerformance => vec![(Lg::FindPeakPerformance, None)],
            TestMode::SubmissionRun => vec![(Lg::AccuracyOnly, Some("accuracy")), (Lg::PerformanceOnly, Some("performance"))],
        }
    }
}

/// What answers LoadGen's queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Backend {
    /// The engine the config names (`engine = "gpu" | "cpu" | "serving"`).
    Config,
    /// Completes every sample inside the issue call: LoadGen overhead only. Test double.
    Null,
    /// The batching SUT over a device that takes `latency_us` per batch. Test double.
    FixedLatency { latency_us: u64 },
}

impl Backend {
    pub fn parse(text: &str, latency_us: u64) -> Result<Backend, String> {
        match text {
            "config" => Ok(Backend::Config),
            "null" => Ok(Backend::Null),
            "fixed_latency" | "fixed-latency" => Ok(Backend::FixedLatency { latency_us }),
            _ => Err(format!("--backend={text}: use config, null or fixed_latency")),
        }
    }

    fn is_test_double(self) -> bool {
        !matches!(self, Backend::Config)
    }
}

/// Everything the child needs, written to `run_plan.json` in the run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunPlan {
    pub system: String,
    pub system_name: String,
    pub benchmark: String,
    pub bench_dir: String,
    pub scenario: String,
    pub workload: String,
    pub round: String,
    pub loadgen_version: String,
    pub loadgen_model: String,
    pub mode: String,
    pub backend: Backend,
    pub total_sample_count: u64,
    pub performance_sample_count: u64,
    pub min_duration_ms: u64,
    /// LLM benchmarks whose runs report first tokens (`use_token_latencies`).
    pub token_latencies: bool,
    pub audit_test: Option<String>,
    pub overrides: Vec<(String, String)>,
    /// Why this run can never be part of a submission (empty = submittable).
    pub non_submittable: Vec<String>,
}

/// The resolved command: what to run and how.
pub struct RunRequest<'a> {
    pub tables: &'static Tables,
    pub system: &'static SystemInfo,
    pub round: &'static Round,
    pub configs: Vec<&'static CompiledConfig>,
    pub test_mode: TestMode,
    pub test_run: bool,
    pub audit_test: Option<String>,
    pub backend: Backend,
    /// `--<field>=<value>` overrides (development builds only).
    pub overrides: Vec<(String, String)>,
    /// Extra reasons that make every run non-submittable (e.g. a system chosen against the hardware).
    pub caveats: Vec<String>,
    pub log_dir: &'a Path,
    pub timestamp: String,
}

/// NVIDIA's log timestamp format, `%Y.%m.%d-%H.%M.%S` (UTC).
pub fn timestamp() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rem) = (secs / 86_400, secs % 86_400);
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}.{month:02}.{day:02}-{:02}.{:02}.{:02}", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Applies `--<field>=<value>` overrides to a copy of the settings, with the same type and unit
/// checks as the build.
pub fn apply_overrides(settings: &Settings, overrides: &[(String, String)]) -> Result<Settings, String> {
    let mut out = settings.clone();
    for (field, value) in overrides {
        let index = Settings::index_of(field).ok_or_else(|| format!("--{field}: not a config field (`mlperf config fields` lists them)"))?;
        // Read the value as TOML; a bare word that is not TOML is a string.
        let raw = toml::from_str::<toml::Table>(&format!("v = {value}")).ok().and_then(|t| t.get("v").cloned()).unwrap_or_else(|| toml::Value::String(value.clone()));
        let text = format!("v = {raw}");
        let mut sources = mlperf_config::diag::Sources::default();
        let file = sources.add("<command line>", text);
        let entries = mlperf_config::raw::parse_toml(&sources, file).map_err(|d| d.message)?;
        out.set(index, &entries[0].1).map_err(|e| format!("--{field}={value}: {}", e.message))?;
    }
    Ok(out)
}

/// Runs every planned test and returns the outcome rows.
pub fn run_all(req: &RunRequest) -> Result<Vec<report::Outcome>, String> {
    if !req.overrides.is_empty() && req.tables.locked_system.is_some() {
        return Err("command-line config overrides are refused by locked builds; build without system features to experiment".into());
    }
    let root = new_run_root(&req.log_dir, &req.timestamp)?;
    signals::install();
    let mut outcomes = Vec::new();
    for config in &req.configs {
        let mut settings = apply_overrides(&config.settings, &req.overrides)?;
        if req.audit_test.is_some() {
            // Audits of Server run at the config's derated target (a Server-only field).
            if let Some(derating) = settings.audit_server_target_qps_adj_factor {
                settings.server_target_qps_adj_factor = Some(settings.server_target_qps_adj_factor.unwrap_or(1.0) * derating);
            }
        }
        let effective_config = CompiledConfig { settings, ..(*config).clone() };
        let bench = req.round.benchmark(&config.benchmark).ok_or_else(|| format!("round {} has no {}", req.round.id, config.benchmark))?;
        let system_name = render::system_name(&req.system.id, config.workload);
        let bench_dir = bench.checker_model(config.workload.accuracy).unwrap_or(&config.benchmark).to_string();
        let scenario_dir = root.join(&system_name).join(&bench_dir).join(config.scenario.name());
        for (lg_mode, sub) in req.test_mode.runs() {
            let dir = sub.map_or_else(|| scenario_dir.clone(), |s| scenario_dir.join(s));
            let plan = plan(req, &effective_config, &system_name, &bench_dir, lg_mode);
            let user_conf = render::user_conf(&effective_config, req.round, bench, if req.test_run { ConfPurpose::TestRun } else { ConfPurpose::Submission });
            prepare_dir(&dir, &plan, &user_conf)?;
            let status = Command::new(std::env::current_exe().map_err(|e| format!("cannot find this binary: {e}"))?)
                .arg("run_loadgen_test")
                .arg(&dir)
                .status()
                .map_err(|e| format!("cannot start the run of {}: {e}", dir.display()))?;
            outcomes.push(report::Outcome::read(&dir, &plan, status.code()));
            if signals::interrupted() {
                return Ok(outcomes);
            }
        }
    }
    Ok(outcomes)
}

fn plan(req: &RunRequest, config: &CompiledConfig, system_name: &str, bench_dir: &str, mode: mlperf_loadgen::TestMode) -> RunPlan {
    let bench = req.round.benchmark(&config.benchmark).expect("checked by the caller");
    let mut non_submittable = req.caveats.clone();
    if req.test_run {
        non_submittable.push(format!("--test_run: min_duration {} ms", req.round.test_run_min_duration_ms));
    }
    if req.backend.is_test_double() {
        non_submittable.push(format!("test backend {:?} instead of the configured engine", req.backend));
    }
    for (field, value) in &req.overrides {
        non_submittable.push(format!("command-line override --{field}={value}"));
    }
    if config.settings.dataset == Some(mlperf_config::DatasetSource::Synthetic) {
        non_submittable.push("synthetic dataset and model (accuracy measures agreement with the reference engine)".into());
    }
    RunPlan {
        system: req.system.id.to_string(),
        system_name: system_name.to_string(),
        benchmark: config.benchmark.to_string(),
        bench_dir: bench_dir.to_string(),
        scenario: config.scenario.name().to_string(),
        workload: config.workload.section_name(),
        round: req.round.id.to_string(),
        loadgen_version: req.round.loadgen.version.to_string(),
        loadgen_model: bench.loadgen_model_for(config.scenario).to_string(),
        mode: format!("{mode:?}"),
        backend: req.backend,
        total_sample_count: bench.accuracy_sample_count(),
        performance_sample_count: performance_sample_count(bench, &config.settings),
        min_duration_ms: if req.test_run { req.round.test_run_min_duration_ms } else { config.settings.min_duration.unwrap_or(req.round.min_duration_ms) },
        token_latencies: bench.use_token_latencies.unwrap_or(false),
        audit_test: req.audit_test.clone(),
        overrides: req.overrides.clone(),
        non_submittable,
    }
}

/// Samples the QSL holds in memory during a performance run: the config's override, else the round's.
pub fn performance_sample_count(bench: &BenchmarkRound, settings: &Settings) -> u64 {
    settings.performance_sample_count_override.unwrap_or(bench.performance_sample_count)
}

/// Creates this invocation's own log directory, `<log_dir>/<timestamp>`, before any run (so a
/// log directory that cannot be written fails at once). Timestamps have whole seconds: when an
/// earlier invocation of the same second holds that name, this one gets `<timestamp>_2`, `_3`, ...,
/// which still sort after it ("newest" is the greatest name).
fn new_run_root(log_dir: &Path, timestamp: &str) -> Result<PathBuf, String> {
    let fail = |e: std::io::Error| format!("cannot write logs under {}: {e}; fix the permissions or pass --log_dir", log_dir.display());
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

fn prepare_dir(dir: &Path, plan: &RunPlan, user_conf: &str) -> Result<(), String> {
    if dir.join("mlperf_log_detail.txt").exists() {
        return Err(format!("{} already holds a run; logs are never overwritten", dir.display()));
    }
    write_atomic(&dir.join("user.conf"), user_conf.as_bytes())?;
    let json = serde_json::to_string_pretty(plan).expect("plans serialize");
    write_atomic(&dir.join("run_plan.json"), json.as_bytes())?;
    if !plan.non_submittable.is_empty() {
        let text: String = plan.non_submittable.iter().map(|r| format!("{r}\n")).collect();
        write_atomic(&dir.join("NON_SUBMITTABLE.txt"), text.as_bytes())?;
    }
    Ok(())
}

/// Reads a run directory's plan.
pub fn read_plan(dir: &Path) -> Result<RunPlan, String> {
    let text = std::fs::read_to_string(dir.join("run_plan.json")).map_err(|e| format!("{}: no run plan: {e}", dir.display()))?;
    serde_json::from_str(&text).map_err(|e| format!("{}/run_plan.json: {e}", dir.display()))
}

/// The child: one LoadGen test in `dir`, as its plan says.
pub fn run_one(tables: &'static Tables, dir: &Path) -> Result<(), String> {
    let plan = read_plan(dir)?;
    if mlperf_loadgen::LINKED_VERSION != plan.loadgen_version {
        return Err(format!(
            "round {} needs LoadGen {}, but this binary links {}; build with the round's LoadGen feature",
            plan.round,
            plan.loadgen_version,
            mlperf_loadgen::LINKED_VERSION
        ));
    }
    let scenario = Scenario::parse(&plan.scenario).ok_or("bad scenario in plan")?;
    let config = tables
        .configs
        .iter()
        .find(|c| c.system == plan.system && c.benchmark == plan.benchmark && c.scenario == scenario && c.workload.section_name() == plan.workload)
        .ok_or_else(|| format!("this binary has no config {}/{}/{}/{}", plan.system, plan.benchmark, plan.scenario, plan.workload))?;
    let settings = apply_overrides(&config.settings, &plan.overrides)?;
    let lg_scenario = match scenario.loadgen() {
        Scenario::Offline => mlperf_loadgen::Scenario::Offline,
        Scenario::Server => mlperf_loadgen::Scenario::Server,
        Scenario::SingleStream => mlperf_loadgen::Scenario::SingleStream,
        _ => mlperf_loadgen::Scenario::MultiStream,
    };
    let mut lg = mlperf_loadgen::TestSettings::from_user_conf(dir.join("user.conf"), &plan.loadgen_model, lg_scenario).map_err(|e| e.to_string())?;
    lg.set_mode(match plan.mode.as_str() {
        "AccuracyOnly" => mlperf_loadgen::TestMode::AccuracyOnly,
        "FindPeakPerformance" => mlperf_loadgen::TestMode::FindPeakPerformance,
        _ => mlperf_loadgen::TestMode::PerformanceOnly,
    });
    write_atomic(&dir.join("effective_settings.txt"), format!("{:#?}\n", lg.effective()).as_bytes())?;
    let audit = match &plan.audit_test {
        Some(test) => {
            let path = dir.join("audit.config");
            write_atomic(&path, audit_config(tables, &plan, test)?.as_bytes())?;
            Some(path)
        }
        None => None,
    };

    signals::install();
    let marker = dir.join("ABORTED");
    std::thread::spawn(move || {
        while !signals::interrupted() {
            std::thread::sleep(Duration::from_millis(50));
        }
        // LoadGen cannot resume after an abort: record it and leave; the logs so far stay.
        mlperf_loadgen::abort_test();
        let _ = std::fs::write(&marker, b"interrupted by Ctrl-C\n");
        eprintln!("\ninterrupted: test aborted, partial logs kept");
        std::process::exit(130);
    });

    let log = mlperf_loadgen::LogSettings::in_dir(dir);
    let label = format!("{} {} {}", plan.benchmark, plan.scenario, plan.mode);
    let min_duration = Duration::from_millis(plan.min_duration_ms);
    let qsl = backends::EmptyQsl { total: plan.total_sample_count as usize, performance: plan.performance_sample_count as usize };
    let engine_errors = match plan.backend {
        Backend::Null => {
            let completed = Arc::new(AtomicU64::new(0));
            let _progress = progress::Progress::start(label, completed.clone(), min_duration);
            let sut = backends::NullSut { completed, token_latencies: plan.token_latencies };
            mlperf_loadgen::start_test(&sut, &qsl, &lg, &log, audit.as_deref()).map_err(|e| e.to_string())?;
            Vec::new()
        }
        Backend::FixedLatency { latency_us } => {
            let engine: Arc<dyn Engine> = Arc::new(FixedLatencyEngine { latency: Duration::from_micros(latency_us), tokens: plan.token_latencies });
            let devices = vec![engine; workload::device_count(tables.system(&plan.system))];
            let qsl = Arc::new(qsl);
            let config = BatcherConfig { token_latencies: plan.token_latencies, ..batcher_config(&settings, &plan.benchmark) };
            let sut = BatchingSut::start("mlperf fixed-latency SUT", devices, qsl.clone(), config);
            let _progress = progress::Progress::start(label, sut.counters_completed(), min_duration);
            let result = mlperf_loadgen::start_test(&sut, qsl.as_ref(), &lg, &log, audit.as_deref());
            let errors = sut.finish();
            result.map_err(|e| e.to_string())?;
            errors
        }
        Backend::Config => {
            let devices = workload::device_count(tables.system(&plan.system));
            let id = crate::engines::gpu::setup::PlanIdentity { system: &plan.system, scenario: &plan.scenario, workload: &plan.workload };
            let work = workload::open(&plan.benchmark, &settings, plan.total_sample_count as usize, plan.performance_sample_count as usize, devices, &id)?;
            let config = BatcherConfig { token_latencies: plan.token_latencies, ..workload::batcher(&settings, &plan.benchmark) };
            let sut = BatchingSut::start(&format!("mlperf {} SUT", plan.benchmark), work.devices.clone(), work.library.clone(), config);
            let _progress = progress::Progress::start(label, sut.counters_completed(), min_duration);
            let result = mlperf_loadgen::start_test(&sut, work.library.as_ref(), &lg, &log, audit.as_deref());
            let errors = sut.finish();
            result.map_err(|e| e.to_string())?;
            if plan.mode == "AccuracyOnly" && errors.is_empty() {
                let line = workload::score(dir, &work.val_map, work.synthetic)?;
                eprintln!("{}: {line}", plan.benchmark);
            }
            errors
        }
    };
    // LoadGen always creates the trace file; it is empty with tracing off and no submission wants it.
    let trace = dir.join("mlperf_log_trace.json");
    if std::fs::metadata(&trace).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(trace);
    }
    if !engine_errors.is_empty() {
        return Err(format!("the engine failed on {} batches; first: {}", engine_errors.len(), engine_errors[0]));
    }
    Ok(())
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

/// The audit.config of a compliance test, from the round's audit table: only `*.*` keys, since
/// LoadGen applies audit files with the model name `*`.
pub fn audit_config(tables: &Tables, plan: &RunPlan, test: &str) -> Result<String, String> {
    let round = tables.round(&plan.round).ok_or("unknown round")?;
    let audit =
        round.audits.get(test).ok_or_else(|| format!("round {} has no compliance test {test} (it has {})", round.id, round.audits.keys().collect::<Vec<_>>().join(", ")))?;
    let mut out = format!("# {test} for {} {} (round {}), generated from rounds/{}.toml\n", plan.loadgen_model, plan.scenario, round.id, round.id);
    let mut line = |key: &str, value: String| out.push_str(&format!("*.*.{key} = {value}\n"));
    if let Some(mode) = audit.mode {
        line("mode", mode.to_string());
    }
    if audit.accuracy_log_sampling_target.is_some() {
        line("accuracy_log_rng_seed", round.compliance_seeds.accuracy_log.to_string());
    }
    if let Some(target) = audit.accuracy_log_sampling_target.as_ref().and_then(|t| t.for_model(&plan.loadgen_model)) {
        line("accuracy_log_sampling_target", target.to_string());
    }
    if let Some(v) = audit.performance_issue_unique {
        line("performance_issue_unique", v.to_string());
    }
    if let Some(v) = audit.performance_issue_same {
        line("performance_issue_same", v.to_string());
    }
    if let Some(v) = audit.performance_issue_same_index {
        line("performance_issue_same_index", v.to_string());
    }
    if let Some(v) = audit.min_query_count.as_ref().and_then(|m| m.for_model(&plan.loadgen_model)) {
        line("min_query_count", v.to_string());
    }
    if let Some(v) = audit.min_duration_ms {
        line("min_duration", v.to_string());
    }
    if let Some(v) = audit.sample_concatenate_permutation {
        line("sample_concatenate_permutation", v.to_string());
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::new_run_root;

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
}
