//! The streaming client: requests spread over a serving engine's endpoints, each answer's first
//! token handed on the moment it arrives and every id at the end.
//!
//! One tokio runtime runs a dispatcher and one task per request. The dispatcher keeps requests in
//! LoadGen's order and sends each to the live endpoint with the fewest outstanding requests,
//! within each endpoint's limit (`max_concurrency`); the rest wait. A request whose connection
//! breaks (refused, reset, closed mid-stream) is sent again, to the least-loaded live endpoint,
//! within its retry budget of [`MAX_ATTEMPTS`] tries. An endpoint that refuses a connection, or
//! fails [`DEAD_AFTER`] times in a row, is asked whether it is alive ([`api::health_url`], at most
//! [`HEALTH_TIMEOUT`]) before anything else is sent to it: one that answers takes requests again,
//! one that does not is marked down and reported, never silently dropped (a burst of dropped
//! connections at hundreds in flight once marked the only endpoint down within a second). An
//! answer that is wrong (an HTTP error, a malformed or truncated stream, a timeout) fails its
//! request: the [`Sink`] hears of it and decides (the LoadGen SUT fails the run).

use super::ServingError;
use super::api::{self, Answer, Output, Payload, Respond, ResponseError, Step};
use crate::engines::serving::tokenizer::HfTokenizer;
use futures_util::StreamExt;
use mlperf_config::ServingApi;
use sse_stream::SseByteStream;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// Tries of one request when connections fail before an answer.
pub const MAX_ATTEMPTS: u32 = 3;
/// Consecutive connection failures after which an endpoint's health is checked.
pub const DEAD_AFTER: u32 = 3;
/// The longest a health check may take (the request timeout when that is shorter).
pub const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);
/// Resends of one request after stale kept-alive connections, which do not count as tries.
pub const MAX_STALE_RESENDS: u32 = 8;

/// What the client sends and where.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Endpoint base URLs (`http://host:port/v1`).
    pub endpoints: Vec<String>,
    pub api: ServingApi,
    /// The model name requests carry (OpenAI dialects).
    pub model: String,
    /// Output limit of every request (the benchmark's reference limit).
    pub max_tokens: u32,
    /// Requests in flight per endpoint.
    pub per_endpoint_limit: usize,
    /// Longest a request may take from sending to its last token.
    pub request_timeout: Duration,
    /// Tokio worker threads.
    pub threads: usize,
    /// The model's tokenizer, for dialects that stream text only (their output ids are the text
    /// re-tokenized); None for dialects that stream ids.
    pub tokenizer: Option<Arc<HfTokenizer>>,
}

impl ClientOptions {
    /// Where output ids come from, for the run's log.
    pub fn output_ids_source(&self) -> String {
        match &self.tokenizer {
            Some(t) if self.api.streams_text() => format!("re-tokenized from the streamed text with {}", t.path().display()),
            _ => format!("as the engine streamed them ({})", self.api.name()),
        }
    }
}

/// Which request an event is about: LoadGen's response id and the sample's index.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tag {
    pub id: usize,
    pub sample: usize,
}

/// A request that failed: where, which sample, and what happened (a wrong answer's
/// [`ResponseError`], a timeout or a connection that failed, as the [`Sink`] hears of it).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("endpoint {endpoint}, sample {sample}: {what}")]
pub struct RequestError {
    pub endpoint: String,
    pub sample: usize,
    pub what: String,
}

/// What a serving workload asks of the client: where and how (`options`), each sample's request,
/// and what LoadGen gets for each answer.
#[derive(Clone)]
pub struct ServingWork {
    pub options: ClientOptions,
    /// The request of sample `index` (the index LoadGen issues).
    pub request: Arc<dyn Fn(usize) -> Payload + Send + Sync>,
    pub respond: Respond,
}

/// Where answers go. Called on the client's threads; return quickly.
pub trait Sink: Send + Sync + 'static {
    /// The first output of a request, the moment it arrives (once per request, even when a
    /// failed connection made the client send it again): at least one id, or some text.
    fn first_token(&self, tag: Tag, so_far: &Output);
    /// A finished request's answer: its ids (token payloads, re-tokenized for text dialects), its
    /// text (text answers) and the engine's token count.
    fn complete(&self, tag: Tag, answer: &Output);
    /// The request failed; it will not complete.
    fn failed(&self, tag: Tag, error: &RequestError);
}

