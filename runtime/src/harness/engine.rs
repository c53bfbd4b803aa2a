//! The engine interface the harness drives, and the test engines: a null engine that answers
//! instantly and a fixed-latency engine that stands in for a device of known speed.

use std::ops::{Deref, Range};
use std::sync::Arc;
use std::time::Duration;

/// The bytes of one loaded sample: a range of a shared buffer (a whole contiguous tensor file, or
/// one sample's own buffer), so handing a sample to an engine never copies it.
#[derive(Clone, Debug)]
pub struct Sample {
    buf: Arc<[u8]>,
    range: Range<usize>,
}

impl Sample {
    pub fn new(buf: Arc<[u8]>, range: Range<usize>) -> Sample {
        assert!(range.end <= buf.len(), "sample range inside its buffer");
        Sample { buf, range }
    }

    pub fn whole(buf: Arc<[u8]>) -> Sample {
        let len = buf.len();
        Sample { buf, range: 0..len }
    }

    pub fn empty() -> Sample {
        Sample::whole(Arc::from(Vec::new()))
    }
}

impl Deref for Sample {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.buf[self.range.clone()]
    }
}

/// Sample data for engines: the QSL's view of loaded samples.
pub trait SampleSource: Send + Sync {
    /// One loaded sample (its preprocessed tensor). Only samples LoadGen asked to load are valid.
    fn sample(&self, index: usize) -> Sample;
}

/// A model on one device. `infer` fills `outputs` with one response per sample, in order.
pub trait Engine: Send + Sync {
    fn name(&self) -> &str;
    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), String>;
}

/// The deterministic answer of the test engines: a class id per sample index, as a little-endian
/// i32 (the ImageNet accuracy script's int32 format), so TEST01 comparisons pass.
pub fn test_label(index: usize) -> i32 {
    ((index as u64 * 7919) % 1000) as i32
}

/// Takes a fixed time per batch, whatever its size: a device with known latency and throughput.
pub struct FixedLatencyEngine {
    pub latency: Duration,
    /// Answer with two "tokens" (LLM benchmarks).
    pub tokens: bool,
}

impl Engine for FixedLatencyEngine {
    fn name(&self) -> &str {
        "fixed-latency"
    }
    fn infer(&self, indices: &[usize], _: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), String> {
        std::thread::sleep(self.latency);
        outputs.extend(indices.iter().map(|&i| crate::harness::backends::test_answer(i, self.tokens)));
        Ok(())
    }
}

/// Engine throughput without LoadGen or the batcher: `workers` threads per device each run full
/// batches of `batch` samples (cycling over `indices`, which must be loaded) for `duration`.
/// Returns samples per second over all devices.
pub fn throughput(devices: &[Arc<dyn Engine>], workers: usize, batch: usize, source: &dyn SampleSource, indices: &[usize], duration: Duration) -> Result<f64, String> {
    assert!(!indices.is_empty() && batch > 0, "samples to run");
    let batches: Vec<Vec<usize>> = (0..indices.len().div_ceil(batch)).map(|b| (0..batch).map(|i| indices[(b * batch + i) % indices.len()]).collect()).collect();
    // One untimed batch per worker: plans, graphs and resident samples are set up lazily.
    let batches = &batches;
    std::thread::scope(|s| {
        let warm: Vec<_> = devices.iter().flat_map(|e| (0..workers).map(move |w| (e, w))).map(|(e, w)| s.spawn(move || e.infer(&batches[w % batches.len()], source, &mut Vec::new()))).collect();
        warm.into_iter().try_for_each(|h| h.join().expect("warm-up thread"))
    })?;
    let start = std::time::Instant::now();
    let done: Vec<Result<usize, String>> = std::thread::scope(|s| {
        let threads: Vec<_> = devices
            .iter()
            .flat_map(|e| (0..workers).map(move |w| (e, w)))
            .map(|(e, w)| {
                s.spawn(move || {
                    let (mut samples, mut out) = (0, Vec::new());
                    let mut b = w;
                    while start.elapsed() < duration {
                        out.clear();
                        e.infer(&batches[b % batches.len()], source, &mut out)?;
                        samples += out.len();
                        b += workers;
                    }
                    Ok(samples)
                })
            })
            .collect();
        threads.into_iter().map(|h| h.join().expect("bench thread")).collect()
    });
    let elapsed = start.elapsed().as_secs_f64();
    let total: usize = done.into_iter().sum::<Result<usize, String>>()?;
    Ok(total as f64 / elapsed)
}
