//! Serving engines started from a config: each engine's command line, one process group per
//! instance with its log file, readiness (`/health`, then `/v1/models`), and stopping (SIGTERM to
//! the group, SIGKILL after a grace period). `external` endpoints are never started or stopped,
//! only waited for.
//!
//! Instance `i` listens on `serving_port + i` and, on a GPU node, sees the `i`-th block of
//! TP x PP x DP GPUs through `CUDA_VISIBLE_DEVICES` (NVIDIA's one engine per TP group). Dynamo is
//! one frontend on `serving_port` with one worker per instance.

use super::client::{self, ProbeError};
use super::{ServingError, api};
use crate::progress::Progress;
use crate::signals::ChildGroup;
use mlperf_config::{ServingApi, ServingEngine, Settings};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// NVIDIA's trtllm-serve port (`trtllm_server_urls` default).
pub const DEFAULT_PORT: u16 = 30000;
/// How long a started engine may take to become ready when the config does not say.
pub const DEFAULT_READY_TIMEOUT: Duration = Duration::from_secs(30 * 60);
/// How long an engine gets between SIGTERM and SIGKILL.
pub const STOP_GRACE: Duration = Duration::from_secs(15);

/// What to start, from a config's serving fields.
#[derive(Debug, Clone, PartialEq)]
pub struct LaunchSpec {
    pub engine: ServingEngine,
    pub api: ServingApi,
    /// Model path or name, as the engine takes it and as requests name it.
    pub model: String,
    pub host: String,
    pub port: u16,
    pub instances: u32,
    pub tensor: u32,
    pub pipeline: u32,
    pub data: u32,
    pub expert: u32,
    pub extra_args: Vec<String>,
    /// GPUs of the node (0: none, no `CUDA_VISIBLE_DEVICES`).
    pub gpus_per_node: u32,
    /// This binary, which serves the stand-in (`serve_stand_in`).
    pub exe: PathBuf,
    /// The benchmark the engine serves (the stand-in's `--benchmark`: whose reference answers it reads).
    pub benchmark: String,
}

/// One process to start.
#[derive(Debug, Clone, PartialEq)]
pub struct ProcessCommand {
    /// `instance0`, `frontend`, `worker1`: names the log file.
    pub name: String,
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
}

impl ProcessCommand {
    /// The command as a shell line (for logs and `run_llm_server`).
    pub fn display(&self) -> String {
        let env = self.env.iter().map(|(k, v)| format!("{k}={v} "));
        env.chain(std::iter::once(self.program.clone())).chain(self.args.iter().map(|a| format!(" {a}"))).collect()
    }
}

/// The endpoints of a config's engine: `llm_server_urls` of an external one, else one per
/// started instance (`http://127.0.0.1:<port + i>/v1`; Dynamo: its frontend).
pub fn endpoints(settings: &Settings) -> Result<Vec<String>, ServingError> {
    let engine = settings.serving_engine.ok_or(ServingError::NoServingEngine)?;
    if engine == ServingEngine::External {
        let urls: Vec<String> = settings.llm_server_urls.as_ref().map(|u| u.iter().map(|s| s.to_string()).collect()).unwrap_or_default();
        if urls.is_empty() {
            return Err(ServingError::NoServerUrls);
        }
        for url in &urls {
            mlperf_config::check_server_url(url).map_err(|reason| ServingError::BadServerUrl { url: url.clone(), reason })?;
            if url.starts_with("https://") {
                return Err(ServingError::Https { url: url.clone() });
            }
        }
        return Ok(urls);
    }
    let port = port(settings)?;
    let count = if engine == ServingEngine::Dynamo { 1 } else { settings.serving_instances.unwrap_or(1) as u16 };
    Ok((0..count).map(|i| format!("http://127.0.0.1:{}/v1", port + i)).collect())
}

fn port(settings: &Settings) -> Result<u16, ServingError> {
    let port = settings.serving_port.unwrap_or(u64::from(DEFAULT_PORT));
    let last = port + settings.serving_instances.unwrap_or(1).max(1) - 1;
    if port == 0 || last > 65535 {
        return Err(ServingError::PortRange { port, instances: settings.serving_instances.unwrap_or(1), last });
    }
    Ok(port as u16)
}

/// The API a config's endpoints are driven through.
pub fn api_of(settings: &Settings) -> Result<ServingApi, ServingError> {
    let engine = settings.serving_engine.ok_or(ServingError::NoServingEngine)?;
    settings.serving_api.or(engine.api()).ok_or(ServingError::NoServingApi)
}

