//! 3D-UNet on KiTS19 kidney tumor segmentation: one sample is one preprocessed CT volume, answered
//! with its labels by the CPU engine's sliding windows ([`crate::engines::cpu_unet3d`]) and scored
//! as `accuracy_kits.py` scores it ([`crate::accuracy::kits`]). This build runs the synthetic
//! workload ([`synthetic`]: generated volumes, model and ground truth; never submittable); real
//! KiTS19 data and a GPU engine are not here yet, and configs asking for them are refused with
//! what to use instead.

pub mod synthetic;

use super::{Benchmark, Drive, Workload, WorkloadSpec, no_engine};
use crate::accuracy::Scored;
use crate::accuracy::kits::score_kits;
use crate::dataset::SampleSet;
use crate::dataset::npy::{NpyDtype, read_npy};
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch};
use crate::engines::cpu_unet3d::CpuUNet3dEngine;
use crate::error::Error;
use mlperf_config::{DatasetSource, EngineKind, Settings};
use std::path::Path;
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

/// The synthetic set, generated on first use (each call checks every file against the manifest:
/// call it once per command).
fn ensure_synthetic() -> Result<SyntheticKits, Error> {
    let set = synthetic_set(&Scratch::from_env());
    synthetic::ensure(&set, &mut |m| tracing::info!("synthetic: {m}")).map_err(Error::Data)?;
    Ok(set)
}

/// Why this build cannot run `settings`, if it cannot: real KiTS19 data, or an engine other than
/// the CPU's.
fn unsupported(settings: &Settings) -> Option<Error> {
    match settings.engine.unwrap_or(EngineKind::Gpu) {
        EngineKind::Cpu if is_synthetic(settings) => None,
        EngineKind::Cpu => Some(Error::Config(
            "this build runs 3d-unet on the synthetic KiTS19 workload only (--dataset=synthetic); the reference's preprocessed KiTS19 volumes are not read yet".into(),
        )),
        _ => Some(no_engine("3d-unet", settings)),
    }
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
        report.items.push(Item::generated(ItemKind::Preprocessed, "synthetic KiTS19 volumes", set.images()));
        report.items.push(Item::generated(ItemKind::Metadata, "synthetic KiTS19 case table", set.cases()));
        report.items.push(Item::generated(ItemKind::Metadata, "synthetic KiTS19 ground truth", set.labels()));
        report.items.push(Item::generated(ItemKind::Model, "synthetic 3D-UNet model", set.model()));
        report
    }

    fn prepare(&self, spec: &WorkloadSpec, _force_calibration: bool) -> Result<String, Error> {
        // Not an error: `generate_engines` over a system's benchmarks goes on to the others; a run
        // of this config says why it cannot run.
        if let Some(why) = unsupported(spec.settings) {
            return Ok(format!("{why}; nothing built"));
        }
        let set = ensure_synthetic()?;
        Ok(format!("synthetic KiTS19 set and model in {}", set.dir.display()))
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        if let Some(why) = unsupported(spec.settings) {
            return Err(why);
        }
        let set = ensure_synthetic()?;
        let cases = synthetic::read_cases(&set.cases()).map_err(Error::Data)?;
        if cases.len() != spec.total_samples {
            return Err(Error::Data(format!(
                "{} lists {} cases; the round's KiTS19 inference set has {}: delete it to regenerate",
                set.cases().display(),
                cases.len(),
                spec.total_samples
            )));
        }
        let shapes = cases.iter().map(|c| c.1).collect::<Vec<_>>();
        let engine = Arc::new(CpuUNet3dEngine::load(&set.model(), shapes).map_err(Error::Data)?);
        let engines = vec![engine as Arc<dyn crate::engines::Engine>; spec.devices.max(1)];
        let names = cases.iter().map(|c| format!("{}.npy", c.0)).collect();
        let library = SampleLibrary::volumes("KiTS19", &set.images(), names, NpyDtype::F32, spec.performance_samples).map_err(Error::Data)?;
        Ok(Workload { drive: Drive::Batched(engines), library: Arc::new(library), synthetic: true, caveats: Vec::new() })
    }

    fn score(&self, settings: &Settings, accuracy_log: &Path, _set: SampleSet) -> Result<Scored, String> {
        if let Some(why) = unsupported(settings) {
            return Err(why.to_string());
        }
        let set = synthetic_set(&Scratch::from_env());
        let cases = synthetic::read_cases(&set.cases())?;
        let truth = |i: usize| -> Result<Vec<u8>, String> {
            let path = set.labels().join(format!("{}.npy", cases[i].0));
            let labels = read_npy(&path)?;
            if labels.header.dtype != NpyDtype::U8 {
                return Err(format!("{}: ground truth of {}, not uint8 labels", path.display(), labels.header.dtype.numpy_name()));
            }
            Ok(labels.data().to_vec())
        };
        Ok(score_kits(accuracy_log, cases.len(), &truth)?.scored())
    }
}
