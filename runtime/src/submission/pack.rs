//! `mlperf pack_submission`: the exported tree as `mlperf_submission_<submitter>.tar.gz` (the
//! division directories at the top, as the official `pack_submission.sh` runs `tar -cvzf - closed/
//! open/`) and a checksum file in `sha256sum` format next to it.
//!
//! Encryption, optional, is the official flow's: `openssl enc -e -aes256` with a passphrase, so
//! MLCommons decrypts it with `openssl enc -d -aes256` (the official `--unpack`). We pass `-md
//! sha256` explicitly (the default of OpenSSL 1.1 and later, the one the official command gets) so
//! the result does not depend on the local OpenSSL's default. The passphrase comes from an
//! environment variable, never the command line (which other users can read). OpenSSL is an
//! external tool; packing says so when it is missing.

use super::SubmissionError;
use crate::fsutil::FsError;
use crate::layout::{Division, SubmissionLayout};
use flate2::write::GzEncoder;
use mlperf_config::Layout;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The environment variable holding the encryption passphrase.
pub const PASSPHRASE_ENV: &str = "MLPERF_PACK_PASSPHRASE";

pub struct PackRequest<'a> {
    /// The exported submission root (holds closed/, open/, network/).
    pub input: &'a Path,
    pub out_dir: &'a Path,
    pub submitter: &'a str,
    pub encrypt: bool,
    pub force: bool,
}

#[derive(Debug)]
pub struct Packed {
    pub tarball: PathBuf,
    pub checksum_file: PathBuf,
    pub sha256: String,
    pub encrypted: bool,
    pub divisions: Vec<&'static str>,
}

/// The submitter directory of an exported tree, when there is exactly one.
pub fn only_submitter(root: &Path) -> Result<String, SubmissionError> {
    let mut names: Vec<String> =
        SubmissionLayout::submitters(root, Layout::V6, None).iter().filter_map(|t| t.org_dir().file_name().and_then(|n| n.to_str()).map(String::from)).collect();
    names.sort();
    names.dedup();
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(SubmissionError::NoSubmitter { root: root.to_path_buf() }),
        many => Err(SubmissionError::SeveralSubmitters { root: root.to_path_buf(), names: many.to_vec() }),
    }
}

/// The official names: `mlperf_submission_<submitter>.tar.gz` and the checksum beside it.
pub fn file_names(submitter: &str) -> (String, String) {
    (format!("mlperf_submission_{submitter}.tar.gz"), format!("mlperf_submission_{submitter}.sha256"))
}

pub fn pack(req: &PackRequest) -> Result<Packed, SubmissionError> {
    let divisions: Vec<&'static str> = Division::ALL.iter().map(|d| d.dir_name()).filter(|d| req.input.join(d).is_dir()).collect();
    if divisions.is_empty() {
        return Err(SubmissionError::NoDivision { input: req.input.to_path_buf() });
    }
    if let Some(link) = divisions.iter().flat_map(|d| symlinks(&req.input.join(d))).next() {
        return Err(SubmissionError::Link { link });
    }
    let (tar_name, sum_name) = file_names(req.submitter);
    let (tarball, checksum_file) = (req.out_dir.join(&tar_name), req.out_dir.join(&sum_name));
    for path in [&tarball, &checksum_file] {
        if path.exists() && !req.force {
            return Err(SubmissionError::Exists { path: path.clone() });
        }
    }
    std::fs::create_dir_all(req.out_dir).map_err(FsError::create(req.out_dir))?;
    let partial = req.out_dir.join(format!(".{tar_name}.partial-{}", std::process::id()));
    let written = if req.encrypt { write_encrypted(req.input, &divisions, &partial) } else { write_plain(req.input, &divisions, &partial) };
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    let (_, sha256) = crate::fsutil::sha256_file(&partial)?;
    std::fs::rename(&partial, &tarball).map_err(|source| FsError::Rename { path: tarball.clone(), source })?;
    crate::fsutil::write_atomic(&checksum_file, format!("{sha256}  {tar_name}\n").as_bytes())?;
    Ok(Packed { tarball, checksum_file, sha256, encrypted: req.encrypt, divisions })
}

/// The gzip-compressed tar of the divisions, written to `out`.
fn write_tar_gz<W: Write>(input: &Path, divisions: &[&str], out: W) -> Result<W, SubmissionError> {
    let failed = |what: String| move |source| SubmissionError::Archive { what, source };
    let mut tar = tar::Builder::new(GzEncoder::new(out, flate2::Compression::default()));
    tar.follow_symlinks(false);
    for division in divisions {
        tar.append_dir_all(division, input.join(division)).map_err(failed(format!("archive {}", input.join(division).display())))?;
    }
    let gz = tar.into_inner().map_err(failed("finish the archive".into()))?;
    gz.finish().map_err(failed("finish the compression".into()))
}

fn write_plain(input: &Path, divisions: &[&str], to: &Path) -> Result<(), SubmissionError> {
    let file = std::fs::File::create(to).map_err(FsError::create(to))?;
    let file = write_tar_gz(input, divisions, std::io::BufWriter::new(file))?;
    Ok(file.into_inner().map_err(|e| FsError::Write { path: to.to_path_buf(), source: e.into_error() })?.sync_all().map_err(FsError::write(to))?)
}

/// The tar.gz streamed through `openssl enc -e -aes256` (the plain archive never touches disk).
fn write_encrypted(input: &Path, divisions: &[&str], to: &Path) -> Result<(), SubmissionError> {
    if std::env::var(PASSPHRASE_ENV).map_or(true, |p| p.is_empty()) {
        return Err(SubmissionError::NoPassphrase);
    }
    let mut child = Command::new("openssl")
        .args(["enc", "-e", "-aes256", "-md", "sha256", "-pass"])
        .arg(format!("env:{PASSPHRASE_ENV}"))
        .arg("-out")
        .arg(to)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SubmissionError::NoOpenssl { source })?;
    let stdin = child.stdin.take().expect("piped");
    let streamed = write_tar_gz(input, divisions, stdin).map(drop);
    let output = child.wait_with_output().map_err(|source| SubmissionError::OpensslWait { source })?;
    streamed?;
    if !output.status.success() {
        return Err(SubmissionError::OpensslFailed { status: output.status, stderr: String::from_utf8_lossy(&output.stderr).trim().to_string() });
    }
    Ok(())
}

/// Symbolic links below `dir`.
fn symlinks(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        match entry.file_type() {
            Ok(t) if t.is_symlink() => out.push(path),
            Ok(t) if t.is_dir() => out.extend(symlinks(&path)),
            _ => {}
        }
    }
    out
}
