//! The stand-in serving engine: an OpenAI-compatible test double at the network boundary. It
//! accepts what vLLM's OpenAI server accepts (`/v1/completions` with one prompt or a batch, token
//! ids or text, streamed or not, with logprobs; `/v1/chat/completions` with text and image parts;
//! `/v1/audio/transcriptions` as a multipart upload of a WAV file; `/v1/models`, `/health`,
//! `/version`), so our own client, the MLCommons reference clients, the `openai` SDK and curl all
//! run against it, and it speaks SGLang's and llama.cpp's native routes when configured for them.
//! It answers each prompt with a deterministic sequence of tokens (the same prompt gets the same
//! answer on any instance, as greedy decoding would), paces tokens with a first-token and a
//! per-token delay, and injects the faults real engines have: HTTP errors, malformed events,
//! dropped connections, stalled streams, a process that dies, a server that never becomes ready.
//! Its first event carries `stand_in_ttft_us`, its own time from the request to the first token,
//! so benches can tell what the client adds.
//!
//! Given a dataset's reference answers ([`ReferenceAnswers`]), it answers each of the dataset's
//! requests with its reference answer instead: a run then scores as a perfect model
//! would, which rehearses the accuracy and submission chain end to end.
//!
//! Runs are never submittable: the stand-in's answers are not a model's.

mod audio;
mod openai;
#[cfg(test)]
mod http_tests;

use super::api::clip;
use bytes::Bytes;
use futures_util::stream;
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mlperf_config::ServingApi;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use sse_stream::Sse;
use std::collections::HashMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::time::Instant;

/// Faults injected into the n-th generation request (counted from 1 over the server's life).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Faults {
    /// Every n-th request answers HTTP 500.
    pub http_500_every: Option<u64>,
    /// Every n-th request's second event is not JSON.
    pub malformed_every: Option<u64>,
    /// Every n-th request's connection is cut after its first token.
    pub drop_every: Option<u64>,
    /// The first n requests' connections are cut after their first token: drops in a row while
    /// the engine stays healthy.
    pub drop_first: Option<u64>,
    /// Every n-th request stops streaming after its first token and never ends.
    pub stall_every: Option<u64>,
    /// The process exits after sending the first token of its n-th request.
    pub die_after: Option<u64>,
    /// `/health` answers 503 for this long after start (an engine loading weights).
    pub ready_after: Duration,
    /// `/health` never answers 200.
    pub never_ready: bool,
}

/// How the stand-in behaves.
#[derive(Debug, Clone, PartialEq)]
pub struct StandInOptions {
    pub host: String,
    /// 0: any free port.
    pub port: u16,
    pub api: ServingApi,
    /// The model name `/v1/models` lists.
    pub model: String,
    pub first_token: Duration,
    pub per_token: Duration,
    /// Output length range; a request's `max_tokens` caps it.
    pub min_output_tokens: u32,
    pub max_output_tokens: u32,
    pub vocab: u32,
    /// Tokio worker threads.
    pub threads: usize,
    /// CPUs `serve` keeps the process on (empty: anywhere).
    pub cpus: Vec<usize>,
    pub faults: Faults,
    /// Answer the dataset's prompts with their references.
    pub references: Option<Arc<ReferenceAnswers>>,
}

/// A dataset's reference answers: token ids by token-id prompt (the LLMs), and text by request key
/// (chat and transcription requests: [`chat_key`], [`audio_key`]).
#[derive(Debug, PartialEq, Default)]
pub struct ReferenceAnswers {
    by_prompt: HashMap<Vec<i32>, Vec<i32>>,
    by_key: HashMap<String, String>,
}

impl ReferenceAnswers {
    /// Answers by prompt, both as token ids (a family reads them from its dataset:
    /// `benchmarks::llm::stand_in::reference_answers`).
    pub fn new(by_prompt: HashMap<Vec<i32>, Vec<i32>>) -> ReferenceAnswers {
        ReferenceAnswers { by_prompt, by_key: HashMap::new() }
    }

