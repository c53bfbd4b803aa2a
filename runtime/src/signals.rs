//! The signals that stop a run: SIGINT (Ctrl-C, sent to the whole process group), SIGTERM (Slurm,
//! systemd, `docker stop`, `kill`) and SIGHUP (a closed terminal). signal-hook's handler only
//! records which one arrived (async-signal-safe); the harness polls [`received`] and stops cleanly:
//! the parent forwards the signal to its running child and waits for it, the child flushes
//! LoadGen's logs and leaves.

use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The number of the first stop signal received, or 0.
fn flag() -> &'static Arc<AtomicUsize> {
    static RECEIVED: OnceLock<Arc<AtomicUsize>> = OnceLock::new();
    RECEIVED.get_or_init(|| Arc::new(AtomicUsize::new(0)))
}

/// A stop signal that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    Interrupt,
    Terminate,
    Hangup,
}

impl Signal {
    pub const ALL: [Signal; 3] = [Signal::Interrupt, Signal::Terminate, Signal::Hangup];

    /// The signal's number (to forward it with kill(2)).
    pub const fn number(self) -> i32 {
        match self {
            Signal::Interrupt => SIGINT,
            Signal::Terminate => SIGTERM,
            Signal::Hangup => SIGHUP,
        }
    }

    pub const fn name(self) -> &'static str {
        match self {
            Signal::Interrupt => "SIGINT",
            Signal::Terminate => "SIGTERM",
            Signal::Hangup => "SIGHUP",
        }
    }

    /// The shell's exit status of a process ended by this signal (128 + its number).
    pub const fn exit_code(self) -> i32 {
        128 + self.number()
    }
}

/// A stop signal's handler that could not be installed (kept as text: the first attempt's
/// answer is returned to every later caller).
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
#[error("cannot install the {} handler: {reason}", .signal.name())]
pub struct SignalError {
    pub signal: Signal,
    pub reason: String,
}

impl From<SignalError> for crate::Error {
    fn from(e: SignalError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// Records `number` as the stop signal received, unless one was already: only the first is kept
/// (Ctrl-C pressed twice changes nothing).
fn raise(number: i32) {
    _ = flag().compare_exchange(0, number as usize, Ordering::SeqCst, Ordering::SeqCst);
}

/// Routes the stop signals ([`Signal::ALL`]) to [`received`] for the rest of the process, and, in a
/// process started below a [`ChildGroup`] ([`STOP_WITH`]), the end of the process that started the
/// group as SIGTERM. Idempotent.
pub fn install() -> Result<(), SignalError> {
    static INSTALLED: OnceLock<Result<(), SignalError>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            for signal in Signal::ALL {
                let number = signal.number();
                // SAFETY: the action only compares and swaps an atomic, which is async-signal-safe.
                unsafe { signal_hook::low_level::register(number, move || raise(number)) }.map_err(|e| SignalError { signal, reason: e.to_string() })?;
            }
            if let Some(guardian) = std::env::var(STOP_WITH).ok().and_then(|pid| pid.parse().ok()) {
                std::thread::Builder::new()
                    .name("stop-with".into())
                    .spawn(move || {
                        while is_ancestor(guardian) {
                            std::thread::sleep(std::time::Duration::from_millis(250));
                        }
                        tracing::warn!("process {guardian}, which started this run's process group, is gone: stopping as on SIGTERM");
                        raise(SIGTERM);
                    })
                    .map_err(|e| SignalError { signal: Signal::Terminate, reason: format!("cannot watch process {guardian} ({STOP_WITH}): {e}") })?;
            }
            Ok(())
        })
        .clone()
}

/// The environment variable through which [`ChildGroup::spawn`] names the process starting the
/// group to every `mlperf` below it: when that process dies without stopping the group (SIGKILL),
/// the kernel stops the group's leader alone, and a descendant the leader does not take with it
/// (power-dev's client runs our run_harness through a shell and dies first) would run on with
/// parent 1. Such an `mlperf` stops as on SIGTERM once the named process is no longer among its
/// ancestors ([`install`]).
pub const STOP_WITH: &str = "MLPERF_STOP_WITH";