/// One endpoint's record over the client's life.
#[derive(Debug, Clone, Default)]
pub struct EndpointStats {
    pub url: String,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    /// Requests sent again elsewhere after a connection failure here.
    pub resent: u64,
    pub tokens: u64,
    /// Why the endpoint was marked down (None: it stayed up).
    pub down: Option<String>,
    /// The first failure here, of any kind.
    pub first_error: Option<String>,
    /// Client-observed time to first token per request, microseconds.
    pub ttft_us: Vec<u32>,
    /// Mean time per output token after the first, per request with two or more, microseconds.
    pub tpot_us: Vec<u32>,
    /// Client-observed minus server-reported TTFT, where the server reports one, microseconds.
    pub added_ttft_us: Vec<u32>,
    /// Per request, from its submission to its (last) sending (a free slot, the dispatcher, a worker),
    /// microseconds: the client's own part of TTFT.
    pub queued_us: Vec<u32>,
    /// Per request, from its sending to the response's headers (the request's way to the
    /// server and the headers' way back, both processes' scheduling included), microseconds.
    pub to_headers_us: Vec<u32>,
}

/// Reads the endpoints' record of a running client.
#[derive(Clone)]
pub struct StatsHandle(Arc<Vec<Mutex<EndpointStats>>>);

impl StatsHandle {
    pub fn snapshot(&self) -> Vec<EndpointStats> {
        self.0.iter().map(|s| s.lock().expect("stats lock").clone()).collect()
    }

    /// Forgets the requests so far (a warm-up), keeping each endpoint's state (down or not).
    pub fn restart(&self) {
        for s in self.0.iter() {
            let mut s = s.lock().expect("stats lock");
            *s = EndpointStats { url: std::mem::take(&mut s.url), down: s.down.take(), ..EndpointStats::default() };
        }
    }
}

/// The `q`-quantile (0..=1) of `values` (sorts them), None when empty.
pub fn quantile(values: &mut [u32], q: f64) -> Option<u32> {
    if values.is_empty() {
        return None;
    }
    values.sort_unstable();
    let rank = ((values.len() as f64 * q).ceil() as usize).clamp(1, values.len());
    Some(values[rank - 1])
}

struct Job {
    tag: Tag,
    payload: Payload,
    attempt: u32,
    stale_resends: u32,
    submitted: Instant,
    first_sent: bool,
}

enum Message {
    Submit(Job),
    Finished {
        endpoint: usize,
        job: Job,
        result: Attempt,
    },
    /// A health check of an endpoint after `failures` connection failures in a row (`failure`:
    /// the last of them).
    Health {
        endpoint: usize,
        failures: u32,
        failure: String,
        result: Result<(), ProbeError>,
    },
}

/// Why an endpoint did not answer a health or readiness probe.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// Nothing listens there (connection refused, no route): the address is wrong or the engine
    /// is not running.
    #[error("{url}: cannot connect ({what})")]
    Unreachable { url: String, what: String },
    /// A peer that took the connection and said nothing.
    #[error("{url}: no answer within {} ms", timeout.as_millis())]
    TimedOut { url: String, timeout: Duration },
    /// The connection closed or broke before an answer.
    #[error("{url}: {what}")]
    Broken { url: String, what: String },
    /// An answer other than 2xx (503 while an engine loads its weights).
    #[error("{url} answered {status}")]
    Status { url: String, status: reqwest::StatusCode },
}

impl ProbeError {
    /// Whether the peer answered over HTTP at all (a server that is up but not ready).
    pub fn answered(&self) -> bool {
        matches!(self, ProbeError::Status { .. })
    }
}

/// GET `url`, at most `timeout`: Ok on a 2xx answer.
pub async fn probe(http: &reqwest::Client, url: &str, timeout: Duration) -> Result<(), ProbeError> {
    let url = url.to_string();
    match tokio::time::timeout(timeout, http.get(&url).send()).await {
        Err(_) => Err(ProbeError::TimedOut { url, timeout }),
        Ok(Err(e)) if e.is_timeout() => Err(ProbeError::TimedOut { url, timeout }),
        Ok(Err(e)) if e.is_connect() => Err(ProbeError::Unreachable { url, what: source_chain(&e) }),
        Ok(Err(e)) => Err(ProbeError::Broken { url, what: describe(&e) }),
        Ok(Ok(r)) if r.status().is_success() => Ok(()),
        Ok(Ok(r)) => Err(ProbeError::Status { url, status: r.status() }),
    }
}

