//! Minimal LoadGen-format logs for the verification tests: `mlperf_log_accuracy.json` exactly as
//! `logging.cc` writes it, `:::MLLOG` detail lines, and summary files with LoadGen's labels.

use std::path::{Path, PathBuf};

/// A fresh directory for one test.
pub fn dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("mlperf-compliance-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// `[\n` entries joined by `,\n` `\n]\n`, with uppercase hex data.
pub fn accuracy_log(entries: &[(usize, Vec<u8>)]) -> String {
    if entries.is_empty() {
        return "[\n]\n".into();
    }
    let lines: Vec<String> = entries.iter().enumerate().map(|(seq, (qsl, data))| format!("{{ \"seq_id\" : {seq}, \"qsl_idx\" : {qsl}, \"data\" : \"{}\" }}", hex(data))).collect();
    format!("[\n{}\n]\n", lines.join(",\n"))
}

pub fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02X}")).collect()
}

/// One int32 label per entry, as our engines log classes.
pub fn labels(entries: &[(usize, i32)]) -> Vec<(usize, Vec<u8>)> {
    entries.iter().map(|(q, l)| (*q, l.to_le_bytes().to_vec())).collect()
}

pub fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path
}

/// A detail log holding `values` (JSON literals) in LoadGen's line format.
pub fn detail_log(values: &[(&str, &str)]) -> String {
    values
        .iter()
        .map(|(key, value)| {
            let is_error = key.starts_with("error_");
            format!(
                ":::MLLOG {{\"key\": \"{key}\", \"value\": {value}, \"time_ms\": 1.5, \"namespace\": \"mlperf::logging\", \"event_type\": \"POINT_IN_TIME\", \"metadata\": {{\"is_error\": {is_error}, \"is_warning\": false, \"file\": \"loadgen.cc\", \"line_no\": 1, \"pid\": 1, \"tid\": 1}}}}\n"
            )
        })
        .collect()
}

/// The detail log of a finished performance run of `scenario` with its metric.
pub fn performance_detail(scenario: &str, validity: &str, metric: &str) -> String {
    let key = match scenario {
        "Offline" => "result_samples_per_second",
        "Server" => "result_completed_samples_per_sec",
        "SingleStream" => "early_stopping_latency_ss",
        _ => "early_stopping_latency_ms",
    };
    let scenario_json = format!("\"{scenario}\"");
    let validity_json = format!("\"{validity}\"");
    detail_log(&[
        ("loadgen_version", "\"6.0.17 @ d6147c7eb7\""),
        ("effective_scenario", &scenario_json),
        ("effective_target_latency_ns", "15000000"),
        ("result_validity", &validity_json),
        (key, metric),
        ("num_errors", "0"),
    ])
}

/// A summary file as `results.cc` lays it out, for the scenario's metric line and validity.
pub fn summary(scenario: &str, validity: &str, metric_ns_or_rate: &str, errors: usize) -> String {
    let metric = match scenario {
        "Offline" => format!("Samples per second: {metric_ns_or_rate}\n"),
        "Server" => format!("Completed samples per second    : {metric_ns_or_rate}\n"),
        "SingleStream" => format!("90.0th percentile latency (ns) : {metric_ns_or_rate}\n"),
        _ => format!("99.0th percentile latency (ns) : {metric_ns_or_rate}\n"),
    };
    let early = match scenario {
        "SingleStream" => format!(
            "Early Stopping Result:\n * Processed at least 64 queries (1000).\n * Would discard 80 highest latency queries.\n * Early stopping 90.0th percentile estimate: {metric_ns_or_rate}\n * Early stopping 99.0th percentile estimate: 9999999\n\n"
        ),
        "MultiStream" => format!(
            "Early Stopping Result:\n * Processed at least 662 queries (1000).\n * Would discard 3 highest latency queries.\n * Early stopping 99.0th percentile estimate: {metric_ns_or_rate}\n\n"
        ),
        _ => String::new(),
    };
    let footer = if errors == 0 { "No errors encountered during test.\n".to_string() } else { format!("{errors} ERROR(s) encountered. See detailed log.\n") };
    format!(
        "================================================\nMLPerf Results Summary\n================================================\nSUT name : mlperf null SUT\nScenario : {scenario}\nMode     : PerformanceOnly\n{metric}Result is : {validity}\n  Min duration satisfied : Yes\n  Min queries satisfied : Yes\n  Early stopping satisfied: Yes\n{early}================================================\nAdditional Stats\n================================================\nMin latency (ns)                : 1000\n\n================================================\nTest Parameters Used\n================================================\nsamples_per_query : 1\ntarget_latency (ns): 15000000\n\nNo warnings encountered during test.\n\n{footer}"
    )
}
