//! From a compiled config to the GPU engine: where its model and plan are, what samples it reads,
//! and how it runs (`gpu_batch_size`, `precision`, `input_dtype`, `input_format`, `image_size`,
//! `workspace_size`, `gpu_inference_streams`, `use_graphs`, `start_from_device`). Shared by
//! `generate_engines` and the harness, so both always mean the same plan.

use super::RunOptions;
use super::builder::BuildRequest;
use super::calibration::{self, CacheOutcome, Calibration, CalibrationSet};
use super::exec::InputFormat;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::Scratch;
use crate::engines::cpu::{InputDtype, InputSpec, Layout};
use crate::engines::synthetic;
use mlperf_config::{DatasetSource, Settings};
use std::path::{Path, PathBuf};

/// Where plans go (NVIDIA's `build/engines`).
pub const ENGINE_ROOT: &str = "build/engines";

pub struct GpuSetup {
    pub model_path: PathBuf,
    pub plan_path: PathBuf,
    pub batch_size: usize,
    pub precision: String,
    pub input: InputFormat,
    pub cpu_input: InputSpec,
    pub workspace_bytes: usize,
    pub options: RunOptions,
    pub synthetic: bool,
    /// Int8 calibration: the cache (`cache_file`), the image list (`calib_data_map`), and
    /// `calib_max_batches` batches of `calib_batch_size` images.
    pub cache_path: PathBuf,
    pub calib_list: Option<PathBuf>,
    pub calib_batch: usize,
    pub calib_batches: usize,
}

/// Which run the plan is for: (system id, scenario, workload section name), NVIDIA's path parts.
pub struct PlanIdentity<'a> {
    pub system: &'a str,
    pub scenario: &'a str,
    pub workload: &'a str,
}

pub fn setup(benchmark: &str, settings: &Settings, id: &PlanIdentity, performance_samples: usize) -> Result<GpuSetup, String> {
    if benchmark != "resnet50" {
        return Err(format!(
            "no GPU engine for {benchmark} yet (the GPU engine builds image classifiers: resnet50); use --backend=null or --backend=fixed_latency to exercise the harness"
        ));
    }
    let batch_size = settings.batch_size(benchmark).unwrap_or(1).max(1) as usize;
    let cpu_input = crate::harness::workload::image_input(settings, batch_size)?;
    let size = cpu_input.height;
    let (dtype, scale) = match cpu_input.dtype {
        InputDtype::F32 => (0, 1.0),
        InputDtype::F16 => (1, 1.0),
        InputDtype::I8 { scale } => (2, scale),
    };
    let input = InputFormat { channels: cpu_input.channels, height: size, width: cpu_input.width, dtype, scale, nchw: cpu_input.layout == Layout::Nchw };
    let synthetic = settings.dataset == Some(DatasetSource::Synthetic);
    let scratch = Scratch::from_env();
    let model_path = if synthetic { scratch.models_dir().join(synthetic::model_relpath(size)) } else { scratch.model_path(settings).ok_or("resnet50 configs need model_path")? };
    let precision = settings.precision.map_or("fp16", |p| p.name()).to_string();
    let plan_path = super::plan::engine_path(ENGINE_ROOT.as_ref(), id.system, id.scenario, benchmark, &precision, batch_size, id.workload);
    let workspace_bytes = settings.workspace_size.unwrap_or(1 << 30) as usize;
    let options = RunOptions {
        streams: settings.gpu_inference_streams.unwrap_or(1).max(1) as usize,
        use_graphs: settings.use_graphs.unwrap_or(true),
        resident_samples: if settings.start_from_device.unwrap_or(false) { performance_samples } else { 0 },
        workspace_bytes,
    };
    let cache_path = match settings.cache_file.as_deref() {
        Some(path) => PathBuf::from(path),
        None => Path::new(CALIBRATION_ROOT).join(benchmark).join(model_path.with_extension("cache").file_name().unwrap_or_default()),
    };
    let calib_list = settings.calib_data_map.as_deref().map(|p| scratch.root.join(p));
    let (calib_batch, calib_batches) = (settings.calib_batch_size.unwrap_or(1).max(1) as usize, settings.calib_max_batches.unwrap_or(500).max(1) as usize);
    Ok(GpuSetup { model_path, plan_path, batch_size, precision, input, cpu_input, workspace_bytes, options, synthetic, cache_path, calib_list, calib_batch, calib_batches })
}

