//! The power commands where no GPU and no power-dev run is needed: `power_set_maxq_state` refuses a
//! selection without a power limit before touching NVML, `power_check_sources` names what it cannot
//! use, and `ptd_standin` listens where power-dev's server tells PTDaemon to (its `-p` after `--`).

use super::{free_port, mlperf, scratch, shown};
use mlperf_runtime::error::exit;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

#[test]
fn power_commands_refuse_what_they_cannot_use() {
    let cwd = scratch("power-commands");
    let out = mlperf(&cwd, &["power_set_maxq_state", "--system_name=CPU-dev", "--benchmarks=resnet50"]);
    assert_eq!(out.status.code(), Some(exit::CONFIG), "{}", shown(&out));
    assert!(shown(&out).contains("no selected MaxQ config sets `power_limit`"), "{}", shown(&out));
    assert!(!cwd.join("build/logs/power_state.json").exists());
    let out = mlperf(&cwd, &["power_check_sources", "no-power-dev-here"]);
    assert_eq!(out.status.code(), Some(exit::DATA), "{}", shown(&out));
    assert!(shown(&out).contains("not a power-dev checkout") && shown(&out).contains("c4b3ad8"), "{}", shown(&out));
    let out =
        mlperf(&cwd, &["run_harness_power", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline", "--power_dev=no-power-dev-here", "--ntp_server=127.0.0.1"]);
    assert_eq!(out.status.code(), Some(exit::DATA), "{}", shown(&out));
    assert!(shown(&out).contains("no-power-dev-here: not a power-dev checkout"), "{}", shown(&out));
    assert!(!cwd.join("build/logs").exists(), "nothing ran");
}

#[test]
fn ptd_standin_takes_ptdaemons_command_line_and_answers_hello() {
    let cwd = scratch("ptd-standin");
    let port = free_port().to_string();
    let log = cwd.join("ptd_logfile_1.log");
    // The command line power-dev's server builds for a WT310 over USB, behind the wrapper's `--`.
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(["ptd_standin", "--watts=150", "--period_ms=50", "--", "-l", log.to_str().unwrap(), "-p", &port, "-U", "49", "C2PH13047V"])
        .current_dir(&cwd)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let stream = loop {
        match TcpStream::connect(format!("127.0.0.1:{port}")) {
            Ok(s) => break s,
            Err(e) => {
                assert!(started.elapsed() < Duration::from_secs(30), "ptd_standin never listened on {port}: {e}");
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    };
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut ask = |command: &str| {
        (&stream).write_all(format!("{command}\r\n").as_bytes()).unwrap();
        let mut line = String::new();
        reader.read_line(&mut line).unwrap();
        line
    };
    assert_eq!(ask("Hello"), "Hello, PTDaemon here!\r\n");
    assert!(ask("Go,1000,0,s_ranging").starts_with("Starting untimed measurement"));
    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(ask("Stop"), "Stopping untimed measurement\r\n");
    child.kill().unwrap();
    let out = child.wait_with_output().unwrap();
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(printed.contains(": Uncertainty checking for YokogawaWT310 is activated\n") && printed.contains(": Go with mark 's_ranging'\n"), "{printed}");
    let logged = std::fs::read_to_string(&log).unwrap();
    assert!(logged.lines().next().is_some_and(|l| l.contains(",Watts,150.") && l.ends_with(",Mark,s_ranging")), "{logged}");
}

/// power-dev's own server code (unmodified, imported from the checkout) driving the stand-in
/// through a whole session: its Ptd starts `mlperf ptd_standin` through a wrapper as `[ptd] ptd`,
/// and its Session runs ranging then testing (MLPP_DEBUG: 0.5 s sleeps instead of 10 s). The
/// session tree is copied out before the server's temporary directory goes.
const DRIVE_SESSION: &str = r#"
import json, os, shutil, sys, time
checkout, here, out = sys.argv[1:4]
sys.path.insert(0, checkout)
os.environ["MLPP_DEBUG"] = "1"
from ptd_client_server.lib import server as s, summary as summarylib, source_hashes
source_hashes.init()
cfg = os.path.join(here, "server.conf")
with open(cfg, "w") as f:
    f.write(f"[server]\nntpServer = 127.0.0.1\nlisten = 127.0.0.1 4950\n[ptd]\nptd = {here}/ptd-standin.sh\n"
            f"[analyzer1]\ndeviceType = 49\ninterfaceFlag = -U\ndevicePort = C2PH13047V\nnetworkPort = {sys.argv[4]}\n")
server = s.Server(s.ServerConfig(cfg))
server._summary = summarylib.Summary()
session = s.Session(server, "standin")
assert session.start(s.Mode.RANGING) is True
time.sleep(2)
assert session.stop(s.Mode.RANGING) is True
assert session.start(s.Mode.TESTING) is True
time.sleep(2)
assert session.stop(s.Mode.TESTING) is True
session.drop()
shutil.copytree(session.log_dir_path, out)
with open(os.path.join(out, "ptd_messages.json"), "w") as f:
    json.dump({"id": session._id, "max_amps": session._maxAmps, "messages": session._ptd[0]._messages.to_json()}, f)
"#;

/// `MLPERF_POWER_DEV=/path/to/power-dev` (a checkout of c4b3ad8) and python3.
#[test]
#[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV) and python3"]
fn power_devs_server_runs_a_session_against_the_stand_in() {
    let checkout = std::env::var("MLPERF_POWER_DEV").expect("MLPERF_POWER_DEV=/path/to/power-dev checkout at c4b3ad8");
    let cwd = scratch("ptd-standin-session");
    let wrapper = cwd.join("ptd-standin.sh");
    let exe = env!("CARGO_BIN_EXE_mlperf");
    std::fs::write(&wrapper, format!("#!/bin/sh\nexec {exe} ptd_standin --watts 120 --testing_watts 118 --period_ms 100 -- \"$@\"\n")).unwrap();
    std::fs::set_permissions(&wrapper, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let port = free_port().to_string();
    let out = cwd.join("session");
    let ran = std::process::Command::new("python3").args(["-c", DRIVE_SESSION, &checkout, cwd.to_str().unwrap(), out.to_str().unwrap(), &port]).output().unwrap();
    assert!(ran.status.success(), "{}", shown(&ran));
    let record: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(out.join("ptd_messages.json")).unwrap()).unwrap();
    let id = record["id"].as_str().unwrap();
    // The server's ranging maxima, read from the -l log the stand-in wrote: 120.4 W at 230 V, PF 0.98.
    let max_amps: f64 = record["max_amps"][0].as_str().unwrap().parse().unwrap();
    assert!((max_amps - 120.4 / (230.0 * 0.98)).abs() < 1e-5, "{record}");
    let messages = record["messages"].as_array().unwrap();
    let reply = |cmd: &str| messages.iter().filter(|m| m["cmd"].as_str().is_some_and(|c| c.starts_with(cmd))).map(|m| m["reply"].as_str().unwrap().to_string()).collect::<Vec<_>>();
    assert_eq!(reply("Hello"), ["Hello, PTDaemon here!"]);
    assert!(reply("SR,").iter().all(|r| r.starts_with("Range ") && r.ends_with(" changed")), "{messages:?}");
    assert_eq!(reply("Go,1000,0,").len(), 2);
    assert!(reply("Go,1000,0,").iter().all(|r| r == "Starting untimed measurement, maximum 500000 samples at 1000ms with 0 rampup samples"));
    assert_eq!(reply("Stop"), ["Stopping untimed measurement"; 2]);
    for (dir, mode, watts) in [("ranging", "ranging", 120.0), ("run_1", "testing", 118.0)] {
        let spl = std::fs::read_to_string(out.join(dir).join("spl.txt")).unwrap();
        let readings: Vec<f64> = spl
            .lines()
            .filter(|l| l.starts_with("Time,"))
            .map(|l| {
                assert!(l.ends_with(&format!(",Mark,{id}_{mode}")), "{l}");
                l.split(',').nth(3).unwrap().parse().unwrap()
            })
            .collect();
        assert!(readings.len() >= 5 && readings.iter().all(|w| (watts..watts + 0.45).contains(w)), "{dir}: {spl}");
    }
    let ptd_out = std::fs::read_to_string(out.join("run_1/ptd_out.txt")).unwrap();
    assert!(ptd_out.contains("Power: Watts,118."), "{ptd_out}");
    assert!(out.join("power/ptd_logs.txt").is_file());
}

/// What a power run on loopback left: the command's output and its working directory.
struct PowerRun {
    out: std::process::Output,
    cwd: super::Scratch,
}

/// The processes (pid and command line) whose working directory is under `dir`: what a run there
/// left behind. Every process this file's runs start works there or below.
fn left_running(dir: &std::path::Path) -> Vec<String> {
    let dir = dir.canonicalize().unwrap();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit())))
        .filter(|e| std::fs::read_link(e.path().join("cwd")).is_ok_and(|cwd| cwd.starts_with(&dir)))
        // A zombie runs nothing; its parent (gone or not) reaps it.
        .filter(|e| std::fs::read_to_string(e.path().join("stat")).is_ok_and(|stat| !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z')))
        .map(|e| format!("{} {}", e.file_name().to_string_lossy(), std::fs::read_to_string(e.path().join("cmdline")).unwrap_or_default().replace('\0', " ")))
        .collect()
}

/// `run_harness_power` of resnet50 `scenario` on CPU-dev (`--test_run`) on loopback with the
/// unmodified power-dev (`MLPERF_POWER_DEV`, a checkout of c4b3ad8) and root (NTP's port 123):
/// scripts/power_director.sh runs power-dev's server with the PTD stand-in (`standin` its flags)
/// and the NTP stand-in, a process group stopped whole when the run ends, however it ends;
/// power-dev's client runs our run_harness twice. Nothing the run started may be left running.
fn power_run(name: &str, scenario: &str, standin: &str) -> PowerRun {
    // The NTP stand-in listens on port 123 itself: one power run at a time.
    static NTP_PORT: Mutex<()> = Mutex::new(());
    let _ntp = NTP_PORT.lock().unwrap_or_else(PoisonError::into_inner);
    let checkout = std::env::var("MLPERF_POWER_DEV").expect("MLPERF_POWER_DEV=/path/to/power-dev checkout at c4b3ad8");
    let cwd = scratch(name);
    let exe = env!("CARGO_BIN_EXE_mlperf");
    // The server's port and, next to it, the stand-in's (power_director.sh's rule).
    let port = free_port();
    let director_dir = cwd.join("director");
    let mut director = std::process::Command::new(concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/power_director.sh"));
    director.args([exe, &checkout, director_dir.to_str().unwrap(), &port.to_string()]).args(standin.split_whitespace()).args(["--period_ms", "250"]).current_dir(&cwd);
    let director = mlperf_runtime::signals::ChildGroup::spawn(&mut director, Duration::from_secs(5)).unwrap();
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "power-dev's server never listened: {}", std::fs::read_to_string(director_dir.join("server.out")).unwrap_or_default());
        std::thread::sleep(Duration::from_millis(200));
    }
    let space = cwd.join("scratch");
    let out = std::process::Command::new(exe)
        .args(["run_harness_power", "--system_name=CPU-dev", "--benchmarks=resnet50", "--test_run", "--ntp_server=127.0.0.1"])
        .arg(format!("--scenarios={scenario}"))
        .arg(format!("--power_dev={checkout}"))
        .arg(format!("--director_port={port}"))
        .env("MLPERF_SCRATCH_PATH", &space)
        .current_dir(&cwd)
        .output()
        .unwrap();
    println!("{name}: exit {:?}\n{}", out.status.code(), shown(&out));
    // The client and its workload went with run_harness_power; the director goes now.
    let left = left_running(&cwd);
    drop(director);
    assert!(left.iter().all(|p| p.contains("power_director.sh") || p.contains("server.py") || p.contains("_standin")), "run_harness_power left these running: {left:#?}");
    let left = left_running(&cwd);
    assert!(left.is_empty(), "the director left these running: {left:#?}");
    PowerRun { out, cwd }
}

/// The whole workflow on loopback ([`power_run`]): the session lands in the testing run's
/// directory, marked non-submittable (the stand-in), the table shows its power, and power-dev's own
/// compliance/check.py accepts it.
#[test]
#[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV), python3 and root (port 123)"]
fn run_harness_power_through_power_devs_client_and_server() {
    power_workflow("run-harness-power", "offline", "118.");
}

/// SingleStream's power metric is energy per query: the table says it in millijoules.
#[test]
#[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV), python3 and root (port 123)"]
fn run_harness_power_singlestream_reports_energy_per_query() {
    power_workflow("run-harness-power-ss", "singlestream", "millijoules");
}

/// The whole workflow of one scenario: `power_line` is in the table's power line.
fn power_workflow(name: &str, scenario: &str, power_line: &str) {
    let checkout = std::env::var("MLPERF_POWER_DEV").expect("MLPERF_POWER_DEV");
    let PowerRun { out, cwd } = power_run(name, scenario, "--watts 120 --testing_watts 118");
    assert!(out.status.success(), "{}\nserver: {}", shown(&out), std::fs::read_to_string(cwd.join("director/server.out")).unwrap_or_default());
    assert!(shown(&out).lines().any(|l| l.starts_with("    power: ") && l.contains(power_line)), "{}", shown(&out));
    let session = mlperf_runtime::fsutil::walk_files(&cwd.join("build/logs"))
        .into_iter()
        .find(|f| f.ends_with("power_session/power/server.json"))
        .and_then(|f| f.parent().and_then(|p| p.parent()).map(std::path::Path::to_path_buf))
        .expect("the session in the testing run's directory");
    // NVIDIA's summary (JSON) says the metric before the verdict, as the table does.
    // The testing run's log root (the ranging run's summary has no power).
    let summary = session.ancestors().map(|d| d.join("perf_harness_summary.json")).find(|f| f.is_file()).expect("the testing run's perf_harness_summary.json");
    let summary: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert!(summary.to_string().contains("power: ") && summary.to_string().contains(power_line), "{summary}");
    let marker = std::fs::read_to_string(session.parent().unwrap().join("NON_SUBMITTABLE.txt")).unwrap();
    assert!(marker.contains("power measured by the PTDaemon stand-in"), "{marker}");
    let check = std::process::Command::new("python3").arg(format!("{checkout}/compliance/check.py")).arg(&session).env("PYTHONPATH", &checkout).output().unwrap();
    println!("power-dev compliance/check.py {}:\n{}", session.display(), shown(&check));
    assert!(check.status.success(), "{}", shown(&check));
}

/// Each fault of the stand-in through the whole workflow: the typed error and its exit status,
/// and what was written so far kept (the client's output, the runs' logs).
fn power_fault(name: &str, standin: &str, says: &str, runs: usize, session_kept: bool) {
    let PowerRun { out, cwd } = power_run(name, "offline", standin);
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::DATA), "{}", shown(&out));
    assert!(shown(&out).contains(says), "{}", shown(&out));
    let files = mlperf_runtime::fsutil::walk_files(&cwd.join("build"));
    assert!(files.iter().any(|f| f.ends_with("client.out")), "the client's output is kept: {files:?}");
    let plans = files.iter().filter(|f| f.ends_with("run_plan.json") && !f.components().any(|c| c.as_os_str() == "power_session")).count();
    assert!(plans >= runs, "{plans} run directories kept, {runs} expected: {files:?}");
    assert_eq!(files.iter().any(|f| f.ends_with("power_session/power/server.json")), session_kept, "{files:?}");
}

#[test]
#[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV), python3 and root (port 123)"]
fn a_dropped_meter_connection_stops_the_power_run_keeping_the_ranging_run() {
    power_fault("power-fault-drop", "--watts 120 --drop_on _testing", "power measurement stopped", 1, false);
}

/// power-dev's server does not check the meter's replies to SR and Go: the session runs to its
/// end, and the power rules refuse the reply it recorded.
#[test]
#[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV), python3 and root (port 123)"]
fn a_meter_error_reply_is_refused_by_the_power_rules_keeping_the_session() {
    power_fault("power-fault-error", "--watts 120 --error_on SR,A", "PtdReply", 2, true);
}

#[test]
#[ignore = "needs a power-dev checkout (env MLPERF_POWER_DEV), python3 and root (port 123)"]
fn a_testing_run_below_95_percent_of_ranging_is_rejected_keeping_the_session() {
    power_fault("power-fault-ratio", "--watts 120 --testing_watts 100", "RangingRatio", 2, true);
}
