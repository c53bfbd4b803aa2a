//! Compliance audits: `run_audit_harness` runs the round's compliance tests through the harness
//! and verifies them natively, with the rules and the report text of the official scripts in
//! mlcommons/inference `compliance/` (the submission checker greps these reports):
//!
//! - [`test01`]: accuracy in performance mode (`verify_accuracy.txt`, `verify_performance.txt`,
//!   and the automated non-deterministic fallback);
//! - [`test04`]: sample caching (`verify_performance.txt`);
//! - [`test06`]: LLM output consistency (`verify_accuracy.txt`);
//! - [`test07`]: accuracy in performance mode over a compliance set (`verify_accuracy.txt`);
//! - [`test09`]: LLM output length in performance mode (`verify_output_len.txt`).
//!
//! [`audit`] drives the runs and writes `build/compliance/<system_name>/<bench>/<Scenario>/<TEST>/`
//! holding exactly what the checker wants in a TEST0x directory, pass or fail, with its
//! provenance next to it in `<TEST>.json`; [`reference`] finds the runs an audit is compared with.

pub mod audit;
pub mod reference;
pub mod test01;
pub mod test04;
pub mod test06;
pub mod test07;
pub mod test09;
#[cfg(test)]
pub(crate) mod testlogs;

pub use crate::accuracy::python_float_repr;
use crate::fsutil::FsError;
use mlperf_config::{AuditTest, Scenario};
use std::path::{Path, PathBuf};

/// Why an audit could not be planned, verified or written (a failed verification is no error: it
/// is a verdict). The scripts' own report lines (`TEST FAIL: ...`) stay text, in the reports.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ComplianceError {
    /// References missing: what to run first, one line each.
    #[error("nothing was run:\n  - {}", .0.join("\n  - "))]
    NothingRun(Vec<String>),
    #[error("no selected benchmark needs {tests} in round {round}")]
    NotRequired { tests: String, round: String },
    #[error("--audit_tests: {test} is not a test this build verifies (it verifies {verified}; round {round} has {known})")]
    NotVerified { test: AuditTest, verified: String, round: String, known: String },
    /// The round's tables lack what a test needs (`the round's TEST04 has no tolerance_percent`).
    #[error("{0}")]
    RoundLacks(String),
    /// The family's scorer (the `Benchmark::score` boundary's message).
    #[error("{0}")]
    Score(String),
    #[error("cannot read {}: {source}", .path.display())]
    LogUnreadable { path: PathBuf, source: std::io::Error },
    #[error("{}: not a LoadGen accuracy log: {source}", .path.display())]
    NotAccuracyLog { path: PathBuf, source: serde_json::Error },
    /// TEST01's reference accuracy log does not read back whole (checked before the audit runs).
    #[error("TEST01's reference accuracy log is unusable: {source}; rerun the AccuracyOnly run (`mlperf run_harness --test_mode=AccuracyOnly` with the audit's selection) or remove {} so an older complete run serves", .run.display())]
    CorruptReference { run: PathBuf, source: crate::accuracy::AccuracyError },
    #[error("{}: no entries (the audit logs every sample; was audit.config read?)", .0.display())]
    NoEntries(PathBuf),
    #[error("{} already exists; verified compliance is never overwritten without --force", .0.display())]
    Exists(PathBuf),
    #[error("{} has no directory name", .0.display())]
    NoDirectoryName(PathBuf),
    #[error(transparent)]
    Write(#[from] FsError),
    #[error("cannot create {}: {source}", .path.display())]
    Create { path: PathBuf, source: std::io::Error },
    #[error("cannot copy {} to {}: {source}", .from.display(), .to.display())]
    Copy { from: PathBuf, to: PathBuf, source: std::io::Error },
    #[error("cannot replace {}: {source}", .path.display())]
    Replace { path: PathBuf, source: std::io::Error },
    #[error("cannot move {} into place: {source}", .path.display())]
    Move { path: PathBuf, source: std::io::Error },
}

