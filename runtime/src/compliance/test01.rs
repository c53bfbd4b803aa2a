//! TEST01 (accuracy in performance mode), as `compliance/TEST01/run_verification.py` runs it:
//!
//! - [`compare_accuracy_logs`] is `verify_accuracy.py` (its default JSON mode): every `qsl_idx` of
//!   the audit run's sampled accuracy log that the reference AccuracyOnly log also holds must have
//!   the same first element of `data` decoded with `--dtype`; PASS iff no mismatch and at least one
//!   match. Its report is the script's output, line for line (`verify_accuracy.txt`).
//! - [`compare_performance`] is `verify_performance.py`: both detail logs VALID, same scenario
//!   (and Server target latency), and the audit's metric within ± the round's
//!   `performance_delta_percent` of the reference's (`verify_performance.txt`).
//! - [`fallback`] automates the non-deterministic procedure of the TEST01 README (Part III): the
//!   reference entries of the sampled `qsl_idx`s (`create_accuracy_baseline.sh`) and the audit's
//!   log are scored by the benchmark's scorer (`baseline_accuracy.txt`, `compliance_accuracy.txt`),
//!   and each metric must differ by at most the round's `delta_percent`, computed as the
//!   submission checker does: `|1 - baseline / compliance| * 100`.

use super::{Verification, python_float_repr, threshold};
use crate::accuracy::log::{LogDtype, for_each_entry};
use crate::accuracy::{AccuracyError, Scored};
use crate::fsutil::FsError;
use crate::rundir::logs::{DetailLog, Validity};
use mlperf_config::Scenario;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// `verify_accuracy.py`'s counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AccuracyComparison {
    pub acc_log_entries: usize,
    pub acc_log_duplicate_keys: usize,
    pub acc_log_data_mismatch: usize,
    pub perf_log_entries: usize,
    pub perf_log_qsl_idx_match: usize,
    pub perf_log_data_mismatch: usize,
    pub missing_qsl_idxs: usize,
}

impl AccuracyComparison {
    pub fn passed(&self) -> bool {
        self.perf_log_data_mismatch == 0 && self.perf_log_qsl_idx_match > 0
    }

    /// `verify_accuracy.txt`, as the script prints it.
    pub fn report(&self) -> String {
        let mut out = String::from("Verifying accuracy. This might take a while...\nReading accuracy mode results...\nReading performance mode results...\n");
        let _ = writeln!(out, "num_acc_log_entries = {}", self.acc_log_entries);
        let _ = writeln!(out, "num_acc_log_duplicate_keys = {}", self.acc_log_duplicate_keys);
        let _ = writeln!(out, "num_acc_log_data_mismatch = {}", self.acc_log_data_mismatch);
        let _ = writeln!(out, "num_perf_log_entries = {}", self.perf_log_entries);
        let _ = writeln!(out, "num_perf_log_qsl_idx_match = {}", self.perf_log_qsl_idx_match);
        let _ = writeln!(out, "num_perf_log_data_mismatch = {}", self.perf_log_data_mismatch);
        let _ = writeln!(out, "num_missing_qsl_idxs = {}", self.missing_qsl_idxs);
        // print("TEST PASS\n") ends with an empty line.
        out.push_str(if self.passed() { "TEST PASS\n\n" } else { "TEST FAIL\n\n" });
        out
    }
}

