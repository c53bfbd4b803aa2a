//! `mlperf bench llm`: what the serving client costs, against the stand-in server with no delay
//! (so the server is never the limit) and, for the TTFT the client adds, with tokens paced like
//! an engine's. Comparator in the same run: `scripts/llm_reference_client.py`, a Python client
//! built the way the MLCommons reference SUTs are (a thread pool of streaming `requests` calls
//! read line by line), against the same stand-in.
//!
//! Rows: (a) the client alone, a closed loop of `in_flight` requests; (b) the comparator, the same
//! loop; (c) the serving SUT under LoadGen Offline; (d) the highest VALID LoadGen Server rate at
//! llama2-70b's TTFT / TPOT limits; then the TTFT the client adds (client-observed minus the
//! stand-in's own, which it reports in its first event) at the paced load, both clients.
//!
//! With `--reference_client`, (e): the MLCommons reference llama2-70b client itself, unmodified
//! (`main.py --vllm` with `SUT_API.py`, Offline, under its own Python LoadGen), run by
//! `scripts/reference_client.py` against the same stand-in on the same synthetic prompts, and
//! (c)'s ratio to it.

use super::{highest_passing, server_settings};
use crate::benchmarks::llm::synthetic_prompt;
use crate::dataset::qsl::SampleLibrary;
use crate::engines::serving::ServingError;
use crate::engines::serving::api::{Payload, Respond};
use crate::engines::serving::client::ServingWork;
use crate::engines::serving::client::{ClientOptions, EndpointStats, quantile};
use crate::engines::serving::launch::{self, Engines, LaunchSpec, Waiting};
use crate::engines::serving::measure::{self, ClosedLoop, Shape};
use crate::engines::serving::stand_in::StandInOptions;
use crate::harness::serving_sut::{ServingSut, ServingSutError};
use crate::rundir::RunDirError;
use crate::rundir::logs::{DetailLog, Validity};
use mlperf_config::{Round, ServingApi, ServingEngine};
use mlperf_loadgen::{LogSettings, TestMode, TestSettings};
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

#[derive(Debug, Clone)]
pub struct LlmBenchOptions {
    pub in_flight: usize,
    /// Requests in flight of the comparator's throughput row: its best, since a thousand Python
    /// threads mostly fight over the interpreter lock.
    pub comparator_in_flight: usize,
    pub output_tokens: u32,
    pub seconds: f64,
    pub warm_up: f64,
    pub paced_token_ms: f64,
    pub python: String,
    /// Row (e), when asked for.
    pub reference_client: Option<ReferenceClientOptions>,
}

/// The unmodified MLCommons reference client of row (e).
#[derive(Debug, Clone)]
pub struct ReferenceClientOptions {
    /// The mlcommons/inference checkout (a work tree or a bare clone).
    pub checkout: PathBuf,
    /// A Python with what `SUT_API.py` imports (mlcommons-loadgen, torch, transformers, datasets, pandas, requests).
    pub python: String,
    /// Samples of its Offline run: LoadGen's min_query_count, sent as one batch as its SUT does.
    pub samples: usize,
}

/// Row (e) and where its client came from.
#[derive(Debug, Clone)]
pub struct ReferenceClientRun {
    pub row: Row,
    /// The reference checkout's commit.
    pub commit: String,
    pub samples: usize,
}

/// One row: throughput and CPU.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub samples_per_s: f64,
    pub tokens_per_s: f64,
    /// CPU time of the client's process per streamed token (None: not measured).
    pub cpu_us_per_token: Option<f64>,
    /// Client CPU cores busy on average.
    pub cores: Option<f64>,
    pub note: String,
}

#[derive(Debug, Clone)]
pub struct LlmBenchReport {
    pub options: LlmBenchOptions,
    pub ours: Row,
    pub comparator: Row,
    pub under_loadgen: Row,
    /// Highest VALID Server QPS and its completed tokens/s, or why not run.
    pub server: Result<(f64, Row), String>,
    /// (p50, p99) ms the client adds to the server's TTFT at the paced load.
    pub added_ttft_ours: Quantiles,
    /// Its parts: submission to sending, sending to the response's headers.
    pub queued: Quantiles,
    pub to_headers: Quantiles,
    pub added_ttft_comparator: Quantiles,
    /// Where the paced measurement ran: the stand-in's CPUs and the clients'.
    pub placement: String,
    pub reference_client: Option<ReferenceClientRun>,
}

