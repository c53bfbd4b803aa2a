//! YOLO (yolo-99, yolo-95): object detection on the COCO val2017 safe subset (1,525 images), edge
//! SingleStream, MultiStream and Offline. One sample is one image, letterboxed as ultralytics'
//! `predict` does ([`letterbox`]), run by the CPU engine ([`cpu`]: YOLOv11's ONNX export through
//! tract), its output reduced to the reference's 7-float detections ([`detect`]: NMS as
//! `predict(conf=0.001)`, boxes back to the image, COCO-91 ids). The data is the reference's layout
//! ([`dataset`]: images and the filtered `instances_val2017.json`, [`coco`]) or the synthetic set
//! ([`synthetic`]: generated images, model ([`model`]) and ground truth; never submittable).
//! Accuracy: pycocotools' `COCOeval` for boxes ([`coco_eval`]) as `accuracy-coco.py` prints it
//! ([`accuracy`]). Engine `gpu` runs the GPU engine ([`gpu`]: the network on the convnet engine,
//! input conversion and the per-anchor reduction on the device, NMS on the host), whose plan
//! `generate_engines` builds and checks against the CPU engine.

pub mod accuracy;
pub mod coco;
pub mod coco_eval;
pub mod cpu;
pub mod dataset;
pub mod detect;
pub mod error;
pub mod gpu;
pub mod letterbox;
pub mod model;
pub mod synthetic;

use super::{Benchmark, Drive, Workload, WorkloadSpec, no_engine};
use crate::accuracy::Scored;
use crate::dataset::SampleSet;
use crate::dataset::npy::NpyDtype;
use crate::dataset::qsl::{ReadError, SampleLibrary};
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch};
use crate::engines::Sample;
use crate::error::Error;
use coco::Instances;
use cpu::CpuYoloEngine;
use dataset::CocoSet;
use gpu::YoloGpuSpec;
use mlperf_config::{DatasetSource, EngineKind, Settings};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use synthetic::SyntheticCoco;

pub struct Yolo;

fn is_synthetic(settings: &Settings) -> bool {
    settings.dataset == Some(DatasetSource::Synthetic)
}

/// The synthetic set: one per scratch space.
fn synthetic_set(scratch: &Scratch) -> SyntheticCoco {
    SyntheticCoco::in_dir(&scratch.models_dir().join("synthetic/coco-yolo"))
}

/// Why this build cannot run `settings`, if it cannot: an engine other than the CPU's or the GPU's.
fn unsupported(settings: &Settings) -> Option<Error> {
    match settings.engine.unwrap_or(EngineKind::Gpu) {
        EngineKind::Cpu | EngineKind::Gpu => None,
        _ => Some(no_engine("yolo", settings)),
    }
}

fn on_gpu(settings: &Settings) -> bool {
    settings.engine.unwrap_or(EngineKind::Gpu) == EngineKind::Gpu
}

/// The set and the model a run of `settings` reads: the synthetic set's, or the config's
/// `tensor_path` (the reference's layout) and `model_path`.
fn sources(settings: &Settings) -> Result<(CocoSet, PathBuf), Error> {
    let scratch = Scratch::from_env();
    if is_synthetic(settings) {
        let set = synthetic_set(&scratch);
        return Ok((set.set(), set.model()));
    }
    let (dir, model) = scratch.dataset_and_model(settings, "yolo", "the directory holding val2017_safe/ and annotations/instances_val2017.json", "YOLOv11-L's ONNX export")?;
    Ok((CocoSet::in_dir(&dir), model))
}

/// The annotations of a run of `settings` (`images` of them, each image present), the synthetic
/// set generated first where it is one (which checks every file against its manifest: once per
/// command).
fn instances(settings: &Settings, images: usize) -> Result<(CocoSet, PathBuf, Instances), Error> {
    if is_synthetic(settings) {
        // The generated set stands for the dataset: whatever stops it is the run's data.
        synthetic::ensure(&synthetic_set(&Scratch::from_env()), &mut |m| tracing::info!("synthetic: {m}")).map_err(|e| Error::Data(e.to_string()))?;
    }
    let (set, model) = sources(settings)?;
    let instances = set.read(images)?;
    Ok((set, model, instances))
}

