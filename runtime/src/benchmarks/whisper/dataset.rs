//! The reference's dataset: `dev-all-repack.json` and the WAV files it names, as
//! `speech2text/utils/repackage_librispeech.py` writes them (LibriSpeech dev-clean + dev-other,
//! 16 kHz, clips of one speaker and chapter joined with 0.5 s of silence up to 30 s), read as
//! `speech2text/manifest.py` reads them: entries longer than `MAX_DURATION` (30 s) are skipped, as
//! are entries whose transcript is not a string, and the rest are the samples in file order (LoadGen's
//! sample indices). A sample's audio is its file at speed 1.
//!
//! Where the files are: the dataset directory (the config's `tensor_path` under the scratch space's
//! `preprocessed_data/`) holds `dev-all-repack.json` and `dev-all-repack/`. A manifest names its WAVs
//! as the preparation ran (`/data/dev-all-repack/<speaker>-<chapter>_<n>.wav` in the reference's
//! Docker image); a name is read joined to the dataset directory, as the reference's
//! `os.path.join(data_dir, fname)` does, and else as `<dataset directory>/<its folder>/<its file>`,
//! so the set can be moved.

use super::error::WhisperError;
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// The manifest's file name.
pub const MANIFEST: &str = "dev-all-repack.json";
/// The folder of the WAVs, next to the manifest.
pub const WAV_DIR: &str = "dev-all-repack";
/// The sample rate of every clip (and whisper's).
pub const SAMPLE_RATE: u32 = 16_000;
/// manifest.py's `max_duration` (`MAX_DURATION`, default 30.0): longer entries are not samples.
const MAX_DURATION: f64 = 30.0;

/// reference_SUT.py's (and accuracy_eval.py's) `labels`: what an answer is spelled in.
pub const LABELS: [char; 42] = [
    ' ', 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h', 'i', 'j', 'k', 'l', 'm', 'n', 'o', 'p', 'q', 'r', 's', 't', 'u', 'v', 'w', 'x', 'y', 'z', '\'', '0', '1', '2', '3', '4', '5', '6',
    '7', '8', '9', '$', '%', '+', '-',
];

/// A character's index in [`LABELS`].
pub fn label_index(c: char) -> Option<usize> {
    LABELS.iter().position(|&l| l == c)
}

/// The text in the vocabulary (manifest.py's `parse_transcript`, then the labels back): other
/// characters (capitals included) dropped.
pub fn in_vocabulary(text: &str) -> String {
    text.chars().filter(|&c| label_index(c).is_some()).collect()
}

/// One sample.
#[derive(Debug, Clone, PartialEq)]
pub struct Clip {
    pub transcript: String,
    /// The file name as the manifest writes it.
    pub fname: String,
    /// `original_duration`, seconds.
    pub duration: f64,
}

/// The samples of a manifest, in LoadGen's order.
#[derive(Debug, Clone)]
pub struct Manifest {
    pub path: PathBuf,
    pub clips: Vec<Clip>,
    /// Entries over 30 s or without a string transcript, skipped as the reference skips them.
    pub skipped: usize,
}

#[derive(Deserialize)]
struct RawEntry {
    #[serde(default)]
    transcript: Option<serde_json::Value>,
    files: Vec<RawFile>,
    original_duration: f64,
}

#[derive(Deserialize)]
struct RawFile {
    fname: String,
    speed: f64,
}

