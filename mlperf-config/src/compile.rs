//! The configuration compiler: reads `rounds/`, `systems/` and `configs/`, resolves `extends`,
//! validates everything against the schema, the systems and the rounds, and returns the tables that
//! build.rs bakes (or every diagnostic, rendered like rustc's).

use crate::benchmark::{self, BenchmarkInfo};
use crate::diag::{Diagnostic, FileId, Sources, Span, did_you_mean};
use crate::field::FieldSpec;
use crate::raw::RawValue;
use crate::raw::parse_config_file;
use crate::resolve::{ConfigUnit, Resolved, resolve_all};
use crate::round::{BenchmarkRound, Round};
use crate::schema::Settings;
use crate::serving::check_server_url;
use crate::system::{SystemInfo, load_system};
use crate::table::{CompiledConfig, FieldOrigin, Origin, Overridden};
use crate::types::{EngineKind, PowerSetting, Scenario, ServingApi, ServingEngine, Workload};
use std::borrow::Cow;
use std::path::{Path, PathBuf};

/// What to compile.
#[derive(Debug, Clone)]
pub struct CompileOptions {
    /// Project root holding `rounds/`, `systems/`, `configs/`.
    pub root: PathBuf,
    /// `system-*` features declared in Cargo.toml.
    pub declared_features: Vec<String>,
    /// `system-*` features enabled for this build.
    pub enabled_features: Vec<String>,
    /// Only these rounds (None = every file in rounds/).
    pub rounds: Option<Vec<String>>,
}

/// A successful compilation.
#[derive(Debug)]
pub struct Compiled {
    pub sources: Sources,
    /// Default round first.
    pub rounds: Vec<Round>,
    pub systems: Vec<SystemInfo>,
    pub configs: Vec<CompiledConfig>,
    pub locked_system: Option<String>,
    pub warnings: Vec<Diagnostic>,
    /// Every file read, for `rerun-if-changed`.
    pub inputs: Vec<PathBuf>,
}

/// A failed compilation: the sources and every diagnostic found.
#[derive(Debug)]
pub struct CompileFailure {
    pub sources: Sources,
    pub diagnostics: Vec<Diagnostic>,
}

impl CompileFailure {
    pub fn render(&self) -> String {
        let errors = self.diagnostics.iter().filter(|d| d.is_error()).count();
        let mut out: String = self.diagnostics.iter().map(|d| d.render(&self.sources) + "\n").collect();
        out.push_str(&format!("error: the MLPerf configuration has {errors} error{}\n", if errors == 1 { "" } else { "s" }));
        out
    }
}

