//! Runs broken on purpose (issue 37): flags that contradict each other, a user.conf LoadGen would
//! refuse or ignore, a run's process killed, and files that cannot be written mid-run. Each must
//! say what happened and where, with the right exit status, and lose nothing.

use super::{Command, assert_ran_invalid, detail_log_paths, detail_logs, mlperf, scratch, shown};
use mlperf_runtime::error::exit;
use mlperf_runtime::fsutil::walk_files;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Output, Stdio};
use std::time::{Duration, Instant};

/// RLIMIT_FSIZE's Linux number, and its `struct rlimit`.
const RLIMIT_FSIZE: i32 = 1;
#[repr(C)]
struct Rlimit {
    current: u64,
    max: u64,
}
const SIGKILL: i32 = 9;
const SIGXFSZ: i32 = 25;
const SIG_IGN: usize = 1;

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
    fn prlimit(pid: i32, resource: i32, new: *const Rlimit, old: *mut Rlimit) -> i32;
    fn signal(sig: i32, handler: usize) -> usize;
}

/// `mlperf run_harness` of CPU-dev's resnet50 with `flags`, started in `cwd`, on a device that
/// answers in 2 ms what LoadGen expects in 1: each run lasts its whole `min_duration` (a null
/// device answers SingleStream's queries in a fraction of it), time enough to act during it.
fn start_runs(cwd: &Path, flags: &[&str], configure: impl FnOnce(&mut Command)) -> Child {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mlperf"));
    let device = ["--backend=fixed_latency", "--backend_latency_us=2000", "--single_stream_expected_latency_ns=1000000"];
    command.args(["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50"]).args(device).args(flags).current_dir(cwd);
    configure(&mut command);
    command.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap()
}

/// Waits until LoadGen of the first run writes its detail log.
fn wait_for_loadgen(cwd: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while detail_log_paths(cwd).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!detail_log_paths(cwd).is_empty(), "LoadGen never started");
}

fn finish(child: Child) -> (Output, String, String) {
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout).to_string(), String::from_utf8_lossy(&out.stderr).to_string());
    (out, stdout, stderr)
}

#[test]
fn a_user_conf_with_bad_lines_is_refused_before_any_run_with_its_own_path_and_lines() {
    let cwd = scratch("user-conf-refused");
    let given = "# tuned by hand\nresnet50.SingleStream.target_qpz = 10\n*.Offlne.target_qps = 10\n*.SingleStream.min_duration = fast\n*.SingleStream.min_query_count = 64\n";
    std::fs::write(cwd.join("my.conf"), given).unwrap();
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--backend=null", "--user_conf_path=my.conf"]);
    let text = shown(&out);
    assert_eq!(out.status.code(), Some(exit::CONFIG), "{text}");
    for expected in [
        "--user_conf_path my.conf: 3 line(s) LoadGen would refuse or ignore; nothing ran",
        "my.conf:2: unknown key `target_qpz` (did you mean `target_qps`?)",
        "my.conf:3: unknown scenario `Offlne` (did you mean `Offline`?)",
        "my.conf:4: `*.SingleStream.min_duration = fast`: LoadGen refuses it (value needs to be integer or double)",
    ] {
        assert!(text.contains(expected), "{expected}:\n{text}");
    }
    assert!(!text.contains("my.conf:5") && !text.contains("LoadGen rejected"), "{text}");
    assert!(!cwd.join("build").exists(), "no run directory was made");
    assert_eq!(std::fs::read_to_string(cwd.join("my.conf")).unwrap(), given, "the user's file is untouched");
}

#[test]
fn a_killed_run_says_which_signal_killed_it() {
    let cwd = scratch("killed-run");
    let child = start_runs(&cwd, &["--scenarios=singlestream", "--min_duration=5000"], |_| {});
    wait_for_loadgen(&cwd);
    // The run's own process, a child of the parent this test started.
    let children = std::fs::read_to_string(format!("/proc/{0}/task/{0}/children", child.id())).unwrap();
    let run: i32 = children.split_whitespace().next().expect("the run's process").parse().unwrap();
    // SAFETY: plain kill(2) of a process this test's command started.
    assert_eq!(unsafe { kill(run, SIGKILL) }, 0);
    let (out, stdout, stderr) = finish(child);
    assert_eq!(out.status.code(), Some(exit::FAILED), "{stdout}\n{stderr}");
    assert!(stdout.contains("FAILED") && stdout.contains("the run failed: killed by signal 9 (SIGKILL)"), "{stdout}");
    assert!(!stdout.contains("None") && !stdout.contains("Some("), "{stdout}");
    assert_eq!(detail_logs(&cwd).len(), 1, "the partial detail log is kept");
    // The run directory says so too, for whoever reads it later (audits, staging).
    let failed = std::fs::read_to_string(detail_logs(&cwd)[0].0.parent().unwrap().join("FAILED.txt")).unwrap_or_default();
    assert!(failed.contains("killed by signal 9 (SIGKILL)"), "{failed}");
}

