//! The serving engine of an LLM config, around its runs: started (or, for `external`, attached
//! to) before the first run, waited for until ready, watched while runs go, and stopped after
//! the last one, on a stop signal, or when `run_harness` fails. Its logs stay in the scenario's
//! log directory (`serving_<process>.log`).

use crate::engines::serving::launch::{self, DEFAULT_READY_TIMEOUT, Engines, LaunchSpec};
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
    /// (a started engine is stopped again).
    pub fn start(settings: &Settings, benchmark: &str, system: &SystemInfo, log_dir: &Path) -> Result<ServingEngines, String> {
        let endpoints = launch::endpoints(settings).map_err(|e| e.to_string())?;
        let spec = LaunchSpec::from_settings(settings, benchmark, system.hardware.gpus_per_node as u32).map_err(|e| e.to_string())?;
        std::fs::create_dir_all(log_dir).map_err(|e| format!("cannot create {}: {e}", log_dir.display()))?;
        let mut started = match &spec {
            Some(spec) => Some(Engines::start(spec, log_dir).map_err(|e| e.to_string())?),
            None => None,
        };
        let timeout = settings.serving_ready_timeout.map_or(DEFAULT_READY_TIMEOUT, Duration::from_millis);
        tracing::info!("waiting up to {} s for {} serving endpoint(s): {}", timeout.as_secs(), endpoints.len(), endpoints.join(", "));
        launch::wait_ready(&endpoints, timeout, || {
            if let Some(signal) = signals::received() {
                return Err(format!("{} while waiting for the serving engine; stopped it", signal.name()));
            }
            match started.as_mut().and_then(Engines::exited) {
                Some(exit) => Err(format!("the serving engine exited before it was ready: {exit}")),
                None => Ok(()),
            }
        })
        .map_err(|e| e.to_string())?;
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
pub fn serve_until_stopped(system: &SystemInfo, configs: &[Selected], log_dir: &Path) -> Result<(), String> {
    signals::install()?;
    let selected = configs
        .iter()
        .find(|s| s.settings.engine == Some(EngineKind::Serving))
        .ok_or("none of the selected configs runs on a serving engine (engine = \"serving\"); select an LLM with --benchmarks and --scenarios")?;
    if selected.settings.serving_engine == Some(ServingEngine::External) {
        return Err(format!(
            "{} attaches to external endpoints ({}); whatever started them serves them",
            selected.label(),
            launch::endpoints(&selected.settings).map_err(|e| e.to_string())?.join(", ")
        ));
    }
    let mut engines = ServingEngines::start(&selected.settings, &selected.config.benchmark, system, log_dir)?;
    crate::outln!("{}: serving at {}; logs in {}; stop with Ctrl-C", selected.label(), engines.endpoints.join(", "), log_dir.display());
    loop {
        if let Some(signal) = signals::received() {
            tracing::info!("{}: stopping the serving engine", signal.name());
            return Ok(());
        }
        if let Some(exit) = engines.exited() {
            return Err(exit);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}