fn files_with_ext(dir: &Path, ext: &str, recursive: bool) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(dir) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() && recursive {
                out.extend(files_with_ext(&path, ext, true));
            } else if path.extension().and_then(|e| e.to_str()) == Some(ext) {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// Reads a file into `sources`; an unreadable file becomes a diagnostic.
fn read_into(sources: &mut Sources, root: &Path, path: &Path, errors: &mut Vec<Diagnostic>) -> Option<FileId> {
    match std::fs::read_to_string(path) {
        Ok(text) => Some(sources.add(relative(root, path), text)),
        Err(e) => {
            errors.push(Diagnostic::error("C0100", format!("cannot read {}: {e}", path.display())));
            None
        }
    }
}

pub fn compile(options: &CompileOptions) -> Result<Compiled, CompileFailure> {
    let root = &options.root;
    let mut sources = Sources::default();
    let mut errors = Vec::new();
    let mut inputs = Vec::new();

    // Rounds.
    let mut rounds = Vec::new();
    for path in files_with_ext(&root.join("rounds"), "toml", false) {
        inputs.push(path.clone());
        let Some(file) = read_into(&mut sources, root, &path, &mut errors) else { continue };
        match toml::from_str::<Round>(sources.text(file)) {
            Ok(round) => {
                if options.rounds.as_ref().is_none_or(|keep| keep.iter().any(|r| *r == round.id)) {
                    rounds.push(round);
                }
            }
            Err(e) => {
                let r = e.span().unwrap_or(0..0);
                errors.push(
                    Diagnostic::error("C0701", "invalid round table")
                        .at(Span { file, start: r.start, end: r.end.max(r.start + 1) }, e.message().trim().to_string())
                        .help("round files follow rounds/README.md"),
                );
            }
        }
    }
    // Newest round first: it is the default.
    rounds.sort_by_key(|r| std::cmp::Reverse(round_order(&r.id)));

    // Systems. Configs of a system whose files are broken are skipped rather than reported as
    // configs of an unknown system.
    let mut systems = Vec::new();
    let mut broken_systems = Vec::new();
    for path in files_with_ext(&root.join("systems"), "toml", false) {
        let json_path = path.with_extension("json");
        inputs.push(path.clone());
        inputs.push(json_path.clone());
        let Some(toml_file) = read_into(&mut sources, root, &path, &mut errors) else { continue };
        if !json_path.exists() {
            errors.push(
                Diagnostic::error("C0402", format!("system `{}` has no description {}", relative(root, &path), relative(root, &json_path)))
                    .at(Span { file: toml_file, start: 0, end: 1 }, "identity without description")
                    .help("add the checker's system description JSON next to the identity file"),
            );
            continue;
        }
        let Some(json_file) = read_into(&mut sources, root, &json_path, &mut errors) else { continue };
        match load_system(&sources, toml_file, json_file, &options.declared_features) {
            Ok(system) => systems.push(system),
            Err(mut e) => {
                errors.append(&mut e);
                broken_systems.extend(path.file_stem().and_then(|s| s.to_str()).map(str::to_string));
            }
        }
    }

    // Locked build.
    let locked_system = select_system(options, &systems, &mut errors);

    // Config files: parse; check their place, workload sections, keys and value types.
    let mut units = Vec::new();
    let mut places = Vec::new();
    for path in files_with_ext(&root.join("configs"), "toml", true) {
        inputs.push(path.clone());
        let Some(file) = read_into(&mut sources, root, &path, &mut errors) else { continue };
        match parse_config_file(&sources, file) {
            Ok(parsed) => {
                let unit = ConfigUnit { name: relative(&root.join("configs"), &path).trim_end_matches(".toml").to_string(), file: parsed };
                check_values(&unit.file, &mut errors);
                let place = classify(&unit, &sources, &systems, &broken_systems, &mut errors);
                if let Some(Place::Concrete { .. }) = place {
                    check_workload_sections(&unit, &mut errors);
                }
                units.push(unit);
                places.push(place);
            }
            Err(mut e) => errors.append(&mut e),
        }
    }
    // Resolving around a file that did not parse would only add noise (dangling references to it).
    if !errors.is_empty() {
        return Err(CompileFailure { sources, diagnostics: errors });
    }
    let resolved = match resolve_all(&units) {
        Ok(r) => r,
        Err(mut e) => {
            errors.append(&mut e);
            return Err(CompileFailure { sources, diagnostics: errors });
        }
    };

    // Submission configs: configs/<benchmark>/<system>/<Scenario>.toml, one per workload section.
    let mut configs = Vec::new();
    for ((unit, place), resolved_sections) in units.iter().zip(&places).zip(&resolved) {
        let Some(Place::Concrete { bench, system, scenario }) = place else { continue };
        for (section, resolved) in unit.file.sections.iter().zip(resolved_sections) {
            let workload = Workload::from_section_name(&section.name.value).expect("checked by check_workload_sections");
            let key = Key { bench, system, scenario: *scenario, workload, header: section.name.span };
            if let Some(config) = build_config(&key, resolved, &rounds, &sources, &mut errors) {
                configs.push(config);
            }
        }
    }
    let warnings = scaling_warnings(&configs, &systems, &units, &sources);

    if !errors.is_empty() {
        return Err(CompileFailure { sources, diagnostics: dedupe(errors) });
    }
    if let Some(locked) = &locked_system {
        systems.retain(|s| &s.id == locked);
        configs.retain(|c| &c.system == locked);
    }
    configs.sort_by(|a, b| (&a.system, &a.benchmark, a.scenario, a.workload).cmp(&(&b.system, &b.benchmark, b.scenario, b.workload)));
    Ok(Compiled { sources, rounds, systems, configs, locked_system, warnings, inputs })
}

/// One value inherited by many configs is reported once, with a count of the others.
fn dedupe(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut out: Vec<(Diagnostic, usize)> = Vec::new();
    for d in diagnostics {
        let same = |o: &Diagnostic| o.code == d.code && o.message == d.message && o.primary.as_ref().map(|l| l.span) == d.primary.as_ref().map(|l| l.span);
        match out.iter_mut().find(|(o, _)| same(o)) {
            Some((_, count)) => *count += 1,
            None => out.push((d, 0)),
        }
    }
    out.into_iter()
        .map(|(d, more)| if more == 0 { d } else { d.note(format!("the same value reaches {more} more config{} through `extends`", if more == 1 { "" } else { "s" })) })
        .collect()
}

/// `v6.1` -> (6, 1), for ordering rounds newest first.
fn round_order(id: &str) -> (u32, u32) {
    let mut parts = id.trim_start_matches('v').split('.').map(|p| p.parse().unwrap_or(0));
    (parts.next().unwrap_or(0), parts.next().unwrap_or(0))
}

fn workload_names() -> Vec<String> {
    let mut names = Vec::new();
    for harness in crate::types::Harness::ALL {
        for accuracy in [crate::types::AccuracyTarget::K99, crate::types::AccuracyTarget::K99_9] {
            for power in [PowerSetting::MaxP, PowerSetting::MaxQ] {
                names.push(Workload { harness, accuracy, power }.section_name());
            }
        }
    }
    names
}

fn select_system(options: &CompileOptions, systems: &[SystemInfo], errors: &mut Vec<Diagnostic>) -> Option<String> {
    match options.enabled_features.as_slice() {
        [] => None,
        [feature] => match systems.iter().find(|s| &s.feature == feature) {
            Some(s) => Some(s.id.to_string()),
            None => {
                errors.push(Diagnostic::error("C0409", format!("feature `{feature}` selects no system")).help(format!(
                    "no systems/<id>.toml sets feature = \"{feature}\"; add one or pick a feature of: {}",
                    systems.iter().map(|s| s.feature.as_ref()).collect::<Vec<_>>().join(", ")
                )));
                None
            }
        },
        many => {
            errors.push(
                Diagnostic::error("C0409", format!("{} system features are enabled: {}", many.len(), many.join(", ")))
                    .note("a locked build holds exactly one system; a build without system features holds all of them")
                    .help("enable at most one `system-*` feature"),
            );
            None
        }
    }
}

/// Sections of a system config are workloads, named like NVIDIA's legacy `config_ver` values.
fn check_workload_sections(unit: &ConfigUnit, errors: &mut Vec<Diagnostic>) {
    for section in &unit.file.sections {
        if Workload::from_section_name(&section.name.value).is_some() {
            continue;
        }
        let names = workload_names();
        let d = Diagnostic::error("C0106", format!("`[{}]` is not a workload", section.name.value))
            .at(section.name.span, "unknown workload section")
            .note(format!("system configs hold one section per workload: {}", names.join(", ")));
        errors.push(match did_you_mean(&section.name.value, names.iter().map(String::as_str)) {
            Some(m) => d.help(format!("did you mean `[{m}]`?")),
            None => d,
        });
    }
}

/// Every key must be a schema field, and every value must fit its field's type and unit.
fn check_values(file: &crate::raw::ConfigFile, errors: &mut Vec<Diagnostic>) {
    let mut scratch = Settings::default();
    for section in &file.sections {
        for (key, value) in &section.values {
            let Some(index) = Settings::index_of(&key.value) else {
                let d = Diagnostic::error("C0102", format!("unknown key `{}`", key.value)).at(key.span, "not a config field");
                errors.push(match did_you_mean(&key.value, Settings::FIELDS.iter().map(|f| f.name)) {
                    Some(m) => d.help(format!("did you mean `{m}`?")),
                    None => d.help("`mlperf config fields` lists every field"),
                });
                continue;
            };
            if let Err(e) = scratch.set(index, value) {
                let d = Diagnostic::error(e.code, e.message).at(e.span.unwrap_or(value.span), "wrong value");
                errors.push(match e.help {
                    Some(h) => d.help(h),
                    None => d,
                });
            }
        }
    }
}

enum Place<'a> {
    Defaults,
    Concrete { bench: &'static BenchmarkInfo, system: &'a SystemInfo, scenario: Scenario },
}

