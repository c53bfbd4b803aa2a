//! What several families read their data with: scratch space, file formats and the sample
//! library. A family's own dataset reader and preprocessing live in its folder.
//!
//! - [`scratch`]: NVIDIA's scratch-space layout (`$MLPERF_SCRATCH_PATH/{data,models,preprocessed_data}`)
//!   and a report of what a benchmark needs, what is present, and how to get what is missing.
//! - [`npy`]: NumPy `.npy` files, the format of every preprocessed tensor.
//! - [`pickle`], [`numpy_pickle`], [`pandas`]: Python pickles as the reference scripts write them
//!   (numpy arrays, pandas DataFrames); [`parquet`]: parquet files without Arrow.
//! - [`cvresize`]: OpenCV's INTER_AREA and INTER_LINEAR resizes, as image preprocessing uses them.
//! - [`image`]: JPEG decoding as `cv2.imread` decodes.
//! - [`val_map`]: NVIDIA's val maps, which name per-sample files and labels.
//! - [`qsl`]: the query sample library LoadGen drives and engines read samples from.

pub mod cvresize;
pub mod image;
pub mod npy;
pub mod numpy_pickle;
pub mod pandas;
pub mod parquet;
pub mod pickle;
pub mod qsl;
pub mod scratch;
pub mod val_map;

use mlperf_config::{AuditTest, BenchmarkRound};
use std::path::PathBuf;

/// Why a dataset file (a val map, a pickle, a parquet file, a QSL's samples) cannot be used: the
/// file, what is wrong and, where there is one, the fix. Every kind is [`crate::Error::Data`]: the
/// data a run needs is missing, corrupt or stale.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DataError {
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("cannot read val map {}: {source}", path.display())]
    ReadValMap { path: PathBuf, source: std::io::Error },
    /// A val-map line that does not parse; `line` counts from 1.
    #[error("{line}: {problem}")]
    ValMapLine { line: usize, problem: ValMapProblem },
    /// What a file holds is not what its format (or the reference's writer) says; `what` names the
    /// format's expectation ("not a readable pickle"), `reason` the first thing found wrong.
    #[error("{}: {what}: {reason}", path.display())]
    Malformed { path: PathBuf, what: &'static str, reason: String },
    /// A parquet file the `parquet` crate cannot read, at `at` (a row, a cell) where it says.
    #[error("{}: {}{reason}", path.display(), at.as_ref().map(|at| format!("{at}: ")).unwrap_or_default())]
    Parquet { path: PathBuf, at: Option<String>, reason: String },
    /// A val map's line error, with the file's path in front.
    #[error("{}:{source}", path.display())]
    InValMap { path: PathBuf, source: Box<DataError> },
    #[error(transparent)]
    Npy(#[from] npy::NpyError),
}

/// What is wrong with a line of a val map.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ValMapProblem {
    #[error("blank line inside the map")]
    BlankLine,
    #[error("label '{0}' is not an integer")]
    LabelNotInteger(String),
}

impl From<DataError> for crate::Error {
    fn from(e: DataError) -> crate::Error {
        match e {
            DataError::Npy(e) => e.into(),
            e => crate::Error::Data(e.to_string()),
        }
    }
}

/// Which of a benchmark's sample sets a run reads. Most benchmarks have one set (the accuracy set
/// is all or part of it); gpt-oss-120b publishes three files: performance, accuracy and TEST07's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SampleSet {
    Performance,
    Accuracy,
    /// TEST07's compliance set.
    Test07,
}

impl SampleSet {
    /// The set an accuracy run, or a performance run (perhaps an audit's), reads.
    pub fn of_run(accuracy: bool, audit: Option<AuditTest>) -> SampleSet {
        match (accuracy, audit) {
            (true, _) => SampleSet::Accuracy,
            (false, Some(AuditTest::Test07)) => SampleSet::Test07,
            (false, _) => SampleSet::Performance,
        }
    }

    /// How messages name it.
    pub fn name(self) -> &'static str {
        match self {
            SampleSet::Performance => "performance",
            SampleSet::Accuracy => "accuracy",
            SampleSet::Test07 => "TEST07",
        }
    }

    /// Its number of samples in the round (LoadGen's total sample count).
    pub fn size(self, bench: &BenchmarkRound) -> u64 {
        match self {
            SampleSet::Performance => bench.dataset_size,
            SampleSet::Accuracy => bench.accuracy_sample_count(),
            SampleSet::Test07 => bench.test07.map_or(bench.dataset_size, |t| t.samples),
        }
    }
}
