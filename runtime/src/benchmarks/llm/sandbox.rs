//! Where the evaluations run model-generated code (LiveCodeBench's programs, MBXP's solutions):
//! a child process in a network namespace of its own (loopback only, and down) and a process
//! group of its own, killed with everything it started when its time is up or this process dies.
//! The time limits are the reference evaluations'; the network cut is ours (the references
//! advise a sandbox and leave it to the submitter).

pub use super::error::SandboxError;
use std::io::{Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// How a sandboxed child ended.
#[derive(Debug)]
pub struct Outcome {
    /// Its exit status; `None` when it was killed at the time limit.
    pub status: Option<ExitStatus>,
    pub stdout: Vec<u8>,
    pub elapsed: Duration,
}

impl Outcome {
    /// Exited by itself with status 0.
    pub fn succeeded(&self) -> bool {
        self.status.is_some_and(|s| s.success())
    }
}

/// Runs `command` without network, `stdin` written to it, its stdout kept (stderr dropped), its
/// whole process group killed once `limit` has passed. An error only when it cannot start.
pub fn run(command: &mut Command, stdin: &[u8], limit: Duration) -> Result<Outcome, SandboxError> {
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null()).process_group(0);
    // SAFETY: unshare(2) and prctl(2) are async-signal-safe and touch only the child itself.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            without_network()
        });
    }
    let start = Instant::now();
    let mut child = command.spawn().map_err(|source| SandboxError::Start { program: command.get_program().to_os_string(), source })?;
    let mut input = child.stdin.take().expect("piped stdin");
    let stdin = stdin.to_vec();
    // A child may exit without reading its input; the broken pipe is then expected.
    let writer = std::thread::spawn(move || input.write_all(&stdin));
    let mut output = child.stdout.take().expect("piped stdout");
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = output.read_to_end(&mut out);
        out
    });
    let status = loop {
        if let Some(status) = child.try_wait().map_err(SandboxError::Wait)? {
            break Some(status);
        }
        if start.elapsed() > limit {
            break None;
        }
        std::thread::sleep(Duration::from_millis(5));
    };
    // The group goes either way: what a finished program left running must not outlive it.
    // SAFETY: kill(2) of the child's own process group (its pid, made group leader above).
    unsafe {
        libc::kill(-(child.id() as libc::pid_t), libc::SIGKILL);
    }
    let _ = child.wait();
    let _ = writer.join();
    Ok(Outcome { status, stdout: reader.join().unwrap_or_default(), elapsed: start.elapsed() })
}

/// Puts the calling process in a network namespace of its own: as root a new network namespace;
/// otherwise a user namespace with one.
fn without_network() -> std::io::Result<()> {
    // SAFETY: plain system calls on the calling process.
    unsafe {
        if libc::unshare(libc::CLONE_NEWNET) == 0 || libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) == 0 {
            return Ok(());
        }
    }
    Err(std::io::Error::other(format!("unshare(CLONE_NEWNET) failed ({})", std::io::Error::last_os_error())))
}

/// Whether generated code can be cut from the network here, tried in a short-lived child;
/// the error names `whose` code and the remedy.
pub fn check_isolation(whose: &str) -> Result<(), SandboxError> {
    let mut probe = Command::new("true");
    // SAFETY: as in `run`.
    unsafe {
        probe.pre_exec(without_network);
    }
    match probe.status() {
        Ok(s) if s.success() => Ok(()),
        Ok(s) => Err(SandboxError::Isolation { whose: whose.to_string(), why: s.to_string() }),
        Err(e) => Err(SandboxError::Isolation { whose: whose.to_string(), why: e.to_string() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_runs_without_network_and_is_killed_with_its_group_at_the_limit() {
        check_isolation("the test's code").unwrap();
        let mut cat = Command::new("cat");
        let done = run(&mut cat, b"echoed", Duration::from_secs(10)).unwrap();
        assert!(done.succeeded() && done.stdout == b"echoed", "{done:?}");
        // Only the loopback device exists (the header's two lines, then one device).
        let mut devices = Command::new("cat");
        devices.arg("/proc/net/dev");
        let devices = String::from_utf8_lossy(&run(&mut devices, b"", Duration::from_secs(10)).unwrap().stdout).to_string();
        assert!(devices.lines().count() == 3 && devices.lines().nth(2).unwrap().trim().starts_with("lo:"), "{devices}");
        // A duration no other process uses marks both sleepers, the one in the background too.
        let marker = format!("sleep 30.{}", std::process::id());
        let mut sleeper = Command::new("sh");
        sleeper.args(["-c", &format!("{marker} & {marker}")]);
        let killed = run(&mut sleeper, b"", Duration::from_millis(300)).unwrap();
        assert!(killed.status.is_none() && killed.elapsed < Duration::from_secs(5), "{killed:?}");
        let left = Command::new("pgrep").args(["-f", &marker]).output().unwrap();
        assert!(left.stdout.is_empty(), "a process of the group outlived the limit");
    }
}
