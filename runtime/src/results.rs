//! Results for machines: `--format json|csv` of `run_harness`, `run`, `run_audit_harness` and
//! `check_submission`, and the summaries NVIDIA's harness keeps in a run's log root
//! (`perf_harness_summary.json`, `accuracy_summary.json`: `{"<system>-<workload>-<scenario>":
//! {"<benchmark>": "<result>"}}`), which NVIDIA's and MLCFlow's result scripts read.
//!
//! The JSON shape is documented as a JSON Schema in `docs/results.schema.json`; a test validates
//! the output against it. CSV has one header line and one row per run, audit or finding (RFC 4180 quoting).

use crate::check::official::OfficialVerdict;
use crate::check::{Finding, Report, Severity};
use crate::compliance::audit::AuditResult;
use crate::fsutil::write_atomic;
use crate::harness::report::{Outcome, RunStatus};
use crate::submission::layout::ResultKey;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::Path;

/// The schema's name and version, the first field of every JSON document.
pub const SCHEMA: &str = "mlperf-results/1";

/// How a command prints its results.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Table,
    Json,
    Csv,
}

impl Format {
    pub const ALL: [Format; 3] = [Format::Table, Format::Json, Format::Csv];

    pub const fn name(self) -> &'static str {
        match self {
            Format::Table => "table",
            Format::Json => "json",
            Format::Csv => "csv",
        }
    }
}

/// A named number: a metric or a target.
#[derive(Debug, Serialize)]
struct Measure<'a> {
    name: &'a str,
    value: f64,
}

/// One run.
#[derive(Debug, Serialize)]
struct RunRow<'a> {
    system: &'a str,
    benchmark: &'a str,
    scenario: &'a str,
    workload: String,
    mode: &'a str,
    status: RunStatus,
    metric: Option<Measure<'a>>,
    target: Option<Measure<'a>>,
    ttft_p99_ms: Option<f64>,
    tpot_p99_ms: Option<f64>,
    advice: Option<&'a str>,
    non_submittable: &'a [String],
    dir: String,
}

impl<'a> RunRow<'a> {
    fn of(o: &'a Outcome) -> RunRow<'a> {
        let measure = |m: &'a Option<(String, f64)>| m.as_ref().map(|(name, value)| Measure { name, value: *value });
        RunRow {
            system: &o.plan.system_name,
            benchmark: &o.plan.bench_dir,
            scenario: o.plan.scenario.name(),
            workload: o.plan.workload.section_name(),
            mode: o.plan.mode.name(),
            status: o.status,
            metric: measure(&o.metric),
            target: measure(&o.target),
            ttft_p99_ms: o.tokens.and_then(|t| t.ttft_p99_ms),
            tpot_p99_ms: o.tokens.and_then(|t| t.tpot_p99_ms),
            advice: o.advice.as_deref(),
            non_submittable: &o.plan.non_submittable,
            dir: o.dir.display().to_string(),
        }
    }
}

/// One audit.
#[derive(Debug, Serialize)]
struct AuditRow<'a> {
    system: &'a str,
    benchmark: &'a str,
    scenario: &'a str,
    test: &'a str,
    passed: bool,
    attempts: usize,
    summary: &'a str,
    non_submittable: &'a [String],
    dir: String,
}

