//! Resolving what the user asked for (system, benchmarks, scenarios, workload flags) into compiled
//! configs, with errors that list what *is* configured.

use crate::detect::{self, SystemMatch};
use mlperf_config::{AccuracyTarget, CompiledConfig, Harness, PowerSetting, Scenario, SystemInfo, Tables, Workload, benchmark};

/// How the system was chosen, for logs and `mlperf info`.
#[derive(Debug)]
pub struct SystemChoice {
    pub system: &'static SystemInfo,
    pub how: String,
    /// Set when a development build was told which system to use and the hardware disagrees.
    pub hardware_mismatch: Vec<String>,
}

/// Environment variable that names the system in development builds (NVIDIA's `SYSTEM_NAME`).
pub const SYSTEM_NAME_ENV: &str = "SYSTEM_NAME";

/// Picks the system: a locked build uses its one system and refuses other hardware; a development
/// build takes `--system_name` / `SYSTEM_NAME`, else the detected match.
pub fn choose_system(tables: &Tables, requested: Option<&str>) -> Result<SystemChoice, String> {
    let hw = detect::detect()?;
    if let Some(locked) = tables.locked_system {
        let system = tables.system(locked).expect("a locked build holds its system");
        if let Some(name) = requested.filter(|n| *n != locked) {
            return Err(format!("this binary is locked to {locked}; it cannot run as {name}. Build without system features for development use"));
        }
        let why = detect::mismatches(&hw, system);
        if !why.is_empty() {
            return Err(format!("this binary is locked to {locked}, but this machine does not match it:\n  - {}\n(hardware from {})", why.join("\n  - "), hw.source));
        }
        return Ok(SystemChoice { system, how: "locked build, hardware matches".into(), hardware_mismatch: vec![] });
    }
    let env_name = std::env::var(SYSTEM_NAME_ENV).ok();
    if let Some(name) = requested.or(env_name.as_deref()) {
        let system = tables.system(name).ok_or_else(|| {
            let known: Vec<&str> = tables.systems.iter().map(|s| s.id.as_ref()).collect();
            let hint = mlperf_config::diag::did_you_mean(name, known.iter().copied()).map(|m| format!(" Did you mean {m}?")).unwrap_or_default();
            format!("no system named {name}.{hint} Known systems: {}", known.join(", "))
        })?;
        let source = if requested.is_some() { "--system_name" } else { "SYSTEM_NAME" };
        return Ok(SystemChoice { system, how: format!("chosen by {source}"), hardware_mismatch: detect::mismatches(&hw, system) });
    }
    match detect::match_system(&hw, tables.systems) {
        SystemMatch::Matched(system) => Ok(SystemChoice { system, how: format!("detected ({})", hw.source), hardware_mismatch: vec![] }),
        SystemMatch::Unmatched { unregistered_id, nearest } => {
            let mut msg = format!("this machine ({unregistered_id}) matches no compiled system.");
            if let Some((near, why)) = nearest {
                msg.push_str(&format!("\nNearest: {} — it did not match because:\n  - {}", near.id, why.join("\n  - ")));
            }
            msg.push_str("\nAdd the machine with `mlperf add_system` (see README \"Adding a system\") or pick one with --system_name / SYSTEM_NAME.");
            Err(msg)
        }
    }
}

/// The workload flags in resolved form. `None` fields mean "the default" unless `all` is set.
#[derive(Debug, Clone, Default)]
pub struct WorkloadQuery {
    pub all: bool,
    pub harness: Option<Harness>,
    pub accuracy: Option<AccuracyTarget>,
    pub power: Option<PowerSetting>,
}

impl WorkloadQuery {
    /// From NVIDIA's flags: `--config_ver` (legacy names, `all`), then the explicit ones override it.
    pub fn from_flags(config_ver: Option<&str>, accuracy: Option<&str>, power: Option<&str>, harness: Option<&str>) -> Result<Self, String> {
        let mut q = WorkloadQuery::default();
        if let Some(cv) = config_ver {
            if cv == "all" {
                q.all = true;
            } else {
                let w = Workload::from_config_ver(cv)
                    .ok_or_else(|| format!("--config_ver={cv} names no workload; use default, high_accuracy, maxq, high_accuracy_maxq, triton, ... or all"))?;
                (q.harness, q.accuracy, q.power) = (Some(w.harness), Some(w.accuracy), Some(w.power));
            }
        }
        if let Some(a) = accuracy {
            q.accuracy = Some(AccuracyTarget::parse(a).ok_or_else(|| format!("--accuracy_target={a}: use 0.99 or 0.999"))?);
        }
        if let Some(p) = power {
            q.power = Some(PowerSetting::parse(p).ok_or_else(|| format!("--power_setting={p}: use MaxP or MaxQ"))?);
        }
        if let Some(h) = harness {
            q.harness = Some(Harness::parse(h).ok_or_else(|| format!("--harness_type={h}: use custom, triton or hetero"))?);
        }
        Ok(q)
    }

