//! `check_submission`: a pre-flight of the official MLPerf Inference submission checker
//! (mlcommons/inference `tools/submission/submission_checker/`), in Rust.
//!
//! Each rule of the checker for the round is a named [`Rule`]; a failure is a [`Finding`] that
//! names the file (and the log key or JSON field) and says what to do. The official checker stays
//! the authority: [`official`] runs it from a checkout of mlcommons/inference and compares its
//! verdict with ours. Where the official checker is lenient in ways the older checker and the
//! reviewers are not (an INVALID Offline run, errors in a performance log), the pre-flight is
//! stricter on purpose; those rules say so ([`Rule::stricter_than_official`]).
//!
//! Paths come from [`crate::layout`], the one module that knows a round's tree.
//!
//! Every entry of a tree is first listed by [`entries`] (the walk `export_submission` shares),
//! which follows no link: links, special files and unsafe names are findings, and no rule reads
//! below a link.
//!
//! Layers, each importing only those below it: [`walk`] (the tree, in the checker's order) calls
//! the [`rules`] (one file per concern), which share [`common`] helpers; this module holds the
//! vocabulary (rules, findings, the report) and the entry points.

mod common;
pub mod entries;
pub mod official;
mod rules;
mod walk;

pub use rules::compliance::verify_problems;
#[cfg(test)]
mod tests;

use crate::error::Error;
use crate::layout::{Division, ResultKey, SubmissionLayout};
use mlperf_config::Round;
use std::fmt;
use std::path::{Path, PathBuf};

/// The checker's rules, each with a stable name (shown as `error[<name>]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Rule {
    /// Division/submitter/systems/src/results directories where the round's layout has them.
    Layout,
    /// Files every result needs (logs, user.conf, README.md, measurements), non-empty.
    RequiredFile,
    /// Required scenarios present for the system type, no unknown scenario or benchmark.
    Scenarios,
    /// All required system description fields, the meaningful ones non-empty.
    SystemFields,
    /// Values the checker validates: status, system_type, division, submitter, is_network.
    SystemValues,
    /// measurements.json fields the checker requires non-empty.
    MeasurementsFields,
    /// A LoadGen detail log the checker can parse (first line `:::MLLOG`, valid JSON lines).
    LogFormat,
    /// The round's three LoadGen seeds.
    Seeds,
    /// `effective_min_duration_ms` at least the round's 600 s (and LoadGen met it).
    MinDuration,
    /// Offline `min_query_count` and samples per query (and LoadGen met its query count).
    MinQueries,
    /// `effective_performance_sample_count` at least the round's value.
    PerformanceSampleCount,
    /// SingleStream, MultiStream and Server runs passed LoadGen's early stopping.
    EarlyStopping,
    /// The round's latency constraint (Server target latency; Offline p99 where one applies).
    Latency,
    /// LLMs: token latencies recorded; Server/Interactive p99 TTFT and TPOT below the limits.
    TokenLatency,
    /// `result_validity` is VALID.
    ResultValid,
    /// No LoadGen errors in an accuracy log.
    LoadgenErrors,
    /// No LoadGen errors in a performance log.
    PerformanceLogErrors,
    /// accuracy.txt matches the round's pattern for every metric and meets the targets.
    AccuracyTarget,
    /// accuracy.txt carries the `hash=` line of the truncation step.
    AccuracyHash,
    /// The accuracy log is truncated (at most 10240 bytes).
    AccuracyLogSize,
    /// The accuracy run covered the whole dataset.
    AccuracySampleCount,
    /// The round's compliance test directories and their files.
    ComplianceFiles,
    /// The compliance verify files say TEST PASS.
    ComplianceVerify,
    /// Files the checker does not read but that should not ship (trace logs).
    Hygiene,
    /// A power result (performance/power/): the checker's file sets and power-dev's
    /// compliance/check.py rules (power::rules).
    Power,
    /// No symbolic link, special file or unreadable directory in the tree (never followed).
    Link,
    /// File and directory names the official checker and tarballs take (no space, control
    /// character, leading `-`, quote or glob).
    FileName,
    /// `mlperf_log_summary.txt` states the same result, validity and figures as the detail log.
    SummaryMatchesDetail,
}