/// How one attempt of a request ended.
enum Attempt {
    Answered,
    /// The answer is wrong; the request fails.
    Failed(String),
    /// The connection failed or broke before the answer's end (sent again: greedy decoding gives
    /// the same answer, and its first token is not reported twice); `refused`: nothing listens;
    /// `stale`: a kept-alive connection the server had closed took the request (llama.cpp's
    /// server closes its connection after every streamed answer), which says nothing of the
    /// endpoint's health.
    Connection {
        what: String,
        refused: bool,
        stale: bool,
    },
}

/// The running client.
pub struct Client {
    runtime: tokio::runtime::Runtime,
    queue: mpsc::UnboundedSender<Message>,
    stats: Arc<Vec<Mutex<EndpointStats>>>,
}

impl Client {
    pub fn start(options: ClientOptions, sink: Arc<dyn Sink>) -> Result<Client, ServingError> {
        if options.endpoints.is_empty() {
            return Err(ServingError::NoEndpoints);
        }
        if options.api.streams_text() && options.tokenizer.is_none() {
            return Err(ServingError::NeedsTokenizer { api: options.api.name() });
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(options.threads.max(1))
            .thread_name("serving-client")
            .enable_all()
            .build()
            .map_err(ServingError::ClientRuntime)?;
        let http = reqwest::Client::builder().tcp_nodelay(true).pool_max_idle_per_host(options.per_endpoint_limit.max(1)).http1_only().build().map_err(ServingError::ClientHttp)?;
        let stats: Arc<Vec<Mutex<EndpointStats>>> =
            Arc::new(options.endpoints.iter().map(|url| Mutex::new(EndpointStats { url: url.clone(), ..EndpointStats::default() })).collect());
        let (queue, inbox) = mpsc::unbounded_channel();
        let dispatcher = Dispatcher {
            options: Arc::new(options),
            http,
            sink,
            stats: stats.clone(),
            queue: queue.clone(),
            waiting: VecDeque::new(),
            outstanding: Vec::new(),
            failures_in_row: Vec::new(),
            checking: Vec::new(),
            next: 0,
        };
        runtime.spawn(dispatcher.run(inbox));
        Ok(Client { runtime, queue, stats })
    }

    /// Queues a request; answers reach the sink.
    pub fn submit(&self, tag: Tag, payload: Payload) {
        let _ = self.queue.send(Message::Submit(Job { tag, payload, attempt: 1, stale_resends: 0, submitted: Instant::now(), first_sent: false }));
    }

    /// Each endpoint's record so far.
    pub fn stats(&self) -> Vec<EndpointStats> {
        self.stats_handle().snapshot()
    }

    /// A handle that reads the endpoints' record from anywhere (a failure report).
    pub fn stats_handle(&self) -> StatsHandle {
        StatsHandle(self.stats.clone())
    }

    /// Stops sending; requests in flight are abandoned. Returns the endpoints' records.
    pub fn finish(self) -> Vec<EndpointStats> {
        let stats = self.stats();
        self.runtime.shutdown_timeout(Duration::from_millis(200));
        stats
    }
}

struct Dispatcher {
    options: Arc<ClientOptions>,
    http: reqwest::Client,
    sink: Arc<dyn Sink>,
    stats: Arc<Vec<Mutex<EndpointStats>>>,
    queue: mpsc::UnboundedSender<Message>,
    waiting: VecDeque<Job>,
    outstanding: Vec<usize>,
    failures_in_row: Vec<u32>,
    /// Endpoints whose health check is under way: nothing is sent to them until it ends.
    checking: Vec<bool>,
    /// Where the search for the least-loaded endpoint starts, so ties rotate.
    next: usize,
}

impl Dispatcher {
    async fn run(mut self, mut inbox: mpsc::UnboundedReceiver<Message>) {
        self.outstanding = vec![0; self.options.endpoints.len()];
        self.failures_in_row = vec![0; self.options.endpoints.len()];
        self.checking = vec![false; self.options.endpoints.len()];
        while let Some(message) = inbox.recv().await {
            self.handle(message);
            // Take whatever else arrived before dispatching, so a burst is spread in one pass.
            while let Ok(message) = inbox.try_recv() {
                self.handle(message);
            }
            self.dispatch();
        }
    }