/// Where calibration caches go when the config names no `cache_file`.
pub const CALIBRATION_ROOT: &str = "build/calibration";

impl GpuSetup {
    /// The model file, generating the synthetic one (model only) when the config is synthetic.
    pub fn ensure_model(&self) -> Result<(), String> {
        if self.synthetic {
            let root = Scratch::from_env().models_dir();
            synthetic::ensure_synthetic_resnet50_model(&root, self.input.height, crate::harness::workload::SYNTHETIC_SEED, &mut |m| eprintln!("synthetic: {m}"))?;
        } else if !self.model_path.exists() {
            return Err(format!("model {} not found: download the MLPerf ResNet50 ONNX model there (`mlperf info` lists every expected path)", self.model_path.display()));
        }
        Ok(())
    }

    pub fn build_request<'a>(&'a self, check: Option<(&'a dyn crate::harness::engine::SampleSource, usize)>, calibration: Option<&'a Calibration>) -> BuildRequest<'a> {
        BuildRequest {
            model_path: &self.model_path,
            plan_path: self.plan_path.clone(),
            batch_size: self.batch_size,
            precision: &self.precision,
            input: self.input,
            workspace_limit: self.workspace_bytes,
            check_samples: check,
            cpu_input: self.cpu_input,
            calibration,
        }
    }

    /// The calibration an int8 plan was built with, from its cache (runs never calibrate).
    pub fn cached_calibration(&self) -> Result<Option<Calibration>, String> {
        if self.precision != "int8" {
            return Ok(None);
        }
        if !self.cache_path.exists() {
            return Err(format!("no calibration cache {}: run `mlperf generate_engines` with the same selection first", self.cache_path.display()));
        }
        Calibration::load(&self.cache_path).map(Some)
    }

    /// The int8 calibration (None for fp16 configs): the cache when it was measured on this model,
    /// otherwise measured on the calibration images and cached (`force`: measured and replaced).
    /// Returns it with a line for the user.
    pub fn calibration(&self, settings: &Settings, force: bool) -> Result<Option<(Calibration, String)>, String> {
        if self.precision != "int8" {
            return Ok(None);
        }
        self.ensure_model()?;
        let images = self.calib_batch * self.calib_batches;
        let library = if self.synthetic {
            let (size, layout, dtype) = (self.input.height, self.cpu_input.layout, self.cpu_input.dtype);
            let first = synthetic::CALIBRATION_FIRST_INDEX;
            SampleLibrary::generated("synthetic calibration images", images, images, self.input.sample_bytes(), move |i| {
                encode(&synthetic::synthetic_image_f32(first + i, size, layout), dtype)
            })
        } else {
            calibration_images(settings, self.calib_list.as_deref(), images)?
        };
        mlperf_loadgen::Qsl::load_samples(&library, &(0..images).collect::<Vec<_>>());
        let set = CalibrationSet { source: &library, spec: self.cpu_input, batch: self.calib_batch, batches: self.calib_batches };
        let (calibration, outcome) = calibration::ensure(&self.cache_path, &self.model_path, &set, force)?;
        let what = match outcome {
            CacheOutcome::Reused => "reused",
            CacheOutcome::Written => "measured and written",
        };
        let line = format!("{}: calibration cache {what} ({} tensors, {} images)", self.cache_path.display(), calibration.amax.len(), calibration.images);
        Ok(Some((calibration, line)))
    }

    /// Generated samples in the engine's input type and layout (synthetic configs).
    pub fn synthetic_samples(&self, total: usize, performance: usize) -> SampleLibrary {
        let (size, layout, dtype) = (self.input.height, self.cpu_input.layout, self.cpu_input.dtype);
        SampleLibrary::generated("synthetic ImageNet", total, performance, self.input.sample_bytes(), move |i| encode(&synthetic::synthetic_image_f32(i, size, layout), dtype))
    }
}

