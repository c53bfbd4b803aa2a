//! NVIDIA's summaries of a log root, which NVIDIA's and MLCFlow's result scripts read:
//! `perf_harness_summary.json` and `accuracy_summary.json`, each
//! `{"<system>-<workload>-<scenario>": {"<benchmark>": "<result>"}}`.

use super::report::{Outcome, RunStatus};
use super::{ACCURACY_TXT, RunDirError};
use crate::fsutil::write_atomic;
use std::collections::BTreeMap;
use std::path::Path;

/// Writes NVIDIA's summaries into the log root `root`, each run under
/// `<system>-<workload>-<scenario>` / `<benchmark>`: the performance result
/// (`result_samples_per_second: 1234.5, Result is VALID`) or the accuracy run's `accuracy.txt`.
/// Earlier entries of the same root are kept, as NVIDIA's harness appends.
pub fn write_summaries(root: &Path, outcomes: &[Outcome]) -> Result<(), RunDirError> {
    write_summaries_with(root, outcomes, &|_| None)
}

/// The summaries with `note` of a performance run before its verdict (`..., <note>, Result is
/// VALID`): a power run's metric, which the workflows read.
pub fn write_summaries_with(root: &Path, outcomes: &[Outcome], note: &dyn Fn(&Outcome) -> Option<String>) -> Result<(), RunDirError> {
    let read = |name: &str| -> BTreeMap<String, BTreeMap<String, String>> {
        std::fs::read_to_string(root.join(name)).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    };
    let (mut performance, mut accuracy) = (read(PERF_SUMMARY), read(ACCURACY_SUMMARY));
    for o in outcomes {
        let config = format!("{}-{}-{}", o.plan.system_name, o.plan.workload.section_name(), o.plan.scenario.name());
        let benchmark = o.plan.bench_dir.clone();
        if matches!(o.status, RunStatus::Accuracy | RunStatus::BelowTarget) {
            let text = std::fs::read_to_string(o.dir.join(ACCURACY_TXT)).map_or_else(|_| "no accuracy.txt".to_string(), |t| t.trim().to_string());
            accuracy.entry(config).or_default().insert(benchmark, text);
        } else {
            let metric = o.metric.as_ref().map_or(String::new(), |(name, value)| format!("{name}: {value}, "));
            let note = note(o).map_or(String::new(), |n| format!("{n}, "));
            performance.entry(config).or_default().insert(benchmark, format!("{metric}{note}Result is {}", o.status.name()));
        }
    }
    let json = |v: &BTreeMap<String, BTreeMap<String, String>>| serde_json::to_string_pretty(v).expect("summaries serialize") + "\n";
    if !performance.is_empty() {
        write_atomic(&root.join(PERF_SUMMARY), json(&performance).as_bytes())?;
    }
    if !accuracy.is_empty() {
        write_atomic(&root.join(ACCURACY_SUMMARY), json(&accuracy).as_bytes())?;
    }
    Ok(())
}

pub const PERF_SUMMARY: &str = "perf_harness_summary.json";
pub const ACCURACY_SUMMARY: &str = "accuracy_summary.json";