    /// Chat and transcription answers as text, by request key.
    pub fn texts(by_key: HashMap<String, String>) -> ReferenceAnswers {
        ReferenceAnswers { by_prompt: HashMap::new(), by_key }
    }
}

/// The key of a chat request: the text parts of its last user message, joined with "\n".
pub fn chat_key(user_text_parts: &[&str]) -> String {
    user_text_parts.join("\n")
}

/// The key of an audio clip: lowercase hex SHA-256 of its 16-bit samples (little-endian bytes)
/// with trailing zero samples removed, so padding does not change it.
pub fn audio_key(samples: &[i16]) -> String {
    let end = samples.iter().rposition(|&s| s != 0).map_or(0, |i| i + 1);
    let mut hash = Sha256::new();
    for sample in &samples[..end] {
        hash.update(sample.to_le_bytes());
    }
    format!("{:x}", hash.finalize())
}

impl Default for StandInOptions {
    fn default() -> Self {
        StandInOptions {
            host: "127.0.0.1".into(),
            port: 0,
            api: ServingApi::CompletionsTokenIds,
            model: "stand-in".into(),
            first_token: Duration::ZERO,
            per_token: Duration::ZERO,
            min_output_tokens: 128,
            max_output_tokens: 128,
            vocab: 32_000,
            threads: 2,
            cpus: Vec::new(),
            faults: Faults::default(),
            references: None,
        }
    }
}

/// Options the stand-in cannot serve with, or a server it cannot start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StandInError {
    #[error("output lengths {min}..={max} are empty: min_output_tokens must be at least 1 and at most max_output_tokens")]
    OutputLengths { min: u32, max: u32 },
    #[error("vocab and threads must be at least 1")]
    Zero,
    #[error("fault intervals count requests from 1; 0 would never fire")]
    FaultInterval,
    #[error("reference answers are token ids of the model's tokenizer; the {api} dialect spells the stand-in's own tokens")]
    ReferencesWithText { api: &'static str },
    #[error("cannot start the stand-in's runtime: {0}")]
    Runtime(std::io::Error),
    #[error("the stand-in cannot listen on {bind}: {source}")]
    Listen { bind: String, source: std::io::Error },
    /// The listener's own address.
    #[error("{0}")]
    Address(std::io::Error),
    #[error("serve_stand_in --cpus {cpus:?}: {source}")]
    Pin { cpus: Vec<usize>, source: std::io::Error },
}

