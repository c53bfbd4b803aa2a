//! BERT on the CPU-only system through the real LoadGen: `generate_engines` makes the synthetic
//! SQuAD set, the accuracy run is scored as `accuracy-squad.py` scores it, short Offline and
//! SingleStream runs are VALID, and TEST01 passes against them.

use super::{detail_logs, empty_dir, on_cpu_dev, scored_accuracy, scratch_alone, shown, test01_passes};

#[test]
fn bert_on_the_cpu_engine_scores_runs_valid_and_passes_test01() {
    // Alone: TEST01 compares the audit run's throughput with the reference run's within 10 %.
    let cwd = scratch_alone("bert-cpu");
    let space = empty_dir("bert-scratch-space");
    let run = on_cpu_dev("bert", &cwd, &space);

    let out = run(&["generate_engines", "--scenarios=offline"]);
    assert!(out.status.success(), "{}", shown(&out));
    let set = space.join("models/synthetic/squad");
    for file in ["bert.onnx", "vocab.txt", "dev-v1.1.json", "input_ids.npy", "segment_ids.npy", "input_mask.npy", "squad_features.json", "manifest.json"] {
        assert!(set.join(file).is_file(), "{file}");
    }

    // Every feature answered and scored; the CPU engine agrees with its own answers (F1 counts an
    // answer of punctuation alone as 0, as evaluate_v1.1.py does).
    let out = run(&["run_harness", "--scenarios=offline", "--test_mode=AccuracyOnly"]);
    assert!(out.status.success(), "{}", shown(&out));
    let accuracy = scored_accuracy(&cwd);
    let text = std::fs::read_to_string(accuracy).unwrap();
    assert!(text.starts_with("{\"exact_match\": 100.0, \"f1\": "), "{text}");
    let f1: f64 = text.trim_end().trim_end_matches('}').rsplit(' ').next().unwrap().parse().unwrap();
    assert!(f1 > 99.0, "{text}");
    assert!(shown(&out).contains("10833.000 samples"), "{}", shown(&out));

    // Short performance runs: an expected rate above the CPU's, so Offline lasts min_duration.
    let out = run(&["run_harness", "--scenarios=offline,singlestream", "--min_duration=1000", "--offline_expected_qps=5000"]);
    assert!(out.status.success(), "{}", shown(&out));
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 3, "the accuracy run and two performance runs");
    for (path, log) in &logs {
        assert!(matches!(log.str("result_validity"), Some("VALID") | None), "{}: {:?}", path.display(), log.str("result_validity"));
    }

    // TEST01: the logged logits of the audit run equal the accuracy run's.
    let perf = ["run_harness", "--scenarios=offline", "--min_duration=1000", "--offline_expected_qps=5000"];
    let audit = ["run_audit_harness", "--scenarios=offline", "--min_duration=1000", "--offline_expected_qps=5000", "--audit_tests=TEST01", "--audit_retries=0", "--force"];
    test01_passes(&run, &perf, &audit).unwrap_or_else(|attempts| panic!("{attempts}"));
    let verify = std::fs::read_to_string(cwd.join("build/compliance/CPU-dev_RS/bert-99/Offline/TEST01/verify_accuracy.txt")).unwrap();
    assert!(verify.contains("num_perf_log_data_mismatch = 0\n") && verify.ends_with("TEST PASS\n\n"), "{verify}");
}
