//! Resolving what the user asked for (system, benchmarks, scenarios, workload flags, config
//! overrides) into compiled configs with their effective settings, once, with errors that list
//! what *is* configured (ripgrep's low-level to high-level arguments: the CLI parses the flags into
//! [`SelectionArgs`], [`resolve`] turns them into a [`Resolved`] selection).

use crate::detect::{self, SystemMatch};
use crate::submittable::NonSubmittable;
use mlperf_config::benchmark::BenchmarkInfo;
use mlperf_config::{AccuracyTarget, CompiledConfig, Harness, PowerSetting, Round, Scenario, Settings, SystemInfo, Tables, Workload};

/// How the system was chosen, for logs and `mlperf info`.
#[derive(Debug)]
pub struct SystemChoice {
    pub system: &'static SystemInfo,
    pub how: String,
    /// Set when a development build was told which system to use and the hardware disagrees.
    pub hardware_mismatch: Vec<String>,
}

/// Why the selection cannot make a run; each is a config error (exit status 3).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SelectError {
    #[error("--{field}={value}: command-line config overrides are refused by locked builds (this one is locked to {locked}); build without system features to experiment")]
    OverrideInLockedBuild { field: String, value: String, locked: String },
    #[error("this binary is locked to {locked}; it cannot run as {requested}. Build without system features for development use")]
    LockedToAnother { locked: String, requested: String },
    #[error("this binary is locked to {locked}, but this machine does not match it:\n  - {}\n(hardware from {hardware_from})", .mismatch.join("\n  - "))]
    LockedHardwareDiffers { locked: String, mismatch: Vec<String>, hardware_from: String },
    #[error("no system named {name}.{} Known systems: {}", .suggestion.as_ref().map(|m| format!(" Did you mean {m}?")).unwrap_or_default(), .known.join(", "))]
    UnknownSystem { name: String, suggestion: Option<String>, known: Vec<String> },
    /// Detection found a machine no compiled system describes; the nearest and why it differs.
    #[error("this machine ({id}) matches no compiled system.{}\nAdd the machine with `mlperf add_system` (see docs/configs-and-systems.md, \"Adding a system\") or pick one with --system_name / SYSTEM_NAME.", .nearest.as_ref().map(|(near, why)| format!("\nNearest: {near} — it did not match because:\n  - {}", why.join("\n  - "))).unwrap_or_default())]
    Unregistered { id: String, nearest: Option<(String, Vec<String>)> },
    #[error(transparent)]
    Detect(#[from] detect::DetectError),
    #[error("--{field}={value}: {why}")]
    Override { field: String, value: String, why: String },
    /// What the selection asked for and the system has no config of, one line each.
    #[error("{}", .0.join("\n"))]
    NotConfigured(Vec<String>),
    #[error("{system}/{label} is not a valid config in round {round} (valid in: {valid})")]
    NotInRound { system: String, label: String, round: String, valid: String },
    #[error("none of the selected configs of {system} is valid in round {round}; check --benchmarks/--scenarios/--round")]
    NoneInRound { system: String, round: String },
}

impl From<SelectError> for crate::Error {
    fn from(e: SelectError) -> crate::Error {
        crate::Error::Config(e.to_string())
    }
}

/// Environment variable that names the system in development builds (NVIDIA's `SYSTEM_NAME`).
pub const SYSTEM_NAME_ENV: &str = "SYSTEM_NAME";

