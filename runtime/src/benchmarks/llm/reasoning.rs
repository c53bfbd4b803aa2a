//! The exact-match evaluations of the reasoning benchmarks, as their reference scripts score a
//! LoadGen accuracy log (mlcommons/inference b66003e1):
//!
//! - deepseek-r1 (`language/deepseek-r1/eval_accuracy.py`): each sample's first logged answer,
//!   decoded without special tokens; the share of right answers over every sample, and the mean
//!   logged tokens, printed as `{'exact_match': 81.35824977210574, 'tokens_per_sample':
//!   3886.18..., 'num-samples': 4388}`;
//! - gpt-oss-120b (`language/gpt-oss-120b/eval_mlperf_accuracy.py`): every logged answer, decoded
//!   with its harmony markers; per sub-benchmark the right answers divided by that sub-benchmark's
//!   repeats (AIME 25 eight times, GPQA diamond five, LiveCodeBench v6 three), summed over the
//!   unique questions, printed in the script's report ending `'exact_match': 83.131`. TEST07 scores
//!   its audit run the same way.
//!
//! Each row names its sub-benchmark (`dataset`), which picks the grader as the scripts'
//! `get_evaluator` does: the first of gpqa, mmlu_pro, math500, aime, livecodebench (and mmlu for
//! gpt-oss) contained in the lower-cased name. Answers are parsed by [`super::answers`], MATH500
//! graded by [`super::math_grader`], and LiveCodeBench code run by a [`CodeJudge`].

use super::Reference;
use super::answers::{self, Choices};
pub use super::error::EvalError;
use super::math_grader;
use crate::accuracy::Scored;
use crate::accuracy::log::AccuracyEntry;
use crate::accuracy::python_float_repr;
use crate::engines::serving::tokenizer::TokenizerError;
use std::collections::{BTreeMap, HashSet};

/// One dataset row as the evaluations read it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    /// The `dataset` column: which sub-benchmark the row belongs to.
    pub subset: Option<String>,
    /// The `ground_truth` column: a choice letter, a number, a MATH answer, or for LiveCodeBench
    /// the problem's `question_id`.
    pub ground_truth: Option<String>,
}

/// A sub-benchmark's grader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Grader {
    Gpqa,
    MmluPro,
    Math500,
    Aime,
    LiveCodeBench,
    Mmlu,
}

impl Grader {
    /// `get_evaluator(name)`: the first key contained in the lower-cased name.
    pub fn of(subset: &str, reference: Reference) -> Option<Grader> {
        let keys: &[(&str, Grader)] = &[
            ("gpqa", Grader::Gpqa),
            ("mmlu_pro", Grader::MmluPro),
            ("math500", Grader::Math500),
            ("aime", Grader::Aime),
            ("livecodebench", Grader::LiveCodeBench),
            ("mmlu", Grader::Mmlu),
        ];
        let keys = if reference == Reference::DeepSeekR1 { &keys[..5] } else { keys };
        keys.iter().find(|(key, _)| subset.contains(key)).map(|(_, g)| *g)
    }
}

/// Runs extracted code against a LiveCodeBench problem's tests.
pub trait CodeJudge {
    /// Whether each `(question_id, code)` passes every test of its problem, in order.
    fn judge(&self, work: &[(String, String)]) -> Result<Vec<bool>, EvalError>;
}

/// The shortest answer `question`'s grader counts right, for a stand-in playing a perfect model:
/// `Answer: X` for multiple choice, `\boxed{N}` for AIME and MATH500; none for LiveCodeBench (a
/// program, not a text) or a question without a sub-benchmark or ground truth.
pub fn right_answer(question: &Question) -> Option<String> {
    let truth = question.ground_truth.as_deref()?;
    // Both evaluations pick the same grader for every sub-benchmark name but `mmlu`.
    match Grader::of(&question.subset.as_deref()?.to_lowercase(), Reference::GptOss120b)? {
        Grader::Gpqa | Grader::MmluPro | Grader::Mmlu => Some(format!("Answer: {truth}")),
        Grader::Aime | Grader::Math500 => Some(format!("\\boxed{{{truth}}}")),
        Grader::LiveCodeBench => None,
    }
}

/// One graded answer.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Graded {
    subset: String,
    correct: bool,
    tokens: usize,
}

/// The graded log.
#[derive(Debug, Clone, PartialEq)]
pub struct Evaluation {
    pub reference: Reference,
    /// Rows scored (deepseek-r1: each sample once; gpt-oss: every logged answer).
    pub samples: usize,
    pub correct: usize,
    pub tokens: usize,
    /// Per sub-benchmark (lower-cased name, sorted): right answers and answers.
    pub per_subset: BTreeMap<String, (usize, usize)>,
}

