//! `mlperf truncate_results`: the official `tools/submission/truncate_accuracy_log.py` semantics on
//! the staged tree, in place, after backing the full logs up.
//!
//! For each `accuracy/` directory of a result (and `TEST01`/`TEST07`/`TEST09` `accuracy/` below the
//! scenario directory): unless `accuracy.txt` already has a `hash=` line and the log is under
//! 10240 bytes (already truncated), append `\nhash=<sha256 of the full log>\n` to `accuracy.txt`
//! (TEST07/TEST09: accuracy.txt becomes just `hash=<hex>\n`) and cut `mlperf_log_accuracy.json` to
//! its first 4096 characters, `\n\n...\n\n`, and its last 4096 bytes; a log under 4096 bytes stays
//! whole (it still gets its hash). Two deliberate differences, both so that nothing is lost:
//! the official script skips a TEST01 log whose `accuracy.txt` is missing ("generate to continue";
//! the checker does not need one there), we create that accuracy.txt with the hash line; a rerun
//! after an interrupted one does not append the same hash twice; and TEST07/TEST09 logs already
//! hashed are skipped like the others (the script re-hashes them, recording the truncated log's hash).
//!
//! TEST01 verification compares the full accuracy log, so truncation refuses to run on a result
//! whose required audits are not staged yet.

use super::{SubmissionError, required_audits};
use crate::fsutil::write_atomic;
use crate::layout::{ACCURACY_LOG, ACCURACY_TXT, SubmissionLayout, verify_files};
use mlperf_config::{AuditTest, Round};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};

/// The checker's limit for a truncated log, and the script's "already truncated" test.
pub const MAX_ACCURACY_LOG_SIZE: u64 = 10 * 1024;
/// Characters kept from each end.
pub const VIEWABLE_SIZE: usize = 4096;

#[derive(Debug, Default)]
pub struct TruncateReport {
    pub truncated: Vec<PathBuf>,
    /// Logs hashed but kept whole (under 4096 bytes).
    pub hashed_whole: Vec<PathBuf>,
    pub already_done: Vec<PathBuf>,
    pub backups: Vec<PathBuf>,
}

/// Truncates every staged result under `root` (optionally one submitter's); full logs are copied
/// to the same relative path under `backup` first.
pub fn truncate_results(root: &Path, round: &Round, submitter: Option<&str>, backup: &Path) -> Result<TruncateReport, SubmissionError> {
    let _lock = crate::fsutil::DirLock::acquire(root, "truncate_results")?;
    let trees = SubmissionLayout::submitters(root, round.layout, submitter);
    if trees.is_empty() {
        return Err(SubmissionError::NothingStaged { root: root.to_path_buf() });
    }
    let mut missing = Vec::new();
    for tree in &trees {
        for key in tree.results() {
            for test in required_audits(round, tree.division(), &key.bench_dir) {
                let verify = tree.test_dir(&key, test).join(verify_files(test)[0]);
                if !verify.exists() {
                    missing.push(format!("{key} {test} ({} is missing)", verify.display()));
                }
            }
        }
    }
    if !missing.is_empty() {
        return Err(SubmissionError::AuditsNotStaged { round: round.id.to_string(), missing });
    }
    let mut report = TruncateReport::default();
    for tree in &trees {
        for key in tree.results() {
            for (dir, test) in tree.truncated_accuracy_dirs(&key) {
                if test.is_some() && !dir.join(ACCURACY_LOG).exists() {
                    continue;
                }
                let rel = dir.strip_prefix(root).expect("below the root");
                truncate_dir(&dir, test, &backup.join(rel), &mut report)?;
            }
        }
    }
    Ok(report)
}

/// The `hash=` value of an accuracy.txt, as the script's `^hash=([\w\d]+)$` finds it.
pub fn hash_line(accuracy_txt: &str) -> Option<&str> {
    accuracy_txt.lines().filter_map(|l| l.strip_prefix("hash=")).find(|h| !h.is_empty() && h.chars().all(|c| c.is_alphanumeric() || c == '_'))
}

pub fn sha256_hex(bytes: &[u8]) -> String {
    super::hex(&Sha256::digest(bytes))
}

