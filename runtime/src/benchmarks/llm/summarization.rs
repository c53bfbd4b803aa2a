//! The summarisation evaluations of llama2-70b (`evaluate-accuracy.py`) and llama3.1-8b
//! (`evaluation.py`): each sample's first logged answer, decoded without special tokens, and its
//! reference are stripped and put one sentence per line ([`crate::accuracy::punkt`]), scored with
//! ROUGE-1/2/L/Lsum F-measures ([`crate::accuracy::rouge`]), averaged (NumPy's pairwise sum) and printed as
//! the reference prints its result dict:
//!
//! - llama2-70b: `{'rouge1': 44.4465, 'rouge2': 22.0638, 'rougeL': 28.625, 'rougeLsum': 42.0251,
//!   'gen_len': 29614748, 'gen_num': 24576, 'gen_tok_len': 7399575, 'tokens_per_sample': 301.1}`
//! - llama3.1-8b: `{'rouge1': '38.7792', 'rouge2': '15.9075', 'rougeL': '24.4957', 'rougeLsum':
//!   '35.793', 'gen_len': 8167644, 'gen_num': 13368}`
//!
//! `gen_len` counts characters of the processed answers, `gen_tok_len` the logged token ids.

use super::error::EvalError;
use crate::accuracy::log::{self, AccuracyEntry};
use crate::accuracy::punkt::Punkt;
use crate::accuracy::python_float_repr;
use crate::accuracy::rouge::RougeScorer;
use crate::engines::serving::tokenizer::TokenizerError;

/// Which reference script's result line to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultStyle {
    /// llama2-70b: numbers, plus `gen_tok_len` and `tokens_per_sample`.
    Llama2,
    /// llama3.1-8b: ROUGE values as quoted strings, no token counts.
    Llama31,
}

/// One answer: its logged token count and its decoded text.
pub struct Answer {
    pub tokens: usize,
    pub text: String,
}

/// The averaged scores and counts.
#[derive(Debug, Clone, PartialEq)]
pub struct SummarizationScore {
    pub rouge1: f64,
    pub rouge2: f64,
    pub rouge_l: f64,
    pub rouge_lsum: f64,
    pub gen_len: usize,
    pub gen_num: usize,
    pub gen_tok_len: usize,
}

/// Each sample's first logged answer (the reference scripts keep the first), decoded, paired with
/// its reference; errors name the sample.
pub fn first_answers<'r>(
    entries: Vec<AccuracyEntry>,
    references: &'r [String],
    decode: &dyn Fn(&[i32]) -> Result<String, TokenizerError>,
) -> Result<Vec<(Answer, &'r str)>, EvalError> {
    let (answers, _) = log::first_answers(entries, references).map_err(EvalError::Log)?;
    answers
        .into_iter()
        .map(|a| Ok((Answer { tokens: a.ids.len(), text: decode(&a.ids).map_err(|source| EvalError::Decode { sample: a.qsl_idx, source })? }, a.row.as_str())))
        .collect()
}

/// `"\n".join(nltk.sent_tokenize(text.strip()))`.
pub fn one_sentence_per_line(punkt: &Punkt, text: &str) -> String {
    punkt.sentences(text.trim_matches(crate::accuracy::punkt::py_space)).join("\n")
}

/// Scores `answers` against `references` (pairs in the order the reference script builds them).
pub fn score(punkt: &Punkt, answers: &[(Answer, &str)]) -> SummarizationScore {
    let mut scorer = RougeScorer::new();
    let mut per_sample: [Vec<f64>; 4] = Default::default();
    let (mut gen_len, mut gen_tok_len) = (0, 0);
    for (answer, reference) in answers {
        let prediction = one_sentence_per_line(punkt, &answer.text);
        let target = one_sentence_per_line(punkt, reference);
        let s = scorer.score(&target, &prediction);
        for (k, v) in [s.rouge1, s.rouge2, s.rouge_l, s.rouge_lsum].into_iter().enumerate() {
            per_sample[k].push(v.fmeasure);
        }
        gen_len += prediction.chars().count();
        gen_tok_len += answer.tokens;
    }
    let mean = |v: &[f64]| if v.is_empty() { f64::NAN } else { numpy_round(pairwise_sum(v) / v.len() as f64 * 100.0, 4) };
    SummarizationScore {
        rouge1: mean(&per_sample[0]),
        rouge2: mean(&per_sample[1]),
        rouge_l: mean(&per_sample[2]),
        rouge_lsum: mean(&per_sample[3]),
        gen_len,
        gen_num: answers.len(),
        gen_tok_len,
    }
}