impl Benchmark for Yolo {
    fn id(&self) -> &'static str {
        "yolo"
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, self.id(), settings);
        if is_synthetic(settings) {
            let set = synthetic_set(scratch);
            report.items.push(Item::generated(ItemKind::Dataset, "synthetic COCO images and annotations", set.dir.clone()));
            report.items.push(Item::generated(ItemKind::Model, "synthetic YOLOv11 model", set.model()));
            return report;
        }
        let Ok((set, model)) = sources(settings) else { return DataReport::from_config_paths(scratch, self.id(), settings) };
        let remedy = |what: &str| format!("{what}: {}", error::REMEDY);
        report.items.push(Item::new(ItemKind::Dataset, "COCO val2017 safe images (1,525 JPEGs)", set.images_dir(), remedy("the images")));
        report.items.push(Item::new(ItemKind::Metadata, "filtered COCO annotations (QSL order, ground truth)", set.annotations(), remedy("the annotations")));
        report.items.push(Item::new(
            ItemKind::Model,
            "YOLOv11-L ONNX export",
            model.clone(),
            format!("`yolo export model=yolo11l.pt format=onnx` (ultralytics; MLCommons' get-ml-model-yolov11) and save it as {}", model.display()),
        ));
        report
    }

    fn prepare(&self, spec: &WorkloadSpec, _force_calibration: bool) -> Result<String, Error> {
        // Not an error: `generate_engines` over a system's benchmarks goes on to the others; a run
        // of this config says why it cannot run.
        if let Some(why) = unsupported(spec.settings) {
            return Ok(format!("{why}; nothing built"));
        }
        let (set, model, instances) = instances(spec.settings, synthetic::IMAGES)?;
        if on_gpu(spec.settings) {
            let images: Vec<PathBuf> = instances.images.iter().map(|info| set.image(info)).collect();
            return Ok(YoloGpuSpec::of(spec, model)?.generate(&set, &images, &mut |m| tracing::info!("{m}"))?);
        }
        Ok(format!("{} COCO images in {}, model {}", instances.images.len(), set.dir.display(), model.display()))
    }

    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        if let Some(why) = unsupported(spec.settings) {
            return Err(why);
        }
        let (set, model, instances) = instances(spec.settings, spec.total_samples)?;
        let (engines, size) = if on_gpu(spec.settings) {
            YoloGpuSpec::of(spec, model)?.open(spec.devices.max(1))?
        } else {
            let batch = spec.settings.batch_size("yolo").unwrap_or(1).max(1) as usize;
            let engine = Arc::new(CpuYoloEngine::load(&model, batch)?);
            let size = engine.size();
            (vec![engine as Arc<dyn crate::engines::Engine>; spec.devices.max(1)], size)
        };
        let paths: Vec<PathBuf> = instances.images.iter().map(|info| set.image(info)).collect();
        let read = move |i: usize| -> Result<Sample, ReadError> {
            let image = dataset::read_image(&paths[i], i)?;
            Ok(Sample::whole(Arc::from(letterbox::encode_sample(&image, size))))
        };
        let library = SampleLibrary::read_by("COCO", instances.images.len(), spec.performance_samples, NpyDtype::U8, read);
        Ok(Workload { drive: Drive::Batched(engines), library: Arc::new(library), synthetic: is_synthetic(spec.settings), caveats: Vec::new() })
    }

    fn score(&self, settings: &Settings, accuracy_log: &Path, _set: SampleSet) -> Result<Scored, Error> {
        if let Some(why) = unsupported(settings) {
            return Err(why);
        }
        let (set, _) = sources(settings)?;
        let instances = Instances::read(&set.annotations())?;
        Ok(accuracy::score_coco(accuracy_log, &instances)?)
    }
}