/// Where a config file sits decides what it is: `<bench>/defaults`, `<bench>/<Scenario>` (abstract) or
/// `<bench>/<system>/<Scenario>` (a submission config).
fn classify<'a>(unit: &ConfigUnit, sources: &Sources, systems: &'a [SystemInfo], broken_systems: &[String], errors: &mut Vec<Diagnostic>) -> Option<Place<'a>> {
    let whole = Span { file: unit.file.file, start: 0, end: sources.text(unit.file.file).find('\n').unwrap_or(1) };
    let parts: Vec<&str> = unit.name.split('/').collect();
    let bad_place = |msg: String| {
        Diagnostic::error("C0105", msg)
            .at(whole, "in this file")
            .help("config files live at configs/<benchmark>/defaults.toml, configs/<benchmark>/<Scenario>.toml or configs/<benchmark>/<system>/<Scenario>.toml")
    };
    let Some(bench) = benchmark::find(parts[0]) else {
        let d = bad_place(format!("`{}` is not a benchmark", parts[0]));
        errors.push(match did_you_mean(parts[0], benchmark::BENCHMARKS.iter().map(|b| b.id)) {
            Some(m) => d.note(format!("did you mean the directory `configs/{m}`?")),
            None => d,
        });
        return None;
    };
    let scenario_of = |name: &str, errors: &mut Vec<Diagnostic>| {
        let found = Scenario::ALL.into_iter().find(|s| s.name() == name);
        if found.is_none() {
            errors.push(bad_place(format!("`{name}.toml` is not named after a scenario ({})", Scenario::ALL.map(|s| s.name()).join(", "))));
        }
        found
    };
    match parts.as_slice() {
        [_, "defaults"] => Some(Place::Defaults),
        [_, scenario] => scenario_of(scenario, errors).map(|_| Place::Defaults),
        [_, system, scenario] => {
            let Some(sys) = systems.iter().find(|s| s.id == *system) else {
                if broken_systems.iter().any(|b| b == system) {
                    return None; // its own errors are reported
                }
                let d = Diagnostic::error("C0401", format!("config for system `{system}`, which does not exist"))
                    .at(whole, "in this file")
                    .note(format!("known systems: {}", systems.iter().map(|s| s.id.as_ref()).collect::<Vec<_>>().join(", ")));
                errors.push(match did_you_mean(system, systems.iter().map(|s| s.id.as_ref())) {
                    Some(m) => d.help(format!("did you mean `{m}`?")),
                    None => d.help("add systems/<id>.toml and systems/<id>.json first (`mlperf systems` lists them)"),
                });
                return None;
            };
            Some(Place::Concrete { bench, system: sys, scenario: scenario_of(scenario, errors)? })
        }
        _ => {
            errors.push(bad_place(format!("unexpected config file location configs/{}.toml", unit.name)));
            None
        }
    }
}

struct Key<'a> {
    bench: &'static BenchmarkInfo,
    system: &'a SystemInfo,
    scenario: Scenario,
    workload: Workload,
    header: Span,
}

fn origin(sources: &Sources, span: Span) -> Origin {
    let (line, col) = sources.line_col(span.file, span.start);
    Origin { file: Cow::Owned(sources.path(span.file).to_string()), line: line as u32, col: col as u32 }
}

impl Key<'_> {
    /// `<system>/<benchmark>/<Scenario> [<workload>]`, as diagnostics name a config.
    fn describe(&self) -> String {
        format!("{}/{}/{} [{}]", self.system.id, self.bench.id, self.scenario, self.workload.section_name())
    }
}

