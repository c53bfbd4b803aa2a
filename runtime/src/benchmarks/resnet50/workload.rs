//! ResNet50's engines and samples from a config: the CPU engine on the synthetic model or the
//! MLPerf model, or the GPU engine's plan (built by `generate_engines`, refused when stale), and the
//! sample library they read.

use super::super::{Drive, Workload, WorkloadSpec, no_engine};
use super::error::ResNetError;
use super::synthetic::{self, SyntheticArtifacts};
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::Scratch;
use crate::dataset::val_map::read_val_map;
use crate::engines::cpu::CpuEngine;
use crate::engines::gpu::RunOptions;
use crate::engines::gpu::device::require_cuda;
use crate::engines::gpu::spec::{CALIBRATION_ROOT, CHECK_SAMPLES, CalibrationSpec, GpuSpec};
use crate::engines::{ElementType, InputSpec, Layout, SampleSource};
use crate::error::Error;
use mlperf_config::{DataType, DatasetSource, EngineKind, InputFormat, Settings};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Seed of the synthetic workload's weights: fixed, so every machine generates the same model.
pub const SYNTHETIC_SEED: u64 = 20_261_122;

fn synthetic(settings: &Settings) -> bool {
    settings.dataset == Some(DatasetSource::Synthetic)
}

fn batch_size(settings: &Settings) -> usize {
    settings.batch_size("resnet50").unwrap_or(1).max(1) as usize
}

/// Creates (on first use) the synthetic model and labels a config asks for.
pub fn ensure_synthetic(settings: &Settings) -> Result<SyntheticArtifacts, ResNetError> {
    let size = synthetic_size(settings)?;
    synthetic::ensure_synthetic_resnet50(&Scratch::from_env().models_dir(), size, SYNTHETIC_SEED)
}

/// The val map accuracy is scored against: the synthetic labels, or the config's `map_path`.
pub fn val_map(settings: &Settings) -> Result<PathBuf, ResNetError> {
    if !synthetic(settings) {
        return Scratch::from_env().map_path(settings).ok_or(ResNetError::NEEDS_MAP_PATH);
    }
    let path = Scratch::from_env().models_dir().join(synthetic::val_map_relpath(synthetic_size(settings)?));
    if !path.is_file() {
        return Err(ResNetError::NoSyntheticLabels { path });
    }
    Ok(path)
}

/// The image side of a synthetic config.
fn synthetic_size(settings: &Settings) -> Result<usize, ResNetError> {
    Ok(settings.image_size.ok_or(ResNetError::NeedsSetting { configs: "synthetic resnet50", key: "image_size" })? as usize)
}

/// The preprocessed images a config's engine reads (`image_size`, `input_format`, `input_dtype`),
/// in batches of `batch`.
pub fn image_input(settings: &Settings, batch: usize) -> Result<InputSpec, ResNetError> {
    let size = settings.image_size.unwrap_or(224) as usize;
    // NVIDIA's int8 ImageNet tensors are the mean-subtracted pixels themselves (scale 1).
    let element = match settings.input_dtype.unwrap_or(DataType::Fp32) {
        DataType::Fp32 => ElementType::F32,
        DataType::Fp16 => ElementType::F16,
        DataType::Int8 => ElementType::I8,
        other => return Err(ResNetError::InputDtype(other.name())),
    };
    // NVIDIA's "linear" is CHW; the synthetic generator and the CPU engine agree on NCHW.
    let layout = match settings.input_format {
        Some(InputFormat::Linear) | None => Layout::Nchw,
        Some(InputFormat::Chw4 | InputFormat::Dhwc8 | InputFormat::Cdhw32) => Layout::Nhwc,
    };
    Ok(InputSpec { batch_size: batch, channels: 3, height: size, width: size, layout, element, scale: 1.0 })
}

/// The GPU plan a config describes.
fn gpu_spec(spec: &WorkloadSpec) -> Result<GpuSpec, ResNetError> {
    let settings = spec.settings;
    let input = image_input(settings, batch_size(settings))?;
    let scratch = Scratch::from_env();
    let model_path = if synthetic(settings) {
        scratch.models_dir().join(synthetic::model_relpath(input.height))
    } else {
        scratch.model_path(settings).ok_or(ResNetError::NeedsSetting { configs: "resnet50", key: "model_path" })?
    };
    let precision = match settings.precision {
        None => ElementType::F16,
        Some(p) => ElementType::from_config(p).ok_or(ResNetError::Precision(p.name()))?,
    };
    let workspace_bytes = settings.workspace_size.unwrap_or(1 << 30) as usize;
    let options = RunOptions {
        streams: settings.gpu_inference_streams.unwrap_or(1).max(1) as usize,
        use_graphs: settings.use_graphs.unwrap_or(true),
        resident_samples: if settings.start_from_device.unwrap_or(false) { spec.performance_samples } else { 0 },
        workspace_bytes,
    };
    let cache_path = match settings.cache_file.as_deref() {
        Some(path) => PathBuf::from(path),
        None => Path::new(CALIBRATION_ROOT).join("resnet50").join(model_path.with_extension("cache").file_name().unwrap_or_default()),
    };
    let calibration =
        CalibrationSpec { cache_path, batch: settings.calib_batch_size.unwrap_or(1).max(1) as usize, batches: settings.calib_max_batches.unwrap_or(500).max(1) as usize };
    let plan_path = spec.plan.plan_path("resnet50", precision, input.batch_size);
    Ok(GpuSpec { model_path, plan_path, input, precision, workspace_bytes, options, calibration })
}

