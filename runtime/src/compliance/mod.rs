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
mod testlogs;

pub use crate::accuracy::python_float_repr;
use mlperf_config::Scenario;
use std::path::{Path, PathBuf};

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
    pub fn write(&self, dest: &Path, force: bool) -> Result<(), String> {
        if dest.exists() && !force {
            return Err(format!("{} already exists; verified compliance is never overwritten without --force", dest.display()));
        }
        let name = dest.file_name().and_then(|n| n.to_str()).ok_or_else(|| format!("{} has no directory name", dest.display()))?;
        let staging = dest.with_file_name(format!(".{name}.tmp-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&staging);
        for (rel, content) in &self.files {
            let path = staging.join(rel);
            match content {
                Content::Text(text) => crate::fsutil::write_atomic(&path, text.as_bytes())?,
                Content::CopyOf(from) => {
                    std::fs::create_dir_all(path.parent().expect("joined paths have a parent")).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
                    std::fs::copy(from, &path).map_err(|e| format!("cannot copy {} to {}: {e}", from.display(), path.display()))?;
                }
            }
        }
        if dest.exists() {
            std::fs::remove_dir_all(dest).map_err(|e| format!("cannot replace {}: {e}", dest.display()))?;
        }
        std::fs::rename(&staging, dest).map_err(|e| format!("cannot move {} into place: {e}", dest.display()))
    }
}