/// The model name requests carry.
pub fn model_of(settings: &Settings, benchmark: &str) -> String {
    settings.model_path.as_deref().unwrap_or(benchmark).to_string()
}

impl LaunchSpec {
    /// The spec of a config whose engine `mlperf` starts; None for external endpoints.
    pub fn from_settings(settings: &Settings, benchmark: &str, gpus_per_node: u32) -> Result<Option<LaunchSpec>, ServingError> {
        let engine = settings.serving_engine.ok_or(ServingError::NoServingEngine)?;
        if engine == ServingEngine::External {
            return Ok(None);
        }
        let n = |v: Option<u64>| v.unwrap_or(1).max(1) as u32;
        let spec = LaunchSpec {
            engine,
            api: api_of(settings)?,
            model: model_of(settings, benchmark),
            host: "127.0.0.1".into(),
            port: port(settings)?,
            instances: n(settings.serving_instances),
            tensor: n(settings.tensor_parallelism),
            pipeline: n(settings.pipeline_parallelism),
            data: n(settings.data_parallelism),
            expert: n(settings.moe_expert_parallelism),
            extra_args: settings.serving_args.as_ref().map(|a| a.iter().map(|s| s.to_string()).collect()).unwrap_or_default(),
            gpus_per_node,
            exe: std::env::current_exe().map_err(ServingError::CurrentExe)?,
            benchmark: benchmark.to_string(),
        };
        if engine == ServingEngine::TrtllmServe && spec.data > 1 {
            return Err(ServingError::TrtllmDataParallel);
        }
        Ok(Some(spec))
    }

    /// GPUs one instance uses.
    pub fn gpus_per_instance(&self) -> u32 {
        self.tensor * self.pipeline * self.data
    }

    /// Every process to start, in order.
    pub fn commands(&self) -> Vec<ProcessCommand> {
        let s = |v: &dyn ToString| v.to_string();
        let mut out = Vec::new();
        if self.engine == ServingEngine::Dynamo {
            out.push(ProcessCommand {
                name: "frontend".into(),
                program: "python3".into(),
                args: vec!["-m".into(), "dynamo.frontend".into(), "--http-port".into(), s(&self.port)],
                env: Vec::new(),
            });
        }
        for i in 0..self.instances {
            let port = s(&(self.port + i as u16));
            let (tp, pp, dp, ep) = (s(&self.tensor), s(&self.pipeline), s(&self.data), s(&self.expert));
            let (name, program, mut args): (String, &str, Vec<String>) = match self.engine {
                ServingEngine::Vllm => {
                    let mut a = vec!["serve".into(), self.model.clone(), "--host".into(), self.host.clone(), "--port".into(), port];
                    a.extend(["--tensor-parallel-size".into(), tp, "--pipeline-parallel-size".into(), pp]);
                    if self.data > 1 {
                        a.extend(["--data-parallel-size".into(), dp]);
                    }
                    if self.expert > 1 {
                        a.push("--enable-expert-parallel".into());
                    }
                    (format!("instance{i}"), "vllm", a)
                }
                ServingEngine::Sglang => {
                    let mut a =
                        vec!["-m".into(), "sglang.launch_server".into(), "--model-path".into(), self.model.clone(), "--host".into(), self.host.clone(), "--port".into(), port];
                    a.extend(["--tp-size".into(), tp, "--pp-size".into(), pp]);
                    if self.data > 1 {
                        a.extend(["--dp-size".into(), dp]);
                    }
                    if self.expert > 1 {
                        a.extend(["--ep-size".into(), ep]);
                    }
                    (format!("instance{i}"), "python3", a)
                }
                ServingEngine::TrtllmServe => {
                    let mut a = vec![self.model.clone(), "--host".into(), self.host.clone(), "--port".into(), port, "--tp_size".into(), tp, "--pp_size".into(), pp];
                    if self.expert > 1 {
                        a.extend(["--ep_size".into(), ep]);
                    }
                    (format!("instance{i}"), "trtllm-serve", a)
                }
                ServingEngine::Dynamo => {
                    let mut a =
                        vec!["-m".into(), "dynamo.vllm".into(), "--model".into(), self.model.clone(), "--tensor-parallel-size".into(), tp, "--pipeline-parallel-size".into(), pp];
                    if self.data > 1 {
                        a.extend(["--data-parallel-size".into(), dp]);
                    }
                    (format!("worker{i}"), "python3", a)
                }
                ServingEngine::StandIn => {
                    let a = vec![
                        "serve_stand_in".into(),
                        "--host".into(),
                        self.host.clone(),
                        "--port".into(),
                        port,
                        "--api".into(),
                        self.api.name().into(),
                        "--model".into(),
                        self.model.clone(),
                        "--benchmark".into(),
                        self.benchmark.clone(),
                    ];
                    (format!("instance{i}"), self.exe.to_str().unwrap_or("mlperf"), a)
                }
                ServingEngine::External => unreachable!("external engines are not started"),
            };
            args.extend(self.extra_args.iter().cloned());
            let mut env = Vec::new();
            let g = self.gpus_per_instance();
            if self.gpus_per_node > 0 && self.engine != ServingEngine::StandIn {
                env.push(("CUDA_VISIBLE_DEVICES".into(), (i * g..(i + 1) * g).map(|d| d.to_string()).collect::<Vec<_>>().join(",")));
            }
            out.push(ProcessCommand { name, program: program.into(), args, env });
        }
        out
    }
}

