//! The 3D-UNet family's error: a model the CPU engine cannot run, preprocessed KiTS19 files that
//! are missing or not the reference's ([`crate::Error::Data`]), an accuracy log that cannot be
//! scored, and the shared layers' errors kept whole with their own kinds.

use crate::accuracy::AccuracyError;
use crate::dataset::numpy_pickle::ArrayError;
use crate::dataset::pickle::PickleError;
use crate::engines::synthetic::manifest::ManifestError;
use crate::fsutil::FsError;
use std::path::PathBuf;
use tract_onnx::prelude::TractError;

/// What makes the preprocessed layout, for errors about it.
pub(super) const REMEDY: &str =
    "the reference's preprocess.py writes it (mlcommons/inference vision/medical_imaging/3d-unet-kits19: --mode preprocess --results_dir <this directory>)";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum UNetError {
    #[error("CPU 3D-UNet engine: cannot read ONNX model {origin}: {cause:#}")]
    NotOnnx { origin: String, cause: TractError },
    /// tract refused a query about the model or a step of running it (`what`: "model X" or
    /// "model X failed").
    #[error("CPU 3D-UNet engine: {what}: {cause:#}")]
    Tract { what: String, cause: TractError },
    #[error("CPU 3D-UNet engine: model {origin} takes {shape}; a 3D-UNet takes [N, 1, R, R, R] (a cube of side R)")]
    InputShape { origin: String, shape: String },
    #[error("CPU 3D-UNet engine: model {origin} does not take 1 x 1 x {roi}^3: {cause:#}")]
    Roi { origin: String, roi: usize, cause: TractError },
    #[error("CPU 3D-UNet engine: model {origin} gave {found} logits for a window; a 3D-UNet gives {classes} x {roi}^3")]
    Logits { origin: String, found: usize, classes: usize, roi: usize },
    #[error("CPU 3D-UNet engine: sample {index} is not in its case table of {cases}")]
    UnknownSample { index: usize, cases: usize },
    #[error("CPU 3D-UNet engine: sample {index} holds {bytes} bytes; its case is {shape:?}, {} bytes of f32", 4 * shape.iter().product::<usize>())]
    SampleSize { index: usize, bytes: usize, shape: [usize; 3] },
    #[error("a volume of {shape:?} voxels: each side must be at least {roi} and a multiple of {stride} (the preprocessing pads them so)")]
    Volume { shape: [usize; 3], roi: usize, stride: usize },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{}: {source}", path.display())]
    Pickle { path: PathBuf, source: PickleError },
    /// The index is not the reference's (`problem` says how); the remedy follows.
    #[error("{}: {problem}; {REMEDY}", path.display())]
    Index { path: PathBuf, problem: String },
    /// The index cannot be read at all; the remedy follows.
    #[error("{source}; {REMEDY}")]
    IndexUnreadable { source: Box<UNetError> },
    #[error("{}: not the [image, label] pair preprocess.py writes", path.display())]
    NotAPair { path: PathBuf },
    #[error("{}: the {what} is {source}", path.display())]
    Array { path: PathBuf, what: &'static str, source: ArrayError },
    #[error("{}: the {what} has shape {found:?}, but {index} gives {wanted:?}", path.display())]
    ArrayShape { path: PathBuf, what: &'static str, found: Vec<usize>, index: &'static str, wanted: [usize; 4] },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("{logged} of {cases} cases are logged ({entries} entries): score the log of a complete accuracy run")]
    Incomplete { logged: usize, cases: usize, entries: usize },
    #[error(transparent)]
    Log(#[from] AccuracyError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Write(#[from] FsError),
    /// The GPU engine (its plan, device or kernels) failed.
    #[error("GPU 3D-UNet engine: {0}")]
    Gpu(#[from] crate::engines::gpu::GpuError),
}

impl From<UNetError> for crate::Error {
    /// The model, the preprocessed files and the log are the run's data (as the workload has
    /// always called them); a volume the engine cannot run or a file it cannot write is not
    /// classified further.
    fn from(e: UNetError) -> crate::Error {
        match e {
            UNetError::Log(e) => e.into(),
            UNetError::Manifest(e) => e.into(),
            UNetError::Write(e) => e.into(),
            UNetError::Volume { .. } | UNetError::CreateDir { .. } | UNetError::Gpu(_) => crate::Error::Other(e.to_string()),
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
        let sample = UNetError::SampleSize { index: 3, bytes: 8, shape: [1, 2, 2] };
        assert_eq!(sample.to_string(), "CPU 3D-UNet engine: sample 3 holds 8 bytes; its case is [1, 2, 2], 16 bytes of f32");
        assert_eq!(crate::Error::from(sample).exit_code(), exit::DATA);
        let volume = UNetError::Volume { shape: [4, 4, 5], roi: 4, stride: 2 };
        assert_eq!(crate::Error::from(volume).exit_code(), exit::OTHER);
    }
}