impl SummarizationScore {
    /// The result dict as the reference script prints it.
    pub fn result_line(&self, style: ResultStyle) -> String {
        let rouge = [("rouge1", self.rouge1), ("rouge2", self.rouge2), ("rougeL", self.rouge_l), ("rougeLsum", self.rouge_lsum)];
        let mut parts: Vec<String> = rouge
            .iter()
            .map(|(k, v)| match style {
                ResultStyle::Llama2 => format!("'{k}': {}", python_float_repr(*v)),
                ResultStyle::Llama31 => format!("'{k}': '{}'", python_float_repr(*v)),
            })
            .collect();
        parts.push(format!("'gen_len': {}", self.gen_len));
        parts.push(format!("'gen_num': {}", self.gen_num));
        if style == ResultStyle::Llama2 {
            parts.push(format!("'gen_tok_len': {}", self.gen_tok_len));
            parts.push(format!("'tokens_per_sample': {}", python_float_repr(python_round(self.gen_tok_len as f64 / self.gen_num.max(1) as f64, 1))));
        }
        format!("{{{}}}", parts.join(", "))
    }

    /// The text and each metric under the checker's pattern name.
    pub fn scored(&self, style: ResultStyle) -> crate::accuracy::Scored {
        let mut metrics = vec![
            ("ROUGE1".to_string(), self.rouge1),
            ("ROUGE2".to_string(), self.rouge2),
            ("ROUGEL".to_string(), self.rouge_l),
            ("ROUGELSUM".to_string(), self.rouge_lsum),
            ("GEN_LEN".to_string(), self.gen_len as f64),
        ];
        if style == ResultStyle::Llama2 {
            metrics.push(("TOKENS_PER_SAMPLE".to_string(), python_round(self.gen_tok_len as f64 / self.gen_num.max(1) as f64, 1)));
        }
        crate::accuracy::Scored { text: self.accuracy_txt(style), metrics }
    }

    /// `accuracy.txt` as the reference script's output reads: a "Results" heading and the dict.
    pub fn accuracy_txt(&self, style: ResultStyle) -> String {
        format!("\nResults\n\n{}\n", self.result_line(style))
    }
}

/// Python's `round(v, digits)` of a float: `v` correctly rounded to `digits` decimals (Rust's
/// formatting rounds the exact binary value, as Python's does). `tokens_per_sample` is a Python
/// float.
pub(super) fn python_round(v: f64, digits: usize) -> f64 {
    format!("{v:.digits$}").parse().expect("a formatted float parses")
}

/// `round()` of a NumPy float64 (`np.mean(...)` is one): scaled, rounded half to even, scaled
/// back, which can differ from Python's in the last place.
fn numpy_round(v: f64, digits: i32) -> f64 {
    let scale = 10f64.powi(digits);
    (v * scale).round_ties_even() / scale
}

/// NumPy's pairwise summation of float64 (`np.mean` of a 1-D array sums this way): blocks of up
/// to 128 summed in eight interleaved lanes, larger arrays split in halves at a multiple of 8.
pub(super) fn pairwise_sum(a: &[f64]) -> f64 {
    let n = a.len();
    if n < 8 {
        return a.iter().fold(0.0, |s, &x| s + x);
    }
    if n <= 128 {
        let mut r = [0.0f64; 8];
        r.copy_from_slice(&a[..8]);
        let mut i = 8;
        while i < n - n % 8 {
            for (lane, x) in r.iter_mut().zip(&a[i..i + 8]) {
                *lane += x;
            }
            i += 8;
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &x in &a[i..] {
            res += x;
        }
        return res;
    }
    let half = n / 2;
    let half = half - half % 8;
    pairwise_sum(&a[..half]) + pairwise_sum(&a[half..])
}

#[cfg(test)]
#[path = "summarization_tests.rs"]
mod tests;
