//! Power measurement (MaxQ) through the MLCommons power workflow: checking the power-dev checkout
//! that runs it, the power state (MaxQ limits) of the GPUs, reading the session the power-dev
//! client writes and computing the round's power metric from it; running that client around our
//! harness ([`client`]); stand-ins for PTDaemon and an NTP server in tests ([`standin`], [`ntp`]).

pub mod client;
pub mod documents;
pub mod error;
pub mod maxq;
pub mod metric;
pub mod ntp;
pub mod rules;
pub mod session;
pub mod sources;
pub mod standin;

pub use error::{PowerError, SourceDiff};

#[cfg(test)]
pub(crate) mod fixture;
#[cfg(test)]
mod tests;
