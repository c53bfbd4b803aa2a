//! The result of each run, read back from LoadGen's detail log, and the table printed at the end:
//! VALID / INVALID, the metric and its target, and what to change when a run is invalid (NVIDIA's
//! performance-tuning advice: raise or lower target QPS / expected latency).

use super::logs::{DetailLog, Validity};
use super::plan::{RunMode, RunPlan};
use super::serving::{EndpointRecord, read_record};
use super::{ACCURACY_LOG, ACCURACY_NOTE, ACCURACY_TXT, DETAIL_LOG, RUN_LOG};
use crate::accuracy::target::{self, Miss};
use crate::error::{Error, exit};
use crate::signals::{ChildExit, Signal};
use mlperf_config::{Round, Scenario};
use serde::Serialize;
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// How a run ended, as the result table, the audits and the exit status see it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum RunStatus {
    /// LoadGen's `result_validity` is VALID.
    #[serde(rename = "VALID")]
    Valid,
    /// LoadGen's `result_validity` is INVALID.
    #[serde(rename = "INVALID")]
    Invalid,
    /// An accuracy run that completed without LoadGen errors (and, when scored, meets the targets).
    #[serde(rename = "ACCURACY")]
    Accuracy,
    /// An accuracy run whose `accuracy.txt` misses the round's targets.
    #[serde(rename = "BELOW_TARGET")]
    BelowTarget,
    /// Stopped by a signal (Ctrl-C, SIGTERM, SIGHUP); partial logs kept.
    #[serde(rename = "ABORTED")]
    Aborted,
    /// The run failed (an error, a crash, or logs without a verdict).
    #[serde(rename = "FAILED")]
    Failed,
}

impl RunStatus {
    pub const fn name(self) -> &'static str {
        match self {
            RunStatus::Valid => "VALID",
            RunStatus::Invalid => "INVALID",
            RunStatus::Accuracy => "ACCURACY",
            RunStatus::BelowTarget => "BELOW_TARGET",
            RunStatus::Aborted => "ABORTED",
            RunStatus::Failed => "FAILED",
        }
    }
}

impl std::fmt::Display for RunStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

/// LLM runs: p99 time to first token and time per output token against the round's limits
/// (Server and Interactive have limits; LoadGen logs no first-token latencies for Offline).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TokenLatencies {
    pub ttft_p99_ms: Option<f64>,
    pub ttft_limit_ms: Option<f64>,
    pub tpot_p99_ms: Option<f64>,
    pub tpot_limit_ms: Option<f64>,
}

impl TokenLatencies {
    /// None when LoadGen logged neither (Offline).
    fn read(log: &DetailLog, scenario: Scenario) -> Option<TokenLatencies> {
        let ms = |key: &str| log.f64(key).map(|ns| ns * 1e-6);
        let limit = |key: &str| if matches!(scenario, Scenario::Server | Scenario::Interactive) { ms(key) } else { None };
        let t = TokenLatencies {
            ttft_p99_ms: ms("result_first_token_99.00_percentile_latency_ns"),
            ttft_limit_ms: limit("requested_server_ttft_latency"),
            tpot_p99_ms: ms("result_time_per_output_token_99.00_percentile_ns"),
            tpot_limit_ms: limit("requested_server_tpot_latency"),
        };
        (t.ttft_p99_ms.is_some() || t.tpot_p99_ms.is_some()).then_some(t)
    }

    fn over(value: Option<f64>, limit: Option<f64>) -> bool {
        matches!((value, limit), (Some(v), Some(l)) if v > l)
    }

    /// `TTFT p99 22.3 ms (limit 2000) · TPOT p99 5.01 ms (limit 200)`.
    fn render(&self) -> String {
        let part = |name: &str, v: Option<f64>, l: Option<f64>| {
            let value = v.map_or("-".to_string(), |v| format!("{v:.2} ms"));
            let limit = l.map_or(String::new(), |l| format!(" (limit {l:.0}{})", if Self::over(v, l.into()) { ", OVER" } else { "" }));
            format!("{name} p99 {value}{limit}")
        };
        format!("{} · {}", part("TTFT", self.ttft_p99_ms, self.ttft_limit_ms), part("TPOT", self.tpot_p99_ms, self.tpot_limit_ms))
    }
}

