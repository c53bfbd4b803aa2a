//! TEST09 (output length in performance mode), as `compliance/TEST09/run_verification.py` checks
//! the audit run's accuracy log: each entry's output length is its `data` read as whole
//! little-endian int32 tokens (a trailing partial token is dropped, an empty or undecodable entry
//! counts 0, as the script's exception handler does), and the run passes when the mean over all
//! entries lies within the round's bounds (both inclusive). The report is `verify_output_len.txt`
//! as the script writes it.

use super::ComplianceError;
use super::Verification;
use crate::accuracy::log::decode_hex;
use crate::accuracy::python_float_repr;
use mlperf_config::OutputTokenBounds;
use serde::Deserialize;
use std::fmt::Write;
use std::path::Path;

#[derive(Debug, Deserialize)]
struct Entry {
    #[serde(default)]
    data: String,
}

/// The statistics the script prints.
#[derive(Debug, Clone, PartialEq)]
pub struct OutputLengths {
    pub samples: usize,
    pub mean: f64,
    pub min: usize,
    pub max: usize,
    /// Population standard deviation.
    pub std_dev: f64,
}

impl OutputLengths {
    fn of(lengths: &[usize]) -> OutputLengths {
        let n = lengths.len().max(1) as f64;
        let mean = lengths.iter().sum::<usize>() as f64 / n;
        let variance = lengths.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / n;
        OutputLengths { samples: lengths.len(), mean, min: lengths.iter().copied().min().unwrap_or(0), max: lengths.iter().copied().max().unwrap_or(0), std_dev: variance.sqrt() }
    }
}

/// `run_verification.py -c <run dir> --audit-config <the round's bounds>` on the run's
/// `mlperf_log_accuracy.json`.
pub fn verify(accuracy_log: &Path, bounds: OutputTokenBounds) -> Result<Verification, ComplianceError> {
    let entries: Vec<Entry> = super::read_accuracy_entries(accuracy_log)?;
    if entries.is_empty() {
        return Err(ComplianceError::NoEntries(accuracy_log.to_path_buf()));
    }
    let lengths: Vec<usize> = entries.iter().map(|e| decode_hex(e.data.trim()).map_or(0, |bytes| bytes.len() / 4)).collect();
    let stats = OutputLengths::of(&lengths);
    let (min_pass, max_pass) = (stats.mean >= bounds.min, stats.mean <= bounds.max);
    let passed = min_pass && max_pass;
    let summary = format!("mean {:.2} output tokens over {} samples (bounds {} to {})", stats.mean, stats.samples, python_float_repr(bounds.min), python_float_repr(bounds.max));
    Ok(Verification::text(passed, report(&stats, bounds, min_pass, max_pass), summary))
}

/// `verify_output_len.txt`, line for line as the script writes it.
fn report(stats: &OutputLengths, bounds: OutputTokenBounds, min_pass: bool, max_pass: bool) -> String {
    let rule = "=".repeat(80);
    let python_bool = |b: bool| if b { "True" } else { "False" };
    let mut out = String::new();
    let _ = writeln!(out, "{rule}\nTEST09: Verify Output Token Length in Performance Mode\n{rule}\n");
    let _ = writeln!(out, "Output Token Length Statistics\n{}", "-".repeat(40));
    let _ = writeln!(out, "Total samples: {}\nMean output tokens: {:.2}\nMin output tokens: {}\nMax output tokens: {}", stats.samples, stats.mean, stats.min, stats.max);
    let _ = writeln!(out, "Std deviation: {:.2}", stats.std_dev);
    let _ = writeln!(out, "\n{rule}\nVerification Results\n{rule}");
    let _ = writeln!(out, "Mean output tokens: {:.2}\nMin threshold: {}\nMax threshold: {}", stats.mean, python_float_repr(bounds.min), python_float_repr(bounds.max));
    let _ = writeln!(out, "Min check pass: {}\nMax check pass: {}", python_bool(min_pass), python_bool(max_pass));
    let _ = writeln!(out, "\n{}", if min_pass && max_pass { "TEST PASS" } else { "TEST FAIL" });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const BOUNDS: OutputTokenBounds = OutputTokenBounds { min: 1150.38, max: 1406.02 };

    fn log_of(dir: &Path, lengths: &[usize]) -> std::path::PathBuf {
        let entries: Vec<serde_json::Value> = lengths
            .iter()
            .enumerate()
            .map(|(i, &n)| {
                let data: String = (0..n).map(|t| format!("{:08X}", (t as u32 + 7).swap_bytes())).collect();
                serde_json::json!({ "seq_id": i, "qsl_idx": i, "data": data, "token_count": n })
            })
            .collect();
        let path = dir.join(crate::rundir::ACCURACY_LOG);
        std::fs::write(&path, serde_json::to_string(&entries).unwrap()).unwrap();
        path
    }

    fn scratch(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("mlperf-test09-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    #[test]
    fn a_mean_within_the_bounds_passes_and_the_report_reads_as_the_scripts() {
        let dir = scratch("pass");
        let v = verify(&log_of(&dir, &[1200, 1300, 1250]), BOUNDS).unwrap();
        assert!(v.passed, "{}", v.report);
        let expected = format!(
            "{rule}\nTEST09: Verify Output Token Length in Performance Mode\n{rule}\n\nOutput Token Length Statistics\n{dash}\nTotal samples: 3\n\
             Mean output tokens: 1250.00\nMin output tokens: 1200\nMax output tokens: 1300\nStd deviation: 40.82\n\n{rule}\nVerification Results\n{rule}\n\
             Mean output tokens: 1250.00\nMin threshold: 1150.38\nMax threshold: 1406.02\nMin check pass: True\nMax check pass: True\n\nTEST PASS\n",
            rule = "=".repeat(80),
            dash = "-".repeat(40)
        );
        assert_eq!(v.report, expected);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn truncated_outputs_fail_and_empty_entries_count_zero() {
        let dir = scratch("fail");
        let v = verify(&log_of(&dir, &[1300, 1300, 0]), BOUNDS).unwrap();
        assert!(!v.passed);
        assert!(v.report.contains("Mean output tokens: 866.67\n") && v.report.contains("Min check pass: False\nMax check pass: True\n\nTEST FAIL\n"), "{}", v.report);
        std::fs::write(dir.join("odd.json"), r#"[{"qsl_idx": 0, "data": "0100000002"}, {"qsl_idx": 1, "data": "zz"}]"#).unwrap();
        let v = verify(&dir.join("odd.json"), OutputTokenBounds { min: 0.0, max: 1.0 }).unwrap();
        assert!(v.report.contains("Mean output tokens: 0.50\nMin output tokens: 0\nMax output tokens: 1\n"), "a partial token is dropped, bad hex counts 0: {}", v.report);
        assert!(v.report.contains("Min threshold: 0.0\nMax threshold: 1.0\n"), "Python prints whole floats with .0: {}", v.report);
        std::fs::write(dir.join("empty.json"), "[]").unwrap();
        assert!(verify(&dir.join("empty.json"), BOUNDS).unwrap_err().to_string().contains("no entries"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
