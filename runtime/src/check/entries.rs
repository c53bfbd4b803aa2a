//! The entries of a submission tree, walked without ever following a link: the one walk
//! `check_submission` and `export_submission` share. A symbolic link (to a file or a directory,
//! inside the tree or out of it, or in a loop), a special file (FIFO, socket, device) or a
//! directory that cannot be read is refused rather than followed, so the walk stays inside the
//! tree, ends, and reads nothing it does not list. Names are held to what the official checker and
//! a tarball take safely (see [`name_problem`]).

use std::fmt;
use std::path::{Path, PathBuf};

/// The regular files and directories below a root, and what was refused there.
#[derive(Debug, Default)]
pub struct Entries {
    /// Directories below the root (not the root), sorted.
    pub dirs: Vec<PathBuf>,
    /// Regular files, sorted.
    pub files: Vec<PathBuf>,
    pub refused: Vec<Refused>,
}

/// An entry the tree may not hold, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Refused {
    pub path: PathBuf,
    pub why: Refusal,
}

#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// A symbolic link, with what it points to (never followed).
    Link { target: PathBuf },
    /// A FIFO, socket or device.
    Special,
    /// A directory that cannot be listed, or an entry whose type cannot be read.
    Unreadable { reason: String },
    /// A name outside the characters the official checker and tarballs take.
    Name { problem: &'static str },
}

impl Refusal {
    /// Whether reading below this entry could leave the tree or block (a link, a FIFO, a device):
    /// the rules that would read there are not run.
    pub fn unsafe_to_read(&self) -> bool {
        !matches!(self, Refusal::Name { .. })
    }

    /// What to do about it.
    pub fn fix(&self) -> &'static str {
        match self {
            Refusal::Link { .. } => "replace the link with a copy of the file it points to (`cp --remove-destination \"$(readlink -f P)\" P`), or remove it",
            Refusal::Special => "remove it: a submission holds regular files and directories only",
            Refusal::Unreadable { .. } => "make it readable (permissions), or remove it",
            Refusal::Name { .. } => "rename it with letters, digits, `.`, `_`, `-`, `+`, `=`, `,`, `@` or `~` only, not starting with `-`",
        }
    }
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Refusal::Link { target } => write!(f, "symbolic link to {} (never followed: a submission holds real files only)", target.display()),
            Refusal::Special => f.write_str("not a regular file or directory (a FIFO, socket or device)"),
            Refusal::Unreadable { reason } => write!(f, "cannot be read: {reason}"),
            Refusal::Name { problem } => write!(f, "file name {problem}"),
        }
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}: {}", self.path.display().to_string(), self.why)
    }
}

/// Walks `root` (a directory; nothing when it is not one). Entries are never followed through a
/// link, so the walk cannot leave the tree or loop; each directory is read once.
pub fn walk(root: &Path) -> Entries {
    let mut entries = Entries::default();
    walk_into(root, &mut entries);
    entries.dirs.sort();
    entries.files.sort();
    entries.refused.sort_by(|a, b| a.path.cmp(&b.path));
    entries
}

fn walk_into(dir: &Path, out: &mut Entries) {
    let listing = match std::fs::read_dir(dir) {
        Ok(listing) => listing,
        Err(e) => {
            out.refused.push(Refused { path: dir.to_path_buf(), why: Refusal::Unreadable { reason: e.to_string() } });
            return;
        }
    };
    for entry in listing {
        let entry = match entry {
            Ok(entry) => entry,
            Err(e) => {
                out.refused.push(Refused { path: dir.to_path_buf(), why: Refusal::Unreadable { reason: e.to_string() } });
                continue;
            }
        };
        let path = entry.path();
        if let Some(problem) = name_problem(&entry.file_name()) {
            out.refused.push(Refused { path: path.clone(), why: Refusal::Name { problem } });
        }
        // DirEntry::file_type does not follow links (lstat).
        match entry.file_type() {
            Ok(t) if t.is_symlink() => {
                let target = std::fs::read_link(&path).unwrap_or_default();
                out.refused.push(Refused { path, why: Refusal::Link { target } });
            }
            Ok(t) if t.is_dir() => {
                out.dirs.push(path.clone());
                walk_into(&path, out);
            }
            Ok(t) if t.is_file() => out.files.push(path),
            Ok(_) => out.refused.push(Refused { path, why: Refusal::Special }),
            Err(e) => out.refused.push(Refused { path, why: Refusal::Unreadable { reason: e.to_string() } }),
        }
    }
}

