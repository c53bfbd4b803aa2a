//! The LLM family's errors: a dataset file that cannot be read as the benchmark's ([`LlmDataError`]),
//! and an evaluation that cannot score the answers it was given ([`EvalError`]).

use super::Reference;
use crate::Error;
use crate::engines::serving::tokenizer::TokenizerError;
use std::path::PathBuf;

/// How the problems are fetched.
pub(super) const FETCH: &str = "huggingface-cli download livecodebench/code_generation_lite --repo-type dataset --local-dir";

/// A dataset file missing, unreadable or not of the benchmark's structure; each names the file
/// and, where one is at fault, the sample.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmDataError {
    #[error("{}: the {benchmark} dataset is missing; fetch it with\n  {fetch}", path.display())]
    Missing { path: PathBuf, benchmark: &'static str, fetch: String },
    #[error("cannot read {}: {source}", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    /// Reading a file for its MD5 (`fsutil`'s error names the file).
    #[error(transparent)]
    Checksum(crate::fsutil::FsError),
    /// A DataFrame file the pickle or parquet reader refused (its message names the file).
    #[error(transparent)]
    Frame(crate::dataset::DataError),
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

/// An evaluation that cannot score the log it was given: a log or answer it cannot read, a
/// toolchain or problem file the code judges need, generated code that cannot be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EvalError {
    /// The accuracy log's answers against the dataset.
    #[error(transparent)]
    Log(crate::accuracy::AccuracyError),
    #[error("sample {sample}: {source}")]
    Decode { sample: usize, source: TokenizerError },
    /// An answer whose bytes are not token ids.
    #[error("sample {sample}: {source}")]
    Ids { sample: usize, source: crate::accuracy::AccuracyError },
    #[error("sample {sample}: the dataset row names no sub-benchmark (its `dataset` column is empty)")]
    NoSubset { sample: usize },
    #[error("sample {sample}: no evaluator for sub-benchmark {subset:?}: is this the {reference:?} dataset?")]
    NoGrader { sample: usize, subset: String, reference: Reference },
    #[error("the log holds no GSM8K answer, and the reference evaluation divides by their number: score a log of the whole accuracy set")]
    NoGsm8k,
    #[error(
        "the log's {count} MBXP answers are all in languages the evaluation does not run (it runs cpp, python, php, javascript, ruby, typescript), and it divides by their number"
    )]
    MbxpLanguages { count: usize },
    #[error("the log holds no answer to score")]
    NoAnswer,
    #[error(
        "MBXP's {language} answers ({count} in this log) run with `{tool}`, which cannot be started here ({source}): install it (mxeval's language_setup/ubuntu.sh lists each language's toolchain)"
    )]
    Toolchain { language: &'static str, count: usize, tool: String, source: std::io::Error },
    #[error(
        "MBXP's javascript and typescript tests require the npm package lodash, which node does not find from {}: install it there (npm install --prefix {} lodash) or set NODE_PATH to a node_modules holding it",
        dir.display(),
        dir.display()
    )]
    Lodash { dir: PathBuf },
    #[error("cannot make {}: {source}", path.display())]
    MakeDir { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error(
        "{}: {source}: LiveCodeBench release v{release} needs test.jsonl .. test{last}.jsonl there; fetch them with\n  {} {}",
        path.display(),
        FETCH,
        dir.display()
    )]
    Problems { path: PathBuf, source: std::io::Error, release: usize, last: String, dir: PathBuf },
    #[error("{}:{line}: {problem}", path.display())]
    ProblemLine { path: PathBuf, line: usize, problem: ProblemError },
    #[error("LiveCodeBench's generated code runs under Python 3.11 or newer; `{python}` is not: {stderr}")]
    OldPython { python: String, stderr: String },
    #[error("LiveCodeBench's generated code runs under Python 3.11 or newer, and `{python}` cannot be started ({source}): install python3")]
    NoPython { python: String, source: std::io::Error },
    #[error("LiveCodeBench runner: {0}")]
    Runner(SandboxError),
    #[error("the LiveCodeBench runner failed at once ({status}) without a result: is {python} Python 3.11 or newer, and may it create a network namespace?")]
    RunnerFailed { status: std::process::ExitStatus, python: String },
}

impl From<EvalError> for Error {
    /// The files an evaluation reads (its problems, the tokenizer's decoding of the log) are data;
    /// the rest (a log it cannot score, a missing toolchain) is not classified further.
    fn from(e: EvalError) -> Error {
        match e {
            EvalError::Decode { .. } | EvalError::Problems { .. } | EvalError::ProblemLine { .. } => Error::Data(e.to_string()),
            _ => Error::Other(e.to_string()),
        }
    }
}

/// A line of a LiveCodeBench problem file that is not a problem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemError {
    #[error("not a LiveCodeBench problem line: {0}")]
    NotALine(serde_json::Error),
    #[error("problem {id}: {field}")]
    Field { id: String, field: ProblemField },
}

/// Which field of a problem is wrong, and how.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProblemField {
    #[error("public_test_cases: {0}")]
    PublicTests(serde_json::Error),
    #[error("private_test_cases: neither JSON nor base64: {0}")]
    PrivateNotBase64(base64::DecodeError),
    #[error("private_test_cases: not zlib data: {0}")]
    PrivateNotZlib(std::io::Error),
    /// The pickle reader's error.
    #[error("private_test_cases: {0}")]
    PrivatePickle(crate::dataset::pickle::PickleError),
    #[error("private_test_cases: a pickled {0}, not a JSON string")]
    PrivateNotString(String),
    #[error("private_test_cases: {0}")]
    PrivateJson(serde_json::Error),
    #[error("metadata: {0}")]
    Metadata(serde_json::Error),
}

/// Generated code that cannot be started or cut from the network.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SandboxError {
    #[error("cannot start {program:?}: {source}")]
    Start { program: std::ffi::OsString, source: std::io::Error },
    /// Waiting for the child.
    #[error("{0}")]
    Wait(std::io::Error),
    #[error("cannot cut the network of {whose} ({why}): run as root or allow unprivileged user namespaces")]
    Isolation { whose: String, why: String },
}
