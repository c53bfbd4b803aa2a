//! The whisper family's error: a manifest or WAV file that is missing or not what the reference's
//! preparation writes ([`crate::Error::Data`], naming the file and the sample), an accuracy log
//! that cannot be scored, and the shared layers' errors kept whole.

use crate::accuracy::AccuracyError;
use std::path::PathBuf;

/// What writes the dataset, for errors about it.
pub(super) const REMEDY: &str = "download the repacked LibriSpeech dev-clean + dev-other set (MLCommons R2: https://inference.mlcommons-storage.org/metadata/whisper-dataset.uri) \
     or make it with the reference's speech2text/download_dataset.sh (utils/repackage_librispeech.py)";

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum WhisperError {
    #[error("cannot read the manifest {}: {source}; {REMEDY}", path.display())]
    ManifestUnreadable { path: PathBuf, source: std::io::Error },
    /// The manifest is not a JSON array (serde's message has the line and column).
    #[error("{}: not a JSON array of samples: {source}; {REMEDY}", path.display())]
    ManifestJson { path: PathBuf, source: serde_json::Error },
    /// Entry `entry` (its place in the JSON array, filtered ones included) lacks what the
    /// reference's Manifest reads.
    #[error("{}: entry {entry}: {source} (repackage_librispeech.py writes transcript, files[].fname, files[].speed and original_duration)", path.display())]
    Entry { path: PathBuf, entry: usize, source: serde_json::Error },
    #[error("{}: entry {entry} (sample {sample}) has no transcript; the repacked manifest carries one per sample", path.display())]
    NoTranscript { path: PathBuf, entry: usize, sample: usize },
    #[error("{}: entry {entry} (sample {sample}) has no file at speed 1, the only one the reference reads", path.display())]
    NoAudio { path: PathBuf, entry: usize, sample: usize },
    #[error("sample {sample}: its WAV file is at neither {} nor {}; {REMEDY}", tried[0].display(), tried[1].display())]
    WavMissing { sample: usize, tried: [PathBuf; 2] },
    #[error("sample {sample}: {}: {source}; {REMEDY}", path.display())]
    Wav { sample: usize, path: PathBuf, source: hound::Error },
    #[error("sample {sample}: {}: {found}, but the reference's WAVs are 16 kHz mono 16-bit PCM (soundfile's default for the repacked clips); {REMEDY}", path.display())]
    WavFormat { sample: usize, path: PathBuf, found: String },
    #[error("sample {sample}: {}: the header promises {promised} samples, the file holds {held}: truncated? {REMEDY}", path.display())]
    WavTruncated { sample: usize, path: PathBuf, promised: u64, held: u64 },
    #[error("sample {sample}: {}: {seconds:.2} s of audio; whisper reads 30 s windows and the manifest keeps only clips of at most 30 s", path.display())]
    WavTooLong { sample: usize, path: PathBuf, seconds: f64 },
    #[error("{}: {found} samples of at most 30 s, but the round's whisper set has {expected}: is it the repacked dev-all manifest?", path.display())]
    SampleCount { path: PathBuf, found: usize, expected: usize },
    /// An answer in the accuracy log that is not what the SUT sends (int64 indices into the
    /// 42-symbol vocabulary).
    /// (Inside the log reader's error, which names the log.)
    #[error("sample {qsl_idx}: {problem}")]
    Answer { qsl_idx: usize, problem: String },
    #[error("{}: no reference has a word, so the word error rate is undefined (the official script divides by zero)", log.display())]
    NoWords { log: PathBuf },
    #[error(transparent)]
    Log(#[from] AccuracyError),
}

impl From<WhisperError> for crate::Error {
    fn from(e: WhisperError) -> crate::Error {
        match e {
            WhisperError::Log(e) => e.into(),
            e => crate::Error::Data(e.to_string()),
        }
    }
}