/// Why TEST01's accuracy comparison or its fallback has no verdict (written into
/// `verify_accuracy.txt` as the script's `ERROR:` line).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Test01Error {
    #[error("{what}: {bytes} bytes of data are not a whole number of {dtype} elements")]
    NotWholeElements { what: String, bytes: usize, dtype: LogDtype },
    #[error(transparent)]
    Log(#[from] AccuracyError),
    #[error(transparent)]
    Write(#[from] FsError),
    /// The family's scorer failed on the baseline or the audit's log.
    #[error("{}: {source}", log.display())]
    Score { log: PathBuf, source: Box<crate::Error> },
}

/// The first element of `data` as numpy compares it (`None` for an empty response).
fn first_element(data: &[u8], dtype: LogDtype, what: &str) -> Result<Option<f64>, Test01Error> {
    if !data.len().is_multiple_of(dtype.size()) {
        // np.frombuffer raises here; the script stops without a verdict.
        return Err(Test01Error::NotWholeElements { what: what.to_string(), bytes: data.len(), dtype });
    }
    if data.is_empty() {
        return Ok(None);
    }
    Ok(Some(match dtype.get_int(data, 0) {
        Some(v) if !dtype.is_float() => v as f64,
        _ => dtype.get_f64(data, 0),
    }))
}

/// `verify_accuracy.py -r <reference> -t <test> --dtype <dtype>`.
pub fn compare_accuracy_logs(reference: &Path, test: &Path, dtype: LogDtype) -> Result<AccuracyComparison, Test01Error> {
    let mut c = AccuracyComparison::default();
    // qsl_idx -> data of its first reference entry.
    let mut results: HashMap<usize, Vec<u8>> = HashMap::new();
    c.acc_log_entries = for_each_entry(reference, &mut |e| {
        match results.get(&e.qsl_idx) {
            Some(first) => {
                c.acc_log_duplicate_keys += 1;
                c.acc_log_data_mismatch += usize::from(*first != e.data);
            }
            None => {
                results.insert(e.qsl_idx, e.data);
            }
        }
        Ok(())
    })?;
    let test_name = test.display().to_string();
    c.perf_log_entries = for_each_entry(test, &mut |e| {
        let found = first_element(&e.data, dtype, &format!("{test_name} entry seq_id {}", e.seq_id))?;
        match results.get(&e.qsl_idx) {
            Some(known) => {
                c.perf_log_qsl_idx_match += 1;
                let expected = first_element(known, dtype, &format!("reference entry for qsl_idx {}", e.qsl_idx))?;
                let differs = match (found, expected) {
                    (Some(a), Some(b)) => a != b, // NaN never equals, as in numpy
                    (a, b) => a.is_some() != b.is_some(),
                };
                c.perf_log_data_mismatch += usize::from(differs);
            }
            None => c.missing_qsl_idxs += 1,
        }
        // The script then remembers the test entry: a later repeat compares against it.
        results.insert(e.qsl_idx, e.data);
        Ok(())
    })?;
    Ok(c)
}

/// The scenario metric `verify_performance.py` compares (`RESULT_FIELD`; LoadGen logs
/// Interactive runs as Server).
fn result_field(scenario: Scenario) -> &'static str {
    match scenario {
        Scenario::Offline => "result_samples_per_second",
        Scenario::SingleStream => "early_stopping_latency_ss",
        Scenario::MultiStream => "early_stopping_latency_ms",
        Scenario::Server | Scenario::Interactive => "result_completed_samples_per_sec",
    }
}

struct PerfLog {
    scenario: Scenario,
    score: f64,
    target_latency: Option<serde_json::Value>,
}

/// `parse_result_log`: the metric, VALID, and no errors.
fn parse_result_log(path: &Path) -> Result<PerfLog, String> {
    let log = DetailLog::read(path).map_err(|e| format!("TEST FAIL: {e}"))?;
    let name = log.str("effective_scenario").unwrap_or_default();
    let scenario = Scenario::from_name(name).ok_or_else(|| format!("TEST FAIL: unknown scenario '{name}' in {}", path.display()))?;
    let field = result_field(scenario);
    let score = log.f64(field).ok_or_else(|| format!("TEST FAIL: no {field} in {}", path.display()))?;
    if log.validity() != Some(Validity::Valid) {
        return Err(format!("TEST FAIL: Invalid results in {}", path.display()));
    }
    // The script means to warn here, but its warning line raises a NameError, so a log with
    // errors never passes; we fail it with a readable reason instead.
    let errors = log.u64("num_errors").unwrap_or(log.errors.len() as u64);
    if errors != 0 {
        return Err(format!("TEST FAIL: {errors} ERROR reported in {}", path.display()));
    }
    let target_latency = (scenario == Scenario::Server).then(|| log.get("effective_target_latency_ns").cloned().unwrap_or_default());
    Ok(PerfLog { scenario, score, target_latency })
}

