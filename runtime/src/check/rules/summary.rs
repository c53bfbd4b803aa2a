//! `mlperf_log_summary.txt` against the detail log next to it: LoadGen writes both from one run,
//! so every figure both state (the validity, the result, latencies, rates) must agree. The checker
//! reads its figures from the detail log only, so a figure changed there alone would pass it.

use crate::check::{Findings, Rule};
use crate::rundir::logs::{DetailLog, parse_summary};
use serde_json::Value;
use std::path::Path;

const FIX: &str = "stage LoadGen's mlperf_log_summary.txt and mlperf_log_detail.txt of one run, both unchanged";

/// Compares the summary at `summary` with the parsed `detail` log of the same run.
pub(crate) fn check(summary: &Path, detail: &DetailLog, f: &mut Findings) {
    if !summary.is_file() {
        return; // required-file reports it
    }
    let text = match std::fs::read(summary) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).to_string(),
        Err(e) => {
            f.error(Rule::SummaryMatchesDetail, summary, format!("cannot be read: {e}"), FIX);
            return;
        }
    };
    let fields = parse_summary(&text);
    if !text.contains("MLPerf Results Summary") || !fields.contains_key("Result is") {
        f.error(Rule::SummaryMatchesDetail, summary, "not a LoadGen summary (no `MLPerf Results Summary` header or `Result is` line)".into(), FIX);
        return;
    }
    let multistream = detail.str("effective_scenario") == Some("MultiStream");
    // The result's percentile is stated twice (as the result and in the additional stats): one finding.
    let mut reported = std::collections::BTreeSet::new();
    for (label, stated) in &fields {
        let Some(key) = detail_key(label, multistream) else { continue };
        let Some(logged) = detail.get(&key) else { continue };
        if !agrees(stated, logged) && reported.insert(key.clone()) {
            f.key_error(
                Rule::SummaryMatchesDetail,
                summary,
                &key,
                format!("states `{label} : {stated}`, but the detail log's {key} is {logged}: one of the two was changed after the run"),
                FIX,
            );
        }
    }
}

/// The detail-log key of a summary line that states a figure, None for other lines.
fn detail_key(label: &str, multistream: bool) -> Option<String> {
    let fixed = match label {
        "Result is" => "result_validity",
        "Min duration satisfied" => "result_min_duration_met",
        "Min queries satisfied" => "result_min_queries_met",
        "Samples per second" => "result_samples_per_second",
        "Completed samples per second" => "result_completed_samples_per_sec",
        "Scheduled samples per second" => "result_scheduled_samples_per_sec",
        "QPS w/ loadgen overhead" => "result_qps_with_loadgen_overhead",
        "QPS w/o loadgen overhead" => "result_qps_without_loadgen_overhead",
        _ => "",
    };
    if !fixed.is_empty() {
        return Some(fixed.to_string());
    }
    // MultiStream's latencies are per query (`Per-query latency:` in the summary).
    let per_query = if multistream { "query_" } else { "" };
    if let Some(stat) = label.strip_suffix(" latency (ns)").filter(|s| ["Min", "Max", "Mean"].contains(s)) {
        return Some(format!("result_{}_{per_query}latency_ns", stat.to_lowercase()));
    }
    // `90.00 percentile latency (ns)` (additional stats) and `90.0th percentile latency (ns)` (the result).
    let percentile: f64 = label.strip_suffix(" percentile latency (ns)")?.trim_end_matches("th").parse().ok()?;
    let per_query = if multistream { "per_query_" } else { "" };
    Some(format!("result_{percentile:.2}_percentile_{per_query}latency_ns"))
}

/// Whether the summary's text states the logged value: strings and Yes/No exactly, numbers to
/// the precision the summary prints (one unit in its last digit).
fn agrees(stated: &str, logged: &Value) -> bool {
    match logged {
        Value::String(s) => s == stated,
        Value::Bool(b) => stated == if *b { "Yes" } else { "No" },
        Value::Number(n) => {
            let (Some(logged), Ok(value)) = (n.as_f64(), stated.parse::<f64>()) else { return false };
            (value - logged).abs() <= last_place(stated) * (1.0 + 1e-9)
        }
        _ => false,
    }
}

/// One unit in the last printed digit of a number (`47.61` -> 0.01, `1.23457e+06` -> 10).
fn last_place(text: &str) -> f64 {
    let (mantissa, exponent) = text.split_once(['e', 'E']).map_or((text, 0), |(m, e)| (m, e.parse::<i32>().unwrap_or(0)));
    let decimals = mantissa.split_once('.').map_or(0, |(_, d)| d.len() as i32);
    10f64.powi(exponent - decimals)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_lines_map_to_detail_keys_and_compare_to_the_printed_precision() {
        assert_eq!(detail_key("90.0th percentile latency (ns)", false).as_deref(), Some("result_90.00_percentile_latency_ns"));
        assert_eq!(detail_key("99.0th percentile latency (ns)", true).as_deref(), Some("result_99.00_percentile_per_query_latency_ns"));
        assert_eq!(detail_key("99.90 percentile latency (ns)", false).as_deref(), Some("result_99.90_percentile_latency_ns"));
        assert_eq!(detail_key("Min latency (ns)", true).as_deref(), Some("result_min_query_latency_ns"));
        assert_eq!(detail_key("Mean latency (ns)", false).as_deref(), Some("result_mean_latency_ns"));
        assert_eq!(detail_key("SUT name", false), None);
        assert!(agrees("47.61", &serde_json::json!(47.6133)) && !agrees("47.61", &serde_json::json!(47.63)));
        assert!(agrees("21879598", &serde_json::json!(21879598)) && !agrees("21879598", &serde_json::json!(11879598)));
        assert!(agrees("1.23457e+06", &serde_json::json!(1234567.0)) && !agrees("1.23457e+06", &serde_json::json!(1234767.0)));
        assert!(agrees("VALID", &serde_json::json!("VALID")) && !agrees("VALID", &serde_json::json!("INVALID")));
        assert!(agrees("Yes", &serde_json::json!(true)) && !agrees("Yes", &serde_json::json!(false)));
    }
}