    fn accepts(&self, w: Workload) -> bool {
        let d = Workload::default();
        self.fits(self.harness, w.harness, d.harness) && self.fits(self.accuracy, w.accuracy, d.accuracy) && self.fits(self.power, w.power, d.power)
    }

    /// An unset flag accepts the default value (or anything with `--config_ver=all`).
    fn fits<T: PartialEq>(&self, want: Option<T>, have: T, default: T) -> bool {
        match want {
            Some(x) => x == have,
            None => self.all || have == default,
        }
    }
}

/// Splits NVIDIA's comma lists (`--benchmarks=resnet50,bert`); `all` or nothing means every one.
pub fn split_list(value: Option<&str>) -> Vec<String> {
    value.map(|v| v.split(',').map(|s| s.trim().to_string()).filter(|s| !s.is_empty() && s != "all").collect()).unwrap_or_default()
}

/// The configs of `system` for the requested benchmarks, scenarios and workload, or an error that
/// names what is configured instead.
pub fn select_configs(tables: &Tables, system: &SystemInfo, benchmarks: &[String], scenarios: &[String], workload: &WorkloadQuery) -> Result<Vec<&'static CompiledConfig>, String> {
    let mut bench_ids = Vec::new();
    for b in benchmarks {
        let info = benchmark::find(b).ok_or_else(|| {
            let hint = mlperf_config::diag::did_you_mean(b, benchmark::BENCHMARKS.iter().map(|i| i.id)).map(|m| format!(" Did you mean {m}?")).unwrap_or_default();
            format!("unknown benchmark {b}.{hint}")
        })?;
        bench_ids.push(info.id);
    }
    let mut wanted_scenarios = Vec::new();
    for s in scenarios {
        wanted_scenarios.push(Scenario::parse(s).ok_or_else(|| format!("unknown scenario {s}; use offline, server, singlestream, multistream or interactive"))?);
    }
    let of_system: Vec<&'static CompiledConfig> = tables.configs_for(&system.id).collect();
    let mut chosen = Vec::new();
    let mut problems = Vec::new();
    let bench_filter: Vec<&str> = if bench_ids.is_empty() { distinct(of_system.iter().map(|c| c.benchmark.as_ref())) } else { bench_ids };
    for bench in bench_filter {
        let of_bench: Vec<_> = of_system.iter().filter(|c| c.benchmark == bench).collect();
        if of_bench.is_empty() {
            problems.push(format!("{} has no configs for {bench} (configured: {})", system.id, distinct(of_system.iter().map(|c| c.benchmark.as_ref())).join(", ")));
            continue;
        }
        let scen_filter: Vec<Scenario> = if wanted_scenarios.is_empty() { distinct(of_bench.iter().map(|c| c.scenario)) } else { wanted_scenarios.clone() };
        for scenario in scen_filter {
            let candidates: Vec<_> = of_bench.iter().filter(|c| c.scenario == scenario).collect();
            if candidates.is_empty() {
                problems.push(format!(
                    "{}/{bench} has no {scenario} config (configured scenarios: {}); add configs/{bench}/{}/{scenario}.toml",
                    system.id,
                    distinct(of_bench.iter().map(|c| c.scenario.name())).join(", "),
                    system.id
                ));
                continue;
            }
            let picked: Vec<_> = candidates.iter().filter(|c| workload.accepts(c.workload)).map(|c| ***c).collect();
            if picked.is_empty() {
                problems.push(format!(
                    "{}/{bench}/{scenario} has no config for the requested workload (configured: {}); pick one with --config_ver",
                    system.id,
                    candidates.iter().map(|c| c.workload.section_name()).collect::<Vec<_>>().join(", ")
                ));
            }
            chosen.extend(picked);
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    Ok(chosen)
}

fn distinct<T: PartialEq + Copy>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}