impl Rule {
    pub const ALL: [Rule; 28] = [
        Rule::Layout,
        Rule::RequiredFile,
        Rule::Scenarios,
        Rule::SystemFields,
        Rule::SystemValues,
        Rule::MeasurementsFields,
        Rule::LogFormat,
        Rule::Seeds,
        Rule::MinDuration,
        Rule::MinQueries,
        Rule::PerformanceSampleCount,
        Rule::EarlyStopping,
        Rule::Latency,
        Rule::TokenLatency,
        Rule::ResultValid,
        Rule::LoadgenErrors,
        Rule::PerformanceLogErrors,
        Rule::AccuracyTarget,
        Rule::AccuracyHash,
        Rule::AccuracyLogSize,
        Rule::AccuracySampleCount,
        Rule::ComplianceFiles,
        Rule::ComplianceVerify,
        Rule::Hygiene,
        Rule::Power,
        Rule::Link,
        Rule::FileName,
        Rule::SummaryMatchesDetail,
    ];

    pub const fn name(self) -> &'static str {
        match self {
            Rule::Layout => "layout",
            Rule::RequiredFile => "required-file",
            Rule::Scenarios => "scenarios",
            Rule::SystemFields => "system-fields",
            Rule::SystemValues => "system-values",
            Rule::MeasurementsFields => "measurements-fields",
            Rule::LogFormat => "log-format",
            Rule::Seeds => "seeds",
            Rule::MinDuration => "min-duration",
            Rule::MinQueries => "min-queries",
            Rule::PerformanceSampleCount => "performance-sample-count",
            Rule::EarlyStopping => "early-stopping",
            Rule::Latency => "latency",
            Rule::TokenLatency => "token-latency",
            Rule::ResultValid => "result-valid",
            Rule::LoadgenErrors => "loadgen-errors",
            Rule::PerformanceLogErrors => "performance-log-errors",
            Rule::AccuracyTarget => "accuracy-target",
            Rule::AccuracyHash => "accuracy-hash",
            Rule::AccuracyLogSize => "accuracy-log-size",
            Rule::AccuracySampleCount => "accuracy-sample-count",
            Rule::ComplianceFiles => "compliance-files",
            Rule::ComplianceVerify => "compliance-verify",
            Rule::Hygiene => "hygiene",
            Rule::Power => "power",
            Rule::Link => "link",
            Rule::FileName => "file-name",
            Rule::SummaryMatchesDetail => "summary-detail",
        }
    }

    /// Rules the current official checker does not enforce (performance_check.py never fails on
    /// `result_validity`, and ignores performance-log errors unless `--submission-exceptions` is
    /// given; see the reference §4.8) but the older checker and the reviewers do.
    pub const fn stricter_than_official(self) -> bool {
        matches!(self, Rule::ResultValid | Rule::PerformanceLogErrors)
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
}

/// One failed rule: where, what is wrong, and what to do.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub severity: Severity,
    pub rule: Rule,
    /// The file or directory, relative to the checked input.
    pub path: PathBuf,
    /// The log key or JSON field the finding is about, if any.
    pub key: Option<String>,
    pub message: String,
    pub fix: String,
    /// The result directory (`results/<system>/<bench>/<Scenario>`) it belongs to, if any; used to
    /// compare with the official checker's per-result verdict.
    pub result: Option<ResultKey>,
}

impl Finding {
    /// A finding on `systems/<system_name>.json`.
    fn is_about_system(&self, system_name: &str) -> bool {
        self.result.is_none()
            && self.path.parent().and_then(Path::file_name).is_some_and(|d| d == "systems")
            && self.path.file_name().is_some_and(|n| *n == *format!("{system_name}.json"))
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(f, "{level}[{}] {}", self.rule, self.path.display())?;
        if let Some(key) = &self.key {
            write!(f, " ({key})")?;
        }
        write!(f, ": {}\n    fix: {}", self.message, self.fix)
    }
}

