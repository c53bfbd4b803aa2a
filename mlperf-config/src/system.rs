//! Systems: `systems/<id>.toml` (hardware identity for detection, build feature, tags) and
//! `systems/<id>.json` (the submission description the checker reads), validated together.

use crate::diag::{Diagnostic, FileId, Sources, Span};
use config_macros::Bake;
use serde::Deserialize;
use std::borrow::Cow;

type Str = Cow<'static, str>;

/// Keys the checker requires in every system description (`SYSTEM_DESC_REQUIRED_FIELDS`).
pub const REQUIRED_FIELDS: &[&str] = &[
    "division",
    "submitter",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_storage_capacity",
    "host_storage_type",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "framework",
    "operating_system",
    "system_type",
    "other_software_stack",
    "host_processor_frequency",
    "host_processor_caches",
    "host_memory_configuration",
    "host_processor_interconnect",
    "host_networking",
    "host_networking_topology",
    "accelerator_frequency",
    "accelerator_host_interconnect",
    "accelerator_interconnect",
    "accelerator_interconnect_topology",
    "accelerator_memory_configuration",
    "accelerator_on-chip_memories",
    "cooling",
    "hw_notes",
    "sw_notes",
    "host_network_card_count",
    "system_type_detail",
];

/// Keys the checker requires to be non-empty ("meaningful" fields).
pub const MEANINGFUL_FIELDS: &[&str] = &[
    "division",
    "submitter",
    "system_type",
    "status",
    "system_name",
    "number_of_nodes",
    "host_processor_model_name",
    "host_processors_per_node",
    "host_processor_core_count",
    "host_memory_capacity",
    "host_memory_configuration",
    "host_storage_capacity",
    "host_storage_type",
    "host_networking",
    "host_network_card_count",
    "host_networking_topology",
    "accelerators_per_node",
    "accelerator_model_name",
    "accelerator_memory_capacity",
    "accelerator_host_interconnect",
    "accelerator_memory_configuration",
    "accelerator_interconnect",
    "cooling",
    "framework",
    "operating_system",
    "other_software_stack",
];

pub const STATUSES: &[&str] = &["available", "preview", "rdi"];
pub const SYSTEM_TYPES: &[&str] = &["datacenter", "edge", "datacenter,edge", "edge,datacenter"];
pub const DIVISIONS: &[&str] = &["closed", "open", "network"];

/// The GPU a system is built from, as detection sees it.
#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct GpuIdentity {
    /// Name as NVML / nvidia-smi report it, e.g. "NVIDIA H100 80GB HBM3".
    pub name: Str,
    /// PCI device ids (hex, without vendor), e.g. ["2330"].
    pub pci_device_ids: Cow<'static, [Str]>,
    pub memory_gib: u64,
    pub tdp_w: u64,
    pub compute_capability: Str,
}

#[derive(Debug, Clone, Deserialize, Bake)]
#[serde(deny_unknown_fields)]
pub struct HardwareIdentity {
    /// `x86_64`, `aarch64`, or `any`.
    pub cpu_arch: Str,
    /// `GenuineIntel`, `AuthenticAMD`, `ARM`; absent = any vendor.
    #[serde(default)]
    pub cpu_vendor: Option<Str>,
    /// Host memory the system has; detection accepts 95 % of it and more.
    pub host_memory_gib: u64,
    /// GPUs per node (0 for CPU-only systems).
    pub gpus_per_node: u64,
    #[serde(default = "one")]
    pub nodes: u64,
    #[serde(default)]
    pub gpu: Option<GpuIdentity>,
}

fn one() -> u64 {
    1
}

/// One system as compiled into the binary.
#[derive(Debug, Clone, Bake)]
pub struct SystemInfo {
    /// NVIDIA-style id, e.g. `DGX-H100_H100-SXM-80GBx8`; the config directory name.
    pub id: Str,
    /// Cargo feature that locks a build to this system, e.g. `system-h100x8`.
    pub feature: Str,
    /// One-line description for `mlperf systems`.
    pub summary: Str,
    /// Capability tags such as `start_from_device_enabled`.
    pub tags: Cow<'static, [Str]>,
    pub hardware: HardwareIdentity,
    /// `system_type` from the description (`datacenter`, `edge`, ...).
    pub system_type: Str,
    /// A development system (`development = true` in its identity): its runs are never submittable,
    /// so it may hold configs of any system type's scenarios (datacenter LLMs on an edge CPU box).
    pub development: bool,
    /// The submission description as canonical JSON (keys sorted, 4-space indent).
    pub description_json: Str,
}