/// gpt-oss's `DATASET_REPEATS`: how many times the accuracy set repeats each question.
fn repeats(subset: &str) -> usize {
    match subset {
        "aime25" => 8,
        "gpqa_diamond" => 5,
        "livecodebench_v6" => 3,
        _ => 1,
    }
}

/// Decodes an answer's token ids to the text the reference grades.
pub type Decode<'a> = dyn Fn(&[i32]) -> Result<String, TokenizerError> + 'a;

/// Scores `entries` (the accuracy log, in file order) against `questions` (the dataset, by sample
/// index). Errors name the log's sample; an answer whose bytes are not whole int32 ids, a row
/// without a sub-benchmark and a sub-benchmark no grader knows stop the evaluation, as they stop
/// the reference scripts.
pub fn evaluate(reference: Reference, entries: Vec<AccuracyEntry>, questions: &[Question], decode: &Decode, judge: &dyn CodeJudge) -> Result<Evaluation, EvalError> {
    let mut seen = HashSet::new();
    let mut graded: Vec<Graded> = Vec::new();
    // LiveCodeBench answers, judged in one batch: their rows in `graded`, and (question id, code).
    let (mut code_rows, mut code_work): (Vec<usize>, Vec<(String, String)>) = (Vec::new(), Vec::new());
    for entry in entries {
        // deepseek-r1 keeps each sample's first answer; gpt-oss grades every one.
        if reference == Reference::DeepSeekR1 && !seen.insert(entry.qsl_idx) {
            continue;
        }
        let sample = entry.qsl_idx;
        // Both scripts skip (with a warning) an answer past the dataset.
        let Some(question) = questions.get(sample) else { continue };
        let ids = entry.int32_ids().map_err(|source| EvalError::Ids { sample, source })?;
        let text = decode(&ids).map_err(|source| EvalError::Decode { sample, source })?;
        let subset = match &question.subset {
            Some(s) if !s.is_empty() => s.to_lowercase(),
            // pandas' groupby drops a missing name: deepseek-r1 counts the row, never right.
            None if reference == Reference::DeepSeekR1 => {
                graded.push(Graded { subset: String::new(), correct: false, tokens: ids.len() });
                continue;
            }
            _ => return Err(EvalError::NoSubset { sample }),
        };
        let grader = Grader::of(&subset, reference).ok_or_else(|| EvalError::NoGrader { sample, subset: subset.clone(), reference })?;
        let truth = question.ground_truth.as_deref();
        let correct = match grader {
            Grader::LiveCodeBench => {
                let code = match reference {
                    Reference::DeepSeekR1 => answers::deepseek_code(&text),
                    Reference::GptOss120b => answers::gpt_oss_code(&text),
                };
                if let (Some(code), Some(id)) = (code, truth)
                    && !code.is_empty()
                    && !id.is_empty()
                {
                    code_rows.push(graded.len());
                    code_work.push((id.to_string(), code));
                }
                false
            }
            _ => truth.is_some_and(|truth| grade(reference, grader, &text, truth)),
        };
        graded.push(Graded { subset, correct, tokens: ids.len() });
    }
    if !code_work.is_empty() {
        for (row, passed) in code_rows.into_iter().zip(judge.judge(&code_work)?) {
            graded[row].correct = passed;
        }
    }
    let mut per_subset = BTreeMap::new();
    for g in graded.iter().filter(|g| !g.subset.is_empty()) {
        let (right, all) = per_subset.entry(g.subset.clone()).or_insert((0, 0));
        *right += usize::from(g.correct);
        *all += 1;
    }
    Ok(Evaluation { reference, samples: graded.len(), correct: graded.iter().filter(|g| g.correct).count(), tokens: graded.iter().map(|g| g.tokens).sum(), per_subset })
}

/// One answer, right or wrong, by its sub-benchmark's rules.
fn grade(reference: Reference, grader: Grader, text: &str, truth: &str) -> bool {
    let choice = |choices: Choices| {
        let parsed = match reference {
            Reference::DeepSeekR1 => answers::deepseek_choice(text, choices),
            Reference::GptOss120b => answers::gpt_oss_choice(text, choices),
        };
        answers::choice_is_correct(parsed, truth, choices)
    };
    match grader {
        Grader::Gpqa => choice(Choices::UpToD),
        Grader::MmluPro | Grader::Mmlu => choice(Choices::UpToJ),
        Grader::Aime => answers::aime_is_correct(answers::aime_answer(text), truth),
        Grader::Math500 => answers::boxed_math(text).is_some_and(|given| !given.is_empty() && !truth.is_empty() && math_grader::grade_answer(given, truth)),
        Grader::LiveCodeBench => unreachable!("code is judged in one batch"),
    }
}