#[derive(Debug, Clone)]
pub struct Outcome {
    pub plan: RunPlan,
    pub dir: PathBuf,
    pub status: RunStatus,
    pub metric: Option<(String, f64)>,
    pub target: Option<(String, f64)>,
    pub advice: Option<String>,
    pub tokens: Option<TokenLatencies>,
    /// Serving runs: each endpoint's record (`serving.json`).
    pub endpoints: Vec<EndpointRecord>,
    /// Accuracy runs: the targets their `accuracy.txt` misses (status [`RunStatus::BelowTarget`]).
    pub misses: Vec<Miss>,
    /// How the run's child ended: [`exit::DATA`] or [`exit::CONFIG`] when it stopped before
    /// LoadGen started.
    pub exit: ChildExit,
}

/// The scenario metric as the checker reads it: key, label, scale to the shown unit.
fn metric_key(scenario: Scenario, tokens: bool) -> (&'static str, &'static str, f64) {
    match (scenario, tokens) {
        (Scenario::Offline, false) => ("result_samples_per_second", "samples/s", 1.0),
        (Scenario::Offline, true) => ("result_tokens_per_second", "tokens/s", 1.0),
        (Scenario::Server | Scenario::Interactive, false) => ("result_completed_samples_per_sec", "samples/s", 1.0),
        (Scenario::Server | Scenario::Interactive, true) => ("result_completed_tokens_per_second", "tokens/s", 1.0),
        (Scenario::SingleStream, _) => ("early_stopping_latency_ss", "p90 latency ms", 1e-6),
        (Scenario::MultiStream, _) => ("early_stopping_latency_ms", "p99 latency ms", 1e-6),
    }
}

impl Outcome {
    /// Reads a finished run directory of `round`. `exit` is how the child ended.
    pub fn read(dir: &Path, plan: &RunPlan, exit: ChildExit, round: &Round) -> Outcome {
        let mut outcome = Outcome {
            plan: plan.clone(),
            dir: dir.to_path_buf(),
            status: RunStatus::Failed,
            metric: None,
            target: None,
            advice: None,
            tokens: None,
            endpoints: read_record(dir).map(|r| r.endpoints).unwrap_or_default(),
            misses: Vec::new(),
            exit,
        };
        // The run directory's record, which the child extends with what it found while opening
        // the workload (a dataset file that is not the published one).
        if let Ok(recorded) = super::plan::read_plan(dir) {
            outcome.plan.non_submittable = recorded.non_submittable;
        }
        if let Some(signal) = super::aborted(dir) {
            outcome.status = RunStatus::Aborted;
            outcome.advice = Some(format!("stopped by {signal}; partial LoadGen logs are kept in the run directory"));
            return outcome;
        }
        if let Some(why) = super::failed(dir) {
            outcome.advice = Some(format!("{why} (see {})", dir.join(super::FAILED).display()));
            return outcome;
        }
        let log = match DetailLog::read(&dir.join(DETAIL_LOG)) {
            Ok(log) => log,
            Err(e) => {
                outcome.advice = Some(match exit.code().and_then(did_not_start) {
                    Some((why, _)) => format!("{why}: see the error above and {}", dir.join(RUN_LOG).display()),
                    None => format!("no LoadGen log ({e}); the run failed: {exit}, see the output above"),
                });
                return outcome;
            }
        };
        if exit != ChildExit::Code(0) {
            outcome.advice = Some(format!("the run failed: {exit}; see the output above and {}", dir.join(DETAIL_LOG).display()));
            return outcome;
        }
        if plan.mode == RunMode::AccuracyOnly {
            outcome.status = if log.errors.is_empty() { RunStatus::Accuracy } else { RunStatus::Failed };
            let logged = log.u64("qsl_reported_total_count").unwrap_or(0);
            outcome.metric = Some(("samples".into(), logged as f64));
            if !log.errors.is_empty() {
                outcome.advice = Some(format!("LoadGen logged {} error(s), first: {} = {}", log.errors.len(), log.errors[0].0, log.errors[0].1));
            } else {
                outcome.misses = accuracy_misses(dir, plan, round);
                if let Some(first) = outcome.misses.first() {
                    outcome.status = RunStatus::BelowTarget;
                    let all: Vec<String> = outcome.misses.iter().map(ToString::to_string).collect();
                    outcome.advice = Some(format!("{}: {}", all.join("; "), first.advice()));
                }
            }
            return outcome;
        }
        let tokens = log.bool("requested_use_token_latencies").unwrap_or(false);
        if tokens {
            outcome.tokens = TokenLatencies::read(&log, plan.scenario);
        }
        let (key, label, scale) = metric_key(plan.scenario, tokens);
        outcome.metric = log.f64(key).map(|v| (label.to_string(), v * scale));
        outcome.target = match plan.scenario {
            Scenario::Offline | Scenario::Server | Scenario::Interactive => log.f64("effective_target_qps").map(|v| ("target_qps".to_string(), v)),
            // LoadGen logs SingleStream/MultiStream expectations as a query rate.
            Scenario::SingleStream | Scenario::MultiStream => log.f64("effective_target_qps").filter(|q| *q > 0.0).map(|q| ("expected latency ms".to_string(), 1000.0 / q)),
        };
        outcome.status = match log.validity() {
            Some(Validity::Valid) => RunStatus::Valid,
            Some(Validity::Invalid) => RunStatus::Invalid,
            None => RunStatus::Failed,
        };
        if outcome.status != RunStatus::Valid {
            outcome.advice = Some(advice(&log, plan));
        } else if !log.errors.is_empty() {
            outcome.advice = Some(format!("VALID, but LoadGen logged {} error(s), first: {}", log.errors.len(), log.errors[0].0));
        }
        outcome
    }
}

