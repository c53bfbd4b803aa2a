//! A user.conf given with `--user_conf_path`, checked before anything runs. LoadGen itself refuses
//! a bad line only inside each run (every run FAILED, pointing at the run directory's copy), and
//! silently ignores a key, scenario or model it does not know. Here the file is read with
//! LoadGen's grammar (`mlperf_config::loadgen_conf`: `model.scenario.key = value`, `*` wildcards,
//! `#` comments) and every line is held against the keys `TestSettings::FromConfig` reads
//! (test_settings_internal.cc of LoadGen 6.0.17 and 5.1.2), so a problem is reported once, with
//! the user's path and line and the nearest known name.

use crate::select::Selected;
use mlperf_config::Round;
use mlperf_config::diag::did_you_mean;
use mlperf_config::loadgen_conf::ConfFile;
use std::fmt;
use std::path::{Path, PathBuf};

/// A user.conf as the user gave it, checked.
#[derive(Debug, Clone)]
pub struct UserConf {
    pub path: PathBuf,
    pub text: String,
}

/// Why a given user.conf cannot be used.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UserConfError {
    #[error("--user_conf_path {}: {source}", .path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// Lines LoadGen would refuse or ignore; nothing has run.
    #[error("--user_conf_path {}: {} line(s) LoadGen would refuse or ignore; nothing ran:\n{}", .path.display(), .findings.len(), findings_text(.path, .findings))]
    Invalid { path: PathBuf, findings: Vec<Finding> },
}

impl From<UserConfError> for crate::Error {
    fn from(e: UserConfError) -> crate::Error {
        match e {
            UserConfError::Unreadable { .. } => crate::Error::Usage(e.to_string()),
            UserConfError::Invalid { .. } => crate::Error::Config(e.to_string()),
        }
    }
}

/// One problem of one line.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    pub line: usize,
    pub problem: String,
}

fn findings_text(path: &Path, findings: &[Finding]) -> String {
    findings.iter().map(|f| format!("  {}:{}: {}", path.display(), f.line, f.problem)).collect::<Vec<_>>().join("\n")
}

/// What a value of a key must be for LoadGen to read what the user meant.
#[derive(Clone, Copy, PartialEq)]
enum Value {
    /// Read with `strtoull`: `0.5` reads as 0 and `-1` as 2^64 - 1.
    Count,
    /// Read as 0 or 1.
    Flag,
    /// `mode`: 0 SubmissionRun, 1 AccuracyOnly, 2 PerformanceOnly, 3 FindPeakPerformance.
    Mode,
    /// Read with `strtod`, and must be above 0.
    Positive,
    /// A percentile, above 0 and at most 100.
    Percentile,
}

/// The keys `FromConfig` reads from a user.conf, the scenarios it reads each of (None: the run's
/// own), and what their values must be.
const KEYS: &[(&str, Option<&[&str]>, Value)] = &[
    ("mode", None, Value::Mode),
    ("use_token_latencies", None, Value::Flag),
    ("infer_token_latencies", None, Value::Flag),
    ("token_latency_scaling_factor", None, Value::Count),
    ("performance_issue_unique", None, Value::Flag),
    ("performance_issue_same", None, Value::Flag),
    ("performance_issue_same_index", None, Value::Count),
    ("sample_concatenate_permutation", None, Value::Flag),
    ("min_duration", None, Value::Count),
    ("max_duration", None, Value::Count),
    ("min_query_count", None, Value::Count),
    ("max_query_count", None, Value::Count),
    ("performance_sample_count_override", None, Value::Count),
    ("accuracy_sample_count_override", None, Value::Count),
    ("print_timestamps", None, Value::Flag),
    ("accuracy_log_rng_seed", None, Value::Count),
    ("accuracy_log_sampling_target", None, Value::Count),
    ("target_latency_percentile", Some(&["SingleStream", "MultiStream", "Server"]), Value::Percentile),
    ("samples_per_query", Some(&["MultiStream"]), Value::Count),
    ("target_latency", Some(&["SingleStream", "MultiStream", "Server"]), Value::Positive),
    ("coalesce_queries", Some(&["Server"]), Value::Flag),
    ("max_async_queries", Some(&["Server"]), Value::Count),
    ("target_qps", Some(&["Server", "Offline"]), Value::Positive),
    ("ttft_latency", Some(&["Server"]), Value::Count),
    ("tpot_latency", Some(&["Server"]), Value::Count),
];

/// Keys `FromConfig` reads only from the mlperf.conf compiled into LoadGen.
const MLPERF_CONF_ONLY: &[&str] = &[
    "qsl_rng_seed",
    "sample_index_rng_seed",
    "schedule_rng_seed",
    "accuracy_log_probability",
    "test05",
    "test05_qsl_rng_seed",
    "test05_sample_index_rng_seed",
    "test05_schedule_rng_seed",
];

