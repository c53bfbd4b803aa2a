//! Rules on `accuracy/` (accuracy_check.py): accuracy.txt against the round's patterns and
//! targets, the `hash=` line of truncation, the truncated log's size, the accuracy run's errors and
//! its coverage of the dataset.

use crate::accuracy::target::{self, first_group, python_regex};
use crate::check::common::{Bench, read_detail_log};
use crate::check::{Findings, Rule, Severity, Tree};
use crate::layout::{ACCURACY_LOG, ACCURACY_TXT, DETAIL_LOG, ResultKey};
use mlperf_config::AccuracyRequirement;
use std::path::Path;

/// The checker's limit on the shipped accuracy log (`MAX_ACCURACY_LOG_SIZE`): truncated logs are
/// 8199 bytes.
pub(crate) const MAX_ACCURACY_LOG_BYTES: u64 = 10 * 1024;

/// The line truncation appends to accuracy.txt (the checker's `^hash=([\w\d]+)$`).
const HASH_PATTERN: &str = r"^hash=([\w\d]+)$";

pub(crate) fn check(tree: &Tree, bench: &Bench, key: &ResultKey, f: &mut Findings) {
    let dir = tree.layout.accuracy_dir(key);
    let detail = dir.join(DETAIL_LOG);
    if let Some(log) = detail.is_file().then(|| read_detail_log(&detail, f)).flatten() {
        if !log.errors.is_empty() {
            let errors: Vec<String> = log.errors.iter().map(|(k, v)| format!("{k}: {v}")).collect();
            f.error(
                Rule::LoadgenErrors,
                &detail,
                format!("the accuracy run logged {} LoadGen error(s): {}", errors.len(), errors.join("; ")),
                "fix the cause and rerun the accuracy run",
            );
        }
        // qwen3-vl's Interactive scenario reads a set of its own (8,000 of 48,289).
        let expected = bench.round.scenario_set_size(key.scenario, bench.round.accuracy_sample_count());
        let (field, count) = match log.u64("effective_accuracy_sample_count") {
            Some(n) => ("effective_accuracy_sample_count", Some(n)),
            None => ("qsl_reported_total_count", log.u64("qsl_reported_total_count")),
        };
        if count != Some(expected) {
            f.key_error(
                Rule::AccuracySampleCount,
                &detail,
                field,
                format!("the accuracy run covered {} samples, {} requires the whole dataset of {expected}", count.map_or("?".into(), |n| n.to_string()), bench.checker_model),
                "run AccuracyOnly over the full dataset (the QSL's total count must be the dataset size)",
            );
        }
    }
    let log = dir.join(ACCURACY_LOG);
    if let Ok(meta) = std::fs::metadata(&log)
        && meta.len() > MAX_ACCURACY_LOG_BYTES
    {
        f.error(
            Rule::AccuracyLogSize,
            &log,
            format!("{} bytes; the checker accepts at most {MAX_ACCURACY_LOG_BYTES} (the log is not truncated)", meta.len()),
            "run `mlperf truncate_results` after the audits are verified (it keeps the full log under build/full_results/ and adds the hash line)",
        );
    }
    let txt = dir.join(ACCURACY_TXT);
    if let Ok(text) = std::fs::read_to_string(&txt) {
        let requirements = target::requirements(bench.round, &bench.checker_model);
        check_accuracy_txt(tree, &requirements, &text, &txt, f);
    }
}

/// accuracy.txt: every metric of the target matched by its pattern and meeting the target (and
/// upper limit), plus the hash line. Lines are matched from their start, as Python's `re.match`.
pub(crate) fn check_accuracy_txt(tree: &Tree, requirements: &[&AccuracyRequirement], text: &str, path: &Path, f: &mut Findings) {
    // Open division: the checker computes accuracy but never fails on it.
    let severity = if tree.is_closed_like() { Severity::Error } else { Severity::Warning };
    for miss in target::misses(text, requirements, tree.round) {
        if miss.is_round_data() {
            f.error(Rule::AccuracyTarget, path, miss.to_string(), miss.advice());
        } else {
            f.push(severity, Rule::AccuracyTarget, path, Some(miss.metric()), miss.to_string(), miss.advice());
        }
    }
    let lines: Vec<&str> = text.lines().collect();
    let hash = python_regex(HASH_PATTERN).expect("the hash pattern compiles");
    if !lines.iter().any(|l| first_group(&hash, l).is_some()) {
        f.error(
            Rule::AccuracyHash,
            path,
            "no `hash=<sha256>` line: the accuracy log was not truncated by the official procedure".into(),
            "run `mlperf truncate_results` (after audit verification): it appends the full log's sha256 and truncates the log",
        );
    }
}
