//! The synthetic ResNet50 workload of the CPU-only development system (never submittable).
//!
//! Three generated things stand in for MLPerf's ResNet50 model and ImageNet validation set:
//!
//! - **The model** ([`model::resnet50`]): the real ResNet50 v1.5 topology and operator set with
//!   seeded weights, at a reduced input resolution so two cores can run it.
//! - **The images** ([`synthetic_image`]): generated from their index, numerically like MLPerf's
//!   preprocessed ImageNet samples; never stored (a QSL can generate them on load).
//! - **The labels**: what the CPU engine predicts for each of the 50,000 images, written as an
//!   ImageNet-style `val_map.txt`. "Accuracy" on synthetic data thus measures agreement with the CPU
//!   engine, the oracle that GPU engines are checked against.
//!
//! A random network tends to give every input the same class: post-ReLU features share a large
//! common component, and a random classifier maps it to one fixed winner. The generator therefore
//! calibrates the classifier on a separate set of synthetic images, standardising each class's logit
//! (zero mean, unit deviation over the calibration images) so that what differs between images
//! decides the class. Labels then spread over most of the 1000 classes (the generator measures and
//! records the spread in its manifest).
//!
//! Files, under a root directory that the config's `model_path` and `map_path` are relative to
//! (the scratch space's models directory):
//! ```text
//! <root>/synthetic/resnet50-<size>px.onnx              the model
//! <root>/synthetic/imagenet-<size>px/val_map.txt       "synthetic_<index>.npy <label>" lines
//! <root>/synthetic/imagenet-<size>px/manifest.json     generator version, seed, hashes, label stats
//! ```
//! [`ensure_synthetic_resnet50`] creates them on first use and reuses them while the manifest matches
//! the generator version, seed, size and sample count and the files match their recorded hashes.
//!
//! Reproducibility: weights, images and the val map format are pure functions of (generator
//! version, seed, size, index), bit for bit on any machine. The classifier calibration runs the
//! model through tract, whose kernels differ by CPU family (AVX2, AVX-512, NEON) in the last bits,
//! so the 1000 calibrated classifier rows may differ in their last bits between kinds of machines;
//! on one machine the same seed always gives a byte-identical file. Labels always come from the
//! model file next to them, so a model and its val map always agree.
//!
//! Cost (release build, 2-core AMD EPYC development box): at 32 px the CPU engine labels about 400
//! images/s with two workers (about 2 minutes for 50,000); at 64 px about 115 images/s (over 7
//! minutes), which is why 32 px is the size meant for the CPU-only system.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prost::Message;
use tract_onnx::pb::ModelProto;

use super::error::ResNetError;
use crate::dataset::DataError;
use crate::engines::Layout;
use crate::engines::cpu::{CpuEngine, parallel_chunks};
use crate::engines::synthetic::image::CALIBRATION_FIRST_INDEX;
use crate::engines::synthetic::{GENERATOR_VERSION, input_spec, manifest, model, synthetic_image};

/// Samples in the ImageNet 2012 validation set, which the synthetic set mirrors.
pub const VAL_SAMPLES: usize = 50_000;
/// Calibration images used to standardise the classifier's logits.
pub const CALIBRATION_IMAGES: usize = 512;
/// The batch size used for calibration and labelling (labels do not depend on it: the engine's
/// answers are identical whatever the batch).
const GENERATION_BATCH: usize = 8;
/// Images per parallel work item during generation: whole batches, so every engine run is full.
const GENERATION_CHUNK: usize = GENERATION_BATCH * 8;

/// What to generate. [`SyntheticSpec::resnet50`] is the standard workload; tests shrink `samples`
/// and `calibration_images`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticSpec {
    /// Input side in pixels.
    pub size: usize,
    /// Seed of the model's weights.
    pub seed: u64,
    /// Images labelled in the val map (indices 0..samples).
    pub samples: usize,
    /// Images used to calibrate the classifier.
    pub calibration_images: usize,
    /// Threads used for calibration and labelling (0: one per available core).
    pub threads: usize,
}

