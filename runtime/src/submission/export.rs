//! `mlperf export_submission`: a clean copy of the staged tree for packing: only the division
//! directories, only regular files and directories (no symbolic links), and none of the files
//! that are ours rather than the submission's (run provenance, editor backups, hidden files).
//! Everything left out is listed with the reason.

use crate::layout::Division;
use crate::rundir::{NON_SUBMITTABLE, RUN_PLAN};
use std::path::{Path, PathBuf};

#[derive(Debug, Default)]
pub struct ExportReport {
    pub copied: usize,
    /// `(path relative to the staged root, why)`.
    pub left_out: Vec<(PathBuf, String)>,
    /// Staged results that came from non-submittable runs (their NON_SUBMITTABLE.txt was left out).
    pub non_submittable: Vec<PathBuf>,
}

/// Why a file name is not part of a submission (None: it is).
fn stray(name: &str) -> Option<&'static str> {
    if name == NON_SUBMITTABLE {
        Some("non-submittable marker of the staged run")
    } else if name == RUN_PLAN {
        Some("run provenance, not a submission file")
    } else if name.ends_with('~') || [".swp", ".swo", ".bak", ".orig", ".rej"].iter().any(|e| name.ends_with(e)) || name.starts_with(".#") {
        Some("editor backup")
    } else if name.starts_with('.') && name != ".gitkeep" {
        Some("hidden file")
    } else {
        None
    }
}

/// Copies the submission under `from` to `to`, which must not exist (with `force`, an earlier
/// export there is replaced). The copy is assembled next to `to` and moved into place at the end.
pub fn export(from: &Path, to: &Path, force: bool) -> Result<ExportReport, String> {
    let from_abs = std::fs::canonicalize(from).map_err(|e| format!("cannot read the staged submission {}: {e}; run `mlperf stage_results` first", from.display()))?;
    let parent = to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(|e| format!("cannot create {}: {e}", parent.display()))?;
    let name = to.file_name().ok_or_else(|| format!("{} does not name a directory", to.display()))?;
    let to_abs = std::fs::canonicalize(parent).map_err(|e| format!("cannot read {}: {e}", parent.display()))?.join(name);
    if to_abs.starts_with(&from_abs) || from_abs.starts_with(&to_abs) {
        return Err(format!("the export {} and the staged tree {} must not contain each other", to.display(), from.display()));
    }
    if to.exists() {
        if !force {
            return Err(format!("{} already exists; an export is never overwritten silently: remove it or rerun with --force", to.display()));
        }
        if !is_export(to) {
            return Err(format!("{} holds more than closed/, open/ and network/, so it is not an earlier export; --force refuses to delete it", to.display()));
        }
    }
    let staging = to.with_file_name(format!(".{}.export-{}", to.file_name().and_then(|n| n.to_str()).unwrap_or("export"), std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let mut report = ExportReport::default();
    let result = (|| {
        let mut found = false;
        for entry in read_dir_sorted(from)? {
            let name = entry.file_name().unwrap_or_default().to_string_lossy().to_string();
            if Division::parse(&name).is_some_and(|d| d.dir_name() == name) && entry.is_dir() && !entry.is_symlink() {
                found = true;
                copy_clean(from, &entry, &staging, &mut report)?;
            } else {
                report.left_out.push((PathBuf::from(&name), "not a division directory (closed, open, network)".into()));
            }
        }
        if !found {
            return Err(format!("{} has no closed/, open/ or network/ directory; run `mlperf stage_results` first", from.display()));
        }
        if to.exists() {
            std::fs::remove_dir_all(to).map_err(|e| format!("cannot remove the earlier export {}: {e}", to.display()))?;
        }
        std::fs::rename(&staging, to).map_err(|e| format!("cannot move the export into {}: {e}", to.display()))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result.map(|_| report)
}

fn is_export(dir: &Path) -> bool {
    read_dir_sorted(dir).is_ok_and(|entries| entries.iter().all(|e| e.file_name().and_then(|n| n.to_str()).and_then(Division::parse).is_some()))
}

fn read_dir_sorted(dir: &Path) -> Result<Vec<PathBuf>, String> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir).map_err(|e| format!("cannot read {}: {e}", dir.display()))?.flatten().map(|e| e.path()).collect();
    entries.sort();
    Ok(entries)
}

/// Copies `path` (below `root`) into `out`, recursively, leaving out what is not submission content.
fn copy_clean(root: &Path, path: &Path, out: &Path, report: &mut ExportReport) -> Result<(), String> {
    let rel = path.strip_prefix(root).expect("below the root").to_path_buf();
    let meta = std::fs::symlink_metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
    if meta.file_type().is_symlink() {
        report.left_out.push((rel, "symbolic link: the export holds real files only; replace it with the file it points to".into()));
    } else if meta.is_dir() {
        std::fs::create_dir_all(out.join(&rel)).map_err(|e| format!("cannot create {}: {e}", out.join(&rel).display()))?;
        for entry in read_dir_sorted(path)? {
            copy_clean(root, &entry, out, report)?;
        }
    } else if !meta.is_file() {
        report.left_out.push((rel, "not a regular file".into()));
    } else if let Some(why) = stray(&name) {
        if name == NON_SUBMITTABLE {
            report.non_submittable.push(rel.clone());
        }
        report.left_out.push((rel, why.into()));
    } else {
        std::fs::copy(path, out.join(&rel)).map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
        report.copied += 1;
    }
    Ok(())
}