impl Manifest {
    /// `dev-all-repack.json` of a dataset directory.
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join(MANIFEST)
    }

    pub fn read(path: &Path) -> Result<Manifest, WhisperError> {
        let text = std::fs::read_to_string(path).map_err(|source| WhisperError::ManifestUnreadable { path: path.into(), source })?;
        let entries: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(|source| WhisperError::ManifestJson { path: path.into(), source })?;
        let mut clips = Vec::with_capacity(entries.len());
        let mut skipped = 0;
        for (entry, value) in entries.into_iter().enumerate() {
            let raw: RawEntry = serde_json::from_value(value).map_err(|source| WhisperError::Entry { path: path.into(), entry, source })?;
            let sample = clips.len();
            if raw.original_duration > MAX_DURATION {
                skipped += 1;
                continue;
            }
            let transcript = match raw.transcript {
                Some(serde_json::Value::String(t)) => t,
                None => return Err(WhisperError::NoTranscript { path: path.into(), entry, sample }),
                Some(other) => {
                    tracing::warn!("{}: entry {entry}: transcript {other} is not a string; skipped, as the reference's Manifest drops it", path.display());
                    skipped += 1;
                    continue;
                }
            };
            let file = raw.files.into_iter().find(|f| f.speed == 1.0).ok_or_else(|| WhisperError::NoAudio { path: path.into(), entry, sample })?;
            clips.push(Clip { transcript, fname: file.fname, duration: raw.original_duration });
        }
        Ok(Manifest { path: path.into(), clips, skipped })
    }

    /// The WAV file of sample `sample`, found as the module's note says.
    pub fn wav_path(&self, dir: &Path, sample: usize) -> Result<PathBuf, WhisperError> {
        let fname = Path::new(&self.clips[sample].fname);
        let joined = dir.join(fname);
        let moved = match (fname.parent().and_then(Path::file_name), fname.file_name()) {
            (Some(folder), Some(file)) => dir.join(folder).join(file),
            (None, Some(file)) => dir.join(file),
            _ => joined.clone(),
        };
        if joined.is_file() {
            Ok(joined)
        } else if moved.is_file() {
            Ok(moved)
        } else {
            Err(WhisperError::WavMissing { sample, tried: [joined, moved] })
        }
    }
}

/// What [`read_wav`] checks a file against: 16 kHz mono 16-bit integer PCM, at most 30 s.
fn check_spec(sample: usize, path: &Path, spec: hound::WavSpec) -> Result<(), WhisperError> {
    if spec.channels == 1 && spec.sample_rate == SAMPLE_RATE && spec.bits_per_sample == 16 && spec.sample_format == hound::SampleFormat::Int {
        return Ok(());
    }
    let format = match spec.sample_format {
        hound::SampleFormat::Int => "integer",
        hound::SampleFormat::Float => "float",
    };
    Err(WhisperError::WavFormat { sample, path: path.into(), found: format!("{} Hz, {} channel(s), {}-bit {format}", spec.sample_rate, spec.channels, spec.bits_per_sample) })
}

/// The header of sample `sample`'s WAV checked, and its length in samples: the format, and that
/// the file holds every sample its header promises (without reading them).
pub fn check_wav(sample: usize, path: &Path) -> Result<u64, WhisperError> {
    let wav_error = |source| WhisperError::Wav { sample, path: path.into(), source };
    let reader = hound::WavReader::open(path).map_err(wav_error)?;
    check_spec(sample, path, reader.spec())?;
    let promised = u64::from(reader.len());
    let mut inner = reader.into_inner();
    let data_start = std::io::Seek::stream_position(&mut inner).map_err(|e| wav_error(hound::Error::IoError(e)))?;
    let file_len = inner.get_ref().metadata().map_err(|e| wav_error(hound::Error::IoError(e)))?.len();
    let held = file_len.saturating_sub(data_start) / 2;
    if held < promised {
        return Err(WhisperError::WavTruncated { sample, path: path.into(), promised, held });
    }
    check_length(sample, path, promised)?;
    Ok(promised)
}

fn check_length(sample: usize, path: &Path, samples: u64) -> Result<(), WhisperError> {
    let seconds = samples as f64 / f64::from(SAMPLE_RATE);
    if seconds > MAX_DURATION {
        return Err(WhisperError::WavTooLong { sample, path: path.into(), seconds });
    }
    Ok(())
}

