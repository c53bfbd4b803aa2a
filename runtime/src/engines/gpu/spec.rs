//! One GPU plan as the benchmark that owns the model resolves it from a config ([`GpuSpec`]), and
//! what is done with it: calibrate (int8 plans), build or reuse the plan (`generate_engines`), and
//! open it on every GPU of the system (runs, which never build and never run a stale plan).

use super::builder::{self, BuildRequest, Outcome};
use super::calibration::{self, CacheOutcome, Calibration, CalibrationSet};
use super::plan;
use super::{GpuEngine, RunOptions};
use crate::engines::{ElementType, Engine, InputSpec, SampleSource};
use std::path::PathBuf;
use std::sync::Arc;

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

    fn request<'a>(&'a self, check_samples: Option<(&'a dyn SampleSource, usize)>, calibration: Option<&'a Calibration>) -> BuildRequest<'a> {
        BuildRequest { spec: self, check_samples, calibration }
    }

    /// The calibration an int8 plan was built with, from its cache (runs never calibrate).
    pub fn cached_calibration(&self) -> Result<Option<Calibration>, String> {
        if self.precision != ElementType::I8 {
            return Ok(None);
        }
        let cache = &self.calibration.cache_path;
        if !cache.exists() {
            return Err(format!("no calibration cache {}: run `mlperf generate_engines` with the same selection first", cache.display()));
        }
        Calibration::load(cache).map(Some)
    }

    /// The int8 calibration (None for fp16 plans): the cache when it was measured on this model,
    /// otherwise measured on `images` (the first [`CalibrationSpec::images`] of them, loaded) and
    /// cached (`force`: measured and replaced). Returns it with a line for the user.
    pub fn calibrate(&self, images: &dyn SampleSource, force: bool) -> Result<Option<(Calibration, String)>, String> {
        if self.precision != ElementType::I8 {
            return Ok(None);
        }
        let c = &self.calibration;
        let set = CalibrationSet { source: images, spec: self.input, batch: c.batch, batches: c.batches };
        let (calibration, outcome) = calibration::ensure(&c.cache_path, &self.model_path, &set, force)?;
        let what = match outcome {
            CacheOutcome::Reused => "reused",
            CacheOutcome::Written => "measured and written",
        };
        let line = format!("{}: calibration cache {what} ({} tensors, {} images)", c.cache_path.display(), calibration.amax.len(), calibration.images);
        Ok(Some((calibration, line)))
    }

    /// `generate_engines`: reuses an up-to-date plan or builds one, checked against the CPU engine
    /// on the first `checked` samples of `check` (loaded). Returns a line for the user.
    pub fn generate(&self, check: &dyn SampleSource, checked: usize, calibration: Option<&Calibration>, progress: &mut dyn FnMut(&str)) -> Result<String, String> {
        let outcome = builder::ensure_plan(&self.request(Some((check, checked)), calibration), progress)?;
        Ok(match outcome {
            Outcome::Reused => format!("{}: up to date, reused", self.plan_path.display()),
            Outcome::Built { reason, report } => format!("{}: built ({reason}); {report}", self.plan_path.display()),
        })
    }

    /// The plan on each of `devices` GPUs. A missing, stale or corrupt plan is an error that names
    /// the command that rebuilds it: a run never builds or silently runs an outdated engine.
    pub fn open(&self, devices: usize) -> Result<Vec<Arc<dyn Engine>>, crate::Error> {
        let calibration = self.cached_calibration().map_err(crate::Error::Data)?;
        let key = builder::wanted_key(&self.request(None, calibration.as_ref())).map_err(crate::Error::Data)?;
        plan::require_fresh(&self.plan_path, &key).map_err(crate::Error::Data)?;
        let loaded = plan::Plan::load(&self.plan_path).map_err(crate::Error::Data)?;
        Ok(GpuEngine::open_all(devices, &loaded, self.input, self.options)?)
    }
}
