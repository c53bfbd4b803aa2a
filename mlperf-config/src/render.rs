//! Submission files generated from the compiled tables only: user.conf, measurements.json, the
//! per-scenario README, calibration_process.adoc (v5 layout) and system descriptions. Output is
//! deterministic: the same tables always give the same bytes.
//!
//! Naming scheme:
//! * system: `<system id>_RS[_<Harness>][_MaxQ]` (NVIDIA writes `_TRT`; `RS` names this
//!   implementation), e.g. `DGX-H100_H100-SXM-80GBx8_RS_MaxQ`;
//! * benchmark directory: the round's checker model name for the accuracy target (`resnet`,
//!   `bert-99.9`, `llama2-70b-99.9`);
//! * scenario directory: `Offline`, `Server`, `SingleStream`, `MultiStream`, `Interactive`.

use crate::benchmark;
use crate::round::{BenchmarkRound, Round};
use crate::system::{SystemInfo, canonical_json};
use crate::table::CompiledConfig;
use crate::types::{DataType, Harness, PowerSetting, Scenario, Workload};
use std::fmt::Write;

/// The implementation tag in system names.
pub const IMPLEMENTATION: &str = "RS";

/// Submission system name of a system running a workload.
pub fn system_name(system_id: &str, workload: Workload) -> String {
    let mut name = format!("{system_id}_{IMPLEMENTATION}");
    match workload.harness {
        Harness::Custom => {}
        Harness::Triton => name.push_str("_Triton"),
        Harness::HeteroMig => name.push_str("_HeteroMIG"),
    }
    if workload.power == PowerSetting::MaxQ {
        name.push_str("_MaxQ");
    }
    name
}

/// What a user.conf is for: the committed submission file, or a run directory's copy.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfPurpose {
    Submission,
    /// `--test_run`: shortened runs, never written to `measurements/`.
    TestRun(TestRunLimits),
}

/// How long a `--test_run` runs: the round's `test_run_min_duration_ms` and, for Offline and
/// Server, one query; a `--min_duration` / `--min_query_count` given on the command line beats
/// those defaults (an explicit flag wins over `--test_run`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TestRunLimits {
    /// `--min_duration` from the command line, in ms.
    pub min_duration_ms: Option<u64>,
    /// `--min_query_count` from the command line.
    pub min_query_count: Option<u64>,
}

impl TestRunLimits {
    /// The minimum duration the test run has in `round`.
    pub fn min_duration_ms(&self, round: &Round) -> u64 {
        self.min_duration_ms.unwrap_or(round.test_run_min_duration_ms)
    }
}

/// A number as LoadGen's `strtod` reads it back exactly: shortest round-trip decimal.
fn number(v: f64) -> String {
    format!("{v}")
}

/// Every user.conf line of a config: `(LoadGen key, value, field it comes from)`, in a fixed order.
pub fn user_conf_entries(config: &CompiledConfig, purpose: ConfPurpose, round: &Round) -> Vec<(&'static str, String, &'static str)> {
    let s = &config.settings;
    let mut lines = Vec::new();
    match config.scenario {
        Scenario::Offline => {
            if let Some(q) = s.offline_expected_qps {
                lines.push(("target_qps", number(q), "offline_expected_qps"));
            }
        }
        Scenario::Server | Scenario::Interactive => {
            if let Some(q) = s.server_target_qps {
                lines.push(("target_qps", number(q * s.server_target_qps_adj_factor.unwrap_or(1.0)), "server_target_qps"));
            }
            if let Some(ns) = s.server_target_latency_ns {
                // LoadGen reads Server target_latency as whole milliseconds (validated at build time).
                lines.push(("target_latency", (ns / 1_000_000).to_string(), "server_target_latency_ns"));
            }
            if let Some(c) = s.coalesce_queries {
                lines.push(("coalesce_queries", u8::from(c).to_string(), "coalesce_queries"));
            }
            if let Some(m) = s.max_async_queries {
                lines.push(("max_async_queries", m.to_string(), "max_async_queries"));
            }
        }
        Scenario::SingleStream => {
            if let Some(ns) = s.single_stream_expected_latency_ns {
                lines.push(("target_latency", number(ns as f64 / 1e6), "single_stream_expected_latency_ns"));
            }
        }
        Scenario::MultiStream => {
            if let Some(ns) = s.multi_stream_expected_latency_ns {
                lines.push(("target_latency", number(ns as f64 / 1e6), "multi_stream_expected_latency_ns"));
            }
        }
    }
    if let Some(v) = s.performance_sample_count_override {
        lines.push(("performance_sample_count_override", v.to_string(), "performance_sample_count_override"));
    }
    match purpose {
        ConfPurpose::Submission => {
            if let Some(v) = s.min_duration {
                lines.push(("min_duration", v.to_string(), "min_duration"));
            }
            if let Some(v) = s.min_query_count {
                lines.push(("min_query_count", v.to_string(), "min_query_count"));
            }
        }
        ConfPurpose::TestRun(limits) => {
            let min_duration = limits.min_duration_ms(round).to_string();
            match limits.min_duration_ms {
                Some(_) => lines.push(("min_duration", min_duration, "--min_duration (command line, over --test_run)")),
                None => lines.push(("min_duration", min_duration, "--test_run")),
            }
            match limits.min_query_count {
                Some(n) => lines.push(("min_query_count", n.to_string(), "--min_query_count (command line, over --test_run)")),
                None if matches!(config.scenario, Scenario::Offline | Scenario::Server | Scenario::Interactive) => lines.push(("min_query_count", "1".to_string(), "--test_run")),
                None => {}
            }
        }
    }
    if let Some(v) = s.max_duration {
        lines.push(("max_duration", v.to_string(), "max_duration"));
    }
    if let Some(v) = s.max_query_count {
        lines.push(("max_query_count", v.to_string(), "max_query_count"));
    }
    lines
}

