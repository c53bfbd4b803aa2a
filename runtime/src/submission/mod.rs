//! From runs to a submission: the round's tree layout, staging runs and verified audits into it,
//! inferred results, truncation of accuracy logs, a clean export and the packed tarball.

pub mod export;
pub mod infer;
pub mod pack;
pub mod stage;
pub mod truncate;

use crate::fsutil::write_atomic;
use crate::layout::Division;
use mlperf_config::{AuditTest, BenchmarkRound, Round};
use std::path::{Path, PathBuf};

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
    fn bytes(&self) -> Result<Vec<u8>, String> {
        match self {
            Content::Copy(from) => std::fs::read(from).map_err(|e| format!("cannot read {}: {e}", from.display())),
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
pub fn place_all(files: &[Placement], force: bool, rerun: &str) -> Result<PlaceReport, String> {
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
        let list: String = conflicts.iter().take(10).map(|p| format!("\n  {}", p.display())).collect();
        let more = if conflicts.len() > 10 { format!("\n  ... and {} more", conflicts.len() - 10) } else { String::new() };
        return Err(format!(
            "{} already staged file(s) would change; nothing was written:{list}{more}\nStaged results are never overwritten silently: rerun `{rerun} --force` to replace them",
            conflicts.len()
        ));
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
