//! What the accuracy scorers share: each family scores its own accuracy log as its official
//! MLCommons script does (`benchmarks::<family>`), returning the text that script prints into
//! `accuracy.txt`, which the submission checker's `ACC_PATTERN` reads back. Here:
//!
//! - [`log`]: reading `mlperf_log_accuracy.json`;
//! - [`rouge::RougeScorer`]: ROUGE-1/2/L/Lsum as `rouge_score` computes them with NLTK's Porter
//!   stemmer ([`porter`]), on answers split into sentences as `nltk.sent_tokenize` does ([`punkt`]);
//! - [`python_float_repr`]: Python's float `repr`, which the scripts print;
//! - [`write_accuracy_txt`]: the text next to the log, as NVIDIA's harness puts it;
//! - [`target`]: that text against the round's targets, as the checker reads it.

pub mod log;
pub mod porter;
pub mod punkt;
pub mod rouge;
pub mod target;

use crate::fsutil::FsError;
use std::path::{Path, PathBuf};

pub use log::LogDtype;

/// Why an accuracy log cannot be scored: the log is unreadable or malformed, an entry is not what
/// the scorer reads, or data a scorer needs (NLTK's Punkt model) is missing. Every kind is
/// [`crate::Error::Data`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AccuracyError {
    #[error("cannot open accuracy log {}: {source}", path.display())]
    OpenLog { path: PathBuf, source: std::io::Error },
    /// The log is not a JSON array of entries (serde's message names the entry and what is wrong),
    /// or the caller's per-entry step refused an entry.
    #[error("{0}")]
    Json(#[source] serde_json::Error),
    #[error("trailing data after the JSON array: {0}")]
    TrailingData(#[source] serde_json::Error),
    /// An error reading the log at `path`; `truncated` when the file looks cut by
    /// truncate_accuracy_log.py.
    #[error("{}: {source}{}", path.display(), if *truncated { " (this log was truncated by truncate_accuracy_log.py; score the full log it backed up)" } else { "" })]
    InLog { path: PathBuf, source: Box<AccuracyError>, truncated: bool },
    #[error("{bytes} bytes are not whole int32 token ids: was the log written with another dtype?")]
    NotInt32Ids { bytes: usize },
    #[error("past the dataset's {rows} samples")]
    PastDataset { rows: usize },
    /// An entry's error, with its sample in front.
    #[error("sample {qsl_idx}: {source}")]
    Sample { qsl_idx: usize, source: Box<AccuracyError> },
    #[error("unknown dtype '{name}' (one of {known})")]
    UnknownDtype { name: String, known: String },
    #[error("odd number of hex digits ({0})")]
    OddHexDigits(usize),
    #[error("non-hex character {0:?}")]
    NonHex(char),
    #[error(
        "NLTK's English Punkt model ({}) is in none of {}: install it as the reference evaluation does (python -m nltk.downloader punkt_tab) or set NLTK_DATA",
        model.display(),
        looked.join(", ")
    )]
    PunktNotFound { model: PathBuf, looked: Vec<String> },
    #[error("{}: {source}; NLTK's punkt_tab model is needed (python -m nltk.downloader punkt_tab)", path.display())]
    PunktUnreadable { path: PathBuf, source: std::io::Error },
    /// A line of a Punkt model file that is not `expected` ("two tab-separated words").
    #[error("{}: `{line}` is not {expected}", path.display())]
    PunktLine { path: PathBuf, line: String, expected: &'static str },
}

impl From<AccuracyError> for crate::Error {
    fn from(e: AccuracyError) -> crate::Error {
        crate::Error::Data(e.to_string())
    }
}

/// One scored accuracy log: the scorer's `accuracy.txt` text and each metric as the checker's
/// pattern reads it back from that text.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub text: String,
    pub metrics: Vec<(String, f64)>,
}

/// Python's `repr(float)`: the shortest text that reads back as the same double, in fixed notation
/// for exponents -4..16 (with `.0` for whole numbers) and scientific (`1e-05`, `1.5e+16`) outside.
pub fn python_float_repr(v: f64) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0.0".into() } else { "0.0".into() };
    }
    // Rust's `{:e}` is also the shortest round-trip representation: "d.ddde-x".
    let sci = format!("{:e}", v.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap();
    let exp: i32 = exp.parse().unwrap();
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    let sign = if v < 0.0 { "-" } else { "" };
    if (-4..16).contains(&exp) {
        let n = digits.len() as i32;
        let body = if exp < 0 {
            format!("0.{}{}", "0".repeat((-exp - 1) as usize), digits)
        } else if exp + 1 >= n {
            format!("{}{}.0", digits, "0".repeat((exp + 1 - n) as usize))
        } else {
            format!("{}.{}", &digits[..(exp + 1) as usize], &digits[(exp + 1) as usize..])
        };
        format!("{sign}{body}")
    } else {
        let m = if digits.len() == 1 { digits } else { format!("{}.{}", &digits[..1], &digits[1..]) };
        format!("{sign}{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    }
}

/// Writes `accuracy.txt` (atomically) with `text`, e.g. a score's `accuracy_txt()`.
pub fn write_accuracy_txt(path: &Path, text: &str) -> Result<(), FsError> {
    crate::fsutil::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::python_float_repr;
    #[test]
    fn python_repr_of_floats() {
        for (v, text) in [
            (83.0, "83.0"),
            (1e-05, "1e-05"),
            (1e16, "1e+16"),
            (123456789012345.6, "123456789012345.6"),
            (0.1, "0.1"),
            (1.5e16, "1.5e+16"),
            (0.0001, "0.0001"),
            (0.00001234, "1.234e-05"),
            (90.87452, "90.87452"),
            (1234567890123456.0, "1234567890123456.0"),
            (100.0, "100.0"),
            (-2.5, "-2.5"),
            (100.0 / 3.0, "33.333333333333336"),
        ] {
            assert_eq!(python_float_repr(v), text, "{v}");
        }
    }
}