    fn stat(&self, endpoint: usize) -> std::sync::MutexGuard<'_, EndpointStats> {
        self.stats[endpoint].lock().expect("stats lock")
    }

    fn is_down(&self, endpoint: usize) -> bool {
        self.stat(endpoint).down.is_some()
    }

    fn handle(&mut self, message: Message) {
        match message {
            Message::Submit(job) => self.waiting.push_back(job),
            Message::Finished { endpoint, job, result } => {
                self.outstanding[endpoint] -= 1;
                match result {
                    Attempt::Answered => self.failures_in_row[endpoint] = 0,
                    Attempt::Failed(what) => {
                        self.failures_in_row[endpoint] = 0;
                        self.fail(Some(endpoint), job, what);
                    }
                    Attempt::Connection { stale: true, .. } if job.stale_resends < MAX_STALE_RESENDS => {
                        self.stat(endpoint).resent += 1;
                        self.waiting.push_front(Job { stale_resends: job.stale_resends + 1, ..job });
                    }
                    Attempt::Connection { what, refused, .. } => {
                        self.failures_in_row[endpoint] += 1;
                        self.stat(endpoint).first_error.get_or_insert_with(|| format!("sample {}: {what}", job.tag.sample));
                        if (refused || self.failures_in_row[endpoint] >= DEAD_AFTER) && !self.checking[endpoint] && !self.is_down(endpoint) {
                            self.check_health(endpoint, what.clone());
                        }
                        if job.attempt < MAX_ATTEMPTS {
                            self.stat(endpoint).resent += 1;
                            self.waiting.push_front(Job { attempt: job.attempt + 1, ..job });
                        } else {
                            self.fail(Some(endpoint), job, format!("{what} (tried {MAX_ATTEMPTS} times)"));
                        }
                    }
                }
            }
            Message::Health { endpoint, failures, failure, result } => {
                self.checking[endpoint] = false;
                match result {
                    Ok(()) => {
                        tracing::info!("serving endpoint {} is healthy after {failures} connection failures in a row; requests go on", self.options.endpoints[endpoint]);
                        self.failures_in_row[endpoint] = 0;
                    }
                    Err(unhealthy) => {
                        tracing::warn!("serving endpoint {} is down: {failure}; then its health check: {unhealthy}", self.options.endpoints[endpoint]);
                        self.stat(endpoint).down.get_or_insert_with(|| format!("{failure}; health check: {unhealthy}"));
                    }
                }
            }
        }
    }

    /// Asks `endpoint` whether it is alive after connection failures (`failure`: the last); nothing
    /// is sent to it until the answer comes back as a [`Message::Health`].
    fn check_health(&mut self, endpoint: usize, failure: String) {
        self.checking[endpoint] = true;
        let (http, queue) = (self.http.clone(), self.queue.clone());
        let url = api::health_url(self.options.api, &self.options.endpoints[endpoint]);
        let timeout = HEALTH_TIMEOUT.min(self.options.request_timeout);
        let failures = self.failures_in_row[endpoint];
        tokio::spawn(async move {
            let result = probe(&http, &url, timeout).await;
            let _ = queue.send(Message::Health { endpoint, failures, failure, result });
        });
    }

    /// Fails a request that `endpoint` answered wrongly (None: no endpoint is left to try).
    fn fail(&self, endpoint: Option<usize>, job: Job, what: String) {
        let name = endpoint.map_or_else(|| "(none left)".to_string(), |e| self.options.endpoints[e].clone());
        let error = RequestError { endpoint: name, sample: job.tag.sample, what };
        if let Some(endpoint) = endpoint {
            let mut stat = self.stat(endpoint);
            stat.failed += 1;
            stat.first_error.get_or_insert_with(|| format!("sample {}: {}", error.sample, error.what));
        }
        self.sink.failed(job.tag, &error);
    }

