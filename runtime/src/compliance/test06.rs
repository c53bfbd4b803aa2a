//! TEST06 (LLM output consistency), as `compliance/TEST06/run_verification.py` checks the audit
//! run's accuracy log (token ids, `--dtype int32`):
//!
//! - first token (not Offline): the reported first token(s) `token_data` agree with the start of
//!   the output `data`, element by element over the shorter of the two;
//! - EOS: an output ends with at most one EOS token (the script's loop stops before index 0, so a
//!   leading element is never counted);
//! - length: `data` holds exactly `token_count` tokens.
//!
//! A malformed entry (odd hex, a length that is not whole tokens, a missing field) fails its check,
//! as the script's exception handlers do. The script's `--eos_token_id` only works at its default
//! (2): a value given on the command line stays a string and never equals a token, so the official
//! check is a no-op for other ids; here the id is always compared as a number.

use super::ComplianceError;
use super::Verification;
use crate::accuracy::log::{LogDtype, decode_hex};
use mlperf_config::Scenario;
use serde::Deserialize;
use std::path::Path;

/// The script's default `--eos_token_id`.
pub const DEFAULT_EOS_TOKEN_ID: i64 = 2;

#[derive(Debug, Deserialize)]
struct TokenEntry {
    data: String,
    token_data: Option<String>,
    token_count: Option<i64>,
}

fn tokens(hex: &str, dtype: LogDtype) -> Option<Vec<f64>> {
    let bytes = decode_hex(hex).ok()?;
    (bytes.len() % dtype.size() == 0).then(|| (0..bytes.len() / dtype.size()).map(|i| dtype.get_f64(&bytes, i)).collect())
}

fn eos_check(entries: &[TokenEntry], dtype: LogDtype, eos: f64) -> bool {
    entries.iter().all(|e| {
        let Some(data) = tokens(&e.data, dtype) else { return false };
        let trailing = data.iter().skip(1).rev().take_while(|t| **t == eos).count();
        trailing < 2
    })
}

fn first_token_check(entries: &[TokenEntry], dtype: LogDtype) -> bool {
    entries.iter().all(|e| match (tokens(&e.data, dtype), e.token_data.as_deref().and_then(|t| tokens(t, dtype))) {
        (Some(data), Some(first)) => data.iter().zip(&first).all(|(a, b)| a == b),
        _ => false,
    })
}

fn sample_len_check(entries: &[TokenEntry], dtype: LogDtype) -> bool {
    entries.iter().all(|e| matches!((tokens(&e.data, dtype), e.token_count), (Some(data), Some(n)) if data.len() as i64 == n))
}

/// `run_verification.py -c <run dir> -s <scenario> --dtype <dtype> --eos_token_id <eos>` on the
/// run's `mlperf_log_accuracy.json`.
pub fn verify(accuracy_log: &Path, scenario: Scenario, dtype: LogDtype, eos_token_id: i64) -> Result<Verification, ComplianceError> {
    let entries: Vec<TokenEntry> = super::read_accuracy_entries(accuracy_log)?;
    let eos_pass = eos_check(&entries, dtype, eos_token_id as f64);
    let first_token = (scenario != Scenario::Offline).then(|| first_token_check(&entries, dtype));
    let len_pass = sample_len_check(&entries, dtype);
    let passed = eos_pass && first_token.unwrap_or(true) && len_pass;
    let python_bool = |b: bool| if b { "True" } else { "False" };
    let first_text = first_token.map_or("Skipped", python_bool);
    let report = format!(
        "First token check pass: {first_text}\nEOS check pass: {}\nSample length check pass: {}\n{}\n",
        python_bool(eos_pass),
        python_bool(len_pass),
        if passed { "TEST06 verification complete" } else { "TEST06 verification failed" }
    );
    let summary = format!("{} entries; first token {first_text}, EOS {}, length {}", entries.len(), python_bool(eos_pass), python_bool(len_pass));
    Ok(Verification::text(passed, report, summary))
}

#[cfg(test)]
#[path = "test06_tests.rs"]
mod tests;