/// LoadGen's scenario names (Interactive runs are LoadGen Server runs of the `-interactive` model).
const SCENARIOS: [&str; 4] = ["SingleStream", "MultiStream", "Server", "Offline"];

impl UserConf {
    /// Reads and checks `path` for runs of `configs` in `round`: a line LoadGen would refuse, or
    /// one it would ignore (an unknown key, scenario or model; a key it reads only from
    /// mlperf.conf or for other scenarios; a value it would read as something else), is an
    /// error. A line for a model none of the runs uses is only a warning.
    pub fn read(path: &Path, round: &Round, configs: &[Selected]) -> Result<UserConf, UserConfError> {
        let text = std::fs::read_to_string(path).map_err(|source| UserConfError::Unreadable { path: path.to_path_buf(), source })?;
        let models: Vec<&str> = round.benchmarks.0.iter().flat_map(|(_, b)| [Some(b.loadgen_model.as_ref()), b.interactive_loadgen_model.as_deref()]).flatten().collect();
        let running: Vec<&str> = configs.iter().filter_map(|s| round.benchmark(&s.config.benchmark).map(|b| b.loadgen_model_for(s.config.scenario))).collect();
        let (findings, unused) = check(&text, &models, &running);
        for (line, model) in unused {
            tracing::warn!("{}:{line}: no selected run uses LoadGen model `{model}` (they use {}); the line changes nothing", path.display(), running.join(", "));
        }
        if findings.is_empty() { Ok(UserConf { path: path.to_path_buf(), text }) } else { Err(UserConfError::Invalid { path: path.to_path_buf(), findings }) }
    }
}

/// The findings of `text` against the LoadGen `models` of the round, and the lines naming a known
/// model that none of the `running` ones is.
fn check<'a>(text: &'a str, models: &[&str], running: &[&str]) -> (Vec<Finding>, Vec<(usize, &'a str)>) {
    let mut findings = Vec::new();
    let mut unused = Vec::new();
    // LoadGen's own refusals (a value that is no number, a missing `=`), with their line.
    if let Err(errors) = ConfFile::parse(text) {
        for e in errors {
            let shown = text.split('\n').nth(e.line - 1).unwrap_or_default().trim();
            let why = e.message.split(", line=").next().unwrap_or(&e.message);
            findings.push(Finding { line: e.line, problem: format!("`{shown}`: LoadGen refuses it ({why}); write `model.scenario.key = number`") });
        }
    }
    for (index, line) in text.split('\n').enumerate() {
        let tokens: Vec<&str> = line.split_ascii_whitespace().collect();
        let Some(&key) = tokens.first().filter(|t| !t.starts_with('#')) else { continue };
        let number = index + 1;
        let mut find = |problem: String| findings.push(Finding { line: number, problem });
        if tokens.len() < 3 {
            if tokens.len() == 1 {
                find(format!("`{key}` has no ` = value`: LoadGen ignores the line (the `=` needs spaces around it)"));
            }
            continue;
        }
        let parts: Vec<&str> = key.rsplitn(3, '.').collect();
        let [name, scenario, model] = parts[..] else {
            find(format!("`{key}` is not `model.scenario.key` (`*` for any model or scenario): LoadGen ignores the line"));
            continue;
        };
        if model != "*" && !models.contains(&model) {
            find(format!("unknown LoadGen model `{model}`{}: LoadGen ignores the line", nearest(model, models.iter().copied())));
        } else if model != "*" && !running.contains(&model) {
            unused.push((number, model));
        }
        if scenario != "*" && !SCENARIOS.contains(&scenario) {
            find(format!("unknown scenario `{scenario}`{} (Interactive runs read `Server`): LoadGen ignores the line", nearest(scenario, SCENARIOS)));
        }
        if MLPERF_CONF_ONLY.contains(&name) {
            find(format!("LoadGen reads `{name}` only from its own mlperf.conf: in a user.conf it is ignored"));
            continue;
        }
        let Some(&(_, scenarios, value)) = KEYS.iter().find(|(k, _, _)| *k == name) else {
            find(format!("unknown key `{name}`{}: LoadGen ignores the line", nearest(name, KEYS.iter().map(|(k, _, _)| *k))));
            continue;
        };
        if let Some(only) = scenarios
            && scenario != "*"
            && SCENARIOS.contains(&scenario)
            && !only.contains(&scenario)
        {
            find(format!("LoadGen reads `{name}` only for {}, not {scenario}: the line changes nothing", only.join(", ")));
        }
        // Server's target_latency is whole milliseconds (strtoull); the streams' are strtod.
        let value = if name == "target_latency" && scenario == "Server" { Value::Count } else { value };
        // The last value token is the one LoadGen keeps; ConfFile reported those that are no number.
        let given = tokens[tokens.len() - 1];
        if let Some(why) = bad_value(value, given) {
            find(format!("`{name} = {given}`: {why}"));
        }
    }
    findings.sort_by_key(|f| f.line);
    (findings, unused)
}

/// ` (did you mean `x`?)` when a known name is close to `word`.
fn nearest<'a>(word: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    did_you_mean(word, known).map(|m| format!(" (did you mean `{m}`?)")).unwrap_or_default()
}

