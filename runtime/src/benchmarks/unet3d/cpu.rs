//! The CPU engine for 3D-UNet (KiTS19): a segmentation model with MLPerf's interface (`input`
//! f32 `[1, 1, R, R, R]`, `output` f32 `[1, 3, R, R, R]` logits) run by tract over a whole CT volume
//! by sliding windows, as the reference SUT does (`base_SUT.py`, `inference_utils.py`):
//!
//! - windows of the model's region of interest R (128 for MLPerf's model) at a stride of R / 2 on
//!   every axis, depth outermost, from 0 to the volume's end (preprocessing made each side a
//!   multiple of R / 2 and at least R, so the last window ends exactly there);
//! - each window's logits weighted by a Gaussian importance map (per axis σ = R / 8 around the
//!   window's centre; the product's cube root, divided by its maximum) and summed in f32, with the
//!   weights summed alongside; the sums divided by the weights, then the arg-max class (the first
//!   on ties) per voxel.
//!
//! A sample is one preprocessed volume, f32 `[1, D, H, W]` (C order), whose shape the engine takes
//! from its case table by sample index; the answer is the volume's labels, one byte per voxel
//! (0 background, 1 kidney, 2 tumor), what `accuracy_kits.py` reads with its default `uint8`.

use std::path::Path;

use tract_onnx::prelude::tract_data::internal::DimLike;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use super::error::UNetError;
use crate::engines::cpu::Plan;
use crate::engines::{Engine, EngineError, SampleSource};

/// Logit channels (classes) of the model's output.
pub const CLASSES: usize = 3;

/// A volume's shape: (depth, height, width).
pub type VolumeShape = [usize; 3];

pub struct CpuUNet3dEngine {
    name: String,
    origin: String,
    roi: usize,
    plan: Plan,
    importance: Vec<f32>,
    /// Each sample's volume shape, by sample index.
    shapes: Vec<VolumeShape>,
}

impl CpuUNet3dEngine {
    /// Loads `model_path` for volumes of `shapes` (by sample index); the region of interest is the
    /// model's input side.
    pub fn load(model_path: &Path, shapes: Vec<VolumeShape>) -> Result<CpuUNet3dEngine, UNetError> {
        let origin = model_path.display().to_string();
        let fail = |cause: TractError| UNetError::Tract { what: format!("model {origin}"), cause };
        let model = tract_onnx::onnx().model_for_path(model_path).map_err(|cause| UNetError::NotOnnx { origin: origin.clone(), cause })?;
        let fact = model.input_fact(0).map_err(fail)?;
        let dims: Vec<Option<usize>> = fact.shape.dims().map(|d| d.concretize().and_then(|d| d.to_usize().ok())).collect();
        let roi = match dims.as_slice() {
            [_, Some(1), Some(d), Some(h), Some(w)] if d == h && h == w && *d >= 2 => *d,
            _ => return Err(UNetError::InputShape { origin, shape: format!("{:?}", fact.shape) }),
        };
        let typed = model.with_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), [1, 1, roi, roi, roi])).and_then(|m| m.into_typed()).map_err(|cause| UNetError::Roi {
            origin: origin.clone(),
            roi,
            cause,
        })?;
        let plan = Plan::new(typed, 1).map_err(fail)?;
        let stem = model_path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
        Ok(CpuUNet3dEngine { name: format!("cpu-tract:{stem}"), origin, roi, plan, importance: importance_map(roi), shapes })
    }

    /// The region of interest's side.
    pub fn roi(&self) -> usize {
        self.roi
    }

    /// The model's logits (`[CLASSES, roi, roi, roi]`) for one window (`[roi, roi, roi]`).
    pub fn window_logits(&self, window: &[f32]) -> Result<Vec<f32>, UNetError> {
        let roi = self.roi;
        let fail = |cause: TractError| UNetError::Tract { what: format!("model {} failed", self.origin), cause };
        let input = Tensor::from_shape(&[1, 1, roi, roi, roi], window).map_err(fail)?;
        let out = self.plan.run_inputs(tvec!(input.into_tvalue())).map_err(fail)?;
        let logits = out[0].cast_to::<f32>().map_err(fail)?;
        let logits = logits.try_as_plain_ram().map_err(fail)?.as_slice::<f32>().map_err(fail)?.to_vec();
        if logits.len() != CLASSES * roi * roi * roi {
            return Err(UNetError::Logits { origin: self.origin.clone(), found: logits.len(), classes: CLASSES, roi });
        }
        Ok(logits)
    }

    /// The labels of one volume of `shape` (`[D, H, W]` f32 values).
    pub fn segment(&self, volume: &[f32], shape: VolumeShape) -> Result<Vec<u8>, UNetError> {
        sliding_window(volume, shape, self.roi, &self.importance, &mut |window| self.window_logits(&window))
    }
}

