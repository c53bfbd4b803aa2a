//! BERT SQuAD v1.1 accuracy, as `language/bert/accuracy-squad.py` computes it, followed by the
//! official `evaluate_v1.1.py`:
//!
//! 1. `load_loadgen_log`: each entry's `data` is the logits of one feature (`qsl_idx` = feature
//!    index), decoded with `--output_dtype` (float32 by default; NVIDIA passes float16 for its int8
//!    and fp16 engines) and reshaped to `[seq, 2]` (start, end per token; `--output_transposed`
//!    means `[2, seq]`), then padded to 384 with -10000. A feature logged twice keeps its last
//!    entry (a dict keyed by `unique_id`).
//! 2. `write_predictions` with `n_best_size=20`, `max_answer_length=30`: for each example, the 20
//!    best start and 20 best end positions of each of its features (stable sort, descending);
//!    pairs that are inside the document, start at a token whose max-context span is this feature,
//!    are ordered and at most 30 tokens long become candidates, ranked by `start + end` logit; the
//!    best one's WordPiece text is projected back onto the original words by `get_final_text`
//!    (with the original BERT `BasicTokenizer(do_lower_case=True)`). Examples without candidates
//!    (or without logged features) predict `"empty"`.
//! 3. `evaluate`: exact match and F1 against every ground-truth answer (best of them), after
//!    `normalize_answer` (lower case, drop ASCII punctuation, drop the articles a/an/the, collapse
//!    whitespace), averaged over all questions, in percent.
//!
//! `accuracy.txt` holds what `evaluate_v1.1.py` prints: `json.dumps({"exact_match": em, "f1": f1})`,
//! Python's float `repr` included ([`python_float_repr`]).

use std::collections::HashMap;
use std::path::Path;

use crate::accuracy::log::{LogDtype, for_each_entry};
use crate::accuracy::python_float_repr;
use crate::benchmarks::bert::error::BertError;
use crate::benchmarks::bert::squad::SquadFeatures;
use crate::benchmarks::bert::wordpiece::{BasicTokenizer, py_is_space};

/// Padding logit for positions past the logged sequence (`np.ones(max_seq_length) * -10000.0`).
const PAD_LOGIT: f64 = -10000.0;

/// `accuracy-squad.py`'s settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SquadScoreOptions {
    /// `--output_dtype`.
    pub dtype: LogDtype,
    /// `--output_transposed`: logits logged as `[2, seq]` instead of `[seq, 2]`.
    pub output_transposed: bool,
    pub n_best_size: usize,
    pub max_answer_length: usize,
}

impl Default for SquadScoreOptions {
    fn default() -> Self {
        SquadScoreOptions { dtype: LogDtype::Float32, output_transposed: false, n_best_size: 20, max_answer_length: 30 }
    }
}

/// The result of scoring one accuracy log.
#[derive(Clone, Debug, PartialEq)]
pub struct SquadScore {
    /// Percent of questions whose prediction matches an answer exactly (after normalisation).
    pub exact_match: f64,
    /// Mean token F1 in percent.
    pub f1: f64,
    /// Questions scored (all questions of the dataset).
    pub questions: usize,
    /// Features (QSL samples) with logits in the log, and all features.
    pub features_logged: usize,
    pub features_total: usize,
    /// Entries in the log, repeats included.
    pub entries: usize,
    /// `(qas_id, predicted text)` per question, in dataset order (the script's predictions.json).
    pub predictions: Vec<(String, String)>,
}

impl SquadScore {
    /// `evaluate_v1.1.py`'s output line: `{"exact_match": 83.67, "f1": 90.87}`.
    pub fn accuracy_line(&self) -> String {
        format!("{{\"exact_match\": {}, \"f1\": {}}}", python_float_repr(self.exact_match), python_float_repr(self.f1))
    }

    /// The whole `accuracy.txt`.
    pub fn accuracy_txt(&self) -> String {
        format!("{}\n", self.accuracy_line())
    }