impl SyntheticSpec {
    /// The standard synthetic ResNet50: 50,000 labelled samples.
    pub fn resnet50(size: usize, seed: u64) -> SyntheticSpec {
        SyntheticSpec { size, seed, samples: VAL_SAMPLES, calibration_images: CALIBRATION_IMAGES, threads: 0 }
    }

    fn threads(&self) -> usize {
        if self.threads > 0 { self.threads } else { std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1) }
    }
}

/// The generated files and what is known about them.
#[derive(Clone, Debug, PartialEq)]
pub struct SyntheticArtifacts {
    pub model_path: PathBuf,
    pub val_map_path: PathBuf,
    pub manifest_path: PathBuf,
    pub size: usize,
    pub seed: u64,
    pub samples: usize,
    /// False when existing files were reused.
    pub generated: bool,
    /// How the labels spread over the classes.
    pub labels: LabelStats,
}

/// The spread of labels over classes: a healthy synthetic set uses many classes, none dominating.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LabelStats {
    pub samples: usize,
    /// Classes that occur at least once.
    pub distinct: usize,
    /// The most frequent class and its share of the samples.
    pub top_class: i32,
    pub top_share: f64,
}

impl LabelStats {
    pub fn of(labels: &[i32]) -> LabelStats {
        let mut counts = std::collections::BTreeMap::<i32, usize>::new();
        for &l in labels {
            *counts.entry(l).or_default() += 1;
        }
        // Highest count, lowest class on ties.
        let (top_class, top) = counts.iter().fold((0, 0), |best, (&c, &n)| if n > best.1 { (c, n) } else { best });
        LabelStats { samples: labels.len(), distinct: counts.len(), top_class, top_share: if labels.is_empty() { 0.0 } else { top as f64 / labels.len() as f64 } }
    }
}

/// Model path relative to the root: `synthetic/resnet50-<size>px.onnx`.
pub fn model_relpath(size: usize) -> PathBuf {
    PathBuf::from(format!("synthetic/resnet50-{size}px.onnx"))
}

/// Val map path relative to the root: `synthetic/imagenet-<size>px/val_map.txt`.
pub fn val_map_relpath(size: usize) -> PathBuf {
    PathBuf::from(format!("synthetic/imagenet-{size}px/val_map.txt"))
}

/// Name of sample `index` in the val map.
pub fn sample_name(index: usize) -> String {
    format!("synthetic_{index}.npy")
}

/// Creates the synthetic ResNet50 model and its 50,000-sample val map under `root` (see the module
/// documentation for the layout) unless matching files exist; progress goes to stderr, since the
/// first generation takes minutes.
pub fn ensure_synthetic_resnet50(root: &Path, size: usize, seed: u64) -> Result<SyntheticArtifacts, ResNetError> {
    ensure_synthetic_resnet50_with(root, &SyntheticSpec::resnet50(size, seed), &mut |m| tracing::info!("synthetic: {m}"))
}

/// Only the synthetic model (no labels): what a GPU engine build and performance runs need. An
/// existing file is reused (generation is deterministic and the path names the size); labelling,
/// which accuracy runs need, is left to [`ensure_synthetic_resnet50`].
pub fn ensure_synthetic_resnet50_model(root: &Path, size: usize, seed: u64, log: &mut dyn FnMut(&str)) -> Result<PathBuf, ResNetError> {
    let path = root.join(model_relpath(size));
    if path.exists() {
        return Ok(path);
    }
    let spec = SyntheticSpec::resnet50(size, seed);
    log(&format!("generating {} (model only)", path.display()));
    let mut proto = model::resnet50(size, seed);
    calibrate_classifier(&mut proto, size, spec.calibration_images, spec.threads())?;
    crate::fsutil::write_atomic(&path, &proto.encode_to_vec())?;
    Ok(path)
}

