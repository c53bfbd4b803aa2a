//! YOLO on the CPU-only system through the real LoadGen: `generate_engines` makes the synthetic
//! COCO set in the reference's layout, the accuracy run is scored as `accuracy-coco.py` scores it
//! (the CPU engine against its own detections: a high mAP), short Offline, SingleStream and
//! MultiStream runs are VALID, TEST01 passes against them, and the real-data path names a missing
//! image before the engine starts (exit 4).

use super::{detail_logs, empty_dir, on_cpu_dev, scored_accuracy, scratch_alone, shown, test01_passes};

#[test]
fn yolo_on_the_cpu_engine_scores_map_runs_valid_passes_test01_and_names_a_missing_image() {
    // Alone: TEST01 compares the audit run's throughput with the reference run's within 10 %.
    let cwd = scratch_alone("yolo-cpu");
    let space = empty_dir("yolo-scratch-space");
    let run = on_cpu_dev("yolo", &cwd, &space);

    let out = run(&["generate_engines", "--scenarios=offline"]);
    assert!(out.status.success(), "{}", shown(&out));
    let set = space.join("models/synthetic/coco-yolo");
    for file in ["yolo11-synthetic.onnx", "manifest.json", "annotations/instances_val2017.json", "val2017_safe/synthetic_000001.ppm", "val2017_safe/synthetic_001525.ppm"] {
        assert!(set.join(file).is_file(), "{file}");
    }

    // Every image answered and scored; the CPU engine agrees with its own detections.
    let out = run(&["run_harness", "--scenarios=offline", "--test_mode=AccuracyOnly"]);
    assert!(out.status.success(), "{}", shown(&out));
    assert!(shown(&out).contains("1525.000 samples"), "{}", shown(&out));
    let text = std::fs::read_to_string(scored_accuracy(&cwd)).unwrap();
    let map: f64 = text.split("mAP=").nth(1).and_then(|s| s.split('%').next()).and_then(|s| s.trim().parse().ok()).unwrap_or_else(|| panic!("{text}"));
    assert!(map > 90.0, "{text}");

    // Short performance runs, each VALID: Offline at a rate above the CPU's lasts min_duration;
    // MultiStream's p99 needs 662 queries for early stopping.
    let out = run(&["run_harness", "--scenarios=offline,singlestream", "--min_duration=1000", "--offline_expected_qps=2000", "--min_query_count=64"]);
    assert!(out.status.success(), "{}", shown(&out));
    let out = run(&["run_harness", "--scenarios=multistream", "--min_duration=1000", "--min_query_count=662"]);
    assert!(out.status.success(), "{}", shown(&out));
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 4, "the accuracy run and three performance runs");
    for (path, log) in &logs {
        assert!(matches!(log.str("result_validity"), Some("VALID") | None), "{}: {:?}", path.display(), log.str("result_validity"));
    }

    // TEST01: the audit run's logged detections equal the accuracy run's.
    let perf = ["run_harness", "--scenarios=offline", "--min_duration=1000", "--offline_expected_qps=2000"];
    let audit = ["run_audit_harness", "--scenarios=offline", "--min_duration=1000", "--offline_expected_qps=2000", "--audit_tests=TEST01", "--audit_retries=0", "--force"];
    test01_passes(&run, &perf, &audit).unwrap_or_else(|attempts| panic!("{attempts}"));

    // The real-data path over the same files, one image missing: named with its sample, exit 4.
    let real = space.join("preprocessed_data/synthetic/coco-yolo");
    std::fs::create_dir_all(real.join("val2017_safe")).unwrap();
    std::os::unix::fs::symlink(set.join("annotations"), real.join("annotations")).unwrap();
    for i in (1..=1525).filter(|&i| i != 42) {
        let name = format!("synthetic_{i:06}.ppm");
        std::os::unix::fs::symlink(set.join("val2017_safe").join(&name), real.join("val2017_safe").join(&name)).unwrap();
    }
    let real_cwd = empty_dir("yolo-cpu-real");
    let out = on_cpu_dev("yolo", &real_cwd, &space)(&["run_harness", "--scenarios=offline", "--test_run", "--dataset=real"]);
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::DATA), "{}", shown(&out));
    assert!(shown(&out).contains("val2017_safe/synthetic_000042.ppm (sample 41) is missing"), "{}", shown(&out));
}