    /// The text and the `F1` metric the checker reads back (Python's `repr` of a float parses
    /// back to the same float).
    pub fn scored(&self) -> crate::accuracy::Scored {
        crate::accuracy::Scored { text: self.accuracy_txt(), metrics: vec![("F1".to_string(), self.f1)] }
    }

    /// predictions.json as the script writes it (`json.dumps(all_predictions, indent=4)`).
    pub fn predictions_json(&self) -> String {
        if self.predictions.is_empty() {
            return "{}\n".into();
        }
        let body: Vec<String> = self.predictions.iter().map(|(id, text)| format!("    {}: {}", python_json_string(id), python_json_string(text))).collect();
        format!("{{\n{}\n}}\n", body.join(",\n"))
    }
}

/// Scores `acc_log` with the feature metadata `features` ([`crate::benchmarks::bert::squad::FEATURES_FILE`]).
pub fn score_squad(acc_log: &Path, features: &Path, opts: &SquadScoreOptions) -> Result<SquadScore, BertError> {
    let meta = SquadFeatures::load(features)?;
    score_squad_meta(acc_log, &meta, opts)
}

/// [`score_squad`] with loaded metadata.
pub fn score_squad_meta(acc_log: &Path, meta: &SquadFeatures, opts: &SquadScoreOptions) -> Result<SquadScore, BertError> {
    let seq = meta.options.max_seq_length;
    let mut logits: Vec<Option<(Vec<f64>, Vec<f64>)>> = vec![None; meta.features.len()];
    let mut index = 0usize;
    let entries = for_each_entry(acc_log, &mut |e| {
        let at = index;
        index += 1;
        let slot = logits.get_mut(e.qsl_idx).ok_or_else(|| format!("entry {at}: qsl_idx {} but the features file has {} features", e.qsl_idx, meta.features.len()))?;
        *slot = Some(decode_logits(&e.data, seq, opts).map_err(|m| format!("entry {at} (qsl_idx {}): {m}", e.qsl_idx))?);
        Ok(())
    })?;
    let features_logged = logits.iter().filter(|l| l.is_some()).count();
    let predictions = predict(meta, &logits, opts);
    let (exact_match, f1) = evaluate(meta, &predictions)?;
    Ok(SquadScore { exact_match, f1, questions: meta.examples.len(), features_logged, features_total: meta.features.len(), entries, predictions })
}

/// One feature's start and end logits, padded to `seq` positions.
pub(crate) fn decode_logits(data: &[u8], seq: usize, opts: &SquadScoreOptions) -> Result<(Vec<f64>, Vec<f64>), BertError> {
    let size = opts.dtype.size();
    if !data.len().is_multiple_of(2 * size) {
        return Err(BertError::LogitPairs { bytes: data.len(), dtype: opts.dtype.to_string() });
    }
    let rows = data.len() / (2 * size);
    if rows > seq {
        return Err(BertError::TooManyLogits { rows, seq });
    }
    let mut start = vec![PAD_LOGIT; seq];
    let mut end = vec![PAD_LOGIT; seq];
    for r in 0..rows {
        let (s, e) = if opts.output_transposed { (r, rows + r) } else { (2 * r, 2 * r + 1) };
        start[r] = opts.dtype.get_f64(data, s);
        end[r] = opts.dtype.get_f64(data, e);
    }
    Ok((start, end))
}

/// `_get_best_indexes`: positions of the `n` largest logits, larger first, earlier first on ties.
fn best_indexes(logits: &[f64], n: usize) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..logits.len()).collect();
    idx.sort_by(|&a, &b| logits[b].partial_cmp(&logits[a]).unwrap_or(std::cmp::Ordering::Equal));
    idx.truncate(n);
    idx
}

