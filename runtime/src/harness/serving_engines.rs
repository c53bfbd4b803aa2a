//! The serving engine of an LLM config, around its runs: started (or, for `external`, attached
//! to) before the first run, waited for until ready, watched while runs go, and stopped after
//! the last one, on a stop signal, or when `run_harness` fails. Its logs stay in the scenario's
//! log directory (`serving_<process>.log`).

use crate::engines::serving::ServingError;
use crate::engines::serving::launch::{self, DEFAULT_READY_TIMEOUT, Engines, LaunchSpec, Waiting};
use crate::error::Error;
use crate::select::Selected;
use crate::signals;
use mlperf_config::{EngineKind, ServingEngine, Settings, SystemInfo};
use std::path::Path;
use std::time::Duration;

/// A config's engine, ready to take requests; a started one stops when this is dropped.
pub struct ServingEngines {
    started: Option<Engines>,
    pub endpoints: Vec<String>,
}

impl ServingEngines {
    /// Starts the config's engine (nothing for external endpoints) and waits until every endpoint
    /// is ready. An engine that exits, a stop signal or the ready timeout end the wait with an error
    /// (a started engine is stopped again); an external endpoint that cannot be reached or does not
    /// answer ends it at once.
    pub fn start(settings: &Settings, benchmark: &str, system: &SystemInfo, log_dir: &Path) -> Result<ServingEngines, ServingError> {
        let endpoints = launch::endpoints(settings)?;
        let spec = LaunchSpec::from_settings(settings, benchmark, system.hardware.gpus_per_node as u32)?;
        std::fs::create_dir_all(log_dir).map_err(|source| ServingError::Log { path: log_dir.to_path_buf(), source })?;
        let mut started = match &spec {
            Some(spec) => Some(Engines::start(spec, log_dir)?),
            None => None,
        };
        let timeout = settings.serving_ready_timeout.map_or(DEFAULT_READY_TIMEOUT, Duration::from_millis);
        let waiting = if started.is_some() { Waiting::Started } else { Waiting::Given };
        tracing::info!("waiting up to {} s for {} serving endpoint(s): {}", timeout.as_secs(), endpoints.len(), endpoints.join(", "));
        launch::wait_ready(&endpoints, waiting, timeout, || {
            if let Some(signal) = signals::received() {
                return Err(ServingError::StoppedWaiting { signal: signal.name() });
            }
            started.as_mut().and_then(Engines::exited).map_or(Ok(()), |exit| Err(ServingError::ExitedEarly(exit)))
        })?;
        Ok(ServingEngines { started, endpoints })
    }

    /// Why a started engine is gone, if it is (external endpoints are not watched here; the runs
    /// see them fail).
    pub fn exited(&mut self) -> Option<String> {
        self.started.as_mut().and_then(Engines::exited)
    }
}

/// `run_llm_server`: starts the serving engine of the first selected LLM config and keeps it until
/// a stop signal (then stops it) or until it exits (an error with the tail of its log).
pub fn serve_until_stopped(system: &SystemInfo, configs: &[Selected], log_dir: &Path) -> Result<(), Error> {
    signals::install()?;
    let selected = configs
        .iter()
        .find(|s| s.settings.engine == Some(EngineKind::Serving))
        .ok_or_else(|| Error::Config("none of the selected configs runs on a serving engine (engine = \"serving\"); select an LLM with --benchmarks and --scenarios".into()))?;
    if selected.settings.serving_engine == Some(ServingEngine::External) {
        let endpoints = launch::endpoints(&selected.settings)?;
        return Err(Error::Config(format!("{} attaches to external endpoints ({}); whatever started them serves them", selected.label(), endpoints.join(", "))));
    }
    let mut engines = ServingEngines::start(&selected.settings, &selected.config.benchmark, system, log_dir)?;
    crate::outln!("{}: serving at {}; logs in {}; stop with Ctrl-C", selected.label(), engines.endpoints.join(", "), log_dir.display());
    loop {
        if let Some(signal) = signals::received() {
            tracing::info!("{}: stopping the serving engine", signal.name());
            return Ok(());
        }
        if let Some(exit) = engines.exited() {
            return Err(Error::EngineFailed(exit));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
