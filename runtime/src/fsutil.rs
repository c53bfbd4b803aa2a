//! File helpers: atomic writes (nothing half-written is ever left behind) and directory walks.

use std::path::{Path, PathBuf};

/// A file operation that failed: which path, what was being done, and the system's reason.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FsError {
    #[error("{} has no parent directory", path.display())]
    NoParent { path: PathBuf },
    /// A directory or file could not be created.
    #[error("cannot create {}: {source}", path.display())]
    Create { path: PathBuf, source: std::io::Error },
    #[error("cannot write {}: {source}", path.display())]
    Write { path: PathBuf, source: std::io::Error },
    /// A preallocated file could not be given its size.
    #[error("cannot size {}: {source}", path.display())]
    Size { path: PathBuf, source: std::io::Error },
    #[error("cannot flush {}: {source}", path.display())]
    Flush { path: PathBuf, source: std::io::Error },
    /// The rename that puts a finished temporary file in place.
    #[error("cannot move {} into place: {source}", path.display())]
    Rename { path: PathBuf, source: std::io::Error },
    #[error("cannot read {}: {source}", path.display())]
    Read { path: PathBuf, source: std::io::Error },
    /// Another process holds the lock of an output directory.
    #[error("{what} (pid {pid}) is writing {}; wait for it to finish (or, if no such process runs, remove {})", dir.display(), lock.display())]
    Locked { what: String, pid: u32, dir: PathBuf, lock: PathBuf },
}

impl FsError {
    /// `map_err(FsError::create(path))` and friends: the error of an io step on `path`.
    pub fn create(path: &Path) -> impl FnOnce(std::io::Error) -> FsError + '_ {
        move |source| FsError::Create { path: path.to_path_buf(), source }
    }
    pub fn write(path: &Path) -> impl FnOnce(std::io::Error) -> FsError + '_ {
        move |source| FsError::Write { path: path.to_path_buf(), source }
    }
    pub fn read(path: &Path) -> impl FnOnce(std::io::Error) -> FsError + '_ {
        move |source| FsError::Read { path: path.to_path_buf(), source }
    }
}

