//! Times the Rust null SUTs against the C++ ones on the same LoadGen library,
//! in one process:
//!
//! ```text
//! cargo run --release -p mlperf-loadgen --example compare_null_sut [-- <outdir>]
//! ```
//!
//! Logs go to `<outdir>/<scenario>-{cpp,rust}/` (default: a temp directory).

use std::path::{Path, PathBuf};

use mlperf_loadgen::bench::{self, NullSutKind};
use mlperf_loadgen::{LoadgenError, LogSettings, Scenario, TestMode, TestSettings};

type RunNullSut = fn(NullSutKind, &TestSettings, &LogSettings) -> Result<(), LoadgenError>;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let out = std::env::args().nth(1).map(PathBuf::from).unwrap_or_else(|| std::env::temp_dir().join("mlperf-loadgen-null-sut"));

    let mut single_stream = TestSettings::new();
    single_stream.set_scenario(Scenario::SingleStream);
    single_stream.set_mode(TestMode::PerformanceOnly);
    single_stream.set_u64("min_duration_ms", 1_000)?;
    single_stream.set_f64("single_stream_expected_latency_ns", 1_000.0)?;

    let mut server = TestSettings::new();
    server.set_scenario(Scenario::Server);
    server.set_mode(TestMode::PerformanceOnly);
    server.set_u64("min_duration_ms", 1_000)?;
    server.set_f64("server_target_qps", 200_000.0)?;

    let cases = [
        (Scenario::SingleStream, NullSutKind::Synchronous, &single_stream, "QPS w/ loadgen overhead"),
        (Scenario::Server, NullSutKind::WorkerPool { threads: 2 }, &server, "Completed samples per second"),
    ];
    println!("{:<13} {:<30} {:<30} {:>14} {:>14}", "scenario", "SUT", "metric", "C++", "Rust");
    for (scenario, kind, settings, metric) in cases {
        let runs: [(&str, RunNullSut); 2] = [("cpp", bench::run_cpp_null_sut), ("rust", bench::run_rust_null_sut)];
        let mut summaries = Vec::new();
        for (lang, run) in runs {
            let dir = out.join(format!("{scenario}-{lang}"));
            run(kind, settings, &LogSettings::in_dir(&dir))?;
            summaries.push(std::fs::read_to_string(dir.join("mlperf_log_summary.txt"))?);
        }
        for key in [metric, "Mean latency (ns)", "99.00 percentile latency (ns)"] {
            let [cpp, rust] = [0, 1].map(|i| number(&summaries[i], key));
            println!("{:<13} {:<30} {key:<30} {cpp:>14.0} {rust:>14.0}", scenario.to_string(), format!("{kind:?}"));
        }
    }
    println!("logs: {}", Path::new(&out).display());
    Ok(())
}

/// Reads `<key> : <number>` from a summary.
fn number(summary: &str, key: &str) -> f64 {
    summary.lines().find(|line| line.trim_start().starts_with(key)).and_then(|line| line.rsplit(':').next()?.trim().parse().ok()).unwrap_or(f64::NAN)
}
