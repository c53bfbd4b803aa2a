//! The synthetic KiTS19 workload of the CPU-only development system (never submittable): generated
//! volumes, a generated 3D-UNet and ground truth, run through the same QSL, sliding-window engine
//! and DICE scorer as the real data.
//!
//! - **Cases**: the inference set's 43 names, each a volume of its own shape (every side a multiple
//!   of half the region of interest, at least one region, as the reference preprocessing leaves
//!   them), f32 `[1, D, H, W]` like the preprocessed images: a few smooth blobs over noise, in the
//!   range of the normalised CT values (clipped to [-79, 304] HU, minus 101, over 76.9).
//! - **Model**: [`crate::benchmarks::unet3d::model`], MLPerf's topology and interface at a
//!   small size; the logits' biases are set from the model's mean logits over the first case so
//!   that every class wins voxels.
//! - **Labels**: what the CPU engine predicts for each case, written as its ground truth. DICE on
//!   synthetic data thus measures agreement with the CPU engine (1 for the engine itself), the
//!   oracle other engines are checked against.
//!
//! Files, in one directory (`<models>/synthetic/kits19/`): `unet3d.onnx`, `preprocessed/` in the
//! reference's preprocessed layout ([`super::preprocessed`]: the index and one `[image, label]`
//! pickle per case, as real runs read them) and `manifest.json`. [`ensure`] creates them on first
//! use and reuses them while the manifest matches the generator version and seed and every file its
//! hash.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prost::Message;
use serde_json::json;

use super::INFERENCE_CASES;
use super::error::UNetError;
use super::preprocessed::{Case, INDEX, Preprocessed};
use crate::benchmarks::unet3d::cpu::{CLASSES, CpuUNet3dEngine, VolumeShape, importance_map, le_bytes, sliding_window};
use crate::benchmarks::unet3d::model::{UNet3dShape, unet3d};
use crate::engines::cpu::parallel_chunks;
use crate::engines::synthetic::manifest;
use crate::engines::synthetic::rng::SplitMix64;

/// Bumped whenever anything generated changes: a manifest of another version regenerates.
pub const GENERATOR_VERSION: u32 = 2;
/// Seed of the volumes and weights: fixed, so every machine generates the same workload.
pub const SEED: u64 = 20_261_127;
/// The model's region of interest (MLPerf's is 128) and channels per level.
const ROI: usize = 16;
const FILTERS: [usize; 3] = [4, 8, 16];
/// Blobs per volume.
const BLOBS: usize = 6;

/// The files of the synthetic set, all in one directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticKits {
    pub dir: PathBuf,
}

