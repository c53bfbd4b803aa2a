//! Text the `info`, `systems` and `config` commands print.

use crate::detect::{self, DetectedHardware, SystemMatch};
use mlperf_config::{CompiledConfig, Settings, Tables};
use std::fmt::Write;

/// `mlperf systems`: every system this binary holds.
pub fn systems(tables: &Tables) -> String {
    let mut out = String::new();
    match tables.locked_system {
        Some(id) => {
            let _ = writeln!(out, "Locked build: this binary holds only {id}.");
        }
        None => {
            let _ = writeln!(out, "Development build: {} systems, chosen at run time by detection or --system_name.", tables.systems.len());
        }
    }
    let _ = writeln!(out, "{:<38} {:<18} {:<17} {:>5} {:>7}  summary", "system", "feature", "type", "GPUs", "configs");
    for s in tables.systems {
        let _ = writeln!(out, "{:<38} {:<18} {:<17} {:>5} {:>7}  {}", s.id, s.feature, s.system_type, s.total_gpus(), tables.configs_for(&s.id).count(), s.summary);
    }
    out
}

/// `mlperf info`: detected hardware, the matched system or the nearest one and why not.
pub fn info(tables: &Tables, hw: &DetectedHardware) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Hardware (from {}):", hw.source);
    let _ = writeln!(out, "  CPU: {} {}", hw.cpu_arch, hw.cpu_vendor.as_deref().unwrap_or("(vendor unknown)"));
    let _ = writeln!(out, "  host memory: {:.1} GiB", hw.host_memory_gib);
    if hw.gpus.is_empty() {
        let _ = writeln!(out, "  GPUs: none");
    }
    for (i, g) in hw.gpus.iter().enumerate() {
        let power = g.max_power_w.map(|p| format!(", {p:.0} W")).unwrap_or_default();
        let _ = writeln!(out, "  GPU {i}: {} (PCI {}, {:.1} GiB{power})", g.name, g.pci_device_id, g.memory_gib);
    }
    match detect::match_system(hw, tables.systems) {
        SystemMatch::Matched(s) => {
            let _ = writeln!(out, "System: {} ({})", s.id, s.summary);
        }
        SystemMatch::Unmatched { unregistered_id, nearest } => {
            let _ = writeln!(out, "System: none of the {} compiled systems matches; id {unregistered_id}", tables.systems.len());
            if let Some((near, why)) = nearest {
                let _ = writeln!(out, "Nearest system: {}, which did not match because:", near.id);
                for w in why {
                    let _ = writeln!(out, "  - {w}");
                }
            }
        }
    }
    if let Some(locked) = tables.locked_system {
        let _ = writeln!(out, "Build: locked to {locked}");
    } else {
        let _ = writeln!(out, "Build: development (all systems)");
    }
    out
}

/// `mlperf config show`: effective values and, with `explain`, where each was set and what it overrode.
pub fn config(config: &CompiledConfig, explain: bool) -> String {
    let mut out = String::new();
    let w = config.workload;
    let _ = writeln!(
        out,
        "{} / {} / {} / [{}] ({}, {} %, {})  rounds: {}",
        config.system,
        config.benchmark,
        config.scenario,
        w.section_name(),
        w.harness.name(),
        w.accuracy.key(),
        w.power.name(),
        config.rounds.join(", ")
    );
    let _ = writeln!(out, "  defined at {}", config.defined_at);
    let width = config.settings.set_fields().map(|(f, _)| f.name.len()).max().unwrap_or(0);
    for (spec, value) in config.settings.set_fields() {
        let origin = config.origin_of(spec.name).map(|o| o.at.to_string()).unwrap_or_default();
        let _ = writeln!(out, "  {:<width$} = {value:<24} {origin}", spec.name);
        if explain {
            let unit = spec.unit.map(|u| format!(" [{u}]")).unwrap_or_default();
            let lg = spec.loadgen_key.map(|k| format!(" -> user.conf {k}")).unwrap_or_default();
            let _ = writeln!(out, "  {:<width$}   {}{unit}{lg}", "", spec.doc);
            if let Some(o) = config.origin_of(spec.name) {
                for prior in o.overrode.iter() {
                    let _ = writeln!(out, "  {:<width$}   overrode {} at {}", "", prior.value, prior.at);
                }
            }
        }
    }
    out
}

/// `mlperf config fields`: the field registry.
pub fn fields() -> String {
    let mut out = String::new();
    let mut group = "";
    for f in Settings::FIELDS {
        if f.group != group {
            group = f.group;
            let _ = writeln!(out, "\n[{group}]");
        }
        let mut scope = Vec::new();
        if !f.benchmarks.is_empty() {
            scope.push(format!("benchmarks: {}", f.benchmarks.join(", ")));
        }
        if !f.scenarios.is_empty() {
            scope.push(format!("scenarios: {}", f.scenarios.join(", ")));
        }
        if let Some(p) = f.power {
            scope.push(format!("only {p}"));
        }
        if !f.required_for.is_empty() {
            scope.push(format!("required for {}", f.required_for.join(", ")));
        }
        if let Some(k) = f.loadgen_key {
            scope.push(format!("user.conf {k}"));
        }
        let unit = f.unit.map(|u| format!(" [{u}]")).unwrap_or_default();
        let _ = writeln!(out, "  {}{unit}: {}", f.name, f.kind.describe());
        let _ = writeln!(out, "      {}", f.doc);
        if !scope.is_empty() {
            let _ = writeln!(out, "      ({})", scope.join("; "));
        }
    }
    out
}
