//! The run directory and the log root, owned in one place: the name of every file and marker a run
//! directory holds, and the functions that write and read them. The harness writes them, the
//! child process runs in them, and compliance, staging, the checker and the result formats read
//! them back through here.
//!
//! ```text
//! <log root>/perf_harness_summary.json, accuracy_summary.json      (summaries)
//! <log root>/<timestamp>/<system>/<benchmark>/<Scenario>/...        (one run directory)
//!   user.conf, run_plan.json, audit.config, NON_SUBMITTABLE.txt    (written before the run: plan)
//!   effective_settings.txt                                          (LoadGen's settings as resolved)
//!   probe.txt                                                       (a probed expected rate)
//!   mlperf_log_{summary,detail}.txt, mlperf_log_{trace,accuracy}.json (LoadGen's)
//!   accuracy.txt, ACCURACY_NOTE.txt, serving.json, mlperf_run.log   (the run's)
//!   ABORTED, FAILED.txt                                             (markers: how it ended)
//!   short_run/                                                      (a probed run that ended early)
//! ```
//!
//! - [`plan`]: what a run is (`run_plan.json`) and why it is not submittable.
//! - [`logs`]: LoadGen's summary and detail logs.
//! - [`report`]: a finished run read back ([`report::Outcome`]), the verdict and the result table.
//! - [`serving`]: a serving run's record of its endpoints (`serving.json`).
//! - [`summaries`]: NVIDIA's summaries of a log root.

pub mod logs;
pub mod plan;
pub mod report;
pub mod serving;
pub mod summaries;

pub use crate::layout::{ACCURACY_LOG, ACCURACY_TXT, DETAIL_LOG, SUMMARY_LOG, TRACE_LOG};

use crate::fsutil::{FsError, write_atomic};
use crate::signals::Signal;
use crate::submittable::{self, NonSubmittable};
use mlperf_config::AuditTest;
use std::path::{Path, PathBuf};

/// LoadGen's settings as the run reads them.
pub const USER_CONF: &str = "user.conf";
/// The settings LoadGen ran with, as it resolved them from `user.conf`.
pub const EFFECTIVE_SETTINGS: &str = "effective_settings.txt";
/// What the run is ([`plan::RunPlan`]), written before it starts.
pub const RUN_PLAN: &str = "run_plan.json";
/// The audit settings file of a compliance run.
pub const AUDIT_CONFIG: &str = "audit.config";
/// Why the run can never be part of a submission, one reason a line.
pub const NON_SUBMITTABLE: &str = "NON_SUBMITTABLE.txt";
/// What an accuracy run's score means where it is not the benchmark's (synthetic workloads).
pub const ACCURACY_NOTE: &str = "ACCURACY_NOTE.txt";
/// The expected rate a development run measured for itself, and how.
pub const PROBE: &str = "probe.txt";
/// Where a probed development run that ended before its minimum duration is kept when it runs
/// again at the rate it measured ([`set_aside_short_run`]).
pub const SHORT_RUN: &str = "short_run";
/// The run's own diagnostics at debug level, whatever the terminal showed.
pub const RUN_LOG: &str = "mlperf_run.log";
/// The marker a run directory gets when a signal stopped its run; it holds the signal's name.
pub const ABORTED: &str = "ABORTED";
/// The marker a run directory gets when its run failed for a reason LoadGen does not log (a
/// serving request that failed, an engine that exited); it says what happened.
pub const FAILED: &str = "FAILED.txt";

/// What went wrong with a run directory or a log root.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunDirError {
    /// A file of the run directory or log root could not be written.
    #[error(transparent)]
    Write(#[from] FsError),
    #[error("{} already holds a run; logs are never overwritten", .0.display())]
    HoldsARun(PathBuf),
    #[error("{}: no run plan: {source}", .dir.display())]
    NoPlan { dir: PathBuf, source: std::io::Error },
    #[error("{}/{RUN_PLAN}: {source}", .dir.display())]
    BadPlan { dir: PathBuf, source: serde_json::Error },
    #[error("round {round} has no compliance test {test} (it has {known})")]
    NoSuchAudit { round: String, test: AuditTest, known: String },
    #[error("cannot read {}: {source}", .path.display())]
    LogUnreadable { path: PathBuf, source: std::io::Error },
    /// A malformed `:::MLLOG` line (the checker aborts on it too).
    #[error("detail log line {line}: {source}")]
    LogLine { line: usize, source: serde_json::Error },
}