/// One config as its rules read it: its key, its resolved values (where each was set) and their
/// typed settings.
struct Candidate<'a> {
    key: &'a Key<'a>,
    resolved: &'a Resolved,
    settings: &'a Settings,
    describe: String,
}

impl Candidate<'_> {
    /// Where `field` is set, else the section header.
    fn span_of(&self, field: &str) -> Span {
        self.resolved.effective(field).map(|v| v.span).unwrap_or(self.key.header)
    }
}

/// Types the resolved values, records provenance and applies every rule that needs the full key:
/// the fields' applicability, then the rules of each part of the config (LoadGen, power, engine,
/// serving) and of the rounds.
fn build_config(key: &Key, resolved: &Resolved, rounds: &[Round], sources: &Sources, errors: &mut Vec<Diagnostic>) -> Option<CompiledConfig> {
    let before = errors.len();
    let (settings, provenance) = typed_settings(key, resolved, sources, errors);
    let config = Candidate { key, resolved, settings: &settings, describe: key.describe() };
    // The diagnostics come in the order of these checks (the error snapshots hold it).
    check_required_fields(&config, errors);
    check_power_limit(&config, errors);
    check_server_latency(&config, errors);
    check_system_capabilities(&config, errors);
    check_engine_components(&config, errors);
    check_parallelism(&config, errors);
    check_serving_engine(&config, errors);
    check_serving_endpoints(&config, errors);
    check_server_urls(&config, errors);
    check_text_api_tokenizer(&config, errors);
    check_serving_ports(&config, errors);
    let valid_rounds = valid_rounds(&config, rounds, errors);
    if errors.len() > before {
        return None;
    }
    Some(CompiledConfig {
        system: key.system.id.clone(),
        benchmark: Cow::Borrowed(key.bench.id),
        scenario: key.scenario,
        workload: key.workload,
        rounds: Cow::Owned(valid_rounds),
        settings,
        provenance: Cow::Owned(provenance),
        defined_at: origin(sources, key.header),
    })
}

/// The effective value of every field, typed, with where it was set and what it overrode; a field
/// that does not apply to the key is an error.
fn typed_settings(key: &Key, resolved: &Resolved, sources: &Sources, errors: &mut Vec<Diagnostic>) -> (Settings, Vec<FieldOrigin>) {
    let mut settings = Settings::default();
    let mut provenance = Vec::new();
    for (field, history) in &resolved.fields {
        let Some(index) = Settings::index_of(field) else { continue }; // reported by check_values
        let effective = history.last().expect("history is never empty");
        if settings.set(index, effective).is_err() {
            continue; // reported by check_values
        }
        check_field_applies(key, field, &Settings::FIELDS[index], effective.span, errors);
        provenance.push(FieldOrigin {
            field: Cow::Owned(field.clone()),
            value: Cow::Owned(effective.value.to_toml()),
            at: origin(sources, effective.span),
            overrode: Cow::Owned(history[..history.len() - 1].iter().rev().map(|v| Overridden { value: Cow::Owned(v.value.to_toml()), at: origin(sources, v.span) }).collect()),
        });
    }
    (settings, provenance)
}

/// A field applies to its benchmarks, scenarios and harnesses only; a MaxQ field to MaxQ workloads.
fn check_field_applies(key: &Key, field: &str, spec: &FieldSpec, at: Span, errors: &mut Vec<Diagnostic>) {
    let (bench, scenario, workload) = (key.bench, key.scenario, key.workload);
    let misplaced = if !benchmark::applies(spec.benchmarks, bench) {
        Some(format!("benchmark `{}` (it applies to {})", bench.id, spec.benchmarks.join(", ")))
    } else if !spec.scenarios.is_empty() && !spec.scenarios.contains(&scenario.name()) {
        Some(format!("the {scenario} scenario (it applies to {})", spec.scenarios.join(", ")))
    } else if !spec.harness.is_empty() && !spec.harness.contains(&workload.harness.name()) {
        Some(format!("the {} harness", workload.harness.name()))
    } else {
        None
    };
    if let Some(what) = misplaced {
        errors.push(
            Diagnostic::error("C0203", format!("`{field}` does not apply to {what}"))
                .at(at, "not applicable here")
                .also(key.header, format!("resolved for {}", key.describe()))
                .help(format!("remove it, or move it to a config where it applies ({})", spec.doc)),
        );
    }
    if spec.power == Some("MaxQ") && workload.power == PowerSetting::MaxP {
        errors.push(
            Diagnostic::error("C0204", format!("`{field}` is set on a MaxP workload"))
                .at(at, "MaxP runs without a power limit")
                .also(key.header, "this workload is MaxP")
                .help("move it to a `[maxq]` section"),
        );
    }
}

/// The fields the scenario requires (its performance target).
fn check_required_fields(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let scenario = c.key.scenario;
    for spec in Settings::FIELDS.iter().filter(|f| f.required_for.contains(&scenario.name())) {
        if c.resolved.effective(spec.name).is_none() {
            errors.push(
                Diagnostic::error("C0301", format!("{} lacks `{}`, which {scenario} requires", c.describe, spec.name))
                    .at(c.key.header, format!("no `{}` along this section's extends chain", spec.name))
                    .help(format!("set `{} = ...` here or in a file it extends ({})", spec.name, spec.doc)),
            );
        }
    }
}

