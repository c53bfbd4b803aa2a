//! The word error rate as the reference's `accuracy_eval.py` counts it: both texts normalized
//! ([`super::normalizer`]), aligned by `helpers.compute_wer_with_concatenation` (a word of one
//! side may match up to three joined words of the other, so `some thing` against `something` is
//! no error) and the aligned words compared by `legacy_helpers.__levenshtein`; edits and
//! reference words are summed over the samples, then divided.

use super::normalizer::normalize;
use crate::accuracy::python_float_repr;

/// Edits and reference words over a set of samples.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WordErrors {
    pub edits: usize,
    pub words: usize,
}

impl WordErrors {
    /// One sample's hypothesis and reference, normalized and aligned, added.
    pub fn add(&mut self, hypothesis: &str, reference: &str) {
        let (h, r) = (normalize(hypothesis), normalize(reference));
        let (edits, words) = concatenation_errors(&h.split_whitespace().collect::<Vec<_>>(), &r.split_whitespace().collect::<Vec<_>>());
        self.edits += edits;
        self.words += words;
    }

    /// `scores / words`; None when no reference has a word (Python divides by zero there).
    pub fn rate(&self) -> Option<f64> {
        (self.words > 0).then(|| self.edits as f64 / self.words as f64)
    }
}

/// `accuracy_eval.py`'s result line: `Word Error Rate: {:}%, accuracy={:}%` of `wer * 100` and
/// `(1 - wer) * 100`, Python's float `repr` both.
pub fn result_line(wer: f64) -> String {
    format!("Word Error Rate: {}%, accuracy={}%", python_float_repr(wer * 100.0), python_float_repr((1.0 - wer) * 100.0))
}

/// `compute_wer_with_concatenation(prediction, reference)`: the distance between the aligned
/// words and the reference's word count.
pub fn concatenation_errors(hyp: &[&str], reference: &[&str]) -> (usize, usize) {
    let mut ref_aligned: Vec<String> = Vec::new();
    let mut hyp_aligned: Vec<String> = Vec::new();
    let (mut i, mut j) = (0, 0);
    while i < reference.len() && j < hyp.len() {
        if reference[i] == hyp[j] {
            ref_aligned.push(reference[i].to_string());
            hyp_aligned.push(hyp[j].to_string());
            i += 1;
            j += 1;
            continue;
        }
        // Up to three words of either side joined, the reference's first at each length.
        let mut lengths = (1, 1);
        for k in 1..4 {
            if i + k <= reference.len() && reference[i..i + k].concat() == hyp[j] {
                lengths = (k, 1);
                break;
            }
            if j + k <= hyp.len() && hyp[j..j + k].concat() == reference[i] {
                lengths = (1, k);
                break;
            }
        }
        // A pair (joined or substituted) is compared with its spaces removed.
        ref_aligned.push(reference[i..i + lengths.0].concat());
        hyp_aligned.push(hyp[j..j + lengths.1].concat());
        i += lengths.0;
        j += lengths.1;
    }
    ref_aligned.extend(reference[i..].iter().map(|w| w.to_string()));
    hyp_aligned.extend(hyp[j..].iter().map(|w| w.to_string()));
    (levenshtein(&ref_aligned, &hyp_aligned), reference.len())
}

/// `__levenshtein(a, b)`: edits (insertions, deletions, substitutions) between two word lists.
pub fn levenshtein<T: PartialEq>(a: &[T], b: &[T]) -> usize {
    let (a, b) = if a.len() > b.len() { (b, a) } else { (a, b) };
    let mut current: Vec<usize> = (0..=a.len()).collect();
    for (i, bi) in b.iter().enumerate() {
        let previous = std::mem::take(&mut current);
        current = Vec::with_capacity(a.len() + 1);
        current.push(i + 1);
        for (j, aj) in a.iter().enumerate() {
            let change = previous[j] + usize::from(aj != bi);
            current.push((previous[j + 1] + 1).min(current[j] + 1).min(change));
        }
    }
    current[a.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levenshtein_counts_word_edits_either_way_round() {
        assert_eq!(levenshtein(&["a", "b", "c"], &["a", "c"]), 1);
        assert_eq!(levenshtein(&["a", "c"], &["a", "b", "c", "d"]), 2);
        assert_eq!(levenshtein::<&str>(&[], &["x", "y"]), 2);
        assert_eq!(levenshtein(&["kitten"], &["sitting"]), 1, "words, not characters");
    }

    #[test]
    fn joined_words_on_either_side_are_no_error() {
        assert_eq!(concatenation_errors(&["something", "new"], &["some", "thing", "new"]), (0, 3));
        assert_eq!(concatenation_errors(&["any", "body", "home"], &["anybody", "home"]), (0, 2));
        // three at most: four joined words are errors
        assert_eq!(concatenation_errors(&["abcd"], &["a", "b", "c", "d"]), (4, 4));
        assert_eq!(concatenation_errors(&["the", "cat"], &["a", "cat", "sat"]), (2, 3));
        assert_eq!(concatenation_errors(&["x"], &[]), (1, 0));
    }

    #[test]
    fn the_rate_sums_edits_and_words_over_samples_and_prints_as_python() {
        let mut errors = WordErrors::default();
        assert_eq!(errors.rate(), None, "no reference words: Python divides by zero");
        errors.add("Mr. Smith paid twenty dollars", "mister smith paid $20");
        errors.add("the colour grey", "the color gray");
        assert_eq!(errors, WordErrors { edits: 0, words: 7 });
        errors.add("one two", "one two three");
        assert_eq!(errors, WordErrors { edits: 1, words: 8 }, "\"one two\" is 12 against 123: one substitution");
        assert_eq!(result_line(errors.rate().unwrap()), "Word Error Rate: 12.5%, accuracy=87.5%");
        assert_eq!(result_line(1.0 / 3.0), "Word Error Rate: 33.33333333333333%, accuracy=66.66666666666667%");
    }
}