impl<'a> AuditRow<'a> {
    fn of(r: &'a AuditResult) -> AuditRow<'a> {
        AuditRow {
            system: &r.system_name,
            benchmark: &r.bench_dir,
            scenario: r.scenario.name(),
            test: r.test.name(),
            passed: r.passed,
            attempts: r.attempts.len(),
            summary: &r.summary,
            non_submittable: &r.non_submittable,
            dir: r.out_dir.display().to_string(),
        }
    }
}

#[derive(Serialize)]
struct Document<T> {
    schema: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    runs: Option<Vec<T>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    audits: Option<Vec<T>>,
}

/// `run_harness` / `run` results as JSON.
pub fn runs_json(outcomes: &[Outcome]) -> String {
    let document = Document { schema: SCHEMA, runs: Some(outcomes.iter().map(RunRow::of).collect()), audits: None };
    serde_json::to_string_pretty(&document).expect("results serialize") + "\n"
}

/// `run_audit_harness` results as JSON.
pub fn audits_json(results: &[AuditResult]) -> String {
    let document = Document { schema: SCHEMA, runs: None, audits: Some(results.iter().map(AuditRow::of).collect()) };
    serde_json::to_string_pretty(&document).expect("results serialize") + "\n"
}

/// `run_harness` / `run` results as CSV.
pub fn runs_csv(outcomes: &[Outcome]) -> String {
    let header =
        ["system", "benchmark", "scenario", "workload", "mode", "status", "metric", "metric_value", "target", "target_value", "ttft_p99_ms", "tpot_p99_ms", "submittable", "dir"];
    let rows = outcomes.iter().map(|o| {
        let r = RunRow::of(o);
        let name = |m: &Option<Measure>| m.as_ref().map_or(String::new(), |m| m.name.to_string());
        let value = |m: &Option<Measure>| m.as_ref().map_or(String::new(), |m| m.value.to_string());
        let ms = |v: Option<f64>| v.map_or(String::new(), |v| v.to_string());
        vec![
            r.system.to_string(),
            r.benchmark.to_string(),
            r.scenario.to_string(),
            r.workload,
            r.mode.to_string(),
            r.status.name().to_string(),
            name(&r.metric),
            value(&r.metric),
            name(&r.target),
            value(&r.target),
            ms(r.ttft_p99_ms),
            ms(r.tpot_p99_ms),
            r.non_submittable.is_empty().to_string(),
            r.dir,
        ]
    });
    csv(&header, rows)
}

/// `run_audit_harness` results as CSV.
pub fn audits_csv(results: &[AuditResult]) -> String {
    let header = ["system", "benchmark", "scenario", "test", "passed", "attempts", "summary", "submittable", "dir"];
    let rows = results.iter().map(|r| {
        let r = AuditRow::of(r);
        vec![
            r.system.to_string(),
            r.benchmark.to_string(),
            r.scenario.to_string(),
            r.test.to_string(),
            r.passed.to_string(),
            r.attempts.to_string(),
            r.summary.to_string(),
            r.non_submittable.is_empty().to_string(),
            r.dir,
        ]
    });
    csv(&header, rows)
}

/// One finding of `check_submission`.
#[derive(Debug, Serialize)]
struct FindingRow<'a> {
    severity: &'static str,
    rule: &'static str,
    path: String,
    key: Option<&'a str>,
    message: &'a str,
    fix: &'a str,
    result: Option<String>,
}

impl<'a> FindingRow<'a> {
    fn of(f: &'a Finding) -> FindingRow<'a> {
        FindingRow {
            severity: match f.severity {
                Severity::Error => "error",
                Severity::Warning => "warning",
            },
            rule: f.rule.name(),
            path: f.path.display().to_string(),
            key: f.key.as_deref(),
            message: &f.message,
            fix: &f.fix,
            result: f.result.as_ref().map(result_name),
        }
    }
}

/// `system/benchmark/Scenario`.
fn result_name(key: &ResultKey) -> String {
    format!("{}/{}/{}", key.system_name, key.bench_dir, key.scenario.name())
}

/// The official checker's verdict, when it ran.
#[derive(Debug, Serialize)]
struct OfficialRow<'a> {
    accepted: bool,
    summary: &'a str,
    exit_code: Option<i32>,
    accepted_results: Vec<String>,
    rejected_results: Vec<String>,
    log: String,
}

#[derive(Debug, Serialize)]
struct CheckDocument<'a> {
    schema: &'static str,
    check: CheckRow<'a>,
}

#[derive(Debug, Serialize)]
struct CheckRow<'a> {
    round: &'a str,
    results: Vec<String>,
    passing: Vec<String>,
    errors: usize,
    warnings: usize,
    findings: Vec<FindingRow<'a>>,
    official: Option<OfficialRow<'a>>,
}

