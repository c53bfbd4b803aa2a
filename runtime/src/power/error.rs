//! What can stop the run side of a power measurement: a power-dev checkout that is not the round's
//! accepted source set, and the power state (the MaxQ power limits) applied through NVML.

use std::path::PathBuf;

/// How one file of a power-dev checkout differs from the round's accepted source set.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SourceDiff {
    /// The file's SHA-1 is not the accepted one (edited, or another revision).
    Modified { file: String, sha1: String, accepted: String },
    /// An accepted file is not in the checkout.
    Missing { file: String },
    /// A `.py` file the accepted set does not hold (power-dev hashes every one it finds).
    Extra { file: String },
    /// The file has CR line ends, which power-dev refuses at start-up.
    Crlf { file: String },
}

impl std::fmt::Display for SourceDiff {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        match self {
            SourceDiff::Modified { file, sha1, accepted } => write!(f, "{file}: sha1 {sha1}, accepted {accepted}"),
            SourceDiff::Missing { file } => write!(f, "{file}: missing"),
            SourceDiff::Extra { file } => write!(f, "{file}: not in the accepted set (remove it)"),
            SourceDiff::Crlf { file } => write!(f, "{file}: CRLF line ends (power-dev refuses them; check out with core.autocrlf=false)"),
        }
    }
}

fn list<T: std::fmt::Display>(items: &[T]) -> String {
    items.iter().map(|d| format!("\n  {d}")).collect()
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PowerError {
    #[error("{path}: not a power-dev checkout (no ptd_client_server/lib/source_hashes.py under it); name a checkout of mlcommons/power-dev at {commit}")]
    NotACheckout { path: PathBuf, commit: &'static str },
    #[error("{path}: cannot read ({source})")]
    Read { path: PathBuf, source: std::io::Error },
    #[error(
        "{dir}: the power-dev sources differ from the round's accepted set, so the power checker would refuse the result:{}\nuse an unmodified checkout of mlcommons/power-dev at {commit} (`git checkout {commit}`, `git status` clean, no extra .py files)",
        list(.diffs)
    )]
    Sources { dir: PathBuf, diffs: Vec<SourceDiff>, commit: &'static str },
    #[error(
        "system {system}: no selected MaxQ config sets `power_limit` (selected: {selected}); select the MaxQ configs (--power_setting MaxQ or --config_ver maxq) of a system whose configs set it"
    )]
    NoPowerLimit { system: String, selected: String },
    #[error("the selected MaxQ configs set different power limits:{}\nselect configs that share one limit (--benchmarks, --scenarios)", list(.limits))]
    ConflictingLimits { limits: Vec<String> },
    #[error("GPU {gpu}: power_limit {watts} W is outside the card's range {min_w}..{max_w} W (NVML); fix `power_limit` in the config ({from})")]
    OutOfRange { gpu: u32, watts: u64, min_w: f64, max_w: f64, from: String },
    #[error("NVML {op}{}: {message}{}", gpu.map(|g| format!(" on GPU {g}")).unwrap_or_default(), if *.permission { " (setting power limits needs root: run it with sudo)" } else { "" })]
    Nvml { op: &'static str, gpu: Option<u32>, message: String, permission: bool },
    #[error("GPU {gpu}: power limit {current_w} W, but the config wants {want_w} W ({from}); run `mlperf power_set_maxq_state` with the same selection first")]
    StateDiffers { gpu: u32, current_w: f64, want_w: u64, from: String },
    #[error("{path}: no power state recorded (power_set_maxq_state writes it); nothing to restore")]
    NoRecord { path: PathBuf },
    #[error("{path}: not a power state record ({message}); restore the limits by hand (`nvidia-smi -pl <W>`) and delete it")]
    BadRecord { path: PathBuf, message: String },
    #[error("cannot write the power state record ({0}); no power limit was changed")]
    Write(#[from] crate::fsutil::FsError),
    #[error("cannot start power-dev's client with {python} ({source}); install Python 3.7 or newer, or name it with --python")]
    Client { python: String, source: std::io::Error },
    #[error("power measurement stopped ({status}): {remedy}\n  {last}\n(the client's whole output: {}; everything written so far is kept)", log.display())]
    Measurement { log: PathBuf, status: String, remedy: String, last: String, workload: bool },
    #[error("stopped by {}; power-dev's client ended with {status} (its output: {})", signal.name(), log.display())]
    Stopped { signal: crate::signals::Signal, log: PathBuf, status: String },
    #[error("{dir}: power-dev's client finished but wrote no session (a directory holding power/); see client.out there")]
    NoSession { dir: PathBuf },
    #[error("the power session in {} breaks the power rules, so the checker would refuse it:{}", dir.display(), list(.findings))]
    Rejected { dir: PathBuf, findings: Vec<String> },
    #[error("cannot copy the power session into the run directory {} ({source})", to.display())]
    Copy { to: PathBuf, source: std::io::Error },
    #[error("{}: cannot mark the run non-submittable ({source}); do not stage it", dir.display())]
    Mark { dir: PathBuf, source: crate::rundir::RunDirError },
}

impl From<PowerError> for crate::Error {
    fn from(e: PowerError) -> crate::Error {
        let message = e.to_string();
        match e {
            PowerError::NotACheckout { .. } | PowerError::Read { .. } | PowerError::Sources { .. } | PowerError::NoRecord { .. } | PowerError::BadRecord { .. } => {
                crate::Error::Data(message)
            }
            PowerError::NoPowerLimit { .. } | PowerError::ConflictingLimits { .. } | PowerError::OutOfRange { .. } | PowerError::StateDiffers { .. } => {
                crate::Error::Config(message)
            }
            PowerError::Measurement { workload: true, .. } => crate::Error::Other(message),
            PowerError::Measurement { .. } | PowerError::Rejected { .. } => crate::Error::Data(message),
            PowerError::Stopped { signal, .. } => crate::Error::Stopped(signal),
            PowerError::Nvml { .. } | PowerError::Write(_) | PowerError::Client { .. } | PowerError::NoSession { .. } | PowerError::Copy { .. } | PowerError::Mark { .. } => {
                crate::Error::Other(message)
            }
        }
    }
}
