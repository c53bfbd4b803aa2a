//! The reference's category score (`multimodal/qwen3-vl/src/mlperf_inf_mm_q3vl/evaluation.py`,
//! mlcommons/inference@b66003e1): each logged response parsed as `ProductMetadata` the way
//! pydantic's `model_validate_json` does (an unparsable one predicts a padded category that matches
//! nothing), then the micro hierarchical F1 of the predicted category paths against the ground
//! truth, and `accuracy.txt` as the script writes it. The brand and second-hand scores the script
//! only prints are not computed: the checker reads the category F1 alone.

use super::catalogue::Truth;
use super::error::Qwen3VlError;
use crate::accuracy::log::{AccuracyEntry, EntryError, for_each_entry};
use crate::accuracy::punkt::py_space;
use crate::accuracy::{AccuracyError, Scored, python_float_repr};
use sha2::{Digest, Sha256};
use std::path::Path;

/// `_CATEGORY_SEPARATOR`.
const SEPARATOR: &str = " > ";
/// `_PRED_CATEGORY_PAD`: one level of an unparsable response's category.
const PAD: &str = "<|__PRED_CATEGORY_PAD__|>";

/// A response that validates as `ProductMetadata`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductMetadata {
    pub category: String,
    pub brand: String,
    pub is_secondhand: bool,
}

/// `ProductMetadata.model_validate_json(text)`, or None where pydantic raises `ValidationError`.
/// Pydantic's rules, checked against it (see the tests): strict JSON (whitespace around the object
/// only, no trailing commas, no lone surrogates, no NaN); a duplicate key keeps its last value;
/// `extra="forbid"`, so any other key fails; the strings must be JSON strings; the bool is lax:
/// `true`/`false`, the numbers 0 and 1 (`1.0`, `1e0` too), or one of the strings
/// `0 off f false n no 1 on t true y yes` in any case.
pub fn parse_product_metadata(text: &str) -> Option<ProductMetadata> {
    let serde_json::Value::Object(map) = serde_json::from_str::<serde_json::Value>(text).ok()? else { return None };
    let (mut category, mut brand, mut is_secondhand) = (None, None, None);
    for (key, value) in map {
        match key.as_str() {
            "category" => category = Some(value),
            "brand" => brand = Some(value),
            "is_secondhand" => is_secondhand = Some(value),
            _ => return None,
        }
    }
    let string = |v: serde_json::Value| match v {
        serde_json::Value::String(s) => Some(s),
        _ => None,
    };
    Some(ProductMetadata { category: string(category?)?, brand: string(brand?)?, is_secondhand: lax_bool(&is_secondhand?)? })
}

/// Pydantic's lax bool from a JSON value.
fn lax_bool(value: &serde_json::Value) -> Option<bool> {
    match value {
        serde_json::Value::Bool(b) => Some(*b),
        serde_json::Value::Number(n) => match n.as_f64()? {
            0.0 => Some(false),
            1.0 => Some(true),
            _ => None,
        },
        serde_json::Value::String(s) => match s.to_lowercase().as_str() {
            "0" | "off" | "f" | "false" | "n" | "no" => Some(false),
            "1" | "on" | "t" | "true" | "y" | "yes" => Some(true),
            _ => None,
        },
        _ => None,
    }
}

/// `get_hierarchical_components`: (longest common prefix of the levels, predicted levels, true
/// levels), levels split on `" > "` and stripped as Python's `str.strip()` does.
pub fn hierarchical_components(predicted: &str, truth: &str) -> (u64, u64, u64) {
    let levels = |path: &str| -> Vec<String> { path.split(SEPARATOR).map(|c| c.trim_matches(py_space).to_string()).collect() };
    let (predicted, truth) = (levels(predicted), levels(truth));
    let common = predicted.iter().zip(&truth).take_while(|(p, t)| p == t).count();
    (common as u64, predicted.len() as u64, truth.len() as u64)
}

/// Running sums of `calculate_hierarchical_f1`.
#[derive(Debug, Default, Clone, Copy, PartialEq)]
pub struct HierarchicalF1 {
    pub intersection: u64,
    pub predicted: u64,
    pub truth: u64,
    /// Responses that did not validate (scored as padded categories).
    pub unparsable: u64,
}

impl HierarchicalF1 {
    /// Adds one logged response against its product's ground truth, as `_process_chunk` does.
    pub fn add(&mut self, response: &str, truth: &Truth) {
        let padded;
        let predicted = match parse_product_metadata(response) {
            Some(metadata) => metadata.category,
            None => {
                self.unparsable += 1;
                padded = vec![PAD; truth.category.split(SEPARATOR).count()].join(SEPARATOR);
                padded
            }
        };
        let (intersection, predicted, true_levels) = hierarchical_components(&predicted, &truth.category);
        self.intersection += intersection;
        self.predicted += predicted;
        self.truth += true_levels;
    }

    /// F1 of hierarchical precision and recall, in the script's order of operations.
    pub fn f1(&self) -> f64 {
        let hp = if self.predicted > 0 { self.intersection as f64 / self.predicted as f64 } else { 0.0 };
        let hr = if self.truth > 0 { self.intersection as f64 / self.truth as f64 } else { 0.0 };
        if hp + hr == 0.0 { 0.0 } else { 2.0 * (hp * hr) / (hp + hr) }
    }

    /// `accuracy.txt` as `run_evaluation` writes it: `json.dumps({"f1": x}, sort_keys=True)` and
    /// the SHA-256 of that line.
    pub fn accuracy_txt(&self) -> String {
        let data = format!("{{\"f1\": {}}}", python_float_repr(self.f1()));
        let hash: String = Sha256::digest(data.as_bytes()).iter().map(|b| format!("{b:02x}")).collect();
        format!("Results\n\n{data}\n\nhash={hash}")
    }

    pub fn scored(&self) -> Scored {
        Scored { text: self.accuracy_txt(), metrics: vec![("F1_HIERARCHICAL".to_string(), self.f1())] }
    }
}

/// Scores every entry of an accuracy log (repeats included, as the script iterates the whole log)
/// against `truths`, indexed by `qsl_idx`.
pub fn score_log(accuracy_log: &Path, truths: &[Truth]) -> Result<HierarchicalF1, Qwen3VlError> {
    let mut score = HierarchicalF1::default();
    let mut add = |entry: AccuracyEntry| -> Result<(), Qwen3VlError> {
        let qsl_idx = entry.qsl_idx;
        let truth = truths.get(qsl_idx).ok_or(AccuracyError::Sample { qsl_idx, source: Box::new(AccuracyError::PastDataset { rows: truths.len() }) })?;
        let text = String::from_utf8(entry.data).map_err(|source| Qwen3VlError::NotUtf8 { qsl_idx, source })?;
        score.add(&text, truth);
        Ok(())
    };
    for_each_entry(accuracy_log, &mut |entry| add(entry).map_err(|e| Box::new(e) as EntryError))?;
    Ok(score)
}