/// Whether process `pid` is this process's parent, grandparent or further up. A process that
/// died is not, and neither is another process given its id later: orphans are adopted by init
/// (or a subreaper), never by a newcomer.
fn is_ancestor(pid: i32) -> bool {
    // SAFETY: getppid(2) cannot fail.
    let mut at = unsafe { libc::getppid() };
    while at > 1 {
        if at == pid {
            return true;
        }
        // The parent is the field after the command's closing parenthesis and the state.
        let Some(parent) =
            std::fs::read_to_string(format!("/proc/{at}/stat")).ok().and_then(|stat| stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse().ok()))
        else {
            return false;
        };
        at = parent;
    }
    false
}

/// How a child process ended, as messages and the result table say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChildExit {
    /// It exited with this status.
    Code(i32),
    /// A signal ended it.
    Killed(i32),
}

impl ChildExit {
    pub fn of(status: std::process::ExitStatus) -> ChildExit {
        use std::os::unix::process::ExitStatusExt;
        match (status.code(), status.signal()) {
            (Some(code), _) => ChildExit::Code(code),
            (None, Some(signal)) => ChildExit::Killed(signal),
            // Stopped or continued: wait(2) reports neither for a reaped child.
            (None, None) => ChildExit::Killed(0),
        }
    }

    /// The exit status, when it exited rather than being killed.
    pub fn code(self) -> Option<i32> {
        match self {
            ChildExit::Code(code) => Some(code),
            ChildExit::Killed(_) => None,
        }
    }
}

impl std::fmt::Display for ChildExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match *self {
            ChildExit::Code(code) => write!(f, "exit status {code}"),
            ChildExit::Killed(signal) => match signal_name(signal) {
                Some(name) => write!(f, "killed by signal {signal} ({name})"),
                None => write!(f, "killed by signal {signal}"),
            },
        }
    }
}

/// A child process leading a process group of its own, with everything it starts: the group is
/// stopped whole (SIGTERM, then SIGKILL after a grace period) when the value is dropped, so it
/// cannot outlive the code that started it on any path, an early `?` included; and the kernel
/// sends the leader SIGTERM if this process dies without stopping it (SIGKILL, a crash), while an
/// `mlperf` anywhere below stops by itself then ([`STOP_WITH`]). Its own
/// group keeps a terminal's Ctrl-C from reaching it directly: the parent decides how it stops.
pub struct ChildGroup {
    child: std::process::Child,
    grace: std::time::Duration,
    status: Option<std::process::ExitStatus>,
    /// The group was killed and the leader reaped ([`Self::finish`]): nothing is left to stop.
    finished: bool,
}

impl ChildGroup {
    /// Starts `command` as the leader of a new process group; dropped, it gets `grace` to stop.
    pub fn spawn(command: &mut std::process::Command, grace: std::time::Duration) -> std::io::Result<ChildGroup> {
        use std::os::unix::process::CommandExt;
        command.process_group(0).env(STOP_WITH, std::process::id().to_string());
        // SAFETY: runs in the forked child before exec and makes one async-signal-safe call.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        Ok(ChildGroup { child: command.spawn()?, grace, status: None, finished: false })
    }

    /// The leader's process id (also the group's id).
    pub fn id(&self) -> u32 {
        self.child.id()
    }

    /// The leader's exit status once it has exited; the rest of the group may still run.
    pub fn try_wait(&mut self) -> std::io::Result<Option<std::process::ExitStatus>> {
        if self.status.is_none() {
            self.status = self.child.try_wait()?;
        }
        Ok(self.status)
    }

