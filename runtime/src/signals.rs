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

/// Routes the stop signals ([`Signal::ALL`]) to [`received`] for the rest of the process. Idempotent.
pub fn install() -> Result<(), SignalError> {
    static INSTALLED: OnceLock<Result<(), SignalError>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            for signal in Signal::ALL {
                // Only the first signal is kept: a second one (Ctrl-C pressed twice) changes nothing.
                let (first, number) = (flag().clone(), signal.number());
                // SAFETY: the action only compares and swaps an atomic, which is async-signal-safe.
                unsafe { signal_hook::low_level::register(number, move || _ = first.compare_exchange(0, number as usize, Ordering::SeqCst, Ordering::SeqCst)) }
                    .map_err(|e| SignalError { signal, reason: e.to_string() })?;
            }
            Ok(())
        })
        .clone()
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
}
