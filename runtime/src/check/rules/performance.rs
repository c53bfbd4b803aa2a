//! Rules on a performance `mlperf_log_detail.txt` (performance_check.py), applied to the result's
//! `performance/run_1` and to the TEST01/TEST04 performance logs alike.

use crate::check::common::{Bench, read_detail_log};
use crate::check::{Findings, Rule, Tree};
use crate::layout;
use crate::layout::{ResultKey, SUMMARY_LOG};
use crate::rundir::logs::DetailLog;
use mlperf_config::Scenario;
use std::path::Path;

/// LoadGen's error when a process calls `FromConfig` twice; the checker tolerates it in
/// compliance logs (audit runs load audit.config after user.conf).
const MULTIPLE_CONF_FILES: &str = "Multiple conf files are used";

/// Every performance rule on `detail` (a result's or a compliance test's performance log).
pub(crate) fn check(tree: &Tree, bench: &Bench, key: &ResultKey, detail: &Path, f: &mut Findings) {
    let Some(log) = read_detail_log(detail, f) else { return };
    super::summary::check(&detail.with_file_name(SUMMARY_LOG), &log, f);
    let compliance_log = detail.components().any(|c| c.as_os_str().to_str().is_some_and(|s| s.starts_with("TEST0")));
    let round = tree.round;
    let rerun = "rerun it without overrides: only target_qps / target_latency (and larger sample or query counts) may change in user.conf";

    let logged_scenario = log.str("effective_scenario").and_then(Scenario::parse);
    let measured = logged_scenario.filter(|&s| s == key.scenario.loadgen() || (bench.edge && layout::inferable(s, key.scenario)));
    let Some(measured) = measured else {
        f.key_error(
            Rule::Layout,
            detail,
            "effective_scenario",
            format!("the log is a {} run, but it sits in the {} directory", log.str("effective_scenario").unwrap_or("(missing)"), key.scenario.name()),
            if bench.edge {
                "stage the run of this scenario here (edge systems may infer only MultiStream and Offline from SingleStream, and Offline from MultiStream)"
            } else {
                "stage the run of this scenario here (only edge systems may infer results)"
            },
        );
        return;
    };
    // An inferred result's log is held to the rules of the scenario that ran, as the checker does.
    let key = &ResultKey { scenario: measured, ..key.clone() };

    for (field, expected) in
        [("effective_qsl_rng_seed", round.seeds.qsl), ("effective_sample_index_rng_seed", round.seeds.sample_index), ("effective_schedule_rng_seed", round.seeds.schedule)]
    {
        let found = log.u64(field);
        if found != Some(expected) {
            f.key_error(
                Rule::Seeds,
                detail,
                field,
                format!("is {}, round {} requires {expected}", found.map_or("missing".into(), |v| v.to_string()), round.id),
                format!("run with LoadGen {} and its mlperf.conf (seeds must never be set by hand; a second FromConfig in one process zeroes them)", round.loadgen.version),
            );
        }
    }

    let sample_count = log.u64("effective_performance_sample_count");
    if sample_count.is_none_or(|n| n < bench.round.performance_sample_count) {
        f.key_error(
            Rule::PerformanceSampleCount,
            detail,
            "effective_performance_sample_count",
            format!("is {}, {} requires at least {}", show(sample_count), bench.checker_model, bench.round.performance_sample_count),
            format!("remove a smaller performance_sample_count_override from user.conf; {rerun}"),
        );
    }

    // e2e-rag benchmarks are exempt from the duration rule in the checker's code.
    let min_duration = log.u64("effective_min_duration_ms");
    if !bench.checker_model.starts_with("e2e-rag") && min_duration.is_none_or(|d| d < round.min_duration_ms) {
        f.key_error(
            Rule::MinDuration,
            detail,
            "effective_min_duration_ms",
            format!("is {} ms, round {} requires at least {} ms", show(min_duration), round.id, round.min_duration_ms),
            format!("this was a shortened run (--test_run or a min_duration override); {rerun}"),
        );
    }

    if key.scenario == Scenario::Offline {
        check_offline_queries(tree, bench, &log, detail, f);
    } else if log.bool("early_stopping_met") != Some(true) {
        f.key_error(
            Rule::EarlyStopping,
            detail,
            "early_stopping_met",
            format!("LoadGen's early stopping was not satisfied ({})", log.str("early_stopping_result").unwrap_or("no early_stopping_result logged")),
            "run longer or with more queries (a lower target_latency / target_qps in user.conf gives LoadGen more queries)",
        );
    }

    check_latency(bench, key, &log, detail, f);
    check_token_latency(bench, key, &log, detail, f);

    if log.str("result_validity") != Some("VALID") {
        let reasons: Vec<&str> = [
            ("result_min_duration_met", "min duration"),
            ("result_min_queries_met", "min queries"),
            ("result_perf_constraints_met", "performance constraints"),
            ("early_stopping_met", "early stopping"),
        ]
        .into_iter()
        .filter(|(k, _)| log.bool(k) == Some(false))
        .map(|(_, what)| what)
        .collect();
        f.key_error(
            Rule::ResultValid,
            detail,
            "result_validity",
            format!(
                "the run is {} (not met: {}); the current checker lets some INVALID runs pass, reviewers do not",
                log.str("result_validity").unwrap_or("missing"),
                if reasons.is_empty() { "see the summary log".into() } else { reasons.join(", ") }
            ),
            "fix what mlperf_log_summary.txt recommends and rerun",
        );
    }

    let errors: Vec<String> = log
        .errors
        .iter()
        .filter(|(_, v)| !(compliance_log && v.as_str().is_some_and(|s| s.contains(MULTIPLE_CONF_FILES))))
        .map(|(k, v)| format!("{k}: {}", v.as_str().map_or_else(|| v.to_string(), String::from)))
        .collect();
    if !errors.is_empty() {
        f.error(
            Rule::PerformanceLogErrors,
            detail,
            format!("LoadGen logged {} error(s): {}", errors.len(), errors.join("; ")),
            "fix the cause and rerun; ship only error-free logs",
        );
    }
}

