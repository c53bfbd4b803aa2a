//! The BERT family's error: a model the CPU engine cannot run, SQuAD files, vocabularies and
//! feature files that are missing or not what they should be ([`crate::Error::Data`]), an
//! accuracy log that cannot be scored, and the shared layers' errors kept whole with their kinds.

use crate::accuracy::AccuracyError;
use crate::dataset::npy::NpyError;
use crate::engines::synthetic::manifest::ManifestError;
use crate::fsutil::FsError;
use std::path::PathBuf;
use tract_onnx::prelude::TractError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BertError {
    #[error("bert configs need {0}")]
    NeedsSetting(&'static str),
    #[error("a BERT sample has {bytes} bytes; 3 int32 rows of {seq} tokens are {} bytes", 3 * seq * 4)]
    SampleSize { bytes: usize, seq: usize },
    #[error("CPU BERT engine: model {origin} is not a file")]
    NotAFile { origin: String },
    #[error("CPU BERT engine: cannot read ONNX model {origin}: {cause:#}")]
    NotOnnx { origin: String, cause: TractError },
    #[error("CPU BERT engine for {origin}: a sequence length of 0")]
    ZeroSequence { origin: String },
    /// tract refused a step (`what`: "model X", "model X failed", "cannot optimise model X for
    /// N tokens", ...).
    #[error("CPU BERT engine: {what}: {cause:#}")]
    Tract { what: String, cause: TractError },
    /// tract failed without a model to name (reading the outputs).
    #[error("{0:#}")]
    Outputs(TractError),
    #[error("{0}")]
    Shape(tract_onnx::prelude::tract_ndarray::ShapeError),
    #[error("CPU BERT engine: model {origin} has an input `{input}`; a BERT model takes input_ids, input_mask and segment_ids (or token_type_ids)")]
    UnknownInput { origin: String, input: String },
    #[error("CPU BERT engine: model {origin} takes {dtype} input `{input}`; token inputs are int64 or int32")]
    InputType { origin: String, dtype: String, input: String },
    #[error("CPU BERT engine: model {origin} takes {count} inputs; a BERT model takes input_ids, input_mask and segment_ids, once each")]
    InputCount { origin: String, count: usize },
    #[error("CPU BERT engine: model {origin} has {count} outputs; a BERT question-answering model gives start and end logits ([N, S] each, or one [N, S, 2])")]
    OutputCount { origin: String, count: usize },
    /// A sample the engine of `origin` cannot take.
    #[error("CPU BERT engine for {origin}: {source}")]
    Sample { origin: String, source: Box<BertError> },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// An error about the file at `path`.
    #[error("{}: {source}", path.display())]
    InFile { path: PathBuf, source: Box<BertError> },
    #[error("not a SQuAD file: {0}")]
    NotSquad(serde_json::Error),
    /// A SQuAD dev set other than the published file (`published`: its size and SHA-256, and `url`).
    #[error(
        "{}: {bytes} bytes, sha256 {sha256}, but the published SQuAD v1.1 dev set is {} bytes, sha256 {}: a partial download or another file; download it again from {url} and save it there",
        path.display(),
        published.0,
        published.1
    )]
    UnpublishedDevSet { path: PathBuf, bytes: u64, sha256: String, published: (u64, &'static str), url: &'static str },
    #[error("max_seq_length {max_seq_length} leaves no room for the document after a {query}-token question (example {example})")]
    NoRoom { max_seq_length: usize, query: usize, example: String },
    #[error("cannot open {}: {source}", path.display())]
    Open { path: PathBuf, source: std::io::Error },
    #[error("not a SQuAD feature file: {0}")]
    NotFeatures(serde_json::Error),
    #[error("format '{found}', expected '{expected}'")]
    FeatureFormat { found: String, expected: &'static str },
    /// What is inconsistent in a feature file (a paragraph, example or feature named).
    #[error("{0}")]
    Features(String),
    #[error("cannot encode {}: {source}", path.display())]
    Encode { path: PathBuf, source: serde_json::Error },
    #[error("cannot read vocab {}: {source}", path.display())]
    ReadVocab { path: PathBuf, source: std::io::Error },
    #[error("vocab {} has no {token} token", path.display())]
    VocabWithout { path: PathBuf, token: &'static str },
    #[error("the vocabulary has no {0} token")]
    NoToken(&'static str),
    #[error("{} bytes are not pairs of {dtype} logits", bytes)]
    LogitPairs { bytes: usize, dtype: String },
    #[error("{rows} logit pairs, more than max_seq_length {seq}")]
    TooManyLogits { rows: usize, seq: usize },
    #[error("question {0} has no answers (evaluate_v1.1.py needs at least one)")]
    NoAnswers(String),
    #[error("the features file holds no questions")]
    NoQuestions,
    #[error("{}: {source} (generate the synthetic set first)", path.display())]
    SyntheticVocab { path: PathBuf, source: std::io::Error },
    /// The synthetic set's generator went wrong (`problem` says how).
    #[error("synthetic SQuAD: {0} (a generator bug)")]
    Generator(String),
    #[error(transparent)]
    Log(#[from] AccuracyError),
    #[error(transparent)]
    Npy(#[from] NpyError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Write(#[from] FsError),
}

impl From<BertError> for crate::Error {
    /// The model, the SQuAD files and the log are the run's data (as the workload has always
    /// called them); a config without its paths is the config's.
    fn from(e: BertError) -> crate::Error {
        match e {
            BertError::NeedsSetting(_) => crate::Error::Config(e.to_string()),
            BertError::Log(e) => e.into(),
            BertError::Npy(e) => e.into(),
            BertError::Manifest(e) => e.into(),
            BertError::Write(e) => e.into(),
            BertError::Generator(_) => crate::Error::Other(e.to_string()),
            _ => crate::Error::Data(e.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::exit;

    #[test]
    fn each_error_keeps_its_kind_and_its_old_text() {
        let config = BertError::NeedsSetting("tensor_path");
        assert_eq!(config.to_string(), "bert configs need tensor_path");
        assert_eq!(crate::Error::from(config).exit_code(), exit::CONFIG);
        let vocab = BertError::VocabWithout { path: "vocab.txt".into(), token: "[UNK]" };
        assert_eq!(vocab.to_string(), "vocab vocab.txt has no [UNK] token");
        assert_eq!(crate::Error::from(vocab).exit_code(), exit::DATA);
        assert_eq!(crate::Error::from(BertError::Generator("a bug".into())).exit_code(), exit::OTHER);
    }
}
