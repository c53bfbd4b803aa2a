//! The batching SUT (NVIDIA's LWIS): LoadGen's issue thread only queues samples; a batcher per
//! device takes up to one batch, waiting at most the deque timeout for it to fill; inference workers
//! per device run the engine and complete each batch through LoadGen's thread-safe completion.

use crate::engines::{Engine, SampleSource};
use crate::harness::backends::complete_with_tokens;
use mlperf_loadgen::{QuerySample, Sut};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Every knob comes from the compiled config (`gpu_batch_size`, `deque_timeout_usec`,
/// `gpu_inference_streams`, `use_deque_limit`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BatcherConfig {
    pub batch_size: usize,
    pub deque_timeout: Duration,
    /// Inference workers per device.
    pub workers_per_device: usize,
    /// With a deque limit the batcher takes at most one batch per dequeue; without it, a batcher
    /// that finds a backlog hands out full batches back to back without waiting.
    pub use_deque_limit: bool,
    /// LLM benchmarks: report each answer's first token before completing it.
    pub token_latencies: bool,
}

struct Queue {
    samples: Mutex<VecDeque<QuerySample>>,
    ready: Condvar,
    stop: AtomicBool,
}

/// A batching SUT over one engine instance per device.
pub struct BatchingSut {
    name: String,
    queue: Arc<Queue>,
    completed: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
    errors: Arc<Mutex<Vec<String>>>,
}

impl BatchingSut {
    /// Starts one batcher and `workers_per_device` workers for each device's engine.
    pub fn start(name: &str, devices: Vec<Arc<dyn Engine>>, source: Arc<dyn SampleSource>, config: BatcherConfig) -> BatchingSut {
        assert!(config.batch_size > 0 && config.workers_per_device > 0, "validated config");
        let queue = Arc::new(Queue { samples: Mutex::new(VecDeque::new()), ready: Condvar::new(), stop: AtomicBool::new(false) });
        let completed = Arc::new(AtomicU64::new(0));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let mut threads = Vec::new();
        for (device, engine) in devices.into_iter().enumerate() {
            // Two batches in flight per worker keep the engine busy while the next one fills.
            let (tx, rx) = sync_channel::<Vec<QuerySample>>(config.workers_per_device * 2);
            let rx = Arc::new(Mutex::new(rx));
            let q = queue.clone();
            threads.push(std::thread::Builder::new().name(format!("batcher-{device}")).spawn(move || batch_loop(&q, &tx, config)).expect("spawn batcher"));
            for worker in 0..config.workers_per_device {
                let (rx, engine, source, completed, errors) = (rx.clone(), engine.clone(), source.clone(), completed.clone(), errors.clone());
                threads.push(
                    std::thread::Builder::new()
                        .name(format!("infer-{device}-{worker}"))
                        .spawn(move || infer_loop(&rx, engine.as_ref(), source.as_ref(), &completed, &errors, config.token_latencies))
                        .expect("spawn worker"),
                );
            }
        }
        BatchingSut { name: name.to_string(), queue, completed, threads, errors }
    }

    /// A counter of completed samples that can be shared (for the progress display).
    pub fn counters_completed(&self) -> Arc<AtomicU64> {
        self.completed.clone()
    }

    /// Stops the threads; returns the engine errors seen during the run.
    pub fn finish(mut self) -> Vec<String> {
        self.queue.stop.store(true, Ordering::SeqCst);
        self.queue.ready.notify_all();
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        std::mem::take(&mut *self.errors.lock().expect("errors lock"))
    }
}

/// Takes batches off the shared queue for one device.
fn batch_loop(queue: &Queue, out: &SyncSender<Vec<QuerySample>>, config: BatcherConfig) {
    loop {
        let mut samples = queue.samples.lock().expect("queue lock");
        // Wait for the first sample.
        while samples.is_empty() {
            if queue.stop.load(Ordering::SeqCst) {
                return;
            }
            samples = queue.ready.wait_timeout(samples, Duration::from_millis(50)).expect("queue lock").0;
        }
        // Then wait up to the deque timeout for a full batch, unless a backlog is already there.
        let deadline = Instant::now() + config.deque_timeout;
        while samples.len() < config.batch_size && (config.use_deque_limit || samples.len() < 2 * config.batch_size) {
            let now = Instant::now();
            if now >= deadline || queue.stop.load(Ordering::SeqCst) {
                break;
            }
            samples = queue.ready.wait_timeout(samples, deadline - now).expect("queue lock").0;
        }
        // Another device's batcher may have emptied the queue while this one waited.
        if samples.is_empty() {
            continue;
        }
        let take = samples.len().min(config.batch_size);
        let batch: Vec<QuerySample> = samples.drain(..take).collect();
        drop(samples);
        if out.send(batch).is_err() {
            return;
        }
    }
}

