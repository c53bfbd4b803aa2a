//! `mlperf add_system`: scaffolds a new system from the detected hardware — its identity file, a
//! description with every checker field to fill in, and the one Cargo feature line to add.

use crate::detect::DetectedHardware;
use mlperf_config::system::{REQUIRED_FIELDS, canonical_json};
use std::fmt::Write;
use std::path::{Path, PathBuf};

/// Why a system could not be scaffolded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScaffoldError {
    #[error("system id {0:?} must be letters, digits, '-', '_' or '.' (it names files and directories)")]
    BadId(String),
    #[error("feature {0:?} must start with `system-`")]
    BadFeature(String),
    /// Never overwritten: the user's edits would be lost.
    #[error("{} exists; pick another id or edit it", .0.display())]
    Exists(PathBuf),
    #[error(transparent)]
    Write(#[from] crate::fsutil::FsError),
}

impl From<ScaffoldError> for crate::Error {
    fn from(e: ScaffoldError) -> crate::Error {
        match e {
            ScaffoldError::Write(_) => crate::Error::Other(e.to_string()),
            _ => crate::Error::Usage(e.to_string()),
        }
    }
}

/// Writes `systems/<id>.toml` and `systems/<id>.json` under `root`; refuses to overwrite.
/// Returns the written paths and the feature line for Cargo.toml.
pub fn add_system(root: &Path, id: &str, feature: &str, hw: &DetectedHardware) -> Result<(Vec<PathBuf>, String), ScaffoldError> {
    if id.is_empty() || !id.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)) {
        return Err(ScaffoldError::BadId(id.to_string()));
    }
    if !feature.starts_with("system-") {
        return Err(ScaffoldError::BadFeature(feature.to_string()));
    }
    let toml_path = root.join("systems").join(format!("{id}.toml"));
    let json_path = root.join("systems").join(format!("{id}.json"));
    for p in [&toml_path, &json_path] {
        if p.exists() {
            return Err(ScaffoldError::Exists(p.clone()));
        }
    }
    let mut ident = String::new();
    let _ = writeln!(ident, "# Scaffolded by `mlperf add_system` from {}.", hw.source);
    let _ = writeln!(ident, "id = {id:?}\nfeature = {feature:?}");
    let gpu = hw.gpus.first();
    let summary = match gpu {
        Some(g) => format!("{}x {}", hw.gpus.len(), g.name),
        None => "CPU-only machine".to_string(),
    };
    let _ = writeln!(ident, "summary = {summary:?}\ntags = []\n\n[hardware]");
    let _ = writeln!(ident, "cpu_arch = {:?}", hw.cpu_arch);
    if let Some(v) = &hw.cpu_vendor {
        let _ = writeln!(ident, "cpu_vendor = {v:?}");
    }
    let _ = writeln!(ident, "host_memory_gib = {}   # detection accepts 95 % of this", hw.host_memory_gib.floor() as u64);
    let _ = writeln!(ident, "gpus_per_node = {}\nnodes = 1", hw.gpus.len());
    if let Some(g) = gpu {
        let _ = writeln!(ident, "\n[hardware.gpu]\nname = {:?}\npci_device_ids = [{:?}]", g.name, g.pci_device_id);
        let _ = writeln!(ident, "memory_gib = {}", g.memory_gib.round() as u64);
        let _ = writeln!(ident, "tdp_w = {}", g.max_power_w.unwrap_or(0.0).round() as u64);
        let _ = writeln!(ident, "compute_capability = \"\"   # fill in, e.g. \"9.0\"");
    }
    let mut desc = serde_json::Map::new();
    for key in REQUIRED_FIELDS {
        desc.insert((*key).to_string(), serde_json::Value::String(String::new()));
    }
    let set = |d: &mut serde_json::Map<String, serde_json::Value>, k: &str, v: String| {
        d.insert(k.to_string(), serde_json::Value::String(v));
    };
    set(&mut desc, "division", "closed".into());
    set(&mut desc, "status", "available".into());
    set(&mut desc, "number_of_nodes", "1".into());
    set(&mut desc, "accelerators_per_node", hw.gpus.len().to_string());
    set(&mut desc, "system_name", summary);
    if let Some(g) = gpu {
        set(&mut desc, "accelerator_model_name", g.name.clone());
        set(&mut desc, "accelerator_memory_capacity", format!("{:.0} GB", g.memory_gib));
    }
    set(&mut desc, "host_memory_capacity", format!("{:.0} GB", hw.host_memory_gib));
    let json = canonical_json(&serde_json::Value::Object(desc));
    crate::fsutil::write_atomic(&toml_path, ident.as_bytes())?;
    crate::fsutil::write_atomic(&json_path, json.as_bytes())?;
    Ok((vec![toml_path, json_path], format!("{feature} = []")))
}