    /// Sends waiting requests to the least-loaded live endpoints with a free slot.
    fn dispatch(&mut self) {
        let n = self.options.endpoints.len();
        let limit = self.options.per_endpoint_limit.max(1);
        while !self.waiting.is_empty() {
            let live: Vec<usize> = (0..n).map(|k| (self.next + k) % n).filter(|&e| !self.is_down(e) && !self.checking[e]).collect();
            if live.is_empty() && self.checking.iter().any(|&c| c) {
                // Requests wait for the health checks under way.
                return;
            }
            if live.is_empty() {
                let reasons: Vec<String> = (0..n).map(|e| format!("{}: {}", self.options.endpoints[e], self.stat(e).down.clone().unwrap_or_default())).collect();
                while let Some(job) = self.waiting.pop_front() {
                    self.fail(None, job, format!("every endpoint is down ({})", reasons.join("; ")));
                }
                return;
            }
            let Some(&endpoint) = live.iter().filter(|&&e| self.outstanding[e] < limit).min_by_key(|&&e| self.outstanding[e]) else { return };
            let job = self.waiting.pop_front().expect("not empty");
            self.next = (endpoint + 1) % n;
            self.outstanding[endpoint] += 1;
            self.stat(endpoint).sent += 1;
            let request = RequestTask {
                http: self.http.clone(),
                url: job.payload.url(self.options.api, &self.options.endpoints[endpoint]),
                options: self.options.clone(),
                sink: self.sink.clone(),
                stats: self.stats.clone(),
                endpoint,
            };
            let queue = self.queue.clone();
            tokio::spawn(async move {
                let mut job = job;
                let result = request.run(&mut job).await;
                let _ = queue.send(Message::Finished { endpoint, job, result });
            });
        }
    }
}

struct RequestTask {
    http: reqwest::Client,
    url: String,
    options: Arc<ClientOptions>,
    sink: Arc<dyn Sink>,
    stats: Arc<Vec<Mutex<EndpointStats>>>,
    endpoint: usize,
}

impl RequestTask {
    async fn run(&self, job: &mut Job) -> Attempt {
        let timeout = self.options.request_timeout;
        match tokio::time::timeout(timeout, self.stream(job)).await {
            Ok(attempt) => attempt,
            Err(_) => Attempt::Failed(format!("no complete answer within the request timeout of {} ms (serving_request_timeout)", timeout.as_millis())),
        }
    }

    async fn stream(&self, job: &mut Job) -> Attempt {
        let options = &self.options;
        let sending = Instant::now();
        let (content_type, body) = job.payload.body(options.api, &options.model, options.max_tokens);
        let answer = job.payload.answer(options.api);
        let sent = self.http.post(&self.url).header("content-type", content_type).body(body).send().await;
        let response = match sent {
            Ok(r) => r,
            // No connect error and no response: the request went out on a pooled connection that
            // was already closed.
            Err(e) => return Attempt::Connection { what: describe(&e), refused: e.is_connect(), stale: !e.is_connect() && !e.is_timeout() },
        };
        let headers_at = Instant::now();
        let status = response.status();
        if !status.is_success() {
            let text = response.text().await.unwrap_or_default();
            return Attempt::Failed(format!("HTTP {status} from {}: {}", self.url, api::clip(text.trim())));
        }
        let mut events = SseByteStream::new(response.bytes_stream());
        let mut out = Output::default();
        let mut first_at = None;
        let mut done = false;
        // Read to the end of the body even after the end marker: only a body read to its end
        // gives its connection back to the pool (else every request would open a new one).
        while let Some(event) = events.next().await {
            let event = match event {
                Ok(e) => e,
                // The answer is whole: a connection lost while draining must not send it again
                // (LoadGen must hear of each sample exactly once).
                Err(_) if done => break,
                Err(e) => return Attempt::Connection { what: format!("the stream broke after {} tokens: {}", out.ids.len(), source_chain(&e)), refused: false, stale: false },
            };
            let Some(data) = event.data.as_deref().filter(|_| !done) else { continue };
            let had = out.ids.len() + out.text.len();
            match answer.decode(data, &mut out) {
                Ok(Step::Done) => done = true,
                Ok(Step::More) => {}
                Err(what) => return Attempt::Failed(what.to_string()),
            }
            if out.ids.len() + out.text.len() > had {
                first_at.get_or_insert_with(Instant::now);
                if !job.first_sent {
                    match self.first(answer, &out) {
                        Ok(Some(so_far)) => {
                            job.first_sent = true;
                            self.sink.first_token(job.tag, &so_far);
                        }
                        // Text that encodes to no id yet (white space): the first id comes later.
                        Ok(None) => {}
                        Err(what) => return Attempt::Failed(what.to_string()),
                    }
                }
            }
        }
        // The body is read to its end: dropping it now gives the connection back before the
        // answer is handed on (a closed loop's next request then finds it idle).
        drop(events);
        if !done {
            return Attempt::Connection { what: format!("the stream ended after {} tokens without its end marker", out.ids.len()), refused: false, stale: false };
        }
        match (&options.tokenizer, answer) {
            // The engine counts the tokens it generated; re-encoding its text may merge or split
            // some, so its count is not compared.
            (Some(tokenizer), Answer::Tokens(api)) if api.streams_text() => match tokenizer.ids(&out.text) {
                Ok(ids) => out.ids = ids,
                Err(what) => return Attempt::Failed(what.to_string()),
            },
            _ => {
                if let Err(what) = answer.check(&out) {
                    return Attempt::Failed(what.to_string());
                }
            }
        }
        if out.tokens() == 0 {
            return Attempt::Failed("the engine answered with no output tokens".into());
        }
        let finished = Instant::now();
        self.sink.complete(job.tag, &out);
        let tokens = out.tokens();
        let first_at = first_at.unwrap_or(finished);
        let mut stat = self.stats[self.endpoint].lock().expect("stats lock");
        stat.completed += 1;
        stat.tokens += tokens;
        let ttft = first_at.duration_since(job.submitted);
        stat.ttft_us.push(micros(ttft));
        stat.queued_us.push(micros(sending.duration_since(job.submitted)));
        stat.to_headers_us.push(micros(headers_at.duration_since(sending)));
        if tokens > 1 {
            stat.tpot_us.push(micros(finished.duration_since(first_at) / (tokens as u32 - 1)));
        }
        if let Some(server) = out.server_ttft_us {
            stat.added_ttft_us.push(micros(ttft).saturating_sub(server as u32));
        }
        Attempt::Answered
    }
}