impl SystemInfo {
    pub fn total_gpus(&self) -> u64 {
        self.hardware.gpus_per_node * self.hardware.nodes
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SystemToml {
    id: String,
    feature: String,
    summary: String,
    #[serde(default)]
    tags: Vec<String>,
    #[serde(default)]
    development: bool,
    hardware: HardwareIdentity,
}

/// The span of `key` in a TOML or JSON text (first occurrence as a key), or the file start.
pub fn key_span(sources: &Sources, file: FileId, key: &str) -> Span {
    let text = sources.text(file);
    let candidates = [format!("\"{key}\""), format!("\n{key} "), format!("\n{key}=")];
    for c in &candidates {
        if let Some(pos) = text.find(c.as_str()) {
            let start = pos + usize::from(c.starts_with('\n'));
            return Span { file, start, end: start + key.len() + if c.starts_with('"') { 2 } else { 0 } };
        }
    }
    Span { file, start: 0, end: 0 }
}

fn serde_span(sources: &Sources, file: FileId, line: usize, column: usize) -> Span {
    let text = sources.text(file);
    let line_start: usize = text.split_inclusive('\n').take(line.saturating_sub(1)).map(str::len).sum();
    let start = (line_start + column.saturating_sub(1)).min(text.len());
    Span { file, start, end: (start + 1).min(text.len()) }
}

/// Parses and checks one system: identity (`toml_file`) and description (`json_file`).
pub fn load_system(sources: &Sources, toml_file: FileId, json_file: FileId, declared_features: &[String]) -> Result<SystemInfo, Vec<Diagnostic>> {
    let mut errors = Vec::new();
    let ident: SystemToml = match toml::from_str(sources.text(toml_file)) {
        Ok(v) => v,
        Err(e) => {
            let r = e.span().unwrap_or(0..0);
            return Err(vec![
                Diagnostic::error("C0406", "invalid system identity")
                    .at(Span { file: toml_file, start: r.start, end: r.end.max(r.start + 1) }, e.message().trim().to_string())
                    .help("see README \"Adding a system\" for the fields of systems/<id>.toml"),
            ]);
        }
    };
    let stem = std::path::Path::new(sources.path(toml_file)).file_stem().and_then(|s| s.to_str()).unwrap_or("");
    if ident.id != stem {
        errors.push(
            Diagnostic::error("C0407", format!("system id `{}` does not match its file name `{stem}.toml`", ident.id))
                .at(key_span(sources, toml_file, "id"), "must equal the file name")
                .help(format!("rename the file or set id = \"{stem}\"")),
        );
    }
    if !declared_features.contains(&ident.feature) {
        errors.push(
            Diagnostic::error("C0407", format!("feature `{}` is not declared in Cargo.toml", ident.feature))
                .at(key_span(sources, toml_file, "feature"), "no such Cargo feature")
                .help(format!("add `{} = []` under [features] in Cargo.toml", ident.feature)),
        );
    }
    match (&ident.hardware.gpu, ident.hardware.gpus_per_node) {
        (None, n) if n > 0 => errors.push(
            Diagnostic::error("C0407", format!("gpus_per_node is {n} but no [hardware.gpu] identity is given"))
                .at(key_span(sources, toml_file, "gpus_per_node"), "needs a GPU identity")
                .help("add a [hardware.gpu] table (name, pci_device_ids, memory_gib, tdp_w, compute_capability)"),
        ),
        (Some(_), 0) => errors.push(
            Diagnostic::error("C0407", "a [hardware.gpu] identity is given but gpus_per_node is 0")
                .at(key_span(sources, toml_file, "gpus_per_node"), "must be at least 1 for a GPU system"),
        ),
        _ => {}
    }

    let description: serde_json::Map<String, serde_json::Value> = match serde_json::from_str(sources.text(json_file)) {
        Ok(v) => v,
        Err(e) => {
            return Err(vec![
                Diagnostic::error("C0406", "invalid system description JSON")
                    .at(serde_span(sources, json_file, e.line(), e.column()), e.to_string())
                    .help("the description must be one JSON object of checker fields"),
            ]);
        }
    };
    let field = |k: &str| description.get(k);
    let whole_file = Span { file: json_file, start: 0, end: 1 };
    for key in REQUIRED_FIELDS {
        if field(key).is_none() {
            errors.push(
                Diagnostic::error("C0402", format!("system description lacks the required field `{key}`"))
                    .at(whole_file, "in this description")
                    .help(format!("add \"{key}\": \"...\" (the checker requires all {} fields; use \"N/A\" where nothing applies)", REQUIRED_FIELDS.len())),
            );
        }
    }
    for key in MEANINGFUL_FIELDS {
        let empty = match field(key) {
            Some(serde_json::Value::String(s)) => s.trim().is_empty(),
            Some(serde_json::Value::Number(n)) => n.as_f64() == Some(0.0),
            Some(serde_json::Value::Null) | Some(serde_json::Value::Bool(false)) => true,
            _ => false,
        };
        if empty {
            errors.push(
                Diagnostic::error("C0403", format!("`{key}` must not be empty: the checker rejects empty meaningful fields"))
                    .at(key_span(sources, json_file, key), "empty")
                    .help(if *key == "accelerators_per_node" { "a CPU-only system writes \"0\" as a string".to_string() } else { "describe it, or write \"N/A\"".to_string() }),
            );
        }
    }
    let text_of = |k: &str| field(k).and_then(|v| v.as_str()).unwrap_or("");
    if field("status").is_some() && !STATUSES.contains(&text_of("status").to_lowercase().as_str()) {
        errors.push(
            Diagnostic::error("C0404", format!("invalid status \"{}\"", text_of("status")))
                .at(key_span(sources, json_file, "status"), "not a checker status")
                .help(format!("use one of {}", STATUSES.join(", "))),
        );
    }
    let system_type = text_of("system_type").to_string();
    if field("system_type").is_some() && !SYSTEM_TYPES.contains(&system_type.as_str()) {
        errors.push(
            Diagnostic::error("C0405", format!("invalid system_type \"{system_type}\""))
                .at(key_span(sources, json_file, "system_type"), "not a checker system type")
                .help(format!("use one of {} (exact spelling)", SYSTEM_TYPES.join(", "))),
        );
    }
    if field("division").is_some() && !DIVISIONS.contains(&text_of("division")) {
        errors.push(
            Diagnostic::error("C0404", format!("invalid division \"{}\"", text_of("division")))
                .at(key_span(sources, json_file, "division"), "not a division")
                .help(format!("use one of {}", DIVISIONS.join(", "))),
        );
    }
    if let Some(v) = field("is_network")
        && !v.is_string()
    {
        errors.push(
            Diagnostic::error("C0404", "`is_network` must be a string (the checker calls .lower() on it) or absent")
                .at(key_span(sources, json_file, "is_network"), "not a string")
                .help("omit it for closed and open submissions"),
        );
    }
    let count_of = |k: &str| match field(k) {
        Some(serde_json::Value::Number(n)) => n.as_u64(),
        Some(serde_json::Value::String(s)) => s.trim().parse().ok(),
        _ => None,
    };
    if let Some(n) = count_of("accelerators_per_node")
        && n != ident.hardware.gpus_per_node
    {
        errors.push(
            Diagnostic::error("C0408", format!("accelerators_per_node is {n}, but the hardware identity has {} GPUs per node", ident.hardware.gpus_per_node))
                .at(key_span(sources, json_file, "accelerators_per_node"), "disagrees with the identity")
                .also(key_span(sources, toml_file, "gpus_per_node"), "identity set here")
                .help("make the description and systems/<id>.toml describe the same machine"),
        );
    }
    if let Some(n) = count_of("number_of_nodes")
        && n != ident.hardware.nodes
    {
        errors.push(
            Diagnostic::error("C0408", format!("number_of_nodes is {n}, but the hardware identity has {} nodes", ident.hardware.nodes))
                .at(key_span(sources, json_file, "number_of_nodes"), "disagrees with the identity")
                .help("set `nodes` under [hardware] in systems/<id>.toml"),
        );
    }
    if !errors.is_empty() {
        return Err(errors);
    }
    let canonical = canonical_json(&serde_json::Value::Object(description));
    Ok(SystemInfo {
        id: Cow::Owned(ident.id),
        feature: Cow::Owned(ident.feature),
        summary: Cow::Owned(ident.summary),
        tags: Cow::Owned(ident.tags.into_iter().map(Cow::Owned).collect()),
        hardware: ident.hardware,
        system_type: Cow::Owned(system_type),
        development: ident.development,
        description_json: Cow::Owned(canonical),
    })
}

/// JSON with sorted keys and 4-space indentation (what NVIDIA's tools write), newline-terminated.
pub fn canonical_json(value: &serde_json::Value) -> String {
    let mut out = Vec::new();
    let mut ser = serde_json::Serializer::with_formatter(&mut out, serde_json::ser::PrettyFormatter::with_indent(b"    "));
    serde::Serialize::serialize(value, &mut ser).expect("JSON values serialize");
    let mut text = String::from_utf8(out).expect("serde_json writes UTF-8");
    text.push('\n');
    text
}
