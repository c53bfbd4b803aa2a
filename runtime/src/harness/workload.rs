//! The configured workload: the engine and sample library a config names (`engine`, `dataset`,
//! `model_path`, `tensor_path`, `map_path`, `image_size`, batch size), how the batching SUT drives
//! the engines, and the accuracy scoring that follows an AccuracyOnly run. Real systems never fall
//! back to synthetic data: missing data is an error that says what to download or preprocess.
//!
//! [`open`] is the one place engines are built from a config: the harness and `mlperf bench
//! engine` both call it, so the benchmark measures exactly what a run drives.

use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{self, Scratch};
use crate::engines::cpu::{CpuEngine, InputDtype, InputSpec, Layout};
use crate::engines::gpu::setup::{self as gpu_setup, PlanIdentity};
use crate::engines::gpu::{GpuEngine, builder, plan};
use crate::engines::synthetic::{self, SyntheticArtifacts};
use crate::harness::batcher::BatcherConfig;
use crate::harness::engine::Engine;
use mlperf_config::{DataType, DatasetSource, EngineKind, InputFormat, Settings, SystemInfo};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Seed of the synthetic workload's weights: fixed, so every machine generates the same model.
pub const SYNTHETIC_SEED: u64 = 20_261_122;

/// A ready workload: one engine per device, the samples, and the val map accuracy is scored
/// against. [`batcher`] says how the batching SUT drives the engines.
pub struct Workload {
    pub devices: Vec<Arc<dyn Engine>>,
    pub library: Arc<SampleLibrary>,
    pub val_map: PathBuf,
    pub synthetic: bool,
}

/// Creates (on first use) the synthetic model and labels a config asks for.
pub fn ensure_synthetic(settings: &Settings) -> Result<SyntheticArtifacts, String> {
    let size = settings.image_size.ok_or("synthetic resnet50 configs need image_size")? as usize;
    synthetic::ensure_synthetic_resnet50(&Scratch::from_env().models_dir(), size, SYNTHETIC_SEED)
}

fn layout(settings: &Settings) -> Layout {
    // NVIDIA's "linear" is CHW; the synthetic generator and the CPU engine agree on NCHW.
    match settings.input_format {
        Some(InputFormat::Linear) | None => Layout::Nchw,
        Some(_) => Layout::Nhwc,
    }
}

/// The preprocessed images a config's engine reads (`image_size`, `input_format`, `input_dtype`),
/// in batches of `batch`.
pub fn image_input(settings: &Settings, batch: usize) -> Result<InputSpec, String> {
    let size = settings.image_size.unwrap_or(224) as usize;
    let dtype = match settings.input_dtype.unwrap_or(DataType::Fp32) {
        DataType::Fp32 => InputDtype::F32,
        DataType::Fp16 => InputDtype::F16,
        // NVIDIA's int8 ImageNet tensors are the mean-subtracted pixels themselves (scale 1).
        DataType::Int8 => InputDtype::I8 { scale: 1.0 },
        other => return Err(format!("the engines read fp32, fp16 or int8 images, not {}", other.name())),
    };
    Ok(InputSpec { batch_size: batch, channels: 3, height: size, width: size, layout: layout(settings), dtype })
}

/// Devices the harness runs one engine instance on: the system's GPUs, or the whole machine as one
/// device when it has none.
pub fn device_count(system: Option<&SystemInfo>) -> usize {
    system.map_or(1, |s| s.hardware.gpus_per_node.max(1) as usize)
}

/// How the batching SUT drives the configured engine: the config's batcher knobs, except that a
/// CPU engine's "device" is the whole machine and runs one single-threaded batch per core.
/// `gpu_inference_streams` (CUDA streams per GPU) does not apply to it: every scenario config
/// inherits NVIDIA's GPU value (1 for ResNet50 Offline), which once held the CPU engine to one
/// core of two (200 samples/s against 400).
pub fn batcher(settings: &Settings, benchmark: &str) -> BatcherConfig {
    let mut config = crate::harness::batcher_config(settings, benchmark);
    if settings.engine == Some(EngineKind::Cpu) {
        config.workers_per_device = std::thread::available_parallelism().map_or(1, |n| n.get());
    }
    config
}

/// Builds the workload of `benchmark` as `settings` configure it, with one engine per device
/// (`id` names the GPU plan).
pub fn open(benchmark: &str, settings: &Settings, total: usize, performance: usize, devices: usize, id: &PlanIdentity) -> Result<Workload, String> {
    let engine = settings.engine.unwrap_or(EngineKind::Gpu);
    if engine == EngineKind::Gpu {
        return open_gpu(benchmark, settings, total, performance, devices, id);
    }
    if engine != EngineKind::Cpu || benchmark != "resnet50" {
        return Err(format!(
            "no {} engine for {benchmark} in this build: the CPU engine runs resnet50, the GPU engine resnet50; serving backends are not built yet. \
             Use --backend=null or --backend=fixed_latency to exercise the harness",
            engine.name()
        ));
    }
    let batch = settings.batch_size("resnet50").unwrap_or(1).max(1) as usize;
    let layout = layout(settings);
    if settings.dataset == Some(DatasetSource::Synthetic) {
        let artifacts = ensure_synthetic(settings)?;
        let size = artifacts.size;
        let spec = synthetic::input_spec(size, batch, layout);
        let cpu = Arc::new(CpuEngine::load(&artifacts.model_path, spec)?);
        let library = SampleLibrary::generated("synthetic ImageNet", total, performance, spec.sample_bytes(), move |i| synthetic::synthetic_image(i, size, layout));
        return Ok(Workload { devices: vec![cpu; devices.max(1)], library: Arc::new(library), val_map: artifacts.val_map_path, synthetic: true });
    }
    let (library, val_map) = real_samples(benchmark, settings, performance)?;
    let spec = image_input(settings, batch)?;
    let model = Scratch::from_env().model_path(settings).ok_or("resnet50 configs need model_path")?;
    let cpu = Arc::new(CpuEngine::load(&model, spec)?);
    Ok(Workload { devices: vec![cpu; devices.max(1)], library: Arc::new(library), val_map, synthetic: false })
}