impl RequestTask {
    /// The answer so far as the sink's first token hears of it: as it streamed, or for a text
    /// dialect with the first id of the text so far re-tokenized (None while it encodes to
    /// nothing).
    fn first(&self, answer: Answer, out: &Output) -> Result<Option<Output>, ResponseError> {
        match (answer, out.ids.first(), &self.options.tokenizer) {
            (Answer::Deltas, ..) | (_, Some(_), _) => Ok(Some(out.clone())),
            (_, None, Some(tokenizer)) => Ok(tokenizer.ids(&out.text)?.first().map(|&first| Output { ids: vec![first], ..out.clone() })),
            (_, None, None) => Err(ResponseError::NoTokenizer),
        }
    }
}

fn micros(d: Duration) -> u32 {
    d.as_micros().min(u128::from(u32::MAX)) as u32
}

/// A reqwest error with its causes ("connection refused" sits a few levels down).
fn describe(e: &reqwest::Error) -> String {
    let kind = if e.is_connect() {
        "cannot connect"
    } else if e.is_timeout() {
        "timed out"
    } else {
        "connection failed"
    };
    format!("{kind}: {}", source_chain(e))
}

fn source_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = s.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    fn probe_at(url: &str) -> Result<(), ProbeError> {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(probe(&reqwest::Client::new(), url, Duration::from_millis(300)))
    }

    /// Probes a listener that `serve` runs.
    fn probe_of(serve: fn(TcpListener)) -> Result<(), ProbeError> {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/health", listener.local_addr().unwrap());
        std::thread::spawn(move || serve(listener));
        probe_at(&url)
    }

    #[test]
    fn a_probe_tells_a_closed_port_a_silent_peer_and_a_dropped_connection_apart() {
        let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
        let closed = probe_at(&format!("http://127.0.0.1:{port}/health")).unwrap_err();
        assert!(matches!(closed, ProbeError::Unreachable { .. }) && !closed.answered(), "{closed:?}");
        assert!(closed.to_string().contains("/health: cannot connect ("), "{closed}");
        let silent = probe_of(|l| {
            let held: Vec<_> = l.incoming().collect();
            drop(held);
        })
        .unwrap_err();
        assert!(silent.to_string().ends_with("/health: no answer within 300 ms"), "{silent}");
        let dropped = probe_of(|l| l.incoming().for_each(drop)).unwrap_err();
        assert!(matches!(dropped, ProbeError::Broken { .. }), "{dropped:?}");
    }
}