/// `write_predictions`: the best answer text per question, in example order.
pub(crate) fn predict(meta: &SquadFeatures, logits: &[Option<(Vec<f64>, Vec<f64>)>], opts: &SquadScoreOptions) -> Vec<(String, String)> {
    let basic = BasicTokenizer::google(true);
    let by_example = meta.features_by_example();
    let mut out = Vec::with_capacity(meta.examples.len());
    for (ei, ex) in meta.examples.iter().enumerate() {
        let range = &by_example[ei];
        // (feature, start, end, start_logit, end_logit) in the reference's generation order.
        let mut prelim: Vec<(usize, usize, usize, f64, f64)> = Vec::new();
        for fi in range.clone() {
            let Some((start_logits, end_logits)) = &logits[fi] else { continue };
            let tokens = meta.token_count(fi);
            let ends = best_indexes(end_logits, opts.n_best_size);
            for s in best_indexes(start_logits, opts.n_best_size) {
                for &e in &ends {
                    if s >= tokens || e >= tokens {
                        continue;
                    }
                    if meta.token_to_orig(fi, s).is_none() || meta.token_to_orig(fi, e).is_none() {
                        continue;
                    }
                    if !meta.token_is_max_context(fi, range, s) {
                        continue;
                    }
                    if e < s || e - s + 1 > opts.max_answer_length {
                        continue;
                    }
                    prelim.push((fi, s, e, start_logits[s], end_logits[e]));
                }
            }
        }
        // sorted(..., key=start_logit + end_logit, reverse=True) is stable: the first best wins;
        // it alone becomes the prediction (nbest_json[0]).
        prelim.sort_by(|a, b| (b.3 + b.4).partial_cmp(&(a.3 + a.4)).unwrap_or(std::cmp::Ordering::Equal));
        let text = match prelim.first() {
            None => "empty".to_string(),
            Some(&(fi, s, e, _, _)) => {
                let para = meta.paragraph_of(fi);
                let tok_tokens: Vec<&str> = (s..=e).map(|p| meta.doc_token(fi, p).unwrap()).collect();
                let (os, oe) = (meta.token_to_orig(fi, s).unwrap(), meta.token_to_orig(fi, e).unwrap());
                let orig_text = para.doc_tokens[os..=oe].join(" ");
                let tok_text = tok_tokens.join(" ").replace(" ##", "").replace("##", "");
                let tok_text = tok_text.split(py_is_space).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" ");
                get_final_text(&tok_text, &orig_text, &basic)
            }
        };
        out.push((ex.id.clone(), text));
    }
    out
}

/// `get_final_text`: maps the normalised prediction back onto the original text by aligning the
/// basic-tokenized original with it character by character (spaces removed); falls back to the
/// whole original span when the alignment fails.
pub fn get_final_text(pred_text: &str, orig_text: &str, basic: &BasicTokenizer) -> String {
    let tok_text = basic.tokenize(orig_text).join(" ");
    let Some(byte_pos) = tok_text.find(pred_text) else { return orig_text.to_string() };
    let start = tok_text[..byte_pos].chars().count() as i64;
    let end = start + pred_text.chars().count() as i64 - 1;
    // _strip_spaces: the text without ' ' and, per remaining character, its original index.
    let strip = |t: &str| -> (usize, Vec<usize>) {
        let map: Vec<usize> = t.chars().enumerate().filter(|&(_, c)| c != ' ').map(|(i, _)| i).collect();
        (map.len(), map)
    };
    let orig_chars: Vec<char> = orig_text.chars().collect();
    let (orig_ns_len, orig_ns_to_s) = strip(orig_text);
    let (tok_ns_len, tok_ns_to_s) = strip(&tok_text);
    if orig_ns_len != tok_ns_len {
        return orig_text.to_string();
    }
    let tok_s_to_ns: HashMap<usize, usize> = tok_ns_to_s.iter().enumerate().map(|(ns, &s)| (s, ns)).collect();
    let project = |pos: i64| -> Option<usize> {
        let ns = *tok_s_to_ns.get(&usize::try_from(pos).ok()?)?;
        orig_ns_to_s.get(ns).copied()
    };
    let (Some(os), Some(oe)) = (project(start), project(end)) else { return orig_text.to_string() };
    if oe < os {
        return String::new();
    }
    orig_chars[os..=oe].iter().collect()
}

