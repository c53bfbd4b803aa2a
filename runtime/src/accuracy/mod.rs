//! Accuracy scoring of LoadGen accuracy logs, writing accuracy.txt like the official scripts.
//!
//! Each scorer reads `mlperf_log_accuracy.json` ([`log`]) plus what it needs about the dataset and
//! returns a score whose `accuracy_txt()` is the text the official MLCommons script prints, which
//! the submission checker's `ACC_PATTERN` regex reads:
//!
//! - [`imagenet::score_imagenet`]: ResNet50 top-1 (`accuracy-imagenet.py`),
//!   `accuracy=76.456%, good=38228, total=50000`;
//! - [`squad::score_squad`]: BERT SQuAD v1.1 exact match and F1 (`accuracy-squad.py` +
//!   `evaluate_v1.1.py`), `{"exact_match": 83.67, "f1": 90.87}`;
//! - [`kits::score_kits`]: 3D-UNet's KiTS19 DICE (`accuracy_kits.py`),
//!   `Accuracy: mean = 0.86170, kidney = 0.9347, tumor = 0.7887`;
//! - [`rouge::RougeScorer`]: ROUGE-1/2/L/Lsum of the LLM summarisation evaluations (llama2-70b,
//!   llama3.1-8b), as `rouge_score` computes them with NLTK's Porter stemmer ([`porter`]), on
//!   answers split into sentences as `nltk.sent_tokenize` does ([`punkt`]);
//! - [`summarization::score`]: the llama2-70b and llama3.1-8b evaluations built from them;
//! - [`reasoning::evaluate`]: the exact-match evaluations of deepseek-r1 and gpt-oss-120b
//!   (multiple choice, AIME, MATH500 through [`math_grader`], LiveCodeBench code through a
//!   [`reasoning::CodeJudge`], LiveCodeBench's run by [`code_judge`]), answers parsed by
//!   [`answers`];
//! - [`mixtral::evaluate`]: mixtral-8x7b's OpenOrca ROUGE, GSM8K answers and MBXP code (run by
//!   [`mbxp`]);
//! - [`llama3_405b::evaluate`]: llama3.1-405b's ROUGE-L, needle-in-a-haystack and QA matches.
//!
//! Generated code (LiveCodeBench, MBXP) runs in the [`sandbox`].
//!
//! [`write_accuracy_txt`] puts the text next to the log, as NVIDIA's harness does.

pub mod answers;
pub mod code_judge;
pub mod imagenet;
pub mod kits;
pub mod llama3_405b;
pub mod log;
pub mod math_grader;
pub mod mbxp;
pub mod mixtral;
pub mod porter;
pub mod punkt;
pub mod reasoning;
pub mod rouge;
pub mod sandbox;
pub mod squad;
pub mod summarization;

use std::path::Path;

pub use imagenet::{ImagenetScore, score_imagenet};
pub use log::LogDtype;
pub use squad::{SquadScore, SquadScoreOptions, score_squad};

/// One scored accuracy log: the scorer's `accuracy.txt` text and each metric as the checker's
/// pattern reads it back from that text.
#[derive(Debug, Clone, PartialEq)]
pub struct Scored {
    pub text: String,
    pub metrics: Vec<(String, f64)>,
}

/// Writes `accuracy.txt` (atomically) with `text`, e.g. a score's `accuracy_txt()`.
pub fn write_accuracy_txt(path: &Path, text: &str) -> Result<(), String> {
    crate::fsutil::write_atomic(path, text.as_bytes())
}

#[cfg(test)]
mod pattern_tests;
