//! A serving run's record of its endpoints (`serving.json`): requests sent, completed, failed and
//! resent, tokens, and each endpoint's time to first token and per output token, for the result
//! table and for whoever reads the run later.

use super::RunDirError;
use crate::engines::serving::client::{EndpointStats, quantile};
use crate::fsutil::write_atomic;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// The endpoints' record a run leaves in its directory.
pub const SERVING_RECORD: &str = "serving.json";

/// What a serving run leaves in `serving.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServingRecord {
    /// Where the output ids came from: as the engine streamed them, or re-tokenized (and with which file).
    pub output_ids: String,
    pub endpoints: Vec<EndpointRecord>,
}

/// One endpoint's line of `serving.json` and of the result table.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointRecord {
    pub url: String,
    pub sent: u64,
    pub completed: u64,
    pub failed: u64,
    pub resent: u64,
    pub tokens: u64,
    pub down: Option<String>,
    pub first_error: Option<String>,
    pub ttft_p50_ms: Option<f64>,
    pub ttft_p99_ms: Option<f64>,
    pub tpot_p50_ms: Option<f64>,
    pub tpot_p99_ms: Option<f64>,
    /// Client-observed minus server-reported TTFT (stand-in servers report theirs).
    pub added_ttft_p50_ms: Option<f64>,
    pub added_ttft_p99_ms: Option<f64>,
}

impl EndpointRecord {
    pub fn from_stats(s: &EndpointStats) -> EndpointRecord {
        let ms = |v: &[u32], q: f64| quantile(&mut v.to_vec(), q).map(|us| f64::from(us) / 1000.0);
        EndpointRecord {
            url: s.url.clone(),
            sent: s.sent,
            completed: s.completed,
            failed: s.failed,
            resent: s.resent,
            tokens: s.tokens,
            down: s.down.clone(),
            first_error: s.first_error.clone(),
            ttft_p50_ms: ms(&s.ttft_us, 0.5),
            ttft_p99_ms: ms(&s.ttft_us, 0.99),
            tpot_p50_ms: ms(&s.tpot_us, 0.5),
            tpot_p99_ms: ms(&s.tpot_us, 0.99),
            added_ttft_p50_ms: ms(&s.added_ttft_us, 0.5),
            added_ttft_p99_ms: ms(&s.added_ttft_us, 0.99),
        }
    }
}

impl ServingRecord {
    /// Writes the record into run directory `dir`.
    pub fn write(&self, dir: &Path) -> Result<(), RunDirError> {
        let json = serde_json::to_string_pretty(self).expect("records serialize");
        Ok(write_atomic(&dir.join(SERVING_RECORD), format!("{json}\n").as_bytes())?)
    }
}

/// The record of a finished serving run, if it has one.
pub fn read_record(dir: &Path) -> Option<ServingRecord> {
    serde_json::from_str(&std::fs::read_to_string(dir.join(SERVING_RECORD)).ok()?).ok()
}
