//! TEST07 (accuracy in performance mode, gpt-oss-120b), as `compliance/TEST07/run_verification.py`
//! checks the audit run: the benchmark's accuracy evaluation scores the run's accuracy log (every
//! sample of the compliance set is logged) and the run passes when the first `'exact_match':`
//! score of its output reaches the audit.config's `test07_accuracy_threshold`. The report is
//! `verify_accuracy.txt` as the script writes it: the evaluation's output, then its summary.

use super::Verification;
use crate::accuracy::Scored;
use crate::accuracy::python_float_repr;
use regex_automata::meta::Regex;

/// The script's default `--score-pattern`.
const SCORE_PATTERN: &str = r"'exact_match':\s*([\d.]+)";

/// Verifies the evaluation's output `scored` against `threshold`.
pub fn verify(scored: &Scored, threshold: f64) -> Verification {
    let score = first_score(&scored.text);
    let rule = "=".repeat(80);
    let mut report = scored.text.clone();
    report.push_str(&format!("\n{rule}\nTEST07 Verification Summary\n{rule}\n"));
    let passed = score.is_some_and(|s| s >= threshold);
    let summary = match score {
        Some(score) => {
            let (score, threshold) = (python_float_repr(score), python_float_repr(threshold));
            let verdict = if passed { "PASS" } else { "FAIL" };
            report.push_str(&format!("Accuracy score: {score}\nAccuracy threshold: {threshold}\nAccuracy check pass: {}\nTEST {verdict}\n", if passed { "True" } else { "False" }));
            format!("exact_match {score} (threshold {threshold})")
        }
        None => {
            report.push_str("Error: Could not parse accuracy score\nTEST FAIL\n");
            format!("no score matching {SCORE_PATTERN} in the evaluation's output")
        }
    };
    Verification::text(passed, report, summary)
}

/// `float(re.search(score_pattern, output).group(1))`.
fn first_score(output: &str) -> Option<f64> {
    let re = Regex::new(SCORE_PATTERN).expect("score pattern compiles");
    let mut caps = re.create_captures();
    re.captures(output, &mut caps);
    caps.get_group(1).and_then(|m| output[m.range()].parse().ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scored(text: &str) -> Scored {
        Scored { text: text.into(), metrics: vec![] }
    }

    #[test]
    fn the_first_score_at_or_above_the_threshold_passes() {
        let v = verify(&scored("...\n'exact_match': 60.707\n'tokens_per_sample': 9.0\n"), 60.698);
        assert!(v.passed);
        let summary =
            format!("\n{0}\nTEST07 Verification Summary\n{0}\nAccuracy score: 60.707\nAccuracy threshold: 60.698\nAccuracy check pass: True\nTEST PASS\n", "=".repeat(80));
        assert_eq!(v.report, format!("...\n'exact_match': 60.707\n'tokens_per_sample': 9.0\n{summary}"));
        let v = verify(&scored("'exact_match': 60.606\n'exact_match': 99.0\n"), 60.698);
        assert!(!v.passed && v.report.ends_with("Accuracy score: 60.606\nAccuracy threshold: 60.698\nAccuracy check pass: False\nTEST FAIL\n"), "{}", v.report);
        assert!(verify(&scored("'exact_match': 61.0"), 61.0).report.contains("Accuracy score: 61.0\n"), "Python prints whole floats with .0");
    }

    #[test]
    fn output_without_a_score_fails() {
        let v = verify(&scored("Traceback ...\n"), 60.698);
        assert!(!v.passed && v.report.ends_with("Error: Could not parse accuracy score\nTEST FAIL\n"), "{}", v.report);
    }
}