/// The real calibration images: the first `images` names of the calibration list, as a library
/// over the preprocessed validation tensors (MLPerf's ImageNet calibration lists name validation
/// images), so sample `i` is the list's `i`-th image.
fn calibration_images(settings: &Settings, list: Option<&Path>, images: usize) -> Result<SampleLibrary, String> {
    let list = list.ok_or("int8 calibration needs calib_data_map (MLPerf's calibration image list) in the config")?;
    let scratch = Scratch::from_env();
    let val_map = scratch.map_path(settings).ok_or("int8 calibration needs map_path to find the calibration images")?;
    let wanted = crate::dataset::imagenet::read_val_map(list).map_err(|e| format!("calibration list: {e}"))?;
    if wanted.len() < images {
        return Err(format!("{} names {} images; calib_batch_size x calib_max_batches asks for {images}", list.display(), wanted.len()));
    }
    let position: std::collections::HashMap<String, usize> = crate::dataset::imagenet::read_val_map(&val_map)?.into_iter().enumerate().map(|(i, e)| (e.name, i)).collect();
    let indices = wanted[..images]
        .iter()
        .enumerate()
        .map(|(line, e)| position.get(&e.name).copied().ok_or_else(|| format!("{}:{}: image {} is not in {}", list.display(), line + 1, e.name, val_map.display())))
        .collect::<Result<Vec<usize>, String>>()?;
    let val = SampleLibrary::open("ImageNet", &scratch.tensor_paths(settings), Some(&val_map), indices.len())?;
    mlperf_loadgen::Qsl::load_samples(&val, &indices);
    let bytes = val.inputs().iter().map(|t| t.bytes).sum();
    Ok(SampleLibrary::generated("ImageNet calibration images", images, images, bytes, move |i| crate::harness::engine::SampleSource::sample(&val, indices[i]).to_vec()))
}

/// Sample values in the element type the config's tensors use (int8: rounded and saturated).
pub fn encode(values: &[f32], dtype: InputDtype) -> Vec<u8> {
    match dtype {
        InputDtype::F32 => values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        InputDtype::F16 => values.iter().flat_map(|v| half::f16::from_f32(*v).to_le_bytes()).collect(),
        InputDtype::I8 { scale } => values.iter().map(|v| (v / scale).round().clamp(-128.0, 127.0) as i8 as u8).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_are_encoded_in_the_configured_type() {
        assert_eq!(encode(&[1.5, -200.0, 126.6], InputDtype::I8 { scale: 1.0 }), vec![2, 0x80, 127]);
        assert_eq!(encode(&[1.0], InputDtype::F16), vec![0x00, 0x3c]);
        assert_eq!(encode(&[-2.0], InputDtype::F32), (-2.0f32).to_le_bytes().to_vec());
    }
}

/// Samples the builder checks a new plan against the CPU engine with: enough that its top-1
/// agreement rule (`builder::MIN_AGREEMENT_PERCENT`) tolerates near-tie flips and still reliably
/// catches fp16 sums that flip a few percent (with 32 samples, such a plan passed 32/32 in one
/// build and failed 30/32 in another).
pub const CHECK_SAMPLES: usize = 256;

/// `generate_engines` for one config: reuse an up-to-date plan or build one (checked against the
/// CPU engine). Returns a line for the user.
pub fn generate(benchmark: &str, settings: &Settings, id: &PlanIdentity) -> Result<String, String> {
    let gpu = setup(benchmark, settings, id, 0)?;
    // Before generating any model: without a GPU nothing below can finish.
    super::exec::require_cuda()?;
    gpu.ensure_model()?;
    let checked = CHECK_SAMPLES.min(gpu.batch_size);
    let library = if gpu.synthetic {
        gpu.synthetic_samples(checked, checked)
    } else {
        let scratch = Scratch::from_env();
        let val_map = scratch.map_path(settings);
        SampleLibrary::open("ImageNet", &scratch.tensor_paths(settings), val_map.as_deref(), checked)?
    };
    mlperf_loadgen::Qsl::load_samples(&library, &(0..checked).collect::<Vec<_>>());
    let calibration = gpu.calibration(settings, false)?;
    if let Some((_, line)) = &calibration {
        eprintln!("  {line}");
    }
    let request = gpu.build_request(Some((&library, checked)), calibration.as_ref().map(|(c, _)| c));
    let outcome = super::builder::ensure_plan(&request, &mut |line| eprintln!("  {line}"))?;
    Ok(match outcome {
        super::builder::Outcome::Reused => format!("{}: up to date, reused", gpu.plan_path.display()),
        super::builder::Outcome::Built { reason, report } => format!("{}: built ({reason}); {report}", gpu.plan_path.display()),
    })
}
