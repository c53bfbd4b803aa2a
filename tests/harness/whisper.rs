//! whisper through the real LoadGen against the stand-in's `/v1/audio/transcriptions`: CPU-dev's
//! Offline test run on generated clips is VALID with tokens/s; an accuracy run on a set made of
//! the fixture WAVs (the round's 1,633 samples) writes the accuracy.txt the checker reads, 100 %
//! with the stand-in answering each clip's transcript; TEST01 passes; a missing WAV stops the run
//! before the engine starts, naming the file and the sample.

use super::{detail_logs, empty_dir, free_port, on_cpu_dev, scored_accuracy, scratch, scratch_alone, shown, test01_passes};
use std::path::{Path, PathBuf};

fn port_flag() -> String {
    format!("--serving_port={}", free_port())
}

/// The round's 1,633 samples in `space`'s `preprocessed_data/whisper/`, cycling through the four
/// fixture clips (a sample's transcript is its clip's), with a 31 s entry the manifest skips.
fn real_set(space: &Path) -> PathBuf {
    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/whisper");
    let dir = space.join("preprocessed_data/whisper");
    std::fs::create_dir_all(dir.join("dev-all-repack")).unwrap();
    for entry in std::fs::read_dir(fixture.join("dev-all-repack")).unwrap() {
        let entry = entry.unwrap();
        std::fs::copy(entry.path(), dir.join("dev-all-repack").join(entry.file_name())).unwrap();
    }
    let clips: Vec<serde_json::Value> = serde_json::from_str(&std::fs::read_to_string(fixture.join("dev-all-repack.json")).unwrap()).unwrap();
    let kept: Vec<&serde_json::Value> = clips.iter().filter(|c| c["original_duration"].as_f64().unwrap() <= 30.0).collect();
    let long = clips.iter().find(|c| c["original_duration"].as_f64().unwrap() > 30.0).unwrap();
    let mut manifest: Vec<&serde_json::Value> = (0..1633).map(|i| kept[i % kept.len()]).collect();
    manifest.insert(100, long);
    std::fs::write(dir.join("dev-all-repack.json"), serde_json::to_string(&manifest).unwrap()).unwrap();
    dir
}

#[test]
fn whisper_offline_test_run_is_valid_against_the_stand_in() {
    let cwd = scratch("whisper-offline");
    let space = empty_dir("whisper-offline-space");
    let run = on_cpu_dev("whisper", &cwd, &space);
    // 8 in flight, each answer at least 20 + 15 x 5 ms: at most 84 samples/s whatever the machine,
    // so the 220 samples LoadGen issues at 100 samples/s outlast the 2 s minimum (VALID).
    let out = run(&["run_harness", "--scenarios=offline", "--test_run", "--min_duration=2000", "--offline_expected_qps=100", "--max_concurrency=8", &port_flag()]);
    assert!(out.status.success(), "{}", shown(&out));
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 1);
    let log = &logs[0].1;
    assert_eq!(log.str("result_validity"), Some("VALID"), "{}", shown(&out));
    assert_eq!(log.bool("requested_use_token_latencies"), Some(true));
    assert!(log.f64("result_tokens_per_second").unwrap() > 0.0);
    assert!(String::from_utf8_lossy(&out.stdout).contains("tokens/s"), "{}", shown(&out));
}

#[test]
fn whisper_accuracy_is_scored_as_accuracy_eval_and_test01_passes() {
    // Alone: TEST01 compares the audit run's throughput with the reference run's.
    let cwd = scratch_alone("whisper-accuracy");
    let space = empty_dir("whisper-accuracy-space");
    let dir = real_set(&space);
    let answers = format!(r#"--serving_args=["--first_token_ms=2", "--token_ms=1", "--reference_answers={}"]"#, dir.display());
    let run = on_cpu_dev("whisper", &cwd, &space);
    let port = port_flag();

    let out = run(&["run_harness", "--scenarios=offline", "--dataset=real", "--test_mode=AccuracyOnly", &answers, &port]);
    assert!(out.status.success(), "{}", shown(&out));
    let text = std::fs::read_to_string(scored_accuracy(&cwd)).unwrap();
    assert_eq!(text, "Word Error Rate: 0.0%, accuracy=100.0%\n", "the stand-in answers each clip's transcript");

    let perf = ["run_harness", "--scenarios=offline", "--dataset=real", "--min_duration=1000", "--offline_expected_qps=200", &answers, &port];
    let audit = [
        "run_audit_harness",
        "--scenarios=offline",
        "--dataset=real",
        "--min_duration=1000",
        "--offline_expected_qps=200",
        "--audit_tests=TEST01",
        "--audit_retries=0",
        "--force",
        &answers,
        &port,
    ];
    test01_passes(&run, &perf, &audit).unwrap_or_else(|attempts| panic!("{attempts}"));

    // A clip gone: named with its sample before anything starts (exit status 4).
    std::fs::remove_file(dir.join("dev-all-repack/3752-4944_0.wav")).unwrap();
    let out = run(&["run_harness", "--scenarios=offline", "--dataset=real", "--test_mode=AccuracyOnly", &answers, &port]);
    assert_eq!(out.status.code(), Some(4), "{}", shown(&out));
    assert!(shown(&out).contains("sample 3: its WAV file is at neither /data/dev-all-repack/3752-4944_0.wav nor "), "{}", shown(&out));
}