impl From<StandInError> for crate::Error {
    /// `serve_stand_in` has always exited with the general status: the stand-in is a test tool.
    fn from(e: StandInError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

impl StandInOptions {
    pub fn validate(&self) -> Result<(), StandInError> {
        if self.min_output_tokens == 0 || self.min_output_tokens > self.max_output_tokens {
            return Err(StandInError::OutputLengths { min: self.min_output_tokens, max: self.max_output_tokens });
        }
        if self.vocab == 0 || self.threads == 0 {
            return Err(StandInError::Zero);
        }
        let every = [self.faults.http_500_every, self.faults.malformed_every, self.faults.drop_every, self.faults.stall_every, self.faults.die_after];
        if every.contains(&Some(0)) {
            return Err(StandInError::FaultInterval);
        }
        if self.references.as_ref().is_some_and(|r| !r.by_prompt.is_empty()) && self.api.streams_text() {
            return Err(StandInError::ReferencesWithText { api: self.api.name() });
        }
        Ok(())
    }

    /// The tokenizer of the stand-in's "model" as a Hugging Face tokenizer.json: word-level, token
    /// id k is the word `t{k}`, which is how its text dialect spells it (one word per event, after
    /// a space). Re-tokenizing its text answers with it gives back the ids it generated.
    pub fn tokenizer_json(&self) -> String {
        let vocab: serde_json::Map<String, serde_json::Value> = (0..self.vocab).map(|k| (format!("t{k}"), serde_json::json!(k))).collect();
        serde_json::json!({
            "version": "1.0",
            "truncation": null,
            "padding": null,
            "added_tokens": [],
            "normalizer": null,
            "pre_tokenizer": { "type": "Whitespace" },
            "post_processor": null,
            "decoder": null,
            "model": { "type": "WordLevel", "vocab": vocab, "unk_token": "t0" }
        })
        .to_string()
    }

    /// The reference answer to a dataset prompt, else a deterministic one; capped at `limit` tokens.
    pub fn answer(&self, prompt: &[i32], limit: u32) -> Vec<i32> {
        if let Some(reference) = self.references.as_ref().and_then(|r| r.by_prompt.get(prompt)) {
            return reference[..reference.len().min(limit.max(1) as usize)].to_vec();
        }
        let seed = prompt.iter().fold(0x9e37_79b9_7f4a_7c15u64, |h, &id| splitmix(h ^ id as u32 as u64));
        let span = u64::from(self.max_output_tokens - self.min_output_tokens) + 1;
        let len = (u64::from(self.min_output_tokens) + seed % span).min(u64::from(limit.max(1)));
        (0..len).map(|i| (splitmix(seed.wrapping_add(i)) % u64::from(self.vocab)) as i32).collect()
    }

    /// A text answer as the pieces it streams, one per token: the reference of `key` when there is
    /// one (split before each word, its whitespace kept, so the pieces join to the reference), else
    /// the answer to `prompt` spelled as the stand-in spells tokens (` t<k>`); capped at `limit`.
    fn text_answer(&self, key: &str, prompt: &[i32], limit: u32) -> Vec<String> {
        let limit = limit.max(1) as usize;
        if let Some(reference) = self.references.as_ref().and_then(|r| r.by_key.get(key)) {
            let mut pieces: Vec<String> = Vec::new();
            let mut after_space = false;
            for c in reference.chars() {
                let space = c.is_whitespace();
                match pieces.last_mut() {
                    Some(piece) if !space || after_space => piece.push(c),
                    _ => pieces.push(c.to_string()),
                }
                after_space = space;
            }
            pieces.truncate(limit);
            return pieces;
        }
        self.answer(prompt, limit as u32).iter().map(|id| format!(" t{id}")).collect()
    }

    /// The stand-in's own tokenizer on text: each whitespace-separated word `t<k>` (k within the
    /// vocabulary) is token k, as [`Self::tokenizer_json`] says; any other word, a token chosen by
    /// its hash, so the same text always gives the same ids.
    fn encode_text(&self, text: &str) -> Vec<i32> {
        let vocab = u64::from(self.vocab);
        text.split_whitespace()
            .map(|word| match word.strip_prefix('t').and_then(|k| k.parse::<u64>().ok().filter(|n| n.to_string() == k)) {
                Some(k) if k < vocab => k as i32,
                _ => (word.bytes().fold(0x51_7cc1_b727_220au64, |h, b| splitmix(h ^ u64::from(b))) % vocab) as i32,
            })
            .collect()
    }
}

fn splitmix(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A stand-in serving in this process until dropped.
pub struct StandIn {
    pub addr: SocketAddr,
    runtime: Option<tokio::runtime::Runtime>,
}

impl StandIn {
    /// The endpoint base URL (`http://addr/v1`).
    pub fn endpoint(&self) -> String {
        format!("http://{}/v1", self.addr)
    }
}

impl Drop for StandIn {
    fn drop(&mut self) {
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

/// Starts a stand-in on its own runtime and returns once it listens.
pub fn start(options: StandInOptions) -> Result<StandIn, StandInError> {
    options.validate()?;
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(options.threads).thread_name("stand-in").enable_all().build().map_err(StandInError::Runtime)?;
    let bind = format!("{}:{}", options.host, options.port);
    let listener = runtime.block_on(tokio::net::TcpListener::bind(&bind)).map_err(|source| StandInError::Listen { bind: bind.clone(), source })?;
    let addr = listener.local_addr().map_err(StandInError::Address)?;
    let state = Arc::new(State { options, requests: AtomicU64::new(0), started: Instant::now() });
    runtime.spawn(accept(listener, state));
    Ok(StandIn { addr, runtime: Some(runtime) })
}

/// `mlperf serve_stand_in`: serves until the process is stopped.
pub fn serve(options: StandInOptions) -> Result<(), StandInError> {
    let api = options.api;
    if !options.cpus.is_empty() {
        // Before the runtime starts: its workers inherit the placement.
        crate::cpu::pin_current_thread(&options.cpus).map_err(|source| StandInError::Pin { cpus: options.cpus.clone(), source })?;
    }
    let server = start(options)?;
    tracing::info!("stand-in serving engine ({}) listening on {}", api.name(), server.endpoint());
    loop {
        std::thread::park();
    }
}

struct State {
    options: StandInOptions,
    /// Generation requests accepted so far (faults count them).
    requests: AtomicU64,
    started: Instant,
}

async fn accept(listener: tokio::net::TcpListener, state: Arc<State>) {
    loop {
        let Ok((stream, _)) = listener.accept().await else { continue };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req| handle(req, state.clone()));
            let _ = http1::Builder::new().serve_connection(TokioIo::new(stream), service).await;
        });
    }
}

type Body = BoxBody<Bytes, std::io::Error>;

fn full(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(body.into()).map_err(|never: Infallible| match never {}).boxed())
        .expect("a valid response")
}

fn json(status: StatusCode, body: String) -> Response<Body> {
    full(status, "application/json", body)
}

/// An error as vLLM's OpenAI server writes one.
fn error(status: StatusCode, message: &str) -> Response<Body> {
    let kind = match status {
        StatusCode::BAD_REQUEST => "BadRequestError",
        StatusCode::NOT_FOUND => "NotFoundError",
        StatusCode::SERVICE_UNAVAILABLE => "ServiceUnavailableError",
        _ => "InternalServerError",
    };
    json(status, serde_json::json!({ "error": { "message": message, "type": kind, "param": null, "code": status.as_u16() } }).to_string())
}

/// A 400 with the stand-in's name on it.
fn bad_request(message: impl std::fmt::Display) -> Response<Body> {
    error(StatusCode::BAD_REQUEST, &format!("stand-in: {message}"))
}

/// The routes it serves, for a 404.
fn routes(api: ServingApi) -> String {
    let native = match api {
        ServingApi::SglangGenerate => ", POST /generate",
        ServingApi::LlamaCppCompletion => ", POST /completion",
        _ => "",
    };
    format!("POST /v1/completions, /v1/chat/completions, /v1/audio/transcriptions{native}; GET /v1/models, /health, /version")
}

async fn handle(req: Request<Incoming>, state: Arc<State>) -> Result<Response<Body>, Infallible> {
    let received = Instant::now();
    let options = &state.options;
    let (method, route) = (req.method().clone(), req.uri().path().to_string());
    let reply = match (&method, route.as_str()) {
        (&Method::GET, "/health") => {
            let loading = options.faults.never_ready || state.started.elapsed() < options.faults.ready_after;
            return Ok(if loading { error(StatusCode::SERVICE_UNAVAILABLE, "stand-in: loading") } else { json(StatusCode::OK, "{}".into()) });
        }
        (&Method::GET, "/v1/models") => {
            let card = serde_json::json!({ "id": options.model, "object": "model", "created": unix_time(), "owned_by": "vllm", "root": options.model, "parent": null, "permission": [] });
            return Ok(json(StatusCode::OK, serde_json::json!({ "object": "list", "data": [card] }).to_string()));
        }
        (&Method::GET, "/version") => return Ok(json(StatusCode::OK, serde_json::json!({ "version": concat!("stand-in ", env!("CARGO_PKG_VERSION")) }).to_string())),
        (&Method::POST, "/v1/completions" | "/v1/chat/completions" | "/v1/audio/transcriptions" | "/generate" | "/completion") => {
            let content_type = req.headers().get("content-type").and_then(|v| v.to_str().ok()).unwrap_or_default().to_string();
            let body = match req.into_body().collect().await {
                Ok(b) => b.to_bytes(),
                Err(e) => return Ok(bad_request(format_args!("cannot read the body: {e}"))),
            };
            match (route.as_str(), options.api) {
                ("/v1/completions", _) => openai::completions(&body, &state),
                ("/v1/chat/completions", _) => openai::chat(&body, &state),
                ("/v1/audio/transcriptions", _) => audio::transcriptions(&content_type, body, &state).await,
                ("/generate", ServingApi::SglangGenerate) => native(&body, options, Native::Sglang),
                ("/completion", ServingApi::LlamaCppCompletion) => native(&body, options, Native::LlamaCpp),
                _ => Err(error(StatusCode::NOT_FOUND, &format!("stand-in ({}): no route {route}; it serves {}", options.api.name(), routes(options.api)))),
            }
        }
        _ => Err(error(StatusCode::NOT_FOUND, &format!("stand-in ({}): no route {method} {route}; it serves {}", options.api.name(), routes(options.api)))),
    };
    Ok(match reply {
        Ok(reply) => deliver(reply, &state, received).await,
        Err(refused) => refused,
    })
}

/// Seconds since the epoch, as responses' `created`.
fn unix_time() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// A response id (`cmpl-...`, `chatcmpl-...`): unique enough within a test.
fn response_id(prefix: &str) -> String {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    format!("{prefix}-{:032x}", splitmix(SERIAL.fetch_add(1, Ordering::Relaxed) ^ unix_time()))
}

/// What a validated generation request gets, before faults and timing.
enum Reply {
    /// Server-sent events.
    Stream(Box<dyn Events>),
    /// One body, sent once its `steps` tokens would have been generated.
    Whole { steps: usize, content_type: &'static str, body: String },
}

/// How a route spells a streamed answer.
trait Events: Send + Sync + 'static {
    /// Token steps (the longest answer's tokens).
    fn steps(&self) -> usize;
    /// The events of step `k` (`k == steps()`: the closing ones); `ttft_us` goes on the first.
    fn event(&self, k: usize, ttft_us: Option<u64>, out: &mut Vec<u8>);
}

/// One server-sent event.
fn push_event(out: &mut Vec<u8>, data: String) {
    out.extend_from_slice(&Sse::default().data(data).encode().expect("plain data events encode"));
}

/// The faults that hit one request.
#[derive(Clone, Copy)]
struct Hit {
    malformed: bool,
    drop: bool,
    stall: bool,
    die: bool,
}

/// Counts the request, then answers it with its faults and timing: HTTP 500 at once; streamed,
/// event by event; whole, when its last token would have been generated.
async fn deliver(reply: Reply, state: &State, received: Instant) -> Response<Body> {
    let options = &state.options;
    let n = state.requests.fetch_add(1, Ordering::Relaxed) + 1;
    let hits = |every: Option<u64>| every.is_some_and(|k| n.is_multiple_of(k));
    let faults = &options.faults;
    if hits(faults.http_500_every) {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "stand-in: injected failure");
    }
    let hit = Hit {
        malformed: hits(faults.malformed_every),
        drop: hits(faults.drop_every) || faults.drop_first.is_some_and(|k| n <= k),
        stall: hits(faults.stall_every),
        die: faults.die_after == Some(n),
    };
    let first_at = received + options.first_token;
    match reply {
        Reply::Stream(events) => {
            let plan = StreamPlan { events, first_at, per_token: options.per_token, received, hit };
            let body = BodyExt::boxed(StreamBody::new(plan.into_stream()));
            Response::builder().header("content-type", "text/event-stream").header("cache-control", "no-cache").body(body).expect("a valid response")
        }
        Reply::Whole { steps, content_type, body } => {
            tokio::time::sleep_until(first_at).await;
            if hit.die {
                die();
            }
            if hit.stall {
                std::future::pending::<()>().await;
            }
            tokio::time::sleep_until(first_at + options.per_token * steps.saturating_sub(1) as u32).await;
            if hit.malformed {
                return full(StatusCode::OK, content_type, "{\"choices\": [");
            }
            if hit.drop {
                // Half the body, then the connection breaks.
                let half = Bytes::from(body.into_bytes());
                let frames = [Ok(Frame::data(half.slice(..half.len() / 2))), Err(std::io::Error::other("stand-in: injected dropped connection"))];
                return Response::builder().header("content-type", content_type).body(BodyExt::boxed(StreamBody::new(stream::iter(frames)))).expect("a valid response");
            }
            full(StatusCode::OK, content_type, body)
        }
    }
}