impl From<RunDirError> for crate::Error {
    fn from(e: RunDirError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// Moves what a finished run wrote in `dir` (LoadGen's logs, the run's own log, and the `user.conf`,
/// effective settings and `probe.txt` it ran with) into `dir/short_run/`, so the run can go again in `dir` without
/// overwriting it.
pub fn set_aside_short_run(dir: &Path) -> Result<PathBuf, RunDirError> {
    let to = dir.join(SHORT_RUN);
    if to.exists() {
        return Err(RunDirError::HoldsARun(to));
    }
    std::fs::create_dir(&to).map_err(|source| FsError::Create { path: to.clone(), source })?;
    for name in [SUMMARY_LOG, DETAIL_LOG, TRACE_LOG, ACCURACY_LOG, RUN_LOG, USER_CONF, EFFECTIVE_SETTINGS, PROBE] {
        let from = dir.join(name);
        if from.exists() {
            std::fs::rename(&from, to.join(name)).map_err(|source| FsError::Rename { path: from, source })?;
        }
    }
    Ok(to)
}

/// Records in a run directory that a signal stopped its run (the child writes the same marker
/// when it gets there first).
pub fn mark_aborted(dir: &Path, signal: Signal) {
    let marker = dir.join(ABORTED);
    if !marker.exists() {
        let _ = std::fs::write(marker, format!("{}\n", signal.name()));
    }
}

/// The signal that stopped the run, if one did.
pub fn aborted(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(ABORTED)).ok().map(|s| s.trim().to_string())
}

/// Records in a run directory why its run failed.
pub fn mark_failed(dir: &Path, why: &str) -> Result<(), RunDirError> {
    Ok(write_atomic(&dir.join(FAILED), format!("{why}\n").as_bytes())?)
}

/// Why the run failed, if a failure was recorded.
pub fn failed(dir: &Path) -> Option<String> {
    std::fs::read_to_string(dir.join(FAILED)).ok().map(|s| s.trim().to_string())
}

/// Writes `NON_SUBMITTABLE.txt` with `reasons`, one a line (nothing when there are none).
pub fn write_non_submittable(dir: &Path, reasons: &[NonSubmittable]) -> Result<(), RunDirError> {
    if reasons.is_empty() {
        return Ok(());
    }
    Ok(write_atomic(&dir.join(NON_SUBMITTABLE), submittable::render(reasons).as_bytes())?)
}

/// Adds `reasons` found once the run started (a family opening its workload) to the run's plan
/// and `NON_SUBMITTABLE.txt`, after the plan's own.
pub fn add_non_submittable(dir: &Path, reasons: &[NonSubmittable]) -> Result<(), RunDirError> {
    let mut run = plan::read_plan(dir)?;
    run.non_submittable.extend_from_slice(reasons);
    plan::write_plan(dir, &run)?;
    write_non_submittable(dir, &run.non_submittable)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_short_run_is_set_aside_whole_and_only_once() {
        let dir = std::env::temp_dir().join(format!("mlperf-short-run-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in [SUMMARY_LOG, DETAIL_LOG, USER_CONF, PROBE, RUN_PLAN] {
            std::fs::write(dir.join(name), name).unwrap();
        }
        let kept = set_aside_short_run(&dir).unwrap();
        for name in [SUMMARY_LOG, DETAIL_LOG, USER_CONF, PROBE] {
            assert_eq!(std::fs::read_to_string(kept.join(name)).unwrap(), name);
            assert!(!dir.join(name).exists(), "{name} moved");
        }
        assert!(dir.join(RUN_PLAN).exists(), "the plan is the run's, not the attempt's");
        let e = set_aside_short_run(&dir).unwrap_err().to_string();
        assert!(e.contains("short_run") && e.contains("never overwritten"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
