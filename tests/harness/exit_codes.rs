//! The README's exit-code table, one quick command per status. FAILED (6) is asserted by the LLM
//! fault tests (`llm::fault`), a signal's 128 + N by `signals`, a failed audit's 7 by `cpu_engine`.

use super::{Command, detail_logs, mlperf, scratch, shown};
use mlperf_runtime::error::exit;

fn code(out: &std::process::Output) -> Option<i32> {
    out.status.code()
}

#[test]
fn each_kind_of_ending_has_its_exit_status() {
    let cwd = scratch("exit-codes");
    let resnet50 = ["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--min_duration=100"];
    let run = |extra: &[&str]| mlperf(&cwd, &[&resnet50[..], extra].concat());

    // 1,024 SingleStream queries of 1 ms each.
    let valid = run(&["--scenarios=singlestream", "--backend=fixed_latency", "--backend_latency_us=1000", "--single_stream_expected_latency_ns=1000000"]);
    assert_eq!(code(&valid), Some(exit::OK), "{}", shown(&valid));

    // A null SUT answers an Offline run's queries at once, before min_duration: INVALID.
    let invalid = run(&["--scenarios=offline", "--backend=null"]);
    assert_eq!(code(&invalid), Some(exit::INVALID), "{}", shown(&invalid));
    assert!(shown(&invalid).contains("error: 1 of 1 runs INVALID; the table says what to change"), "{}", shown(&invalid));

    for usage in [&["--scenarios=singlestream", "--backend=null", "--progress_interval=0"][..], &["--scenarios=sometimes"]] {
        let out = run(usage);
        assert_eq!(code(&out), Some(exit::USAGE), "{usage:?}: {}", shown(&out));
    }

    // The selection refuses it (CPU-dev has no retinanet config) ...
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=retinanet", "--scenarios=offline"]);
    assert_eq!(code(&out), Some(exit::CONFIG), "{}", shown(&out));
    // ... or the run's child does, before LoadGen starts (no CPU engine for an LLM).
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=llama3.1-8b", "--scenarios=offline", "--engine=cpu"]);
    assert_eq!(code(&out), Some(exit::CONFIG), "{}", shown(&out));
    assert!(shown(&out).contains("no cpu engine for llama3.1-8b") && shown(&out).contains("its config cannot run here"), "{}", shown(&out));

    // Real ImageNet asked for, an empty scratch space: the run names what is missing.
    let empty = cwd.join("empty-scratch");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--dataset=real", "--min_duration=100"])
        .current_dir(&cwd)
        .env("MLPERF_SCRATCH_PATH", &empty)
        .output()
        .unwrap();
    assert_eq!(code(&out), Some(exit::DATA), "{}", shown(&out));
    assert!(shown(&out).contains("the data of resnet50 is not ready") && shown(&out).contains("its data is missing or unusable"), "{}", shown(&out));
    let run_logs: Vec<_> = mlperf_runtime::fsutil::walk_files(&cwd.join("build")).into_iter().filter(|p| p.ends_with("mlperf_run.log")).collect();
    assert!(run_logs.iter().any(|p| std::fs::read_to_string(p).unwrap().contains("the data of resnet50 is not ready")), "the child's error is in its run log");

    // A directory that is no submission: the check's findings fail it.
    let not_a_tree = cwd.join("not-a-submission");
    std::fs::create_dir_all(not_a_tree.join("closed")).unwrap();
    let out = mlperf(&cwd, &["check_submission", "--input", not_a_tree.to_str().unwrap()]);
    assert_eq!(code(&out), Some(exit::CHECK_FAILED), "{}", shown(&out));

    assert_eq!(detail_logs(&cwd).len(), 2, "only the test-backend runs reached LoadGen");
}
