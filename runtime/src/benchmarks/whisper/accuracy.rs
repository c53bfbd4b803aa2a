//! Scoring an accuracy log as the reference's `accuracy_eval.py` does: every logged answer (repeats
//! included, as the script reads every entry) decoded from its int64 vocabulary indices
//! (`legacy_helpers.__gather_predictions`), its sample's manifest transcript in the vocabulary
//! (`Manifest.parse_transcript`) as the reference, the word errors summed ([`super::wer`]), and the
//! script's line printed: `Word Error Rate: X%, accuracy=Y%`.

use super::dataset::{LABELS, Manifest, in_vocabulary};
use super::error::WhisperError;
use super::wer::{WordErrors, result_line};
use crate::accuracy::Scored;
use crate::accuracy::log::{AccuracyEntry, EntryError, for_each_entry};
use std::path::Path;

/// The answer bytes as the reference SUT sends them: each character of the lowercased, stripped
/// text that is in the vocabulary as its index, little-endian int64 (`array.array('q', ...)`).
pub fn encode_answer(text: &str) -> Vec<u8> {
    text.to_lowercase().trim().chars().filter_map(super::dataset::label_index).flat_map(|i| (i as i64).to_le_bytes()).collect()
}

/// The text of an answer's bytes, or what is wrong with them.
pub fn decode_answer(data: &[u8]) -> Result<String, String> {
    if !data.len().is_multiple_of(8) {
        return Err(format!("{} bytes are not whole int64 indices (the reference SUT sends array('q'))", data.len()));
    }
    data.chunks_exact(8)
        .map(|b| {
            let i = i64::from_le_bytes(b.try_into().expect("chunks of 8"));
            usize::try_from(i).ok().and_then(|i| LABELS.get(i).copied()).ok_or_else(|| format!("index {i} is not in the 42-symbol vocabulary"))
        })
        .collect()
}

/// The word error rate of the answers in `log` against `manifest`'s transcripts.
pub fn word_errors(manifest: &Manifest, log: &Path) -> Result<WordErrors, WhisperError> {
    let mut errors = WordErrors::default();
    let mut add = |entry: AccuracyEntry| -> Result<(), EntryError> {
        let answer = |problem: String| WhisperError::Answer { qsl_idx: entry.qsl_idx, problem };
        let clip = manifest.clips.get(entry.qsl_idx).ok_or_else(|| answer(format!("past the {} samples of {}", manifest.clips.len(), manifest.path.display())))?;
        let hypothesis = decode_answer(&entry.data).map_err(answer)?;
        errors.add(&hypothesis, &in_vocabulary(&clip.transcript));
        Ok(())
    };
    for_each_entry(log, &mut add)?;
    Ok(errors)
}

/// `accuracy.txt`: the script's line, and its accuracy as the checker's pattern reads it.
pub fn score(manifest: &Manifest, log: &Path) -> Result<Scored, WhisperError> {
    let wer = word_errors(manifest, log)?.rate().ok_or_else(|| WhisperError::NoWords { log: log.into() })?;
    let line = result_line(wer);
    Ok(Scored { metrics: vec![("ACCURACY".into(), (1.0 - wer) * 100.0)], text: format!("{line}\n") })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    #[test]
    fn answers_are_encoded_as_the_reference_sut_does_and_decode_back() {
        let bytes = encode_answer("  It's £5, Mr. O'Brien!\n");
        assert_eq!(bytes.len() % 8, 0);
        assert_eq!(&bytes[..16], &[9, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, 0, 0, 0, 0], "i, t");
        assert_eq!(decode_answer(&bytes).unwrap(), "it's 5 mr o'brien");
        assert!(decode_answer(&[0; 7]).unwrap_err().contains("7 bytes are not whole int64"));
        assert!(decode_answer(&42i64.to_le_bytes()).unwrap_err().contains("index 42 is not in the 42-symbol vocabulary"));
        assert!(decode_answer(&(-1i64).to_le_bytes()).unwrap_err().contains("index -1"));
    }

    #[test]
    fn the_score_is_what_the_official_accuracy_eval_prints() {
        // scripts/make_whisper_fixtures.py ran speech2text/accuracy_eval.py (mlcommons/inference
        // b66003e1) unmodified on these files; tests/fixtures/accuracy/whisper/README.md.
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/accuracy/whisper");
        let manifest = Manifest::read(&dir.join("manifest.json")).unwrap();
        let official = std::fs::read_to_string(dir.join("accuracy_eval.txt")).unwrap();
        let scored = score(&manifest, &dir.join("mlperf_log_accuracy.json")).unwrap();
        assert_eq!(scored.text, official);
        let printed: f64 = official.split("accuracy=").nth(1).unwrap().trim_end_matches("%\n").parse().unwrap();
        assert!((scored.metrics[0].1 - printed).abs() < 1e-4, "{:?}", scored.metrics);
    }

    #[test]
    fn a_bad_answer_names_the_log_and_the_sample() {
        let dir = std::env::temp_dir().join(format!("whisper-score-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let manifest = Manifest::read(&PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/whisper/dev-all-repack.json")).unwrap();
        let log = dir.join("mlperf_log_accuracy.json");
        std::fs::write(&log, r#"[{"seq_id": 0, "qsl_idx": 1, "data": "0100000000000000"}, {"seq_id": 1, "qsl_idx": 2, "data": "01"}]"#).unwrap();
        let e = score(&manifest, &log).unwrap_err().to_string();
        assert!(e.contains("mlperf_log_accuracy.json: sample 2: 1 bytes are not whole int64"), "{e}");
        std::fs::write(&log, r#"[{"seq_id": 0, "qsl_idx": 9, "data": ""}]"#).unwrap();
        assert!(score(&manifest, &log).unwrap_err().to_string().contains("sample 9: past the 4 samples of"));
        std::fs::write(&log, "[]").unwrap();
        assert!(score(&manifest, &log).unwrap_err().to_string().contains("no reference has a word"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