/// Power: a MaxQ workload runs at a power limit.
fn check_power_limit(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    if c.key.workload.power == PowerSetting::MaxQ && c.settings.power_limit.is_none() {
        errors.push(
            Diagnostic::error("C0205", format!("{} is a MaxQ workload without `power_limit`", c.describe))
                .at(c.key.header, "MaxQ needs a power limit")
                .help("set `power_limit = \"300 W\"` (or the limit you run at) in this section"),
        );
    }
}

/// LoadGen settings: the Server target latency reaches user.conf in whole milliseconds.
fn check_server_latency(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    if let Some(ns) = c.settings.server_target_latency_ns
        && ns % 1_000_000 != 0
    {
        errors.push(
            Diagnostic::error("C0310", format!("server_target_latency_ns {ns} is not a whole number of milliseconds"))
                .at(c.span_of("server_target_latency_ns"), "LoadGen would truncate it")
                .note("LoadGen reads Server target_latency from user.conf as integer milliseconds (strtoull), so fractions are lost")
                .help(format!("use {} ms or {} ms", ns / 1_000_000, ns / 1_000_000 + 1)),
        );
    }
}

/// Harness capabilities a system must declare in its tags, as NVIDIA registers them per system:
/// inputs that start in device memory (`start_from_device`) and outputs that stay there
/// (`end_on_device`) are allowed only where the system qualifies.
fn check_system_capabilities(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let system = c.key.system;
    for (field, on, tag) in [("start_from_device", c.settings.start_from_device, "start_from_device_enabled"), ("end_on_device", c.settings.end_on_device, "end_on_device_enabled")]
    {
        if on == Some(true) && !system.tags.iter().any(|t| t.as_ref() == tag) {
            errors.push(
                Diagnostic::error("C0314", format!("`{field} = true` on system `{}`, which is not tagged `{tag}`", system.id))
                    .at(c.span_of(field), "the system does not declare this capability")
                    .help(format!("remove it, or add \"{tag}\" to `tags` in systems/{}.toml if the system qualifies", system.id)),
            );
        }
    }
}

/// Engine settings: per-component batch sizes name components of the benchmark's engine.
fn check_engine_components(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let bench = c.key.bench;
    if let Some(batch) = &c.settings.gpu_batch_size {
        for (component, _) in batch.iter() {
            if !bench.components.contains(&component.as_ref()) {
                errors.push(
                    Diagnostic::error("C0305", format!("`gpu_batch_size` names component `{component}`, which {} does not have", bench.id))
                        .at(c.span_of("gpu_batch_size"), "unknown component")
                        .help(format!("{}'s engine components are: {}", bench.id, bench.components.join(", "))),
                );
            }
        }
    }
}

/// Parallelism must tile the system's GPUs (the stand-in runs no model, so it has none to tile),
/// and the instances an engine started by `mlperf` needs must fit one node.
fn check_parallelism(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let (bench, system, settings) = (c.key.bench, c.key.system, c.settings);
    let tp = settings.tensor_parallelism.unwrap_or(1);
    let pp = settings.pipeline_parallelism.unwrap_or(1);
    let gpus = system.total_gpus();
    let llm = benchmark::applies(&["llm"], bench);
    let on_gpus = settings.serving_engine != Some(ServingEngine::StandIn);
    let parallel = llm && on_gpus && (settings.tensor_parallelism.is_some() || settings.pipeline_parallelism.is_some());
    if parallel && (tp * pp == 0 || gpus == 0 || gpus % (tp * pp) != 0) {
        errors.push(
            Diagnostic::error("C0306", format!("tensor x pipeline parallelism = {tp} x {pp} = {} does not divide the {gpus} GPUs of {}", tp * pp, system.id))
                .at(c.span_of(if settings.tensor_parallelism.is_some() { "tensor_parallelism" } else { "pipeline_parallelism" }), "does not tile the GPUs")
                .help(format!("choose TP x PP among the divisors of {gpus}")),
        );
    } else if llm && let Some(engine) = settings.serving_engine.filter(|e| e.started_by_harness() && e.runs_on_gpus()) {
        check_instances_fit_node(c, engine, tp, pp, errors);
    }
}

/// The instances of a serving engine `mlperf` starts on each node, each on data x tensor x
/// pipeline parallelism GPUs of its own, fit one node.
fn check_instances_fit_node(c: &Candidate, engine: ServingEngine, tp: u64, pp: u64, errors: &mut Vec<Diagnostic>) {
    let (system, settings) = (c.key.system, c.settings);
    let instances = settings.serving_instances.unwrap_or(1);
    let dp = settings.data_parallelism.unwrap_or(1);
    let per_instance = dp.saturating_mul(tp).saturating_mul(pp);
    let need = instances.saturating_mul(per_instance);
    let per_node = system.hardware.gpus_per_node;
    if need > per_node {
        let field = ["serving_instances", "data_parallelism", "tensor_parallelism", "pipeline_parallelism"]
            .into_iter()
            .find(|f| c.resolved.effective(f).is_some())
            .unwrap_or("serving_engine");
        let fits = per_node.checked_div(per_instance).unwrap_or(0);
        errors.push(
            Diagnostic::error(
                "C0306",
                format!(
                    "serving_instances x data x tensor x pipeline parallelism = {instances} x {dp} x {tp} x {pp} = {need} GPUs, more than the {per_node} GPUs of one node of {}",
                    system.id
                ),
            )
            .at(c.span_of(field), "needs more GPUs than a node has")
            .also(c.span_of("serving_engine"), format!("{} is started by mlperf on every node", engine.name()))
            .help(format!(
                "mlperf starts serving_instances engines on each node, each on data x tensor x pipeline parallelism = {per_instance} GPUs of its own: {}, or attach to engines spanning nodes with serving_engine = \"external\"",
                if fits == 0 { format!("lower the parallelism to at most {per_node} GPUs per instance") } else { format!("set serving_instances to at most {fits}") }
            )),
        );
    }
}

