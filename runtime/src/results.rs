//! Results for machines: `--format json|csv` of `run_harness`, `run`, `run_audit_harness` and
//! `check_submission` (the log root's summaries are `rundir::summaries`).
//!
//! The JSON shape is documented as a JSON Schema in `docs/results.schema.json`; a test validates
//! the output against it. CSV has one header line and one row per run, audit or finding (RFC 4180 quoting).

use crate::check::official::{self, OfficialVerdict};
use crate::check::{Checked, Finding, Report, Severity};
use crate::compliance::audit::AuditResult;
use crate::error::Error;
use crate::layout::ResultKey;
use crate::rundir::report::{Outcome, RunStatus};
use crate::submittable::NonSubmittable;
use crate::{out, outln};
use mlperf_config::Scenario;
use serde::Serialize;
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

/// The power metric and efficiency of a power run, as the submission checker computes them.
#[derive(Debug, Serialize)]
struct PowerRow {
    name: &'static str,
    value: f64,
    efficiency_name: &'static str,
    efficiency: f64,
}

impl PowerRow {
    /// None for a run without a power session, or one whose session gives no metric.
    fn of(o: &Outcome) -> Option<PowerRow> {
        Self::read(&o.dir, o.plan.scenario, o.metric.as_ref().map_or(0.0, |(_, v)| *v))
    }

    fn read(run_dir: &Path, scenario: Scenario, performance: f64) -> Option<PowerRow> {
        use crate::power::session::{ModeRun, SESSION_IN_RUN_DIR, TESTING_DIR};
        let testing = ModeRun::read(&run_dir.join(SESSION_IN_RUN_DIR).join(TESTING_DIR)).ok()?;
        let metric = crate::power::metric::power_metric(&testing, scenario, performance).ok()?;
        let ((value, name), (efficiency, efficiency_name)) = (metric.value(), metric.efficiency());
        Some(PowerRow { name, value, efficiency_name, efficiency })
    }
}

/// A power run's metric as one line of the table and the summaries (None without a session):
/// `power: 98.203 Watts, 0.4073 samples/s/W`.
pub fn power_note(o: &Outcome) -> Option<String> {
    PowerRow::of(o).map(|p| format!("power: {:.3} {}, {:.4} {}", p.value, p.name, p.efficiency, p.efficiency_name))
}