/// [`ensure_synthetic_resnet50`] for any [`SyntheticSpec`], reporting progress to `log`.
pub fn ensure_synthetic_resnet50_with(root: &Path, spec: &SyntheticSpec, log: &mut dyn FnMut(&str)) -> Result<SyntheticArtifacts, ResNetError> {
    if spec.size < 32 {
        // Five stride-2 steps: below 32 px the last stage would see less than one pixel.
        return Err(ResNetError::SyntheticSize(spec.size));
    }
    let model_path = root.join(model_relpath(spec.size));
    let val_map_path = root.join(val_map_relpath(spec.size));
    let manifest_path = val_map_path.with_file_name("manifest.json");
    let mut artifacts =
        SyntheticArtifacts { model_path, val_map_path, manifest_path, size: spec.size, seed: spec.seed, samples: spec.samples, generated: false, labels: LabelStats::of(&[]) };

    match check_existing(&artifacts, spec) {
        Ok(labels) => {
            artifacts.labels = LabelStats::of(&labels);
            return Ok(artifacts);
        }
        Err(why) => log(&format!("generating {} ({why})", artifacts.model_path.display())),
    }

    manifest::invalidate(&artifacts.manifest_path)?;
    let started = Instant::now();
    let mut proto = model::resnet50(spec.size, spec.seed);
    calibrate_classifier(&mut proto, spec.size, spec.calibration_images, spec.threads())?;
    let model_bytes = proto.encode_to_vec();
    drop(proto);
    crate::fsutil::write_atomic(&artifacts.model_path, &model_bytes)?;
    log(&format!("model written ({} MiB, {:.1} s); labelling {} images", model_bytes.len() >> 20, started.elapsed().as_secs_f64(), spec.samples));

    let labelling = Instant::now();
    let engine = CpuEngine::load(&artifacts.model_path, input_spec(spec.size, GENERATION_BATCH, Layout::Nchw))?;
    let labels = predict(&engine, spec.size, 0..spec.samples, spec.threads())?;
    let val_map = render_val_map(&labels);
    crate::fsutil::write_atomic(&artifacts.val_map_path, val_map.as_bytes())?;
    artifacts.labels = LabelStats::of(&labels);
    let stats = artifacts.labels;
    log(&format!(
        "labels written ({:.1} s): {} distinct classes, most frequent {} with {:.2}%",
        labelling.elapsed().as_secs_f64(),
        stats.distinct,
        stats.top_class,
        stats.top_share * 100.0
    ));

    let fields = serde_json::json!({
        "generator": "mlperf-runtime synthetic ResNet50 v1.5",
        "generator_version": GENERATOR_VERSION,
        "seed": spec.seed,
        "image_size": spec.size,
        "samples": spec.samples,
        "calibration_images": spec.calibration_images,
        "model_file": model_relpath(spec.size),
        "model_bytes": model_bytes.len(),
        "distinct_labels": stats.distinct,
        "top_label": stats.top_class,
        "top_label_share": stats.top_share,
        "labelling_seconds": labelling.elapsed().as_secs_f64(),
    });
    manifest::write(&artifacts.manifest_path, fields, &hashed(&artifacts))?;
    artifacts.generated = true;
    Ok(artifacts)
}

/// The generated files and their manifest keys.
fn hashed(a: &SyntheticArtifacts) -> [manifest::Hashed; 2] {
    [(a.model_path.clone(), "model_hash".into()), (a.val_map_path.clone(), "val_map_hash".into())]
}

/// Reuse check: the manifest matches `spec` and this generator, and both files match their hashes.
/// Returns the labels, or why the files cannot be reused.
fn check_existing(a: &SyntheticArtifacts, spec: &SyntheticSpec) -> Result<Vec<i32>, ResNetError> {
    let wanted = [
        ("generator_version", serde_json::json!(GENERATOR_VERSION)),
        ("seed", serde_json::json!(spec.seed)),
        ("image_size", serde_json::json!(spec.size)),
        ("samples", serde_json::json!(spec.samples)),
        ("calibration_images", serde_json::json!(spec.calibration_images)),
    ];
    manifest::check(&a.manifest_path, &wanted, &hashed(a))?;
    let labels = read_labels(&a.val_map_path)?;
    if labels.len() != spec.samples {
        return Err(ResNetError::LabelCount { path: a.val_map_path.clone(), found: labels.len(), wanted: spec.samples });
    }
    Ok(labels)
}

