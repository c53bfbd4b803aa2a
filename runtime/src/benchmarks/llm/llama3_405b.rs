//! llama3.1-405b's evaluation (`language/llama3.1-405b/evaluate-accuracy.py`, mlcommons/inference
//! b66003e1). Each row names its metric (`metric`), applied to the sample's first logged answer
//! and the row's `gt_output`, both stripped and put one sentence per line first:
//!
//! - `rouge`: ROUGE-L F-measure times 100 ([`crate::accuracy::rouge`]);
//! - `niah_em` (RULER's needle in a haystack): the answer's UUIDs paired in order with the
//!   label's; for each pair the share of the label UUID's characters found in the answer's, the
//!   shares summed, divided by the answer's UUID count, times 100, rounded to two places (no UUID
//!   in the answer: 0);
//! - `qa_em`: the text after the answer's last `Answer: ` (or the whole answer) is right when it
//!   is contained in the label, or when, white space removed and lower-cased, it contains one of
//!   the label's `|`-separated alternatives: 100 or 0.
//!
//! The rows' scores land in the columns `rougeL` and `exact_match`, each averaged over the rows
//! that have it as pandas' `describe()` does, and printed in the order the columns first appear:
//! `{'rougeL': 21.67, 'exact_match': 89.44, 'gen_len': ..., 'gen_num': 8313, 'gen_tok_len': ...,
//! 'tokens_per_sample': 616.2}` (`gen_len`: characters of the processed answers; `gen_num`:
//! samples scored). The script's environment pins vLLM 0.6.3 and so NumPy 1, which prints
//! `gen_len` as a plain integer.

use super::error::EvalError;
use super::summarization::{one_sentence_per_line, pairwise_sum, python_round};
use crate::accuracy::Scored;
use crate::accuracy::log::{self, AccuracyEntry};
use crate::accuracy::punkt::{Punkt, py_space};
use crate::accuracy::python_float_repr;
use crate::accuracy::rouge::RougeScorer;
use crate::engines::serving::tokenizer::TokenizerError;
use std::sync::LazyLock;

/// A row's metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    Rouge,
    NiahEm,
    QaEm,
}

impl Metric {
    /// The `metric` column's value.
    pub fn of(name: &str) -> Option<Metric> {
        Some(match name {
            "rouge" => Metric::Rouge,
            "niah_em" => Metric::NiahEm,
            "qa_em" => Metric::QaEm,
            _ => return None,
        })
    }

    /// The result column its score lands in.
    fn column(self) -> Column {
        match self {
            Metric::Rouge => Column::RougeL,
            Metric::NiahEm | Metric::QaEm => Column::ExactMatch,
        }
    }
}

/// One dataset row as the evaluation reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub metric: Metric,
    /// `gt_output`.
    pub label: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Column {
    RougeL,
    ExactMatch,
}

impl Column {
    fn key(self) -> &'static str {
        match self {
            Column::RougeL => "rougeL",
            Column::ExactMatch => "exact_match",
        }
    }
}

/// The scored log.
#[derive(Debug, Clone, PartialEq)]
pub struct LongContextScore {
    /// Each column's mean, in the order the columns first appear.
    means: Vec<(Column, f64)>,
    pub gen_len: usize,
    pub gen_num: usize,
    pub gen_tok_len: usize,
}

/// Decodes an answer's token ids without special tokens.
pub type Decode<'a> = dyn Fn(&[i32]) -> Result<String, TokenizerError> + 'a;

/// Scores `entries` (the accuracy log, in file order) against `targets` (the dataset, by sample
/// index); errors name the sample.
pub fn evaluate(entries: Vec<AccuracyEntry>, targets: &[Target], decode: &Decode, punkt: &Punkt) -> Result<LongContextScore, EvalError> {
    let (answers, _) = log::first_answers(entries, targets).map_err(EvalError::Log)?;
    let mut scorer = RougeScorer::new();
    let (mut gen_len, gen_tok_len) = (0, answers.iter().map(|a| a.ids.len()).sum());
    // Each scored row's column and value, in log order.
    let mut rows: Vec<(Column, f64)> = Vec::new();
    for answer in &answers {
        let target = answer.row;
        let prediction = one_sentence_per_line(punkt, &decode(&answer.ids).map_err(|source| EvalError::Decode { sample: answer.qsl_idx, source })?);
        let label = one_sentence_per_line(punkt, &target.label);
        gen_len += prediction.chars().count();
        let value = match target.metric {
            Metric::Rouge => 100.0 * scorer.score(&label, &prediction).rouge_l.fmeasure,
            Metric::NiahEm => niah_em(&label, &prediction),
            Metric::QaEm => qa_em(&label, &prediction),
        };
        rows.push((target.metric.column(), value));
    }
    if rows.is_empty() {
        return Err(EvalError::NoAnswer);
    }
    let mut columns: Vec<Column> = Vec::new();
    for (column, _) in &rows {
        if !columns.contains(column) {
            columns.push(*column);
        }
    }
    // pandas' mean: the column summed with its missing rows as zeros, over the rows it has.
    let means = columns
        .into_iter()
        .map(|column| {
            let values: Vec<f64> = rows.iter().map(|(c, v)| if *c == column { *v } else { 0.0 }).collect();
            (column, pairwise_sum(&values) / rows.iter().filter(|(c, _)| *c == column).count() as f64)
        })
        .collect();
    Ok(LongContextScore { means, gen_len, gen_num: answers.len(), gen_tok_len })
}