/// A file that cannot be written (or read back for a digest) is [`crate::Error::Other`], as it was
/// when these helpers returned strings.
impl From<FsError> for crate::Error {
    fn from(e: FsError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// Writes `bytes` to `path` through a temporary file in the same directory and a rename. A write
/// that fails (a full disk) leaves no temporary file, and its error names `path`, not the temporary.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<(), FsError> {
    let dir = path.parent().ok_or_else(|| FsError::NoParent { path: path.to_path_buf() })?;
    std::fs::create_dir_all(dir).map_err(FsError::create(dir))?;
    let tmp = dir.join(format!(".{}.tmp-{}", path.file_name().and_then(|n| n.to_str()).unwrap_or("file"), std::process::id()));
    let written =
        std::fs::write(&tmp, bytes).map_err(FsError::write(path)).and_then(|()| std::fs::rename(&tmp, path).map_err(|source| FsError::Rename { path: path.to_path_buf(), source }));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
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
pub fn sha256_file(path: &Path) -> Result<(u64, String), FsError> {
    digest_file::<sha2::Sha256>(path)
}

/// The size and lower-case hex MD5 (as md5sum prints it) of a file, read in a stream.
pub fn md5_file(path: &Path) -> Result<(u64, String), FsError> {
    digest_file::<md5::Md5>(path)
}

/// A file's size, SHA-256 and MD5 (lower-case hex), read once.
pub struct FileDigests {
    pub bytes: u64,
    pub sha256: String,
    pub md5: String,
}

pub fn file_digests(path: &Path) -> Result<FileDigests, FsError> {
    use sha2::Digest;
    /// Feeds both hashers from one read.
    struct Both(sha2::Sha256, md5::Md5);
    impl std::io::Write for Both {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0.update(bytes);
            self.1.update(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut both = Both(sha2::Sha256::new(), md5::Md5::new());
    let bytes = copy_file(path, &mut both)?;
    Ok(FileDigests { bytes, sha256: hex(&both.0.finalize()), md5: hex(&both.1.finalize()) })
}

fn digest_file<D: sha2::Digest + std::io::Write>(path: &Path) -> Result<(u64, String), FsError> {
    let mut hasher = D::new();
    let bytes = copy_file(path, &mut hasher)?;
    Ok((bytes, hex(&hasher.finalize())))
}

fn copy_file(path: &Path, to: &mut impl std::io::Write) -> Result<u64, FsError> {
    let mut file = std::fs::File::open(path).map_err(FsError::read(path))?;
    std::io::copy(&mut file, to).map_err(FsError::read(path))
}

fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_atomic_write_names_the_file_and_leaves_no_temporary() {
        let dir = std::env::temp_dir().join(format!("mlperf-atomic-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // The rename fails: a directory holds the name (writes as root still fail this way).
        let target = dir.join("summary.json");
        std::fs::create_dir_all(target.join("occupied")).unwrap();
        let e = write_atomic(&target, b"{}").unwrap_err();
        assert!(matches!(&e, FsError::Rename { path, .. } if *path == target), "{e}");
        let left: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, [std::ffi::OsString::from("summary.json")], "no temporary left");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn one_read_gives_both_digests_as_sha256sum_and_md5sum_print_them() {
        let path = std::env::temp_dir().join(format!("mlperf-digests-{}", std::process::id()));
        std::fs::write(&path, "abc").unwrap();
        let d = file_digests(&path).unwrap();
        assert_eq!((d.bytes, d.md5.as_str()), (3, "900150983cd24fb0d6963f7d28e17f72"));
        assert_eq!(d.sha256, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!((sha256_file(&path).unwrap().1, md5_file(&path).unwrap().1), (d.sha256, d.md5));
        std::fs::remove_file(path).unwrap();
    }
}

/// An exclusive hold on an output directory that several commands write (`stage_results`,
/// `stage_compliance`, `infer_results` and `truncate_results` on one submission tree): a `.<dir name>.mlperf.lock` file beside it (not in the
/// tree, which the checker walks) holding the writer's pid, created only if absent and removed
/// when dropped. A lock whose process no longer runs is taken over.
#[derive(Debug)]
pub struct DirLock {
    path: PathBuf,
}

impl DirLock {
    /// Takes the lock of `dir` for `what` (the command, named to other writers).
    pub fn acquire(dir: &Path, what: &str) -> Result<DirLock, FsError> {
        let path = match (dir.parent(), dir.file_name()) {
            (Some(parent), Some(name)) => parent.join(format!(".{}.mlperf.lock", name.to_string_lossy())),
            _ => dir.join(".mlperf.lock"),
        };
        // Only where the lock goes: a refused command leaves no empty output directory behind.
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(FsError::create(parent))?;
        for _ in 0..2 {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    use std::io::Write;
                    writeln!(file, "{} {what}", std::process::id()).map_err(FsError::write(&path))?;
                    return Ok(DirLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let held = std::fs::read_to_string(&path).unwrap_or_default();
                    let mut fields = held.splitn(2, ' ');
                    // A lock being written has no pid yet: its writer is alive.
                    let pid = fields.next().and_then(|p| p.trim().parse::<u32>().ok());
                    let holder = fields.next().map_or_else(|| "another mlperf command".to_string(), |w| format!("mlperf {}", w.trim()));
                    match pid {
                        Some(pid) if !process_runs(pid) => {
                            tracing::warn!("taking over {}: its process {pid} no longer runs", path.display());
                            std::fs::remove_file(&path).map_err(FsError::write(&path))?;
                        }
                        _ => return Err(FsError::Locked { what: holder, pid: pid.unwrap_or(0), dir: dir.to_path_buf(), lock: path }),
                    }
                }
                Err(e) => return Err(FsError::Create { path, source: e }),
            }
        }
        Err(FsError::Locked { what: "another mlperf command".into(), pid: 0, dir: dir.to_path_buf(), lock: path })
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether process `pid` exists (a signal-0 probe; EPERM means it exists under another user).
fn process_runs(pid: u32) -> bool {
    let Ok(pid) = i32::try_from(pid) else { return false };
    // SAFETY: kill(2) with signal 0 sends nothing; it only checks that the process exists.
    unsafe { libc::kill(pid, 0) == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM) }
}
