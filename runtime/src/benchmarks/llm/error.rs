//! The LLM family's errors: a dataset file that cannot be read as the benchmark's ([`LlmDataError`]),
//! and an evaluation that cannot score the answers it was given ([`EvalError`]).

use crate::Error;
use crate::engines::serving::tokenizer::TokenizerError;
use std::path::PathBuf;

/// A dataset file missing, unreadable or not of the benchmark's structure; each names the file
/// and, where one is at fault, the sample.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmDataError {
    #[error("{}: the {benchmark} dataset is missing; fetch it with\n  {fetch}", path.display())]
    Missing { path: PathBuf, benchmark: &'static str, fetch: String },
    #[error("cannot read {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// Reading a file for its MD5 (`fsutil`'s message, which names the file).
    #[error("{0}")]
    Checksum(String),
    /// A DataFrame file the pickle or parquet reader refused (its message names the file).
    #[error("{0}")]
    Frame(String),
    #[error("{}:{line}:{column}: not the CNN/DailyMail dataset's JSON array: {source}", path.display())]
    NotJsonArray { path: PathBuf, line: usize, column: usize, source: serde_json::Error },
    #[error("{}: sample {index}: {source} (each entry needs tok_input, a list of token ids, and output, the reference summary)", path.display())]
    CnnEntry { path: PathBuf, index: usize, source: serde_json::Error },
    /// A column the frame lacks (the DataFrame's message).
    #[error("{}: {reason}", path.display())]
    Column { path: PathBuf, reason: String },
    #[error("{}: sample {index}: {problem}", path.display())]
    Sample { path: PathBuf, index: usize, problem: SampleProblem },
    /// The tokenizer the stand-in's reference answers are encoded with.
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
}

/// What is wrong with one sample of a dataset file.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SampleProblem {
    #[error("tok_input is empty")]
    EmptyPrompt,
    #[error("token id {id} does not fit int32")]
    IdRange { id: i64 },
    /// A prompt cell that is not a list of ids (the DataFrame's reason).
    #[error("{column} is {reason}")]
    PromptCell { column: String, reason: String },
    #[error("{column} is a {kind}, not a string")]
    NotString { column: String, kind: String },
    #[error("dataset is a {kind}, not a sub-benchmark name")]
    Subset { kind: String },
    #[error("ground_truth is a {kind}, not a string or a number")]
    GroundTruth { kind: String },
    #[error("the MBXP id {id:?} is not <language>_<entry point>")]
    MbxpId { id: String },
    #[error("metric {metric:?} is none of rouge, niah_em, qa_em")]
    Metric { metric: String },
    /// A reference answer the model's tokenizer cannot encode.
    #[error(transparent)]
    Encode(TokenizerError),
}

impl From<LlmDataError> for Error {
    /// Every dataset problem is the run's data (the tokenizer's too).
    fn from(e: LlmDataError) -> Error {
        Error::Data(e.to_string())
    }
}
