//! One power measurement through power-dev's own client (`ptd_client_server/client.py`, run
//! unmodified from the checkout the user names, checked first against the round's accepted sources):
//! it syncs the clocks with the NTP server and the director, runs the workload under a ranging
//! measurement then under the testing one, copies each run's LoadGen logs and fetches the director's
//! files into `<outdir>/<session>/` (`power/`, `ranging/`, `run_1/`). What stopped it is read back
//! from its own log lines, so each failure says what to fix; everything written so far is kept.

use super::error::PowerError;
use super::sources::check_checkout;
use crate::signals::ChildGroup;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Where the director and the time are.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub checkout: PathBuf,
    pub director: String,
    pub port: u16,
    pub ntp: String,
    pub python: String,
}

/// How long the client and its workload get to stop after SIGTERM (run_harness forwards it to its
/// LoadGen child, which flushes its logs) before the group is killed.
const STOP_GRACE: std::time::Duration = std::time::Duration::from_secs(20);

/// What the client's log says stopped it: its own messages, in the order it can meet them.
const FAILURES: [(&str, Failure); 6] = [
    ("Could not connect to the server", Failure::DirectorUnreachable),
    ("Could not synchronize", Failure::ClockOffset),
    ("time difference between the client and the server is more than", Failure::ClockOffset),
    ("The server is disconnected", Failure::SessionDropped),
    ("returned non-zero exit status", Failure::Workload),
    ("Got an unexpecting response from the server", Failure::DirectorRefused),
];

/// Why power-dev's client stopped, as its log tells it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    DirectorUnreachable,
    ClockOffset,
    SessionDropped,
    DirectorRefused,
    Workload,
    Other,
}

impl Failure {
    /// The first known failure in the client's output.
    pub fn of_log(log: &str) -> Failure {
        FAILURES.iter().filter_map(|(text, failure)| log.find(text).map(|at| (at, *failure))).min_by_key(|(at, _)| *at).map_or(Failure::Other, |(_, f)| f)
    }

    pub fn remedy(self, options: &ClientOptions) -> String {
        let director = format!("{}:{}", options.director, options.port);
        match self {
            Failure::DirectorUnreachable => format!(
                "the director {director} did not answer: start power-dev's server there (`python3 ptd_client_server/server.py -c server.conf`) and check --director and --director_port"
            ),
            Failure::ClockOffset => {
                format!("the clocks differ by more than power-dev's 400 ms: sync this host and the director with the NTP server {} (chrony or ntpd) and rerun", options.ntp)
            }
            Failure::SessionDropped => format!("the director {director} dropped the session: see its server log and PTDaemon's, then rerun"),
            Failure::DirectorRefused => {
                format!("the director {director} refused a step of the session (its server log says why: PTDaemon not started, a range it could not set); fix it and rerun")
            }
            Failure::Workload => "the workload (our run_harness) failed: its error is above in this log; fix it and rerun".into(),
            Failure::Other => "see the client's log".into(),
        }
    }
}