/// Sample `sample`'s audio: its 16-bit samples as the file holds them (the reference's
/// `librosa.load(path, sr=16000)` reads the same values, scaled to floats).
pub fn read_wav(sample: usize, path: &Path) -> Result<Vec<i16>, WhisperError> {
    let wav_error = |source| WhisperError::Wav { sample, path: path.into(), source };
    let mut reader = hound::WavReader::open(path).map_err(wav_error)?;
    check_spec(sample, path, reader.spec())?;
    let promised = u64::from(reader.len());
    check_length(sample, path, promised)?;
    let mut samples = Vec::with_capacity(promised as usize);
    for value in reader.samples::<i16>() {
        match value {
            Ok(v) => samples.push(v),
            // after the header, a short read is the only failure: the file ends early
            Err(hound::Error::IoError(_) | hound::Error::FormatError(_)) => break,
            Err(e) => return Err(wav_error(e)),
        }
    }
    if (samples.len() as u64) < promised {
        return Err(WhisperError::WavTruncated { sample, path: path.into(), promised, held: samples.len() as u64 });
    }
    Ok(samples)
}

/// Every sample's audio, read on a few threads (the whole set is about 1.3 GB of 16-bit samples,
/// held as the reference holds it); the first error by sample order.
pub fn read_all(manifest: &Manifest, dir: &Path) -> Result<Vec<Vec<i16>>, WhisperError> {
    let n = manifest.clips.len();
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get()).clamp(1, 8);
    let chunk = n.div_ceil(threads).max(1);
    let read = |i: usize| manifest.wav_path(dir, i).and_then(|p| read_wav(i, &p));
    let parts: Vec<Result<Vec<Vec<i16>>, WhisperError>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..n).step_by(chunk).map(|start| s.spawn(move || (start..(start + chunk).min(n)).map(read).collect())).collect();
        handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    let mut all = Vec::with_capacity(n);
    for part in parts {
        all.extend(part?);
    }
    Ok(all)
}

