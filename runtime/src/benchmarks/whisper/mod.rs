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
use crate::engines::serving::stand_in::{ReferenceAnswers, audio_key};
use crate::error::Error;
use dataset::{Manifest, SAMPLE_RATE, WAV_DIR};
use error::{REMEDY, WhisperError};
use mlperf_config::{DatasetSource, EngineKind, Settings};
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

/// What the stand-in answers each clip of a dataset with (`serve_stand_in --benchmark=whisper
/// --reference_answers=<dataset directory or its manifest>`): its transcript, by the stand-in's key
/// of its samples, so that a run against it scores as a perfect model would.
pub fn stand_in_answers(dataset: &Path) -> Result<ReferenceAnswers, WhisperError> {
    let (manifest_path, dir) =
        if dataset.is_file() { (dataset.to_path_buf(), dataset.parent().unwrap_or(Path::new(".")).to_path_buf()) } else { (Manifest::path_in(dataset), dataset.to_path_buf()) };
    let manifest = Manifest::read(&manifest_path)?;
    let audio = dataset::read_all(&manifest, &dir)?;
    Ok(ReferenceAnswers::texts(audio.iter().zip(&manifest.clips).map(|(samples, clip)| (audio_key(samples), clip.transcript.clone())).collect()))
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
        let options = super::serving_options(settings, self.id(), spec.output_limit)?;
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

    /// Each clip's transcript (`dataset`: the dataset directory or its manifest).
    fn stand_in_answers(&self, dataset: &Path, tokenizer: Option<&Path>) -> Result<ReferenceAnswers, Error> {
        let _ = tokenizer;
        Ok(stand_in_answers(dataset)?)
    }

    /// TEST01 compares the int64 vocabulary indices the SUT sends.
    fn audit(&self) -> AuditSpecifics {
        AuditSpecifics { test01_dtype: LogDtype::Int64, ..AuditSpecifics::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::gpu::spec::PlanIdentity;
    use mlperf_config::{Scenario, Workload as WorkloadSetting};

    fn fixture() -> String {
        concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/fixtures/whisper").into()
    }

    fn real(dir: String) -> Settings {
        Settings { engine: Some(EngineKind::Serving), dataset: Some(DatasetSource::Real), tensor_path: Some(dir.into()), ..Settings::default() }
    }

    fn spec(settings: &Settings, total: usize) -> WorkloadSpec<'_> {
        WorkloadSpec {
            settings,
            plan: PlanIdentity { system: "CPU-dev", scenario: Scenario::Offline, workload: WorkloadSetting::default() },
            total_samples: total,
            performance_samples: total,
            set: SampleSet::Accuracy,
            devices: 1,
            output_limit: Some(200),
        }
    }

    #[test]
    fn mlperf_info_names_the_manifest_and_the_wavs() {
        let scratch = Scratch::new("/nonexistent-scratch");
        let report = Whisper.data(&scratch, &real(fixture()));
        let text = report.render();
        assert!(report.ready(), "{text}");
        assert!(text.contains("dev-all-repack.json (4 samples, 1 entries over 30 s skipped)") && text.contains("dev-all-repack (4 WAV files;"), "{text}");
        let missing = Whisper.data(&scratch, &Settings { tensor_path: None, ..real(String::new()) }).render();
        assert!(missing.contains("[MISSING] repacked LibriSpeech dev-all manifest  /nonexistent-scratch/preprocessed_data/whisper/dev-all-repack.json"), "{missing}");
        assert!(missing.contains("whisper-dataset.uri") && missing.contains("not ready: 2 missing"), "{missing}");
        assert!(Whisper.data(&scratch, &Settings { dataset: Some(DatasetSource::Synthetic), ..Settings::default() }).ready());
    }

    #[test]
    fn the_preflight_counts_the_samples_and_checks_every_wav() {
        let settings = real(fixture());
        Whisper.preflight(&spec(&settings, 4), true).unwrap();
        let e = Whisper.preflight(&spec(&settings, 1633), true).unwrap_err();
        assert!(matches!(e, Error::Data(_)) && e.to_string().contains("4 samples of at most 30 s, but the round's whisper set has 1633"), "{e}");
        // the TEST01 dtype, and a request as the reference sends it
        assert_eq!(Whisper.audit().test01_dtype, LogDtype::Int64);
        let out = crate::engines::serving::api::Output { text: " Hello, World 42!".into(), engine_count: Some(6), ..Default::default() };
        let (bytes, n_tokens) = (RESPOND.complete)(&out);
        assert_eq!((accuracy::decode_answer(&bytes).unwrap(), n_tokens), ("hello world 42".to_string(), 6));
        assert_eq!((RESPOND.first)(&out), bytes);
    }

    #[test]
    fn each_request_is_its_clip_padded_to_30_s_in_english() {
        let settings = Settings { serving_engine: Some(mlperf_config::ServingEngine::StandIn), serving_port: Some(30000), ..real(fixture()) };
        let work = Whisper.open(&spec(&settings, 4)).unwrap();
        let Drive::Serving(serving) = &work.drive else { panic!("a serving workload") };
        assert!(!work.synthetic);
        let Payload::Transcription(audio) = (serving.request)(2) else { panic!("a transcription") };
        assert_eq!((audio.samples.len(), audio.sample_rate, audio.pad_to, audio.language), (20000, 16000, 480_000, "en"));
        assert_eq!(serving.options.max_tokens, 200, "the reference's max_tokens");
        let synthetic = Settings { dataset: Some(DatasetSource::Synthetic), ..settings.clone() };
        let work = Whisper.open(&spec(&synthetic, 1633)).unwrap();
        let Drive::Serving(serving) = &work.drive else { panic!("a serving workload") };
        let Payload::Transcription(audio) = (serving.request)(7) else { panic!("a transcription") };
        assert!(work.synthetic && audio.samples[..] == dataset::synthetic_clip(7)[..]);
        assert!(Whisper.open(&spec(&Settings { engine: Some(EngineKind::Cpu), ..settings }, 4)).err().unwrap().to_string().contains("no cpu engine for whisper"));
    }

    #[test]
    fn the_stand_ins_answers_are_each_clips_transcript_by_its_key() {
        let dir = PathBuf::from(fixture());
        let answers = stand_in_answers(&dir).unwrap();
        assert_eq!(answers, stand_in_answers(&Manifest::path_in(&dir)).unwrap(), "the directory or its manifest");
        // the stand-in keys a request by its upload, padded to 30 s
        let expected = [
            ("1272-128104_0", "mister quilter is the apostle of the middle classes"),
            ("1272-128104_1", "he paid twenty dollars for the colour grey"),
            ("2078-142845_0", "we'll meet at half past two o'clock"),
            ("3752-4944_0", "one hundred and five"),
        ]
        .map(|(file, transcript)| {
            let mut padded = dataset::read_wav(0, &dir.join(format!("dev-all-repack/{file}.wav"))).unwrap();
            padded.resize(PAD_TO, 0);
            (audio_key(&padded), transcript.to_string())
        });
        assert_eq!(answers, ReferenceAnswers::texts(expected.into()));
        assert!(stand_in_answers(Path::new("/nonexistent")).unwrap_err().to_string().contains("/nonexistent/dev-all-repack.json"));
    }
}
