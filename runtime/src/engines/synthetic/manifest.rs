//! A generated set's `manifest.json`: what generated it (fields a reuse must match) and a hash of
//! each generated file, so a set is reused only while its generator and every file match. The
//! manifest goes first ([`invalidate`]) and comes back last ([`write`]): files half-replaced by an
//! interrupted generation are never taken for valid ones.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use super::content_hash;
use crate::fsutil::FsError;

/// Why a generated set cannot be reused or its manifest not kept up to date. The reasons a set is
/// stale ([`check`]) are what the log line says before it is generated again; a manifest that
/// cannot be removed or written is [`crate::Error::Other`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ManifestError {
    #[error("no manifest")]
    NoManifest,
    #[error("unreadable manifest: {0}")]
    Unreadable(#[source] serde_json::Error),
    #[error("manifest has {key} {found}, wanted {wanted}")]
    FieldDiffers { key: String, found: Value, wanted: Value },
    #[error("{} is missing", path.display())]
    FileMissing { path: PathBuf },
    #[error("{} differs from the manifest", path.display())]
    FileDiffers { path: PathBuf },
    #[error("cannot remove stale {}: {source}", path.display())]
    Remove { path: PathBuf, source: std::io::Error },
    #[error("{0}")]
    Serialize(#[source] serde_json::Error),
    #[error(transparent)]
    Write(#[from] FsError),
}

impl From<ManifestError> for crate::Error {
    fn from(e: ManifestError) -> crate::Error {
        match e {
            ManifestError::Remove { .. } | ManifestError::Serialize(_) | ManifestError::Write(_) => crate::Error::Other(e.to_string()),
            _ => crate::Error::Data(e.to_string()),
        }
    }
}

/// A generated file and the manifest key its hash is recorded under.
pub type Hashed = (PathBuf, String);

/// Removes the manifest before a generation starts.
pub fn invalidate(path: &Path) -> Result<(), ManifestError> {
    match std::fs::remove_file(path) {
        Err(source) if source.kind() != std::io::ErrorKind::NotFound => Err(ManifestError::Remove { path: path.to_path_buf(), source }),
        _ => Ok(()),
    }
}

fn hash_of(path: &Path) -> Result<String, ManifestError> {
    let bytes = std::fs::read(path).map_err(|_| ManifestError::FileMissing { path: path.to_path_buf() })?;
    Ok(format!("{:016x}", content_hash(&bytes)))
}

/// The manifest at `path` if the set can be reused: each field of `wanted` has its value and each
/// file of `hashed` its recorded hash; otherwise why not.
pub fn check(path: &Path, wanted: &[(&str, Value)], hashed: &[Hashed]) -> Result<Value, ManifestError> {
    let text = std::fs::read_to_string(path).map_err(|_| ManifestError::NoManifest)?;
    let m: Value = serde_json::from_str(&text).map_err(ManifestError::Unreadable)?;
    for (key, value) in wanted {
        if &m[*key] != value {
            return Err(ManifestError::FieldDiffers { key: key.to_string(), found: m[*key].clone(), wanted: value.clone() });
        }
    }
    for (file, key) in hashed {
        if m[key].as_str() != Some(hash_of(file)?.as_str()) {
            return Err(ManifestError::FileDiffers { path: file.clone() });
        }
    }
    Ok(m)
}

/// Writes the manifest: `fields` (an object) with each file's hash under its key.
pub fn write(path: &Path, mut fields: Value, hashed: &[Hashed]) -> Result<(), ManifestError> {
    for (file, key) in hashed {
        fields[key] = json!(hash_of(file)?);
    }
    let text = serde_json::to_string_pretty(&fields).map_err(ManifestError::Serialize)? + "\n";
    Ok(crate::fsutil::write_atomic(path, text.as_bytes())?)
}
