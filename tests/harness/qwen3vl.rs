//! qwen3-vl-235b-a22b end to end through the real LoadGen against the stand-in (CPU-dev's
//! configs: generated products, chat requests with an image part): Offline, Server and
//! Interactive runs are VALID with token latencies off, Interactive reads the 8,000-product set,
//! and an accuracy run writes the `accuracy.txt` the checker's pattern reads.

use super::{detail_logs, free_port, mlperf, scratch};

/// Fast stand-in answers: 2 ms to the first token, 1 ms per token, 8-16 tokens.
const FAST: &str = r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--min_output_tokens=8", "--max_output_tokens=16"]"#;

/// Paced answers: 20 ms to the first token and 5 ms per token after it, 16-32 tokens, so at 64 in
/// flight throughput is bounded by latency (about 450 samples/s) whatever the machine.
const PACED: &str = r#"--serving_args=["--first_token_ms=20", "--token_ms=5", "--min_output_tokens=16", "--max_output_tokens=32"]"#;

#[test]
fn qwen3_vl_offline_server_and_interactive_are_valid_against_the_stand_in() {
    let cwd = scratch("qwen3vl-scenarios");
    let port = format!("--serving_port={}", free_port());
    let out = mlperf(
        &cwd,
        &[
            "run_harness",
            "--system_name=CPU-dev",
            "--benchmarks=qwen3-vl",
            "--scenarios=offline,server,interactive",
            "--max_concurrency=64",
            "--min_query_count=1",
            "--min_duration=3000",
            "--performance_sample_count_override=128",
            // Offline issues more than the stand-in answers in 3 s; Server and Interactive 600
            // queries, enough for early stopping, about 28 of 64 slots busy.
            "--offline_expected_qps=900",
            "--server_target_qps=200",
            PACED,
            &port,
        ],
    );
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{stdout}\n{stderr}");
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 3, "{stdout}");
    for (path, log) in &logs {
        assert_eq!(log.str("result_validity"), Some("VALID"), "{}:\n{stdout}", path.display());
        assert_ne!(log.bool("requested_use_token_latencies"), Some(true), "token latencies are off for qwen3-vl");
        assert_eq!(log.f64("result_first_token_99.00_percentile_latency_ns"), None, "no TTFT is reported");
        let interactive = path.to_string_lossy().contains("/Interactive/");
        assert_eq!(log.u64("qsl_reported_total_count"), Some(if interactive { 8000 } else { 48289 }), "{}", path.display());
        let limit = if interactive { 1_500_000_000 } else { 12_000_000_000 };
        if !path.to_string_lossy().contains("/Offline/") {
            assert_eq!(log.u64("requested_server_target_latency_ns"), Some(limit), "end-to-end p99 limit: {}", path.display());
        }
        let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path.parent().unwrap().join("serving.json")).unwrap()).unwrap();
        assert_eq!(record["endpoints"][0]["failed"], 0, "{record}");
    }
}

#[test]
fn a_qwen3_vl_accuracy_run_writes_the_f1_the_checker_reads() {
    let cwd = scratch("qwen3vl-accuracy");
    let port = format!("--serving_port={}", free_port());
    let out = mlperf(
        &cwd,
        // The 8,000 products of the Interactive set, issued at 4,000 queries/s.
        &[
            "run_harness",
            "--system_name=CPU-dev",
            "--benchmarks=qwen3-vl",
            "--scenarios=interactive",
            "--test_mode=AccuracyOnly",
            "--max_concurrency=256",
            "--server_target_qps=4000",
            FAST,
            &port,
        ],
    );
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    let accuracy =
        mlperf_runtime::fsutil::walk_files(&cwd.join("build")).into_iter().find(|p| p.ends_with("accuracy.txt")).unwrap_or_else(|| panic!("no accuracy.txt:\n{stdout}\n{stderr}"));
    let text = std::fs::read_to_string(&accuracy).unwrap();
    let pattern = mlperf_runtime::accuracy::target::python_regex(r#"\{.*"f1":\s*([\d\.]+).*\}"#).unwrap();
    let f1 = text.lines().find_map(|l| mlperf_runtime::accuracy::target::first_group(&pattern, l)).unwrap_or_else(|| panic!("{text}"));
    assert!(text.starts_with("Results\n\n{\"f1\": ") && text.contains("\n\nhash="), "{text}");
    let f1: f64 = f1.parse().unwrap();
    assert!((0.0..=1.0).contains(&f1), "{text}");
    assert!(accuracy.parent().unwrap().join("ACCURACY_NOTE.txt").is_file(), "generated products: the note says what the score means");
    assert!(out.status.success(), "{stdout}\n{stderr}");
}

#[test]
fn a_catalogue_without_its_columns_or_of_the_wrong_size_fails_before_the_engine_starts() {
    let cwd = scratch("qwen3vl-bad-catalogue");
    let fixtures = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/qwen3vl");
    let dir = cwd.join("scratch/data/qwen3-vl-235b-a22b/product-catalogue/data");
    let run = |from: &str| {
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for file in std::fs::read_dir(fixtures.join(from).join("data")).unwrap() {
            let file = file.unwrap().path();
            std::fs::copy(&file, dir.join(file.file_name().unwrap())).unwrap();
        }
        let port = format!("--serving_port={}", free_port());
        let out = super::on_cpu_dev("qwen3-vl", &cwd, &cwd.join("scratch"))(&["run_harness", "--scenarios=offline", "--dataset=real", "--min_query_count=1", &port]);
        (out.status.code(), super::shown(&out))
    };
    let (code, shown) = run("missing-column");
    assert_eq!(code, Some(mlperf_runtime::error::exit::DATA), "{shown}");
    assert!(shown.contains("train-00000-of-00001.parquet: no column `ground_truth_category`"), "{shown}");
    assert!(!shown.contains("started instance0"), "checked before the engine starts: {shown}");
    let (code, shown) = run("catalogue");
    assert_eq!(code, Some(mlperf_runtime::error::exit::DATA), "{shown}");
    assert!(shown.contains("product-catalogue: 12 products, but the round's product catalogue (train+test) has 48289"), "{shown}");
}
