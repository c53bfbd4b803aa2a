//! The runs an audit is compared with: the newest VALID PerformanceOnly run and the newest complete
//! AccuracyOnly run of the same system name, benchmark directory, scenario and round under the log
//! root (`build/logs/<timestamp>/<system_name>/<bench>/<Scenario>/`, or its `performance/` and
//! `accuracy/` subdirectories for SubmissionRun). Audit runs themselves never count; each run is
//! judged by its [`Outcome`], as staging and the result table judge it.

use crate::rundir::plan::{RunMode, RunPlan, read_plan};
use crate::rundir::report::{Outcome, Unusable};
use crate::signals::ChildExit;
use mlperf_config::{Round, Scenario};
use std::path::{Path, PathBuf};

/// Which reference a test needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    Performance,
    Accuracy,
}

impl RunKind {
    pub fn mode(self) -> RunMode {
        match self {
            RunKind::Performance => RunMode::PerformanceOnly,
            RunKind::Accuracy => RunMode::AccuracyOnly,
        }
    }
}

/// What identifies the runs of one config.
#[derive(Debug, Clone, Copy)]
pub struct RunKey<'a> {
    pub system_name: &'a str,
    pub bench_dir: &'a str,
    pub scenario: Scenario,
    pub round: &'a str,
}

/// Whether `dir` holds a run of `kind` for `key` that can serve as a reference: a VALID
/// performance run, or an accuracy run that completed, was scored (test backends are never scored)
/// and has its log. FAILED, ABORTED and unscored runs never serve; nor do audit runs.
fn usable(dir: &Path, key: RunKey, kind: RunKind, round: &Round) -> Option<RunPlan> {
    let plan = read_plan(dir).ok()?;
    let same = plan.system_name == key.system_name && plan.bench_dir == key.bench_dir && plan.scenario == key.scenario && plan.round == key.round;
    if !same || plan.mode != kind.mode() || plan.audit_test.is_some() {
        return None;
    }
    let finished = match Outcome::read(dir, &plan, ChildExit::Code(0), round).unusable() {
        None | Some(Unusable::BelowTarget(_)) => true,
        Some(Unusable::NotScored) => plan.backend.is_test_double(),
        Some(_) => false,
    };
    finished.then_some(plan)
}

/// The newest usable run of `kind` (timestamps sort by name), with its plan.
pub fn newest(log_root: &Path, key: RunKey, kind: RunKind, round: &Round) -> Option<(PathBuf, RunPlan)> {
    let mut stamps: Vec<PathBuf> = std::fs::read_dir(log_root).ok()?.flatten().map(|e| e.path()).filter(|p| p.is_dir()).collect();
    stamps.sort();
    stamps.into_iter().rev().find_map(|stamp| {
        let scenario_dir = stamp.join(key.system_name).join(key.bench_dir).join(key.scenario.name());
        let sub = match kind {
            RunKind::Performance => "performance",
            RunKind::Accuracy => "accuracy",
        };
        [scenario_dir.join(sub), scenario_dir].into_iter().find_map(|dir| usable(&dir, key, kind, round).map(|plan| (dir, plan)))
    })
}

/// The error when a reference is missing: what was looked for, where, and the command that makes it.
pub fn missing(log_root: &Path, key: RunKey, kind: RunKind, benchmark: &str, test: mlperf_config::AuditTest) -> String {
    let what = match kind {
        RunKind::Performance => "VALID PerformanceOnly",
        RunKind::Accuracy => "complete AccuracyOnly",
    };
    format!(
        "{test} of {}/{}/{} needs a {what} run of round {} under {}; run `mlperf run_harness --benchmarks={benchmark} --scenarios={} --test_mode={}` first (with the same flags as the audit)",
        key.system_name,
        key.bench_dir,
        key.scenario,
        key.round,
        log_root.display(),
        key.scenario.name().to_lowercase(),
        kind.mode()
    )
}
