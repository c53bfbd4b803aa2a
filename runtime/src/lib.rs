//! The lean runtime: hardware detection, selection of compiled configs, generated submission files,
//! and (in later modules) the LoadGen harness, engines, accuracy and submission tools. The binary
//! passes it the compiled [`mlperf_config::Tables`].

pub mod accuracy;
pub mod bench;
pub mod benchmarks;
pub mod check;
pub mod compliance;
pub mod cpu;
pub mod dataset;
pub mod detect;
pub mod engines;
pub mod error;
pub mod fsutil;
pub mod generate;
pub mod harness;
pub mod layout;
pub mod logging;
pub mod power;
pub mod progress;
pub mod results;
pub mod rundir;
pub mod scaffold;
pub mod select;
pub mod show;
pub mod signals;
pub mod submission;
pub mod submittable;

pub use error::Error;

#[cfg(test)]
mod architecture_tests;
