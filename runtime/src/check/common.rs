//! Helpers every rule shares: the benchmark a results directory is, directory listings, required
//! files, Python truthiness, the detail log as the checker reads it, and the checker's regexes.

use super::{Findings, Rule};
use crate::rundir::logs::DetailLog;
use mlperf_config::BenchmarkRound;
use regex_automata::meta::Regex;
use regex_automata::{Anchored, Input};
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

/// A Python `re` pattern as a regex: a `{` that opens no `{m}`, `{m,}` or `{m,n}` is a literal in
/// Python (e.g. the checker's F1 pattern `^{...`) but an error here, so it is escaped.
pub(crate) fn python_regex(pattern: &str) -> Result<Regex, Box<regex_automata::meta::BuildError>> {
    let mut translated = String::with_capacity(pattern.len());
    let mut chars = pattern.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        match c {
            '\\' => {
                translated.push(c);
                if let Some((_, next)) = chars.next() {
                    translated.push(next);
                }
            }
            '{' if !opens_repetition(&pattern[i..]) => translated.push_str("\\{"),
            _ => translated.push(c),
        }
    }
    let syntax = regex_automata::util::syntax::Config::new().unicode(false).utf8(false);
    Regex::builder().syntax(syntax).build(&translated).map_err(Box::new)
}

/// `{m}`, `{m,}` or `{m,n}` at the start of `rest`.
fn opens_repetition(rest: &str) -> bool {
    let Some(end) = rest.find('}') else { return false };
    let inner = &rest[1..end];
    let (low, high) = inner.split_once(',').unwrap_or((inner, "0"));
    !low.is_empty() && low.bytes().all(|b| b.is_ascii_digit()) && high.bytes().all(|b| b.is_ascii_digit())
}

/// Group 1 of a match anchored at the start of `line`.
pub(crate) fn first_group<'l>(re: &Regex, line: &'l str) -> Option<&'l str> {
    let mut caps = re.create_captures();
    re.search_captures(&Input::new(line).anchored(Anchored::Yes), &mut caps);
    caps.get_group(1).map(|span| &line[span])
}