/// The model file of a GPU plan, generating the synthetic one (model only) when the config is
/// synthetic.
fn ensure_model(settings: &Settings, gpu: &GpuSpec) -> Result<(), Error> {
    if synthetic(settings) {
        let root = Scratch::from_env().models_dir();
        synthetic::ensure_synthetic_resnet50_model(&root, gpu.input.height, SYNTHETIC_SEED, &mut |m| tracing::info!("synthetic: {m}"))?;
    } else if !gpu.model_path.exists() {
        return Err(Error::Data(format!("model {} not found: download the MLPerf ResNet50 ONNX model there (`mlperf info` lists every expected path)", gpu.model_path.display())));
    }
    Ok(())
}

/// Generated samples in the engine's input type and layout (synthetic configs), from `first`.
fn synthetic_samples(name: &str, input: InputSpec, first: usize, total: usize, performance: usize) -> SampleLibrary {
    SampleLibrary::generated(name, total, performance, input.sample_bytes(), move |i| {
        input.encode(&crate::engines::synthetic::synthetic_image_f32(first + i, input.height, input.layout))
    })
}

/// The preprocessed samples of real ImageNet, or an error listing what is missing.
fn real_samples(settings: &Settings, performance: usize) -> Result<SampleLibrary, Error> {
    let scratch = Scratch::from_env();
    let report = super::data::report(&scratch, settings);
    if !report.ready() {
        return Err(Error::Data(format!("the data of resnet50 is not ready:\n{}", report.render())));
    }
    let val_map = scratch.map_path(settings).ok_or_else(|| Error::Config("resnet50 configs need map_path".into()))?;
    SampleLibrary::open("ImageNet", &scratch.tensor_paths(settings), Some(&val_map), performance).map_err(Error::from)
}

/// The real calibration images: the first `images` names of the calibration list, as a library
/// over the preprocessed validation tensors (MLPerf's ImageNet calibration lists name validation
/// images), so sample `i` is the list's `i`-th image.
fn calibration_images(settings: &Settings, images: usize) -> Result<SampleLibrary, ResNetError> {
    let scratch = Scratch::from_env();
    let list =
        settings.calib_data_map.as_deref().map(|p| scratch.root.join(p)).ok_or(ResNetError::CalibrationNeeds("calib_data_map (MLPerf's calibration image list) in the config"))?;
    let val_map = scratch.map_path(settings).ok_or(ResNetError::CalibrationNeeds("map_path to find the calibration images"))?;
    let wanted = read_val_map(&list).map_err(ResNetError::CalibrationList)?;
    if wanted.len() < images {
        return Err(ResNetError::CalibrationTooShort { list, names: wanted.len(), wanted: images });
    }
    let position: std::collections::HashMap<String, usize> = read_val_map(&val_map)?.into_iter().enumerate().map(|(i, e)| (e.name, i)).collect();
    let indices = wanted[..images]
        .iter()
        .enumerate()
        .map(|(line, e)| {
            position.get(&e.name).copied().ok_or_else(|| ResNetError::CalibrationImage { list: list.clone(), line: line + 1, image: e.name.clone(), val_map: val_map.clone() })
        })
        .collect::<Result<Vec<usize>, ResNetError>>()?;
    let val = SampleLibrary::open("ImageNet", &scratch.tensor_paths(settings), Some(&val_map), indices.len())?;
    mlperf_loadgen::Qsl::load_samples(&val, &indices);
    let bytes = val.inputs().iter().map(|t| t.bytes).sum();
    Ok(SampleLibrary::generated("ImageNet calibration images", images, images, bytes, move |i| val.sample(indices[i]).to_vec()))
}