/// Serving engine: `engine = "serving"` names one where the field applies (the LLMs and whisper),
/// and only a serving config has one.
fn check_serving_engine(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let (settings, describe) = (c.settings, &c.describe);
    let names_serving_engine = Settings::index_of("serving_engine").is_some_and(|i| benchmark::applies(Settings::FIELDS[i].benchmarks, c.key.bench));
    match (settings.engine, settings.serving_engine) {
        (Some(EngineKind::Serving), None) if names_serving_engine => errors.push(
            Diagnostic::error("C0311", "`engine = \"serving\"` without `serving_engine`")
                .at(c.span_of("engine"), "which serving engine?")
                .also(c.key.header, format!("resolved for {describe}"))
                .help(format!(
                    "set `serving_engine` here or in a file it extends: {} (vllm, sglang, trtllm-serve and dynamo are started by mlperf; external attaches to llm_server_urls; stand-in is the test double)",
                    ServingEngine::NAMES.join(", ")
                )),
        ),
        (engine, Some(serving)) if engine != Some(EngineKind::Serving) => {
            let what = engine.map_or("unset".to_string(), |e| format!("\"{}\"", e.name()));
            let d = Diagnostic::error("C0311", format!("`serving_engine = \"{}\"` on a config whose `engine` is {what}", serving.name()))
                .at(c.span_of("serving_engine"), "only serving configs have a serving engine")
                .also(c.key.header, format!("resolved for {describe}"));
            errors.push(if engine.is_some() { d.also(c.span_of("engine"), "engine set here") } else { d }.help("set `engine = \"serving\"`, or remove `serving_engine`"));
        }
        _ => {}
    }
}

/// Serving endpoints: external ones are listed and name their API; started ones get serving_port.
fn check_serving_endpoints(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let (settings, describe) = (c.settings, &c.describe);
    let Some(engine) = settings.serving_engine else { return };
    if !engine.started_by_harness() {
        if settings.llm_server_urls.as_ref().is_none_or(|urls| urls.is_empty()) {
            errors.push(
                Diagnostic::error("C0312", "`serving_engine = \"external\"` without `llm_server_urls`")
                    .at(c.span_of("serving_engine"), "mlperf starts nothing: where are the endpoints?")
                    .also(c.key.header, format!("resolved for {describe}"))
                    .help("list the endpoints' base URLs, e.g. `llm_server_urls = [\"http://10.0.0.1:8000/v1\"]`"),
            );
        }
        if settings.serving_api.is_none() {
            errors.push(
                Diagnostic::error("C0312", "`serving_engine = \"external\"` without `serving_api`")
                    .at(c.span_of("serving_engine"), "external endpoints must name their API")
                    .also(c.key.header, format!("resolved for {describe}"))
                    .help(format!("set `serving_api` to the API the endpoints speak: {}", ServingApi::NAMES.join(", "))),
            );
        }
    } else if let Some(urls) = c.resolved.effective("llm_server_urls") {
        errors.push(
            Diagnostic::error("C0312", format!("`llm_server_urls` with `serving_engine = \"{}\"`, which mlperf starts itself", engine.name()))
                .at(urls.span, format!("never used: mlperf starts {} and knows its ports", engine.name()))
                .also(c.span_of("serving_engine"), "started by mlperf, instance i on serving_port + i")
                .also(c.key.header, format!("resolved for {describe}"))
                .help("remove `llm_server_urls` (set `serving_port` instead), or use `serving_engine = \"external\"` to attach to endpoints something else started"),
        );
    }
}

/// Each of `llm_server_urls` is an http:// or https:// base URL with a host.
fn check_server_urls(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let Some(RawValue::Array(items)) = c.resolved.effective("llm_server_urls").map(|v| &v.value) else { return };
    for item in items {
        if let RawValue::String(url) = &item.value
            && let Err(why) = check_server_url(url)
        {
            errors.push(
                Diagnostic::error("C0312", format!("`{url}` in `llm_server_urls` {why}"))
                    .at(item.span, "not an http:// or https:// URL with a host")
                    .help("write each endpoint as a base URL, e.g. \"http://10.0.0.1:8000/v1\""),
            );
        }
    }
}

/// A serving API that streams text needs the model's tokenizer to get the output ids back.
fn check_text_api_tokenizer(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let settings = c.settings;
    let api = settings.serving_api.or(settings.serving_engine.and_then(ServingEngine::api));
    if api.is_some_and(ServingApi::streams_text) && settings.tokenizer_path.is_none() {
        let at = if settings.serving_api.is_some() { "serving_api" } else { "serving_engine" };
        errors.push(
            Diagnostic::error("C0312", "a text-only serving API (`completions-text`) without `tokenizer_path`")
                .at(c.span_of(at), "streams text only: output ids must be re-tokenized")
                .also(c.key.header, format!("resolved for {}", c.describe))
                .help("set `tokenizer_path` to the model's tokenizer.json, relative to the scratch space's models/ (e.g. `tokenizer_path = \"Llama2/Llama-2-70b-chat-hf/tokenizer.json\"`)"),
        );
    }
}

