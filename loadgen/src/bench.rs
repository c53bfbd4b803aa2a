//! Null SUTs to measure the binding's overhead against native C++.
//!
//! Both sides drive the same LoadGen library in the same process with the
//! same settings and QSL sizes; each SUT completes samples with empty
//! responses, in chunks of 64, as soon as it gets them.
//!
//! 1. Build a [`TestSettings`] (e.g. SingleStream, `min_duration_ms`,
//!    `single_stream_expected_latency_ns`).
//! 2. Call [`run_cpp_null_sut`] and [`run_rust_null_sut`] with the same
//!    [`NullSutKind`] and settings, each with its own log directory.
//! 3. Compare the two `mlperf_log_summary.txt` (e.g. SingleStream
//!    `QPS w/ loadgen overhead`, Server `Completed samples per second`).

use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crate::safe::{self, LogSettings, NO_AUDIT_CONFIG, Qsl, QuerySample, RawLogSettings, Response, Sut, TestSettings};
use crate::{LoadgenError, Result, result};

/// Total samples of the null QSL (as in LoadGen's own null-SUT perf tests).
pub const NULL_QSL_TOTAL_SAMPLE_COUNT: usize = 1024 * 1024;
/// Performance samples of the null QSL.
pub const NULL_QSL_PERFORMANCE_SAMPLE_COUNT: usize = 1024;

/// Which null SUT to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NullSutKind {
    /// Completes every sample inside `issue_query` (for SingleStream).
    Synchronous,
    /// `issue_query` queues samples; `threads` workers complete them (for Server).
    WorkerPool { threads: usize },
}

impl NullSutKind {
    fn validate(self) -> Result<()> {
        match self {
            Self::WorkerPool { threads: 0 } => Err(LoadgenError::InvalidValue("a worker pool needs threads".into())),
            _ => Ok(()),
        }
    }
}

/// Runs LoadGen with the C++ null SUT and null QSL (no audit config).
pub fn run_cpp_null_sut(kind: NullSutKind, settings: &TestSettings, log: &LogSettings) -> Result<()> {
    kind.validate()?;
    let (raw_kind, threads) = match kind {
        NullSutKind::Synchronous => (0, 0),
        NullSutKind::WorkerPool { threads } => (1, threads),
    };
    let raw_log = RawLogSettings::new(log)?;
    let _lock = safe::lock_test()?;
    // SAFETY: `settings` and the strings of `raw_log` outlive the call, and
    // `_lock` excludes other tests.
    unsafe { result::bench_run_null_sut(raw_kind, threads, NULL_QSL_TOTAL_SAMPLE_COUNT, NULL_QSL_PERFORMANCE_SAMPLE_COUNT, settings.raw(), &raw_log.view(), NO_AUDIT_CONFIG) }
}

/// Runs LoadGen with the Rust null SUT and null QSL through [`safe::start_test`].
pub fn run_rust_null_sut(kind: NullSutKind, settings: &TestSettings, log: &LogSettings) -> Result<()> {
    kind.validate()?;
    match kind {
        NullSutKind::Synchronous => safe::start_test(&SyncNullSut, &NullQsl, settings, log, None),
        NullSutKind::WorkerPool { threads } => {
            let sut = PoolNullSut::new(threads);
            safe::start_test(&sut, &NullQsl, settings, log, None)
        }
    }
}

/// A QSL with nothing to load.
#[derive(Clone, Copy, Debug, Default)]
pub struct NullQsl;

impl Qsl for NullQsl {
    fn name(&self) -> &str {
        "Null QSL (Rust)"
    }
    fn total_sample_count(&self) -> usize {
        NULL_QSL_TOTAL_SAMPLE_COUNT
    }
    fn performance_sample_count(&self) -> usize {
        NULL_QSL_PERFORMANCE_SAMPLE_COUNT
    }
    fn load_samples(&self, _indices: &[usize]) {}
    fn unload_samples(&self, _indices: &[usize]) {}
}

/// Completes every sample with an empty response inside `issue_query`.
#[derive(Clone, Copy, Debug, Default)]
pub struct SyncNullSut;

impl Sut for SyncNullSut {
    fn name(&self) -> &str {
        "Null SUT (Rust, synchronous)"
    }
    fn issue_query(&self, samples: &[QuerySample]) {
        complete_empty(samples);
    }
}

/// Completes samples with empty responses, 64 at a time from the stack.
fn complete_empty(samples: &[QuerySample]) {
    for chunk in samples.chunks(64) {
        let mut responses = [Response::empty(0); 64];
        for (response, sample) in responses.iter_mut().zip(chunk) {
            response.id = sample.id;
        }
        safe::query_samples_complete(&responses[..chunk.len()]);
    }
}

/// `issue_query` appends to a shared queue; each of N workers takes
/// everything queued and completes it. Workers stop when it is dropped.
pub struct PoolNullSut {
    shared: Arc<PoolShared>,
    workers: Vec<JoinHandle<()>>,
}

#[derive(Default)]
struct PoolShared {
    state: Mutex<PoolState>,
    ready: Condvar,
}

#[derive(Default)]
struct PoolState {
    queue: Vec<QuerySample>,
    stop: bool,
}

impl PoolNullSut {
    /// Starts `threads` workers (at least one).
    pub fn new(threads: usize) -> Self {
        let shared = Arc::new(PoolShared::default());
        let workers = (0..threads.max(1))
            .map(|_| {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || shared.work())
            })
            .collect();
        Self { shared, workers }
    }
}

impl PoolShared {
    fn work(&self) {
        let mut batch = Vec::new();
        loop {
            {
                let guard = self.state.lock().expect("null SUT queue");
                let mut state = self.ready.wait_while(guard, |s| !s.stop && s.queue.is_empty()).expect("null SUT queue");
                if state.queue.is_empty() {
                    return;
                }
                std::mem::swap(&mut batch, &mut state.queue);
            }
            complete_empty(&batch);
            batch.clear();
        }
    }
}

impl Sut for PoolNullSut {
    fn name(&self) -> &str {
        "Null SUT (Rust, worker pool)"
    }
    fn issue_query(&self, samples: &[QuerySample]) {
        self.shared.state.lock().expect("null SUT queue").queue.extend(samples);
        self.shared.ready.notify_one();
    }
}

impl Drop for PoolNullSut {
    fn drop(&mut self) {
        self.shared.state.lock().expect("null SUT queue").stop = true;
        self.shared.ready.notify_all();
        for worker in self.workers.drain(..) {
            // A worker only panics if LoadGen's completion call does; nothing to add.
            let _ = worker.join();
        }
    }
}