/// (p50, p99) in ms.
pub type Quantiles = (Option<f64>, Option<f64>);

fn quantiles_ms(mut us: Vec<u32>) -> Quantiles {
    let to_ms = |v: Option<u32>| v.map(|us| f64::from(us) / 1000.0);
    (to_ms(quantile(&mut us, 0.5)), to_ms(quantile(&mut us, 0.99)))
}

/// What stops `bench llm`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LlmBenchError {
    #[error("cannot create {}: {source}", path.display())]
    CreateDir { path: PathBuf, source: std::io::Error },
    #[error("cannot find this binary: {0}")]
    CurrentExe(std::io::Error),
    #[error(transparent)]
    Serving(#[from] ServingError),
    #[error(transparent)]
    Sut(#[from] ServingSutError),
    /// A LoadGen setting or test, with the run's directory where there is one.
    #[error("{where_}LoadGen: {source}", where_ = dir.as_ref().map(|d| format!("{}: ", d.display())).unwrap_or_default())]
    Loadgen { dir: Option<PathBuf>, source: mlperf_loadgen::LoadgenError },
    #[error(transparent)]
    DetailLog(#[from] RunDirError),
    /// The search for the highest VALID Server rate, or its settings.
    #[error("the Server search: {0}")]
    ServerSearch(#[from] super::BenchError),
    #[error("cannot read this process's CPUs: {0}")]
    Cpus(std::io::Error),
    #[error("cannot keep the clients on CPU {cpus}: {source}")]
    Pin { cpus: String, source: std::io::Error },
    #[error("the paced measurement's thread panicked")]
    Panicked,
    #[error("cannot run {python} {}: {source}", script.display())]
    ComparatorSpawn { python: String, script: PathBuf, source: std::io::Error },
    #[error("{} failed ({status}): {stderr}", script.display())]
    ComparatorFailed { script: PathBuf, status: std::process::ExitStatus, stderr: String },
    #[error("{} printed no JSON ({source}): {stdout}", script.display())]
    ComparatorOutput { script: PathBuf, source: serde_json::Error, stdout: String },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
}

impl From<LlmBenchError> for crate::Error {
    /// The serving layer's errors keep their kind; the rest is the bench's own (other).
    fn from(e: LlmBenchError) -> crate::Error {
        match e {
            LlmBenchError::Serving(e) => e.into(),
            LlmBenchError::Sut(e) => e.into(),
            e => crate::Error::Other(e.to_string()),
        }
    }
}

/// LoadGen's error outside a run directory (a setting).
fn loadgen(source: mlperf_loadgen::LoadgenError) -> LlmBenchError {
    LlmBenchError::Loadgen { dir: None, source }
}

/// The benchmark whose Server limits the search uses.
const SERVER_BENCHMARK: &str = "llama2-70b";

pub fn run(round: &Round, out: &Path, options: &LlmBenchOptions) -> Result<LlmBenchReport, LlmBenchError> {
    create_dir(out)?;
    let n = options.output_tokens.to_string();
    let fast = stand_in(out, 31001, &["--min_output_tokens", &n, "--max_output_tokens", &n])?;
    let warm_up = Duration::from_secs_f64(options.warm_up);
    let duration = Duration::from_secs_f64(options.seconds);
    let client = |endpoint: &str| ClientOptions {
        endpoints: vec![endpoint.to_string()],
        api: ServingApi::CompletionsTokenIds,
        model: "stand-in".into(),
        max_tokens: options.output_tokens,
        per_endpoint_limit: options.in_flight,
        request_timeout: Duration::from_secs(600),
        threads: 2,
        tokenizer: None,
    };
    let prompt = |k: usize| Payload::Tokens(synthetic_prompt(k % 4096));

    tracing::info!("bench llm: (a) the client alone, {} in flight, {} s", options.in_flight, options.seconds);
    let ours = measure::closed_loop(client(&fast.1), &prompt, Shape::all_at_once(options.in_flight, warm_up, duration))?;
    tracing::info!("bench llm: (b) the comparator, {} in flight, {} s", options.comparator_in_flight, options.seconds);
    let theirs = comparator(options, options.comparator_in_flight, &fast.1, None)?;

    tracing::info!("bench llm: (c) the serving SUT under LoadGen Offline");
    let library = Arc::new(SampleLibrary::generated("synthetic prompts", 24576, 24576, 0, |_| Vec::new()));
    let mut runs = 0;
    let mut loadgen_run = |label: &str, settings: &TestSettings| -> Result<(Row, Option<Validity>), LlmBenchError> {
        runs += 1;
        let dir = out.join(format!("{runs:02}-{label}"));
        create_dir(&dir)?;
        let work = ServingWork { options: client(&fast.1), request: Arc::new(|i| Payload::Tokens(synthetic_prompt(i))), respond: Respond::TOKEN_IDS };
        let sut = ServingSut::start(work, true, &dir)?;
        let cpu = crate::cpu::CpuClock::start();
        let result = mlperf_loadgen::start_test(&sut, library.as_ref(), settings, &LogSettings::in_dir(&dir), None);
        let cpu_us = cpu.elapsed_us();
        let stats = sut.finish()?;
        result.map_err(|source| LlmBenchError::Loadgen { dir: Some(dir.clone()), source })?;
        let log = DetailLog::read(&dir.join(crate::rundir::DETAIL_LOG))?;
        let (samples_key, tokens_key) = if settings.scenario() == mlperf_loadgen::Scenario::Server {
            ("result_completed_samples_per_sec", "result_completed_tokens_per_second")
        } else {
            ("result_samples_per_second", "result_tokens_per_second")
        };
        let tokens: u64 = stats.iter().map(|s| s.tokens).sum();
        let row = Row {
            samples_per_s: log.f64(samples_key).unwrap_or(0.0),
            tokens_per_s: log.f64(tokens_key).unwrap_or(0.0),
            cpu_us_per_token: Some(cpu_us / tokens.max(1) as f64),
            cores: None,
            note: log.validity().map_or("-".into(), |v| format!("{v:?}").to_uppercase()),
        };
        Ok((row, log.validity()))
    };
    let mut offline = TestSettings::new();
    offline.set_scenario(mlperf_loadgen::Scenario::Offline);
    offline.set_mode(TestMode::PerformanceOnly);
    let set = |s: &mut TestSettings, k: &str, v: u64| s.set_u64(k, v).map_err(loadgen);
    set(&mut offline, "min_duration_ms", duration.as_millis() as u64)?;
    set(&mut offline, "min_query_count", 1)?;
    set(&mut offline, "use_token_latencies", 1)?;
    offline.set_f64("offline_expected_qps", ours.samples_per_s() * 1.5).map_err(loadgen)?;
    let (under_loadgen, _) = loadgen_run("offline", &offline)?;
    let reference_client = match &options.reference_client {
        None => None,
        Some(reference) => {
            tracing::info!("bench llm: (e) the MLCommons reference llama2-70b client, Offline, {} samples", reference.samples);
            Some(reference_client(reference, &fast.1, &out.join("reference-client"))?)
        }
    };

    tracing::info!("bench llm: (d) highest VALID Server QPS at {SERVER_BENCHMARK}'s token limits");
    let server = match round.benchmark(SERVER_BENCHMARK).and_then(|b| b.llm_latency_limits.get("Server")) {
        None => Err(format!("round {} has no Server token limits for {SERVER_BENCHMARK}", round.id)),
        Some(limits) => {
            let mut best: Option<(f64, Row)> = None;
            highest_passing::<LlmBenchError>(ours.samples_per_s() / 4.0, ours.samples_per_s() * 4.0, |qps| {
                let mut s = server_settings(qps, 10_000_000_000, duration.as_millis() as u64)?;
                set(&mut s, "use_token_latencies", 1)?;
                set(&mut s, "server_ttft_latency", (limits.ttft_ms * 1e6) as u64)?;
                set(&mut s, "server_tpot_latency", (limits.tpot_ms * 1e6) as u64)?;
                let (row, validity) = loadgen_run("server", &s)?;
                let valid = validity == Some(Validity::Valid);
                if valid && best.as_ref().is_none_or(|(q, _)| qps > *q) {
                    best = Some((qps, row));
                }
                Ok(valid)
            })?;
            best.ok_or_else(|| "no Server rate was VALID".to_string())
        }
    };
    drop(fast);

    tracing::info!("bench llm: the TTFT each client adds at a paced load ({} in flight, one token per {} ms)", options.in_flight, options.paced_token_ms);
    // With two CPUs or more the stand-in gets the last and the clients the rest, as if the engine
    // ran on a machine of its own: sharing cores, each process's wake-ups wait on the other's.
    let cpus = crate::cpu::allowed_cpus().map_err(LlmBenchError::Cpus)?;
    let (server_cpu, client_cpus) = match cpus.split_last() {
        Some((&last, rest)) if !rest.is_empty() => (Some(last.to_string()), rest.to_vec()),
        _ => (None, Vec::new()),
    };
    let list = |cpus: &[usize]| cpus.iter().map(usize::to_string).collect::<Vec<_>>().join(",");
    let placement = match &server_cpu {
        None => "stand-in and clients share this process's CPUs".to_string(),
        Some(cpu) => format!("stand-in on CPU {cpu}, clients on CPU {}", list(&client_cpus)),
    };
    let ms = options.paced_token_ms.to_string();
    let mut args = vec!["--min_output_tokens", &n, "--max_output_tokens", &n, "--first_token_ms", &ms, "--token_ms", &ms];
    if let Some(cpu) = &server_cpu {
        args.extend(["--cpus", cpu, "--threads", "1"]);
    }
    let paced = stand_in(out, 31002, &args)?;
    // Requests start spread over one answer's length, as a server's arrivals are, and the
    // warm-up covers two answers: no request of the opening connections (which the kernel may
    // hold back a second as a SYN flood) is measured.
    let answer = Duration::from_secs_f64(options.paced_token_ms * f64::from(options.output_tokens + 1) / 1e3);
    let shape = Shape { in_flight: options.in_flight, ramp: answer, warm_up: warm_up + answer * 2, duration };
    let paced_client = ClientOptions { threads: client_cpus.len().clamp(1, 2), ..client(&paced.1) };
    let paced_options = LlmBenchOptions { warm_up: shape.warm_up.as_secs_f64(), ..options.clone() };
    // One thread, pinned, runs both clients: the client's runtime and the comparator's process inherit its CPUs.
    let (paced_ours, paced_comparator) = std::thread::scope(|scope| {
        scope
            .spawn(|| -> Result<_, LlmBenchError> {
                if !client_cpus.is_empty() {
                    crate::cpu::pin_current_thread(&client_cpus).map_err(|source| LlmBenchError::Pin { cpus: list(&client_cpus), source })?;
                }
                let ours = measure::closed_loop(paced_client, &prompt, shape)?;
                Ok((ours, comparator(&paced_options, options.in_flight, &paced.1, Some(answer))?))
            })
            .join()
            .map_err(|_| LlmBenchError::Panicked)?
    })?;
    let all = |f: fn(&EndpointStats) -> &Vec<u32>| paced_ours.endpoints.iter().flat_map(|e| f(e).iter().copied()).collect::<Vec<u32>>();

    Ok(LlmBenchReport {
        options: options.clone(),
        ours: row_of(&ours, options.in_flight),
        comparator: theirs.row,
        under_loadgen,
        server,
        added_ttft_ours: quantiles_ms(all(|e| &e.added_ttft_us)),
        queued: quantiles_ms(all(|e| &e.queued_us)),
        to_headers: quantiles_ms(all(|e| &e.to_headers_us)),
        added_ttft_comparator: (paced_comparator.added_ttft_p50_ms, paced_comparator.added_ttft_p99_ms),
        placement,
        reference_client,
    })
}

fn row_of(m: &ClosedLoop, in_flight: usize) -> Row {
    let secs = m.elapsed.as_secs_f64();
    Row {
        samples_per_s: m.samples_per_s(),
        tokens_per_s: m.tokens_per_s(),
        cpu_us_per_token: Some(m.cpu_us / m.tokens.max(1) as f64),
        cores: Some(m.cpu_us / 1e6 / secs),
        note: format!("{in_flight} in flight, {} requests", m.completed),
    }
}

/// A stand-in server started as its own process (so this process's CPU is the client's alone).
fn stand_in(out: &Path, port: u16, args: &[&str]) -> Result<(Engines, String), LlmBenchError> {
    let spec = LaunchSpec {
        engine: ServingEngine::StandIn,
        api: ServingApi::CompletionsTokenIds,
        model: "stand-in".into(),
        host: "127.0.0.1".into(),
        port,
        instances: 1,
        tensor: 1,
        pipeline: 1,
        data: 1,
        expert: 1,
        extra_args: args.iter().map(|s| s.to_string()).collect(),
        gpus_per_node: 0,
        exe: std::env::current_exe().map_err(LlmBenchError::CurrentExe)?,
        benchmark: SERVER_BENCHMARK.into(),
    };
    let dir = out.join(format!("stand-in-{port}"));
    create_dir(&dir)?;
    let mut engines = Engines::start(&spec, &dir)?;
    let endpoint = format!("http://127.0.0.1:{port}/v1");
    launch::wait_ready(std::slice::from_ref(&endpoint), Waiting::Started, Duration::from_secs(30), || {
        engines.exited().map_or(Ok(()), |exit| Err(ServingError::ExitedEarly(exit)))
    })?;
    Ok((engines, endpoint))
}

fn create_dir(path: &Path) -> Result<(), LlmBenchError> {
    std::fs::create_dir_all(path).map_err(|source| LlmBenchError::CreateDir { path: path.to_path_buf(), source })
}

struct ComparatorResult {
    row: Row,
    added_ttft_p50_ms: Option<f64>,
    added_ttft_p99_ms: Option<f64>,
}

/// A Python script of `scripts/` and the one JSON object it prints.
fn run_script(python: &str, name: &str, args: &[String]) -> Result<serde_json::Value, LlmBenchError> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts").join(name);
    let output = std::process::Command::new(python).arg(&script).args(args).output().map_err(|source| LlmBenchError::ComparatorSpawn {
        python: python.to_string(),
        script: script.clone(),
        source,
    })?;
    if !output.status.success() {
        return Err(LlmBenchError::ComparatorFailed { script, status: output.status, stderr: String::from_utf8_lossy(&output.stderr).trim().to_string() });
    }
    serde_json::from_slice(&output.stdout).map_err(|source| LlmBenchError::ComparatorOutput { script, source, stdout: String::from_utf8_lossy(&output.stdout).into_owned() })
}

/// The comparator's closed loop; `ramp` spreads its first requests (None: its own default).
fn comparator(options: &LlmBenchOptions, in_flight: usize, endpoint: &str, ramp: Option<Duration>) -> Result<ComparatorResult, LlmBenchError> {
    let mut args = vec!["--url".to_string(), endpoint.to_string(), "--in_flight".into(), in_flight.to_string(), "--max_tokens".into(), options.output_tokens.to_string()];
    args.extend(["--seconds".into(), options.seconds.to_string(), "--warm_up".into(), options.warm_up.to_string()]);
    args.extend(ramp.map(|r| ["--ramp".to_string(), r.as_secs_f64().to_string()]).into_iter().flatten());
    let v = run_script(&options.python, "llm_reference_client.py", &args)?;
    let f = |k: &str| v[k].as_f64();
    let tokens_per_s = f("tokens_per_s").unwrap_or(0.0);
    let cpu_s = f("cpu_s").unwrap_or(0.0);
    Ok(ComparatorResult {
        row: Row {
            samples_per_s: f("samples_per_s").unwrap_or(0.0),
            tokens_per_s,
            cpu_us_per_token: Some(cpu_s * 1e6 / (tokens_per_s * options.seconds).max(1.0)),
            cores: Some(cpu_s / options.seconds),
            note: format!("{in_flight} in flight, {} errors", v["errors"]),
        },
        added_ttft_p50_ms: f("added_ttft_p50_ms"),
        added_ttft_p99_ms: f("added_ttft_p99_ms"),
    })
}

/// Row (e): the reference client's Offline run on (c)'s first prompts, against (c)'s stand-in,
/// whose tokenizer.json it re-tokenizes the text answers with.
fn reference_client(reference: &ReferenceClientOptions, endpoint: &str, dir: &Path) -> Result<ReferenceClientRun, LlmBenchError> {
    create_dir(dir)?;
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).map_err(|source| LlmBenchError::Write { path: path.clone(), source })?;
        Ok::<_, LlmBenchError>(path)
    };
    let prompts: Vec<Vec<i32>> = (0..reference.samples).map(|k| synthetic_prompt(k).to_vec()).collect();
    let prompts = write("prompts.json", serde_json::Value::from(prompts).to_string())?;
    let tokenizer = write("tokenizer.json", StandInOptions::default().tokenizer_json())?;
    let path = |p: &Path| p.display().to_string();
    let args = [
        "--reference_dir".to_string(),
        path(&reference.checkout),
        "--api_server".into(),
        crate::engines::serving::api::root(endpoint).to_string(),
        "--tokenizer_json".into(),
        path(&tokenizer),
        "--prompts".into(),
        path(&prompts),
        "--samples".into(),
        reference.samples.to_string(),
        "--work".into(),
        path(&dir.join("run")),
    ];
    let v = run_script(&reference.python, "reference_client.py", &args)?;
    let f = |k: &str| v[k].as_f64().unwrap_or(0.0);
    Ok(ReferenceClientRun {
        row: Row { samples_per_s: f("samples_per_s"), tokens_per_s: f("tokens_per_s"), cpu_us_per_token: None, cores: None, note: v["result"].as_str().unwrap_or("-").to_string() },
        commit: v["reference_commit"].as_str().unwrap_or("unknown").to_string(),
        samples: reference.samples,
    })
}