/// TEST01's accuracy reference: a FAILED run (its log cut) is passed over for an older one, and a
/// reference whose log does not read back is a data error before the audit runs, naming the run.
#[test]
fn an_audit_passes_over_a_failed_reference_and_refuses_a_corrupt_one_before_it_runs() {
    let cwd = scratch("audit-references");
    let select = ["--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline"];
    let complete = mlperf(&cwd, &[&["run_harness", "--backend=null", "--test_mode=AccuracyOnly"][..], &select].concat());
    assert!(complete.status.success(), "{}", shown(&complete));
    let logs = cwd.join("build/logs");
    let stamp = std::fs::read_dir(&logs).unwrap().flatten().map(|e| e.path()).find(|p| p.is_dir()).unwrap();
    // Two newer copies (timestamps sort by name): a tampered log, and a killed run's cut one.
    let run_of = |stamp: &Path| stamp.join("CPU-dev_RS/resnet/Offline");
    let (tampered, killed) = (logs.join("2999.01.01-00.00.00"), logs.join("2999.01.01-00.00.01"));
    for copy in [&tampered, &killed] {
        assert!(Command::new("cp").arg("-r").arg(&stamp).arg(copy).status().unwrap().success());
        let log = run_of(copy).join("mlperf_log_accuracy.json");
        let text = std::fs::read_to_string(&log).unwrap();
        std::fs::write(&log, &text[..text.len() / 2]).unwrap();
    }
    std::fs::write(run_of(&killed).join("FAILED.txt"), "the run failed: killed by signal 9 (SIGKILL)\n").unwrap();
    let out = mlperf(&cwd, &[&["run_audit_harness", "--audit_tests=TEST01", "--backend=null"][..], &select].concat());
    assert_eq!(out.status.code(), Some(exit::DATA), "{}", shown(&out));
    let text = shown(&out);
    assert!(text.contains("TEST01's reference accuracy log is unusable") && text.contains("2999.01.01-00.00.00/CPU-dev_RS/resnet/Offline"), "{text}");
    assert!(!text.contains("2999.01.01-00.00.01"), "the FAILED run is never a reference: {text}");
    assert!(!cwd.join("build/compliance_logs").exists() && !cwd.join("build/compliance").exists(), "nothing ran");
}

/// A file size limit of 0 on the parent once its first run has started (SIGXFSZ ignored, as a
/// full disk gives an error rather than a signal): the summary after the run cannot be written.
#[test]
fn a_file_that_cannot_be_written_mid_run_still_shows_the_table_and_leaves_no_temporary() {
    let cwd = scratch("write-error");
    let child = start_runs(&cwd, &["--scenarios=singlestream,multistream", "--min_duration=3000"], |command| {
        // SAFETY: signal(2) in the forked child before exec, async-signal-safe; an ignored
        // signal stays ignored across exec.
        unsafe {
            command.pre_exec(|| {
                signal(SIGXFSZ, SIG_IGN);
                Ok(())
            })
        };
    });
    wait_for_loadgen(&cwd);
    let none = Rlimit { current: 0, max: 0 };
    // SAFETY: prlimit(2) on the process this test started, with a valid rlimit.
    assert_eq!(unsafe { prlimit(child.id() as i32, RLIMIT_FSIZE, &none, std::ptr::null_mut()) }, 0);
    let (out, stdout, stderr) = finish(child);
    assert_eq!(out.status.code(), Some(exit::OTHER), "{stdout}\n{stderr}");
    assert!(stdout.contains("SingleStream") && !stdout.contains("MultiStream"), "the finished run's row, and no other: {stdout}");
    assert!(stderr.contains("1 of 2 runs finished before the error below; the rest did not run"), "{stderr}");
    let error = stderr.lines().find(|l| l.starts_with("error: ")).unwrap_or_default();
    assert!(error.contains("cannot write") && error.contains("perf_harness_summary.json: File too large") && !error.contains(".tmp"), "{stderr}");
    let files = walk_files(&cwd.join("build"));
    assert!(!files.iter().any(|f| f.to_string_lossy().contains(".tmp")), "temporary files left: {files:?}");
    assert_eq!(detail_logs(&cwd).len(), 1, "the finished run's logs are kept, and no run started after the error");
}

#[test]
fn an_explicit_min_duration_beats_test_runs_and_non_submittable_records_what_ran() {
    let cwd = scratch("test-run-min-duration");
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--test_run", "--min_duration=200", "--backend=null"]);
    assert_ran_invalid(&out);
    let (path, log) = detail_logs(&cwd).remove(0);
    assert_eq!(log.u64("effective_min_duration_ms"), Some(200), "the flag, not --test_run's 60000");
    let dir = path.parent().unwrap();
    let reasons = std::fs::read_to_string(dir.join("NON_SUBMITTABLE.txt")).unwrap();
    assert!(reasons.contains("--test_run: min_duration 200 ms") && reasons.contains("command-line override --min_duration=200") && !reasons.contains("60000"), "{reasons}");
    let user_conf = std::fs::read_to_string(dir.join("user.conf")).unwrap();
    assert!(user_conf.contains("# --min_duration (command line, over --test_run)\nresnet50.SingleStream.min_duration = 200"), "{user_conf}");
}
