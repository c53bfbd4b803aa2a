//! ROUGE-1, ROUGE-2, ROUGE-L and ROUGE-Lsum as Google's `rouge_score` computes them with
//! `use_stemmer=True` (what the llama2-70b and llama3.1-8b evaluations call through Hugging Face
//! `evaluate`): tokens are the lowercased text's `[a-z0-9]+` runs, those longer than three
//! characters Porter-stemmed ([`super::porter`], NLTK's variant); ROUGE-N counts clipped n-gram
//! matches, ROUGE-L is the longest common subsequence, ROUGE-Lsum the summary-level LCS over
//! newline-separated sentences (the evaluations put each sentence on its own line first). Each
//! score is precision, recall and their F-measure, as `rouge_score` returns them.
//!
//! Checked pair by pair against `rouge_score` itself (`tests/fixtures/accuracy/rouge_score.jsonl`).

use super::porter;
use std::collections::HashMap;

/// Precision, recall and F-measure of one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Score {
    pub precision: f64,
    pub recall: f64,
    pub fmeasure: f64,
}

impl Score {
    fn new(precision: f64, recall: f64) -> Score {
        let fmeasure = if precision + recall > 0.0 { 2.0 * precision * recall / (precision + recall) } else { 0.0 };
        Score { precision, recall, fmeasure }
    }
}

/// The four scores of one prediction against its target.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RougeScores {
    pub rouge1: Score,
    pub rouge2: Score,
    pub rouge_l: Score,
    pub rouge_lsum: Score,
}

/// Tokenizes and stems, remembering stems (a dataset's answers share most of their words).
#[derive(Default)]
pub struct RougeScorer {
    stems: HashMap<String, String>,
}

impl RougeScorer {
    pub fn new() -> RougeScorer {
        RougeScorer::default()
    }

    /// rouge_score's tokenizer: lowercase, `[a-z0-9]+` runs, words of four letters or more stemmed.
    pub fn tokenize(&mut self, text: &str) -> Vec<String> {
        let lower = text.to_lowercase();
        lower
            .split(|c: char| !(c.is_ascii_lowercase() || c.is_ascii_digit()))
            .filter(|t| !t.is_empty())
            .map(|t| if t.len() > 3 { self.stems.entry(t.to_string()).or_insert_with(|| porter::stem(t)).clone() } else { t.to_string() })
            // A stem is never empty here, but rouge_score drops anything that is not a valid token.
            .filter(|t| !t.is_empty())
            .collect()
    }

    /// `RougeScorer(["rouge1", "rouge2", "rougeL", "rougeLsum"], use_stemmer=True).score(target, prediction)`.
    pub fn score(&mut self, target: &str, prediction: &str) -> RougeScores {
        let (t, p) = (self.tokenize(target), self.tokenize(prediction));
        let sentences = |scorer: &mut RougeScorer, text: &str| text.split('\n').filter(|s| !s.is_empty()).map(|s| scorer.tokenize(s)).collect::<Vec<_>>();
        let (ts, ps) = (sentences(self, target), sentences(self, prediction));
        RougeScores { rouge1: ngrams(&t, &p, 1), rouge2: ngrams(&t, &p, 2), rouge_l: lcs(&t, &p), rouge_lsum: summary_lcs(&ts, &ps) }
    }
}

fn ngram_counts(tokens: &[String], n: usize) -> HashMap<&[String], u32> {
    let mut counts = HashMap::new();
    for gram in tokens.windows(n) {
        *counts.entry(gram).or_insert(0) += 1;
    }
    counts
}

fn ngrams(target: &[String], prediction: &[String], n: usize) -> Score {
    let (t, p) = (ngram_counts(target, n), ngram_counts(prediction, n));
    let overlap: u32 = t.iter().map(|(gram, &count)| count.min(p.get(gram).copied().unwrap_or(0))).sum();
    let (t_total, p_total): (u32, u32) = (t.values().sum(), p.values().sum());
    Score::new(f64::from(overlap) / f64::from(p_total.max(1)), f64::from(overlap) / f64::from(t_total.max(1)))
}

/// The LCS length table: `table[i][j]` for the first i tokens of `a` and the first j of `b`.
fn lcs_table(a: &[String], b: &[String]) -> Vec<Vec<u32>> {
    let mut table = vec![vec![0u32; b.len() + 1]; a.len() + 1];
    for i in 1..=a.len() {
        for j in 1..=b.len() {
            table[i][j] = if a[i - 1] == b[j - 1] { table[i - 1][j - 1] + 1 } else { table[i - 1][j].max(table[i][j - 1]) };
        }
    }
    table
}

fn lcs(target: &[String], prediction: &[String]) -> Score {
    if target.is_empty() || prediction.is_empty() {
        return Score::default();
    }
    let length = f64::from(lcs_table(target, prediction)[target.len()][prediction.len()]);
    Score::new(length / prediction.len() as f64, length / target.len() as f64)
}

/// Indices into `a` of one LCS of `a` and `b`, walked back from the end as rouge_score does
/// (on a tie it moves along `a`), so the same subsequence is chosen.
fn lcs_indices(a: &[String], b: &[String]) -> Vec<usize> {
    let table = lcs_table(a, b);
    let (mut i, mut j) = (a.len(), b.len());
    let mut indices = Vec::new();
    while i > 0 && j > 0 {
        if a[i - 1] == b[j - 1] {
            indices.push(i - 1);
            i -= 1;
            j -= 1;
        } else if table[i][j - 1] > table[i - 1][j] {
            j -= 1;
        } else {
            i -= 1;
        }
    }
    indices.reverse();
    indices
}

/// Summary-level LCS: for each target sentence, the union of its LCS with every predicted
/// sentence, each token counted as a hit while both sides still have one of it left.
fn summary_lcs(target: &[Vec<String>], prediction: &[Vec<String>]) -> Score {
    let (m, n) = (target.iter().map(Vec::len).sum::<usize>(), prediction.iter().map(Vec::len).sum::<usize>());
    if target.is_empty() || prediction.is_empty() || m == 0 || n == 0 {
        return Score::default();
    }
    let mut left_t: HashMap<&str, i64> = HashMap::new();
    let mut left_p: HashMap<&str, i64> = HashMap::new();
    for token in target.iter().flatten() {
        *left_t.entry(token).or_insert(0) += 1;
    }
    for token in prediction.iter().flatten() {
        *left_p.entry(token).or_insert(0) += 1;
    }
    let mut hits = 0usize;
    for sentence in target {
        let mut union: Vec<usize> = prediction.iter().flat_map(|p| lcs_indices(sentence, p)).collect();
        union.sort_unstable();
        union.dedup();
        for i in union {
            let token = sentence[i].as_str();
            let (t, p) = (left_t.get_mut(token).expect("counted"), left_p.entry(token).or_insert(0));
            if *t > 0 && *p > 0 {
                hits += 1;
                *t -= 1;
                *p -= 1;
            }
        }
    }
    Score::new(hits as f64 / n as f64, hits as f64 / m as f64)
}

#[cfg(test)]
#[path = "rouge_tests.rs"]
mod tests;
