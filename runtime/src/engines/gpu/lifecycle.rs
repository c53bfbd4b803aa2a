//! What is done with a GPU plan ([`GpuSpec`]): calibrate (int8 plans), build or reuse the plan
//! (`generate_engines`), and open it on every GPU of the system (runs, which never build and never
//! run a stale plan).

use super::GpuEngine;
use super::builder::{self, BuildRequest, Outcome};
use super::calibration::{self, CacheOutcome, Calibration, CalibrationSet};
use super::error::GpuError;
use super::plan;
use super::spec::GpuSpec;
use crate::engines::{ElementType, Engine, SampleSource};
use std::sync::Arc;

impl GpuSpec {
    fn request<'a>(&'a self, check_samples: Option<(&'a dyn SampleSource, usize)>, calibration: Option<&'a Calibration>) -> BuildRequest<'a> {
        BuildRequest { spec: self, check_samples, calibration }
    }

    /// The int8 calibration (None for fp16 plans): the cache when it was measured on this model,
    /// otherwise measured on `images` (the first [`CalibrationSpec::images`] of them, loaded) and
    /// cached (`force`: measured and replaced). Returns it with a line for the user.
    pub fn calibrate(&self, images: &dyn SampleSource, force: bool) -> Result<Option<(Calibration, String)>, GpuError> {
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
    pub fn generate(&self, check: &dyn SampleSource, checked: usize, calibration: Option<&Calibration>, progress: &mut dyn FnMut(&str)) -> Result<String, GpuError> {
        let outcome = builder::ensure_plan(&self.request(Some((check, checked)), calibration), progress)?;
        Ok(match outcome {
            Outcome::Reused => format!("{}: up to date, reused", self.plan_path.display()),
            Outcome::Built { reason, report } => format!("{}: built ({reason}); {report}", self.plan_path.display()),
        })
    }

    /// The plan on each of `devices` GPUs. A missing, stale or corrupt plan is an error that names
    /// the command that rebuilds it: a run never builds or silently runs an outdated engine.
    pub fn open(&self, devices: usize) -> Result<Vec<Arc<dyn Engine>>, crate::Error> {
        // What the plan's key is made of is the plan's data here: any failure is Error::Data.
        let data = |e: GpuError| crate::Error::Data(e.to_string());
        let calibration = self.cached_calibration().map_err(data)?;
        let key = builder::wanted_key(&self.request(None, calibration.as_ref())).map_err(data)?;
        plan::require_fresh(&self.plan_path, &key)?;
        let loaded = plan::Plan::load(&self.plan_path)?;
        Ok(GpuEngine::open_all(devices, &loaded, self.input, self.options)?)
    }
}
