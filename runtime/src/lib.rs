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
pub mod logging;
pub mod results;
pub mod scaffold;
pub mod select;
pub mod show;
pub mod submission;

pub use error::Error;