/// One accuracy directory: back up, hash, truncate.
fn truncate_dir(dir: &Path, test: Option<AuditTest>, backup_dir: &Path, report: &mut TruncateReport) -> Result<(), SubmissionError> {
    let log_path = dir.join(ACCURACY_LOG);
    let txt_path = dir.join(ACCURACY_TXT);
    let log = std::fs::read(&log_path).map_err(SubmissionError::read(&log_path, "; stage the accuracy run again (`mlperf stage_results`)"))?;
    let hash_only = matches!(test, Some(AuditTest::Test07 | AuditTest::Test09));
    let txt = match std::fs::read_to_string(&txt_path) {
        Ok(t) => t,
        Err(_) if test.is_some() => String::new(),
        Err(e) => return Err(SubmissionError::read(&txt_path, "; the accuracy run must be scored before staging")(e)),
    };
    let recorded = hash_line(&txt);
    if recorded.is_some() && (log.len() as u64) < MAX_ACCURACY_LOG_SIZE {
        report.already_done.push(log_path);
        return Ok(());
    }
    let backup = backup_dir.join(ACCURACY_LOG);
    match std::fs::read(&backup) {
        Ok(saved) if saved == log => {}
        Ok(_) => return Err(SubmissionError::BackupDiffers { backup }),
        Err(_) => {
            write_atomic(&backup, &log)?;
            report.backups.push(backup);
        }
    }
    let hash = sha256_hex(&log);
    let new_txt = if hash_only {
        format!("hash={hash}\n")
    } else if recorded == Some(hash.as_str()) {
        txt.clone()
    } else {
        format!("{txt}\nhash={hash}\n")
    };
    if new_txt != txt {
        write_atomic(&txt_path, new_txt.as_bytes())?;
    }
    match truncated(&log).map_err(|source| SubmissionError::Truncate { path: log_path.clone(), source })? {
        Some(short) => {
            write_atomic(&log_path, &short)?;
            report.truncated.push(log_path);
        }
        None => report.hashed_whole.push(log_path),
    }
    Ok(())
}

/// The script's `truncate_file`: None for a log under 4096 bytes (kept whole); otherwise the first
/// 4096 characters (text mode), `\n\n...\n\n`, and everything from byte `size - 4096` on.
/// Why an accuracy log cannot be cut as the official script cuts it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TruncateError {
    #[error("not UTF-8 text: {0}")]
    NotUtf8(#[from] std::str::Utf8Error),
    #[error("byte {at} (4096 bytes before the end) falls inside a character")]
    SplitCharacter { at: usize },
}

pub fn truncated(log: &[u8]) -> Result<Option<Vec<u8>>, TruncateError> {
    if log.len() < VIEWABLE_SIZE {
        return Ok(None);
    }
    let text = std::str::from_utf8(log)?;
    let head_end = text.char_indices().nth(VIEWABLE_SIZE).map_or(text.len(), |(i, _)| i);
    let tail_start = log.len() - VIEWABLE_SIZE;
    if !text.is_char_boundary(tail_start) {
        return Err(TruncateError::SplitCharacter { at: tail_start });
    }
    let mut out = Vec::with_capacity(head_end + VIEWABLE_SIZE + 7);
    out.extend_from_slice(&log[..head_end]);
    out.extend_from_slice(b"\n\n...\n\n");
    out.extend_from_slice(&log[tail_start..]);
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hash_lines_are_found_as_the_script_finds_them() {
        assert_eq!(hash_line("accuracy=76.0%\n\nhash=ab12\n"), Some("ab12"));
        assert_eq!(hash_line("hash=\nhash=x y\n"), None);
        assert_eq!(hash_line("accuracy=76.0%\n"), None);
    }

    #[test]
    fn truncation_keeps_both_ends_and_short_logs_whole() {
        assert_eq!(truncated(&[b'a'; 4095]).unwrap(), None);
        let long: Vec<u8> = (0..20_000u32).map(|i| b'a' + (i % 26) as u8).collect();
        let short = truncated(&long).unwrap().unwrap();
        assert_eq!(short.len(), 4096 + 7 + 4096);
        assert_eq!(&short[..4096], &long[..4096]);
        assert_eq!(&short[4096..4103], b"\n\n...\n\n");
        assert_eq!(&short[4103..], &long[long.len() - 4096..]);
        // Between 4096 and 8199 bytes the script still rewrites (the ends overlap).
        assert_eq!(truncated(&[b'x'; 5000]).unwrap().unwrap().len(), 8199);
    }
}