/// `run_harness`'s result table, each power run's metric under its row.
pub fn runs_table(outcomes: &[Outcome]) -> String {
    crate::rundir::report::table_with(outcomes, &power_note)
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
    /// A power run's metric (the power-dev session kept in its run directory).
    power: Option<PowerRow>,
    advice: Option<&'a str>,
    #[serde(serialize_with = "crate::submittable::as_text")]
    non_submittable: &'a [NonSubmittable],
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
            power: PowerRow::of(o),
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
    #[serde(serialize_with = "crate::submittable::as_text")]
    non_submittable: &'a [NonSubmittable],
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
    let header = [
        "system",
        "benchmark",
        "scenario",
        "workload",
        "mode",
        "status",
        "metric",
        "metric_value",
        "target",
        "target_value",
        "ttft_p99_ms",
        "tpot_p99_ms",
        "submittable",
        "dir",
        "power_metric",
        "power_value",
        "power_efficiency",
        "power_efficiency_value",
    ];
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
            r.power.as_ref().map_or(String::new(), |p| p.name.to_string()),
            r.power.as_ref().map_or(String::new(), |p| p.value.to_string()),
            r.power.as_ref().map_or(String::new(), |p| p.efficiency_name.to_string()),
            r.power.as_ref().map_or(String::new(), |p| p.efficiency.to_string()),
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

/// Prints a checked tree: the pre-flight's findings and summary and the official checker's
/// verdict and any disagreement as a table, or both as JSON or CSV. [`Error::CheckFailed`] when
/// either found an error.
pub fn print_check(checked: &Checked, input: &Path, checker_version: &str, format: Format) -> Result<(), Error> {
    let report = &checked.report;
    match format {
        Format::Table => out!("{}", report.render()),
        Format::Json => out!("{}", check_json(report, checked.official.as_ref())),
        Format::Csv => out!("{}", check_csv(report)),
    }
    if let Some(verdict) = checked.official.as_ref().filter(|_| format == Format::Table) {
        outln!(
            "official checker ({checker_version}): {} (exit {}); {} result(s) accepted, {} rejected; log: {}",
            verdict.summary,
            verdict.exit_code.map_or("killed".to_string(), |c| c.to_string()),
            verdict.accepted_results.len(),
            verdict.rejected_results.len(),
            verdict.log_path.display()
        );
        for line in official::disagreements(report, verdict) {
            outln!("disagreement: {line}");
        }
    }
    if checked.passed() {
        return Ok(());
    }
    let see_above = if checked.official.is_some() && format != Format::Table { "" } else { " (see above)" };
    Err(Error::CheckFailed(format!("{} has errors{see_above}", input.display())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_quotes_what_needs_it() {
        let rows = vec![vec!["a,b".to_string(), "say \"hi\"".to_string(), "plain".to_string()]].into_iter();
        assert_eq!(csv(&["x", "y", "z"], rows), "x,y,z\r\n\"a,b\",\"say \"\"hi\"\"\",plain\r\n");
    }

    #[test]
    fn a_power_run_shows_the_checkers_power_metric_and_a_plain_run_none() {
        let run_dir = crate::power::fixture::tempdir("results");
        assert!(PowerRow::read(&run_dir, Scenario::Offline, 40.0).is_none());
        crate::power::fixture::write_session(&run_dir.join(crate::power::session::SESSION_IN_RUN_DIR), &crate::power::fixture::Spec::default());
        let row = PowerRow::read(&run_dir, Scenario::Offline, 40.0).unwrap();
        // The submission checker's figures for this session (tests/fixtures/power/metric-provenance.md).
        assert_eq!((row.name, row.efficiency_name), ("Watts", "samples/s/W"));
        assert!((row.value - 98.20338983050847).abs() < 1e-9 && (row.efficiency - 0.40731791508457027).abs() < 1e-12, "{row:?}");
    }

    /// The table and NVIDIA's summaries of a power run (generated, and the one recorded through
    /// power-dev) carry its power metric under its row and before its verdict; a plain run none.
    #[test]
    fn the_table_and_the_summaries_show_a_power_runs_metric() {
        use crate::power::fixture::{Spec, copy_recorded, run_dir_of, tempdir, write_session};
        use crate::power::session::SESSION_IN_RUN_DIR;
        let round: mlperf_config::Round = toml::from_str(&std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../rounds/v6.1.toml")).unwrap()).unwrap();
        let generated = |to: &Path| drop(write_session(to, &Spec::default()));
        type Writer<'w> = &'w dyn Fn(&Path);
        let cases: [(&str, Writer); 2] = [("generated", &generated), ("recorded", &copy_recorded)];
        for (name, write) in cases {
            let logs = tempdir(&format!("results-table-{name}"));
            let session = tempdir(&format!("results-table-{name}-session"));
            write(&session);
            let run_dir = run_dir_of(&logs, &session, Vec::new());
            let read = || {
                let plan = crate::rundir::plan::read_plan(&run_dir).unwrap();
                Outcome::read(&run_dir, &plan, crate::signals::ChildExit::Code(0), &round)
            };
            let plain = read();
            assert_eq!(power_note(&plain), None, "{name}");
            assert!(!runs_table(&[plain]).contains("\n    power: "), "{name}");
            write(&run_dir.join(SESSION_IN_RUN_DIR));
            let measured = read();
            let (_, rate) = measured.metric.clone().unwrap();
            let watts = crate::power::session::Session::read(&run_dir.join(SESSION_IN_RUN_DIR)).unwrap().testing.average_watts().unwrap();
            let note = format!("power: {watts:.3} Watts, {:.4} samples/s/W", rate / watts);
            assert_eq!(power_note(&measured).as_deref(), Some(note.as_str()), "{name}");
            let table = runs_table(&[measured]);
            let lines: Vec<&str> = table.lines().collect();
            assert!(lines[1].starts_with("resnet50 ") && lines[2] == format!("    {note}"), "{table}");
            let root = logs.join("2026.11.28-19.00.00");
            crate::rundir::summaries::write_summaries_with(&root, &[read()], &power_note).unwrap();
            let summary = std::fs::read_to_string(root.join(crate::rundir::summaries::PERF_SUMMARY)).unwrap();
            assert!(summary.contains(&format!("{note}, Result is VALID")), "{summary}");
        }
        // The generated session's figures are the submission checker's (the test above).
        let generated_note = "power: 98.203 Watts, 0.4073 samples/s/W";
        let logs = tempdir("results-table-figures");
        let session = write_session(&tempdir("results-table-figures-session"), &Spec::default());
        let run_dir = run_dir_of(&logs, &session, Vec::new());
        write_session(&run_dir.join(SESSION_IN_RUN_DIR), &Spec::default());
        let plan = crate::rundir::plan::read_plan(&run_dir).unwrap();
        assert_eq!(power_note(&Outcome::read(&run_dir, &plan, crate::signals::ChildExit::Code(0), &round)).as_deref(), Some(generated_note));
    }
}
