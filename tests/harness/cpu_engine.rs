//! The configured engine of the CPU-only system, through the real path: the README's main job (a
//! SubmissionRun test run: the accuracy set scored into accuracy.txt, then a performance run sized
//! by the rate probe), and TEST01's non-deterministic fallback through `run_audit_harness`, whose
//! failure staging must refuse.

use super::{detail_logs, empty_dir, scratch, shown};
use mlperf_runtime::fsutil::walk_files;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The scratch space with CPU-dev's synthetic ResNet50 model and its 50,000 labels, generated once
/// per test binary (about three minutes on two cores) for every test that runs the CPU engine.
pub fn synthetic_scratch() -> &'static Path {
    static SCRATCH: OnceLock<PathBuf> = OnceLock::new();
    SCRATCH.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-scratch/synthetic-scratch");
        // The calling test already holds its share of the machine.
        let cwd = empty_dir("synthetic-generate");
        let out = mlperf_cpu_command(&dir).args(["generate_engines", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline"]).current_dir(&cwd).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        dir
    })
}

/// `mlperf` with `scratch` as its scratch space.
pub fn mlperf_cpu_command(scratch: &Path) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mlperf"));
    command.env("MLPERF_SCRATCH_PATH", scratch);
    command
}

fn run(cwd: &Path, args: &[&str]) -> Output {
    mlperf_cpu_command(synthetic_scratch()).args(args).current_dir(cwd).output().unwrap()
}

#[test]
fn the_readme_main_job_scores_the_accuracy_set_and_runs_valid_at_the_probed_rate() {
    let cwd = scratch("cpu-submission-run");
    let out = run(&cwd, &["run", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline", "--test_run", "--test_mode=SubmissionRun"]);
    let printed = shown(&out);
    assert!(out.status.success(), "{printed}");
    let scenario = walk_files(&cwd.join("build/logs"))
        .into_iter()
        .find(|p| p.ends_with("accuracy/accuracy.txt"))
        .expect("a scored accuracy run")
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();

    // The accuracy run: every sample, scored against the CPU engine's own labels.
    let accuracy = scenario.join("accuracy");
    assert_eq!(std::fs::read_to_string(accuracy.join("accuracy.txt")).unwrap(), "accuracy=100.000%, good=50000, total=50000\n");
    assert!(accuracy.join("ACCURACY_NOTE.txt").is_file() && accuracy.join("mlperf_log_accuracy.json").is_file());
    assert!(printed.lines().any(|l| l.contains("AccuracyOnly") && l.contains("ACCURACY") && l.contains("50000")), "{printed}");

    // The performance run: the probe's rate in user.conf and LoadGen's settings, and VALID.
    let performance = scenario.join("performance");
    let probe = std::fs::read_to_string(performance.join("probe.txt")).unwrap();
    assert!(probe.starts_with("rate probe: the engines alone ran") && probe.contains("1.5x headroom"), "{probe}");
    let user_conf = std::fs::read_to_string(performance.join("user.conf")).unwrap();
    assert!(user_conf.contains("# offline_expected_qps from probe.txt"), "{user_conf}");
    let (_, log) = detail_logs(&cwd).into_iter().find(|(p, _)| p.starts_with(&performance)).unwrap();
    assert_eq!(log.str("result_validity"), Some("VALID"), "{printed}");
    let probed: f64 = probe.split("offline_expected_qps = ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
    assert_eq!(log.f64("effective_target_qps"), Some(probed));
    assert!(printed.lines().any(|l| l.contains("PerformanceOnly") && l.contains("VALID")), "{printed}");
    assert!(std::fs::read_to_string(performance.join("NON_SUBMITTABLE.txt")).unwrap().contains("probe"));
}

#[test]
fn a_failed_test01_fallback_is_verified_and_never_staged() {
    let cwd = scratch("cpu-test01-fallback");
    let select = ["--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline"];
    let with = |command: &str, extra: &[&str]| -> Vec<String> { [command].iter().chain(&select).chain(extra).map(|s| s.to_string()).collect() };
    let call = |args: Vec<String>| run(&cwd, &args.iter().map(String::as_str).collect::<Vec<_>>());
    // References from the test doubles, whose answers are not the CPU engine's: the audit's
    // sampled responses differ, so TEST01 falls back to scoring both logs, and its accuracy
    // (the doubles' labels against the CPU engine's) fails the round's delta.
    let fixed = ["--offline_expected_qps=3200", "--min_duration=2000"];
    assert!(call(with("run_harness", &["--backend=null", "--test_mode=AccuracyOnly"])).status.success());
    assert!(call(with("run_harness", &[&["--backend=fixed_latency", "--backend_latency_us=2500"][..], &fixed].concat())).status.success());
    let out = call(with("run_audit_harness", &[&["--audit_tests=TEST01"][..], &fixed].concat()));
    let printed = shown(&out);
    assert!(!out.status.success() && printed.lines().any(|l| l.contains("TEST01") && l.contains("FAIL") && l.contains("fallback")), "{printed}");
    let test01 = cwd.join("build/compliance/CPU-dev_RS/resnet/Offline/TEST01");
    for file in ["accuracy/baseline_accuracy.txt", "accuracy/compliance_accuracy.txt", "verify_accuracy.txt"] {
        assert!(test01.join(file).is_file(), "{file}");
    }
    assert_eq!(std::fs::read_to_string(test01.join("accuracy/compliance_accuracy.txt")).unwrap().lines().next().unwrap().split(',').next().unwrap(), "accuracy=100.000%");

    let out = call(with("stage_compliance", &["--allow-non-submittable"]));
    let printed = shown(&out);
    assert!(!out.status.success() && printed.contains("TEST01: verification failed") && printed.contains("baseline") && printed.contains("more than the allowed"), "{printed}");
    assert!(!cwd.join("build/submission/closed/Example/results/CPU-dev_RS/resnet/Offline/TEST01").exists(), "a refusal stages nothing");
}
