//! One GPU plan as the benchmark that owns the model resolves it from a config ([`GpuSpec`]): its
//! model, plan path, samples, precision and calibration. What is done with it (calibrate, build,
//! open) is in `lifecycle`.

use super::RunOptions;
use super::calibration::Calibration;
use super::error::GpuError;
use super::plan;
use crate::engines::{ElementType, InputSpec};
use std::path::PathBuf;

/// Where plans go (NVIDIA's `build/engines`).
pub const ENGINE_ROOT: &str = "build/engines";
/// Where calibration caches go when the config names no `cache_file`.
pub const CALIBRATION_ROOT: &str = "build/calibration";

/// Samples the builder checks a new plan against the CPU engine with: enough that its top-1
/// agreement rule (`builder::MIN_AGREEMENT_PERCENT`) tolerates near-tie flips and still reliably
/// catches fp16 sums that flip a few percent (with 32 samples, such a plan passed 32/32 in one
/// build and failed 30/32 in another).
pub const CHECK_SAMPLES: usize = 256;

/// Everything the GPU engine needs to build, check or run one plan.
#[derive(Clone, Debug)]
pub struct GpuSpec {
    pub model_path: PathBuf,
    pub plan_path: PathBuf,
    /// The samples as the sample library holds them; `batch_size` is the plan's.
    pub input: InputSpec,
    /// The plan's precision: fp16 or int8.
    pub precision: ElementType,
    /// The most cuDNN workspace a layer may use (`workspace_size`).
    pub workspace_bytes: usize,
    pub options: RunOptions,
    pub calibration: CalibrationSpec,
}

/// Int8 calibration: the cache (`cache_file`), and `batches` batches of `batch` calibration images.
#[derive(Clone, Debug)]
pub struct CalibrationSpec {
    pub cache_path: PathBuf,
    pub batch: usize,
    pub batches: usize,
}

impl CalibrationSpec {
    pub fn images(&self) -> usize {
        self.batch * self.batches
    }
}

/// Which run a plan is for: NVIDIA's path parts.
pub struct PlanIdentity<'a> {
    pub system: &'a str,
    pub scenario: mlperf_config::Scenario,
    pub workload: mlperf_config::Workload,
}

impl PlanIdentity<'_> {
    /// NVIDIA's engine path: `build/engines/<system>/<Scenario>/<benchmark>/gpu-<benchmark>-<precision>-b<batch>.<workload>.plan`.
    pub fn plan_path(&self, benchmark: &str, precision: ElementType, batch: usize) -> PathBuf {
        plan::engine_path(ENGINE_ROOT.as_ref(), self.system, self.scenario.name(), benchmark, precision.name(), batch, &self.workload.section_name())
    }
}

impl GpuSpec {
    pub fn batch_size(&self) -> usize {
        self.input.batch_size
    }

    /// The calibration an int8 plan was built with, from its cache (runs never calibrate).
    pub fn cached_calibration(&self) -> Result<Option<Calibration>, GpuError> {
        if self.precision != ElementType::I8 {
            return Ok(None);
        }
        let cache = &self.calibration.cache_path;
        if !cache.exists() {
            return Err(GpuError::Calibration(format!("no calibration cache {}: run `mlperf generate_engines` with the same selection first", cache.display())));
        }
        Calibration::load(cache).map(Some)
    }
}