/// The round's targets the run's `accuracy.txt` misses; none for a run without one (not scored)
/// or with a note saying its score is not the benchmark's (synthetic workloads).
fn accuracy_misses(dir: &Path, plan: &RunPlan, round: &Round) -> Vec<Miss> {
    let Ok(text) = std::fs::read_to_string(dir.join(ACCURACY_TXT)) else { return Vec::new() };
    if dir.join(ACCURACY_NOTE).exists() {
        return Vec::new();
    }
    let Some(bench) = round.benchmark(&plan.benchmark) else { return Vec::new() };
    target::misses(&text, &target::requirements(bench, &plan.bench_dir), round).into_iter().filter(|m| !m.is_round_data()).collect()
}

/// Why a run cannot stand for its mode's result in a submission.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Unusable {
    /// Not VALID (performance), or not a complete accuracy run: the table's status and advice.
    Status {
        status: RunStatus,
        advice: Option<String>,
    },
    NoAccuracyLog,
    /// An accuracy run without `accuracy.txt`: scoring failed or never ran (test backends are
    /// never scored).
    NotScored,
    BelowTarget(Vec<Miss>),
}

impl std::fmt::Display for Unusable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unusable::Status { status, advice: Some(advice) } => write!(f, "{status}: {advice}"),
            Unusable::Status { status, advice: None } => write!(f, "{status}"),
            Unusable::NoAccuracyLog => write!(f, "no {ACCURACY_LOG}"),
            Unusable::NotScored => write!(f, "not scored (no {ACCURACY_TXT}; runs with the test backends are never scored: run the configured engine)"),
            Unusable::BelowTarget(misses) => {
                let all: Vec<String> = misses.iter().map(ToString::to_string).collect();
                write!(f, "accuracy below the round's target: {}", all.join("; "))
            }
        }
    }
}

impl Outcome {
    /// Why this run cannot be staged (None: it can): a performance run must be VALID; an accuracy
    /// run complete, with its log, scored and meeting the round's targets.
    pub fn unusable(&self) -> Option<Unusable> {
        match (self.plan.mode, self.status) {
            (RunMode::PerformanceOnly, RunStatus::Valid) => None,
            (RunMode::AccuracyOnly, RunStatus::Accuracy | RunStatus::BelowTarget) if !self.dir.join(ACCURACY_LOG).exists() => Some(Unusable::NoAccuracyLog),
            (RunMode::AccuracyOnly, RunStatus::Accuracy) if !self.dir.join(ACCURACY_TXT).exists() => Some(Unusable::NotScored),
            (RunMode::AccuracyOnly, RunStatus::Accuracy) => None,
            (RunMode::AccuracyOnly, RunStatus::BelowTarget) => Some(Unusable::BelowTarget(self.misses.clone())),
            (_, status) => Some(Unusable::Status { status, advice: self.advice.clone() }),
        }
    }
}

