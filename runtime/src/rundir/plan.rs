//! The typed run plan: what the parent decides for one LoadGen run and hands to the child process
//! in `run_plan.json` (effective settings, mode, scenario, backend, sample counts, why the run is
//! not submittable), next to the `user.conf` and `audit.config` LoadGen reads.

use super::{AUDIT_CONFIG, RUN_PLAN, RunDirError, USER_CONF};
use crate::dataset::SampleSet;
use crate::fsutil::write_atomic;
use crate::submittable::NonSubmittable;
use mlperf_config::{AuditTest, Round, Scenario, Settings, Workload};
use serde::{Deserialize, Serialize};
use std::path::Path;

/// `--test_mode`: which LoadGen runs one invocation makes per config.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TestMode {
    PerformanceOnly,
    AccuracyOnly,
    /// An accuracy run, then a performance run.
    SubmissionRun,
    FindPeakPerformance,
}

impl TestMode {
    pub const ALL: [TestMode; 4] = [TestMode::PerformanceOnly, TestMode::AccuracyOnly, TestMode::SubmissionRun, TestMode::FindPeakPerformance];

    pub const fn name(self) -> &'static str {
        match self {
            TestMode::PerformanceOnly => "PerformanceOnly",
            TestMode::AccuracyOnly => "AccuracyOnly",
            TestMode::SubmissionRun => "SubmissionRun",
            TestMode::FindPeakPerformance => "FindPeakPerformance",
        }
    }

    /// The LoadGen runs this mode consists of, with their directory (None = the scenario dir).
    pub fn runs(self) -> Vec<(RunMode, Option<&'static str>)> {
        match self {
            TestMode::PerformanceOnly => vec![(RunMode::PerformanceOnly, None)],
            TestMode::AccuracyOnly => vec![(RunMode::AccuracyOnly, None)],
            TestMode::FindPeakPerformance => vec![(RunMode::FindPeakPerformance, None)],
            TestMode::SubmissionRun => vec![(RunMode::AccuracyOnly, Some("accuracy")), (RunMode::PerformanceOnly, Some("performance"))],
        }
    }
}

/// What one LoadGen run measures (LoadGen's test mode).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum RunMode {
    PerformanceOnly,
    AccuracyOnly,
    FindPeakPerformance,
}

impl RunMode {
    pub const fn name(self) -> &'static str {
        match self {
            RunMode::PerformanceOnly => "PerformanceOnly",
            RunMode::AccuracyOnly => "AccuracyOnly",
            RunMode::FindPeakPerformance => "FindPeakPerformance",
        }
    }

    pub fn loadgen(self) -> mlperf_loadgen::TestMode {
        match self {
            RunMode::PerformanceOnly => mlperf_loadgen::TestMode::PerformanceOnly,
            RunMode::AccuracyOnly => mlperf_loadgen::TestMode::AccuracyOnly,
            RunMode::FindPeakPerformance => mlperf_loadgen::TestMode::FindPeakPerformance,
        }
    }
}

impl std::fmt::Display for RunMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// `--backend`: what answers LoadGen's queries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendKind {
    Config,
    Null,
    FixedLatency,
}

impl BackendKind {
    pub const ALL: [BackendKind; 3] = [BackendKind::Config, BackendKind::Null, BackendKind::FixedLatency];

