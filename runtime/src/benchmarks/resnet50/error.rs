//! The ResNet50 family's error: a config it cannot run ([`crate::Error::Config`]), images, labels
//! or calibration data that are missing or unreadable ([`crate::Error::Data`]), and the shared
//! layers' errors (the CPU engine, npy files, val maps, the synthetic manifest) kept whole with
//! their own kinds.

use crate::accuracy::AccuracyError;
use crate::dataset::DataError;
use crate::dataset::npy::NpyError;
use crate::dataset::qsl::QslError;
use crate::engines::cpu::CpuError;
use crate::engines::synthetic::manifest::ManifestError;
use crate::fsutil::FsError;
use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ResNetError {
    /// A setting the config lacks (`configs`: which configs need it).
    #[error("{configs} configs need {key}")]
    NeedsSetting { configs: &'static str, key: &'static str },
    #[error("the engines read fp32, fp16 or int8 images, not {0}")]
    InputDtype(&'static str),
    #[error("the GPU engine builds fp16 and int8 plans; this config asks for {0}")]
    Precision(&'static str),
    #[error("input_format {0} is not an image layout (linear or chw4)")]
    NotImageLayout(&'static str),
    #[error("ImageNet preprocessing writes int8, fp16 or fp32, not {0}")]
    PreprocessDtype(&'static str),
    #[error("the chw4 layout exists only for int8 (NVIDIA's int8_chw4), not {0}")]
    Chw4Dtype(&'static str),
    #[error("image_size must be positive")]
    ImageSize,
    #[error("synthetic ResNet50: image size {0} px is below the minimum of 32")]
    SyntheticSize(usize),
    #[error("no synthetic labels {}: they are the CPU engine's answers, written when a CPU run of the synthetic workload first opens it (`mlperf run` on CPU-dev)", path.display())]
    NoSyntheticLabels { path: PathBuf },
    /// What int8 calibration needs from the config (the rest of the sentence).
    #[error("int8 calibration needs {0}")]
    CalibrationNeeds(&'static str),
    #[error("calibration list: {0}")]
    CalibrationList(DataError),
    #[error("{} names {names} images; calib_batch_size x calib_max_batches asks for {wanted}", list.display())]
    CalibrationTooShort { list: PathBuf, names: usize, wanted: usize },
    #[error("{}:{line}: image {image} is not in {}", list.display(), val_map.display())]
    CalibrationImage { list: PathBuf, line: usize, image: String, val_map: PathBuf },
    #[error(transparent)]
    Decode(#[from] crate::dataset::image::ImageError),
    #[error("cannot read {}: {source}", path.display())]
    ReadImage { path: PathBuf, source: std::io::Error },
    /// An image of the val map that cannot be preprocessed; `line` counts from 1.
    #[error("{} (val map line {line}): {source}", path.display())]
    Image { path: PathBuf, line: usize, source: Box<ResNetError> },
    #[error("val map {} lists no images", path.display())]
    EmptyValMap { path: PathBuf },
    #[error("{missing} of {listed} images listed in {} are missing from {} (first: {})", val_map.display(), src_dir.display(), first.display())]
    ImagesMissing { missing: usize, listed: usize, val_map: PathBuf, src_dir: PathBuf, first: PathBuf },
    #[error("{} exists with shape {shape:?} of {dtype}, not {want:?} of {want_dtype}; pass overwrite to replace it", path.display())]
    TensorExists { path: PathBuf, shape: Vec<usize>, dtype: &'static str, want: Vec<usize>, want_dtype: &'static str },
    #[error("{}:{line}: no label for {name}", val_map.display())]
    NoLabel { val_map: PathBuf, line: usize, name: String },
    /// A synthetic val map line that does not name its sample; `line` counts from 1.
    #[error("{}:{line}: expected `{expected} <label>`, found `{found}`", path.display())]
    LabelLine { path: PathBuf, line: usize, expected: String, found: String },
    #[error("{} has {found} labels, wanted {wanted}", path.display())]
    LabelCount { path: PathBuf, found: usize, wanted: usize },
    /// The synthetic model's generator went wrong (an internal error).
    #[error("{0}")]
    Generator(&'static str),
    #[error(transparent)]
    Data(#[from] DataError),
    #[error(transparent)]
    Npy(#[from] NpyError),
    #[error(transparent)]
    Qsl(#[from] QslError),
    #[error(transparent)]
    Log(#[from] AccuracyError),
    #[error(transparent)]
    Cpu(#[from] CpuError),
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    #[error(transparent)]
    Write(#[from] FsError),
}

impl ResNetError {
    /// Scoring and preprocessing real ImageNet read the val map.
    pub(super) const NEEDS_MAP_PATH: ResNetError = ResNetError::NeedsSetting { configs: "resnet50", key: "map_path" };
}

impl From<ResNetError> for crate::Error {
    fn from(e: ResNetError) -> crate::Error {
        use ResNetError::*;
        match e {
            NeedsSetting { .. } | InputDtype(_) | Precision(_) | NotImageLayout(_) | PreprocessDtype(_) | Chw4Dtype(_) | ImageSize | SyntheticSize(_) => {
                crate::Error::Config(e.to_string())
            }
            Npy(e) => e.into(),
            Log(e) => e.into(),
            Cpu(e) => e.into(),
            Manifest(e) => e.into(),
            Write(e) => e.into(),
            Generator(_) => crate::Error::Other(e.to_string()),
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
        let config = ResNetError::NeedsSetting { configs: "resnet50", key: "map_path" };
        assert_eq!(config.to_string(), "resnet50 configs need map_path");
        assert_eq!(crate::Error::from(config).exit_code(), exit::CONFIG);
        let missing = ResNetError::EmptyValMap { path: "val_map.txt".into() };
        assert_eq!(crate::Error::from(missing).exit_code(), exit::DATA);
        assert_eq!(crate::Error::from(ResNetError::Generator("synthetic model has no fc.bias")).exit_code(), exit::OTHER);
    }
}