/// The error kind a message becomes (`Error::Data`, `Error::Config`).
type ErrorKind = fn(String) -> Error;

/// Why a run's child stopped before LoadGen started, from its exit status, and the error kind
/// that reports it.
fn did_not_start(exit: i32) -> Option<(&'static str, ErrorKind)> {
    match exit {
        exit::DATA => Some(("its data is missing or unusable", Error::Data)),
        exit::CONFIG => Some(("its config cannot run here", Error::Config)),
        _ => None,
    }
}

/// The verdict over a command's runs, as its exit status reports it: stopped by a signal, then
/// FAILED (when every failed run stopped for the same reason before it started, for want of data
/// or a config that cannot run, that reason's kind), then INVALID.
pub fn verdict(outcomes: &[Outcome], stopped_by: Option<Signal>) -> Result<(), Error> {
    let total = outcomes.len();
    if let Some(signal) = stopped_by {
        return Err(Error::Stopped(signal));
    }
    let failed: Vec<&Outcome> = outcomes.iter().filter(|o| matches!(o.status, RunStatus::Failed | RunStatus::Aborted)).collect();
    if let Some(first) = failed.first() {
        if let Some(code) = first.exit.code()
            && let Some((why, kind)) = did_not_start(code)
            && failed.iter().all(|o| o.exit == first.exit)
        {
            let logs: Vec<String> = failed.iter().map(|o| o.dir.join(RUN_LOG).display().to_string()).collect();
            return Err(kind(format!("{} of {total} runs did not start, {why}; the error above and {} say why", failed.len(), logs.join(", "))));
        }
        return Err(Error::RunsFailed { failed: failed.len(), total });
    }
    match outcomes.iter().filter(|o| o.status == RunStatus::Invalid).count() {
        0 => {}
        invalid => return Err(Error::RunsInvalid { invalid, total }),
    }
    match outcomes.iter().filter(|o| o.status == RunStatus::BelowTarget).count() {
        0 => Ok(()),
        below => Err(Error::BelowTarget { below, total }),
    }
}

/// What to change in the config to make an INVALID run valid.
fn advice(log: &DetailLog, plan: &RunPlan) -> String {
    let measured_qps = log.f64("result_samples_per_second").or_else(|| log.f64("result_completed_samples_per_sec"));
    let p = |k: &str| log.f64(k).map_or("?".to_string(), |ns| format!("{:.3} ms", ns * 1e-6));
    let met = |k: &str| log.bool(k).unwrap_or(true);
    let runtime = log.errors.iter().find(|(k, _)| k == "error_runtime").map(|(_, v)| v.to_string());
    match plan.scenario {
        Scenario::Offline if !met("result_min_duration_met") => format!(
            "the run ended before the minimum duration: LoadGen issues target_qps x min_duration samples; raise offline_expected_qps to about the measured {:.1} samples/s",
            measured_qps.unwrap_or(0.0)
        ),
        Scenario::Server | Scenario::Interactive
            if plan.token_latencies
                && !met("result_perf_constraints_met")
                && let Some(t) = TokenLatencies::read(log, plan.scenario) =>
        {
            let mut parts = Vec::new();
            if TokenLatencies::over(t.ttft_p99_ms, t.ttft_limit_ms) {
                parts.push("TTFT over its limit: prompts wait for prefill; lower server_target_qps, or add serving instances");
            }
            if TokenLatencies::over(t.tpot_p99_ms, t.tpot_limit_ms) {
                parts.push("TPOT over its limit: decode steps slow down with the batch; lower server_target_qps or the engine's maximum batch size");
            }
            if parts.is_empty() {
                parts.push("token latency constraints missed: lower server_target_qps until the run is VALID");
            }
            format!("{} ({})", parts.join("; "), t.render())
        }
        Scenario::Server | Scenario::Interactive if met("result_perf_constraints_met") && !met("early_stopping_met") => {
            "early stopping not satisfied: too few queries at this rate to bound the percentiles; run longer (min_duration), mlperf_log_summary.txt says how many more".to_string()
        }
        Scenario::Server | Scenario::Interactive if !met("result_perf_constraints_met") || !met("early_stopping_met") => {
            format!("latency constraint or early stopping missed (p99 {}): lower server_target_qps until the run is VALID", p("result_99.00_percentile_latency_ns"))
        }
        Scenario::SingleStream | Scenario::MultiStream if runtime.is_some() || !met("result_min_duration_met") => {
            format!("LoadGen ran out of generated queries: the expected latency is too high; lower it to about the measured p90 {}", p("result_90.00_percentile_latency_ns"))
        }
        Scenario::SingleStream | Scenario::MultiStream if !met("early_stopping_met") || !met("result_min_queries_met") => {
            "too few queries for early stopping: lower the expected latency (more queries per minimum duration) or raise min_query_count".to_string()
        }
        _ => format!("INVALID: {}", log.str("result_invalid_reason").unwrap_or("see mlperf_log_summary.txt")),
    }
}

