//! 3D-UNet on KiTS19 kidney tumor segmentation: one sample is one preprocessed CT volume, answered
//! with its labels by the CPU engine's sliding windows ([`crate::benchmarks::unet3d::cpu`]) and scored
//! as `accuracy_kits.py` scores it ([`crate::benchmarks::unet3d::accuracy`]). Volumes and ground truth come in
//! the reference's preprocessed layout ([`preprocessed`]): the config's `tensor_path` for real
//! KiTS19 data, or the synthetic set ([`synthetic`]: generated volumes, model and ground truth;
//! never submittable). Engine `gpu` runs the GPU engine ([`gpu`]: the network on the convnet
//! engine, the sliding windows on the device), whose plan `generate_engines` builds and checks
//! against the CPU engine.

pub mod accuracy;
pub mod cpu;
pub mod error;
pub mod gpu;
pub mod model;
pub mod preprocessed;
pub mod synthetic;

use super::{Benchmark, Drive, Workload, WorkloadSpec, no_engine};
use crate::accuracy::Scored;
use crate::benchmarks::unet3d::accuracy::score_kits;
use crate::benchmarks::unet3d::cpu::CpuUNet3dEngine;
use crate::dataset::SampleSet;
use crate::dataset::npy::NpyDtype;
use crate::dataset::qsl::{ReadError, SampleLibrary};
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch};
use crate::engines::Sample;
use crate::error::Error;
use error::UNetError;
use gpu::UNetGpuSpec;
use mlperf_config::{DatasetSource, EngineKind, Settings};
use preprocessed::Preprocessed;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use synthetic::SyntheticKits;

pub struct UNet3d;

/// The inference cases of the reference (`meta/inference_cases.json`), in sample order.
/// `case_00400` is the reference's copy of `case_00185`.
pub const INFERENCE_CASES: [&str; 43] = [
    "case_00000",
    "case_00003",
    "case_00005",
    "case_00006",
    "case_00012",
    "case_00024",
    "case_00034",
    "case_00041",
    "case_00044",
    "case_00049",
    "case_00052",
    "case_00056",
    "case_00061",
    "case_00065",
    "case_00066",
    "case_00070",
    "case_00076",
    "case_00078",
    "case_00080",
    "case_00084",
    "case_00086",
    "case_00087",
    "case_00092",
    "case_00111",
    "case_00112",
    "case_00125",
    "case_00128",
    "case_00138",
    "case_00157",
    "case_00160",
    "case_00161",
    "case_00162",
    "case_00169",
    "case_00171",
    "case_00176",
    "case_00185",
    "case_00187",
    "case_00189",
    "case_00198",
    "case_00203",
    "case_00206",
    "case_00207",
    "case_00400",
];

fn is_synthetic(settings: &Settings) -> bool {
    settings.dataset == Some(DatasetSource::Synthetic)
}

/// The synthetic set: one per scratch space.
fn synthetic_set(scratch: &Scratch) -> SyntheticKits {
    SyntheticKits::in_dir(&scratch.models_dir().join("synthetic/kits19"))
}

/// Why this build cannot run `settings`, if it cannot: an engine other than the CPU's or the GPU's.
fn unsupported(settings: &Settings) -> Option<Error> {
    match settings.engine.unwrap_or(EngineKind::Gpu) {
        EngineKind::Cpu | EngineKind::Gpu => None,
        _ => Some(no_engine("3d-unet", settings)),
    }
}

fn on_gpu(settings: &Settings) -> bool {
    settings.engine.unwrap_or(EngineKind::Gpu) == EngineKind::Gpu
}

/// The cases and the model a run of `settings` reads: the synthetic set's, or the config's
/// `tensor_path` (the directory the reference's preprocess.py wrote) and `model_path`.
fn sources(settings: &Settings) -> Result<(Preprocessed, PathBuf), Error> {
    let scratch = Scratch::from_env();
    if is_synthetic(settings) {
        let set = synthetic_set(&scratch);
        return Ok((set.preprocessed(), set.model()));
    }
    let (dir, model) = scratch.dataset_and_model(settings, "3d-unet", "the directory the reference's preprocess.py wrote (its --results_dir)", "the reference's ONNX model")?;
    Ok((Preprocessed::in_dir(&dir), model))
}

