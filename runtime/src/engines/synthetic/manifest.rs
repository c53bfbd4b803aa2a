//! A generated set's `manifest.json`: what generated it (fields a reuse must match) and a hash of
//! each generated file, so a set is reused only while its generator and every file match. The
//! manifest goes first ([`invalidate`]) and comes back last ([`write`]): files half-replaced by an
//! interrupted generation are never taken for valid ones.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::content_hash;

/// A generated file and the manifest key its hash is recorded under.
pub type Hashed = (PathBuf, String);

/// Removes the manifest before a generation starts.
pub fn invalidate(path: &Path) -> Result<(), String> {
    match std::fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(format!("cannot remove stale {}: {e}", path.display())),
        _ => Ok(()),
    }
}

fn hash_of(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|_| format!("{} is missing", path.display()))?;
    Ok(format!("{:016x}", content_hash(&bytes)))
}

/// The manifest at `path` if the set can be reused: each field of `wanted` has its value and each
/// file of `hashed` its recorded hash; otherwise why not.
pub fn check(path: &Path, wanted: &[(&str, Value)], hashed: &[Hashed]) -> Result<Value, String> {
    let text = std::fs::read_to_string(path).map_err(|_| "no manifest".to_string())?;
    let m: Value = serde_json::from_str(&text).map_err(|e| format!("unreadable manifest: {e}"))?;
    for (key, value) in wanted {
        if &m[*key] != value {
            return Err(format!("manifest has {key} {}, wanted {value}", m[*key]));
        }
    }
    for (file, key) in hashed {
        if m[key].as_str() != Some(hash_of(file)?.as_str()) {
            return Err(format!("{} differs from the manifest", file.display()));
        }
    }
    Ok(m)
}

/// Writes the manifest: `fields` (an object) with each file's hash under its key.
pub fn write(path: &Path, mut fields: Value, hashed: &[Hashed]) -> Result<(), String> {
    for (file, key) in hashed {
        fields[key] = json!(hash_of(file)?);
    }
    let text = serde_json::to_string_pretty(&fields).map_err(|e| e.to_string())? + "\n";
    crate::fsutil::write_atomic(path, text.as_bytes()).map_err(String::from)
}
