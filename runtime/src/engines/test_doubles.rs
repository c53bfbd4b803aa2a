//! Engines that stand in for a device at the harness's boundary: a null engine that answers at
//! once and a fixed-latency engine of known speed. Runs with them are never submittable.

use crate::engines::{Engine, SampleSource};
use std::time::Duration;

/// The deterministic answer of the test engines: a class id per sample index, as a little-endian
/// i32 (the ImageNet accuracy script's int32 format), so TEST01 comparisons pass.
pub fn test_label(index: usize) -> i32 {
    ((index as u64 * 7919) % 1000) as i32
}

/// The test engines' answer: one i32 class id, or two i32 "tokens" for LLM benchmarks.
pub fn test_answer(index: usize, tokens: bool) -> Vec<u8> {
    let label = test_label(index).to_le_bytes();
    if tokens { [label, label].concat() } else { label.to_vec() }
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
        outputs.extend(indices.iter().map(|&i| test_answer(i, self.tokens)));
        Ok(())
    }
}