/// Picks the system: a locked build uses its one system and refuses other hardware; a development
/// build takes `--system_name` / `SYSTEM_NAME`, else the detected match.
pub fn choose_system(tables: &Tables, requested: Option<&str>) -> Result<SystemChoice, SelectError> {
    let detected = detect::detect();
    if let Some(locked) = tables.locked_system {
        let hw = detected?;
        let system = tables.system(locked).expect("a locked build holds its system");
        if let Some(name) = requested.filter(|n| *n != locked) {
            return Err(SelectError::LockedToAnother { locked: locked.to_string(), requested: name.to_string() });
        }
        let why = detect::mismatches(&hw, system);
        if !why.is_empty() {
            return Err(SelectError::LockedHardwareDiffers { locked: locked.to_string(), mismatch: why, hardware_from: hw.source });
        }
        return Ok(SystemChoice { system, how: "locked build, hardware matches".into(), hardware_mismatch: vec![] });
    }
    let env_name = std::env::var(SYSTEM_NAME_ENV).ok();
    if let Some(name) = requested.or(env_name.as_deref()) {
        let system = tables.system(name).ok_or_else(|| {
            let known: Vec<String> = tables.systems.iter().map(|s| s.id.to_string()).collect();
            let suggestion = mlperf_config::diag::did_you_mean(name, known.iter().map(String::as_str)).map(|m| m.to_string());
            SelectError::UnknownSystem { name: name.to_string(), suggestion, known }
        })?;
        let source = if requested.is_some() { "--system_name" } else { "SYSTEM_NAME" };
        // A named system runs even where detection fails, its runs marked as not matching.
        let hardware_mismatch = match &detected {
            Ok(hw) => detect::mismatches(hw, system),
            Err(e) => {
                tracing::warn!("hardware detection failed ({e}); running as {name}, as {source} says");
                vec![format!("hardware not detected: {e}")]
            }
        };
        return Ok(SystemChoice { system, how: format!("chosen by {source}"), hardware_mismatch });
    }
    let hw = detected?;
    match detect::match_system(&hw, tables.systems) {
        SystemMatch::Matched(system) => Ok(SystemChoice { system, how: format!("detected ({})", hw.source), hardware_mismatch: vec![] }),
        SystemMatch::Unmatched { unregistered_id, nearest } => {
            Err(SelectError::Unregistered { id: unregistered_id, nearest: nearest.map(|(near, why)| (near.id.to_string(), why)) })
        }
    }
}

/// One legacy `--config_ver` name: a workload, or `all` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigVer {
    All,
    Workload(Workload),
}

impl ConfigVer {
    /// NVIDIA's names: `all`, or a legacy name its substrings map onto a workload (`default`,
    /// `high_accuracy`, `maxq`, `triton_high_accuracy`, ...).
    pub fn parse(name: &str) -> Option<ConfigVer> {
        if name.eq_ignore_ascii_case("all") {
            return Some(ConfigVer::All);
        }
        Workload::from_config_ver(name).map(ConfigVer::Workload)
    }
}

/// The selection flags, parsed and typed (NVIDIA's RUN_ARGS): empty lists mean every configured one.
#[derive(Debug, Clone, Default)]
pub struct SelectionArgs {
    pub benchmarks: Vec<&'static BenchmarkInfo>,
    pub scenarios: Vec<Scenario>,
    /// `--config_ver=default,high_accuracy`: the workloads (none: the default one).
    pub config_ver: Vec<ConfigVer>,
    /// `--accuracy_target`, `--power_setting`, `--harness_type`: override those parts of every
    /// `--config_ver` workload.
    pub accuracy: Option<AccuracyTarget>,
    pub power: Option<PowerSetting>,
    pub harness: Option<Harness>,
    /// `--system_name` (development builds; else `SYSTEM_NAME` or detection).
    pub system_name: Option<String>,
}

impl SelectionArgs {
    fn accepts(&self, w: Workload) -> bool {
        let explicit = |accuracy: AccuracyTarget, power: PowerSetting, harness: Harness| Workload {
            accuracy: self.accuracy.unwrap_or(accuracy),
            power: self.power.unwrap_or(power),
            harness: self.harness.unwrap_or(harness),
        };
        if self.config_ver.contains(&ConfigVer::All) {
            return explicit(w.accuracy, w.power, w.harness) == w;
        }
        let listed: Vec<Workload> = self.config_ver.iter().filter_map(|c| if let ConfigVer::Workload(w) = c { Some(*w) } else { None }).collect();
        let listed = if listed.is_empty() { vec![Workload::default()] } else { listed };
        listed.iter().any(|l| explicit(l.accuracy, l.power, l.harness) == w)
    }
}

