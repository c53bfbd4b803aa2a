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
pub fn only_submitter(root: &Path) -> Result<String, String> {
    let mut names: Vec<String> =
        SubmissionLayout::submitters(root, Layout::V6, None).iter().filter_map(|t| t.org_dir().file_name().and_then(|n| n.to_str()).map(String::from)).collect();
    names.sort();
    names.dedup();
    match names.as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!("{} holds no submitter directory; run `mlperf export_submission` first", root.display())),
        many => Err(format!("{} holds several submitters ({}); pass --submitter", root.display(), many.join(", "))),
    }
}

/// The official names: `mlperf_submission_<submitter>.tar.gz` and the checksum beside it.
pub fn file_names(submitter: &str) -> (String, String) {
    (format!("mlperf_submission_{submitter}.tar.gz"), format!("mlperf_submission_{submitter}.sha256"))
}

pub fn pack(req: &PackRequest) -> Result<Packed, String> {
    let divisions: Vec<&'static str> = Division::ALL.iter().map(|d| d.dir_name()).filter(|d| req.input.join(d).is_dir()).collect();
    if divisions.is_empty() {
        return Err(format!("{} has no closed/, open/ or network/ directory; run `mlperf export_submission` first", req.input.display()));
    }
    if let Some(link) = divisions.iter().flat_map(|d| symlinks(&req.input.join(d))).next() {
        return Err(format!("{} is a symbolic link; pack an export (`mlperf export_submission`), which holds real files only", link.display()));
    }
    let (tar_name, sum_name) = file_names(req.submitter);
    let (tarball, checksum_file) = (req.out_dir.join(&tar_name), req.out_dir.join(&sum_name));
    for path in [&tarball, &checksum_file] {
        if path.exists() && !req.force {
            return Err(format!("{} already exists; it is never overwritten silently: rerun with --force", path.display()));
        }
    }
    std::fs::create_dir_all(req.out_dir).map_err(|e| format!("cannot create {}: {e}", req.out_dir.display()))?;
    let partial = req.out_dir.join(format!(".{tar_name}.partial-{}", std::process::id()));
    let written = if req.encrypt { write_encrypted(req.input, &divisions, &partial) } else { write_plain(req.input, &divisions, &partial) };
    if let Err(e) = written {
        let _ = std::fs::remove_file(&partial);
        return Err(e);
    }
    let (_, sha256) = crate::fsutil::sha256_file(&partial)?;
    std::fs::rename(&partial, &tarball).map_err(|e| format!("cannot move {} into place: {e}", tarball.display()))?;
    crate::fsutil::write_atomic(&checksum_file, format!("{sha256}  {tar_name}\n").as_bytes())?;
    Ok(Packed { tarball, checksum_file, sha256, encrypted: req.encrypt, divisions })
}

/// The gzip-compressed tar of the divisions, written to `out`.
fn write_tar_gz<W: Write>(input: &Path, divisions: &[&str], out: W) -> Result<W, String> {
    let mut tar = tar::Builder::new(GzEncoder::new(out, flate2::Compression::default()));
    tar.follow_symlinks(false);
    for division in divisions {
        tar.append_dir_all(division, input.join(division)).map_err(|e| format!("cannot archive {}: {e}", input.join(division).display()))?;
    }
    let gz = tar.into_inner().map_err(|e| format!("cannot finish the archive: {e}"))?;
    gz.finish().map_err(|e| format!("cannot finish the compression: {e}"))
}

fn write_plain(input: &Path, divisions: &[&str], to: &Path) -> Result<(), String> {
    let file = std::fs::File::create(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let file = write_tar_gz(input, divisions, std::io::BufWriter::new(file))?;
    file.into_inner().map_err(|e| format!("cannot write {}: {e}", to.display()))?.sync_all().map_err(|e| format!("cannot write {}: {e}", to.display()))
}

/// The tar.gz streamed through `openssl enc -e -aes256` (the plain archive never touches disk).
fn write_encrypted(input: &Path, divisions: &[&str], to: &Path) -> Result<(), String> {
    if std::env::var(PASSPHRASE_ENV).map_or(true, |p| p.is_empty()) {
        return Err(format!("--encrypt needs the passphrase in the environment variable {PASSPHRASE_ENV} (never on the command line); send it to MLCommons with the tarball"));
    }
    let mut child = Command::new("openssl")
        .args(["enc", "-e", "-aes256", "-md", "sha256", "-pass"])
        .arg(format!("env:{PASSPHRASE_ENV}"))
        .arg("-out")
        .arg(to)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!("cannot run openssl ({e}): encryption uses `openssl enc -e -aes256` exactly as the official pack_submission.sh, so MLCommons can decrypt it; install OpenSSL (e.g. apt-get install openssl) or pack without --encrypt")
        })?;
    let stdin = child.stdin.take().expect("piped");
    let streamed = write_tar_gz(input, divisions, stdin).map(drop);
    let output = child.wait_with_output().map_err(|e| format!("openssl did not finish: {e}"))?;
    streamed?;
    if !output.status.success() {
        return Err(format!("openssl enc failed ({}): {}", output.status, String::from_utf8_lossy(&output.stderr).trim()));
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
