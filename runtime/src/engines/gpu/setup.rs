//! From a compiled config to the GPU engine: where its model and plan are, what samples it reads,
//! and how it runs (`gpu_batch_size`, `precision`, `input_dtype`, `input_format`, `image_size`,
//! `workspace_size`, `gpu_inference_streams`, `use_graphs`, `start_from_device`). Shared by
//! `generate_engines` and the harness, so both always mean the same plan.

use super::builder::BuildRequest;
use super::exec::InputFormat;
use super::RunOptions;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::Scratch;
use crate::engines::cpu::{InputDtype, InputSpec, Layout};
use crate::engines::synthetic;
use mlperf_config::{DatasetSource, Settings};
use std::path::PathBuf;

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
}

/// Which run the plan is for: (system id, scenario, workload section name), NVIDIA's path parts.
pub struct PlanIdentity<'a> {
    pub system: &'a str,
    pub scenario: &'a str,
    pub workload: &'a str,
}

pub fn setup(benchmark: &str, settings: &Settings, id: &PlanIdentity, performance_samples: usize) -> Result<GpuSetup, String> {
    if benchmark != "resnet50" {
        return Err(format!("no GPU engine for {benchmark} yet (the GPU engine builds image classifiers: resnet50); use --backend=null or --backend=fixed_latency to exercise the harness"));
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
    let model_path = if synthetic {
        scratch.models_dir().join(synthetic::model_relpath(size))
    } else {
        scratch.model_path(settings).ok_or("resnet50 configs need model_path")?
    };
    let precision = settings.precision.map_or("fp16", |p| p.name()).to_string();
    let plan_path = super::plan::engine_path(ENGINE_ROOT.as_ref(), id.system, id.scenario, benchmark, &precision, batch_size, id.workload);
    let workspace_bytes = settings.workspace_size.unwrap_or(1 << 30) as usize;
    let options = RunOptions {
        streams: settings.gpu_inference_streams.unwrap_or(1).max(1) as usize,
        use_graphs: settings.use_graphs.unwrap_or(true),
        resident_samples: if settings.start_from_device.unwrap_or(false) { performance_samples } else { 0 },
        workspace_bytes,
    };
    Ok(GpuSetup { model_path, plan_path, batch_size, precision, input, cpu_input, workspace_bytes, options, synthetic })
}

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

    pub fn build_request<'a>(&'a self, check: Option<(&'a dyn crate::harness::engine::SampleSource, usize)>) -> BuildRequest<'a> {
        BuildRequest {
            model_path: &self.model_path,
            plan_path: self.plan_path.clone(),
            batch_size: self.batch_size,
            precision: &self.precision,
            input: self.input,
            workspace_limit: self.workspace_bytes,
            check_samples: check,
            cpu_input: self.cpu_input,
        }
    }

    /// Generated samples in the engine's input type and layout (synthetic configs).
    pub fn synthetic_samples(&self, total: usize, performance: usize) -> SampleLibrary {
        let (size, layout, dtype) = (self.input.height, self.cpu_input.layout, self.cpu_input.dtype);
        SampleLibrary::generated("synthetic ImageNet", total, performance, self.input.sample_bytes(), move |i| encode(&synthetic::synthetic_image_f32(i, size, layout), dtype))
    }
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
    let request = gpu.build_request(Some((&library, checked)));
    let outcome = super::builder::ensure_plan(&request, &mut |line| eprintln!("  {line}"))?;
    Ok(match outcome {
        super::builder::Outcome::Reused => format!("{}: up to date, reused", gpu.plan_path.display()),
        super::builder::Outcome::Built { reason, report } => format!("{}: built ({reason}); {report}", gpu.plan_path.display()),
    })
}