/// An answer the evaluation counts right, for a stand-in playing a perfect model: the label
/// itself, or for `qa_em` `Answer: ` and its first alternative.
pub fn right_answer(target: &Target) -> Option<String> {
    Some(match target.metric {
        Metric::Rouge | Metric::NiahEm => target.label.clone(),
        Metric::QaEm => format!("Answer: {}", target.label.split('|').next().unwrap_or_default()),
    })
}

/// RULER's UUID match as the script scores it.
pub fn niah_em(label: &str, prediction: &str) -> f64 {
    static UUID: LazyLock<fancy_regex::Regex> = LazyLock::new(|| fancy_regex::Regex::new(r"[\w]{8}-[\w]{4}-[\w]{4}-[\w]{4}-[\w]{12}").unwrap());
    let uuids = |t: &str| -> Vec<String> { UUID.find_iter(t).filter_map(Result::ok).map(|m| m.as_str().to_string()).collect() };
    let (labels, predictions) = (uuids(label), uuids(prediction));
    if predictions.is_empty() {
        return 0.0;
    }
    let shares: f64 = predictions
        .iter()
        .zip(&labels)
        .map(|(p, l)| {
            let p = p.to_lowercase();
            let found = l.chars().filter(|c| p.contains(&c.to_lowercase().to_string())).count();
            found as f64 / l.chars().count() as f64
        })
        .sum();
    python_round(shares / predictions.len() as f64 * 100.0, 2)
}

/// The question-answering match as the script scores it.
pub fn qa_em(label: &str, prediction: &str) -> f64 {
    const MARK: &str = "Answer: ";
    let answer = prediction.rfind(MARK).map_or(prediction, |at| &prediction[at + MARK.len()..]);
    let squeeze = |t: &str| -> String { t.chars().filter(|&c| !py_space(c)).collect::<String>().to_lowercase() };
    let answer_squeezed = squeeze(answer);
    if label.contains(answer) || label.split('|').any(|alternative| answer_squeezed.contains(&squeeze(alternative))) { 100.0 } else { 0.0 }
}

impl LongContextScore {
    pub fn tokens_per_sample(&self) -> f64 {
        python_round(self.gen_tok_len as f64 / self.gen_num.max(1) as f64, 1)
    }

    /// The result dict as the script prints it.
    pub fn result_line(&self) -> String {
        let mut parts: Vec<String> = self.means.iter().map(|(c, v)| format!("'{}': {}", c.key(), python_float_repr(*v))).collect();
        parts.push(format!("'gen_len': {}", self.gen_len));
        parts.push(format!("'gen_num': {}", self.gen_num));
        parts.push(format!("'gen_tok_len': {}", self.gen_tok_len));
        parts.push(format!("'tokens_per_sample': {}", python_float_repr(self.tokens_per_sample())));
        format!("{{{}}}", parts.join(", "))
    }

    /// The text and each metric under the checker's pattern name.
    pub fn scored(&self) -> Scored {
        let mut metrics: Vec<(String, f64)> = self
            .means
            .iter()
            .map(|(c, v)| {
                let name = match c {
                    Column::RougeL => "ROUGEL",
                    Column::ExactMatch => "exact_match",
                };
                (name.to_string(), *v)
            })
            .collect();
        metrics.push(("TOKENS_PER_SAMPLE".to_string(), self.tokens_per_sample()));
        Scored { text: format!("\nResults\n\n{}\n", self.result_line()), metrics }
    }

    /// The mean of `rougeL` or `exact_match`, when some row scored it.
    pub fn mean(&self, key: &str) -> Option<f64> {
        self.means.iter().find(|(c, _)| c.key() == key).map(|(_, v)| *v)
    }
}

#[cfg(test)]
#[path = "llama3_405b_tests.rs"]
mod tests;