impl Engine for CpuUNet3dEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        for &index in indices {
            outputs.push(self.answer(index, source).map_err(EngineError::new)?);
        }
        Ok(())
    }
}

impl CpuUNet3dEngine {
    /// The labels of sample `index`.
    fn answer(&self, index: usize, source: &dyn SampleSource) -> Result<Vec<u8>, UNetError> {
        let shape = *self.shapes.get(index).ok_or(UNetError::UnknownSample { index, cases: self.shapes.len() })?;
        let sample = source.sample(index);
        let bytes = &sample[..];
        if bytes.len() != 4 * shape.iter().product::<usize>() {
            return Err(UNetError::SampleSize { index, bytes: bytes.len(), shape });
        }
        self.segment(&f32s(bytes), shape)
    }
}

/// A volume's values from its bytes (f32 little-endian, as samples and pickles hold them).
pub fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect()
}

/// A volume's bytes (f32 little-endian) from its values.
pub fn le_bytes(values: &[f32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// The reference's Gaussian importance map of a `roi`-voxel cube, C order: per axis
/// `exp(-((k - (roi - 1) / 2) / σ)² / 2)` with σ = roi / 8 (scipy's `gaussian(roi, σ)`), the
/// product's cube root divided by its maximum, computed in f64 and then rounded to f32 as
/// `inference_utils.py` does.
pub fn importance_map(roi: usize) -> Vec<f32> {
    let sigma = 0.125 * roi as f64;
    let centre = (roi as f64 - 1.0) / 2.0;
    let g: Vec<f64> = (0..roi).map(|k| (-0.5 * ((k as f64 - centre) / sigma).powi(2)).exp()).collect();
    let mut cube = Vec::with_capacity(roi * roi * roi);
    for a in &g {
        for b in &g {
            cube.extend(g.iter().map(|c| (a * b * c).cbrt()));
        }
    }
    let max = cube.iter().fold(0f64, |m, &v| m.max(v));
    cube.iter().map(|&v| (v / max) as f32).collect()
}

/// Window origins along an axis of `size` voxels: 0, roi / 2, ... up to `size - roi`.
fn origins(size: usize, roi: usize) -> impl Iterator<Item = usize> {
    let stride = roi / 2;
    (0..=(size - roi) / stride).map(move |i| i * stride)
}

/// The origins `[z, y, x]` of a volume's windows in the reference's order (depth outermost).
/// Every side must be at least `roi` and a multiple of `roi / 2`.
pub fn windows(shape: VolumeShape, roi: usize) -> Result<Vec<VolumeShape>, UNetError> {
    let [d, h, w] = shape;
    let stride = roi / 2;
    if shape.iter().any(|&s| s < roi || !s.is_multiple_of(stride.max(1))) {
        return Err(UNetError::Volume { shape, roi, stride });
    }
    Ok(origins(d, roi).flat_map(|z| origins(h, roi).flat_map(move |y| origins(w, roi).map(move |x| [z, y, x]))).collect())
}

/// Sliding-window segmentation of `volume` (`shape`, C order) with `predict` giving a window's
/// logits (`[CLASSES, roi, roi, roi]`) for its voxels (`[roi, roi, roi]`), weighted by `importance`.
/// Every side must be at least `roi` and a multiple of `roi / 2`.
pub fn sliding_window(
    volume: &[f32],
    shape: VolumeShape,
    roi: usize,
    importance: &[f32],
    predict: &mut dyn FnMut(Vec<f32>) -> Result<Vec<f32>, UNetError>,
) -> Result<Vec<u8>, UNetError> {
    let [d, h, w] = shape;
    let windows = windows(shape, roi)?;
    let voxels = d * h * w;
    let (mut sums, mut weights) = (vec![0f32; CLASSES * voxels], vec![0f32; voxels]);
    for [z, y, x] in windows {
        let mut window = Vec::with_capacity(roi * roi * roi);
        for a in 0..roi {
            for b in 0..roi {
                let row = ((z + a) * h + y + b) * w + x;
                window.extend_from_slice(&volume[row..row + roi]);
            }
        }
        let logits = predict(window)?;
        for a in 0..roi {
            for b in 0..roi {
                let row = ((z + a) * h + y + b) * w + x;
                let patch = (a * roi + b) * roi;
                for c in 0..roi {
                    let weight = importance[patch + c];
                    weights[row + c] += weight;
                    for class in 0..CLASSES {
                        sums[class * voxels + row + c] += logits[class * roi * roi * roi + patch + c] * weight;
                    }
                }
            }
        }
    }
    Ok((0..voxels)
        .map(|v| {
            let mut best = 0;
            for class in 1..CLASSES {
                if sums[class * voxels + v] / weights[v] > sums[best * voxels + v] / weights[v] {
                    best = class;
                }
            }
            best as u8
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_importance_map_is_the_references() {
        // inference_utils.py at 128: 1 at the centre's 8 voxels, exp(-(3 * 63.5^2 - 0.75) / 1536)
        // at the corners.
        let map = importance_map(128);
        let at = |a: usize, b: usize, c: usize| map[(a * 128 + b) * 128 + c];
        assert_eq!((at(63, 64, 63), at(64, 64, 64)), (1.0, 1.0));
        assert_eq!(at(0, 0, 0), ((-(3.0 * 63.5f64 * 63.5 - 0.75) / 1536.0).exp()) as f32);
        assert!((at(0, 0, 0) - 3.8013e-4).abs() < 1e-7, "{}", at(0, 0, 0));
        for (a, b, c) in [(0, 17, 99), (31, 64, 127), (100, 2, 50)] {
            let closed = (-(((a as f64 - 63.5).powi(2) + (b as f64 - 63.5).powi(2) + (c as f64 - 63.5).powi(2)) - 0.75) / 1536.0).exp() as f32;
            assert!((at(a, b, c) - closed).abs() <= f32::EPSILON * closed, "({a}, {b}, {c})");
        }
    }

    #[test]
    fn windows_cover_the_volume_and_blend_to_each_voxels_own_logits() {
        // A "model" whose logits depend on each voxel's value alone: every window agrees on a
        // voxel, so the weighted mean is that voxel's logits and the labels are its own arg-max.
        let (roi, shape) = (8, [8, 12, 16]);
        let volume: Vec<f32> = (0..8 * 12 * 16).map(|i| ((i * 37 % 101) as f32 / 50.0) - 1.0).collect();
        let class_of = |v: f32| -> u8 {
            if v < -0.3 {
                0
            } else if v < 0.4 {
                1
            } else {
                2
            }
        };
        let mut windows = 0;
        let labels = sliding_window(&volume, shape, roi, &importance_map(roi), &mut |window| {
            windows += 1;
            Ok((0..CLASSES as u8).flat_map(|class| window.iter().map(move |&v| if class_of(v) == class { 1.0 } else { 0.0 })).collect())
        })
        .unwrap();
        assert_eq!(windows, 6, "1 x 2 x 3 origins at stride 4");
        let expected: Vec<u8> = volume.iter().map(|&v| class_of(v)).collect();
        assert_eq!(labels, expected);
    }

    #[test]
    fn ties_go_to_the_first_class_and_bad_shapes_are_refused() {
        let roi = 4;
        let labels = sliding_window(&[0.5; 64], [4, 4, 4], roi, &importance_map(roi), &mut |_| Ok(vec![1.0; CLASSES * 64])).unwrap();
        assert!(labels.iter().all(|&l| l == 0));
        let e = sliding_window(&[0.0; 4 * 4 * 5], [4, 4, 5], roi, &importance_map(roi), &mut |_| unreachable!()).unwrap_err().to_string();
        assert!(e.contains("[4, 4, 5]") && e.contains("multiple of 2"), "{e}");
    }
}