/// One selected config with its effective settings (the command line's overrides applied, with
/// the build's type and unit checks).
#[derive(Debug, Clone)]
pub struct Selected {
    pub config: &'static CompiledConfig,
    pub settings: Settings,
}

impl Selected {
    /// `benchmark/Scenario/workload`, for messages.
    pub fn label(&self) -> String {
        let c = self.config;
        format!("{}/{}/{}", c.benchmark, c.scenario, c.workload.section_name())
    }
}

/// A `--<config field>=<value>` override of the command line.
#[derive(Debug, Clone, PartialEq)]
pub struct Override {
    pub field: String,
    pub value: String,
}

/// Everything a command works on, resolved once before anything runs: the system, the configs
/// with their effective settings, and why runs of them could not be submitted.
#[derive(Debug)]
pub struct Resolved {
    pub system: SystemChoice,
    pub configs: Vec<Selected>,
    pub overrides: Vec<Override>,
    /// The selection's own reasons (overrides, a system chosen against the hardware).
    pub non_submittable: Vec<NonSubmittable>,
}

/// Resolves the selection flags and overrides against the compiled tables: every flag and
/// override error is reported here, before any model, data or engine is touched. Locked builds
/// refuse overrides.
pub fn resolve(tables: &Tables, args: &SelectionArgs, overrides: &[Override]) -> Result<Resolved, SelectError> {
    if let (Some(first), Some(locked)) = (overrides.first(), tables.locked_system) {
        return Err(SelectError::OverrideInLockedBuild { field: first.field.clone(), value: first.value.clone(), locked: locked.to_string() });
    }
    let system = choose_system(tables, args.system_name.as_deref())?;
    let configs = select_configs(tables, system.system, args)?
        .into_iter()
        .map(|config| apply_overrides(&config.settings, overrides).map(|settings| Selected { config, settings }))
        .collect::<Result<Vec<_>, SelectError>>()?;
    let mut non_submittable: Vec<NonSubmittable> = overrides.iter().map(|o| NonSubmittable::Override { field: o.field.clone(), value: o.value.clone() }).collect();
    if !system.hardware_mismatch.is_empty() {
        non_submittable.push(NonSubmittable::HardwareMismatch { system: system.system.id.to_string(), mismatch: system.hardware_mismatch.clone() });
    }
    Ok(Resolved { system, configs, overrides: overrides.to_vec(), non_submittable })
}

impl Resolved {
    /// The configs, which must all be valid submission configs of `round`.
    pub fn require_round(&self, round: &Round) -> Result<(), SelectError> {
        match self.configs.iter().find(|s| !s.config.rounds.contains(&round.id)) {
            Some(s) => Err(SelectError::NotInRound { system: s.config.system.to_string(), label: s.label(), round: round.id.to_string(), valid: s.config.rounds.join(", ") }),
            None => Ok(()),
        }
    }

    /// Keeps the configs valid in `round`; an error when none is.
    pub fn keep_round(&mut self, round: &Round) -> Result<(), SelectError> {
        self.configs.retain(|s| s.config.rounds.contains(&round.id));
        if self.configs.is_empty() {
            return Err(SelectError::NoneInRound { system: self.system.system.id.to_string(), round: round.id.to_string() });
        }
        Ok(())
    }

    /// The overrides as `(field, value)` pairs, as run plans record them.
    pub fn override_pairs(&self) -> Vec<(String, String)> {
        self.overrides.iter().map(|o| (o.field.clone(), o.value.clone())).collect()
    }
}