/// The GPU engine on every GPU of the system, from a plan `generate_engines` built. A missing, stale
/// or corrupt plan is an error: a run never builds or silently runs an outdated engine.
fn open_gpu(benchmark: &str, settings: &Settings, total: usize, performance: usize, devices: usize, id: &PlanIdentity) -> Result<Workload, String> {
    let gpu = gpu_setup::setup(benchmark, settings, id, performance)?;
    let calibration = gpu.cached_calibration()?;
    let key = builder::wanted_key(&gpu.build_request(None, calibration.as_ref()))?;
    let rebuild = "run `mlperf generate_engines` with the same selection first";
    match plan::check(&gpu.plan_path, &key) {
        plan::PlanStatus::Fresh => {}
        plan::PlanStatus::Missing => return Err(format!("no engine plan {}: {rebuild}", gpu.plan_path.display())),
        plan::PlanStatus::Stale(d) => return Err(format!("engine plan {} is stale ({}): {rebuild}", gpu.plan_path.display(), d.join("; "))),
        plan::PlanStatus::Corrupt(e) => return Err(format!("engine plan {} is corrupt ({e}): {rebuild}", gpu.plan_path.display())),
    }
    let loaded = plan::Plan::load(&gpu.plan_path)?;
    let engines = GpuEngine::open_all(devices, &loaded, gpu.input, gpu.options)?;
    let (library, val_map) = if gpu.synthetic {
        // Labels exist only once an accuracy run generated them (see `ensure_synthetic`).
        (gpu.synthetic_samples(total, performance), Scratch::from_env().models_dir().join(synthetic::val_map_relpath(gpu.input.height)))
    } else {
        real_samples(benchmark, settings, performance)?
    };
    Ok(Workload { devices: engines, library: Arc::new(library), val_map, synthetic: gpu.synthetic })
}

/// The preprocessed samples and val map of a real dataset, or an error listing what is missing.
fn real_samples(benchmark: &str, settings: &Settings, performance: usize) -> Result<(SampleLibrary, PathBuf), String> {
    let scratch = Scratch::from_env();
    let report = scratch::check(&scratch, benchmark, settings);
    if !report.ready() {
        return Err(format!("the data of {benchmark} is not ready:\n{}", report.render()));
    }
    let val_map = scratch.map_path(settings).ok_or("resnet50 configs need map_path")?;
    Ok((SampleLibrary::open("ImageNet", &scratch.tensor_paths(settings), Some(&val_map), performance)?, val_map))
}

/// Scores an AccuracyOnly run in `dir` and writes `accuracy.txt` there (the official script's format).
pub fn score(dir: &Path, val_map: &Path, synthetic: bool) -> Result<String, String> {
    let score = crate::accuracy::imagenet::score_imagenet(&dir.join("mlperf_log_accuracy.json"), val_map, crate::accuracy::log::LogDtype::Int32)?;
    let text = score.accuracy_txt();
    crate::accuracy::write_accuracy_txt(&dir.join("accuracy.txt"), &text)?;
    if synthetic {
        let note = "synthetic workload: accuracy measures agreement with the reference CPU engine's own labels, not ImageNet accuracy; never submittable\n";
        crate::fsutil::write_atomic(&dir.join("ACCURACY_NOTE.txt"), note.as_bytes())?;
    }
    Ok(text.trim().to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_engines_run_one_worker_per_core_whatever_gpu_streams_they_inherit() {
        let cores = std::thread::available_parallelism().unwrap().get();
        let mut settings =
            Settings { engine: Some(EngineKind::Cpu), gpu_inference_streams: Some(1), gpu_batch_size: Some(vec![("resnet50".into(), 8)].into()), ..Settings::default() };
        let cpu = batcher(&settings, "resnet50");
        assert_eq!((cpu.workers_per_device, cpu.batch_size), (cores, 8));

        // GPU engines keep the config's streams as workers per device.
        settings.engine = Some(EngineKind::Gpu);
        settings.gpu_inference_streams = Some(3);
        assert_eq!(batcher(&settings, "resnet50").workers_per_device, 3);
    }

    #[test]
    fn benchmarks_without_an_engine_are_refused_with_what_to_use() {
        let settings = Settings { engine: Some(EngineKind::Cpu), ..Settings::default() };
        let id = PlanIdentity { system: "CPU-dev", scenario: "Offline", workload: "default" };
        let e = open("bert", &settings, 10, 10, 1, &id).err().unwrap();
        assert!(e.contains("no cpu engine for bert") && e.contains("--backend=null"), "{e}");
    }
}
