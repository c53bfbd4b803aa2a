//! whisper (openai/whisper-large-v3 on LibriSpeech dev-clean + dev-other, repacked into clips of
//! up to 30 s): served by an engine's OpenAI-compatible `/v1/audio/transcriptions` (vLLM serves
//! it), as the reference (`speech2text/reference_SUT.py`, vLLM in process) asks its engine:
//! English, greedy (temperature 0), each clip zero-padded to 30 s (the rules forbid trimming).
//!
//! What LoadGen gets is what the reference SUT sends: the answer lowercased and stripped, each of
//! its characters in the 42-symbol vocabulary as its index, int64 ([`accuracy::encode_answer`]),
//! with the engine's generated token count as `n_tokens` (token latencies are on; Offline's metric
//! is tokens/s). The first token is reported with the text so far, encoded the same way.
//!
//! Data: the reference's manifest and WAVs ([`dataset`]); `dataset = "synthetic"` sends generated
//! tones instead (never submittable). Accuracy: the word error rate as `accuracy_eval.py` computes
//! it ([`accuracy`], [`wer`], [`normalizer`]).

pub mod accuracy;
pub mod dataset;
mod error;
pub mod normalizer;
pub mod wer;

use super::{AuditSpecifics, Benchmark, Drive, ServingWork, Workload, WorkloadSpec, no_engine};
use crate::accuracy::{LogDtype, Scored};
use crate::dataset::SampleSet;
use crate::dataset::qsl::SampleLibrary;
use crate::dataset::scratch::{DataReport, Item, ItemKind, Scratch};
use crate::engines::serving::api::{Audio, Payload, Respond};
use crate::error::Error;
use dataset::{Manifest, SAMPLE_RATE, WAV_DIR};
use error::{REMEDY, WhisperError};
use mlperf_config::{DatasetSource, EngineKind, Settings};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The whisper family.
pub struct Whisper;

/// The dataset directory when the config names none (under `preprocessed_data/`).
const DEFAULT_DIR: &str = "whisper";
/// The rules' padding: every clip is sent as 30 s of audio.
pub const PAD_TO: usize = 30 * SAMPLE_RATE as usize;

/// What LoadGen gets: the answer (or the text so far) as the reference SUT encodes it, and the
/// engine's count of generated tokens.
// (The client refuses a text answer without usage, so the count is always there.)
const RESPOND: Respond = Respond { first: |out| accuracy::encode_answer(&out.text), complete: |out| (accuracy::encode_answer(&out.text), out.engine_count.unwrap_or(0)) };

/// The dataset directory of a config: `tensor_path` under the scratch space's `preprocessed_data/`.
pub fn dataset_dir(scratch: &Scratch, settings: &Settings) -> PathBuf {
    scratch.tensor_paths(settings).into_iter().next().unwrap_or_else(|| scratch.preprocessed_dir().join(DEFAULT_DIR))
}

/// The manifest of a config's dataset, its samples counted against the round's set.
fn manifest_of(settings: &Settings, expected: Option<usize>) -> Result<(PathBuf, Manifest), WhisperError> {
    let dir = dataset_dir(&Scratch::from_env(), settings);
    let manifest = Manifest::read(&Manifest::path_in(&dir))?;
    match expected {
        Some(expected) if manifest.clips.len() != expected => Err(WhisperError::SampleCount { path: manifest.path, found: manifest.clips.len(), expected }),
        _ => Ok((dir, manifest)),
    }
}

/// What the stand-in answers each clip of a dataset with, by the clip's key (`key`: the
/// stand-in's audio key of its samples): its transcript, so that a run against it scores as a
/// perfect model would.
pub fn reference_answers(dir: &Path, key: impl Fn(&[i16]) -> String) -> Result<HashMap<String, String>, WhisperError> {
    let manifest = Manifest::read(&Manifest::path_in(dir))?;
    let audio = dataset::read_all(&manifest, dir)?;
    Ok(audio.iter().zip(&manifest.clips).map(|(samples, clip)| (key(samples), clip.transcript.clone())).collect())
}

