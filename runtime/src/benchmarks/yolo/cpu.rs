//! The CPU engine for YOLO: a model with the interface of ultralytics' ONNX export (`images` f32
//! `[N, 3, S, S]`, `output0` f32 `[N, 84, A]`) run by tract, S read from the model. A sample is an
//! image letterboxed to S with its original size ([`super::letterbox::encode_sample`]); the answer
//! is the reference's detections ([`super::detect`]). Whole batches of the configured size run on
//! one plan, the rest one image at a time on a batch-1 plan. It is the oracle other YOLO engines
//! are checked against, so the model's output for a batch ([`CpuYoloEngine::output`]) and the
//! detections of one image's output ([`CpuYoloEngine::detections`]) can be called apart.

use std::path::Path;

use tract_onnx::prelude::tract_data::internal::DimLike;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use super::detect::{Detection, non_max_suppression, respond, scale_boxes};
use super::error::YoloError;
use super::letterbox::Geometry;
use super::model::{CLASSES, anchors};
use crate::engines::cpu::Plan;
use crate::engines::{Engine, EngineError, SampleSource};

pub struct CpuYoloEngine {
    name: String,
    origin: String,
    size: usize,
    batch: usize,
    /// The configured batch's plan, then batch 1's (one plan when the batch is 1).
    plans: Vec<Plan>,
}

impl CpuYoloEngine {
    /// Loads `model_path` for batches of `batch` images; the input side is the model's.
    pub fn load(model_path: &Path, batch: usize) -> Result<CpuYoloEngine, YoloError> {
        let origin = model_path.display().to_string();
        let fail = |cause: TractError| YoloError::Tract { what: format!("model {origin}"), cause };
        let model = tract_onnx::onnx().model_for_path(model_path).map_err(|cause| YoloError::NotOnnx { origin: origin.clone(), cause })?;
        let fact = model.input_fact(0).map_err(fail)?;
        let dims: Vec<Option<usize>> = fact.shape.dims().map(|d| d.concretize().and_then(|d| d.to_usize().ok())).collect();
        let size = match dims.as_slice() {
            [_, Some(3), Some(h), Some(w)] if h == w && *h >= 32 && h % 32 == 0 => *h,
            _ => return Err(YoloError::InputShape { origin, shape: format!("{:?}", fact.shape) }),
        };
        let batch = batch.max(1);
        let mut plans = Vec::new();
        for b in if batch == 1 { vec![1] } else { vec![batch, 1] } {
            let typed = model.clone().with_input_fact(0, InferenceFact::dt_shape(f32::datum_type(), [b, 3, size, size])).and_then(|m| m.into_typed()).map_err(fail)?;
            plans.push(Plan::new(typed, b).map_err(fail)?);
        }
        let stem = model_path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
        Ok(CpuYoloEngine { name: format!("cpu-tract:{stem}"), origin, size, batch, plans })
    }

    /// The model's input side S.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The model's output, f32 `[n, 84, A]`, for `n` letterboxed images (RGB, CHW, S x S bytes
    /// each): the configured batch's plan for `n` = batch, else the batch-1 plan per image.
    pub fn output(&self, images: &[&[u8]]) -> Result<Vec<f32>, YoloError> {
        let fail = |cause: TractError| YoloError::Tract { what: format!("model {} failed", self.origin), cause };
        let (plan, runs) = if images.len() == self.batch { (&self.plans[0], vec![images]) } else { (&self.plans[self.plans.len() - 1], images.chunks(1).collect()) };
        let per_image = (4 + CLASSES) * anchors(self.size);
        let mut out = Vec::with_capacity(images.len() * per_image);
        for run in runs {
            let pixels: Vec<f32> = run.iter().flat_map(|image| image.iter().map(|&v| f32::from(v) / 255.0)).collect();
            let input = Tensor::from_shape(&[run.len(), 3, self.size, self.size], &pixels).map_err(fail)?;
            let result = plan.run_inputs(tvec!(input.into_tvalue())).map_err(fail)?;
            let values = result[0].cast_to::<f32>().map_err(fail)?;
            let values = values.try_as_plain_ram().map_err(fail)?.as_slice::<f32>().map_err(fail)?.to_vec();
            if values.len() != run.len() * per_image {
                return Err(YoloError::OutputShape { origin: self.origin.clone(), found: values.len(), images: run.len(), size: self.size, anchors: anchors(self.size) });
            }
            out.extend(values);
        }
        Ok(out)
    }

    /// The detections of one image's output (`[84, A]`), in the pixels of the image `g` letterboxed.
    pub fn detections(&self, output: &[f32], g: &Geometry) -> Vec<Detection> {
        let mut found = non_max_suppression(output, CLASSES, anchors(self.size));
        scale_boxes(&mut found, g, self.size);
        found
    }

    /// Each image's detections in input pixels, for `n` letterboxed images.
    fn detect(&self, images: &[&[u8]]) -> Result<Vec<Vec<Detection>>, YoloError> {
        let output = self.output(images)?;
        let per_image = (4 + CLASSES) * anchors(self.size);
        Ok(output.chunks_exact(per_image).map(|out| non_max_suppression(out, CLASSES, anchors(self.size))).collect())
    }
}

impl Engine for CpuYoloEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        for chunk in indices.chunks(self.batch) {
            respond(chunk, source, self.size, outputs, |images| self.detect(images)).map_err(EngineError::new)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::super::letterbox::encode_sample;
    use super::super::model::{YoloShape, yolo11};
    use super::*;
    use crate::dataset::image::RgbImage;
    use prost::Message;

    #[test]
    fn the_generated_network_runs_and_batches_answer_as_single_images() {
        let dir = std::env::temp_dir().join(format!("mlperf-yolo-cpu-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("yolo.onnx");
        std::fs::write(&path, yolo11(&YoloShape { size: 64, width_divisor: 16, class_bias: -2.0 }, 7).encode_to_vec()).unwrap();
        let engine = CpuYoloEngine::load(&path, 2).unwrap();
        assert_eq!(engine.size(), 64);
        let images: Vec<Vec<u8>> = [(40, 30), (50, 90), (64, 64)]
            .iter()
            .enumerate()
            .map(|(i, &(w, h))| encode_sample(&RgbImage::new(w, h, (0..w * h * 3).map(|v| ((v * (7 + i)) % 251) as u8).collect()), 64))
            .collect();
        let output = engine.output(&[&images[0][8..], &images[1][8..]]).unwrap();
        assert_eq!(output.len(), 2 * 84 * anchors(64));
        assert_eq!(anchors(64), 84);
        // The boxes are in input pixels, the scores sigmoids.
        assert!(output[..4 * 84].iter().all(|v| v.is_finite()));
        assert!(output[4 * 84..84 * 84].iter().all(|&s| (0.0..=1.0).contains(&s)));
        let mut batched = Vec::new();
        engine.infer(&[0, 1, 2], &images, &mut batched).unwrap();
        let mut single = Vec::new();
        for i in 0..3 {
            engine.infer(&[i], &images, &mut single).unwrap();
        }
        assert_eq!(batched, single);
        assert!(batched.iter().all(|r| !r.is_empty() && r.len() % 28 == 0), "every image has detections");
        let e = engine.infer(&[0], &vec![vec![0u8; 5]], &mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("sample 0 holds 5 bytes"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