impl SyntheticKits {
    pub fn in_dir(dir: &Path) -> SyntheticKits {
        SyntheticKits { dir: dir.to_path_buf() }
    }
    pub fn model(&self) -> PathBuf {
        self.dir.join("unet3d.onnx")
    }
    pub fn preprocessed(&self) -> Preprocessed {
        Preprocessed::in_dir(&self.dir.join("preprocessed"))
    }
    fn manifest(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
    /// Every generated file, manifest excepted, with its manifest key.
    fn hashed(&self) -> Vec<manifest::Hashed> {
        let preprocessed = self.preprocessed();
        let mut files = vec![(self.model(), "unet3d.onnx".to_string()), (preprocessed.index(), format!("preprocessed/{INDEX}"))];
        files.extend(INFERENCE_CASES.iter().map(|name| (preprocessed.case_file(name), format!("preprocessed/{name}.pkl"))));
        files
    }
}

/// Case `index`'s volume shape for a region of interest `roi`: each side one, one and a half or
/// two regions (at MLPerf's 128: 128, 192 or 256 voxels, KiTS19-like sides that are multiples of 64).
pub fn case_shape(seed: u64, index: usize, roi: usize) -> VolumeShape {
    let mut rng = SplitMix64::derive(seed, "shape", index as u64);
    [(); 3].map(|_| roi / 2 * rng.range(2, 5) as usize)
}

/// Case `index`'s volume, `[D, H, W]` C order: blobs of either sign (radii up to a third of `roi`)
/// over noise, clipped to the normalised CT range.
pub fn case_volume(seed: u64, index: usize, [d, h, w]: VolumeShape, roi: usize) -> Vec<f32> {
    let (low, high) = ((-79.0 - 101.0) / 76.9, (304.0 - 101.0) / 76.9);
    let mut rng = SplitMix64::derive(seed, "volume", index as u64);
    let blobs: Vec<([f32; 3], f32, f32)> = (0..BLOBS)
        .map(|_| {
            let centre = [d, h, w].map(|s| rng.unit() * s as f32);
            (centre, 2.0 + rng.unit() * roi as f32 / 3.0, 2.5 * rng.symmetric())
        })
        .collect();
    let mut volume = Vec::with_capacity(d * h * w);
    for z in 0..d {
        for y in 0..h {
            for x in 0..w {
                let p = [z as f32, y as f32, x as f32];
                let field: f32 = blobs
                    .iter()
                    .map(|(c, radius, amplitude)| {
                        let r2: f32 = (0..3).map(|k| (p[k] - c[k]).powi(2)).sum();
                        amplitude * (-r2 / (2.0 * radius * radius)).exp()
                    })
                    .sum();
                volume.push((field + 0.2 * rng.symmetric()).clamp(low, high));
            }
        }
    }
    volume
}

/// Creates the synthetic set in `set.dir` unless a matching one is there; progress to `log`.
pub fn ensure(set: &SyntheticKits, log: &mut dyn FnMut(&str)) -> Result<(), UNetError> {
    let wanted = [("generator_version", json!(GENERATOR_VERSION)), ("seed", json!(SEED))];
    match manifest::check(&set.manifest(), &wanted, &set.hashed()) {
        Ok(_) => return Ok(()),
        Err(why) => log(&format!("generating the synthetic KiTS19 set in {} ({why})", set.dir.display())),
    }
    manifest::invalidate(&set.manifest())?;
    let started = Instant::now();
    let cases: Vec<Case> = INFERENCE_CASES.iter().enumerate().map(|(i, name)| Case { name: name.to_string(), shape: case_shape(SEED, i, ROI) }).collect();
    let preprocessed = set.preprocessed();
    std::fs::create_dir_all(&preprocessed.dir).map_err(|source| UNetError::CreateDir { path: preprocessed.dir.clone(), source })?;

    // The logits' biases: minus each class's mean logit over the first case, so that what differs
    // between voxels decides their class.
    let mut model = UNet3dShape { filters: FILTERS.to_vec(), roi: ROI, class_bias: [0.0; CLASSES] };
    crate::fsutil::write_atomic(&set.model(), &unet3d(&model, SEED).encode_to_vec())?;
    let shapes: Vec<VolumeShape> = cases.iter().map(|c| c.shape).collect();
    let means = mean_logits(&CpuUNet3dEngine::load(&set.model(), shapes.clone())?, &case_volume(SEED, 0, shapes[0], ROI), shapes[0])?;
    model.class_bias = means.map(|m| -m);
    crate::fsutil::write_atomic(&set.model(), &unet3d(&model, SEED).encode_to_vec())?;

    let engine = CpuUNet3dEngine::load(&set.model(), shapes.clone())?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let labels = parallel_chunks(0..cases.len(), threads, 1, |chunk| chunk.map(|i| engine.segment(&case_volume(SEED, i, shapes[i], ROI), shapes[i])).collect())?;
    let mut share = [0usize; CLASSES];
    for (i, (case, labels)) in cases.iter().zip(&labels).enumerate() {
        labels.iter().for_each(|&l| share[l as usize] += 1);
        let image = le_bytes(&case_volume(SEED, i, case.shape, ROI));
        preprocessed.write_case(case, &image, labels)?;
    }
    preprocessed.write_index(&cases)?;
    let voxels: usize = share.iter().sum();
    let share = share.map(|n| n as f64 / voxels as f64);
    log(&format!(
        "{} cases, {voxels} voxels; labels background {:.1} %, kidney {:.1} %, tumor {:.1} % ({:.1} s)",
        cases.len(),
        share[0] * 100.0,
        share[1] * 100.0,
        share[2] * 100.0,
        started.elapsed().as_secs_f64()
    ));
    let fields = json!({
        "generator": "mlperf-runtime synthetic KiTS19 + 3D-UNet",
        "generator_version": GENERATOR_VERSION,
        "seed": SEED,
        "model": format!("{model:?}"),
        "label_shares": share,
    });
    Ok(manifest::write(&set.manifest(), fields, &set.hashed())?)
}

/// Each class's mean logit over one volume's windows.
fn mean_logits(engine: &CpuUNet3dEngine, volume: &[f32], shape: VolumeShape) -> Result<[f32; CLASSES], UNetError> {
    let roi = engine.roi();
    let (mut sums, mut windows) = ([0f64; CLASSES], 0usize);
    sliding_window(volume, shape, roi, &importance_map(roi), &mut |window| {
        let logits = engine.window_logits(&window)?;
        for (sum, class) in sums.iter_mut().zip(logits.chunks_exact(roi * roi * roi)) {
            *sum += class.iter().map(|&v| f64::from(v)).sum::<f64>();
        }
        windows += 1;
        Ok(logits)
    })?;
    Ok(sums.map(|s| (s / (windows * roi * roi * roi) as f64) as f32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_set_is_generated_once_every_class_wins_voxels_and_a_changed_file_regenerates_it() {
        let dir = std::env::temp_dir().join(format!("mlperf-kits-synthetic-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let set = SyntheticKits::in_dir(&dir);
        let mut lines = Vec::new();
        ensure(&set, &mut |m| lines.push(m.to_string())).unwrap();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let manifest: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(set.manifest()).unwrap()).unwrap();
        let shares: Vec<f64> = manifest["label_shares"].as_array().unwrap().iter().map(|v| v.as_f64().unwrap()).collect();
        assert!(shares.iter().all(|&s| s > 0.05), "each class wins voxels: {shares:?}");
        let cases = set.preprocessed().read_index().unwrap();
        assert_eq!(cases.len(), 43);
        assert!(cases.iter().all(|c| c.shape.iter().all(|&s| s >= ROI && s % (ROI / 2) == 0)), "{cases:?}");

        lines.clear();
        ensure(&set, &mut |m| lines.push(m.to_string())).unwrap();
        assert!(lines.is_empty(), "reused: {lines:?}");
        std::fs::write(set.preprocessed().case_file("case_00005"), b"changed").unwrap();
        ensure(&set, &mut |m| lines.push(m.to_string())).unwrap();
        assert!(lines[0].contains("preprocessed/case_00005.pkl differs from the manifest"), "{lines:?}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
