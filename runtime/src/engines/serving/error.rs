//! The serving layer's error: which endpoint or setting, what went wrong, and what to do.

use super::client::{ProbeError, RequestError};
use super::tokenizer::TokenizerError;
use crate::Error;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServingError {
    #[error("the config has no serving_engine")]
    NoServingEngine,
    #[error("serving_engine = \"external\" needs llm_server_urls")]
    NoServerUrls,
    #[error("llm_server_urls: `{url}` {reason}")]
    BadServerUrl { url: String, reason: String },
    #[error("llm_server_urls: `{url}`: this build reaches serving engines over plain HTTP (inside a cluster); use the engine's http:// address")]
    Https { url: String },
    #[error("serving_port {port} with {instances} instances needs ports up to {last}; ports are 1-65535")]
    PortRange { port: u64, instances: u64, last: u64 },
    #[error("serving_engine = \"external\" needs serving_api (how its endpoints take token ids)")]
    NoServingApi,
    #[error("trtllm-serve has no data-parallel flag: run more serving_instances instead of data_parallelism")]
    TrtllmDataParallel,
    #[error("the {api} API streams text only: set tokenizer_path to the model's tokenizer.json")]
    NoTokenizerPath { api: &'static str },
    #[error("the {api} API streams text only: its output ids need the model's tokenizer (set tokenizer_path)")]
    NeedsTokenizer { api: &'static str },
    #[error("no serving endpoints to send requests to")]
    NoEndpoints,
    #[error(transparent)]
    Tokenizer(#[from] TokenizerError),
    #[error("cannot find this binary: {0}")]
    CurrentExe(std::io::Error),
    #[error("cannot write {}: {source}", path.display())]
    Log { path: std::path::PathBuf, source: std::io::Error },
    /// Duplicating a log file's handle for the engine's standard error.
    #[error("{0}")]
    LogHandle(std::io::Error),
    #[error("cannot start the serving engine `{command}`: {source}; is {program} installed and on PATH?")]
    Spawn { command: String, program: String, source: std::io::Error },
    /// The runtime the readiness probe runs on.
    #[error("{0}")]
    ProbeRuntime(std::io::Error),
    /// The HTTP client of the readiness probe.
    #[error("{0}")]
    ProbeClient(reqwest::Error),
    /// A stop signal while waiting for the engine.
    #[error("{signal} while waiting for the serving engine; stopped it")]
    StoppedWaiting { signal: &'static str },
    /// A started engine exited before it was ready: its status and the tail of its log.
    #[error("the serving engine exited before it was ready: {0}")]
    ExitedEarly(String),
    /// An endpoint the user gave by address that cannot be reached or does not answer.
    #[error("the serving endpoint {endpoint} (llm_server_urls) does not answer: {source}; is its engine running and listening at that address?")]
    Unanswered { endpoint: String, source: ProbeError },
    #[error("the serving endpoint {endpoint} was not ready within {timeout_s} s (serving_ready_timeout): {last}")]
    NotReady { endpoint: String, timeout_s: u64, last: String },
    #[error("cannot start the serving client's runtime: {0}")]
    ClientRuntime(std::io::Error),
    #[error("cannot build the HTTP client: {0}")]
    ClientHttp(reqwest::Error),
    /// A request of a closed loop failed.
    #[error(transparent)]
    Request(#[from] RequestError),
    #[error("the client stopped")]
    ClientStopped,
    #[error("the loop ended before its warm-up did")]
    EndedInWarmUp,
}

impl From<ServingError> for Error {
    /// A setting that cannot name or reach endpoints is the config's; a tokenizer file is data;
    /// an engine that did not start, was not ready or failed its requests is the engine's.
    fn from(e: ServingError) -> Error {
        use ServingError::*;
        match e {
            NoServingEngine
            | NoServerUrls
            | BadServerUrl { .. }
            | Https { .. }
            | PortRange { .. }
            | NoServingApi
            | TrtllmDataParallel
            | NoTokenizerPath { .. }
            | NeedsTokenizer { .. }
            | NoEndpoints => Error::Config(e.to_string()),
            Tokenizer(e) => e.into(),
            CurrentExe(_) | Log { .. } | LogHandle(_) => Error::Other(e.to_string()),
            _ => Error::EngineFailed(e.to_string()),
        }
    }
}