impl Evaluation {
    /// deepseek-r1: `100 * right / samples`; gpt-oss: the repeat-weighted score.
    pub fn exact_match(&self) -> f64 {
        match self.reference {
            Reference::DeepSeekR1 => ratio(100 * self.correct, self.samples),
            Reference::GptOss120b => {
                let (score, max) = self.weighted();
                if max == 0.0 { 0.0 } else { score / max * 100.0 }
            }
        }
    }

    pub fn tokens_per_sample(&self) -> f64 {
        ratio(self.tokens, self.samples)
    }

    /// gpt-oss's final score and its maximum, summed in sorted sub-benchmark order.
    fn weighted(&self) -> (f64, f64) {
        self.per_subset.iter().fold((0.0, 0.0), |(score, max), (name, (right, all))| {
            let r = repeats(name) as f64;
            (score + *right as f64 / r, max + *all as f64 / r)
        })
    }

    /// `accuracy.txt`: what the reference script prints, and the metrics the checker reads.
    pub fn scored(&self) -> Scored {
        let (exact_match, tokens) = (self.exact_match(), self.tokens_per_sample());
        let text = match self.reference {
            Reference::DeepSeekR1 => {
                format!("\nResults\n\n{{'exact_match': {}, 'tokens_per_sample': {}, 'num-samples': {}}}\n", python_float_repr(exact_match), python_float_repr(tokens), self.samples)
            }
            // The report, then the mean output length, which the checker bounds when present (the
            // script prints none).
            Reference::GptOss120b => format!("{}'tokens_per_sample': {}\n", self.gpt_oss_report(), python_float_repr(tokens)),
        };
        let exact_match = match self.reference {
            Reference::DeepSeekR1 => exact_match,
            // What the checker reads back: the report's three decimals.
            Reference::GptOss120b => format!("{exact_match:.3}").parse().expect("a formatted float parses"),
        };
        Scored { text, metrics: vec![("exact_match".into(), exact_match), ("TOKENS_PER_SAMPLE".into(), tokens)] }
    }

    /// `eval_mlperf_accuracy.py`'s printed report.
    fn gpt_oss_report(&self) -> String {
        let rule = "=".repeat(80);
        let thin = "-".repeat(80);
        let mut out = format!("\n{rule}\nMLPerf Accuracy Evaluation Results\n{rule}\n");
        out += &format!("Total samples evaluated: {}\n", self.samples);
        out += &format!("Overall raw accuracy: {:.2}% ({}/{})\n{rule}\n", ratio(100 * self.correct, self.samples), self.correct, self.samples);
        out += &format!("\nPer-Dataset Breakdown:\n{thin}\n{:<25} {:>8} {:>8} {:>8} {:>10} {:>10}\n{thin}\n", "Dataset", "Correct", "Total", "Repeats", "Score", "Accuracy");
        let names: Vec<SubsetRow> = self.per_subset.iter().map(|(n, (right, all))| (n.as_str(), *right, *all, repeats(n))).collect();
        if self.samples > 0 {
            for (name, right, all, r) in &names {
                out += &format!("{name:<25} {right:>8} {all:>8} {r:>8} {:>10.2} {:>9.2}%\n", *right as f64 / *r as f64, *right as f64 / *all as f64 * 100.0);
            }
        }
        let (score, max) = self.weighted();
        let join = |f: &dyn Fn(&SubsetRow) -> String| names.iter().map(f).collect::<Vec<_>>().join(" + ");
        out += &format!("{rule}\n\nFinal Score Calculation:\n{thin}\n");
        out += &format!("Formula: {}\n", join(&|(n, _, _, r)| format!("{n}/{r}")));
        out += &format!("Score:   = {}\n", join(&|(_, right, _, r)| format!("{right}/{r}")));
        out += &format!("         = {}\n", join(&|(_, right, _, r)| format!("{:.2}", *right as f64 / *r as f64)));
        out += &format!("         = {score:.2}\n");
        out += &format!("Max:     = {}\n", join(&|(_, _, all, r)| format!("{all}/{r}")));
        out += &format!("         = {max:.2}\n");
        out += &format!("\nFINAL SCORE: {:.2}% ({score:.2}/{max:.2})\n{rule}\n", self.exact_match());
        out += &format!("\n\nPrinting for submission_checker:\n\n'exact_match': {:.3}\n", self.exact_match());
        out
    }
}

/// A report row: sub-benchmark, right answers, answers, repeats.
type SubsetRow<'a> = (&'a str, usize, usize, usize);

fn ratio(numerator: usize, denominator: usize) -> f64 {
    if denominator == 0 { 0.0 } else { numerator as f64 / denominator as f64 }
}

#[cfg(test)]
#[path = "reasoning_tests.rs"]
mod tests;