/// Started engine processes; stopped when dropped.
pub struct Engines {
    processes: Vec<(ProcessCommand, ChildGroup, PathBuf)>,
}

impl Engines {
    /// Starts every process of `spec`, each in its own process group, output to
    /// `<log_dir>/serving_<name>.log`.
    pub fn start(spec: &LaunchSpec, log_dir: &Path) -> Result<Engines, ServingError> {
        let mut engines = Engines { processes: Vec::new() };
        for command in spec.commands() {
            let log_path = log_dir.join(format!("serving_{}.log", command.name));
            let log = std::fs::OpenOptions::new().create(true).append(true).open(&log_path).map_err(|source| ServingError::Log { path: log_path.clone(), source })?;
            let err = log.try_clone().map_err(ServingError::LogHandle)?;
            let mut cmd = Command::new(&command.program);
            cmd.args(&command.args).envs(command.env.iter().cloned()).stdin(Stdio::null()).stdout(log).stderr(err);
            // A process group of its own, so stopping reaches the engine's workers too.
            let child = ChildGroup::spawn(&mut cmd, STOP_GRACE).map_err(|source| ServingError::Spawn { command: command.display(), program: command.program.clone(), source })?;
            tracing::info!("started {} (pid {}): {}; log {}", command.name, child.id(), command.display(), log_path.display());
            engines.processes.push((command, child, log_path));
        }
        Ok(engines)
    }

    /// The first process that has exited, with its status and the tail of its log.
    pub fn exited(&mut self) -> Option<String> {
        for (command, child, log) in &mut self.processes {
            if let Ok(Some(status)) = child.try_wait() {
                return Some(format!("the serving engine's {} exited ({status}): `{}`; last lines of {}:\n{}", command.name, command.display(), log.display(), tail(log, 20)));
            }
        }
        None
    }

    /// The log files, for copying into run directories.
    pub fn logs(&self) -> Vec<PathBuf> {
        self.processes.iter().map(|(_, _, log)| log.clone()).collect()
    }

    /// SIGTERM to every process group, SIGKILL to those still there after [`STOP_GRACE`].
    pub fn stop(&mut self) {
        for (_, child, _) in &self.processes {
            child.signal(libc::SIGTERM);
        }
        let deadline = Instant::now() + STOP_GRACE;
        for (command, child, _) in &mut self.processes {
            if child.finish(deadline).is_none() {
                tracing::warn!("the serving engine's {} did not stop within {} s of SIGTERM; killed it", command.name, STOP_GRACE.as_secs());
            }
        }
        self.processes.clear();
    }
}

