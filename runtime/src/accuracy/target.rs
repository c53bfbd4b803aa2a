//! `accuracy.txt` against the round's targets, read as the submission checker reads it: each
//! metric's `ACC_PATTERN` (a Python regex) matched from the start of each line, its first group a
//! number that must reach the target (and stay under an upper limit). The run's verdict
//! (`rundir::report`) and the checker's accuracy rule both judge through [`misses`].

use mlperf_config::{AccuracyRequirement, BenchmarkRound, Round};
use regex_automata::meta::{BuildError, Regex};
use regex_automata::{Anchored, Input};

/// A Python `re` pattern as a regex: a `{` that opens no `{m}`, `{m,}` or `{m,n}` is a literal in
/// Python (e.g. the checker's F1 pattern `^{...`) but an error here, so it is escaped.
pub fn python_regex(pattern: &str) -> Result<Regex, Box<BuildError>> {
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
pub fn first_group<'l>(re: &Regex, line: &'l str) -> Option<&'l str> {
    let mut caps = re.create_captures();
    re.search_captures(&Input::new(line).anchored(Anchored::Yes), &mut caps);
    caps.get_group(1).map(|span| &line[span])
}

/// One way an `accuracy.txt` misses a requirement.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Miss {
    /// The round names no pattern for the metric (round data incomplete).
    NoPattern {
        metric: String,
        round: String,
    },
    /// The round's pattern does not compile (round data broken).
    BadPattern {
        metric: String,
        error: String,
    },
    NoLine {
        metric: String,
        pattern: String,
    },
    NotANumber {
        metric: String,
        value: String,
    },
    /// Under the target; `length` when the metric has a range (tokens per sample).
    Below {
        metric: String,
        value: f64,
        target: f64,
        length: bool,
    },
    Above {
        metric: String,
        value: f64,
        upper: f64,
    },
}

impl Miss {
    /// The metric it concerns.
    pub fn metric(&self) -> &str {
        match self {
            Miss::NoPattern { metric, .. }
            | Miss::BadPattern { metric, .. }
            | Miss::NoLine { metric, .. }
            | Miss::NotANumber { metric, .. }
            | Miss::Below { metric, .. }
            | Miss::Above { metric, .. } => metric,
        }
    }

    /// A fault of the round's data rather than of the run.
    pub fn is_round_data(&self) -> bool {
        matches!(self, Miss::NoPattern { .. } | Miss::BadPattern { .. })
    }

    /// What to do about it.
    pub fn advice(&self) -> &'static str {
        const LENGTH: &str = "check the generation settings (the output limit max_tokens, stop tokens, answers cut short or run on) and rerun the accuracy run";
        match self {
            Miss::NoPattern { .. } => "report this: the round data is incomplete",
            Miss::BadPattern { .. } => "report this: the round data is broken",
            Miss::NoLine { .. } => "write accuracy.txt with the official accuracy script's output (mlperf scores AccuracyOnly runs this way)",
            Miss::NotANumber { .. } => "rescore the accuracy log",
            // A metric with a range is a length (tokens per sample): answers cut short, not wrong.
            Miss::Below { length: true, .. } | Miss::Above { .. } => LENGTH,
            Miss::Below { length: false, .. } => "fix the engine's accuracy (precision, calibration) and rerun the accuracy run",
        }
    }
}

impl std::fmt::Display for Miss {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            Miss::NoPattern { metric, round } => write!(f, "round {round} has no accuracy pattern for metric {metric}"),
            Miss::BadPattern { metric, error } => write!(f, "the round's pattern for {metric} does not compile: {error}"),
            Miss::NoLine { metric, pattern } => write!(f, "no line matches the checker's {metric} pattern `{pattern}`"),
            Miss::NotANumber { metric, value } => write!(f, "{metric} value `{value}` is not a number"),
            Miss::Below { metric, value, target, .. } => write!(f, "{metric} is {value}, below the target {target}"),
            Miss::Above { metric, value, upper } => write!(f, "{metric} is {value}, above the upper limit {upper}"),
        }
    }
}

/// A benchmark's requirements for `checker_model` (`bert-99`, `llama3.1-8b`, ...).
pub fn requirements<'r>(bench: &'r BenchmarkRound, checker_model: &str) -> Vec<&'r AccuracyRequirement> {
    bench.accuracy.iter().filter(|a| a.checker_model == checker_model).collect()
}

/// Every requirement `text` misses, in the requirements' order (empty: it meets them all).
pub fn misses(text: &str, requirements: &[&AccuracyRequirement], round: &Round) -> Vec<Miss> {
    let lines: Vec<&str> = text.lines().collect();
    let mut found = Vec::new();
    for req in requirements {
        let metric = req.metric.to_string();
        let Some(pattern) = round.accuracy_patterns.get(&req.metric) else {
            found.push(Miss::NoPattern { metric, round: round.id.to_string() });
            continue;
        };
        let re = match python_regex(pattern) {
            Ok(re) => re,
            Err(e) => {
                found.push(Miss::BadPattern { metric, error: e.to_string() });
                continue;
            }
        };
        let values: Vec<&str> = lines.iter().filter_map(|l| first_group(&re, l)).collect();
        if values.is_empty() {
            found.push(Miss::NoLine { metric: metric.clone(), pattern: pattern.to_string() });
        }
        for value in values {
            let Ok(number) = value.parse::<f64>() else {
                found.push(Miss::NotANumber { metric: metric.clone(), value: value.to_string() });
                continue;
            };
            if number < req.target {
                found.push(Miss::Below { metric: metric.clone(), value: number, target: req.target, length: req.upper.is_some() });
            }
            if let Some(upper) = req.upper.filter(|u| number > *u) {
                found.push(Miss::Above { metric: metric.clone(), value: number, upper });
            }
        }
    }
    found
}