/// At least one serving instance, and every instance's port (serving_port + i) a port.
fn check_serving_ports(c: &Candidate, errors: &mut Vec<Diagnostic>) {
    let settings = c.settings;
    if settings.serving_instances == Some(0) {
        errors
            .push(Diagnostic::error("C0312", "`serving_instances = 0` starts no endpoint").at(c.span_of("serving_instances"), "no instance").help("use at least 1 (the default)"));
    }
    let Some(port) = settings.serving_port else { return };
    let instances = settings.serving_instances.unwrap_or(1).max(1);
    let last = port.saturating_add(instances - 1);
    if port == 0 {
        errors.push(
            Diagnostic::error("C0312", "`serving_port = 0` is not a port")
                .at(c.span_of("serving_port"), "not a port an engine can listen on")
                .help("use the first instance's port, e.g. 30000 (NVIDIA's default)"),
        );
    } else if last > 65535 {
        let d = Diagnostic::error("C0312", format!("serving_port + serving_instances - 1 = {port} + {instances} - 1 = {last} is above port 65535"))
            .at(c.span_of("serving_port"), "the last instance has no port");
        let d = if settings.serving_instances.is_some() { d.also(c.span_of("serving_instances"), "instance i listens on serving_port + i") } else { d };
        errors.push(d.help(format!("use a serving_port of at most {}", 65536 - instances.min(65535))));
    }
}

/// Round rules: the rounds in which the config is valid, those that have the benchmark, the
/// scenario for this system type and the accuracy target; in each, its LoadGen settings must meet
/// the round's limits. Valid in none is an error.
fn valid_rounds(c: &Candidate, rounds: &[Round], errors: &mut Vec<Diagnostic>) -> Vec<Cow<'static, str>> {
    let mut valid_rounds = Vec::new();
    let mut why_not = Vec::new();
    for round in rounds {
        match round_benchmark(c, round) {
            Ok(br) => {
                valid_rounds.push(Cow::Owned(round.id.to_string()));
                check_round_limits(c, round, br, errors);
            }
            Err(why) => why_not.push(why),
        }
    }
    if valid_rounds.is_empty() {
        errors.push(valid_in_no_round(c, &why_not));
    }
    valid_rounds
}

/// The round's rules for the benchmark, or why the config is not valid in the round.
fn round_benchmark<'r>(c: &Candidate, round: &'r Round) -> Result<&'r BenchmarkRound, String> {
    let (bench, system, scenario, workload) = (c.key.bench, c.key.system, c.key.scenario, c.key.workload);
    let Some(br) = round.benchmark(bench.id) else {
        return Err(format!("{} does not have {}", round.id, bench.id));
    };
    if br.checker_model(workload.accuracy).is_none() {
        return Err(format!(
            "{} has no {} % accuracy target for {} (it has {})",
            round.id,
            workload.accuracy.key(),
            bench.id,
            br.checker_models.keys().map(|k| k.as_ref()).collect::<Vec<_>>().join(", ")
        ));
    }
    let allowed = if system.development { br.any_scenarios() } else { br.allowed_scenarios(&system.system_type) };
    if !allowed.contains(&scenario) {
        return Err(format!(
            "{} allows {} on a `{}` system only in {}",
            round.id,
            bench.id,
            system.system_type,
            if allowed.is_empty() { "no scenario".to_string() } else { allowed.iter().map(|s| s.name()).collect::<Vec<_>>().join(", ") }
        ));
    }
    Ok(br)
}

/// LoadGen settings against a round's limits: the minimum duration, the performance sample count
/// and the benchmark's latency constraint.
fn check_round_limits(c: &Candidate, round: &Round, br: &BenchmarkRound, errors: &mut Vec<Diagnostic>) {
    let (bench, settings) = (c.key.bench, c.settings);
    if let Some(min) = settings.min_duration
        && min < round.min_duration_ms
    {
        errors.push(
            Diagnostic::error("C0307", format!("min_duration {min} ms is below the {} minimum of {} ms", round.id, round.min_duration_ms))
                .at(c.span_of("min_duration"), "too short for a submission")
                .help("remove it (LoadGen's mlperf.conf already sets the minimum) or raise it; `--test_run` shortens runs without touching configs"),
        );
    }
    // Development systems are never submitted; a smaller loaded set keeps LLM runs, which issue
    // whole multiples of it (equal-issue mode), minutes long instead of hours.
    if let Some(count) = settings.performance_sample_count_override
        && count < br.performance_sample_count
        && !c.key.system.development
    {
        errors.push(
            Diagnostic::error("C0308", format!("performance_sample_count_override {count} is below the {} value {} for {}", round.id, br.performance_sample_count, bench.id))
                .at(c.span_of("performance_sample_count_override"), "too small for a submission")
                .help(format!("use at least {}", br.performance_sample_count)),
        );
    }
    if br.forbids_prefix_caching {
        check_no_prefix_caching(c, round, errors);
    }
    if let (Some(target), Some(limit)) = (settings.server_target_latency_ns, br.latency_constraint_ns(c.key.scenario))
        && target > limit
    {
        errors.push(
            Diagnostic::error("C0309", format!("server_target_latency_ns {target} exceeds the {} latency constraint of {limit} ns for {}", round.id, bench.id))
                .at(c.span_of("server_target_latency_ns"), "above the benchmark's constraint")
                .help(format!("use at most {limit} ns ({} ms), or leave it unset to use the constraint", limit as f64 / 1e6)),
        );
    }
}

