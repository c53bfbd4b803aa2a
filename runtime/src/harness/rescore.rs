//! `mlperf score <run directory>`: scores the accuracy log an accuracy run kept, again, as the run
//! would have (its plan's benchmark, settings and sample set, the family's scorer, `accuracy.txt`
//! written atomically). For a run whose scoring failed (a truncated tokenizer, a missing sentence
//! model) once the cause is fixed: its samples need not run again. An existing `accuracy.txt` is
//! replaced only with `--force`, and only once the new score is in hand.

use crate::accuracy::{Scored, write_accuracy_txt};
use crate::benchmarks::{self, WorkloadSpec};
use crate::error::Error;
use crate::fsutil::FsError;
use crate::rundir::plan::{Backend, BackendKind, RunMode, read_plan};
use crate::rundir::{ABORTED, ACCURACY_LOG, ACCURACY_NOTE, ACCURACY_TXT, FAILED, RunDirError};
use std::path::{Path, PathBuf};

/// Why a run directory's accuracy log cannot be scored again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RescoreError {
    #[error(transparent)]
    Plan(#[from] RunDirError),
    #[error("{}: a {mode} run has no accuracy log to score; give the directory of an AccuracyOnly run (its `accuracy/` under a SubmissionRun)", dir.display())]
    NotAccuracy { dir: PathBuf, mode: RunMode },
    #[error("{}: the run answered with the {backend} test backend, not the model, so there is nothing to score", dir.display())]
    TestDouble { dir: PathBuf, backend: &'static str },
    #[error("{}: no accuracy log; the run did not get as far as LoadGen writing it", path.display())]
    NoLog { path: PathBuf },
    #[error("{}: the run did not finish its samples ({marker}: {why}), so its accuracy log is partial; run it again", dir.display())]
    Incomplete { dir: PathBuf, marker: &'static str, why: String },
    #[error("{}: the run left nothing to score: {note}", dir.display())]
    NothingToScore { dir: PathBuf, note: String },
    #[error("{} already exists; a score is never replaced silently: rerun with --force to replace it", path.display())]
    Exists { path: PathBuf },
    #[error(transparent)]
    Write(#[from] FsError),
}

impl From<RescoreError> for Error {
    /// A directory that is not a finished accuracy run (or no run at all) is the command's usage; a log that is
    /// missing or partial is data; an existing score or a write that fails is other.
    fn from(e: RescoreError) -> Error {
        match e {
            RescoreError::Plan(RunDirError::NoPlan { .. }) => Error::Usage(format!("{e}: is it a run directory (build/logs/<timestamp>/<system>/<benchmark>/<Scenario>/)?")),
            RescoreError::Plan(e) => e.into(),
            RescoreError::NotAccuracy { .. } | RescoreError::TestDouble { .. } | RescoreError::NothingToScore { .. } => Error::Usage(e.to_string()),
            RescoreError::NoLog { .. } | RescoreError::Incomplete { .. } => Error::Data(e.to_string()),
            RescoreError::Exists { .. } | RescoreError::Write(_) => Error::Other(e.to_string()),
        }
    }
}

/// Scores the accuracy log of the run in `dir` into its `accuracy.txt` (replacing one only with
/// `force`); returns the score. The scorer's inputs are checked first (the family's pre-flight),
/// and nothing is written unless scoring succeeds.
pub fn rescore(dir: &Path, force: bool) -> Result<Scored, Error> {
    let plan = read_plan(dir).map_err(RescoreError::from)?;
    let refuse = |e: RescoreError| Err(Error::from(e));
    if plan.mode != RunMode::AccuracyOnly {
        return refuse(RescoreError::NotAccuracy { dir: dir.to_path_buf(), mode: plan.mode });
    }
    if plan.backend.is_test_double() {
        let backend = if plan.backend == Backend::Null { BackendKind::Null } else { BackendKind::FixedLatency };
        return refuse(RescoreError::TestDouble { dir: dir.to_path_buf(), backend: backend.name() });
    }
    for marker in [ABORTED, FAILED] {
        if let Ok(why) = std::fs::read_to_string(dir.join(marker)) {
            return refuse(RescoreError::Incomplete { dir: dir.to_path_buf(), marker, why: why.trim().to_string() });
        }
    }
    let (log, txt) = (dir.join(ACCURACY_LOG), dir.join(ACCURACY_TXT));
    if !log.is_file() {
        return refuse(RescoreError::NoLog { path: log });
    }
    if !txt.exists()
        && let Ok(note) = std::fs::read_to_string(dir.join(ACCURACY_NOTE))
    {
        return refuse(RescoreError::NothingToScore { dir: dir.to_path_buf(), note: note.trim().to_string() });
    }
    if txt.exists() && !force {
        return refuse(RescoreError::Exists { path: txt });
    }
    let family = benchmarks::family(&plan.benchmark);
    family.preflight(&WorkloadSpec::of_plan(&plan), true)?;
    // `Benchmark::score`'s error is text or typed (issue 36): either becomes the command's error.
    let scored = family.score(&plan.settings, &log, plan.sample_set())?;
    write_accuracy_txt(&txt, &scored.text).map_err(RescoreError::from)?;
    Ok(scored)
}