/// The int8 calibration of a GPU plan, measured on the calibration images or reused.
fn gpu_calibration(settings: &Settings, gpu: &GpuSpec, force: bool) -> Result<Option<(crate::engines::gpu::calibration::Calibration, String)>, Error> {
    if gpu.precision != ElementType::I8 {
        return Ok(None);
    }
    ensure_model(settings, gpu)?;
    let images = gpu.calibration.images();
    let library = if synthetic(settings) {
        synthetic_samples("synthetic calibration images", gpu.input, crate::engines::synthetic::image::CALIBRATION_FIRST_INDEX, images, images)
    } else {
        calibration_images(settings, images)?
    };
    mlperf_loadgen::Qsl::load_samples(&library, &(0..images).collect::<Vec<_>>());
    Ok(gpu.calibrate(&library, force)?)
}

/// `generate_engines`: the GPU plan built or reused; for the CPU engine's synthetic workload, the
/// model and its labels (generated once, before any timed run).
pub fn prepare(spec: &WorkloadSpec, force_calibration: bool) -> Result<String, Error> {
    let settings = spec.settings;
    match settings.engine.unwrap_or(EngineKind::Gpu) {
        EngineKind::Gpu => {
            let gpu = gpu_spec(spec)?;
            // Before generating any model: without a GPU nothing below can finish.
            require_cuda()?;
            ensure_model(settings, &gpu)?;
            let checked = CHECK_SAMPLES.min(gpu.batch_size());
            let library = if synthetic(settings) {
                synthetic_samples("synthetic ImageNet", gpu.input, 0, checked, checked)
            } else {
                let scratch = Scratch::from_env();
                SampleLibrary::open("ImageNet", &scratch.tensor_paths(settings), scratch.map_path(settings).as_deref(), checked)?
            };
            mlperf_loadgen::Qsl::load_samples(&library, &(0..checked).collect::<Vec<_>>());
            let calibration = gpu_calibration(settings, &gpu, force_calibration)?;
            if let Some((_, line)) = &calibration {
                tracing::info!("  {line}");
            }
            Ok(gpu.generate(&library, checked, calibration.as_ref().map(|(c, _)| c), &mut |line| tracing::info!("  {line}"))?)
        }
        EngineKind::Cpu if synthetic(settings) => {
            let a = ensure_synthetic(settings)?;
            Ok(format!("synthetic model {} ({} labels over {} classes)", a.model_path.display(), a.samples, a.labels.distinct))
        }
        kind @ (EngineKind::Cpu | EngineKind::Serving) => Ok(format!("{} engine, nothing to build", kind.name())),
    }
}

/// `calibrate`: int8 GPU plans measure (or reuse) their calibration cache.
pub fn calibrate(spec: &WorkloadSpec, force: bool) -> Result<String, Error> {
    match spec.settings.engine.unwrap_or(EngineKind::Gpu) {
        EngineKind::Gpu => {
            let gpu = gpu_spec(spec)?;
            match gpu_calibration(spec.settings, &gpu, force)? {
                Some((_, line)) => Ok(line),
                None => Ok(format!("{} precision, nothing to calibrate", gpu.precision)),
            }
        }
        kind @ (EngineKind::Cpu | EngineKind::Serving) => Ok(format!("{} engine, nothing to calibrate", kind.name())),
    }
}

/// One engine per device and the samples, as the config says.
pub fn open(spec: &WorkloadSpec) -> Result<Workload, Error> {
    let settings = spec.settings;
    let (total, performance) = (spec.total_samples, spec.performance_samples);
    match settings.engine.unwrap_or(EngineKind::Gpu) {
        EngineKind::Gpu => {
            let gpu = gpu_spec(spec)?;
            let devices = gpu.open(spec.devices)?;
            let library = if synthetic(settings) { synthetic_samples("synthetic ImageNet", gpu.input, 0, total, performance) } else { real_samples(settings, performance)? };
            Ok(Workload { drive: Drive::Batched(devices), library: Arc::new(library), synthetic: synthetic(settings), caveats: Vec::new() })
        }
        EngineKind::Cpu => {
            let input = image_input(settings, batch_size(settings))?;
            let (model, input, library) = if synthetic(settings) {
                // The synthetic model reads fp32 images of its own size.
                let artifacts = ensure_synthetic(settings)?;
                let input = crate::engines::synthetic::input_spec(artifacts.size, input.batch_size, input.layout);
                (artifacts.model_path, input, synthetic_samples("synthetic ImageNet", input, 0, total, performance))
            } else {
                let model = Scratch::from_env().model_path(settings).ok_or_else(|| Error::Config("resnet50 configs need model_path".into()))?;
                (model, input, real_samples(settings, performance)?)
            };
            let cpu = Arc::new(CpuEngine::load(&model, input)?);
            Ok(Workload { drive: Drive::Batched(vec![cpu; spec.devices.max(1)]), library: Arc::new(library), synthetic: synthetic(settings), caveats: Vec::new() })
        }
        EngineKind::Serving => Err(no_engine("resnet50", settings)),
    }
}
