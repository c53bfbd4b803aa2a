//! The power commands where no GPU and no power-dev run is needed: `power_set_maxq_state` refuses a
//! selection without a power limit before touching NVML, `power_check_sources` names what it cannot
//! use, and `ptd_standin` listens where power-dev's server tells PTDaemon to (its `-p` after `--`).

use super::{mlperf, scratch, shown};
use mlperf_runtime::error::exit;
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
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
}

#[test]
fn ptd_standin_takes_ptdaemons_command_line_and_answers_hello() {
    let cwd = scratch("ptd-standin");
    let port = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port().to_string();
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