/// The outcome of a pre-flight.
#[derive(Debug, Clone, Default)]
pub struct Report {
    pub round: String,
    /// Every result directory that was checked.
    pub results: Vec<ResultKey>,
    pub findings: Vec<Finding>,
}

impl Report {
    pub fn errors(&self) -> impl Iterator<Item = &Finding> {
        self.findings.iter().filter(|f| f.severity == Severity::Error)
    }

    pub fn error_count(&self) -> usize {
        self.errors().count()
    }

    pub fn warning_count(&self) -> usize {
        self.findings.len() - self.error_count()
    }

    /// The errors that keep a result out of the submission: its own, and those of its system
    /// description (the official checker fails every result of a system with a bad description).
    pub fn errors_for<'a>(&'a self, key: &ResultKey) -> impl Iterator<Item = &'a Finding> + use<'a> {
        let key = key.clone();
        self.errors().filter(move |f| f.result.as_ref() == Some(&key) || f.is_about_system(&key.system_name))
    }

    /// Errors that belong to no result (layout, a system without results).
    pub fn tree_errors(&self) -> impl Iterator<Item = &Finding> {
        self.errors().filter(|f| f.result.is_none() && !self.results.iter().any(|k| f.is_about_system(&k.system_name)))
    }

    /// Results with no error finding.
    pub fn passing_results(&self) -> Vec<&ResultKey> {
        self.results.iter().filter(|k| self.errors_for(k).next().is_none()).collect()
    }

    /// The findings, then a summary line.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for finding in &self.findings {
            out.push_str(&format!("{finding}\n"));
        }
        out.push_str(&format!(
            "check_submission (round {}): {} result(s), {} passing; {} error(s), {} warning(s)\n",
            self.round,
            self.results.len(),
            self.passing_results().len(),
            self.error_count(),
            self.warning_count()
        ));
        out
    }
}

/// Collects findings with paths relative to the checked input.
pub(crate) struct Findings<'a> {
    input: &'a Path,
    result: Option<ResultKey>,
    list: Vec<Finding>,
}

impl<'a> Findings<'a> {
    fn new(input: &'a Path) -> Findings<'a> {
        Findings { input, result: None, list: Vec::new() }
    }

    fn rel(&self, path: &Path) -> PathBuf {
        path.strip_prefix(self.input).map(Path::to_path_buf).unwrap_or_else(|_| path.to_path_buf())
    }

    fn push(&mut self, severity: Severity, rule: Rule, path: &Path, key: Option<&str>, message: String, fix: impl Into<String>) {
        let path = self.rel(path);
        self.list.push(Finding { severity, rule, path, key: key.map(String::from), message, fix: fix.into(), result: self.result.clone() });
    }

    pub(crate) fn error(&mut self, rule: Rule, path: &Path, message: String, fix: impl Into<String>) {
        self.push(Severity::Error, rule, path, None, message, fix);
    }

    pub(crate) fn key_error(&mut self, rule: Rule, path: &Path, key: &str, message: String, fix: impl Into<String>) {
        self.push(Severity::Error, rule, path, Some(key), message, fix);
    }

    pub(crate) fn warning(&mut self, rule: Rule, path: &Path, message: String, fix: impl Into<String>) {
        self.push(Severity::Warning, rule, path, None, message, fix);
    }
}

/// What `check_submission` checks.
pub struct CheckRequest<'a> {
    pub round: &'a Round,
    /// The submission root (holding `closed/`, `open/`, `network/`).
    pub input: &'a Path,
    /// Only this submitter's tree (compared case-insensitively).
    pub submitter: Option<&'a str>,
}

/// One submitter tree with what every rule needs to know about it.
pub(crate) struct Tree<'a> {
    pub round: &'a Round,
    pub layout: SubmissionLayout,
    pub division: Division,
    pub submitter: String,
    /// What the walk refused below the tree's directory.
    pub refused: Vec<entries::Refused>,
}

