//! The synthetic COCO workload of the CPU-only development system (never submittable): generated
//! images, a generated YOLOv11 and ground truth, in the reference's layout ([`super::dataset`]), so
//! the same QSL, letterbox, engine, NMS and scorer run as on the real set.
//!
//! - **Images**: 1,525 (the safe subset's count), each of its own size (32 to 96 px a side, so the
//!   letterbox both enlarges and shrinks and pads either axis): a gradient, noise and a few
//!   rectangles, written as binary PPM (OpenCV reads it; this build has no JPEG encoder).
//! - **Model**: [`super::model::yolo11`], YOLOv11-L's topology and interface with every width
//!   divided by 16, at 64 px.
//! - **Annotations**: the CPU engine's own detections scoring at least the threshold that leaves
//!   about four per image, as COCO boxes of the image (`annotations/instances_val2017.json`, the
//!   80 classes as their COCO ids). mAP on synthetic data thus measures agreement with the CPU
//!   engine (near 100 for the engine itself: every detection above the threshold is a ground
//!   truth, every other scores below them), the oracle other engines are checked against.
//!
//! Files, in one directory (`<models>/synthetic/coco-yolo/`): the model, `val2017_safe/`,
//! `annotations/` and `manifest.json`; [`ensure`] creates them on first use and reuses them while
//! the manifest matches the generator version and seed and every file its hash.

use std::path::{Path, PathBuf};
use std::time::Instant;

use prost::Message;
use serde_json::json;

use super::coco::{Annotation, Category, ImageInfo, Instances};
use super::cpu::CpuYoloEngine;
use super::dataset::{ANNOTATIONS, CocoSet, IMAGES_DIR, encode_ppm};
use super::detect::{COCO_80_TO_91, Detection};
use super::error::YoloError;
use super::letterbox::{Geometry, letterbox};
use super::model::{YoloShape, yolo11};
use crate::dataset::image::RgbImage;
use crate::engines::cpu::parallel_chunks;
use crate::engines::synthetic::manifest;
use crate::engines::synthetic::rng::SplitMix64;

/// Bumped whenever anything generated changes: a manifest of another version regenerates.
pub const GENERATOR_VERSION: u32 = 1;
/// Seed of the images and weights: fixed, so every machine generates the same workload.
pub const SEED: u64 = 20_261_128;
/// Images: the round's COCO safe subset's count.
pub const IMAGES: usize = 1525;
/// The model: input side and width divisor; the class bias puts most scores near 0.1.
const SHAPE: YoloShape = YoloShape { size: 64, width_divisor: 16, class_bias: -2.0 };
/// Ground-truth boxes per image, on average.
const LABELS_PER_IMAGE: usize = 4;
/// Images per engine run while labelling.
const BATCH: usize = 8;

/// The files of the synthetic set, all in one directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SyntheticCoco {
    pub dir: PathBuf,
}

impl SyntheticCoco {
    pub fn in_dir(dir: &Path) -> SyntheticCoco {
        SyntheticCoco { dir: dir.to_path_buf() }
    }
    pub fn model(&self) -> PathBuf {
        self.dir.join("yolo11-synthetic.onnx")
    }
    pub fn set(&self) -> CocoSet {
        CocoSet::in_dir(&self.dir)
    }
    fn manifest(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }
    /// Every generated file, manifest excepted, with its manifest key.
    fn hashed(&self) -> Vec<manifest::Hashed> {
        let mut files = vec![(self.model(), "yolo11-synthetic.onnx".to_string()), (self.set().annotations(), ANNOTATIONS.to_string())];
        files.extend((0..IMAGES).map(|i| (self.set().images_dir().join(file_name(i)), format!("{IMAGES_DIR}/{}", file_name(i)))));
        files
    }
}

fn file_name(index: usize) -> String {
    format!("synthetic_{:06}.ppm", index + 1)
}

/// Image `index`: a gradient with noise and up to four rectangles of flat colour.
fn image(seed: u64, index: usize) -> RgbImage {
    let mut rng = SplitMix64::derive(seed, "image", index as u64);
    let (w, h) = (rng.range(32, 96) as usize, rng.range(32, 96) as usize);
    let base: [f32; 3] = [(); 3].map(|_| rng.unit() * 200.0);
    let mut data = Vec::with_capacity(w * h * 3);
    for y in 0..h {
        for x in 0..w {
            for (c, b) in base.iter().enumerate() {
                let ramp = if c == 0 { x as f32 / w as f32 } else { y as f32 / h as f32 };
                data.push((b + 40.0 * ramp + 15.0 * rng.unit()) as u8);
            }
        }
    }
    for _ in 0..rng.range(1, 4) {
        let (x0, y0) = (rng.range(0, w as u32 - 8) as usize, rng.range(0, h as u32 - 8) as usize);
        let (x1, y1) = ((x0 + rng.range(6, w as u32 / 2) as usize).min(w), (y0 + rng.range(6, h as u32 / 2) as usize).min(h));
        let colour: [u8; 3] = [(); 3].map(|_| rng.range(0, 255) as u8);
        for y in y0..y1 {
            for x in x0..x1 {
                data[(y * w + x) * 3..(y * w + x) * 3 + 3].copy_from_slice(&colour);
            }
        }
    }
    RgbImage::new(w, h, data)
}