    /// Sends `signal` to every process of the group.
    pub fn signal(&self, signal: i32) {
        // SAFETY: kill(2) on the group this child was made leader of. Its id cannot be reused while
        // the leader is unreaped, nor after while any member is left, the only case where it matters.
        unsafe { libc::kill(-(self.child.id() as i32), signal) };
    }

    /// Waits for the leader until `deadline`, then kills whatever is left of the group. Returns the
    /// leader's status (None if it did not exit by the deadline and had to be killed).
    pub fn finish(&mut self, deadline: std::time::Instant) -> Option<std::process::ExitStatus> {
        while self.try_wait().ok().flatten().is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let in_time = self.try_wait().ok().flatten();
        self.signal(libc::SIGKILL);
        let status = self.child.wait().ok();
        self.status = self.status.or(status);
        self.finished = true;
        in_time
    }

    /// SIGTERM to the group, then [`Self::finish`] after the grace period.
    pub fn stop(&mut self) -> Option<std::process::ExitStatus> {
        self.signal(libc::SIGTERM);
        self.finish(std::time::Instant::now() + self.grace)
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        // A leader that exited by itself may have left members behind: they go too.
        if self.try_wait().ok().flatten().is_some() {
            self.signal(libc::SIGKILL);
        } else {
            self.stop();
        }
    }
}

/// The name of a signal that ends processes, as kill(1) lists it (Linux numbers).
fn signal_name(number: i32) -> Option<&'static str> {
    use libc::*;
    let names = [
        (SIGHUP, "SIGHUP"),
        (SIGINT, "SIGINT"),
        (SIGQUIT, "SIGQUIT"),
        (SIGILL, "SIGILL"),
        (SIGTRAP, "SIGTRAP"),
        (SIGABRT, "SIGABRT"),
        (SIGBUS, "SIGBUS"),
        (SIGFPE, "SIGFPE"),
        (SIGKILL, "SIGKILL"),
        (SIGUSR1, "SIGUSR1"),
        (SIGSEGV, "SIGSEGV"),
        (SIGUSR2, "SIGUSR2"),
        (SIGPIPE, "SIGPIPE"),
        (SIGALRM, "SIGALRM"),
        (SIGTERM, "SIGTERM"),
        (SIGXCPU, "SIGXCPU"),
        (SIGXFSZ, "SIGXFSZ"),
    ];
    names.iter().find(|(n, _)| *n == number).map(|(_, name)| *name)
}

