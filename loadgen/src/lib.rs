//! Safe Rust binding of the official MLCommons LoadGen.
//!
//! LoadGen is compiled unmodified from its PyPI source package
//! (`mlcommons_loadgen-<ver>.tar.gz`, sha256-pinned in `build.rs`) together
//! with a small `extern "C"` shim of our own, since LoadGen's "C API" is C++.
//! The default build links LoadGen 6.0.17 (round v6.1); the `loadgen-5_1`
//! feature links 5.1.2 (round v5.1). Offline builds: put the tarballs in a
//! directory and set `MLPERF_LOADGEN_SDIST_DIR` to it.
//!
//! Layers, as in cudarc: [`sys`] (raw declarations), [`result`] (checked
//! calls), [`safe`] (owning types and traits, re-exported at the crate root).
//!
//! # Running a test
//! 1. `TestSettings::from_user_conf("user.conf", "resnet50", Scenario::Offline)?`
//!    — once per process (LoadGen applies mlperf.conf only on the first
//!    `FromConfig`); then `settings.set_mode(TestMode::PerformanceOnly)`.
//! 2. Implement [`Sut`] (`issue_query` runs on LoadGen's issue thread: copy
//!    the samples and return fast) and [`Qsl`].
//! 3. `start_test(&sut, &qsl, &settings, &LogSettings::in_dir(dir), None)?`
//!    blocks until the run ends; `None` means no audit.config, whatever the
//!    current directory holds.
//! 4. Complete every issued sample exactly once, from any thread, with
//!    [`query_samples_complete`].
//! 5. Read `<dir>/mlperf_log_summary.txt` / `mlperf_log_detail.txt`.
//!
//! ```no_run
//! use mlperf_loadgen::{
//!     LogSettings, Qsl, QuerySample, Response, Scenario, Sut, TestMode, TestSettings,
//! };
//!
//! struct Echo;
//! impl Sut for Echo {
//!     fn name(&self) -> &str { "echo" }
//!     fn issue_query(&self, samples: &[QuerySample]) {
//!         let responses: Vec<_> = samples.iter().map(|s| Response::empty(s.id)).collect();
//!         mlperf_loadgen::query_samples_complete(&responses);
//!     }
//! }
//! struct Data;
//! impl Qsl for Data {
//!     fn name(&self) -> &str { "data" }
//!     fn total_sample_count(&self) -> usize { 50_000 }
//!     fn performance_sample_count(&self) -> usize { 1024 }
//!     fn load_samples(&self, _: &[usize]) {}
//!     fn unload_samples(&self, _: &[usize]) {}
//! }
//!
//! let mut settings = TestSettings::from_user_conf("user.conf", "resnet50", Scenario::Offline)?;
//! settings.set_mode(TestMode::PerformanceOnly);
//! mlperf_loadgen::start_test(&Echo, &Data, &settings, &LogSettings::in_dir("run_1"), None)?;
//! # Ok::<(), mlperf_loadgen::LoadgenError>(())
//! ```
//!
//! # Threading
//! One test runs at a time per process ([`LoadgenError::TestAlreadyRunning`]).
//! [`Sut`] and [`Qsl`] are `Send + Sync`: LoadGen calls `issue_query` from its
//! issue thread(s) while your workers complete samples. A panic in a callback
//! is caught before it reaches C++ and aborts the process (LoadGen cannot stop
//! a running test).

pub mod bench;
pub mod result;
pub mod safe;
pub mod sys;

pub use safe::*;

include!(concat!(env!("OUT_DIR"), "/linked_version.rs"));

/// LoadGen versions whose `mlperf.conf` this crate embeds.
pub const MLPERF_CONF_VERSIONS: [&str; 2] = ["5.1.2", "6.0.17"];

/// The `mlperf.conf` shipped in the LoadGen `loadgen_version` source package
/// (`5.1.2` for round v5.1, `6.0.17` for v6.1), byte for byte; `None` for
/// other versions. The linked LoadGen compiles in [`LINKED_VERSION`]'s copy.
pub fn mlperf_conf(loadgen_version: &str) -> Option<&'static str> {
    match loadgen_version {
        "5.1.2" => Some(include_str!(concat!(env!("OUT_DIR"), "/mlperf-5.1.2.conf"))),
        "6.0.17" => Some(include_str!(concat!(env!("OUT_DIR"), "/mlperf-6.0.17.conf"))),
        _ => None,
    }
}
