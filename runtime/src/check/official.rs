//! The official checker (mlcommons/inference `tools/submission/submission_checker`), run from a
//! checkout the user points at, its log saved next to the tree, and its verdict compared with the
//! pre-flight's. The official checker is the authority; a disagreement is reported, never hidden.
//!
//! How it runs (reference §4.1): `python3 -m submission_checker.main --input <root> --version
//! <round> --csv <file> [--submitter <org>]` from `tools/submission` (the package uses relative
//! imports; it needs PyYAML). It logs to stderr; per result it logs `Results <perf log> <metric>`
//! or `NoResults <perf log>`, and last `SUMMARY: submission looks OK` (exit 0) or `SUMMARY:
//! submission has errors` (exit 1).

use super::Report;
use crate::fsutil::{FsError, write_atomic};
use crate::layout::ResultKey;
use mlperf_config::{Round, Scenario};
use std::path::{Path, PathBuf};
use std::process::Command;

/// The package inside a checkout of mlcommons/inference.
const CHECKER_PACKAGE: &str = "tools/submission/submission_checker";

/// Why the official checker could not be run (its verdict, when it ran, is an [`OfficialVerdict`]).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OfficialError {
    #[error("--inference-repo {}: no {CHECKER_PACKAGE}/main.py there; point it at a checkout of https://github.com/mlcommons/inference (the round's checker version is {checker_version})", repo.display())]
    NoChecker { repo: PathBuf, checker_version: String },
    /// A path that cannot be made absolute or canonical (`what` is the flag or file).
    #[error("{what} {}: {source}", path.display())]
    Path { what: &'static str, path: PathBuf, source: std::io::Error },
    #[error("{} exists (an earlier checker run); pass --force to overwrite it", path.display())]
    Exists { path: PathBuf },
    #[error("cannot run {python} for the official checker: {source} (install Python 3 with PyYAML, or pass --python)")]
    NoPython { python: String, source: std::io::Error },
    #[error("the official checker needs PyYAML: `{python} -m pip install pyyaml` (its log: {})", log.display())]
    NoPyYaml { python: String, log: PathBuf },
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// A checker that cannot be run is [`crate::Error::Other`], as when this was a string.
impl From<OfficialError> for crate::Error {
    fn from(e: OfficialError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// What to run and where its output goes.
pub struct OfficialRequest<'a> {
    pub inference_repo: &'a Path,
    pub round: &'a Round,
    pub input: &'a Path,
    pub submitter: Option<&'a str>,
    /// Where the checker's stdout and stderr are saved (its CSV goes next to it).
    pub log_path: &'a Path,
    /// Overwrite an existing log and CSV.
    pub force: bool,
    /// The Python interpreter (`python3` unless told otherwise).
    pub python: &'a str,
}

/// The official checker's verdict.
#[derive(Debug, Clone)]
pub struct OfficialVerdict {
    pub exit_code: Option<i32>,
    /// Exit 0 and `SUMMARY: submission looks OK`.
    pub accepted: bool,
    /// The `SUMMARY:` line, or the last line of a crash (a Python traceback).
    pub summary: String,
    pub accepted_results: Vec<ResultKey>,
    pub rejected_results: Vec<ResultKey>,
    /// The checker's ERROR lines, as logged.
    pub error_lines: Vec<String>,
    pub log_path: PathBuf,
    pub csv_path: PathBuf,
}

/// Runs the official checker and saves its log; an error when it cannot be run at all.
pub fn run(req: &OfficialRequest) -> Result<OfficialVerdict, OfficialError> {
    let tools = req.inference_repo.join("tools/submission");
    if !req.inference_repo.join(CHECKER_PACKAGE).join("main.py").is_file() {
        return Err(OfficialError::NoChecker { repo: req.inference_repo.to_path_buf(), checker_version: req.round.checker_version.to_string() });
    }
    // Absolute: the checker runs in tools/submission.
    let csv_path = std::path::absolute(req.log_path.with_file_name("checker_summary.csv")).map_err(|source| OfficialError::Path {
        what: "the checker log",
        path: req.log_path.to_path_buf(),
        source,
    })?;
    for path in [req.log_path, csv_path.as_path()] {
        if path.exists() && !req.force {
            return Err(OfficialError::Exists { path: path.to_path_buf() });
        }
    }
    if let Some(dir) = csv_path.parent() {
        std::fs::create_dir_all(dir).map_err(FsError::create(dir))?;
    }
    let input = std::fs::canonicalize(req.input).map_err(|source| OfficialError::Path { what: "--input", path: req.input.to_path_buf(), source })?;
    let mut command = Command::new(req.python);
    command.current_dir(&tools).args(["-m", "submission_checker.main", "--input"]).arg(&input).args(["--version", &req.round.checker_version, "--csv"]).arg(&csv_path);
    if let Some(s) = req.submitter {
        command.args(["--submitter", s]);
    }
    let shown = format!(
        "cd {} && {} -m submission_checker.main --input {} --version {} --csv {}{}",
        tools.display(),
        req.python,
        input.display(),
        req.round.checker_version,
        csv_path.display(),
        req.submitter.map_or(String::new(), |s| format!(" --submitter {s}"))
    );
    let output = command.output().map_err(|source| OfficialError::NoPython { python: req.python.to_string(), source })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    let log = format!("# {shown}\n# exit status: {}\n{stdout}{stderr}", output.status.code().map_or("killed".to_string(), |c| c.to_string()));
    write_atomic(req.log_path, log.as_bytes())?;
    if stderr.contains("No module named 'yaml'") {
        return Err(OfficialError::NoPyYaml { python: req.python.to_string(), log: req.log_path.to_path_buf() });
    }
    Ok(parse(&log, output.status.code(), req.log_path, &csv_path))
}

/// Reads the verdict out of the checker's log.
pub fn parse(log: &str, exit_code: Option<i32>, log_path: &Path, csv_path: &Path) -> OfficialVerdict {
    let mut verdict = OfficialVerdict {
        exit_code,
        accepted: false,
        summary: String::new(),
        accepted_results: Vec::new(),
        rejected_results: Vec::new(),
        error_lines: Vec::new(),
        log_path: log_path.to_path_buf(),
        csv_path: csv_path.to_path_buf(),
    };
    for line in log.lines() {
        let (level, message) = log_record(line);
        if level.is_none() {
            continue;
        }
        if level == Some("ERROR") {
            verdict.error_lines.push(message.to_string());
        }
        if let Some(rest) = message.strip_prefix("NoResults ") {
            verdict.rejected_results.extend(result_of(rest));
        } else if let Some(rest) = message.strip_prefix("Results ") {
            verdict.accepted_results.extend(result_of(rest));
        } else if let Some(summary) = message.strip_prefix("SUMMARY: ") {
            verdict.summary = summary.to_string();
        }
    }
    if verdict.summary.is_empty() {
        verdict.summary = format!("no SUMMARY line (crashed?): {}", log.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("empty output"));
    }
    verdict.accepted = exit_code == Some(0) && verdict.summary == "submission looks OK";
    verdict
}

/// `(level, message)` of a checker log line: `[<time> <file>:<line> LEVEL] message` (the format
/// the package configures) or Python's default `LEVEL:logger:message`; other lines (tracebacks,
/// script output) have no level.
fn log_record(line: &str) -> (Option<&str>, &str) {
    const LEVELS: [&str; 4] = ["INFO", "WARNING", "ERROR", "CRITICAL"];
    if let Some((head, message)) = line.strip_prefix('[').and_then(|rest| rest.split_once("] "))
        && let Some(level) = head.rsplit(' ').next().filter(|l| LEVELS.contains(l))
    {
        return (Some(level), message);
    }
    let mut parts = line.splitn(3, ':');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(level), Some(_logger), Some(message)) if LEVELS.contains(&level) => (Some(level), message),
        _ => (None, line),
    }
}