    pub const fn name(self) -> &'static str {
        match self {
            BackendKind::Config => "config",
            BackendKind::Null => "null",
            BackendKind::FixedLatency => "fixed_latency",
        }
    }

    /// The backend, with the fixed-latency device's per-batch latency.
    pub fn with_latency_us(self, latency_us: u64) -> Backend {
        match self {
            BackendKind::Config => Backend::Config,
            BackendKind::Null => Backend::Null,
            BackendKind::FixedLatency => Backend::FixedLatency { latency_us },
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
    pub fn is_test_double(self) -> bool {
        match self {
            Backend::Config => false,
            Backend::Null | Backend::FixedLatency { .. } => true,
        }
    }
}

/// Everything the child needs, written to `run_plan.json` in the run directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunPlan {
    pub system: String,
    pub system_name: String,
    pub benchmark: String,
    pub bench_dir: String,
    pub scenario: Scenario,
    pub workload: Workload,
    pub round: String,
    pub loadgen_version: String,
    pub loadgen_model: String,
    pub mode: RunMode,
    pub backend: Backend,
    /// Engine instances: the system's GPUs, or one for a machine without any.
    pub devices: usize,
    pub total_sample_count: u64,
    pub performance_sample_count: u64,
    pub min_duration_ms: u64,
    /// LLM benchmarks whose runs report first tokens (`use_token_latencies`).
    pub token_latencies: bool,
    /// LLMs: the round's output limit per sample for this run's mode.
    #[serde(default)]
    pub output_limit: Option<u64>,
    pub audit_test: Option<AuditTest>,
    /// The command line's `--<field>=<value>` overrides, as given.
    pub overrides: Vec<(String, String)>,
    /// The config's settings with the overrides (and an audit's derating) applied: what this run
    /// uses. Empty in plans of older versions, which only serve as audit references.
    #[serde(default)]
    pub settings: Settings,
    /// Measure the engine for a few seconds first and set the expected rate from it
    /// (`harness::probe`; non-submittable development runs only).
    #[serde(default)]
    pub probe_rate: bool,
    /// Why this run can never be part of a submission (empty = submittable).
    pub non_submittable: Vec<NonSubmittable>,
}

impl RunPlan {
    /// The sample set the run reads.
    pub fn sample_set(&self) -> SampleSet {
        SampleSet::of_run(self.mode == RunMode::AccuracyOnly, self.audit_test)
    }

    /// `benchmark scenario mode`, for progress lines and messages.
    pub fn label(&self) -> String {
        format!("{} {} {}", self.benchmark, self.scenario, self.mode)
    }
}

/// Writes a run directory's inputs: `user.conf`, `run_plan.json`, `audit.config` (audits) and
/// `NON_SUBMITTABLE.txt`. A directory that already holds a run is never written over.
pub fn prepare_dir(dir: &Path, plan: &RunPlan, user_conf: &str, audit_config: Option<&str>) -> Result<(), RunDirError> {
    if dir.join(super::DETAIL_LOG).exists() {
        return Err(RunDirError::HoldsARun(dir.to_path_buf()));
    }
    write_atomic(&dir.join(USER_CONF), user_conf.as_bytes())?;
    write_plan(dir, plan)?;
    if let Some(text) = audit_config {
        write_atomic(&dir.join(AUDIT_CONFIG), text.as_bytes())?;
    }
    super::write_non_submittable(dir, &plan.non_submittable)
}

/// Writes a run directory's plan.
pub fn write_plan(dir: &Path, plan: &RunPlan) -> Result<(), RunDirError> {
    let json = serde_json::to_string_pretty(plan).expect("plans serialize");
    Ok(write_atomic(&dir.join(RUN_PLAN), json.as_bytes())?)
}

/// Reads a run directory's plan.
pub fn read_plan(dir: &Path) -> Result<RunPlan, RunDirError> {
    let text = std::fs::read_to_string(dir.join(RUN_PLAN)).map_err(|source| RunDirError::NoPlan { dir: dir.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|source| RunDirError::BadPlan { dir: dir.to_path_buf(), source })
}

/// The audit.config of a compliance test, from the round's audit table: only `*.*` keys, since
/// LoadGen applies audit files with the model name `*`.
pub fn audit_config(round: &Round, loadgen_model: &str, scenario: Scenario, test: AuditTest) -> Result<String, RunDirError> {
    let audit = round.audits.get(&test).ok_or_else(|| {
        let known: Vec<&str> = round.audits.keys().map(|t| t.name()).collect();
        RunDirError::NoSuchAudit { round: round.id.to_string(), test, known: known.join(", ") }
    })?;
    let mut out = format!("# {test} for {loadgen_model} {scenario} (round {}), generated from rounds/{}.toml\n", round.id, round.id);
    let mut line = |key: &str, value: String| out.push_str(&format!("*.*.{key} = {value}\n"));
    if let Some(mode) = audit.mode {
        line("mode", mode.to_string());
    }
    if audit.accuracy_log_sampling_target.is_some() {
        line("accuracy_log_rng_seed", round.compliance_seeds.accuracy_log.to_string());
    }
    if let Some(target) = audit.accuracy_log_sampling_target.as_ref().and_then(|t| t.for_model(loadgen_model)) {
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
    if let Some(v) = audit.min_query_count.as_ref().and_then(|m| m.for_model(loadgen_model)) {
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