/// Why a file or directory name is refused, None when it is fine. The official checker refuses
/// names with spaces (`submission_checker_old.py`: "files with spaces in their names"); beyond
/// that a name is limited to the POSIX portable file name characters (letters, digits, `.`, `_`,
/// `-`) plus `+ = , @ ~`, so that no tarball, shell loop or review tool misreads it: no control
/// character (a newline splits a listing), no quote, glob or backslash, and no leading `-` (read
/// as an option: `-rf`).
pub fn name_problem(name: &std::ffi::OsStr) -> Option<&'static str> {
    let Some(name) = name.to_str() else { return Some("is not valid UTF-8") };
    if name.starts_with('-') {
        return Some("starts with `-` (tools read it as an option)");
    }
    if name.chars().any(|c| c.is_control()) {
        return Some("holds a control character (a newline or tab splits listings and tarball tables)");
    }
    if name.contains(' ') {
        return Some("holds a space (the official checker refuses spaces in names)");
    }
    if name.chars().any(|c| !(c.is_ascii_alphanumeric() || "._-+=,@~".contains(c))) {
        return Some("holds a character outside letters, digits and `._-+=,@~` (quotes, globs, backslashes and non-ASCII break tarballs and scripts)");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    #[test]
    fn links_special_files_and_bad_names_are_refused_and_never_followed() {
        let root = std::env::temp_dir().join(format!("mlperf-entries-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        std::fs::create_dir_all(root.join("a/b")).unwrap();
        std::fs::write(root.join("a/b/ok.txt"), "x").unwrap();
        symlink("/", root.join("a/root")).unwrap();
        symlink("/etc/passwd", root.join("a/b/passwd")).unwrap();
        symlink(root.join("a"), root.join("a/b/loop")).unwrap();
        std::fs::write(root.join("a/new\nline"), "").unwrap();
        std::fs::write(root.join("a/-rf"), "").unwrap();
        assert!(std::process::Command::new("mkfifo").arg(root.join("a/fifo")).status().unwrap().success());
        let started = std::time::Instant::now();
        let entries = walk(&root);
        assert!(started.elapsed().as_secs() < 1);
        assert_eq!(entries.files, [root.join("a/-rf"), root.join("a/b/ok.txt"), root.join("a/new\nline")]);
        assert_eq!(entries.dirs, [root.join("a"), root.join("a/b")]);
        let refused: Vec<(String, String)> = entries.refused.iter().map(|r| (r.path.strip_prefix(&root).unwrap().display().to_string(), r.why.to_string())).collect();
        let find = |p: &str| refused.iter().find(|(path, _)| path == p).map(|(_, why)| why.as_str()).unwrap_or_else(|| panic!("{p} not refused: {refused:?}"));
        assert!(find("a/root").starts_with("symbolic link to /"));
        assert!(find("a/b/passwd").contains("/etc/passwd"));
        assert!(find("a/b/loop").starts_with("symbolic link"));
        assert!(find("a/fifo").contains("FIFO"));
        assert!(find("a/-rf").contains("starts with `-`"));
        assert!(find("a/new\nline").contains("control character"));
        assert_eq!(refused.len(), 6, "{refused:?}");
        for fine in ["mlperf_log_detail.txt", "CPU-dev_RS", "llama2-70b-99.9", "TEST01", ".gitkeep", "a+b=c,d@e", "README.md~"] {
            assert_eq!(name_problem(fine.as_ref()), None, "{fine}");
        }
        for bad in ["a b", "x*", "q\"", "ü", "back\\slash"] {
            assert!(name_problem(bad.as_ref()).is_some(), "{bad}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