/// Why LoadGen would not read `given` as the user meant, if it would not. Tokens that are no
/// number at all are LoadGen's own refusals, reported from its grammar.
fn bad_value(value: Value, given: &str) -> Option<String> {
    let whole = given.parse::<u64>().ok().filter(|_| given == "0" || !given.starts_with('0'));
    let real = given.parse::<f64>().ok().filter(|v| v.is_finite());
    real?;
    match value {
        Value::Count => whole.is_none().then(|| "a whole number of at least 0 in decimal (LoadGen reads it with strtoull: `0.5` is 0, `-1` is 2^64 - 1, `010` is 8)".to_string()),
        Value::Flag => (!matches!(whole, Some(0 | 1))).then(|| "0 or 1".to_string()),
        Value::Mode => (!matches!(whole, Some(0..=3))).then(|| "0 (SubmissionRun), 1 (AccuracyOnly), 2 (PerformanceOnly) or 3 (FindPeakPerformance)".to_string()),
        Value::Positive => real.filter(|v| *v > 0.0).is_none().then(|| "a number above 0".to_string()),
        Value::Percentile => real.filter(|v| *v > 0.0 && *v <= 100.0).is_none().then(|| "a percentile above 0 and at most 100".to_string()),
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.problem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MODELS: [&str; 3] = ["resnet50", "bert-99", "llama2-70b-interactive"];

    fn problems(text: &str) -> Vec<String> {
        check(text, &MODELS, &["resnet50"]).0.iter().map(ToString::to_string).collect()
    }

    #[test]
    fn loadgens_own_refusals_keep_their_line() {
        let found = problems("# mine\n*.Offline.target_qps = fast\nresnet50.Offline.min_duration : 5\n");
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("line 2: `*.Offline.target_qps = fast`: LoadGen refuses it (value needs to be integer or double)"), "{found:?}");
        assert!(found[1].starts_with("line 3:") && found[1].contains("expected 'key=value'"), "{found:?}");
    }

    #[test]
    fn unknown_names_are_named_with_the_nearest_known_one() {
        let found = problems("resnet50.Offline.target_qpz = 10\nresnet50.Offlne.target_qps = 10\nresnet5.Offline.target_qps = 10\n");
        assert_eq!(found.len(), 3, "{found:?}");
        assert!(found[0].contains("unknown key `target_qpz` (did you mean `target_qps`?)"), "{found:?}");
        assert!(found[1].contains("unknown scenario `Offlne` (did you mean `Offline`?)"), "{found:?}");
        assert!(found[2].contains("unknown LoadGen model `resnet5` (did you mean `resnet50`?)"), "{found:?}");
    }

    #[test]
    fn lines_loadgen_would_ignore_or_misread_are_findings() {
        let found = problems("*.*.qsl_rng_seed = 1\nresnet50.SingleStream.target_qps = 5\n*.*.min_duration = 0.5\n*.Server.coalesce_queries = 2\nmin_duration=5\n*.*.mode = 7\n");
        let expect = [
            "line 1: LoadGen reads `qsl_rng_seed` only from its own mlperf.conf",
            "line 2: LoadGen reads `target_qps` only for Server, Offline, not SingleStream",
            "line 3: `min_duration = 0.5`: a whole number",
            "line 4: `coalesce_queries = 2`: 0 or 1",
            "line 5: `min_duration=5` has no ` = value`",
            "line 6: `mode = 7`: 0 (SubmissionRun)",
        ];
        assert_eq!(found.len(), expect.len(), "{found:?}");
        for (f, e) in found.iter().zip(expect) {
            assert!(f.starts_with(e), "{f} should start with {e}");
        }
    }

    #[test]
    fn a_good_file_passes_and_a_model_no_run_uses_is_only_noted() {
        let text = "# a comment\n*.SingleStream.min_query_count = 77\nresnet50.Offline.target_qps = 1200.5 # note\n\nbert-99.Server.target_latency = 130\n*.*.performance_sample_count_override = 0x400\n";
        let (findings, unused) = check(text, &MODELS, &["resnet50"]);
        // `# note` after a value is a value to LoadGen: its grammar refuses line 3 (and reads hex).
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].problem.contains("LoadGen refuses it") && findings[0].line == 3, "{findings:?}");
        assert_eq!(unused, [(5, "bert-99")]);
        assert!(problems("*.Server.target_latency = 0.5\n")[0].contains("a whole number"), "Server's target_latency is whole ms");
        let clean = "# a comment\n*.SingleStream.min_query_count = 77\nresnet50.Offline.target_qps = 1200.5\n*.Server.target_latency_percentile = 99.9\n";
        assert_eq!(check(clean, &MODELS, &["resnet50"]).0, []);
    }
}
