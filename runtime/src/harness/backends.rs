//! Harness backends for runs without a real engine: a null SUT that completes every sample inside
//! the issue call, and a fixed-latency device behind the real batching SUT. Both are test doubles,
//! so their runs are never submittable.

use crate::harness::engine::{test_label, Sample, SampleSource};
use mlperf_loadgen::{Qsl, QuerySample, Response, Sut};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Completes every sample synchronously inside `issue_query` (LoadGen's overhead only).
pub struct NullSut {
    pub completed: Arc<AtomicU64>,
}

impl Sut for NullSut {
    fn name(&self) -> &str {
        "mlperf null SUT"
    }

    fn issue_query(&self, samples: &[QuerySample]) {
        let labels: Vec<[u8; 4]> = samples.iter().map(|s| test_label(s.index).to_le_bytes()).collect();
        let responses: Vec<Response<'_>> = samples.iter().zip(&labels).map(|(s, l)| Response::new(s.id, l)).collect();
        mlperf_loadgen::query_samples_complete(&responses);
        self.completed.fetch_add(samples.len() as u64, Ordering::Relaxed);
    }
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
