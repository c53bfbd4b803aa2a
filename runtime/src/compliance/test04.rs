//! TEST04 (sample caching), as `compliance/TEST04/verify_performance.py` checks it: the audit run
//! issues one sample over and over, and must not be more than the round's `tolerance_percent`
//! faster than the reference performance run. Both **summary** files are read line by line the
//! way the script does, and the report is its output (`verify_performance.txt`).
//!
//! Quirks kept because they decide PASS / FAIL the same way: SingleStream / MultiStream scores are
//! `1e9 / early-stopping latency estimate` (higher is better), and the relaxed threshold compares
//! that *rate* with the nanosecond limits; Offline / Server scores are printed as the summary
//! spells them; the script's Server target-latency check never matches a LoadGen summary line
//! (its pattern `target_latency (ns)` is a regex group), so it is not applied here either.

use super::{Verification, python_float_repr, threshold};
use mlperf_config::Scenario;
use std::fmt::Write;
use std::path::Path;

/// A score as the script holds it: text from the summary, a computed float, or the initial `0`.
#[derive(Debug, Clone, PartialEq)]
enum Score {
    Missing,
    Text(String),
    Rate(f64),
}

impl Score {
    fn value(&self) -> Option<f64> {
        match self {
            Score::Missing => Some(0.0),
            Score::Text(t) => t.parse().ok(),
            Score::Rate(v) => Some(*v),
        }
    }

    fn shown(&self) -> String {
        match self {
            Score::Missing => "0".into(),
            Score::Text(t) => t.clone(),
            Score::Rate(v) => python_float_repr(*v),
        }
    }
}

/// `re.match(".*<pattern>", line)` for a literal pattern whose `.` matches any character.
fn contains_with_dots(line: &str, pattern: &str) -> bool {
    let (line, pattern): (Vec<char>, Vec<char>) = (line.chars().collect(), pattern.chars().collect());
    line.len() >= pattern.len() && (0..=line.len() - pattern.len()).any(|start| pattern.iter().zip(&line[start..]).all(|(p, c)| *p == '.' || p == c))
}

fn after_colon(line: &str) -> String {
    line.split_once(": ").map_or(String::new(), |(_, v)| v.trim().to_string())
}

struct Summary {
    /// The `Scenario :` line's value (None before it, or for a name LoadGen does not write).
    scenario: Option<Scenario>,
    score: Score,
}

/// One summary file, as the script's loop reads it; `side` is "Reference" / "Test" in its messages.
fn read_summary(path: &Path, side: &str, out: &mut String) -> Result<Summary, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("TEST FAIL: cannot read {}: {e}", path.display()))?;
    let mut summary = Summary { scenario: None, score: Score::Missing };
    for line in text.lines() {
        if line.starts_with("Scenario") {
            summary.scenario = Scenario::from_name(&after_colon(line));
            continue;
        }
        let latency_patterns: &[&str] = match summary.scenario {
            Some(Scenario::SingleStream) => &["Early stopping 90th percentile estimate", "Early stopping 90.0th percentile estimate", "Early stopping 99.9th percentile estimate"],
            Some(Scenario::MultiStream) => &["Early stopping 99th percentile estimate", "Early stopping 99.0th percentile estimate"],
            Some(Scenario::Offline | Scenario::Server | Scenario::Interactive) | None => &[],
        };
        if latency_patterns.iter().any(|p| contains_with_dots(line, p)) {
            let ns: f64 = after_colon(line).parse().map_err(|_| format!("TEST FAIL: unreadable latency in {}: {line}", path.display()))?;
            summary.score = Score::Rate(1e9 / ns);
            continue;
        }
        let rate_prefix = match summary.scenario {
            Some(Scenario::Server) => Some("Completed samples per second"),
            Some(Scenario::Offline) => Some("Samples per second"),
            Some(Scenario::SingleStream | Scenario::MultiStream | Scenario::Interactive) | None => None,
        };
        if rate_prefix.is_some_and(|p| line.starts_with(p)) {
            summary.score = Score::Text(after_colon(line));
            continue;
        }
        if line.starts_with("Result is") && after_colon(line) == "INVALID" {
            return Err(format!("TEST FAIL: {side} results are invalid"));
        }
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && line[digits..].starts_with(" ERROR") {
            let _ = writeln!(out, "WARNING: {} ERROR reported in {} results", &line[..digits], side.to_lowercase());
        }
    }
    Ok(summary)
}

/// `verify_performance.py -r <reference summary> -t <test summary>`; `tolerance_percent` is the
/// round's TEST04 tolerance.
pub fn compare_summaries(reference: &Path, test: &Path, tolerance_percent: f64) -> Verification {
    let mut out = String::from("Verifying performance.\n");
    let summaries = read_summary(reference, "Reference", &mut out).and_then(|r| Ok((r, read_summary(test, "Test", &mut out)?)));
    let (r, t) = match summaries {
        Ok(pair) => pair,
        Err(line) => {
            out.push_str(&line);
            out.push('\n');
            return Verification::text(false, out, line);
        }
    };
    if r.scenario != t.scenario {
        let line = "Test and reference scenarios do not match!".to_string();
        out.push_str(&line);
        out.push('\n');
        return Verification::text(false, out, line);
    }
    let _ = writeln!(out, "reference score = {}", r.score.shown());
    let _ = writeln!(out, "test score = {}", t.score.shown());
    let (Some(ref_value), Some(test_value)) = (r.score.value(), t.score.value()) else {
        out.push_str("TEST FAIL: unreadable score\n");
        return Verification::text(false, out, "unreadable score".into());
    };
    let threshold = r.scenario.map_or(tolerance_percent / 100.0, |scenario| threshold(scenario, ref_value, tolerance_percent / 100.0));
    let passed = test_value < ref_value * (1.0 + threshold);
    out.push_str(if passed { "TEST PASS\n" } else { "TEST FAIL: Test score invalid\n" });
    let summary = format!("score {} vs reference {} (< +{:.0} %)", t.score.shown(), r.score.shown(), threshold * 100.0);
    Verification::text(passed, out, summary)
}

#[cfg(test)]
#[path = "test04_tests.rs"]
mod tests;
