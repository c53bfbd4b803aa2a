//! The result of each run, read back from LoadGen's detail log, and the table printed at the end:
//! VALID / INVALID, the metric and its target, and what to change when a run is invalid (NVIDIA's
//! performance-tuning advice: raise or lower target QPS / expected latency).

use super::RunPlan;
use super::logs::DetailLog;
use std::fmt::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, Clone)]
pub struct Outcome {
    pub plan: RunPlan,
    pub dir: PathBuf,
    /// VALID, INVALID, ACCURACY (an accuracy run that completed), ABORTED or FAILED.
    pub status: String,
    pub metric: Option<(String, f64)>,
    pub target: Option<(String, f64)>,
    pub advice: Option<String>,
}

/// The scenario metric as the checker reads it: key, label, scale to the shown unit.
fn metric_key(scenario: &str, tokens: bool) -> (&'static str, &'static str, f64) {
    match (scenario, tokens) {
        ("Offline", false) => ("result_samples_per_second", "samples/s", 1.0),
        ("Offline", true) => ("result_tokens_per_second", "tokens/s", 1.0),
        ("Server" | "Interactive", false) => ("result_completed_samples_per_sec", "samples/s", 1.0),
        ("Server" | "Interactive", true) => ("result_completed_tokens_per_second", "tokens/s", 1.0),
        ("SingleStream", _) => ("early_stopping_latency_ss", "p90 latency ms", 1e-6),
        _ => ("early_stopping_latency_ms", "p99 latency ms", 1e-6),
    }
}

impl Outcome {
    /// Reads a finished run directory. `exit` is the child's exit code.
    pub fn read(dir: &Path, plan: &RunPlan, exit: Option<i32>) -> Outcome {
        let mut outcome = Outcome { plan: plan.clone(), dir: dir.to_path_buf(), status: "FAILED".into(), metric: None, target: None, advice: None };
        if dir.join("ABORTED").exists() {
            outcome.status = "ABORTED".into();
            outcome.advice = Some("interrupted; partial LoadGen logs are kept in the run directory".into());
            return outcome;
        }
        let log = match DetailLog::read(&dir.join("mlperf_log_detail.txt")) {
            Ok(log) => log,
            Err(e) => {
                outcome.advice = Some(format!("no LoadGen log ({e}); exit code {exit:?}, see the output above"));
                return outcome;
            }
        };
        if exit != Some(0) {
            outcome.advice = Some(format!("the run exited with {exit:?}; see the output above and {}", dir.join("mlperf_log_detail.txt").display()));
            return outcome;
        }
        if plan.mode == "AccuracyOnly" {
            outcome.status = if log.errors.is_empty() { "ACCURACY".into() } else { "FAILED".into() };
            let logged = log.u64("qsl_reported_total_count").unwrap_or(0);
            outcome.metric = Some(("samples".into(), logged as f64));
            if !log.errors.is_empty() {
                outcome.advice = Some(format!("LoadGen logged {} error(s), first: {} = {}", log.errors.len(), log.errors[0].0, log.errors[0].1));
            }
            return outcome;
        }
        let tokens = log.bool("requested_use_token_latencies").unwrap_or(false);
        let (key, label, scale) = metric_key(&plan.scenario, tokens);
        outcome.metric = log.f64(key).map(|v| (label.to_string(), v * scale));
        outcome.target = match plan.scenario.as_str() {
            "Offline" | "Server" | "Interactive" => log.f64("effective_target_qps").map(|v| ("target_qps".to_string(), v)),
            // LoadGen logs SingleStream/MultiStream expectations as a query rate.
            _ => log.f64("effective_target_qps").filter(|q| *q > 0.0).map(|q| ("expected latency ms".to_string(), 1000.0 / q)),
        };
        outcome.status = log.str("result_validity").unwrap_or("FAILED").to_string();
        if outcome.status != "VALID" {
            outcome.advice = Some(advice(&log, plan));
        } else if !log.errors.is_empty() {
            outcome.advice = Some(format!("VALID, but LoadGen logged {} error(s), first: {}", log.errors.len(), log.errors[0].0));
        }
        outcome
    }
}

/// What to change in the config to make an INVALID run valid.
fn advice(log: &DetailLog, plan: &RunPlan) -> String {
    let measured_qps = log.f64("result_samples_per_second").or_else(|| log.f64("result_completed_samples_per_sec"));
    let p = |k: &str| log.f64(k).map_or("?".to_string(), |ns| format!("{:.3} ms", ns * 1e-6));
    let met = |k: &str| log.bool(k).unwrap_or(true);
    let runtime = log.errors.iter().find(|(k, _)| k == "error_runtime").map(|(_, v)| v.to_string());
    match plan.scenario.as_str() {
        "Offline" if !met("result_min_duration_met") => format!(
            "the run ended before the minimum duration: LoadGen issues target_qps x min_duration samples; raise offline_expected_qps to about the measured {:.1} samples/s",
            measured_qps.unwrap_or(0.0)
        ),
        "Server" | "Interactive" if !met("result_perf_constraints_met") || !met("early_stopping_met") => {
            format!("latency constraint or early stopping missed (p99 {}): lower server_target_qps until the run is VALID", p("result_99.00_percentile_latency_ns"))
        }
        "SingleStream" | "MultiStream" if runtime.is_some() || !met("result_min_duration_met") => {
            format!("LoadGen ran out of generated queries: the expected latency is too high; lower it to about the measured p90 {}", p("result_90.00_percentile_latency_ns"))
        }
        "SingleStream" | "MultiStream" if !met("early_stopping_met") || !met("result_min_queries_met") => {
            "too few queries for early stopping: lower the expected latency (more queries per minimum duration) or raise min_query_count".to_string()
        }
        _ => format!("INVALID: {}", log.str("result_invalid_reason").unwrap_or("see mlperf_log_summary.txt")),
    }
}

/// The table printed after `run_harness`.
pub fn table(outcomes: &[Outcome]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<20} {:<13} {:<20} {:<15} {:<8} {:>16} {:<15} {:>14}", "benchmark", "scenario", "workload", "mode", "result", "metric", "", "target");
    for o in outcomes {
        let (metric_label, metric) = o.metric.as_ref().map_or((String::new(), String::new()), |(l, v)| (l.clone(), format!("{v:.3}")));
        let target = o.target.as_ref().map_or(String::new(), |(_, v)| format!("{v:.3}"));
        let _ = writeln!(
            out,
            "{:<20} {:<13} {:<20} {:<15} {:<8} {:>16} {:<15} {:>14}",
            o.plan.bench_dir, o.plan.scenario, o.plan.workload, o.plan.mode, o.status, metric, metric_label, target
        );
        if let Some(advice) = &o.advice {
            let _ = writeln!(out, "    -> {advice}");
        }
    }
    let flagged: Vec<&Outcome> = outcomes.iter().filter(|o| !o.plan.non_submittable.is_empty()).collect();
    if let Some(first) = flagged.first() {
        let _ = writeln!(out, "Not submittable ({} of {} runs): {}", flagged.len(), outcomes.len(), first.plan.non_submittable.join("; "));
    }
    if let Some(first) = outcomes.first() {
        let system_dir = first.dir.ancestors().find(|a| a.file_name().is_some_and(|n| *n == *first.plan.system_name));
        let root = system_dir.and_then(Path::parent).unwrap_or(&first.dir);
        let _ = writeln!(out, "Logs: {}", root.display());
    }
    out
}