/// The first stop signal received since [`install`], if any.
pub fn received() -> Option<Signal> {
    let number = flag().load(Ordering::SeqCst) as i32;
    Signal::ALL.into_iter().find(|s| s.number() == number)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_child_exit_says_its_status_or_the_signal_by_name() {
        assert_eq!(ChildExit::Code(1).to_string(), "exit status 1");
        assert_eq!(ChildExit::Killed(9).to_string(), "killed by signal 9 (SIGKILL)");
        assert_eq!(ChildExit::Killed(64).to_string(), "killed by signal 64");
        let status = std::process::Command::new("sh").args(["-c", "kill -9 $$"]).status().unwrap();
        assert_eq!(ChildExit::of(status), ChildExit::Killed(9));
        assert_eq!(ChildExit::of(std::process::Command::new("sh").args(["-c", "exit 6"]).status().unwrap()).code(), Some(6));
    }

    /// Whether process `pid` still exists (a zombie counts as gone: it runs nothing).
    fn alive(pid: i32) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| stat.rsplit(')').next().is_some_and(|rest| !rest.trim_start().starts_with('Z')))
    }

    /// Whether `pid` is gone within 2 s: a signal is delivered asynchronously, so a killed orphan
    /// dies moments after kill(2) returns.
    fn gone(pid: i32) -> bool {
        let killed = std::time::Instant::now();
        while alive(pid) && killed.elapsed() < std::time::Duration::from_secs(2) {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        !alive(pid)
    }

    /// A group whose leader started a grandchild, written to `pids`: (leader, grandchild).
    fn group_with_grandchild(name: &str, script: &str) -> (ChildGroup, i32, std::path::PathBuf) {
        let pids = std::env::temp_dir().join(format!("mlperf-childgroup-{name}-{}", std::process::id()));
        let _ = std::fs::remove_file(&pids);
        let group = ChildGroup::spawn(std::process::Command::new("sh").args(["-c", script, "sh", pids.to_str().unwrap()]), std::time::Duration::from_millis(300)).unwrap();
        let started = std::time::Instant::now();
        let grandchild = loop {
            if let Some(pid) = std::fs::read_to_string(&pids).ok().and_then(|t| t.trim().parse().ok()) {
                break pid;
            }
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "the grandchild never started");
            std::thread::sleep(std::time::Duration::from_millis(10));
        };
        (group, grandchild, pids)
    }

    #[test]
    fn a_dropped_child_group_takes_what_its_leader_started_with_it() {
        // An error path: the value goes out of scope while the leader and its child run.
        let (group, grandchild, pids) = group_with_grandchild("drop", "sleep 300 & echo $! > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"; wait");
        let leader = group.id() as i32;
        assert!(alive(leader) && alive(grandchild));
        drop(group);
        assert!(gone(leader) && gone(grandchild), "leader {leader} or its child {grandchild} survived the drop");
        // A leader that exited by itself: what it left running goes when the value does.
        let (mut group, grandchild, _) = group_with_grandchild("orphan", "sleep 300 & echo $! > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"");
        while group.try_wait().unwrap().is_none() {
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert!(alive(grandchild));
        drop(group);
        assert!(gone(grandchild), "the exited leader's child {grandchild} survived the drop");
        let _ = std::fs::remove_file(pids);
    }

    #[test]
    fn a_group_names_its_starter_to_what_runs_below_it() {
        let file = std::env::temp_dir().join(format!("mlperf-childgroup-stop-with-{}", std::process::id()));
        let mut group = ChildGroup::spawn(
            std::process::Command::new("sh").args(["-c", "printf %s \"$MLPERF_STOP_WITH\" > \"$1\"", "sh", file.to_str().unwrap()]),
            std::time::Duration::from_millis(300),
        )
        .unwrap();
        assert!(group.finish(std::time::Instant::now() + std::time::Duration::from_secs(10)).is_some_and(|s| s.success()));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), std::process::id().to_string());
        let _ = std::fs::remove_file(file);
    }

    #[test]
    fn only_a_living_parent_grandparent_or_further_is_an_ancestor() {
        // SAFETY: getppid(2) cannot fail.
        let parent = unsafe { libc::getppid() };
        assert!(is_ancestor(parent));
        assert!(!is_ancestor(std::process::id() as i32), "not this process itself");
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let id = child.id() as i32;
        child.wait().unwrap();
        assert!(!is_ancestor(id), "not a child, nor a dead process");
        // The walk goes past the parent (whose status file names the grandparent).
        let status = std::fs::read_to_string(format!("/proc/{parent}/status")).unwrap();
        let grandparent: i32 = status.lines().find_map(|l| l.strip_prefix("PPid:")).unwrap().trim().parse().unwrap();
        assert!(grandparent <= 1 || is_ancestor(grandparent), "{grandparent}");
    }

    #[test]
    fn a_group_ignoring_sigterm_is_killed_after_its_grace() {
        let (mut group, grandchild, pids) = group_with_grandchild("stubborn", "trap '' TERM; sleep 300 & echo $! > \"$1.tmp\"; mv \"$1.tmp\" \"$1\"; while :; do sleep 1; done");
        let started = std::time::Instant::now();
        assert_eq!(group.stop(), None, "the leader ignores SIGTERM: it is killed, not exited");
        assert!(started.elapsed() >= std::time::Duration::from_millis(300));
        assert!(gone(group.id() as i32) && gone(grandchild));
        let _ = std::fs::remove_file(pids);
    }
}
