//! The LoadGen SUT of served runs: every issued sample becomes a streamed request to the serving
//! endpoints ([`crate::engines::serving::client`]). The first output goes to LoadGen with
//! `FirstTokenComplete` the moment it arrives; the answer and its `n_tokens` at the end, both as
//! the family's [`Respond`] encodes them (the LLMs: int32 ids).
//!
//! A request that fails is never completed: LoadGen would count an empty answer as a success.
//! The first failure is written to `FAILED.txt` (endpoint, sample, what happened) with the
//! endpoints' record in `serving.json`, LoadGen is aborted (its logs flushed) and the run's process
//! exits with status 1, so the run is reported FAILED.

use crate::engines::serving::ServingError;
use crate::engines::serving::api::{Output, Payload, Respond};
use crate::engines::serving::client::{Client, EndpointStats, RequestError, ServingWork, Sink, StatsHandle, Tag};
use crate::rundir::{
    self,
    serving::{EndpointRecord, ServingRecord},
};
use mlperf_loadgen::{QuerySample, Response, Sut};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, mpsc};

/// What can stop the serving SUT from starting or recording its endpoints.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServingSutError {
    #[error("cannot start the reporter thread: {0}")]
    Reporter(std::io::Error),
    #[error(transparent)]
    Client(#[from] ServingError),
    /// The endpoints' record (`serving.json`).
    #[error(transparent)]
    Record(#[from] rundir::RunDirError),
}

impl From<ServingSutError> for crate::Error {
    /// The client's error keeps its kind; a thread or a record that cannot be written is other.
    fn from(e: ServingSutError) -> crate::Error {
        match e {
            ServingSutError::Client(e) => e.into(),
            ServingSutError::Record(e) => e.into(),
            ServingSutError::Reporter(_) => crate::Error::Other(e.to_string()),
        }
    }
}

pub struct ServingSut {
    client: Client,
    request: Arc<dyn Fn(usize) -> Payload + Send + Sync>,
    sink: Arc<LoadgenSink>,
    completed: Arc<AtomicU64>,
}

struct LoadgenSink {
    reports: mpsc::Sender<Report>,
    respond: Respond,
    dir: PathBuf,
    /// Where the output ids come from (the record says it).
    output_ids: String,
    failed: AtomicBool,
    /// Set once the client runs, so a failure can record the endpoints.
    stats: OnceLock<StatsHandle>,
}

/// What the reporter thread hands to LoadGen.
enum Report {
    FirstToken { id: usize, data: Vec<u8> },
    Complete { id: usize, data: Vec<u8>, n_tokens: u64 },
}

/// Hands first tokens and answers to LoadGen from one thread, in the order they came. LoadGen logs
/// each calling thread's records in its own buffer, so a first token and its answer reported from
/// two of the client's threads (tokio moves tasks between them) could reach its logger in the wrong
/// order: it then logs "Attempted to record a sample latency before it's first token latency" and
/// its state is corrupt (a later test crashed in GenerateQueries).
fn reporter(reports: mpsc::Receiver<Report>, completed: Arc<AtomicU64>, token_latencies: bool) {
    while let Ok(report) = reports.recv() {
        for report in std::iter::once(report).chain(reports.try_iter()) {
            match report {
                Report::FirstToken { id, data } => {
                    if token_latencies {
                        mlperf_loadgen::first_token_complete(&[Response { id, data: &data, n_tokens: 1 }]);
                    }
                }
                Report::Complete { id, data, n_tokens } => {
                    mlperf_loadgen::query_samples_complete(&[Response { id, data: &data, n_tokens: n_tokens as i64 }]);
                    completed.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

impl ServingSut {
    pub fn start(work: ServingWork, token_latencies: bool, dir: &Path) -> Result<ServingSut, ServingSutError> {
        let ServingWork { options, request, respond } = work;
        let (tx, rx) = mpsc::channel();
        let completed = Arc::new(AtomicU64::new(0));
        let counter = completed.clone();
        std::thread::Builder::new().name("loadgen-reporter".into()).spawn(move || reporter(rx, counter, token_latencies)).map_err(ServingSutError::Reporter)?;
        let output_ids = options.output_ids_source();
        tracing::info!("serving client: output ids {output_ids}");
        let sink = Arc::new(LoadgenSink { reports: tx, respond, dir: dir.to_path_buf(), output_ids, failed: AtomicBool::new(false), stats: Default::default() });
        let client = Client::start(options, sink.clone())?;
        let _ = sink.stats.set(client.stats_handle());
        Ok(ServingSut { client, request, sink, completed })
    }

    /// Samples completed so far (for progress).
    pub fn completed(&self) -> Arc<AtomicU64> {
        self.completed.clone()
    }

    /// Stops the client and writes the endpoints' record into the run directory.
    pub fn finish(self) -> Result<Vec<EndpointStats>, ServingSutError> {
        let stats = self.client.finish();
        self.sink.write_record(&stats)?;
        Ok(stats)
    }
}

impl Sut for ServingSut {
    fn name(&self) -> &str {
        "mlperf serving SUT"
    }

    fn issue_query(&self, samples: &[QuerySample]) {
        for s in samples {
            self.client.submit(Tag { id: s.id, sample: s.index }, (self.request)(s.index));
        }
    }
}

impl Sink for LoadgenSink {
    fn first_token(&self, tag: Tag, so_far: &Output) {
        let _ = self.reports.send(Report::FirstToken { id: tag.id, data: (self.respond.first)(so_far) });
    }

    fn complete(&self, tag: Tag, answer: &Output) {
        let (data, n_tokens) = (self.respond.complete)(answer);
        let _ = self.reports.send(Report::Complete { id: tag.id, data, n_tokens });
    }

    fn failed(&self, _tag: Tag, error: &RequestError) {
        if self.failed.swap(true, Ordering::SeqCst) {
            return;
        }
        let text = format!("request failed: {error}\nA failed request is never reported to LoadGen as an answer, so the run stops here.\n");
        let _ = rundir::mark_failed(&self.dir, text.trim_end());
        if let Some(stats) = self.stats.get() {
            let _ = self.write_record(&stats.snapshot());
        }
        tracing::error!("{}", text.trim_end());
        // LoadGen cannot end a test early: flush its logs and leave (as a stop signal does).
        mlperf_loadgen::abort_test();
        // SAFETY: _exit ends the process without running exit handlers or destructors, which the
        // client's and LoadGen's threads may still be using; the logs and the record are written.
        unsafe { libc::_exit(1) }
    }
}

impl LoadgenSink {
    fn write_record(&self, stats: &[EndpointStats]) -> Result<(), rundir::RunDirError> {
        ServingRecord { output_ids: self.output_ids.clone(), endpoints: stats.iter().map(EndpointRecord::from_stats).collect() }.write(&self.dir)
    }
}
