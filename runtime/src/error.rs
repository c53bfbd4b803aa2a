//! The runtime's error, typed by what the operator does next; each kind is also the binary's exit
//! status (the README's "Exit codes" table, tested by `tests/harness/exit_codes.rs`).
//!
//! Messages stay sentences that name the file, key, sample or endpoint and the fix, as they are
//! built where the problem is found. A message from a step that does not know its kind is
//! [`Error::Other`]; the boundary that knows better (the selection, opening a workload, reading
//! the runs' verdicts, the submission check) gives it its kind.

use crate::signals::Signal;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// A flag value the command cannot use (clap's own usage errors exit with the same status).
    #[error("{0}")]
    Usage(String),
    /// The selection, overrides or system cannot make a run: no config matches, an override the
    /// schema refuses, a binary locked to other hardware, a benchmark without an engine.
    #[error("{0}")]
    Config(String),
    /// A dataset, model, calibration or engine plan a run needs is missing, corrupt or stale.
    #[error("{0}")]
    Data(String),
    /// Every run finished; some were INVALID.
    #[error("{invalid} of {total} runs INVALID; the table says what to change")]
    RunsInvalid { invalid: usize, total: usize },
    /// Every run finished VALID; some accuracy runs scored below the round's targets.
    #[error("{below} of {total} runs scored below the accuracy target; the table says which metric")]
    BelowTarget { below: usize, total: usize },
    /// Runs FAILED: an engine or serving error, a crash, logs without a verdict.
    #[error("{failed} of {total} runs FAILED; the table says why")]
    RunsFailed { failed: usize, total: usize },
    /// The serving engines a config's runs need did not start (or not in time).
    #[error("{0}")]
    EngineFailed(String),
    /// A signal stopped the command; the run it stopped is ABORTED, its partial logs kept.
    #[error("stopped by {}", .0.name())]
    Stopped(Signal),
    /// `check_submission` found errors, or audits failed verification.
    #[error("{0}")]
    CheckFailed(String),
    /// Anything else (a file that cannot be written, an internal error).
    #[error("{0}")]
    Other(String),
}

/// The exit statuses, as the README's table lists them.
pub mod exit {
    pub const OK: i32 = 0;
    pub const OTHER: i32 = 1;
    pub const USAGE: i32 = 2;
    pub const CONFIG: i32 = 3;
    pub const DATA: i32 = 4;
    pub const INVALID: i32 = 5;
    pub const FAILED: i32 = 6;
    pub const CHECK_FAILED: i32 = 7;
    pub const BELOW_TARGET: i32 = 8;
}

impl Error {
    /// The process exit status for this error; a stopped run exits as the shell reports a process
    /// killed by the signal (128 + its number).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Usage(_) => exit::USAGE,
            Error::Config(_) => exit::CONFIG,
            Error::Data(_) => exit::DATA,
            Error::RunsInvalid { .. } => exit::INVALID,
            Error::BelowTarget { .. } => exit::BELOW_TARGET,
            Error::RunsFailed { .. } | Error::EngineFailed(_) => exit::FAILED,
            Error::Stopped(signal) => signal.exit_code(),
            Error::CheckFailed(_) => exit::CHECK_FAILED,
            Error::Other(_) => exit::OTHER,
        }
    }

    /// The same error with `what` (the config, file or step it happened in) in front of its
    /// message; verdicts over several runs keep their own wording.
    pub fn context(self, what: impl std::fmt::Display) -> Error {
        let with = |message: String| format!("{what}: {message}");
        match self {
            Error::Usage(m) => Error::Usage(with(m)),
            Error::Config(m) => Error::Config(with(m)),
            Error::Data(m) => Error::Data(with(m)),
            Error::EngineFailed(m) => Error::EngineFailed(with(m)),
            Error::CheckFailed(m) => Error::CheckFailed(with(m)),
            Error::Other(m) => Error::Other(with(m)),
            verdict @ (Error::RunsInvalid { .. } | Error::BelowTarget { .. } | Error::RunsFailed { .. } | Error::Stopped(_)) => verdict,
        }
    }
}

impl From<String> for Error {
    fn from(message: String) -> Error {
        Error::Other(message)
    }
}

impl From<&str> for Error {
    fn from(message: &str) -> Error {
        Error::Other(message.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_the_kind_and_its_exit_status() {
        let e = Error::Data("model.onnx not found".into()).context("resnet50 Offline");
        assert_eq!(e.to_string(), "resnet50 Offline: model.onnx not found");
        assert_eq!(e.exit_code(), exit::DATA);
        let verdict = Error::RunsInvalid { invalid: 1, total: 2 }.context("ignored");
        assert_eq!(verdict.to_string(), "1 of 2 runs INVALID; the table says what to change");
        assert_eq!(Error::Stopped(Signal::Interrupt).exit_code(), 130);
        assert_eq!(Error::from("x".to_string()).exit_code(), exit::OTHER);
    }
}