/// user.conf text: `<LoadGen model>.<LoadGen scenario>.<key> = <value>` lines.
pub fn user_conf(config: &CompiledConfig, round: &Round, bench: &BenchmarkRound, purpose: ConfPurpose) -> String {
    let model = bench.loadgen_model_for(config.scenario);
    let scenario = config.scenario.loadgen().name();
    let mut out = String::new();
    let _ = writeln!(out, "# Generated by mlperf from the compiled configuration; edit configs/ and regenerate, never this file.");
    let _ = writeln!(
        out,
        "# {} / {} / {} [{}], round {}{}",
        config.system,
        config.benchmark,
        config.scenario,
        config.workload.section_name(),
        round.id,
        if matches!(purpose, ConfPurpose::TestRun(_)) { ", --test_run (not submittable)" } else { "" }
    );
    for (key, value, field) in user_conf_entries(config, purpose, round) {
        let from = config.origin_of(field).map(|o| format!(" from {}", o.at.file)).unwrap_or_default();
        let _ = writeln!(out, "# {field}{from}");
        let _ = writeln!(out, "{model}.{scenario}.{key} = {value}");
    }
    out
}

/// measurements.json (v6) / `<system>_<Scenario>.json` (v5): the five fields the checker requires.
pub fn measurements_json(config: &CompiledConfig) -> String {
    let info = benchmark::find(&config.benchmark).expect("compiled configs name catalog benchmarks");
    let precision = config.settings.precision.unwrap_or(DataType::Fp32);
    let input = config.settings.input_dtype.unwrap_or(precision);
    let value = serde_json::json!({
        "input_data_types": input.name(),
        "retraining": "No",
        "starting_weights_filename": info.starting_weights,
        "weight_data_types": precision.name(),
        "weight_transformations": (info.weight_transformations)(precision),
    });
    canonical_json(&value)
}

/// Flags that select exactly this config on the command line.
pub fn selection_flags(config: &CompiledConfig) -> String {
    let w = config.workload;
    let mut flags = format!("--benchmarks={} --scenarios={}", config.benchmark, config.scenario.name().to_ascii_lowercase());
    if w != Workload::default() {
        flags.push_str(&format!(" --config_ver={}", w.section_name()));
    }
    flags
}

/// The per-scenario README: how to reproduce this exact run, and the settings it used.
pub fn readme(config: &CompiledConfig, system: &SystemInfo, round: &Round, bench: &BenchmarkRound) -> String {
    let name = system_name(&system.id, config.workload);
    let dir = bench.checker_model(config.workload.accuracy).unwrap_or(&config.benchmark);
    let flags = selection_flags(config);
    let mut out = String::new();
    let _ = writeln!(out, "# {name} / {dir} / {}\n", config.scenario);
    let _ = writeln!(
        out,
        "Generated by mlperf from the compiled configuration for round {} (LoadGen {}). Workload: harness {}, accuracy target {} %, {}.\n",
        round.id,
        round.loadgen.version,
        config.workload.harness.name(),
        config.workload.accuracy.key(),
        config.workload.power.name()
    );
    let _ = writeln!(out, "## Reproduce\n");
    let _ = writeln!(out, "```sh");
    let _ = writeln!(out, "# A binary locked to {} (refuses other hardware):", system.id);
    let _ = writeln!(out, "cargo build --release --features {}", system.feature);
    let _ = writeln!(out, "./target/release/mlperf generate_engines {flags}");
    let _ = writeln!(out, "./target/release/mlperf run_harness {flags} --test_mode=AccuracyOnly");
    let _ = writeln!(out, "./target/release/mlperf run_harness {flags} --test_mode=PerformanceOnly");
    if !bench.compliance.is_empty() {
        let _ = writeln!(out, "./target/release/mlperf run_audit_harness {flags}   # {}", bench.compliance.iter().map(|t| t.name()).collect::<Vec<_>>().join(", "));
    }
    let _ = writeln!(out, "```\n");
    let _ = writeln!(out, "## Settings\n");
    let _ = writeln!(out, "| field | value | set in |");
    let _ = writeln!(out, "|---|---|---|");
    for (spec, value) in config.settings.set_fields() {
        let at = config.origin_of(spec.name).map(|o| o.at.file.to_string()).unwrap_or_default();
        let _ = writeln!(out, "| `{}` | `{}` | `{at}` |", spec.name, value.replace('|', "\\|"));
    }
    out
}

/// calibration_process.adoc (v5 layout).
pub fn calibration_adoc(config: &CompiledConfig) -> String {
    let precision = config.settings.precision.unwrap_or(DataType::Fp32);
    let mut out = String::from("= Calibration\n\n");
    match precision {
        DataType::Int8 | DataType::Fp8 | DataType::Fp4 => {
            let _ = writeln!(
                out,
                "Weights are quantized to {} with scales computed on the MLPerf calibration set for {}, using `mlperf calibrate {}`. No retraining was done.",
                precision.name(),
                config.benchmark,
                selection_flags(config)
            );
        }
        other => {
            let _ = writeln!(out, "No calibration: the engine runs in {}, converted from the reference weights without retraining.", other.name());
        }
    }
    out
}

/// The system description the checker reads, named for this system name.
pub fn system_json(system: &SystemInfo, workload: Workload) -> String {
    let mut value: serde_json::Value = serde_json::from_str(&system.description_json).expect("validated at build time");
    if workload.power == PowerSetting::MaxQ
        && let Some(name) = value.get("system_name").and_then(|v| v.as_str()).map(|s| format!("{s}, MaxQ"))
    {
        value["system_name"] = serde_json::Value::String(name);
    }
    canonical_json(&value)
}