/// `check_submission` as JSON.
pub fn check_json(report: &Report, official: Option<&OfficialVerdict>) -> String {
    let check = CheckRow {
        round: &report.round,
        results: report.results.iter().map(result_name).collect(),
        passing: report.passing_results().into_iter().map(result_name).collect(),
        errors: report.error_count(),
        warnings: report.warning_count(),
        findings: report.findings.iter().map(FindingRow::of).collect(),
        official: official.map(|v| OfficialRow {
            accepted: v.accepted,
            summary: &v.summary,
            exit_code: v.exit_code,
            accepted_results: v.accepted_results.iter().map(result_name).collect(),
            rejected_results: v.rejected_results.iter().map(result_name).collect(),
            log: v.log_path.display().to_string(),
        }),
    };
    serde_json::to_string_pretty(&CheckDocument { schema: SCHEMA, check }).expect("results serialize") + "\n"
}

/// `check_submission`'s findings as CSV.
pub fn check_csv(report: &Report) -> String {
    let header = ["severity", "rule", "path", "key", "message", "fix", "result"];
    let rows = report.findings.iter().map(|f| {
        let r = FindingRow::of(f);
        vec![r.severity.to_string(), r.rule.to_string(), r.path, r.key.unwrap_or_default().to_string(), r.message.to_string(), r.fix.to_string(), r.result.unwrap_or_default()]
    });
    csv(&header, rows)
}

/// RFC 4180: fields with a comma, quote or line break quoted, quotes doubled. Written here, as
/// these few lines are all the tool writes as CSV.
fn csv(header: &[&str], rows: impl Iterator<Item = Vec<String>>) -> String {
    let field = |f: &str| if f.contains([',', '"', '\n', '\r']) { format!("\"{}\"", f.replace('"', "\"\"")) } else { f.to_string() };
    let mut out = header.join(",") + "\r\n";
    for row in rows {
        out += &row.iter().map(|f| field(f)).collect::<Vec<_>>().join(",");
        out += "\r\n";
    }
    out
}

/// Writes NVIDIA's summaries into the log root `root`, each run under
/// `<system>-<workload>-<scenario>` / `<benchmark>`: the performance result
/// (`result_samples_per_second: 1234.5, Result is VALID`) or the accuracy run's `accuracy.txt`.
/// Earlier entries of the same root are kept, as NVIDIA's harness appends.
pub fn write_summaries(root: &Path, outcomes: &[Outcome]) -> Result<(), String> {
    let read = |name: &str| -> BTreeMap<String, BTreeMap<String, String>> {
        std::fs::read_to_string(root.join(name)).ok().and_then(|t| serde_json::from_str(&t).ok()).unwrap_or_default()
    };
    let (mut performance, mut accuracy) = (read(PERF_SUMMARY), read(ACCURACY_SUMMARY));
    for o in outcomes {
        let config = format!("{}-{}-{}", o.plan.system_name, o.plan.workload.section_name(), o.plan.scenario.name());
        let benchmark = o.plan.bench_dir.clone();
        if o.status == RunStatus::Accuracy {
            let text = std::fs::read_to_string(o.dir.join("accuracy.txt")).map_or_else(|_| "no accuracy.txt".to_string(), |t| t.trim().to_string());
            accuracy.entry(config).or_default().insert(benchmark, text);
        } else {
            let metric = o.metric.as_ref().map_or(String::new(), |(name, value)| format!("{name}: {value}, "));
            performance.entry(config).or_default().insert(benchmark, format!("{metric}Result is {}", o.status.name()));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        let rows = vec![vec!["a,b".to_string(), "say \"hi\"".to_string(), "plain".to_string()]].into_iter();
        assert_eq!(csv(&["x", "y", "z"], rows), "x,y,z\r\n\"a,b\",\"say \"\"hi\"\"\",plain\r\n");
    }
}