/// `verify_performance.py -r <reference detail> -t <test detail>`; `delta_percent` is the round's
/// `performance_delta_percent`.
pub fn compare_performance(reference: &Path, test: &Path, delta_percent: f64) -> Verification {
    let mut out = String::from("Verifying performance.\n");
    let fail = |mut out: String, line: String| {
        out.push_str(&line);
        out.push('\n');
        Verification::text(false, out, line)
    };
    let (r, t) = match (parse_result_log(reference), parse_result_log(test)) {
        (Err(e), _) | (_, Err(e)) => return fail(out, e),
        (Ok(r), Ok(t)) => (r, t),
    };
    if r.scenario != t.scenario {
        return fail(out, "TEST FAIL: Test and reference scenarios do not match!".into());
    }
    if r.scenario == Scenario::Server && r.target_latency != t.target_latency {
        return fail(out, "TEST FAIL: Server target latency mismatch".into());
    }
    let _ = writeln!(out, "Reference score = {}", python_float_repr(r.score));
    let _ = writeln!(out, "Test score = {}", python_float_repr(t.score));
    let threshold = threshold(r.scenario, r.score, delta_percent / 100.0);
    let passed = r.score * (1.0 - threshold) <= t.score && t.score <= r.score * (1.0 + threshold);
    out.push_str(if passed { "TEST PASS\n" } else { "TEST FAIL: Test score invalid\n" });
    let summary = format!("perf {} vs reference {} (±{:.0} %)", python_float_repr(t.score), python_float_repr(r.score), threshold * 100.0);
    Verification::text(passed, out, summary)
}

/// The outcome of the non-deterministic fallback.
#[derive(Debug, Clone, PartialEq)]
pub struct Fallback {
    pub baseline: Scored,
    pub compliance: Scored,
    /// `(metric, delta %, allowed %)` for every metric of the accuracy target.
    pub deltas: Vec<(String, f64, f64)>,
    pub passed: bool,
}

/// Writes the reference entries whose `qsl_idx` the audit log sampled (every duplicate, in file
/// order, as `create_accuracy_baseline.sh`'s grep keeps them) to `baseline_out`.
pub fn write_baseline_log(reference: &Path, test: &Path, baseline_out: &Path) -> Result<usize, Test01Error> {
    let mut sampled = HashSet::new();
    for_each_entry(test, &mut |e| {
        sampled.insert(e.qsl_idx);
        Ok(())
    })?;
    let mut lines = Vec::new();
    for_each_entry(reference, &mut |e| {
        if sampled.contains(&e.qsl_idx) {
            let hex: String = e.data.iter().map(|b| format!("{b:02X}")).collect();
            lines.push(format!("{{ \"seq_id\" : {}, \"qsl_idx\" : {}, \"data\" : \"{hex}\" }}", e.seq_id, e.qsl_idx));
        }
        Ok(())
    })?;
    let text = format!("[\n{}\n]\n", lines.join(",\n"));
    crate::fsutil::write_atomic(baseline_out, text.as_bytes())?;
    Ok(lines.len())
}

/// Scores the baseline and the audit's log with `score` and compares each of `targets`
/// (`(metric, allowed delta %)`, the round's accuracy requirements of this checker model).
pub fn fallback(baseline_log: &Path, test_log: &Path, targets: &[(String, f64)], score: &dyn Fn(&Path) -> Result<Scored, crate::Error>) -> Result<Fallback, Test01Error> {
    let scored = |log: &Path| score(log).map_err(|e| Test01Error::Score { log: log.to_path_buf(), source: Box::new(e) });
    let (baseline, compliance) = (scored(baseline_log)?, scored(test_log)?);
    let value = |s: &Scored, metric: &str| s.metrics.iter().find(|(m, _)| m == metric).map_or(0.0, |(_, v)| *v);
    let mut deltas = Vec::new();
    let mut passed = !targets.is_empty();
    for (metric, allowed) in targets {
        let (b, c) = (value(&baseline, metric), value(&compliance, metric));
        // The checker fails a metric it cannot read (0) before computing any delta.
        let delta = if b == 0.0 || c == 0.0 { f64::INFINITY } else { (1.0 - b / c).abs() * 100.0 };
        passed &= delta <= *allowed;
        deltas.push((metric.clone(), delta, *allowed));
    }
    Ok(Fallback { baseline, compliance, deltas, passed })
}

#[cfg(test)]
#[path = "test01_tests.rs"]
mod tests;
