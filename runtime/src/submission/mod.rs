//! From runs to a submission: the round's tree layout, staging runs and verified audits into it,
//! inferred results, truncation of accuracy logs, a clean export and the packed tarball.

pub mod export;
pub mod infer;
pub mod pack;
pub mod stage;
pub mod truncate;

use crate::fsutil::{FsError, write_atomic};
use crate::layout::Division;
use mlperf_config::{AuditTest, BenchmarkRound, Round};
use std::path::{Path, PathBuf};

/// Why a step of the submission chain (placing files, inferring, truncating, packing) wrote
/// nothing or stopped; each says what to run next.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmissionError {
    /// A file the step needs; `fix` says how to get it back (may be empty).
    #[error("cannot read {}: {source}{fix}", path.display())]
    Read { path: PathBuf, source: std::io::Error, fix: &'static str },
    #[error(transparent)]
    Fs(#[from] FsError),
    /// Placing would change already staged files, and `--force` was not given.
    #[error("{} already staged file(s) would change; nothing was written:{}\nStaged results are never overwritten silently: rerun `{rerun} --force` to replace them", conflicts.len(), first_ten(conflicts))]
    WouldReplace { conflicts: Vec<PathBuf>, rerun: String },
    /// A staged system description that is not JSON.
    #[error("{} is not JSON ({source}); stage the results with `mlperf stage_results`", path.display())]
    NotJson { path: PathBuf, source: serde_json::Error },
    #[error("no staged submission under {}; run `mlperf stage_results` first", root.display())]
    NothingStaged { root: PathBuf },
    /// Truncation before the audits that compare the full accuracy log are staged.
    #[error("round {round} requires audits that are not staged yet:\n  {}\nTEST01 verification compares the full accuracy log, which truncation replaces; run `mlperf run_audit_harness` and `mlperf stage_compliance` first, then truncate", missing.join("\n  "))]
    AuditsNotStaged { round: String, missing: Vec<String> },
    #[error("{} already holds a different full log; it is never overwritten: move it away, then rerun", backup.display())]
    BackupDiffers { backup: PathBuf },
    #[error("{}: {source}", path.display())]
    Truncate { path: PathBuf, source: truncate::TruncateError },
    #[error("{} has no closed/, open/ or network/ directory; run `mlperf export_submission` first", input.display())]
    NoDivision { input: PathBuf },
    #[error("{} is a symbolic link; pack an export (`mlperf export_submission`), which holds real files only", link.display())]
    Link { link: PathBuf },
    #[error("{} already exists; it is never overwritten silently: rerun with --force", path.display())]
    Exists { path: PathBuf },
    #[error("{} holds no submitter directory; run `mlperf export_submission` first", root.display())]
    NoSubmitter { root: PathBuf },
    #[error("{} holds several submitters ({}); pass --submitter", root.display(), names.join(", "))]
    SeveralSubmitters { root: PathBuf, names: Vec<String> },
    /// Writing the tarball: `what` is the step (`archive <dir>`, `finish the archive`, ...).
    #[error("cannot {what}: {source}")]
    Archive { what: String, source: std::io::Error },
    #[error("--encrypt needs the passphrase in the environment variable {} (never on the command line); send it to MLCommons with the tarball", pack::PASSPHRASE_ENV)]
    NoPassphrase,
    #[error(
        "cannot run openssl ({source}): encryption uses `openssl enc -e -aes256` exactly as the official pack_submission.sh, so MLCommons can decrypt it; install OpenSSL (e.g. apt-get install openssl) or pack without --encrypt"
    )]
    NoOpenssl { source: std::io::Error },
    #[error("openssl did not finish: {source}")]
    OpensslWait { source: std::io::Error },
    #[error("openssl enc failed ({status}): {stderr}")]
    OpensslFailed { status: std::process::ExitStatus, stderr: String },
}

impl SubmissionError {
    /// `map_err(SubmissionError::read(path, fix))`: a file that cannot be read.
    pub fn read<'a>(path: &'a Path, fix: &'static str) -> impl FnOnce(std::io::Error) -> SubmissionError + 'a {
        move |source| SubmissionError::Read { path: path.to_path_buf(), source, fix }
    }
}