/// The table printed after `run_harness`.
pub fn table(outcomes: &[Outcome]) -> String {
    table_with(outcomes, &|_| None)
}

/// The table with a line of `note` under each row that has one (a power run's metric: the
/// workflows read it, this layer cannot).
pub fn table_with(outcomes: &[Outcome], note: &dyn Fn(&Outcome) -> Option<String>) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "{:<20} {:<13} {:<20} {:<15} {:<8} {:>16} {:<15} {:>14}", "benchmark", "scenario", "workload", "mode", "result", "metric", "", "target");
    for o in outcomes {
        let (metric_label, metric) = o.metric.as_ref().map_or((String::new(), String::new()), |(l, v)| (l.clone(), format!("{v:.3}")));
        let target = o.target.as_ref().map_or(String::new(), |(_, v)| format!("{v:.3}"));
        let _ = writeln!(
            out,
            "{:<20} {:<13} {:<20} {:<15} {:<8} {:>16} {:<15} {:>14}",
            o.plan.bench_dir,
            o.plan.scenario.name(),
            o.plan.workload.section_name(),
            o.plan.mode.name(),
            o.status.name(),
            metric,
            metric_label,
            target
        );
        if let Some(tokens) = &o.tokens {
            let _ = writeln!(out, "    {}", tokens.render());
        }
        if let Some(line) = note(o) {
            let _ = writeln!(out, "    {line}");
        }
        for e in &o.endpoints {
            let ms = |v: Option<f64>| v.map_or("-".to_string(), |v| format!("{v:.1}"));
            let _ = write!(
                out,
                "    endpoint {}: {} sent, {} completed, {} failed, {} resent; TTFT p50/p99 {}/{} ms, TPOT p50/p99 {}/{} ms",
                e.url,
                e.sent,
                e.completed,
                e.failed,
                e.resent,
                ms(e.ttft_p50_ms),
                ms(e.ttft_p99_ms),
                ms(e.tpot_p50_ms),
                ms(e.tpot_p99_ms)
            );
            match (&e.down, &e.first_error) {
                (Some(why), _) => writeln!(out, "; DOWN: {why}"),
                (None, Some(first)) => writeln!(out, "; first error: {first}"),
                (None, None) => writeln!(out),
            }
            .expect("writing to a String");
        }
        if let Some(advice) = &o.advice {
            let _ = writeln!(out, "    -> {advice}");
        }
    }
    let flagged: Vec<&Outcome> = outcomes.iter().filter(|o| !o.plan.non_submittable.is_empty()).collect();
    if let Some(first) = flagged.first() {
        let _ = writeln!(
            out,
            "Not submittable ({} of {} runs): {}",
            flagged.len(),
            outcomes.len(),
            first.plan.non_submittable.iter().map(ToString::to_string).collect::<Vec<_>>().join("; ")
        );
    }
    if let Some(first) = outcomes.first() {
        let system_dir = first.dir.ancestors().find(|a| a.file_name().is_some_and(|n| *n == *first.plan.system_name));
        let root = system_dir.and_then(Path::parent).unwrap_or(&first.dir);
        let _ = writeln!(out, "Logs: {}", root.display());
    }
    out
}