impl Drop for Engines {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The last `lines` lines of a log file.
pub fn tail(path: &Path, lines: usize) -> String {
    let text = std::fs::read(path).map(|b| String::from_utf8_lossy(&b).into_owned()).unwrap_or_default();
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// How long one readiness probe may take (the ready timeout when that is shorter).
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// Whose endpoints a ready wait is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    /// Engines this process started: nothing listens while they load, so connection failures
    /// are waited out until the ready timeout.
    Started,
    /// Addresses the user gave (`llm_server_urls`): their engine should be up, so one that
    /// cannot be reached or does not answer ends the wait at once; one that answers "not ready"
    /// (503 while loading) is waited for.
    Given,
}

/// Waits until every endpoint answers `/health` and `/v1/models` with 200, at most `timeout`,
/// each probe at most [`PROBE_TIMEOUT`]. Progress lines name the endpoint, the time waited and the
/// timeout. `check` runs between polls: an engine that exited, or a stop signal, ends the wait with
/// its error.
pub fn wait_ready(endpoints: &[String], waiting: Waiting, timeout: Duration, mut check: impl FnMut() -> Result<(), ServingError>) -> Result<(), ServingError> {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(ServingError::ProbeRuntime)?;
    let http = reqwest::Client::builder().build().map_err(ServingError::ProbeClient)?;
    let per_probe = PROBE_TIMEOUT.min(timeout.max(Duration::from_millis(100)));
    let start = Instant::now();
    for endpoint in endpoints {
        let root = api::root(endpoint);
        let _progress = Progress::phase(format!("waiting for the serving endpoint {endpoint} to answer {root}/health (serving_ready_timeout {} s)", timeout.as_secs_f64()));
        loop {
            let probe = async {
                for path in ["/health", "/v1/models"] {
                    client::probe(&http, &format!("{root}{path}"), per_probe).await?;
                }
                Ok(())
            };
            let last = match runtime.block_on(probe) {
                Ok(()) => break,
                Err(e) if waiting == Waiting::Given && !e.answered() => return Err(ServingError::Unanswered { endpoint: endpoint.clone(), source: e }),
                Err(ProbeError::Unreachable { url, .. }) => format!("{url}: nothing listens there yet"),
                Err(e) => e.to_string(),
            };
            check()?;
            if start.elapsed() > timeout {
                return Err(ServingError::NotReady { endpoint: endpoint.clone(), timeout_s: timeout.as_secs(), last });
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(engine: ServingEngine) -> LaunchSpec {
        LaunchSpec {
            engine,
            api: engine.api().unwrap_or(ServingApi::CompletionsText),
            model: "/models/llama".into(),
            host: "127.0.0.1".into(),
            port: 30000,
            instances: 2,
            tensor: 2,
            pipeline: 1,
            data: 1,
            expert: 1,
            extra_args: vec!["--max-num-seqs=256".into()],
            gpus_per_node: 4,
            exe: "/bin/mlperf".into(),
            benchmark: "llama2-70b".into(),
        }
    }

    #[test]
    fn each_engine_gets_its_command_line_port_and_gpus_per_instance() {
        let vllm = spec(ServingEngine::Vllm).commands();
        assert_eq!(vllm.len(), 2);
        assert_eq!(
            vllm[1].display(),
            "CUDA_VISIBLE_DEVICES=2,3 vllm serve /models/llama --host 127.0.0.1 --port 30001 --tensor-parallel-size 2 --pipeline-parallel-size 1 --max-num-seqs=256"
        );
        let trt = spec(ServingEngine::TrtllmServe).commands();
        assert_eq!(trt[0].display(), "CUDA_VISIBLE_DEVICES=0,1 trtllm-serve /models/llama --host 127.0.0.1 --port 30000 --tp_size 2 --pp_size 1 --max-num-seqs=256");
        let sglang = spec(ServingEngine::Sglang).commands();
        assert!(sglang[0].display().contains("python3 -m sglang.launch_server --model-path /models/llama --host 127.0.0.1 --port 30000 --tp-size 2 --pp-size 1"));
        let dynamo = spec(ServingEngine::Dynamo).commands();
        let names: Vec<&str> = dynamo.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["frontend", "worker0", "worker1"]);
        assert!(dynamo[0].display().ends_with("python3 -m dynamo.frontend --http-port 30000"));
        let stand_in = spec(ServingEngine::StandIn).commands();
        assert_eq!(
            stand_in[1].display(),
            "/bin/mlperf serve_stand_in --host 127.0.0.1 --port 30001 --api completions-token-ids --model /models/llama --benchmark llama2-70b --max-num-seqs=256"
        );
    }

    #[test]
    fn endpoints_come_from_the_port_or_the_external_urls() {
        let started = Settings { serving_engine: Some(ServingEngine::Vllm), serving_port: Some(8000), serving_instances: Some(3), ..Settings::default() };
        assert_eq!(endpoints(&started).unwrap(), ["http://127.0.0.1:8000/v1", "http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"]);
        let dynamo = Settings { serving_engine: Some(ServingEngine::Dynamo), serving_instances: Some(4), ..Settings::default() };
        assert_eq!(endpoints(&dynamo).unwrap(), ["http://127.0.0.1:30000/v1"]);
        let external = Settings { serving_engine: Some(ServingEngine::External), ..Settings::default() };
        assert!(endpoints(&external).unwrap_err().to_string().contains("llm_server_urls"));
        assert!(api_of(&external).unwrap_err().to_string().contains("serving_api"));
        let high = Settings { serving_port: Some(65535), serving_instances: Some(2), ..started };
        assert!(endpoints(&high).unwrap_err().to_string().contains("ports are 1-65535"));
    }
}