/// Offline: the checker's minimum query count and samples per query (closed).
fn check_offline_queries(tree: &Tree, bench: &Bench, log: &DetailLog, detail: &Path, f: &mut Findings) {
    if let Some(&min) = bench.round.min_queries.get(Scenario::Offline.name()) {
        let found = log.u64("effective_min_query_count");
        if found.is_none_or(|n| n < min) {
            f.key_error(
                Rule::MinQueries,
                detail,
                "effective_min_query_count",
                format!("is {}, {} Offline requires at least {min}", show(found), bench.checker_model),
                "remove the min_query_count override and rerun",
            );
        }
    }
    if let (Some(min), true) = (bench.round.offline_min_samples_per_query, tree.is_closed_like()) {
        let found = log.u64("effective_samples_per_query");
        if found.is_none_or(|n| n < min) {
            f.key_error(
                Rule::MinQueries,
                detail,
                "effective_samples_per_query",
                format!("is {}, closed {} Offline requires at least {min} samples in the query", show(found), bench.checker_model),
                "raise target_qps in user.conf (LoadGen issues target_qps × min_duration × 1.1 samples) and rerun",
            );
        }
    }
}

/// The round's latency constraint: the Server target latency, or Offline's p99 where one exists.
fn check_latency(bench: &Bench, key: &ResultKey, log: &DetailLog, detail: &Path, f: &mut Findings) {
    let Some(limit_ns) = bench.round.latency_constraint_ns(key.scenario) else { return };
    let field = if key.scenario == Scenario::Offline { "result_99.00_percentile_latency_ns" } else { "effective_target_latency_ns" };
    let found = log.u64(field);
    if found.is_none_or(|ns| ns > limit_ns) {
        f.key_error(
            Rule::Latency,
            detail,
            field,
            format!("is {} ns, {} {} allows at most {limit_ns} ns", show(found), bench.checker_model, key.scenario.name()),
            "set target_latency in user.conf at or below the constraint and rerun at a QPS that meets it",
        );
    }
}

/// LLMs: token latencies must be recorded, and Server/Interactive p99 TTFT and TPOT stay below the
/// round's limits. The limits are those of the directory's scenario (Interactive's are tighter;
/// the official checker compares an Interactive run with the Server limits).
fn check_token_latency(bench: &Bench, key: &ResultKey, log: &DetailLog, detail: &Path, f: &mut Findings) {
    if bench.round.use_token_latencies != Some(true) {
        return;
    }
    if log.bool("requested_use_token_latencies") != Some(true) {
        f.key_error(
            Rule::TokenLatency,
            detail,
            "requested_use_token_latencies",
            "is not true: LLM runs must record first-token latencies".into(),
            "run with use_token_latencies (the harness sets it for LLM benchmarks)",
        );
    }
    let Some(limits) = bench.round.llm_latency_limits.get(key.scenario.name()) else { return };
    for (field, limit_ms, what) in [
        ("result_first_token_99.00_percentile_latency_ns", limits.ttft_ms, "p99 time to first token"),
        ("result_time_per_output_token_99.00_percentile_ns", limits.tpot_ms, "p99 time per output token"),
    ] {
        let found = log.f64(field);
        let limit_ns = limit_ms * 1e6;
        if found.is_none_or(|ns| ns >= limit_ns) {
            f.key_error(
                Rule::TokenLatency,
                detail,
                field,
                format!("{what} is {} ns, {} {} requires below {limit_ns} ns", found.map_or("missing".into(), |v| v.to_string()), bench.checker_model, key.scenario.name()),
                "lower the server's target_qps (or batch) until the token latencies meet the limits, then rerun",
            );
        }
    }
}

fn show(value: Option<u64>) -> String {
    value.map_or_else(|| "missing".to_string(), |v| v.to_string())
}
