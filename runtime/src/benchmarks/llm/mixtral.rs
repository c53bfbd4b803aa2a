//! mixtral-8x7b's evaluation (`language/mixtral-8x7b/evaluate-accuracy.py` and
//! `evaluate_mbxp.py`, mlcommons/inference b66003e1). Its dataset mixes three tasks, told apart
//! by each row's `dataset`:
//!
//! - OpenOrca: ROUGE-1/2/L/Lsum as llama2-70b's evaluation computes them
//!   ([`super::summarization::score`]), each mean times 100 rounded to four places; `gen_len`
//!   counts the characters of these answers only (absent OpenOrca answers, no ROUGE keys at all);
//! - GSM8K: the answer before its first `"\nQ:"`, the first number after its last
//!   `The answer is` (else its last number, `-?[\d,]*\.?\d+`), commas removed, equal as Python
//!   floats to the ground truth: right answers over GSM8K answers, times 100;
//! - MBXP (any other `dataset`): the answer run against the problem's tests ([`super::mbxp`]),
//!   passed over run answers, times 100; `0` when the log holds no MBXP answer.
//!
//! Each sample's first logged answer is scored and its tokens counted (`gen_tok_len`), but
//! `gen_num` counts every logged answer, repeats too, so `tokens_per_sample` =
//! `round(gen_tok_len / gen_num, 1)` as the script computes it. `accuracy.txt` is what the script
//! prints: MBXP's three lines (`Processed N in Xs`, the pass rate, passes and counts per language),
//! then `Results` and the dict: `{'rouge1': 45.5989, 'rouge2': 23.3526, 'rougeL': 30.4608,
//! 'rougeLsum': 42.5346, 'gsm8k': 73.66, 'mbxp': 60.16, 'gen_len': ..., 'gen_num': 15000,
//! 'gen_tok_len': ..., 'tokens_per_sample': 144.8}`.

use super::answers::python_float;
use super::error::EvalError;
use super::mbxp::{self, Language, Mbxp};
use super::summarization::{self, Answer, SummarizationScore};
use crate::accuracy::Scored;
use crate::accuracy::log::{self, AccuracyEntry};
use crate::accuracy::punkt::Punkt;
use crate::accuracy::python_float_repr;
use crate::engines::serving::tokenizer::TokenizerError;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

/// One dataset row as the evaluation reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Task {
    /// `dataset == "OpenOrca"`: the reference answer (`gt_output`).
    OpenOrca { reference: String },
    /// `dataset == "GSM8K"`: the final answer (`gt_output`).
    Gsm8k { answer: String },
    /// Any other `dataset`: MBXP, its language and entry point from the row's `id`
    /// (`<language>_<entry point>`), its test code (`gt_output`).
    Mbxp { language: String, entry_point: String, test_code: String },
}

/// The scored log.
#[derive(Debug, Clone, PartialEq)]
pub struct MixtralScore {
    /// ROUGE over the OpenOrca answers, none when there were none.
    pub rouge: Option<SummarizationScore>,
    pub gsm8k: f64,
    pub mbxp: Option<MbxpScore>,
    /// Every logged answer, repeats included.
    pub gen_num: usize,
    /// Tokens of each sample's first answer.
    pub gen_tok_len: usize,
}

/// MBXP's part: passes over the answers in a counted language, and per language (in order of
/// first appearance) passes and answers.
#[derive(Debug, Clone, PartialEq)]
pub struct MbxpScore {
    pub passed: usize,
    pub run: usize,
    pub per_language: Vec<(Language, usize, usize)>,
    pub elapsed: Duration,
}

/// Decodes an answer's token ids without special tokens.
pub type Decode<'a> = dyn Fn(&[i32]) -> Result<String, TokenizerError> + 'a;

/// Scores `entries` (the accuracy log, in file order) against `tasks` (the dataset, by sample
/// index). Errors name the sample, and stop where the script stops: a sample past the dataset,
/// no GSM8K answer, or MBXP answers none of which is in a language it runs.
pub fn evaluate(entries: Vec<AccuracyEntry>, tasks: &[Task], decode: &Decode, punkt: &Punkt, judge: &Mbxp) -> Result<MixtralScore, EvalError> {
    let (answers, gen_num) = log::first_answers(entries, tasks).map_err(EvalError::Log)?;
    let gen_tok_len = answers.iter().map(|a| a.ids.len()).sum();
    let mut open_orca: Vec<(Answer, &str)> = Vec::new();
    let mut gsm8k: Vec<(String, &str)> = Vec::new();
    let (mut mbxp_answers, mut mbxp_tasks) = (0, Vec::new());
    for answer in answers {
        let text = decode(&answer.ids).map_err(|source| EvalError::Decode { sample: answer.qsl_idx, source })?;
        match answer.row {
            Task::OpenOrca { reference } => open_orca.push((Answer { tokens: answer.ids.len(), text }, reference)),
            Task::Gsm8k { answer } => gsm8k.push((text, answer)),
            Task::Mbxp { language, entry_point, test_code } => {
                mbxp_answers += 1;
                if let Some(language) = Language::of(language) {
                    mbxp_tasks.push(mbxp::Task { language, entry_point: entry_point.clone(), test_code: test_code.clone(), response: text });
                }
            }
        }
    }
    if gsm8k.is_empty() {
        return Err(EvalError::NoGsm8k);
    }
    let right = gsm8k.iter().filter(|(text, truth)| gsm8k_is_correct(text, truth)).count();
    let mbxp = match (mbxp_answers, mbxp_tasks.is_empty()) {
        (0, _) => None,
        (count, true) => return Err(EvalError::MbxpLanguages { count }),
        (_, false) => Some(judge_mbxp(judge, &mbxp_tasks)?),
    };
    Ok(MixtralScore {
        rouge: (!open_orca.is_empty()).then(|| summarization::score(punkt, &open_orca)),
        gsm8k: 100.0 * right as f64 / gsm8k.len() as f64,
        mbxp,
        gen_num,
        gen_tok_len,
    })
}

