//! What several families read their data with: scratch space, file formats and the sample
//! library. A family's own dataset reader and preprocessing live in its folder.
//!
//! - [`scratch`]: NVIDIA's scratch-space layout (`$MLPERF_SCRATCH_PATH/{data,models,preprocessed_data}`)
//!   and a report of what a benchmark needs, what is present, and how to get what is missing.
//! - [`npy`]: NumPy `.npy` files, the format of every preprocessed tensor.
//! - [`pickle`], [`numpy_pickle`], [`pandas`]: Python pickles as the reference scripts write them
//!   (numpy arrays, pandas DataFrames); [`parquet`]: parquet files without Arrow.
//! - [`cvresize`]: OpenCV's INTER_AREA resize, as image preprocessing uses it.
//! - [`val_map`]: NVIDIA's val maps, which name per-sample files and labels.
//! - [`qsl`]: the query sample library LoadGen drives and engines read samples from.

pub mod cvresize;
pub mod npy;
pub mod numpy_pickle;
pub mod pandas;
pub mod parquet;
pub mod pickle;
pub mod qsl;
pub mod scratch;
pub mod val_map;

use mlperf_config::{AuditTest, BenchmarkRound};

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