/// Runs one power measurement of `workload` (a command line whose LoadGen logs go under `indir`),
/// labelled `label`; returns the session directory the client wrote under `outdir`. The client's
/// output goes to `<outdir>/client.out`.
pub fn measure(options: &ClientOptions, label: &str, workload: &[String], indir: &Path, outdir: &Path) -> Result<PathBuf, PowerError> {
    let dir = check_checkout(&options.checkout)?;
    std::fs::create_dir_all(outdir).map_err(|source| PowerError::Read { path: outdir.to_path_buf(), source })?;
    let log_path = outdir.join("client.out");
    let log = std::fs::File::create(&log_path).map_err(|source| PowerError::Read { path: log_path.clone(), source })?;
    let err = log.try_clone().map_err(|source| PowerError::Read { path: log_path.clone(), source })?;
    let root = dir.parent().unwrap_or(&dir).to_path_buf();
    let command_line = workload.iter().map(|a| shell_quote(a)).collect::<Vec<_>>().join(" ");
    let mut command = Command::new(&options.python);
    command
        .arg(dir.join("client.py"))
        .args(["-a", &options.director, "-p", &options.port.to_string(), "-n", &options.ntp, "-l", label])
        .arg("-w")
        .arg(&command_line)
        .arg("-L")
        .arg(indir)
        .arg("-o")
        .arg(outdir)
        .env("PYTHONPATH", &root)
        .stdin(Stdio::null())
        .stdout(log)
        .stderr(err);
    let client_error = |source| PowerError::Client { python: options.python.clone(), source };
    // The client and the workload it starts are one process group, stopped whole on every way out
    // of here: a stop signal (forwarded), an error, or this process dying.
    let mut client = ChildGroup::spawn(&mut command, STOP_GRACE).map_err(client_error)?;
    let status = loop {
        if let Some(status) = client.try_wait().map_err(client_error)? {
            break status;
        }
        if let Some(signal) = crate::signals::received() {
            let status = client.stop().map_or_else(|| "killed after the grace period".to_string(), |s| crate::signals::ChildExit::of(s).to_string());
            return Err(PowerError::Stopped { signal, log: log_path, status });
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    };
    // Whatever the client left running (a workload it did not wait for) goes with it.
    drop(client);
    let text = std::fs::read_to_string(&log_path).unwrap_or_default();
    if !status.success() || !text.contains("Successful exit") {
        let failure = Failure::of_log(&text);
        let last: Vec<&str> = text.lines().rev().take(5).collect::<Vec<_>>().into_iter().rev().collect();
        return Err(PowerError::Measurement {
            log: log_path,
            status: crate::signals::ChildExit::of(status).to_string(),
            remedy: failure.remedy(options),
            last: last.join("\n  "),
            workload: failure == Failure::Workload,
        });
    }
    session_dir(outdir)
}

/// Copies `session` into the directory of its testing run under `log_dir` (the run whose
/// `mlperf_log_detail.txt` the client copied into `run_1/`), as [`super::session::SESSION_IN_RUN_DIR`],
/// checks it against the power rules there, and marks the run non-submittable where the stand-in
/// measured it ([`super::standin::caveats`]). Returns the run directory and the testing run's
/// average watts inside LoadGen's window.
pub fn keep_in_run_dir(session: &Path, log_dir: &Path) -> Result<(PathBuf, f64), PowerError> {
    use super::session::{SESSION_IN_RUN_DIR, Session, TESTING_DIR};
    use crate::layout::DETAIL_LOG;
    let read = |path: &Path| std::fs::read(path).map_err(|source| PowerError::Read { path: path.to_path_buf(), source });
    let testing = read(&session.join(TESTING_DIR).join(DETAIL_LOG))?;
    let run_dir = crate::fsutil::walk_files(log_dir)
        .into_iter()
        .filter(|f| f.file_name().is_some_and(|n| n == DETAIL_LOG) && !f.starts_with(session))
        .find(|f| std::fs::read(f).is_ok_and(|bytes| bytes == testing))
        .and_then(|f| f.parent().map(Path::to_path_buf))
        .ok_or_else(|| PowerError::NoSession { dir: log_dir.to_path_buf() })?;
    let to = run_dir.join(SESSION_IN_RUN_DIR);
    let copy_error = |source| PowerError::Copy { to: to.clone(), source };
    if to.exists() {
        return Err(copy_error(std::io::Error::new(std::io::ErrorKind::AlreadyExists, "a session is already there")));
    }
    for file in crate::fsutil::walk_files(session) {
        let dest = to.join(file.strip_prefix(session).expect("walked below the session"));
        std::fs::create_dir_all(dest.parent().expect("below the session")).map_err(copy_error)?;
        std::fs::copy(&file, &dest).map_err(copy_error)?;
    }
    let findings = super::rules::check(&to, false);
    if !findings.is_empty() {
        return Err(PowerError::Rejected { dir: to, findings: findings.iter().map(ToString::to_string).collect() });
    }
    // A stand-in's session is kept, and its run marked: never submittable.
    let caveats = super::standin::caveats(&to);
    if !caveats.is_empty() {
        crate::rundir::add_non_submittable(&run_dir, &caveats).map_err(|source| PowerError::Mark { dir: run_dir.clone(), source })?;
    }
    let watts = Session::read(&to).ok().and_then(|s| s.testing.average_watts()).unwrap_or(0.0);
    Ok((run_dir, watts))
}

/// The one session directory the client wrote under `outdir` (it holds `power/`).
fn session_dir(outdir: &Path) -> Result<PathBuf, PowerError> {
    let entries = std::fs::read_dir(outdir).map_err(|source| PowerError::Read { path: outdir.to_path_buf(), source })?;
    let mut sessions: Vec<PathBuf> = entries.flatten().map(|e| e.path()).filter(|p| p.join(super::session::POWER_DIR).is_dir()).collect();
    sessions.sort();
    sessions.pop().ok_or_else(|| PowerError::NoSession { dir: outdir.to_path_buf() })
}

/// `arg` as one word of a POSIX shell command (the client runs the workload with `shell=True`).
fn shell_quote(arg: &str) -> String {
    if !arg.is_empty() && arg.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c)) {
        return arg.to_string();
    }
    format!("'{}'", arg.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_stop_is_named_from_the_clients_own_log_lines() {
        // Lines as power-dev c4b3ad8's client and time_sync log them.
        let cases = [
            ("2026-11-29 01:00:00,000 [FATAL] Could not connect to the server 127.0.0.1:4950 [Errno 111] Connection refused", Failure::DirectorUnreachable),
            ("[WARNING] The time offset between the system time and ntp is more then 400 ms (512.000 ms)\n[ERROR] Could not synchronize with ntp", Failure::ClockOffset),
            ("[WARNING] The time difference between the client and the server is more than 400 ms", Failure::ClockOffset),
            ("[INFO] Sending command to the server: 'session,x,stop,ranging'\n[FATAL] The server is disconnected", Failure::SessionDropped),
            ("subprocess.CalledProcessError: Command 'mlperf run_harness' returned non-zero exit status 4.", Failure::Workload),
            ("[FATAL] Got an unexpecting response from the server", Failure::DirectorRefused),
            ("Traceback (most recent call last):", Failure::Other),
        ];
        for (log, want) in cases {
            assert_eq!(Failure::of_log(log), want, "{log}");
        }
        let options = ClientOptions { checkout: "pd".into(), director: "10.0.0.2".into(), port: 4950, ntp: "time.example".into(), python: "python3".into() };
        assert!(Failure::DirectorUnreachable.remedy(&options).contains("10.0.0.2:4950"));
        assert!(Failure::ClockOffset.remedy(&options).contains("time.example"));
    }

    #[test]
    fn a_stand_in_session_is_kept_and_its_run_marked_non_submittable() {
        use crate::power::fixture::{Spec, run_dir_of, tempdir, write_session};
        use crate::submittable::NonSubmittable;
        for standin in [false, true] {
            let logs = tempdir(&format!("keep-{standin}"));
            let session = write_session(&tempdir(&format!("keep-{standin}-client")).join("session"), &Spec { standin, ..Spec::default() });
            let test_run = NonSubmittable::TestRun { min_duration_ms: 60_000 };
            let run_dir = run_dir_of(&logs, &session, vec![test_run.clone()]);
            let (kept, watts) = keep_in_run_dir(&session, &logs).unwrap();
            assert_eq!(kept, run_dir);
            assert!((97.0..99.0).contains(&watts), "{watts}");
            let plan = crate::rundir::plan::read_plan(&run_dir).unwrap();
            let marker = std::fs::read_to_string(run_dir.join(crate::rundir::NON_SUBMITTABLE)).unwrap();
            if standin {
                let identify = format!("YokogawaWT310,{},version=1.11.1-standin-20261128,not a meter", crate::power::standin::SERIAL);
                assert_eq!(plan.non_submittable, [test_run.clone(), NonSubmittable::PowerStandIn { identify }]);
                assert!(
                    marker
                        .ends_with("power measured by the PTDaemon stand-in, not a meter (Identify: \"YokogawaWT310,STANDIN0000,version=1.11.1-standin-20261128,not a meter\")\n"),
                    "{marker}"
                );
            } else {
                assert_eq!(plan.non_submittable, [test_run]);
                assert_eq!(marker, "--test_run: min_duration 60000 ms\n");
            }
        }
    }

    #[test]
    fn the_workload_reaches_the_shell_word_for_word() {
        assert_eq!(shell_quote("--scenarios=offline"), "--scenarios=offline");
        assert_eq!(shell_quote("/tmp/a b"), "'/tmp/a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }

    #[test]
    fn the_session_is_the_directory_holding_power() {
        let dir = std::env::temp_dir().join(format!("mlperf-power-client-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("2026-11-29_01-00-00_label/power")).unwrap();
        std::fs::write(dir.join("client.out"), "").unwrap();
        assert_eq!(session_dir(&dir).unwrap(), dir.join("2026-11-29_01-00-00_label"));
        std::fs::remove_dir_all(dir.join("2026-11-29_01-00-00_label")).unwrap();
        assert!(session_dir(&dir).unwrap_err().to_string().contains("no session"));
        std::fs::remove_dir_all(dir).unwrap();
    }
}