/// Python's `\w` for `str` patterns: letters, numbers (Unicode) and the underscore.
fn is_word_char(c: char) -> bool {
    c == '_'
        || c.is_alphanumeric() && {
            let cat = unicode_general_category::get_general_category(c).abbreviation();
            cat.starts_with('L') || cat.starts_with('N')
        }
}

/// `normalize_answer`: lower case, remove ASCII punctuation (`string.punctuation`), replace the
/// whole words a/an/the with a space (`re.sub(r"\b(a|an|the)\b", " ", text)`), collapse whitespace.
pub fn normalize_answer(s: &str) -> String {
    let lowered = s.to_lowercase();
    let no_punc: Vec<char> = lowered.chars().filter(|c| !c.is_ascii_punctuation()).collect();
    let mut out = String::with_capacity(no_punc.len());
    let mut i = 0;
    while i < no_punc.len() {
        let at_boundary = i == 0 || !is_word_char(no_punc[i - 1]);
        let matched = if !at_boundary {
            None
        } else {
            ["a", "an", "the"].iter().find_map(|w| {
                let n = w.chars().count();
                let fits = no_punc.len() >= i + n && no_punc[i..i + n].iter().copied().eq(w.chars());
                (fits && (i + n == no_punc.len() || !is_word_char(no_punc[i + n]))).then_some(n)
            })
        };
        match matched {
            Some(n) => {
                out.push(' ');
                i += n;
            }
            None => {
                out.push(no_punc[i]);
                i += 1;
            }
        }
    }
    out.split(py_is_space).filter(|t| !t.is_empty()).collect::<Vec<_>>().join(" ")
}

/// `exact_match_score`.
pub fn exact_match_score(prediction: &str, ground_truth: &str) -> bool {
    normalize_answer(prediction) == normalize_answer(ground_truth)
}

/// `f1_score`: token-multiset overlap F1 of the normalised texts.
pub fn f1_score(prediction: &str, ground_truth: &str) -> f64 {
    let p = normalize_answer(prediction);
    let g = normalize_answer(ground_truth);
    let pt: Vec<&str> = p.split(py_is_space).filter(|t| !t.is_empty()).collect();
    let gt: Vec<&str> = g.split(py_is_space).filter(|t| !t.is_empty()).collect();
    let mut counts: HashMap<&str, i64> = HashMap::new();
    for t in &gt {
        *counts.entry(t).or_default() += 1;
    }
    let mut same = 0i64;
    for t in &pt {
        if let Some(c) = counts.get_mut(t)
            && *c > 0
        {
            *c -= 1;
            same += 1;
        }
    }
    if same == 0 {
        return 0.0;
    }
    let precision = 1.0 * same as f64 / pt.len() as f64;
    let recall = 1.0 * same as f64 / gt.len() as f64;
    (2.0 * precision * recall) / (precision + recall)
}

/// `evaluate`: (exact match %, F1 %) over every question; a question id answered twice takes the
/// later prediction (the predictions dict), as in the script.
fn evaluate(meta: &SquadFeatures, predictions: &[(String, String)]) -> Result<(f64, f64), BertError> {
    let by_id: HashMap<&str, &str> = predictions.iter().map(|(id, t)| (id.as_str(), t.as_str())).collect();
    let (mut em, mut f1, mut total) = (0usize, 0.0f64, 0usize);
    for ex in &meta.examples {
        total += 1;
        if ex.answers.is_empty() {
            return Err(BertError::NoAnswers(ex.id.clone()));
        }
        let prediction = by_id[ex.id.as_str()];
        em += usize::from(ex.answers.iter().any(|a| exact_match_score(prediction, a)));
        f1 += ex.answers.iter().map(|a| f1_score(prediction, a)).fold(f64::NEG_INFINITY, f64::max);
    }
    if total == 0 {
        return Err(BertError::NoQuestions);
    }
    Ok((100.0 * em as f64 / total as f64, 100.0 * f1 / total as f64))
}

/// A JSON string as Python's `json.dumps` writes it (`ensure_ascii=True`).
fn python_json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 || (c as u32) > 0x7e => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
#[path = "accuracy_tests.rs"]
mod tests;