/// Standardises the classifier's logits over `images` calibration images: each class's logit gets
/// zero mean and unit deviation, by rescaling that class's weight row and setting its bias. Without
/// it a random network gives almost every image the same class (see the module documentation).
pub fn calibrate_classifier(proto: &mut ModelProto, size: usize, images: usize, threads: usize) -> Result<(), ResNetError> {
    if images < 2 {
        return Err(ResNetError::Generator("classifier calibration needs at least 2 images"));
    }
    let engine = CpuEngine::from_proto(proto, "synthetic ResNet50 (calibration)", input_spec(size, GENERATION_BATCH, Layout::Nchw))?;
    let k = model::CLASSES;
    let indices = CALIBRATION_FIRST_INDEX..CALIBRATION_FIRST_INDEX + images;
    let scores = parallel_chunks(indices, threads, GENERATION_CHUNK, |chunk| {
        let imgs: Vec<Vec<u8>> = chunk.map(|i| synthetic_image(i, size, Layout::Nchw)).collect();
        engine.scores(&imgs.iter().map(|v| v.as_slice()).collect::<Vec<_>>())
    })?;
    drop(engine);

    let mut mean = vec![0f64; k];
    let mut sq = vec![0f64; k];
    for row in scores.chunks_exact(k) {
        for (c, &s) in row.iter().enumerate() {
            mean[c] += s as f64;
            sq[c] += s as f64 * s as f64;
        }
    }
    let n = images as f64;
    let weight = model::initializer_mut(proto, model::FC_WEIGHT).ok_or(ResNetError::Generator("synthetic model has no fc.weight"))?;
    let mut w = model::tensor_values(weight);
    let mut bias = vec![0f32; k];
    for c in 0..k {
        let m = mean[c] / n;
        let var = (sq[c] / n - m * m).max(0.0);
        // A class whose logit never varies gets unit scale: it stays a constant, never a NaN.
        let sd = if var > 0.0 { var.sqrt() } else { 1.0 };
        for v in &mut w[c * model::FEATURES..(c + 1) * model::FEATURES] {
            *v = (*v as f64 / sd) as f32;
        }
        bias[c] = (-m / sd) as f32;
    }
    model::set_tensor_values(weight, &w);
    let b = model::initializer_mut(proto, model::FC_BIAS).ok_or(ResNetError::Generator("synthetic model has no fc.bias"))?;
    model::set_tensor_values(b, &bias);
    Ok(())
}

/// The engine's class for each synthetic image in `indices` (NCHW f32 images of `size` px),
/// computed on `threads` threads.
pub fn predict(engine: &CpuEngine, size: usize, indices: std::ops::Range<usize>, threads: usize) -> Result<Vec<i32>, ResNetError> {
    let layout = engine.spec().layout;
    parallel_chunks(indices, threads, GENERATION_CHUNK, |chunk| {
        let imgs: Vec<Vec<u8>> = chunk.map(|i| synthetic_image(i, size, layout)).collect();
        engine.classify(&imgs.iter().map(|v| v.as_slice()).collect::<Vec<_>>())
    })
    .map_err(ResNetError::from)
}

/// The val map text: `synthetic_<index>.npy <label>` per line, in index order.
pub fn render_val_map(labels: &[i32]) -> String {
    let mut out = String::with_capacity(labels.len() * 24);
    for (i, l) in labels.iter().enumerate() {
        out.push_str(&sample_name(i));
        out.push(' ');
        out.push_str(&l.to_string());
        out.push('\n');
    }
    out
}

/// Reads a synthetic val map back: the label of each index, checking that lines name the samples in
/// order.
pub fn read_labels(path: &Path) -> Result<Vec<i32>, ResNetError> {
    let text = std::fs::read_to_string(path).map_err(|source| DataError::ReadValMap { path: path.to_path_buf(), source })?;
    let mut labels = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let bad = || ResNetError::LabelLine { path: path.to_path_buf(), line: i + 1, expected: sample_name(i), found: line.to_string() };
        let (name, label) = line.split_once(' ').ok_or_else(bad)?;
        if name != sample_name(i) {
            return Err(bad());
        }
        labels.push(label.trim().parse::<i32>().map_err(|_| bad())?);
    }
    Ok(labels)
}

#[cfg(test)]
mod tests;
