//! 3D-UNet on the CPU-only system through the real LoadGen: `generate_engines` makes the synthetic
//! KiTS19 set, the accuracy run is scored as `accuracy_kits.py` scores it, short Offline and
//! SingleStream runs are VALID, and TEST01 passes against them.

use super::{detail_logs, empty_dir, on_cpu_dev, scratch_alone, shown, test01_passes};

#[test]
fn unet3d_on_the_cpu_engine_scores_dice_runs_valid_and_passes_test01() {
    // Alone: TEST01 compares the audit run's throughput with the reference run's within 10 %.
    let cwd = scratch_alone("unet3d-cpu");
    let space = empty_dir("unet3d-scratch-space");
    let run = on_cpu_dev("3d-unet", &cwd, &space);

    let out = run(&["generate_engines"]);
    assert!(out.status.success(), "{}", shown(&out));
    let set = space.join("models/synthetic/kits19");
    for file in ["unet3d.onnx", "cases.json", "manifest.json", "images/case_00000.npy", "labels/case_00400.npy"] {
        assert!(set.join(file).is_file(), "{file}");
    }

    // Every case answered once and scored; the CPU engine agrees with its own labels.
    let out = run(&["run_harness", "--scenarios=offline", "--test_mode=AccuracyOnly"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(shown(&out).contains("43.000 samples"), "{}", shown(&out));
    let accuracy = mlperf_runtime::fsutil::walk_files(&cwd.join("build/logs")).into_iter().find(|p| p.ends_with("accuracy.txt")).expect("a scored accuracy run");
    let text = std::fs::read_to_string(accuracy).unwrap();
    assert!(text.starts_with("Accuracy: mean = 1.00000, kidney = 1.0000, tumor = 1.0000\n"), "{text}");

    // Short performance runs, each VALID: Offline lasts min_duration at an expected rate above the
    // CPU's; SingleStream issues whole permutations of the 43 volumes (equal-issue mode).
    let out = run(&["run_harness", "--scenarios=offline,singlestream", "--min_duration=1000", "--offline_expected_qps=200"]);
    assert!(out.status.success(), "{}", shown(&out));
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 3, "the accuracy run and two performance runs");
    for (path, log) in &logs {
        assert!(matches!(log.str("result_validity"), Some("VALID") | None), "{}: {:?}", path.display(), log.str("result_validity"));
        assert_eq!(log.bool("effective_sample_concatenate_permutation"), Some(true), "{}: mlperf.conf's equal-issue mode", path.display());
    }

    // TEST01: the audit run's logged labels equal the accuracy run's.
    let perf = ["run_harness", "--scenarios=offline", "--min_duration=1000", "--offline_expected_qps=200"];
    let audit = ["run_audit_harness", "--scenarios=offline", "--min_duration=1000", "--offline_expected_qps=200", "--audit_tests=TEST01", "--audit_retries=0", "--force"];
    test01_passes(&run, &perf, &audit).unwrap_or_else(|attempts| panic!("{attempts}"));
    let verify = std::fs::read_to_string(cwd.join("build/compliance/CPU-dev_RS/3d-unet-99/Offline/TEST01/verify_accuracy.txt")).unwrap();
    assert!(verify.contains("num_perf_log_data_mismatch = 0\n") && verify.ends_with("TEST PASS\n\n"), "{verify}");
}