/// The result a checker path (`.../results/<system>/<bench>/<Scenario>/performance/...`) is about.
fn result_of(text: &str) -> Option<ResultKey> {
    let path = text.split_whitespace().next()?;
    let parts: Vec<&str> = path.split('/').collect();
    let at = parts.iter().rposition(|p| *p == "results")?;
    let (system, bench, scenario) = (parts.get(at + 1)?, parts.get(at + 2)?, parts.get(at + 3)?);
    Some(ResultKey::new(*system, *bench, Scenario::parse(scenario)?))
}

/// Where the two checkers disagree, worded for the user; empty when they agree. Results where
/// only a rule that is stricter than the official checker fired are noted as expected.
pub fn disagreements(report: &Report, official: &OfficialVerdict) -> Vec<String> {
    let mut out = Vec::new();
    let errors_of = |key: &ResultKey| report.errors_for(key).collect::<Vec<_>>();
    for key in &official.rejected_results {
        if errors_of(key).is_empty() {
            let mentions: Vec<&str> = official.error_lines.iter().filter(|l| l.contains(&key.rel().display().to_string())).map(String::as_str).collect();
            out.push(format!(
                "{key}: the official checker rejects it, the pre-flight found no error; the checker says: {}",
                if mentions.is_empty() { "(see the log)".to_string() } else { mentions.join(" | ") }
            ));
        }
    }
    for key in &official.accepted_results {
        let errors = errors_of(key);
        if errors.is_empty() {
            continue;
        }
        let rules: Vec<String> = errors.iter().map(|f| f.rule.to_string()).collect();
        if errors.iter().all(|f| f.rule.stricter_than_official()) {
            out.push(format!("{key}: accepted by the official checker, but the pre-flight's stricter rules fail ({}); reviewers enforce them", rules.join(", ")));
        } else {
            out.push(format!(
                "{key}: the official checker accepts it, the pre-flight reports errors ({}); the official checker is the authority, please report this",
                rules.join(", ")
            ));
        }
    }
    let tree_errors = report.tree_errors().count();
    if official.accepted && tree_errors > 0 {
        out.push(format!("the official checker accepts the tree, the pre-flight has {tree_errors} error(s) outside any result (layout, system descriptions)"));
    }
    // A rejection no rejected result explains (a crash, a tree-level error).
    if !official.accepted && report.error_count() == 0 && out.is_empty() {
        out.push(format!("the official checker rejects the tree ({}), the pre-flight found no error; read {}", official.summary, official.log_path.display()));
    }
    out
}