impl Tree<'_> {
    /// Whether `path` is, or lies below, an entry no rule may read through (a link, a FIFO).
    pub fn unsafe_at(&self, path: &Path) -> bool {
        self.refused.iter().any(|r| r.why.unsafe_to_read() && path.starts_with(&r.path))
    }

    /// Closed and network submissions must follow the round's scenario and compliance tables;
    /// open ones need not (the checker skips those checks for open).
    pub fn is_closed_like(&self) -> bool {
        self.division != Division::Open
    }
}

/// Runs every rule of the round on the tree(s) under `req.input`.
pub fn check_submission(req: &CheckRequest) -> Report {
    let mut findings = Findings::new(req.input);
    let mut results = Vec::new();
    let trees = SubmissionLayout::submitters(req.input, req.round.layout, req.submitter);
    if trees.is_empty() {
        let wanted = req.submitter.map_or_else(|| "any submitter".to_string(), |s| format!("submitter {s}"));
        findings.error(
            Rule::Layout,
            req.input,
            format!("no closed/<submitter>, open/<submitter> or network/<submitter> directory for {wanted}"),
            "point --input at the submission root (the directory holding closed/), e.g. build/submission, and stage results into it with `mlperf stage_results`",
        );
    }
    let mut refused = divisions_refused(req);
    for layout in trees {
        let Some(division) = layout.division() else { continue };
        let submitter = layout.org_dir().file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        let (mine, others) = refused.into_iter().partition(|r| r.path.starts_with(layout.org_dir()));
        refused = others;
        let tree = Tree { round: req.round, layout, division, submitter, refused: mine };
        results.extend(walk::check_tree(&tree, &mut findings));
    }
    // Entries outside every checked submitter tree: the division directories themselves, or a
    // submitter directory that is a link.
    for r in &refused {
        walk::refused_finding(r, &mut findings);
    }
    Report { round: req.round.id.to_string(), results, findings: findings.list }
}

/// What the walk refuses in the division directories under `req.input` (of the submitter asked
/// for, when one is). A division directory that is itself a link is refused, never entered.
fn divisions_refused(req: &CheckRequest) -> Vec<entries::Refused> {
    let mut refused = Vec::new();
    for division in Division::ALL {
        let dir = req.input.join(division.dir_name());
        match std::fs::symlink_metadata(&dir) {
            Ok(m) if m.file_type().is_symlink() => {
                refused.push(entries::Refused { path: dir.clone(), why: entries::Refusal::Link { target: std::fs::read_link(&dir).unwrap_or_default() } })
            }
            Ok(m) if m.is_dir() => refused.extend(entries::walk(&dir).refused),
            _ => {}
        }
    }
    let submitter_of = |path: &Path| path.strip_prefix(req.input).ok().and_then(|rel| rel.iter().nth(1)).and_then(|s| s.to_str()).map(str::to_string);
    refused.retain(|r| req.submitter.is_none_or(|s| submitter_of(&r.path).is_none_or(|name| name.eq_ignore_ascii_case(s))));
    refused
}

/// A checked tree: the pre-flight's report and, when asked, the official checker's verdict.
pub struct Checked {
    pub report: Report,
    pub official: Option<official::OfficialVerdict>,
}

impl Checked {
    /// Neither found an error.
    pub fn passed(&self) -> bool {
        self.report.error_count() == 0 && self.official.as_ref().is_none_or(|v| v.accepted)
    }
}

/// `mlperf check_submission`: the pre-flight and, when asked, the official checker on the tree at
/// `input` (`results::print_check` prints them).
pub fn command(round: &Round, input: &Path, submitter: Option<&str>, official: Option<&official::OfficialRequest>) -> Result<Checked, Error> {
    if !input.is_dir() {
        return Err(Error::Usage(format!("--input {}: no such directory; stage a submission first (`mlperf stage_results`) or point --input at one", input.display())));
    }
    let report = check_submission(&CheckRequest { round, input, submitter });
    let official = official.map(official::run).transpose()?;
    Ok(Checked { report, official })
}