fn die() -> ! {
    tracing::warn!("stand-in: exiting as asked (--die_after)");
    std::process::exit(17);
}

/// SGLang's and llama.cpp's native routes, in the dialect our client speaks.
#[derive(Clone, Copy)]
enum Native {
    Sglang,
    LlamaCpp,
}

/// The native dialects' request fields the stand-in reads.
#[derive(Deserialize)]
struct NativeRequest {
    #[serde(default)]
    prompt: Option<Vec<i32>>,
    #[serde(default)]
    input_ids: Option<Vec<i32>>,
    #[serde(default)]
    n_predict: Option<u32>,
    #[serde(default)]
    sampling_params: Option<SglangSampling>,
    #[serde(default)]
    stream: bool,
}

#[derive(Deserialize)]
struct SglangSampling {
    #[serde(default)]
    max_new_tokens: Option<u32>,
}

fn native(body: &[u8], options: &StandInOptions, dialect: Native) -> Result<Reply, Response<Body>> {
    let api = options.api.name();
    let request: NativeRequest = serde_json::from_slice(body)
        .map_err(|e| bad_request(format_args!("the body is not a {api} request with a token-id prompt: {e}: {}", clip(&String::from_utf8_lossy(body)))))?;
    let (prompt, limit) = match dialect {
        Native::Sglang => (request.input_ids, request.sampling_params.and_then(|s| s.max_new_tokens)),
        Native::LlamaCpp => (request.prompt, request.n_predict),
    };
    let Some(prompt) = prompt.filter(|p| !p.is_empty()) else { return Err(bad_request("the prompt must be a non-empty list of token ids")) };
    if !request.stream {
        return Err(bad_request(format_args!("a {api} request must stream as that dialect does")));
    }
    let ids = options.answer(&prompt, limit.unwrap_or(options.max_output_tokens));
    Ok(Reply::Stream(Box::new(NativeEvents { dialect, ids, prompt_tokens: prompt.len() })))
}

