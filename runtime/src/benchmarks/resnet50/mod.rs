//! ResNet50 (ImageNet 2012 classification): the CPU engine (tract) or the GPU engine (cuDNN) on
//! preprocessed ImageNet tensors, or on the synthetic workload (a seeded model of the same
//! topology and generated images, `dataset = "synthetic"`; never submittable). Real systems never
//! fall back to synthetic data: missing data is an error that says what to download or preprocess.
//!
//! - [`data`]: what a run needs in the scratch space, and `preprocess_data`.
//! - [`workload`]: engines and sample libraries from a config (`engine`, `dataset`, `model_path`,
//!   `tensor_path`, `map_path`, `image_size`, `input_dtype`, `input_format`, batch size, and the
//!   GPU plan's `precision`, `workspace_size` and calibration fields).
//!
//! Accuracy is top-1 against the val map, as `accuracy-imagenet.py` prints it; responses are one
//! little-endian int32 class id per sample (the script's `--dtype int32`, which TEST01 uses too).

pub mod accuracy;
pub mod data;
pub mod error;
pub mod imagenet;
pub mod synthetic;
pub mod workload;

use super::{AuditSpecifics, Benchmark, Workload, WorkloadSpec};
use crate::accuracy::{LogDtype, Scored};
use crate::dataset::SampleSet;
use crate::dataset::scratch::{DataReport, Scratch};
use mlperf_config::{DatasetSource, Settings};
use std::path::Path;

pub struct ResNet50;

impl Benchmark for ResNet50 {
    fn id(&self) -> &'static str {
        "resnet50"
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        match settings.dataset {
            Some(DatasetSource::Synthetic) => DataReport::synthetic(scratch, self.id(), settings),
            Some(DatasetSource::Real) | None => data::report(scratch, settings),
        }
    }

    fn preprocess(&self, scratch: &Scratch, settings: &Settings) -> Result<String, crate::Error> {
        match settings.dataset {
            Some(DatasetSource::Synthetic) => Ok("resnet50: synthetic data is generated from the sample index on first use; nothing to preprocess".into()),
            Some(DatasetSource::Real) | None => Ok(data::preprocess(scratch, settings)?),
        }
    }

    fn prepare(&self, spec: &WorkloadSpec, force_calibration: bool) -> Result<String, crate::Error> {
        workload::prepare(spec, force_calibration)
    }

    fn calibrate(&self, spec: &WorkloadSpec, force: bool) -> Result<String, crate::Error> {
        workload::calibrate(spec, force)
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, crate::Error> {
        workload::open(spec)
    }

    fn score(&self, settings: &Settings, accuracy_log: &Path, _set: SampleSet) -> Result<Scored, crate::Error> {
        let val_map = workload::val_map(settings)?;
        Ok(accuracy::score_imagenet(accuracy_log, &val_map, accuracy::DEFAULT_DTYPE)?.scored())
    }

    fn audit(&self) -> AuditSpecifics {
        // NVIDIA's TEST01 for resnet50 runs with `--dtype int32`: the class id our engines log.
        AuditSpecifics { test01_dtype: accuracy::DEFAULT_DTYPE, test06_dtype: LogDtype::Int32 }
    }
}