/// The first ten paths, one a line, and how many more.
fn first_ten(paths: &[PathBuf]) -> String {
    let list: String = paths.iter().take(10).map(|p| format!("\n  {}", p.display())).collect();
    let more = if paths.len() > 10 { format!("\n  ... and {} more", paths.len() - 10) } else { String::new() };
    list + &more
}

/// The submission steps' refusals and unreadable files are [`crate::Error::Other`], as when they
/// were strings.
impl From<SubmissionError> for crate::Error {
    fn from(e: SubmissionError) -> crate::Error {
        crate::Error::Other(e.to_string())
    }
}

/// The round's benchmark whose checker model names a results directory (`resnet`, `bert-99.9`).
pub fn benchmark_for_dir<'r>(round: &'r Round, bench_dir: &str) -> Option<&'r BenchmarkRound> {
    round.benchmarks.0.iter().map(|(_, b)| b).find(|b| b.checker_models.0.iter().any(|(_, m)| m == bench_dir))
}

/// The compliance tests a result needs: the round's tests for its benchmark (closed and network
/// divisions; the checker skips them for open).
pub fn required_audits(round: &Round, division: Option<Division>, bench_dir: &str) -> Vec<AuditTest> {
    if division == Some(Division::Open) {
        return Vec::new();
    }
    benchmark_for_dir(round, bench_dir).map(|b| b.compliance.to_vec()).unwrap_or_default()
}

/// Lower-case hex of a digest (as sha256sum prints it).
pub fn hex(digest: &[u8]) -> String {
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// What goes into a file of the tree.
#[derive(Debug, Clone)]
pub enum Content {
    /// The bytes of a file elsewhere (a run's log).
    Copy(PathBuf),
    /// Generated text.
    Text(String),
}

impl Content {
    fn bytes(&self) -> Result<Vec<u8>, SubmissionError> {
        match self {
            Content::Copy(from) => std::fs::read(from).map_err(SubmissionError::read(from, "")),
            Content::Text(text) => Ok(text.clone().into_bytes()),
        }
    }
}

/// One file to place at `dest`.
#[derive(Debug, Clone)]
pub struct Placement {
    pub dest: PathBuf,
    pub content: Content,
}

#[derive(Debug, Default)]
pub struct PlaceReport {
    pub written: Vec<PathBuf>,
    /// Files that already held exactly these bytes.
    pub unchanged: usize,
    /// Files whose different contents `force` replaced.
    pub replaced: Vec<PathBuf>,
}

/// Writes every placement atomically. A file already holding the same bytes is left alone; one
/// holding different bytes is replaced only with `force`, and without it nothing at all is written
/// (the error lists every such file). `rerun` says which command and flag would replace them.
pub fn place_all(files: &[Placement], force: bool, rerun: &str) -> Result<PlaceReport, SubmissionError> {
    let mut contents = Vec::with_capacity(files.len());
    let mut conflicts = Vec::new();
    for file in files {
        let bytes = file.content.bytes()?;
        let existing = std::fs::read(&file.dest).ok();
        if existing.as_ref().is_some_and(|old| *old != bytes) {
            conflicts.push(file.dest.clone());
        }
        contents.push((file, bytes, existing));
    }
    if !conflicts.is_empty() && !force {
        return Err(SubmissionError::WouldReplace { conflicts, rerun: rerun.to_string() });
    }
    let mut report = PlaceReport::default();
    for (file, bytes, existing) in contents {
        match existing {
            Some(old) if old == bytes => report.unchanged += 1,
            Some(_) => {
                write_atomic(&file.dest, &bytes)?;
                report.replaced.push(file.dest.clone());
            }
            None => {
                write_atomic(&file.dest, &bytes)?;
                report.written.push(file.dest.clone());
            }
        }
    }
    Ok(report)
}

/// Placements copying every file below `from` to the same relative path below `to`.
pub fn copy_tree(from: &Path, to: &Path) -> Vec<Placement> {
    crate::fsutil::walk_files(from).into_iter().map(|file| Placement { dest: to.join(file.strip_prefix(from).expect("walked below from")), content: Content::Copy(file) }).collect()
}