/// A benchmark whose rules forbid reusing cached prefixes (qwen3-vl): the engines mlperf starts must
/// be told so, since vLLM and SGLang reuse them by default; trtllm-serve cannot be told on its
/// command line.
fn check_no_prefix_caching(c: &Candidate, round: &Round, errors: &mut Vec<Diagnostic>) {
    let settings = c.settings;
    let args: Vec<&str> = settings.serving_args.as_ref().map(|a| a.iter().map(|s| s.as_ref()).collect()).unwrap_or_default();
    let (needed, enabling): (&str, &[&str]) = match settings.serving_engine {
        Some(ServingEngine::Vllm | ServingEngine::Dynamo) => ("--no-enable-prefix-caching", &["--enable-prefix-caching"]),
        Some(ServingEngine::Sglang) => ("--disable-radix-cache", &[]),
        Some(ServingEngine::TrtllmServe) => {
            errors.push(
                Diagnostic::error("C0313", format!("`serving_engine = \"trtllm-serve\"` for {}, whose {} rules forbid prefix caching", c.key.bench.id, round.id))
                    .at(c.span_of("serving_engine"), "reuses KV-cache blocks by default")
                    .help("serve it with vllm (`--no-enable-prefix-caching`) or sglang (`--disable-radix-cache`), or an external engine configured without prefix caching"),
            );
            return;
        }
        _ => return,
    };
    let enabled = args.iter().find(|a| enabling.contains(&a.split('=').next().unwrap_or(a)));
    if !args.contains(&needed) || enabled.is_some() {
        let what = enabled.map_or_else(|| format!("`serving_args` without `{needed}`"), |a| format!("`serving_args` with `{a}`"));
        errors.push(
            Diagnostic::error("C0313", format!("{what}: {}'s {} rules forbid prefix caching", c.key.bench.id, round.id))
                .at(c.span_of(if settings.serving_args.is_some() { "serving_args" } else { "serving_engine" }), "the engine would reuse cached prefixes")
                .help(format!("add \"{needed}\" to `serving_args`")),
        );
    }
}

/// The error of a config valid in no round, coded by why: no round has the benchmark (C0302),
/// the accuracy target (C0304) or the scenario (C0303).
fn valid_in_no_round(c: &Candidate, why_not: &[String]) -> Diagnostic {
    let code = if why_not.iter().all(|w| w.contains("does not have")) {
        "C0302"
    } else if why_not.iter().any(|w| w.contains("accuracy target")) {
        "C0304"
    } else {
        "C0303"
    };
    Diagnostic::error(code, format!("{} is not a valid submission config in any round", c.describe)).at(c.key.header, "defined here").note(why_not.join("; ")).help(match code {
        "C0302" => "remove the config, or add the round that has this benchmark to rounds/".to_string(),
        "C0304" => "use the `[default]` (99 %) section for benchmarks without a high-accuracy variant".to_string(),
        _ => "configure a scenario the round allows for this system type, or fix `system_type` in the system description".to_string(),
    })
}

/// The throughput target a config promises (Offline / Server), for scaling checks.
fn throughput(config: &CompiledConfig) -> Option<f64> {
    config.settings.offline_expected_qps.or(config.settings.server_target_qps)
}

/// Warns when a larger system of the same GPU promises less throughput than a smaller one, or more
/// than linear scaling from it.
fn scaling_warnings(configs: &[CompiledConfig], systems: &[SystemInfo], units: &[ConfigUnit], sources: &Sources) -> Vec<Diagnostic> {
    let gpu_of = |id: &str| systems.iter().find(|s| s.id == id).and_then(|s| s.hardware.gpu.as_ref().map(|g| (g.name.clone(), s.total_gpus())));
    let header_span = |c: &CompiledConfig| {
        units.iter().find_map(|u| {
            u.file
                .sections
                .iter()
                .find(|s| sources.path(u.file.file) == c.defined_at.file && sources.line_col(u.file.file, s.name.span.start).0 as u32 == c.defined_at.line)
                .map(|s| s.name.span)
        })
    };
    let mut warnings = Vec::new();
    for big in configs {
        let (Some((gpu, n)), Some(big_qps)) = (gpu_of(&big.system), throughput(big)) else { continue };
        for small in configs.iter().filter(|c| c.benchmark == big.benchmark && c.scenario == big.scenario && c.workload == big.workload) {
            let (Some((small_gpu, m)), Some(small_qps)) = (gpu_of(&small.system), throughput(small)) else { continue };
            if small_gpu != gpu || m >= n {
                continue;
            }
            let per_gpu_big = big_qps / n as f64;
            let per_gpu_small = small_qps / m as f64;
            let message = if big_qps < small_qps {
                format!("{} promises {big_qps} qps for {}/{}, less than the {small_qps} of the smaller {}", big.system, big.benchmark, big.scenario, small.system)
            } else if per_gpu_big > per_gpu_small * 1.10 {
                format!("{} promises {per_gpu_big:.1} qps per GPU for {}/{}, more than 110 % of {}'s {per_gpu_small:.1}", big.system, big.benchmark, big.scenario, small.system)
            } else {
                continue;
            };
            let mut w = Diagnostic::warning("W0601", message).note("targets usually scale about linearly with GPU count; check for a typo");
            if let Some(span) = header_span(big) {
                w = w.at(span, format!("{} GPUs", n));
            }
            warnings.push(w);
        }
    }
    warnings
}