/// Applies `--<field>=<value>` overrides to a copy of the settings, with the same type and unit
/// checks as the build.
pub fn apply_overrides(settings: &Settings, overrides: &[Override]) -> Result<Settings, SelectError> {
    let mut out = settings.clone();
    for Override { field, value } in overrides {
        // Read the value as TOML; a bare word that is not TOML is a string.
        let raw = toml::from_str::<toml::Table>(&format!("v = {value}")).ok().and_then(|t| t.get("v").cloned()).unwrap_or_else(|| toml::Value::String(value.clone()));
        out.set_toml(field, &raw).map_err(|e| SelectError::Override { field: field.clone(), value: value.clone(), why: e.to_string() })?;
    }
    Ok(out)
}

/// The configs of `system` for the requested benchmarks, scenarios and workloads, or an error
/// that names what is configured instead.
fn select_configs(tables: &Tables, system: &SystemInfo, args: &SelectionArgs) -> Result<Vec<&'static CompiledConfig>, SelectError> {
    let of_system: Vec<&'static CompiledConfig> = tables.configs_for(&system.id).collect();
    let mut chosen = Vec::new();
    let mut problems = Vec::new();
    let bench_filter: Vec<&str> =
        if args.benchmarks.is_empty() { distinct(of_system.iter().map(|c| c.benchmark.as_ref())) } else { args.benchmarks.iter().map(|b| b.id).collect() };
    for bench in bench_filter {
        let of_bench: Vec<_> = of_system.iter().filter(|c| c.benchmark == bench).collect();
        if of_bench.is_empty() {
            problems.push(format!("{} has no configs for {bench} (configured: {})", system.id, distinct(of_system.iter().map(|c| c.benchmark.as_ref())).join(", ")));
            continue;
        }
        let scen_filter: Vec<Scenario> = if args.scenarios.is_empty() { distinct(of_bench.iter().map(|c| c.scenario)) } else { args.scenarios.clone() };
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
            let picked: Vec<_> = candidates.iter().filter(|c| args.accepts(c.workload)).map(|c| ***c).collect();
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
        return Err(SelectError::NotConfigured(problems));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn w(accuracy: AccuracyTarget, power: PowerSetting) -> Workload {
        Workload { accuracy, power, ..Workload::default() }
    }

    #[test]
    fn config_ver_lists_select_each_named_workload() {
        use AccuracyTarget::*;
        use PowerSetting::*;
        let both = SelectionArgs { config_ver: ["default", "high_accuracy"].iter().map(|n| ConfigVer::parse(n).unwrap()).collect(), ..SelectionArgs::default() };
        assert!(both.accepts(w(K99, MaxP)) && both.accepts(w(K99_9, MaxP)) && !both.accepts(w(K99, MaxQ)));
        let none = SelectionArgs::default();
        assert!(none.accepts(Workload::default()) && !none.accepts(w(K99_9, MaxP)));
        let all_maxq = SelectionArgs { config_ver: vec![ConfigVer::All], power: Some(MaxQ), ..SelectionArgs::default() };
        assert!(all_maxq.accepts(w(K99_9, MaxQ)) && !all_maxq.accepts(w(K99_9, MaxP)));
        let explicit = SelectionArgs { config_ver: vec![ConfigVer::parse("high_accuracy").unwrap()], power: Some(MaxQ), ..SelectionArgs::default() };
        assert!(explicit.accepts(w(K99_9, MaxQ)) && !explicit.accepts(w(K99_9, MaxP)));
        assert_eq!(ConfigVer::parse("fast"), None);
    }

    #[test]
    fn overrides_are_checked_like_the_build() {
        let o = |field: &str, value: &str| Override { field: field.into(), value: value.into() };
        let s = apply_overrides(&Settings::default(), &[o("min_duration", "\"10 s\""), o("gpu_batch_size", "{resnet50=8}")]).unwrap();
        assert_eq!((s.min_duration, s.batch_size("resnet50")), (Some(10_000), Some(8)));
        let e = apply_overrides(&Settings::default(), &[o("offline_expected_qps", "fast")]).unwrap_err().to_string();
        assert!(e.starts_with("--offline_expected_qps=fast: ") && e.contains("expects a number"), "{e}");
    }
}