/// The cases of a run of `settings`, the synthetic set generated first where it is one (this checks
/// every file against the set's manifest: once per command).
fn cases(settings: &Settings) -> Result<(Preprocessed, PathBuf, Vec<preprocessed::Case>), Error> {
    if is_synthetic(settings) {
        // The generated set stands for the dataset: whatever stops it is the run's data, as always.
        synthetic::ensure(&synthetic_set(&Scratch::from_env()), &mut |m| tracing::info!("synthetic: {m}")).map_err(|e| Error::Data(e.to_string()))?;
    }
    let (set, model) = sources(settings)?;
    let cases = set.read_index()?;
    Ok((set, model, cases))
}

impl Benchmark for UNet3d {
    fn id(&self) -> &'static str {
        "3d-unet"
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        if !is_synthetic(settings) {
            return DataReport::from_config_paths(scratch, self.id(), settings);
        }
        let set = synthetic_set(scratch);
        let mut report = DataReport::new(scratch, self.id(), settings);
        report.items.push(Item::generated(ItemKind::Preprocessed, "synthetic KiTS19 volumes and ground truth", set.preprocessed().dir));
        report.items.push(Item::generated(ItemKind::Model, "synthetic 3D-UNet model", set.model()));
        report
    }

    fn prepare(&self, spec: &WorkloadSpec, _force_calibration: bool) -> Result<String, Error> {
        // Not an error: `generate_engines` over a system's benchmarks goes on to the others; a run
        // of this config says why it cannot run.
        if let Some(why) = unsupported(spec.settings) {
            return Ok(format!("{why}; nothing built"));
        }
        let (set, model, cases) = cases(spec.settings)?;
        if on_gpu(spec.settings) {
            let gpu = UNetGpuSpec::of(spec, model)?;
            return Ok(gpu.generate(&set, &cases, is_synthetic(spec.settings), &mut |m| tracing::info!("{m}"))?);
        }
        Ok(format!("{} KiTS19 cases in {}, model {}", cases.len(), set.dir.display(), model.display()))
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        if let Some(why) = unsupported(spec.settings) {
            return Err(why);
        }
        let (set, model, cases) = cases(spec.settings)?;
        if cases.len() != spec.total_samples {
            return Err(Error::Data(format!("{} lists {} cases; the round's KiTS19 inference set has {}", set.index().display(), cases.len(), spec.total_samples)));
        }
        let shapes = cases.iter().map(|c| c.shape).collect::<Vec<_>>();
        let engines = if on_gpu(spec.settings) {
            UNetGpuSpec::of(spec, model)?.open(spec.devices.max(1), shapes)?
        } else {
            let engine = Arc::new(CpuUNet3dEngine::load(&model, shapes)?);
            vec![engine as Arc<dyn crate::engines::Engine>; spec.devices.max(1)]
        };
        let total = cases.len();
        let read = move |i: usize| set.read_case(&cases[i]).map(|case| Sample::whole(Arc::from(&case.image[..]))).map_err(ReadError::from);
        let library = SampleLibrary::read_by("KiTS19", total, spec.performance_samples, NpyDtype::F32, read);
        Ok(Workload { drive: Drive::Batched(engines), library: Arc::new(library), synthetic: is_synthetic(spec.settings), caveats: Vec::new() })
    }

    fn score(&self, settings: &Settings, accuracy_log: &Path, _set: SampleSet) -> Result<Scored, Error> {
        if let Some(why) = unsupported(settings) {
            return Err(why);
        }
        let (set, _) = sources(settings)?;
        let cases = set.read_index()?;
        let truth = |i: usize| -> Result<Vec<u8>, UNetError> { Ok(set.read_case(&cases[i])?.labels.to_vec()) };
        Ok(score_kits(accuracy_log, cases.len(), &truth)?.scored())
    }
}
