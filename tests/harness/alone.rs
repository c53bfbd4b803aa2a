//! The runs whose validity rests on timing (the fixed-latency device at the Server bound, the
//! Interactive TTFT/TPOT limits): each takes the machine to itself ([`scratch_alone`]). libtest
//! starts tests in name order, and this module's name puts them first: they run one after the
//! other before any long test holds the machine, instead of waiting behind one (a waiting test
//! also keeps every later test from starting).

use super::{DetailLog, PathBuf, assert_round_logs, detail_logs, mlperf, scratch_alone};

/// One scenario with the fixed-latency device, tuned so a 2-second run is VALID, with the machine
/// to itself.
fn fixed_latency_run(name: &str, system: &str, bench: &str, scenario: &str, latency_us: &str, extra: &[&str]) -> (PathBuf, DetailLog) {
    fixed_latency_run_for(2000, name, system, bench, scenario, latency_us, extra)
}

fn fixed_latency_run_for(min_duration_ms: u32, name: &str, system: &str, bench: &str, scenario: &str, latency_us: &str, extra: &[&str]) -> (PathBuf, DetailLog) {
    let cwd = scratch_alone(name);
    let mut args = vec!["run_harness", "--benchmarks", bench, "--scenarios", scenario, "--backend=fixed_latency", "--backend_latency_us", latency_us];
    let duration_flag = format!("--min_duration={min_duration_ms}");
    let system_flag = format!("--system_name={system}");
    args.push(&duration_flag);
    args.push(&system_flag);
    args.extend_from_slice(extra);
    let out = mlperf(&cwd, &args);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let mut logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 1, "{stdout}");
    let (path, log) = logs.remove(0);
    assert_eq!(log.str("result_validity"), Some("VALID"), "{stdout}");
    assert!(stdout.contains("VALID") && stdout.contains("Not submittable"), "{stdout}");
    assert_round_logs(&log);
    assert!(log.errors.is_empty(), "{:?}", log.errors);
    (path, log)
}

#[test]
fn offline_is_valid_with_its_metric() {
    // 2048-sample batches every 100 ms = 20480 samples/s.
    let (dir, log) = fixed_latency_run("offline", "DGX-H100_H100-SXM-80GBx1", "resnet50", "offline", "100000", &["--offline_expected_qps=18000"]);
    assert!(log.f64("result_samples_per_second").unwrap() > 15000.0);
    assert!(dir.parent().unwrap().join("user.conf").exists() && dir.parent().unwrap().join("effective_settings.txt").exists());
}

#[test]
fn server_is_valid_with_its_metric() {
    // Server's early stopping tolerates about 1 % of queries over the 15 ms bound: 2,000 queries
    // left room for only ~10 late ones, which a loaded CI machine exceeded once; 6,000 leave ~40.
    let (_, log) = fixed_latency_run_for(6000, "server", "DGX-H100_H100-SXM-80GBx1", "resnet50", "server", "1000", &["--server_target_qps=1000"]);
    assert!(log.f64("result_completed_samples_per_sec").is_some());
    assert_eq!(log.u64("effective_target_latency_ns"), Some(15_000_000), "resnet50's Server bound from mlperf.conf");
}

#[test]
fn singlestream_is_valid_with_its_metric() {
    let (_, log) = fixed_latency_run("singlestream", "DGX-H100_H100-SXM-80GBx1", "resnet50", "singlestream", "1000", &["--single_stream_expected_latency_ns=1000000"]);
    assert!(log.u64("early_stopping_latency_ss").unwrap() >= 1_000_000);
}

#[test]
fn multistream_is_valid_with_its_metric() {
    let (_, log) = fixed_latency_run("multistream", "DGX-H100_H100-SXM-80GBx1", "resnet50", "multistream", "1000", &["--multi_stream_expected_latency_ns=1000000"]);
    assert!(log.u64("early_stopping_latency_ms").is_some());
    assert_eq!(log.u64("effective_samples_per_query"), Some(8));
}

#[test]
fn interactive_runs_the_interactive_settings_with_token_latencies() {
    let (_, log) = fixed_latency_run("interactive", "DGX-H100_H100-SXM-80GBx1", "llama3.1-8b", "interactive", "1000", &["--server_target_qps=100"]);
    assert_eq!(log.str("effective_scenario"), Some("Server"));
    assert_eq!(log.bool("requested_use_token_latencies"), Some(true));
    // llama3_1-8b-interactive's TTFT / TPOT bounds (500 / 30 ms), not the Server ones (2000 / 100).
    assert_eq!(log.u64("requested_server_ttft_latency"), Some(500_000_000));
    assert_eq!(log.u64("requested_server_tpot_latency"), Some(30_000_000));
    assert!(log.f64("result_completed_tokens_per_second").is_some());
}