fn infer_loop(rx: &Mutex<Receiver<Vec<QuerySample>>>, engine: &dyn Engine, source: &dyn SampleSource, completed: &AtomicU64, errors: &Mutex<Vec<String>>, token_latencies: bool) {
    let mut outputs = Vec::new();
    loop {
        let batch = match rx.lock().expect("receiver lock").recv() {
            Ok(b) => b,
            Err(_) => return, // batcher stopped
        };
        let indices: Vec<usize> = batch.iter().map(|s| s.index).collect();
        outputs.clear();
        if let Err(e) = engine.infer(&indices, source, &mut outputs) {
            errors.lock().expect("errors lock").push(e.to_string());
            outputs.clear();
        }
        // Every sample is completed exactly once, with an empty response if the engine failed
        // (the run is then reported as failed, not left hanging).
        outputs.resize(batch.len(), Vec::new());
        complete_with_tokens(&batch, &outputs, token_latencies);
        completed.fetch_add(batch.len() as u64, Ordering::Relaxed);
    }
}

impl Sut for BatchingSut {
    fn name(&self) -> &str {
        &self.name
    }

    fn issue_query(&self, samples: &[QuerySample]) {
        self.queue.samples.lock().expect("queue lock").extend(samples.iter().copied());
        self.queue.ready.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::Sample;
    use std::collections::HashMap;

    /// Records every batch it runs, taking a little time per batch like a device (an instant engine
    /// lets one device's threads drain the whole queue before a loaded machine schedules the other).
    struct Recorder {
        batches: Mutex<Vec<Vec<usize>>>,
    }

    impl Engine for Recorder {
        fn name(&self) -> &str {
            "recorder"
        }
        fn infer(&self, indices: &[usize], _: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), crate::engines::EngineError> {
            self.batches.lock().unwrap().push(indices.to_vec());
            std::thread::sleep(Duration::from_micros(300));
            outputs.extend(indices.iter().map(|_| Vec::new()));
            Ok(())
        }
    }

    struct NoData;
    impl SampleSource for NoData {
        fn sample(&self, _: usize) -> Sample {
            Sample::empty()
        }
    }

    fn config(batch_size: usize) -> BatcherConfig {
        BatcherConfig { batch_size, deque_timeout: Duration::from_millis(2), workers_per_device: 3, use_deque_limit: true, token_latencies: false }
    }

    /// Issues `queries` (as LoadGen would, ids = sample positions), waits for every completion, and
    /// returns the batches each device ran.
    fn drive(devices: usize, cfg: BatcherConfig, queries: Vec<Vec<usize>>, gap: Duration) -> Vec<Vec<Vec<usize>>> {
        let recorders: Vec<Arc<Recorder>> = (0..devices).map(|_| Arc::new(Recorder { batches: Mutex::new(Vec::new()) })).collect();
        let engines: Vec<Arc<dyn Engine>> = recorders.iter().map(|r| r.clone() as Arc<dyn Engine>).collect();
        let sut = BatchingSut::start("test", engines, Arc::new(NoData), cfg);
        let total: usize = queries.iter().map(Vec::len).sum();
        let mut id = 0;
        for q in queries {
            let samples: Vec<QuerySample> = q
                .iter()
                .map(|&index| {
                    id += 1;
                    QuerySample { id, index }
                })
                .collect();
            sut.issue_query(&samples);
            std::thread::sleep(gap);
        }
        let deadline = Instant::now() + Duration::from_secs(20);
        while (sut.counters_completed().load(Ordering::SeqCst) as usize) < total && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert_eq!(sut.finish(), Vec::<String>::new());
        recorders.iter().map(|r| r.batches.lock().unwrap().clone()).collect()
    }

    fn check(batches: &[Vec<Vec<usize>>], expected: usize, batch_size: usize) {
        let mut seen: HashMap<usize, usize> = HashMap::new();
        for b in batches.iter().flatten() {
            assert!(!b.is_empty() && b.len() <= batch_size, "batch of {} with batch size {batch_size}", b.len());
            for &i in b {
                *seen.entry(i).or_default() += 1;
            }
        }
        assert_eq!(seen.len(), expected, "every sample ran");
        assert!(seen.values().all(|&n| n == 1), "no sample ran twice");
    }

    #[test]
    fn offline_load_runs_every_sample_once_in_full_batches() {
        // Offline: one query with every sample.
        let batches = drive(2, config(64), vec![(0..10_000).collect()], Duration::ZERO);
        check(&batches, 10_000, 64);
        let full = batches.iter().flatten().filter(|b| b.len() == 64).count();
        assert!(full >= 10_000 / 64 - 2, "a backlog gives full batches ({full})");
        assert!(batches.iter().all(|d| !d.is_empty()), "both devices take work");
    }

    #[test]
    fn server_load_runs_every_sample_once_and_partial_batches_time_out() {
        // Server: one sample per query, arriving over time; the deque timeout releases partial batches.
        let batches = drive(1, config(16), (0..600).map(|i| vec![i]).collect(), Duration::from_micros(200));
        check(&batches, 600, 16);
        assert!(batches[0].iter().any(|b| b.len() < 16), "a partial batch after the timeout");
    }
}
