//! The YOLO family's error (engine, dataset, synthetic set); the COCO files' own errors are
//! [`super::coco::CocoError`], kept whole.

use super::coco::CocoError;
use crate::dataset::image::ImageError;
use crate::engines::synthetic::manifest::ManifestError;
use crate::fsutil::FsError;
use std::path::PathBuf;
use tract_onnx::prelude::TractError;

/// Where the reference's COCO layout comes from, for errors about it.
pub(super) const REMEDY: &str = "the reference's filter_coco_safe_images.py and create_safe_annotations.py write it (mlcommons/inference \
     vision/classification_and_detection/yolo), or MLCommons' yolo-coco2017-filtered download";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum YoloError {
    #[error("CPU YOLO engine: cannot read ONNX model {origin}: {cause:#}")]
    NotOnnx { origin: String, cause: TractError },
    /// tract refused a query about the model or a step of running it (`what`: "model X" or
    /// "model X failed").
    #[error("CPU YOLO engine: {what}: {cause:#}")]
    Tract { what: String, cause: TractError },
    #[error("YOLO engine: model {origin} takes {shape}; a YOLO export takes `images` [N, 3, S, S] (S a multiple of 32)")]
    InputShape { origin: String, shape: String },
    #[error("CPU YOLO engine: model {origin} gave {found} values for {images} images; a YOLO export at {size} px gives [N, 84, {anchors}]")]
    OutputShape { origin: String, found: usize, images: usize, size: usize, anchors: usize },
    #[error("YOLO engine: sample {index} holds {bytes} bytes; a letterboxed sample at {size} px holds {wanted}")]
    SampleSize { index: usize, bytes: usize, size: usize, wanted: usize },
    #[error("{} lists {found} images; the round's COCO safe subset has {wanted}: {REMEDY}", path.display())]
    ImageCount { path: PathBuf, found: usize, wanted: usize },
    #[error("{} (sample {sample}) is missing: {REMEDY}", path.display())]
    MissingImage { path: PathBuf, sample: usize },
    #[error("cannot read {} (sample {sample}): {source}", path.display())]
    ReadImage { path: PathBuf, sample: usize, source: std::io::Error },
    #[error("{} (sample {sample}): {source}", path.display())]
    Undecodable { path: PathBuf, sample: usize, source: ImageError },
    #[error("{} (sample {sample}): not a binary PPM (P6, 8 bits) as the synthetic set writes", path.display())]
    NotPpm { path: PathBuf, sample: usize },
    #[error("cannot create {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Coco(#[from] CocoError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Write(#[from] FsError),
    /// The GPU engine (its plan, device or kernels) failed.
    #[error("GPU YOLO engine: {0}")]
    Gpu(#[from] crate::engines::gpu::GpuError),
}

impl From<YoloError> for crate::Error {
    /// The model, the images and the annotations are the run's data; a sample of the wrong size,
    /// a failed run or a directory that cannot be made is not classified further.
    fn from(e: YoloError) -> crate::Error {
        match e {
            YoloError::Coco(e) => e.into(),
            YoloError::Manifest(e) => e.into(),
            YoloError::Write(e) => e.into(),
            YoloError::Gpu(e) => e.into(),
            YoloError::SampleSize { .. } | YoloError::OutputShape { .. } | YoloError::CreateDir { .. } => crate::Error::Other(e.to_string()),
            _ => crate::Error::Data(e.to_string()),
        }
    }
}
