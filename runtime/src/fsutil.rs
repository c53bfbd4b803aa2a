//! File helpers: atomic writes (nothing half-written is ever left behind) and directory walks.

use std::path::{Path, PathBuf};

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let dir = path.parent().ok_or_else(|| format!("{} has no parent directory", path.display()))?;
    std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let tmp = dir.join(format!(".{}.tmp-{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("file"), std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| format!("cannot write {}: {e}", tmp.display()))?;
    std::fs::rename(&tmp, path).map_err(|e| {
        let _ = std::fs::remove_file(&tmp);
        format!("cannot move {} into place: {e}", path.display())
    })
}

/// Every file below `root`, sorted (empty when it does not exist).
pub fn walk_files(root: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir(root) {
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                out.extend(walk_files(&path));
            } else {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// The size and lower-case hex SHA-256 (as sha256sum prints it) of a file, read in a stream.
pub fn sha256_file(path: &Path) -> Result<(u64, String), String> {
    digest_file::<sha2::Sha256>(path)
}

/// The size and lower-case hex MD5 (as md5sum prints it) of a file, read in a stream.
pub fn md5_file(path: &Path) -> Result<(u64, String), String> {
    digest_file::<md5::Md5>(path)
}

fn digest_file<D: sha2::Digest + std::io::Write>(path: &Path) -> Result<(u64, String), String> {
    let mut file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let mut hasher = D::new();
    let bytes = std::io::copy(&mut file, &mut hasher).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    Ok((bytes, hasher.finalize().iter().map(|b| format!("{b:02x}")).collect()))
}
