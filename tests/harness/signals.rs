//! Stopping runs: SIGINT to the whole process group (a terminal's Ctrl-C) and SIGTERM / SIGHUP to
//! the parent alone (Slurm, systemd, `docker stop`, a closed terminal), during Offline runs of the
//! CPU engine and Server runs of the fixed-latency device, and the SIGKILL of the process that
//! started the run's group (`MLPERF_STOP_WITH`). Each must end with a non-zero exit, ABORTED in the
//! table, readable partial logs, and no process of the run left alive.

use super::cpu_engine::{mlperf_cpu_command, synthetic_scratch};
use super::{detail_log_paths, scratch};
use mlperf_runtime::rundir::logs::DetailLog;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const SIGHUP: i32 = 1;
const SIGINT: i32 = 2;
const SIGKILL: i32 = 9;
const SIGTERM: i32 = 15;

unsafe extern "C" {
    fn kill(pid: i32, sig: i32) -> i32;
}

/// Whether any process of process group `group` is alive (kill(2) with signal 0 probes).
fn group_alive(group: u32) -> bool {
    // SAFETY: kill(2) with signal 0 sends nothing; a negative pid names the process group.
    unsafe { kill(-(group as i32), 0) == 0 }
}

/// Starts `command` in `cwd` in a process group of its own and waits until LoadGen logs.
fn start(name: &str, cwd: &Path, mut command: Command) -> Child {
    let child = command.current_dir(cwd).process_group(0).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while detail_log_paths(cwd).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!detail_log_paths(cwd).is_empty(), "{name}: LoadGen never started");
    std::thread::sleep(Duration::from_millis(500));
    child
}

/// Starts `command` ([`start`]), sends `signal` to the group or to the parent alone, and checks how
/// the run ended ([`assert_aborted`]).
fn stop(name: &str, command: fn() -> Command, signal: i32, whole_group: bool) {
    let cwd = scratch(name);
    let child = start(name, &cwd, command());
    let group = child.id();
    let target = if whole_group { -(group as i32) } else { group as i32 };
    // SAFETY: plain kill(2) of the process (group) this test started.
    assert_eq!(unsafe { kill(target, signal) }, 0, "{name}: signal sent");
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert_aborted(name, &cwd, group, out.status.code(), &stdout, &stderr, signal);
}

/// A run stopped by `signal`: its exit status, ABORTED in the table, one readable partial log, the
/// marker naming the signal, and no process of group `group` left alive.
fn assert_aborted(name: &str, cwd: &Path, group: u32, code: Option<i32>, stdout: &str, stderr: &str, signal: i32) {
    assert_eq!(code, Some(128 + signal), "{name}: exit status\n{stdout}\n{stderr}");
    assert!(stdout.contains("ABORTED") && !stderr.contains("panicked") && !stderr.contains("overflowed"), "{name}:\n{stdout}\n{stderr}");
    let logs = detail_log_paths(cwd);
    assert_eq!(logs.len(), 1, "{name}: no run starts after the signal");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    assert!(text.starts_with(":::MLLOG"), "{name}: a readable detail log");
    DetailLog::parse(&text).expect("every line of the partial log parses");
    let dir = logs[0].parent().unwrap();
    let marker = std::fs::read_to_string(dir.join("ABORTED")).unwrap();
    assert!(["SIGINT", "SIGTERM", "SIGHUP"].contains(&marker.trim()), "{marker}");
    assert!(!dir.join("mlperf_log_trace.json").exists(), "the empty trace is not kept");
    let deadline = Instant::now() + Duration::from_secs(5);
    while group_alive(group) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!group_alive(group), "{name}: a process of the run outlived it");
}

/// Two Offline runs (the second must never start) of CPU-dev's CPU engine.
fn cpu_offline() -> Command {
    let mut command = mlperf_cpu_command(synthetic_scratch());
    command.args(["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline,singlestream", "--offline_expected_qps=2000", "--min_duration=60000"]);
    command
}

/// Server then Offline runs of a fixed-latency device on a datacenter system.
fn fixed_server() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mlperf"));
    command.args([
        "run_harness",
        "--system_name=DGX-H100_H100-SXM-80GBx1",
        "--benchmarks=resnet50",
        "--scenarios=server,offline",
        "--backend=fixed_latency",
        "--backend_latency_us=2000",
        "--server_target_qps=1000",
        "--min_duration=60000",
    ]);
    command
}

#[test]
fn ctrl_c_to_the_process_group_stops_an_offline_run_of_the_cpu_engine() {
    stop("sigint-cpu-offline", cpu_offline, SIGINT, true);
}

#[test]
fn sigterm_to_the_parent_stops_an_offline_run_of_the_cpu_engine() {
    stop("sigterm-cpu-offline", cpu_offline, SIGTERM, false);
}

#[test]
fn ctrl_c_to_the_process_group_stops_a_server_run() {
    stop("sigint-server", fixed_server, SIGINT, true);
}

#[test]
fn sigterm_and_sighup_to_the_parent_stop_a_server_run() {
    stop("sigterm-server", fixed_server, SIGTERM, false);
    stop("sighup-server", fixed_server, SIGHUP, false);
}

/// What `run_harness_power` SIGKILLed leaves: the kernel stops power-dev's client (its group's
/// leader), but not the shell the client runs our run_harness through. Here a shell stands for the
/// killed process: it names itself in MLPERF_STOP_WITH as `signals::ChildGroup` does, and an inner
/// shell (the survivor) runs the workload and records its exit status. The run must stop as on
/// SIGTERM once its starter is gone, leaving nothing.
#[test]
fn a_run_stops_when_the_process_that_started_its_group_is_killed() {
    let name = "stop-with";
    let cwd = scratch(name);
    let workload = cpu_offline();
    let mut starter = Command::new("sh");
    starter
        .args(["-c", &format!("{}=$$ sh -c '\"$@\" > out.txt 2> err.txt; echo $? > status.txt' sh \"$@\" & wait", mlperf_runtime::signals::STOP_WITH), "sh"])
        .arg(workload.get_program())
        .args(workload.get_args())
        .envs(workload.get_envs().filter_map(|(k, v)| Some((k, v?))));
    let mut starter = start(name, &cwd, starter);
    let group = starter.id();
    starter.kill().unwrap();
    assert_eq!(starter.wait().unwrap().signal(), Some(SIGKILL));
    let status = cwd.join("status.txt");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !status.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let read = |file: &str| std::fs::read_to_string(cwd.join(file)).unwrap_or_default();
    let code = read("status.txt").trim().parse().ok();
    assert_aborted(name, &cwd, group, code, &read("out.txt"), &read("err.txt"), SIGTERM);
}
