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

/// Routes the stop signals ([`Signal::ALL`]) to [`received`] for the rest of the process. Idempotent.
pub fn install() -> Result<(), String> {
    static INSTALLED: OnceLock<Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            for signal in Signal::ALL {
                // Only the first signal is kept: a second one (Ctrl-C pressed twice) changes nothing.
                let (first, number) = (flag().clone(), signal.number());
                // SAFETY: the action only compares and swaps an atomic, which is async-signal-safe.
                unsafe { signal_hook::low_level::register(number, move || _ = first.compare_exchange(0, number as usize, Ordering::SeqCst, Ordering::SeqCst)) }
                    .map_err(|e| format!("cannot install the {} handler: {e}", signal.name()))?;
            }
            Ok(())
        })
        .clone()
}

/// The first stop signal received since [`install`], if any.
pub fn received() -> Option<Signal> {
    let number = flag().load(Ordering::SeqCst) as i32;
    Signal::ALL.into_iter().find(|s| s.number() == number)
}