impl From<ComplianceError> for crate::Error {
    fn from(e: ComplianceError) -> crate::Error {
        match e {
            ComplianceError::CorruptReference { .. } => crate::Error::Data(e.to_string()),
            _ => crate::Error::Other(e.to_string()),
        }
    }
}

/// An accuracy log as the LLM audits read it: a JSON array of entries.
fn read_accuracy_entries<T: serde::de::DeserializeOwned>(path: &Path) -> Result<Vec<T>, ComplianceError> {
    let text = std::fs::read_to_string(path).map_err(|source| ComplianceError::LogUnreadable { path: path.to_path_buf(), source })?;
    serde_json::from_str(&text).map_err(|source| ComplianceError::NotAccuracyLog { path: path.to_path_buf(), source })
}

/// The verdict of one verification script.
#[derive(Debug, Clone, PartialEq)]
pub struct Verification {
    pub passed: bool,
    /// The script's output, as the `verify_*.txt` file holds it.
    pub report: String,
    /// The numbers for the result table.
    pub summary: String,
}

impl Verification {
    pub fn text(passed: bool, report: String, summary: String) -> Verification {
        Verification { passed, report, summary }
    }
}

/// Both `verify_performance.py` scripts allow 20 % instead of the round's threshold when the
/// reference SingleStream score is at most 200000 or the MultiStream one at most 1600000 (fast
/// systems, where OS noise dominates latencies). The scripts hard-code these numbers.
pub fn threshold(scenario: Scenario, reference_score: f64, round_threshold: f64) -> f64 {
    const RELAXED: f64 = 0.20;
    match scenario {
        Scenario::SingleStream if reference_score <= 200_000.0 => RELAXED,
        Scenario::MultiStream if reference_score <= 1_600_000.0 => RELAXED,
        Scenario::SingleStream | Scenario::MultiStream | Scenario::Offline | Scenario::Server | Scenario::Interactive => round_threshold,
    }
}

/// Where a file of a TEST0x directory comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    CopyOf(PathBuf),
}

/// The files of one TEST0x directory, by path relative to it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestDir {
    pub files: Vec<(PathBuf, Content)>,
}

impl TestDir {
    pub fn text(&mut self, rel: &str, text: String) {
        self.files.push((PathBuf::from(rel), Content::Text(text)));
    }

    pub fn copy(&mut self, rel: &str, from: &Path) {
        self.files.push((PathBuf::from(rel), Content::CopyOf(from.to_path_buf())));
    }

    /// Writes the directory at `dest` as a whole: built next to it, then renamed into place, so a
    /// reader never sees half of it. An existing `dest` is replaced only with `force`.
    pub fn write(&self, dest: &Path, force: bool) -> Result<(), ComplianceError> {
        if dest.exists() && !force {
            return Err(ComplianceError::Exists(dest.to_path_buf()));
        }
        let name = dest.file_name().and_then(|n| n.to_str()).ok_or_else(|| ComplianceError::NoDirectoryName(dest.to_path_buf()))?;
        let staging = dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        for (rel, content) in &self.files {
            let path = staging.join(rel);
            match content {
                Content::Text(text) => crate::fsutil::write_atomic(&path, text.as_bytes())?,
                Content::CopyOf(from) => {
                    std::fs::create_dir_all(path.parent().expect("joined paths have a parent")).map_err(|source| ComplianceError::Create { path: path.clone(), source })?;
                    std::fs::copy(from, &path).map_err(|source| ComplianceError::Copy { from: from.clone(), to: path.clone(), source })?;
                }
            }
        }
        if dest.exists() {
            std::fs::remove_dir_all(dest).map_err(|source| ComplianceError::Replace { path: dest.to_path_buf(), source })?;
        }
        std::fs::rename(&staging, dest).map_err(|source| ComplianceError::Move { path: dest.to_path_buf(), source })
    }
}
