use super::*;
use crate::compliance::testlogs::{dir, hex, write};

fn tokens_hex(tokens: &[i32]) -> String {
    hex(&tokens.iter().flat_map(|t| t.to_le_bytes()).collect::<Vec<u8>>())
}

/// An LLM accuracy log: `(output tokens, first tokens, token_count)` per entry, in LoadGen's format.
fn log(name: &str, entries: &[(&[i32], &[i32], i64)]) -> std::path::PathBuf {
    let lines: Vec<String> = entries
        .iter()
        .enumerate()
        .map(|(seq, (data, first, count))| {
            format!("{{ \"seq_id\" : {seq}, \"qsl_idx\" : {seq}, \"data\" : \"{}\", \"token_data\" : \"{}\", \"token_count\" : {count} }}", tokens_hex(data), tokens_hex(first))
        })
        .collect();
    write(&dir(name), "mlperf_log_accuracy.json", &format!("[\n{}\n]\n", lines.join(",\n")))
}

fn run(name: &str, scenario: Scenario, entries: &[(&[i32], &[i32], i64)]) -> Verification {
    verify(&log(name, entries), scenario, LogDtype::Int32, DEFAULT_EOS_TOKEN_ID).unwrap()
}

#[test]
fn consistent_outputs_pass_with_the_scripts_report() {
    let v = run("pass", Scenario::Server, &[(&[10, 11, 2], &[10], 3), (&[7, 8], &[7], 2)]);
    assert!(v.passed);
    assert_eq!(v.report, "First token check pass: True\nEOS check pass: True\nSample length check pass: True\nTEST06 verification complete\n");
}

#[test]
fn offline_skips_the_first_token_check() {
    let v = run("offline", Scenario::Offline, &[(&[10, 11], &[99], 2)]);
    assert!(v.passed);
    assert!(v.report.starts_with("First token check pass: Skipped\n"));
}

#[test]
fn a_wrong_first_token_fails() {
    let v = run("first-token", Scenario::Interactive, &[(&[10, 11], &[12], 2)]);
    assert!(!v.passed);
    assert_eq!(v.report, "First token check pass: False\nEOS check pass: True\nSample length check pass: True\nTEST06 verification failed\n");
}

#[test]
fn two_trailing_eos_tokens_fail() {
    let v = run("eos", Scenario::Offline, &[(&[10, 2, 2], &[10], 3)]);
    assert!(!v.passed);
    assert!(v.report.contains("EOS check pass: False\n"));
    // Element 0 is never counted (the script's loop stops before it).
    assert!(run("eos-first", Scenario::Offline, &[(&[2, 2], &[2], 2)]).passed);
}

#[test]
fn a_token_count_that_differs_from_the_output_fails() {
    let v = run("length", Scenario::Offline, &[(&[10, 11, 12], &[10], 2)]);
    assert!(!v.passed);
    assert!(v.report.contains("Sample length check pass: False\n"));
}

#[test]
fn missing_token_fields_fail_their_checks() {
    let path = write(&dir("missing"), "mlperf_log_accuracy.json", "[\n{ \"seq_id\" : 0, \"qsl_idx\" : 0, \"data\" : \"0A000000\" }\n]\n");
    let v = verify(&path, Scenario::Server, LogDtype::Int32, DEFAULT_EOS_TOKEN_ID).unwrap();
    assert_eq!(v.report, "First token check pass: False\nEOS check pass: True\nSample length check pass: False\nTEST06 verification failed\n");
}