impl Benchmark for Whisper {
    fn id(&self) -> &'static str {
        "whisper"
    }

    fn data(&self, scratch: &Scratch, settings: &Settings) -> DataReport {
        let mut report = DataReport::new(scratch, self.id(), settings);
        if settings.dataset == Some(DatasetSource::Synthetic) {
            report.notes.push("synthetic clips (tones and noise) are generated from their index; no dataset is read".into());
            report.items.extend(DataReport::model_items(scratch, settings));
            return report;
        }
        let dir = dataset_dir(scratch, settings);
        let path = Manifest::path_in(&dir);
        let mut manifest = Item::new(ItemKind::Preprocessed, "repacked LibriSpeech dev-all manifest", path.clone(), REMEDY.to_string());
        if manifest.present {
            match Manifest::read(&path) {
                Ok(m) => manifest.detail = Some(format!("{} samples, {} entries over 30 s skipped", m.clips.len(), m.skipped)),
                Err(e) => (manifest.present, manifest.detail) = (false, Some(e.to_string())),
            }
        }
        let wavs_dir = dir.join(WAV_DIR);
        let mut wavs = Item::new(ItemKind::Preprocessed, "repacked LibriSpeech dev-all WAVs", wavs_dir.clone(), REMEDY.to_string());
        if let Ok(entries) = std::fs::read_dir(&wavs_dir) {
            let count = entries.flatten().filter(|e| e.path().extension().is_some_and(|x| x == "wav")).count();
            wavs.detail = Some(format!("{count} WAV files; `mlperf run_harness` checks each sample's before a run"));
        }
        report.items.extend([manifest, wavs]);
        report.items.extend(DataReport::model_items(scratch, settings));
        report
    }

    /// Every clip in memory (generated, or read from the dataset), each request its clip.
    fn open(&self, spec: &WorkloadSpec) -> Result<Workload, Error> {
        let settings = spec.settings;
        if settings.engine != Some(EngineKind::Serving) {
            return Err(no_engine(self.id(), settings));
        }
        let options = super::llm::client_options(settings, self.id(), spec.output_limit).map_err(|e| Error::Config(e.to_string()))?;
        let audio = |samples: Vec<i16>| Arc::new(Audio { samples: samples.into(), sample_rate: SAMPLE_RATE, pad_to: PAD_TO, language: "en" });
        let synthetic = settings.dataset == Some(DatasetSource::Synthetic);
        let (name, request): (String, Arc<dyn Fn(usize) -> Payload + Send + Sync>) = if synthetic {
            ("synthetic whisper clips".into(), Arc::new(move |i| Payload::Transcription(audio(dataset::synthetic_clip(i)))))
        } else {
            let (dir, manifest) = manifest_of(settings, Some(spec.total_samples))?;
            let clips: Vec<Arc<Audio>> = dataset::read_all(&manifest, &dir)?.into_iter().map(audio).collect();
            (format!("whisper {}", manifest.path.display()), Arc::new(move |i| Payload::Transcription(clips[i].clone())))
        };
        // The family holds the clips; the library is LoadGen's bookkeeping.
        let library = SampleLibrary::generated(&name, spec.total_samples, spec.performance_samples, 0, |_| Vec::new());
        let work = ServingWork { options, request, respond: RESPOND };
        Ok(Workload { drive: Drive::Serving(work), library: Arc::new(library), synthetic, caveats: Vec::new() })
    }

    /// The manifest (its sample count the round's) and every sample's WAV header and length, in
    /// seconds: a missing or truncated clip is named before an engine loads its weights.
    fn preflight(&self, spec: &WorkloadSpec, scored: bool) -> Result<(), Error> {
        let _ = scored;
        if spec.settings.engine != Some(EngineKind::Serving) || spec.settings.dataset == Some(DatasetSource::Synthetic) {
            return Ok(());
        }
        let (dir, manifest) = manifest_of(spec.settings, Some(spec.total_samples))?;
        for sample in 0..manifest.clips.len() {
            dataset::check_wav(sample, &manifest.wav_path(&dir, sample)?)?;
        }
        Ok(())
    }

    /// `accuracy_eval.py`'s word error rate of the log against the manifest's transcripts.
    fn score(&self, settings: &Settings, accuracy_log: &Path, set: SampleSet) -> Result<Scored, Error> {
        let _ = set;
        let (_, manifest) = manifest_of(settings, None)?;
        Ok(accuracy::score(&manifest, accuracy_log)?)
    }

    /// TEST01 compares the int64 vocabulary indices the SUT sends.
    fn audit(&self) -> AuditSpecifics {
        AuditSpecifics { test01_dtype: LogDtype::Int64, ..AuditSpecifics::default() }
    }
}
