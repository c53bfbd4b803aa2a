//! 3D-UNet on the CPU-only system through the real LoadGen: `generate_engines` makes the synthetic
//! KiTS19 set in the reference's preprocessed layout, the accuracy run is scored as
//! `accuracy_kits.py` scores it (through the synthetic set and through the real-data path over the
//! same files), short Offline and SingleStream runs are VALID, and TEST01 passes against them.

use super::{detail_logs, empty_dir, on_cpu_dev, scored_accuracy, scratch_alone, shown, test01_passes};

#[test]
fn unet3d_on_the_cpu_engine_scores_dice_runs_valid_and_passes_test01() {
    // Alone: TEST01 compares the audit run's throughput with the reference run's within 10 %.
    let cwd = scratch_alone("unet3d-cpu");
    let space = empty_dir("unet3d-scratch-space");
    let run = on_cpu_dev("3d-unet", &cwd, &space);

    let out = run(&["generate_engines"]);
    assert!(out.status.success(), "{}", shown(&out));
    let set = space.join("models/synthetic/kits19");
    for file in ["unet3d.onnx", "manifest.json", "preprocessed/preprocessed_files.pkl", "preprocessed/case_00000.pkl", "preprocessed/case_00400.pkl"] {
        assert!(set.join(file).is_file(), "{file}");
    }

    // Every case answered once and scored; the CPU engine agrees with its own labels.
    let out = run(&["run_harness", "--scenarios=offline", "--test_mode=AccuracyOnly"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(shown(&out).contains("43.000 samples"), "{}", shown(&out));
    let accuracy = scored_accuracy(&cwd);
    let text = std::fs::read_to_string(accuracy).unwrap();
    assert!(text.starts_with("Accuracy: mean = 1.00000, kidney = 1.0000, tumor = 1.0000\n"), "{text}");

    // The real-data path (`--dataset=real`: the config's tensor_path and model_path, no synthetic
    // caveat) over the same files, placed where CPU-dev's tensor_path points.
    let real = space.join("preprocessed_data/synthetic/kits19/preprocessed");
    std::fs::create_dir_all(real.parent().unwrap()).unwrap();
    std::os::unix::fs::symlink(set.join("preprocessed"), &real).unwrap();
    let real_cwd = empty_dir("unet3d-cpu-real");
    let out = on_cpu_dev("3d-unet", &real_cwd, &space)(&["run_harness", "--scenarios=offline", "--test_mode=AccuracyOnly", "--dataset=real"]);
    assert!(out.status.success(), "{}", shown(&out));
    let accuracy = scored_accuracy(&real_cwd);
    let text = std::fs::read_to_string(&accuracy).unwrap();
    assert!(text.starts_with("Accuracy: mean = 1.00000, kidney = 1.0000, tumor = 1.0000\n"), "{text}");
    let reasons = std::fs::read_to_string(accuracy.parent().unwrap().join("NON_SUBMITTABLE.txt")).unwrap();
    assert!(reasons.contains("--dataset=real") && !reasons.contains("synthetic dataset"), "{reasons}");

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