/// A generated clip (`dataset = "synthetic"`): 0.5 to 1.5 s of a tone and noise, fixed per index
/// and different for every index.
pub fn synthetic_clip(index: usize) -> Vec<i16> {
    let mut state = (index as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ 0x2545_f491_4f6c_dd1d;
    let mut next = || {
        // xorshift64*: cheap and deterministic
        state ^= state >> 12;
        state ^= state << 25;
        state ^= state >> 27;
        state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    };
    let rate = SAMPLE_RATE as usize;
    let len = rate / 2 + (next() % rate as u64) as usize;
    let hz = 200.0 + (index % 50) as f64 * 20.0;
    (0..len)
        .map(|i| {
            let noise = (next() >> 53) as f64 / (1u64 << 11) as f64 - 0.5;
            let v = 0.3 * (std::f64::consts::TAU * hz * i as f64 / f64::from(SAMPLE_RATE)).sin() + 0.05 * noise;
            (v * 32767.0) as i16
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/whisper")
    }

    #[test]
    fn the_fixture_manifest_reads_as_the_reference_reads_it() {
        let dir = fixture();
        let manifest = Manifest::read(&Manifest::path_in(&dir)).unwrap();
        assert_eq!(manifest.clips.len(), 4, "the 31 s entry is skipped");
        assert_eq!(manifest.skipped, 1);
        assert_eq!(manifest.clips[2].transcript, "we'll meet at half past two o'clock", "indices after the skipped entry shift");
        // The Docker paths (/data/dev-all-repack/...) are found next to the manifest.
        let wav = manifest.wav_path(&dir, 2).unwrap();
        assert!(wav.ends_with("dev-all-repack/2078-142845_0.wav"), "{}", wav.display());
        let audio = read_all(&manifest, &dir).unwrap();
        assert_eq!(audio.iter().map(Vec::len).collect::<Vec<_>>(), [16000, 12000, 20000, 8000]);
        assert_eq!(check_wav(3, &manifest.wav_path(&dir, 3).unwrap()).unwrap(), 8000);
    }

    #[test]
    fn synthetic_clips_are_fixed_per_index_and_within_30_s() {
        let a = synthetic_clip(7);
        assert_eq!(a, synthetic_clip(7));
        assert_ne!(a, synthetic_clip(57), "same tone, other noise");
        let lengths: Vec<usize> = (0..50).map(|i| synthetic_clip(i).len()).collect();
        assert!(lengths.iter().all(|&n| (8000..24000).contains(&n)) && lengths.iter().any(|&n| n != lengths[0]), "{lengths:?}");
        assert!(a.iter().any(|&s| s > 5000) && a.iter().any(|&s| s < -5000));
    }

    #[test]
    fn the_vocabulary_is_the_references_42_symbols() {
        assert_eq!(LABELS.len(), 42);
        assert_eq!((label_index(' '), label_index('\''), label_index('0'), label_index('-'), label_index('A')), (Some(0), Some(27), Some(28), Some(41), None));
        assert_eq!(in_vocabulary("It's £5, or $6.50!"), "t's 5 or $650");
    }

    #[test]
    fn a_bad_manifest_or_wav_names_the_file_and_the_sample() {
        let dir = std::env::temp_dir().join(format!("whisper-dataset-{}", std::process::id()));
        std::fs::create_dir_all(dir.join(WAV_DIR)).unwrap();
        let manifest_path = Manifest::path_in(&dir);
        let write = |text: &str| std::fs::write(&manifest_path, text).unwrap();
        let err = |m: Result<Manifest, WhisperError>| m.err().map(|e| e.to_string()).unwrap_or_default();

        assert!(err(Manifest::read(&dir.join("nothing.json"))).contains("nothing.json"));
        write("{");
        assert!(err(Manifest::read(&manifest_path)).contains("not a JSON array"));
        write(r#"[{"transcript": "a", "files": [{"fname": "x.wav", "speed": 1}], "original_duration": 1.0}, {"transcript": "b", "files": []}]"#);
        let e = err(Manifest::read(&manifest_path));
        assert!(e.contains("entry 1: missing field `original_duration`"), "{e}");
        write(r#"[{"transcript": "a", "files": [{"fname": "x.wav", "speed": 1.1}], "original_duration": 1.0}]"#);
        assert!(err(Manifest::read(&manifest_path)).contains("entry 0 (sample 0) has no file at speed 1"));
        write(
            r#"[{"transcript": 7, "files": [], "original_duration": 1.0}, {"transcript": "b", "files": [{"fname": "/data/dev-all-repack/b.wav", "speed": 1}], "original_duration": 1.0}]"#,
        );
        let manifest = Manifest::read(&manifest_path).unwrap();
        assert_eq!((manifest.clips.len(), manifest.skipped), (1, 1), "a transcript that is not a string is dropped, as the reference does");
        let e = manifest.wav_path(&dir, 0).unwrap_err().to_string();
        assert!(e.contains("sample 0: its WAV file is at neither /data/dev-all-repack/b.wav nor ") && e.contains("dev-all-repack/b.wav"), "{e}");

        // a WAV cut short, one in another format, and one that is not a WAV
        let good = std::fs::read(fixture().join("dev-all-repack/3752-4944_0.wav")).unwrap();
        let wav = dir.join(WAV_DIR).join("b.wav");
        std::fs::write(&wav, &good[..good.len() - 100]).unwrap();
        let e = read_wav(0, &wav).unwrap_err().to_string();
        assert!(e.contains("sample 0: ") && e.contains("b.wav: the header promises 8000 samples, the file holds 7950: truncated?"), "{e}");
        assert!(check_wav(0, &wav).unwrap_err().to_string().contains("the file holds 7950"));
        let spec = hound::WavSpec { channels: 2, sample_rate: 44100, bits_per_sample: 16, sample_format: hound::SampleFormat::Int };
        let mut writer = hound::WavWriter::create(&wav, spec).unwrap();
        writer.write_sample(0i16).unwrap();
        writer.write_sample(0i16).unwrap();
        writer.finalize().unwrap();
        let e = read_wav(0, &wav).unwrap_err().to_string();
        assert!(e.contains("44100 Hz, 2 channel(s), 16-bit integer, but the reference's WAVs are 16 kHz mono 16-bit PCM"), "{e}");
        std::fs::write(&wav, b"ID3 not a wav").unwrap();
        assert!(read_wav(0, &wav).unwrap_err().to_string().starts_with(&format!("sample 0: {}: ", wav.display())));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
