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

impl FixedLatencyEngine {
    /// Answers at once: what the harness costs with no model at all (`mlperf bench engine`).
    pub const NULL: FixedLatencyEngine = FixedLatencyEngine { latency: Duration::ZERO, tokens: false };
}

impl Engine for FixedLatencyEngine {
    fn name(&self) -> &str {
        if self.latency.is_zero() { "null" } else { "fixed-latency" }
    }
    fn infer(&self, indices: &[usize], _: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), String> {
        // `sleep(ZERO)` returns without a system call, so the null engine costs nothing here.
        std::thread::sleep(self.latency);
        outputs.extend(indices.iter().map(|&i| crate::harness::backends::test_answer(i, self.tokens)));
        Ok(())
    }
}