/// Creates the synthetic set in `set.dir` unless a matching one is there; progress to `log`.
pub fn ensure(set: &SyntheticCoco, log: &mut dyn FnMut(&str)) -> Result<(), YoloError> {
    let wanted = [("generator_version", json!(GENERATOR_VERSION)), ("seed", json!(SEED))];
    match manifest::check(&set.manifest(), &wanted, &set.hashed()) {
        Ok(_) => return Ok(()),
        Err(why) => log(&format!("generating the synthetic COCO set in {} ({why})", set.dir.display())),
    }
    manifest::invalidate(&set.manifest())?;
    let started = Instant::now();
    let coco = set.set();
    for dir in [coco.images_dir(), coco.annotations().parent().map(Path::to_path_buf).unwrap_or_default()] {
        std::fs::create_dir_all(&dir).map_err(|source| YoloError::CreateDir { path: dir.clone(), source })?;
    }
    crate::fsutil::write_atomic(&set.model(), &yolo11(&SHAPE, SEED).encode_to_vec())?;
    let images: Vec<RgbImage> = (0..IMAGES).map(|i| image(SEED, i)).collect();
    for (i, img) in images.iter().enumerate() {
        crate::fsutil::write_atomic(&coco.images_dir().join(file_name(i)), &encode_ppm(img))?;
    }

    let engine = CpuYoloEngine::load(&set.model(), BATCH)?;
    let threads = std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1);
    let detections: Vec<Vec<Detection>> = parallel_chunks(0..IMAGES, threads, BATCH, |chunk| detect(&engine, &images[chunk]))?;
    let mut scores: Vec<f32> = detections.iter().flatten().map(|d| d.score).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    let threshold = scores.get((LABELS_PER_IMAGE * IMAGES).min(scores.len()).saturating_sub(1)).copied().unwrap_or(f32::INFINITY);
    let instances = instances(&images, &detections, threshold);
    instances.write(&coco.annotations())?;
    log(&format!(
        "{IMAGES} images, {} ground-truth boxes (the engine's detections scoring {threshold} or more) ({:.1} s)",
        instances.annotations.len(),
        started.elapsed().as_secs_f64()
    ));
    let fields = json!({
        "generator": "mlperf-runtime synthetic COCO + YOLOv11",
        "generator_version": GENERATOR_VERSION,
        "seed": SEED,
        "model": format!("{SHAPE:?}"),
        "score_threshold": threshold,
        "boxes": instances.annotations.len(),
    });
    Ok(manifest::write(&set.manifest(), fields, &set.hashed())?)
}

/// The CPU engine's detections of `images`, run together.
fn detect(engine: &CpuYoloEngine, images: &[RgbImage]) -> Result<Vec<Vec<Detection>>, YoloError> {
    let size = engine.size();
    let boxed: Vec<(Vec<u8>, Geometry)> = images.iter().map(|img| letterbox(img, size)).collect();
    let pixels: Vec<&[u8]> = boxed.iter().map(|(p, _)| p.as_slice()).collect();
    let output = engine.output(&pixels)?;
    let per_image = output.len() / images.len();
    Ok(output.chunks_exact(per_image).zip(&boxed).map(|(out, (_, g))| engine.detections(out, g)).collect())
}

/// The annotations file: every image, and as its boxes its detections scoring `threshold` or more
/// (boxes under a pixel a side, which COCO cannot match, left out).
fn instances(images: &[RgbImage], detections: &[Vec<Detection>], threshold: f32) -> Instances {
    let infos = images.iter().enumerate().map(|(i, img)| ImageInfo { id: i as u64 + 1, file_name: file_name(i), width: img.width as u32, height: img.height as u32 }).collect();
    let mut annotations = Vec::new();
    for (i, found) in detections.iter().enumerate() {
        for d in found.iter().filter(|d| d.score >= threshold) {
            let (w, h) = (f64::from(d.x2 - d.x1), f64::from(d.y2 - d.y1));
            if w >= 1.0 && h >= 1.0 {
                let id = annotations.len() as u64 + 1;
                annotations.push(Annotation {
                    id,
                    image_id: i as u64 + 1,
                    category_id: COCO_80_TO_91[d.class],
                    bbox: [f64::from(d.x1), f64::from(d.y1), w, h],
                    area: w * h,
                    iscrowd: 0,
                });
            }
        }
    }
    let categories = COCO_80_TO_91.iter().map(|&id| Category { id, name: format!("class{id}") }).collect();
    Instances { images: infos, annotations, categories }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn images_vary_in_size_and_are_reproducible() {
        let sizes: Vec<(usize, usize)> = (0..50).map(|i| image(SEED, i)).map(|img| (img.width, img.height)).collect();
        assert!(sizes.iter().any(|(w, h)| w > h) && sizes.iter().any(|(w, h)| w < h), "{sizes:?}");
        assert!(sizes.iter().all(|&(w, h)| (32..=96).contains(&w) && (32..=96).contains(&h)));
        assert_eq!(image(SEED, 7), image(SEED, 7));
        assert_ne!(image(SEED, 7), image(SEED, 8));
    }
}
