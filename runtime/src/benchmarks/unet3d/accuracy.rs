//! 3D-UNet's accuracy on KiTS19 as `accuracy_kits.py` computes it: each logged response is a
//! case's labels (uint8, one per voxel of its preprocessed volume, C order), compared with the
//! case's preprocessed ground truth over the whole volume, padding included (the script crops and
//! resamples nothing). Per case and class c of kidney (label 1 exactly) and tumor (label 2),
//! `dice = (2 |T ∩ P| + 1e-6) / (|T| + |P| + 1e-6)`, and the case's composite is their mean; the
//! printed figures are the means over the cases. The log must hold every case once.

use std::path::Path;

use super::error::UNetError;
use crate::accuracy::log::for_each_entry;

/// Classes scored: kidney and tumor (background is not).
const SCORED: [u8; 2] = [1, 2];
/// `accuracy_kits.py`'s smoothing of numerator and denominator.
const SMOOTH: f64 = 1e-6;

/// The means over the cases.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KitsScore {
    pub mean: f64,
    pub kidney: f64,
    pub tumor: f64,
    pub cases: usize,
}

impl KitsScore {
    /// The line the official script prints, which the submission checker's DICE pattern reads.
    pub fn accuracy_txt(&self) -> String {
        format!("Accuracy: mean = {:.5}, kidney = {:.4}, tumor = {:.4}\n", self.mean, self.kidney, self.tumor)
    }

    pub fn scored(&self) -> crate::accuracy::Scored {
        crate::accuracy::Scored { text: self.accuracy_txt(), metrics: vec![("DICE".to_string(), self.mean)] }
    }
}

/// Kidney and tumor DICE of one case's `predicted` labels against `truth`.
pub fn case_dice(truth: &[u8], predicted: &[u8]) -> [f64; 2] {
    SCORED.map(|class| {
        let (mut both, mut t, mut p) = (0u64, 0u64, 0u64);
        for (&a, &b) in truth.iter().zip(predicted) {
            both += u64::from(a == class && b == class);
            t += u64::from(a == class);
            p += u64::from(b == class);
        }
        (2.0 * both as f64 + SMOOTH) / ((t + p) as f64 + SMOOTH)
    })
}

/// Scores `accuracy_log` against `cases` ground truths (by sample index): `truth(i)` gives case
/// `i`'s labels.
pub fn score_kits(accuracy_log: &Path, cases: usize, truth: &dyn Fn(usize) -> Result<Vec<u8>, UNetError>) -> Result<KitsScore, UNetError> {
    let mut per_case: Vec<Option<[f64; 2]>> = vec![None; cases];
    let mut logged = 0;
    for_each_entry(accuracy_log, &mut |entry| {
        logged += 1;
        let i = entry.qsl_idx;
        let slot = per_case.get_mut(i).ok_or_else(|| format!("sample {i} is past the {cases} cases"))?;
        if slot.is_some() {
            return Err(format!("case {i} is logged twice; an accuracy run logs each case once").into());
        }
        let truth = truth(i).map_err(|e| e.to_string())?;
        if truth.len() != entry.data.len() {
            return Err(format!("case {i}: {} labels logged for a volume of {} voxels (was the log written with another dtype?)", entry.data.len(), truth.len()).into());
        }
        *slot = Some(case_dice(&truth, &entry.data));
        Ok(())
    })?;
    let scores: Vec<[f64; 2]> = per_case.iter().flatten().copied().collect();
    if scores.len() != cases {
        return Err(UNetError::Incomplete { logged: scores.len(), cases, entries: logged });
    }
    let n = cases as f64;
    let kidney = scores.iter().map(|s| s[0]).sum::<f64>() / n;
    let tumor = scores.iter().map(|s| s[1]).sum::<f64>() / n;
    let mean = scores.iter().map(|s| (s[0] + s[1]) / 2.0).sum::<f64>() / n;
    Ok(KitsScore { mean, kidney, tumor, cases })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log(dir: &str, entries: &[(usize, &[u8])]) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mlperf-kits-{}-{dir}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let hex = |b: &[u8]| b.iter().map(|x| format!("{x:02X}")).collect::<String>();
        let body: Vec<String> = entries.iter().enumerate().map(|(seq, (i, b))| format!("{{ \"seq_id\" : {seq}, \"qsl_idx\" : {i}, \"data\" : \"{}\" }}", hex(b))).collect();
        let path = d.join("mlperf_log_accuracy.json");
        std::fs::write(&path, format!("[\n{}\n]\n", body.join(",\n"))).unwrap();
        path
    }

    #[test]
    fn dice_is_the_scripts_per_class_overlap_with_its_smoothing() {
        // kidney: truth 3 voxels, predicted 2, both 2 -> 4/5; tumor: truth 1, predicted 2, both 1
        // -> 2/3; a class absent from both scores 1.
        let truth = [0, 1, 1, 1, 2, 0];
        let predicted = [0, 1, 1, 0, 2, 2];
        let [k, t] = case_dice(&truth, &predicted);
        assert!((k - (4.0 + 1e-6) / (5.0 + 1e-6)).abs() < 1e-15 && (t - (2.0 + 1e-6) / (3.0 + 1e-6)).abs() < 1e-15);
        assert_eq!(case_dice(&[0, 0], &[0, 0]), [1.0, 1.0]);
        // Kidney is label 1 exactly: tumor voxels are not kidney.
        assert!(case_dice(&[2, 2], &[1, 1])[0] < 1e-6);
    }

    #[test]
    fn the_log_is_scored_over_every_case_once() {
        let truths: Vec<Vec<u8>> = vec![vec![0, 1, 1, 2], vec![1, 1, 0, 0, 2, 2]];
        let truth = |i: usize| Ok(truths[i].clone());
        let path = log("ok", &[(1, &[1, 1, 0, 0, 2, 0]), (0, &[0, 1, 1, 2])]);
        let score = score_kits(&path, 2, &truth).unwrap();
        let second = case_dice(&truths[1], &[1, 1, 0, 0, 2, 0]);
        assert!((score.kidney - (1.0 + second[0]) / 2.0).abs() < 1e-12 && (score.tumor - (1.0 + second[1]) / 2.0).abs() < 1e-12);
        assert!((score.mean - (score.kidney + score.tumor) / 2.0).abs() < 1e-12);
        assert_eq!(score.accuracy_txt(), format!("Accuracy: mean = {:.5}, kidney = {:.4}, tumor = {:.4}\n", score.mean, score.kidney, score.tumor));
        assert_eq!(score.scored().metrics, vec![("DICE".to_string(), score.mean)]);

        let e = score_kits(&log("twice", &[(0, &[0, 1, 1, 2]), (0, &[0, 1, 1, 2])]), 2, &truth).unwrap_err().to_string();
        assert!(e.contains("case 0 is logged twice"), "{e}");
        let e = score_kits(&log("missing", &[(0, &[0, 1, 1, 2])]), 2, &truth).unwrap_err().to_string();
        assert!(e.contains("1 of 2 cases are logged"), "{e}");
        let e = score_kits(&log("short", &[(0, &[0, 1])]), 2, &truth).unwrap_err().to_string();
        assert!(e.contains("case 0: 2 labels logged for a volume of 4 voxels"), "{e}");
        let e = score_kits(&log("past", &[(5, &[0])]), 2, &truth).unwrap_err().to_string();
        assert!(e.contains("sample 5 is past the 2 cases"), "{e}");
    }
}
