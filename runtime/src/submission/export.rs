//! `mlperf export_submission`: a clean copy of the staged tree for packing: only the division
//! directories, and none of the files that are ours rather than the submission's (run provenance,
//! editor backups, hidden files); everything left out is listed with the reason. The tree is
//! walked by [`crate::check::entries`], as `check_submission` walks it: a symbolic link, a special
//! file or an unsafe name anywhere in a division refuses the whole export, and nothing is written.

use crate::check::entries::{self, Refusal, Refused};
use crate::fsutil::FsError;
use crate::layout::Division;
use crate::rundir::{NON_SUBMITTABLE, RUN_PLAN};
use std::path::{Path, PathBuf};

/// Why an export was not made; nothing is written then.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExportError {
    /// The staged tree, or the export's parent directory, cannot be read.
    #[error("cannot read {}: {source}; run `mlperf stage_results` first", path.display())]
    Unreadable { path: PathBuf, source: std::io::Error },
    #[error("{} does not name a directory", to.display())]
    NotADirectory { to: PathBuf },
    #[error("the export {} and the staged tree {} must not contain each other", to.display(), from.display())]
    Nested { from: PathBuf, to: PathBuf },
    #[error("{} already exists; an export is never overwritten silently: remove it or rerun with --force", to.display())]
    Exists { to: PathBuf },
    #[error("{} holds more than closed/, open/ and network/, so it is not an earlier export; --force refuses to delete it", to.display())]
    NotAnExport { to: PathBuf },
    #[error("{} has no closed/, open/ or network/ directory; run `mlperf stage_results` first", from.display())]
    NoDivision { from: PathBuf },
    /// Links, special files or unsafe names in the staged tree (the same findings as
    /// `check_submission`'s `link` and `file-name` rules).
    #[error("{} holds {} entr{} a submission may not hold; nothing was exported:{}", from.display(), refused.len(), if refused.len() == 1 { "y" } else { "ies" }, list(refused))]
    Refused { from: PathBuf, refused: Vec<Refused> },
    #[error("cannot copy {} to {}: {source}", from.display(), to.display())]
    Copy { from: PathBuf, to: PathBuf, source: std::io::Error },
    #[error("cannot remove the earlier export {}: {source}", to.display())]
    RemoveEarlier { to: PathBuf, source: std::io::Error },
    #[error(transparent)]
    Fs(#[from] FsError),
}

/// One line per refused entry, with its fix.
fn list(refused: &[Refused]) -> String {
    refused.iter().map(|r| format!("\n  {r}\n    fix: {}", r.why.fix())).collect()
}