struct NativeEvents {
    dialect: Native,
    ids: Vec<i32>,
    prompt_tokens: usize,
}

impl Events for NativeEvents {
    fn steps(&self) -> usize {
        self.ids.len()
    }

    fn event(&self, k: usize, ttft_us: Option<u64>, out: &mut Vec<u8>) {
        let n = self.ids.len();
        if k == n {
            match self.dialect {
                Native::LlamaCpp => push_event(out, serde_json::json!({ "content": "", "tokens": [], "stop": true, "tokens_predicted": n }).to_string()),
                Native::Sglang => push_event(out, "[DONE]".into()),
            }
            return;
        }
        // Written directly rather than through serde_json's Value: at a thousand paced streams the
        // stand-in shares two cores with the client it measures.
        let id = self.ids[k];
        let finish = if k + 1 == n { "\"length\"" } else { "null" };
        let ttft = ttft_us.map_or(String::new(), |us| format!(",\"stand_in_ttft_us\":{us}"));
        push_event(
            out,
            match self.dialect {
                Native::Sglang => {
                    let ids = serde_json::to_string(&self.ids[..=k]).expect("ids serialise");
                    let meta = format!(r#"{{"prompt_tokens":{},"completion_tokens":{},"finish_reason":{finish}}}"#, self.prompt_tokens, k + 1);
                    format!(r#"{{"text":" t{id}","output_ids":{ids},"meta_info":{meta}{ttft}}}"#)
                }
                Native::LlamaCpp => format!(r#"{{"content":" t{id}","tokens":[{id}],"stop":false{ttft}}}"#),
            },
        );
    }
}

/// One streamed response's events and their timing.
struct StreamPlan {
    events: Box<dyn Events>,
    first_at: Instant,
    per_token: Duration,
    received: Instant,
    hit: Hit,
}

impl StreamPlan {
    /// Frames of the stream: one step's events per frame when tokens are paced, else the whole
    /// answer in one write (the bench measures the client, not the stand-in's syscalls).
    fn into_stream(self) -> impl futures_util::Stream<Item = Result<Frame<Bytes>, std::io::Error>> + Send {
        let plan = Arc::new(self);
        let n = plan.events.steps();
        let paced = !plan.per_token.is_zero();
        stream::unfold(0usize, move |i| {
            let plan = plan.clone();
            async move {
                if i > n {
                    return None;
                }
                if i == 0 {
                    tokio::time::sleep_until(plan.first_at).await;
                } else if paced {
                    tokio::time::sleep_until(plan.first_at + plan.per_token * i as u32).await;
                }
                let hit = plan.hit;
                if i == 1 {
                    if hit.die {
                        die();
                    }
                    if hit.drop {
                        return Some((Err(std::io::Error::other("stand-in: injected dropped connection")), n + 1));
                    }
                    if hit.stall {
                        std::future::pending::<()>().await;
                    }
                }
                // Step i, or (unpaced) steps i.. to the end with the closing events.
                let last = if paced || i == 0 && (hit.die || hit.drop || hit.stall || hit.malformed) { i } else { n };
                let mut out = Vec::new();
                for k in i..=last.min(n) {
                    if k == 1 && hit.malformed {
                        push_event(&mut out, "{\"choices\": [".into());
                    } else {
                        let ttft = (k == 0).then(|| plan.received.elapsed().as_micros() as u64);
                        plan.events.event(k, ttft, &mut out);
                    }
                }
                Some((Ok(Frame::data(Bytes::from(out))), last + 1))
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_deterministic_within_the_length_range_and_the_request_limit() {
        let o = StandInOptions { min_output_tokens: 3, max_output_tokens: 9, vocab: 50, ..StandInOptions::default() };
        let a = o.answer(&[1, 2, 3], 100);
        assert_eq!(a, o.answer(&[1, 2, 3], 100));
        assert!((3..=9).contains(&a.len()) && a.iter().all(|&id| (0..50).contains(&id)));
        assert_eq!(o.answer(&[1, 2, 3], 2).len(), 2);
        let lengths: std::collections::BTreeSet<usize> = (0..200).map(|i| o.answer(&[i], 100).len()).collect();
        assert!(lengths.len() > 3, "lengths vary with the prompt: {lengths:?}");
        assert!(StandInOptions { min_output_tokens: 5, max_output_tokens: 4, ..o.clone() }.validate().is_err());
        assert!(StandInOptions { faults: Faults { drop_every: Some(0), ..Faults::default() }, ..o }.validate().is_err());
    }

    #[test]
    fn its_text_answers_re_tokenize_to_the_ids_it_generated() {
        let dir = std::env::temp_dir().join(format!("mlperf-stand-in-tokenizer-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let stand_in = StandInOptions { vocab: 50, ..StandInOptions::default() };
        std::fs::write(dir.join("tokenizer.json"), stand_in.tokenizer_json()).unwrap();
        let tokenizer = crate::engines::serving::tokenizer::HfTokenizer::load(&dir.join("tokenizer.json")).unwrap();
        let answer = stand_in.answer(&[1, 2, 3], 100);
        let text: String = answer.iter().map(|id| format!(" t{id}")).collect();
        assert_eq!(tokenizer.ids(&text).unwrap(), answer);
        assert_eq!(tokenizer.text(&answer).unwrap(), text.trim_start());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