fn judge_mbxp(judge: &Mbxp, tasks: &[mbxp::Task]) -> Result<MbxpScore, EvalError> {
    let start = Instant::now();
    let verdicts = judge.judge(tasks)?;
    let mut per_language: Vec<(Language, usize, usize)> = Vec::new();
    for (task, &passed) in tasks.iter().zip(&verdicts) {
        let at = match per_language.iter().position(|(l, _, _)| *l == task.language) {
            Some(at) => at,
            None => {
                per_language.push((task.language, 0, 0));
                per_language.len() - 1
            }
        };
        per_language[at].1 += usize::from(passed);
        per_language[at].2 += 1;
    }
    Ok(MbxpScore { passed: verdicts.iter().filter(|&&p| p).count(), run: tasks.len(), per_language, elapsed: start.elapsed() })
}

/// An answer the evaluation counts right, for a stand-in playing a perfect model: OpenOrca's
/// reference, `The answer is N.` for GSM8K; none for MBXP (a program, not a text).
pub fn right_answer(task: &Task) -> Option<String> {
    match task {
        Task::OpenOrca { reference } => Some(reference.clone()),
        Task::Gsm8k { answer } => Some(format!("The answer is {answer}.")),
        Task::Mbxp { .. } => None,
    }
}

/// `find_number(text.split("\nQ:")[0])` with commas removed, equal as floats to `truth`.
pub fn gsm8k_is_correct(text: &str, truth: &str) -> bool {
    let answer = text.split("\nQ:").next().unwrap_or_default();
    match (python_float(truth), python_float(&find_number(answer).replace(',', ""))) {
        (Some(truth), Some(answer)) => truth == answer,
        _ => false,
    }
}

/// `find_number`: the first number after the last `The answer is`, else the last number.
pub fn find_number(text: &str) -> String {
    const DELIMITER: &str = "The answer is";
    static NUMBER: LazyLock<fancy_regex::Regex> = LazyLock::new(|| fancy_regex::Regex::new(r"-?[\d,]*\.?\d+").unwrap());
    let numbers = |t: &str| -> Vec<String> { NUMBER.find_iter(t).filter_map(Result::ok).map(|m| m.as_str().to_string()).collect() };
    if let Some(at) = text.rfind(DELIMITER)
        && let Some(first) = numbers(&text[at + DELIMITER.len()..]).into_iter().next()
    {
        return first;
    }
    numbers(text).pop().unwrap_or_default()
}

impl MixtralScore {
    pub fn tokens_per_sample(&self) -> f64 {
        summarization::python_round(self.gen_tok_len as f64 / self.gen_num.max(1) as f64, 1)
    }

    /// The result dict as the script prints it.
    pub fn result_line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(r) = &self.rouge {
            for (key, value) in [("rouge1", r.rouge1), ("rouge2", r.rouge2), ("rougeL", r.rouge_l), ("rougeLsum", r.rouge_lsum)] {
                parts.push(format!("'{key}': {}", python_float_repr(value)));
            }
        }
        parts.push(format!("'gsm8k': {}", python_float_repr(self.gsm8k)));
        parts.push(format!("'mbxp': {}", self.mbxp.as_ref().map_or("0".into(), |m| python_float_repr(m.rate()))));
        parts.push(format!("'gen_len': {}", self.rouge.as_ref().map_or(0, |r| r.gen_len)));
        parts.push(format!("'gen_num': {}", self.gen_num));
        parts.push(format!("'gen_tok_len': {}", self.gen_tok_len));
        parts.push(format!("'tokens_per_sample': {}", python_float_repr(self.tokens_per_sample())));
        format!("{{{}}}", parts.join(", "))
    }

    /// What the script prints: MBXP's lines, then the results.
    pub fn accuracy_txt(&self) -> String {
        let mut out = String::new();
        if let Some(m) = &self.mbxp {
            let dict = |f: fn(&(Language, usize, usize)) -> usize| {
                let items: Vec<String> = m.per_language.iter().map(|e| format!("'{}': {}", e.0.tag(), f(e))).collect();
                format!("{{{}}}", items.join(", "))
            };
            out += &format!("Processed {} in {}s\n {:.2}% pass@1\n{} {}\n", m.run, python_float_repr(m.elapsed.as_secs_f64()), m.rate(), dict(|e| e.1), dict(|e| e.2));
        }
        out + &format!("\nResults\n\n{}\n", self.result_line())
    }

    /// The text and each metric under the checker's pattern name.
    pub fn scored(&self) -> Scored {
        let mut metrics = Vec::new();
        if let Some(r) = &self.rouge {
            metrics.extend([("ROUGE1".to_string(), r.rouge1), ("ROUGE2".to_string(), r.rouge2), ("ROUGEL".to_string(), r.rouge_l)]);
        }
        metrics.push(("TOKENS_PER_SAMPLE".to_string(), self.tokens_per_sample()));
        metrics.push(("gsm8k_accuracy".to_string(), self.gsm8k));
        metrics.push(("mbxp_accuracy".to_string(), self.mbxp.as_ref().map_or(0.0, MbxpScore::rate)));
        Scored { text: self.accuracy_txt(), metrics }
    }
}

impl MbxpScore {
    /// `100 * n_passed / n_problems`.
    pub fn rate(&self) -> f64 {
        100.0 * self.passed as f64 / self.run as f64
    }
}

#[cfg(test)]
#[path = "mixtral_tests.rs"]
mod tests;