/// The table, ratio to the comparator first.
pub fn render(r: &LlmBenchReport) -> String {
    let o = &r.options;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "serving client vs the reference-style Python client, stand-in server (completions-token-ids), {} in flight, {} output tokens, {} s per measurement after {} s warm-up",
        o.in_flight, o.output_tokens, o.seconds, o.warm_up
    );
    let _ = writeln!(out, "| measurement | ratio to (b) | samples/s | tokens/s | client CPU us/token | client cores | note |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|");
    let base = r.comparator.samples_per_s.max(1e-9);
    let opt = |v: Option<f64>, digits: usize| v.map_or("-".to_string(), |v| format!("{v:.digits$}"));
    let mut row = |name: &str, x: &Row| {
        let _ = writeln!(
            out,
            "| {name} | {:.1} | {:.1} | {:.0} | {} | {} | {} |",
            x.samples_per_s / base,
            x.samples_per_s,
            x.tokens_per_s,
            opt(x.cpu_us_per_token, 2),
            opt(x.cores, 2),
            x.note
        );
    };
    row("(a) serving client alone (closed loop)", &r.ours);
    row("(b) Python reference-style client (closed loop)", &r.comparator);
    row("(c) serving SUT under LoadGen Offline", &r.under_loadgen);
    match &r.server {
        Ok((qps, x)) => row(&format!("(d) serving SUT under LoadGen Server, highest VALID QPS {qps:.0} ({SERVER_BENCHMARK} TTFT/TPOT limits)"), x),
        Err(why) => {
            let _ = writeln!(out, "| (d) LoadGen Server | - | - | - | - | - | not run: {why} |");
        }
    }
    let q = |(p50, p99): Quantiles, digits: usize| format!("p50 {} ms, p99 {} ms", opt(p50, digits), opt(p99, digits));
    let _ = writeln!(
        out,
        "added TTFT (client-observed minus server-reported) at {} in flight, starts spread over one answer, one token per {} ms, {}: serving client {}; Python client {}",
        o.in_flight,
        o.paced_token_ms,
        r.placement,
        q(r.added_ttft_ours, 3),
        q(r.added_ttft_comparator, 1)
    );
    let _ = writeln!(out, "serving client's parts: submission to sending {}; sending to the response's headers {}", q(r.queued, 3), q(r.to_headers, 3));
    if let Some(e) = &r.reference_client {
        let _ = writeln!(
            out,
            "\nthe unmodified MLCommons reference client (language/llama2-70b main.py --vllm, SUT_API.py; inference {}) under its own LoadGen, Offline, {} samples sent as one batch, against (c)'s stand-in:",
            e.commit, e.samples
        );
        let _ = writeln!(out, "| measurement | ratio to (e) | samples/s | tokens/s | note |");
        let _ = writeln!(out, "|---|---|---|---|---|");
        let base = e.row.samples_per_s.max(1e-9);
        for (name, x) in [("(c) serving SUT under LoadGen Offline", &r.under_loadgen), ("(e) MLCommons reference llama2-70b client (SUT_API.py)", &e.row)] {
            let _ = writeln!(out, "| {name} | {:.2} | {:.1} | {:.0} | {} |", x.samples_per_s / base, x.samples_per_s, x.tokens_per_s, x.note);
        }
    }
    out
}
