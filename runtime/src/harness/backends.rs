//! Harness backends for runs without a real engine (`--backend=null|fixed_latency`): a null SUT
//! that completes every sample inside the issue call, and a fixed-latency engine behind the real
//! batching SUT. Both are test doubles at the device's boundary, so their runs are never
//! submittable; `bench engine` measures the harness's ceiling with them.

use crate::engines::{Engine, Sample, SampleSource};
use mlperf_loadgen::{Qsl, QuerySample, Response, Sut};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Completes every sample synchronously inside `issue_query` (LoadGen's overhead only).
pub struct NullSut {
    pub completed: Arc<AtomicU64>,
    /// LLM benchmarks: report a first token, then a two-token answer.
    pub token_latencies: bool,
}

impl Sut for NullSut {
    fn name(&self) -> &str {
        "mlperf null SUT"
    }

    fn issue_query(&self, samples: &[QuerySample]) {
        let answers: Vec<Vec<u8>> = samples.iter().map(|s| test_answer(s.index, self.token_latencies)).collect();
        complete_with_tokens(samples, &answers, self.token_latencies);
        self.completed.fetch_add(samples.len() as u64, Ordering::Relaxed);
    }
}

/// Completes samples; with token latencies, first reports each answer's first token (4 bytes) the
/// way a streaming LLM server would, then the whole answer with its token count.
pub fn complete_with_tokens(samples: &[QuerySample], answers: &[Vec<u8>], token_latencies: bool) {
    if token_latencies {
        let first: Vec<Response<'_>> = samples.iter().zip(answers).map(|(s, a)| Response { id: s.id, data: &a[..a.len().min(4)], n_tokens: 1 }).collect();
        mlperf_loadgen::first_token_complete(&first);
    }
    let responses: Vec<Response<'_>> =
        samples.iter().zip(answers).map(|(s, a)| Response { id: s.id, data: a, n_tokens: if token_latencies { (a.len() / 4) as i64 } else { 0 } }).collect();
    mlperf_loadgen::query_samples_complete(&responses);
}

/// A QSL with the benchmark's sample counts and no data (test engines ignore inputs).
pub struct EmptyQsl {
    pub total: usize,
    pub performance: usize,
}

impl Qsl for EmptyQsl {
    fn name(&self) -> &str {
        "mlperf empty QSL"
    }
    fn total_sample_count(&self) -> usize {
        self.total
    }
    fn performance_sample_count(&self) -> usize {
        self.performance
    }
    fn load_samples(&self, _: &[usize]) {}
    fn unload_samples(&self, _: &[usize]) {}
}

impl SampleSource for EmptyQsl {
    fn sample(&self, _: usize) -> Sample {
        Sample::empty()
    }
}

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
    fn infer(&self, indices: &[usize], _: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), crate::engines::EngineError> {
        // `sleep(ZERO)` returns without a system call, so the null engine costs nothing here.
        std::thread::sleep(self.latency);
        outputs.extend(indices.iter().map(|&i| test_answer(i, self.tokens)));
        Ok(())
    }
}