/// A refused tree is what `check_submission` fails on (exit 7); the rest are files that cannot be
/// read or written, or an export in the way (exit 1, as when they were strings).
impl From<ExportError> for crate::Error {
    fn from(e: ExportError) -> crate::Error {
        match e {
            ExportError::Refused { .. } => crate::Error::CheckFailed(e.to_string()),
            other => crate::Error::Other(other.to_string()),
        }
    }
}

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
pub fn export(from: &Path, to: &Path, force: bool) -> Result<ExportReport, ExportError> {
    let unreadable = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ExportError::Unreadable { path, source }
    };
    let from_abs = std::fs::canonicalize(from).map_err(unreadable(from))?;
    let parent = to.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent).map_err(FsError::create(parent))?;
    let name = to.file_name().ok_or_else(|| ExportError::NotADirectory { to: to.to_path_buf() })?;
    let to_abs = std::fs::canonicalize(parent).map_err(unreadable(parent))?.join(name);
    if to_abs.starts_with(&from_abs) || from_abs.starts_with(&to_abs) {
        return Err(ExportError::Nested { from: from.to_path_buf(), to: to.to_path_buf() });
    }
    if to.exists() {
        if !force {
            return Err(ExportError::Exists { to: to.to_path_buf() });
        }
        if !is_export(to) {
            return Err(ExportError::NotAnExport { to: to.to_path_buf() });
        }
    }
    let mut report = ExportReport::default();
    let mut divisions = Vec::new();
    let mut refused = Vec::new();
    for entry in std::fs::read_dir(from).map_err(unreadable(from))?.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let division = Division::parse(&name).is_some_and(|d| d.dir_name() == name);
        match entry.file_type() {
            Ok(t) if division && t.is_symlink() => {
                refused.push(Refused { path: entry.path(), why: Refusal::Link { target: std::fs::read_link(entry.path()).unwrap_or_default() } })
            }
            Ok(t) if division && t.is_dir() => divisions.push(entry.path()),
            _ => report.left_out.push((PathBuf::from(&name), "not a division directory (closed, open, network)".into())),
        }
    }
    if divisions.is_empty() && refused.is_empty() {
        return Err(ExportError::NoDivision { from: from.to_path_buf() });
    }
    divisions.sort();
    let walks: Vec<(PathBuf, entries::Entries)> = divisions.into_iter().map(|d| (d.clone(), entries::walk(&d))).collect();
    refused.extend(walks.iter().flat_map(|(_, w)| w.refused.iter().cloned()));
    if !refused.is_empty() {
        for r in &mut refused {
            r.path = r.path.strip_prefix(from).map(Path::to_path_buf).unwrap_or_else(|_| r.path.clone());
        }
        return Err(ExportError::Refused { from: from.to_path_buf(), refused });
    }
    report.left_out.sort();
    let staging = to.with_file_name(format!(".{}.export-{}", to.file_name().and_then(|n| n.to_str()).unwrap_or("export"), std::process::id()));
    let _ = std::fs::remove_dir_all(&staging);
    let result = (|| {
        for (division, walk) in &walks {
            for dir in std::iter::once(division).chain(&walk.dirs) {
                let target = staging.join(dir.strip_prefix(from).expect("walked below from"));
                std::fs::create_dir_all(&target).map_err(FsError::create(&target))?;
            }
            for file in &walk.files {
                copy_clean(from, file, &staging, &mut report)?;
            }
        }
        if to.exists() {
            std::fs::remove_dir_all(to).map_err(|source| ExportError::RemoveEarlier { to: to.to_path_buf(), source })?;
        }
        std::fs::rename(&staging, to).map_err(|source| ExportError::Fs(FsError::Rename { path: to.to_path_buf(), source }))
    })();
    if result.is_err() {
        let _ = std::fs::remove_dir_all(&staging);
    }
    result.map(|_| report)
}

fn is_export(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|entries| entries.flatten().all(|e| e.file_name().to_str().and_then(Division::parse).is_some()))
}

/// Copies the regular file `path` (below `root`) into `out`, unless it is not submission content.
fn copy_clean(root: &Path, path: &Path, out: &Path, report: &mut ExportReport) -> Result<(), ExportError> {
    let rel = path.strip_prefix(root).expect("below the root").to_path_buf();
    let name = path.file_name().unwrap_or_default().to_string_lossy().to_string();
    if let Some(why) = stray(&name) {
        if name == NON_SUBMITTABLE {
            report.non_submittable.push(rel.clone());
        }
        report.left_out.push((rel, why.into()));
    } else {
        let target = out.join(&rel);
        std::fs::copy(path, &target).map_err(|source| ExportError::Copy { from: path.to_path_buf(), to: target, source })?;
        report.copied += 1;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_link_or_a_bad_name_anywhere_refuses_the_export_and_writes_nothing() {
        let root = std::env::temp_dir().join(format!("mlperf-export-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let staged = root.join("submission");
        let scenario = staged.join("closed/Example/results/sys/resnet/SingleStream");
        std::fs::create_dir_all(&scenario).unwrap();
        std::fs::write(scenario.join("user.conf"), "x").unwrap();
        std::os::unix::fs::symlink("/", scenario.join("root")).unwrap();
        std::fs::write(scenario.join("-rf"), "").unwrap();
        let out = root.join("export");
        let e = export(&staged, &out, false).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("2 entries a submission may not hold; nothing was exported"), "{text}");
        assert!(text.contains("\"closed/Example/results/sys/resnet/SingleStream/root\": symbolic link to /"), "{text}");
        assert!(text.contains("SingleStream/-rf\": file name starts with `-`"), "{text}");
        assert_eq!(crate::Error::from(e).exit_code(), crate::error::exit::CHECK_FAILED);
        assert!(!out.exists());
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 1, "no staging directory is left");
        std::fs::remove_file(scenario.join("root")).unwrap();
        std::fs::remove_file(scenario.join("-rf")).unwrap();
        let report = export(&staged, &out, false).unwrap();
        assert_eq!((report.copied, std::fs::read_to_string(out.join("closed/Example/results/sys/resnet/SingleStream/user.conf")).unwrap().as_str()), (1, "x"));
        std::fs::remove_dir_all(&root).unwrap();
    }
}
