//! Helpers every rule shares: the benchmark a results directory is, directory listings, required
//! files, Python truthiness, the detail log as the checker reads it, and the checker's regexes.

use super::{Findings, Rule};
pub(crate) use crate::accuracy::target::{first_group, python_regex};
use crate::rundir::logs::DetailLog;
use mlperf_config::BenchmarkRound;
use std::path::Path;

/// A benchmark directory and what the round says about it.
pub(crate) struct Bench<'a> {
    pub round: &'a BenchmarkRound,
    /// The checker model = the directory name (`resnet`, `bert-99`, ...).
    pub checker_model: String,
    /// The system's `system_type` includes edge: its results may be inferred ([`layout::inferable`]).
    pub edge: bool,
}

/// `files` must exist in `dir`; says what they are when missing.
pub(crate) fn require_files(dir: &Path, files: &[&str], what: &str, f: &mut Findings) -> bool {
    let mut ok = true;
    for name in files {
        let path = dir.join(name);
        if !path.is_file() {
            f.error(Rule::RequiredFile, &path, format!("missing {name} ({what})"), "rerun the staging step (`mlperf stage_results`), which copies the run's files here");
            ok = false;
        }
    }
    ok
}

/// Python truthiness of a JSON value, as the checker tests fields (`not value`).
pub(crate) fn is_truthy(value: Option<&serde_json::Value>) -> bool {
    use serde_json::Value;
    match value {
        None | Some(Value::Null) | Some(Value::Bool(false)) => false,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Bool(true)) => true,
    }
}

/// Names in `dir` (directories when `dirs`, else every entry), sorted; empty when it does not exist.
/// A link is never taken for a directory (the walk reports it, see [`super::entries`]).
pub(crate) fn dir_names(dir: &Path, dirs: bool) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .map(|entries| entries.flatten().filter(|e| !dirs || e.file_type().is_ok_and(|t| t.is_dir())).filter_map(|e| e.file_name().to_str().map(String::from)).collect())
        .unwrap_or_default();
    names.sort();
    names
}

/// Reads a detail log as the checker's parser does: line 1 must be an `:::MLLOG` line and every
/// `:::MLLOG` line valid JSON. None (with a finding) when it cannot be used.
pub(crate) fn read_detail_log(path: &Path, f: &mut Findings) -> Option<DetailLog> {
    let text = std::fs::read_to_string(path).ok()?;
    if !text.starts_with(":::MLLOG") {
        f.error(Rule::LogFormat, path, "the first line is not a `:::MLLOG` record (the checker refuses the file)".into(), "stage LoadGen's mlperf_log_detail.txt unchanged");
        return None;
    }
    match DetailLog::parse(&text) {
        Ok(log) => Some(log),
        Err(e) => {
            f.error(Rule::LogFormat, path, format!("unreadable: {e} (the checker aborts on it)"), "stage LoadGen's mlperf_log_detail.txt unchanged");
            None
        }
    }
}
