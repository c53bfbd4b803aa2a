//! Int8 calibration: the range of every value of the fused network over a calibration set, and
//! the cache that keeps it (NVIDIA's `calibrate` action and `cache_file`).
//!
//! The ranges are measured on the CPU, by tract in fp32 (the oracle the plan check also uses), so
//! calibration needs no GPU and gives the same cache on any machine. A value's range is the
//! [`PERCENTILE`]th percentile of its magnitudes over all calibration images (every element
//! counted, from a histogram with 32 bins per octave); values beyond it saturate.
//! `network::quantize` turns the range into a scale.
//!
//! Cache format (text, one tensor per line, as TensorRT's calibration caches are):
//! ```text
//! mlperf-calibration 2 percentile=<p> model-sha256=<hex> images=<n>
//! <ONNX tensor name>: <range>
//! ```

use super::error::GpuError;
use super::network;
use super::plan::{file_sha256, sha256_hex};
use crate::engines::SampleSource;
use crate::engines::cpu::{batch_tensor, parallel_chunks};
use crate::engines::{InputSpec, Layout};
use crate::fsutil::write_atomic;
use prost::Message as _;
use std::collections::BTreeMap;
use std::path::Path;
use tract_onnx::prelude::*;

const HEADER: &str = "mlperf-calibration 2";

/// The percentile of magnitudes a range covers: beyond it, values saturate rather than stretch
/// the scale for everything else. On the synthetic ResNet50 at 224 px, the largest magnitude gave
/// int8 plans that agreed with fp32 on 166 of 256 images on an H200, this percentile 171 (and
/// half the CPU simulation's logit error on 4 images); see docs/performance.md.
pub const PERCENTILE: f64 = 99.99;

/// Magnitude histogram bins: an f32's exponent and top 5 mantissa bits (32 bins per octave).
const BIN_SHIFT: u32 = 18;
const BINS: usize = 1 << (31 - BIN_SHIFT);

/// Counts of magnitudes per bin (zeros in bin 0).
fn histogram(values: &[f32], counts: &mut [u64]) {
    for v in values {
        counts[(v.abs().to_bits() >> BIN_SHIFT) as usize] += 1;
    }
}

/// The upper edge of the bin below which `percentile` of the counted magnitudes lie.
fn percentile_range(counts: &[u64], percentile: f64) -> f32 {
    let total: u64 = counts.iter().sum();
    let beyond = ((1.0 - percentile / 100.0) * total as f64) as u64;
    let mut above = 0;
    for bin in (0..counts.len()).rev() {
        above += counts[bin];
        if above > beyond {
            return f32::from_bits(((bin as u32 + 1) << BIN_SHIFT).min(f32::MAX.to_bits()));
        }
    }
    0.0
}

#[derive(Clone, Debug, PartialEq)]
pub struct Calibration {
    /// sha256 of the ONNX model the ranges were measured on.
    pub model_sha256: String,
    pub images: usize,
    pub percentile: f64,
    /// The range of each tensor, by ONNX tensor name.
    pub amax: BTreeMap<String, f32>,
}

impl Calibration {
    pub fn to_text(&self) -> String {
        let mut out = format!("{HEADER} percentile={} model-sha256={} images={}\n", self.percentile, self.model_sha256, self.images);
        for (name, amax) in &self.amax {
            out.push_str(&format!("{name}: {amax}\n"));
        }
        out
    }

    /// What an int8 plan's key records of its calibration.
    pub fn sha256(&self) -> String {
        sha256_hex(self.to_text().as_bytes())
    }

    /// Parses a cache; errors name `origin` and the line.
    pub fn parse(text: &str, origin: &str) -> Result<Calibration, GpuError> {
        let mut lines = text.lines().enumerate();
        let header = lines.next().map(|(_, l)| l).unwrap_or_default();
        let fields =
            header.strip_prefix(HEADER).ok_or_else(|| GpuError::Calibration(format!("{origin}:1: not a calibration cache of this tool (expected a line starting {HEADER:?})")))?;
        let field = |key: &str| fields.split_whitespace().find_map(|f| f.strip_prefix(key)).ok_or_else(|| GpuError::Calibration(format!("{origin}:1: the header lacks {key}")));
        let model_sha256 = field("model-sha256=")?.to_string();
        let images = field("images=")?.parse().map_err(|_| GpuError::Calibration(format!("{origin}:1: images= is not a number")))?;
        let percentile = field("percentile=")?.parse().map_err(|_| GpuError::Calibration(format!("{origin}:1: percentile= is not a number")))?;
        let mut amax = BTreeMap::new();
        for (i, line) in lines.filter(|(_, l)| !l.trim().is_empty()) {
            let bad = |why: &str| GpuError::Calibration(format!("{origin}:{}: {why} in {line:?} (expected `<tensor>: <range>`)", i + 1));
            let (name, value) = line.rsplit_once(": ").ok_or_else(|| bad("no `: `"))?;
            let value: f32 = value.trim().parse().map_err(|_| bad("an unreadable range"))?;
            if !(value.is_finite() && value >= 0.0) {
                return Err(bad("a range that is not a finite non-negative number"));
            }
            if amax.insert(name.to_string(), value).is_some() {
                return Err(bad("a tensor listed twice"));
            }
        }
        Ok(Calibration { model_sha256, images, percentile, amax })
    }

    pub fn load(path: &Path) -> Result<Calibration, GpuError> {
        let text = std::fs::read_to_string(path).map_err(|e| GpuError::Calibration(format!("cannot read calibration cache {}: {e}", path.display())))?;
        Calibration::parse(&text, &path.display().to_string())
    }
}

/// Calibration images: `batches` batches of `batch` samples, `0..batches * batch` of `source`.
pub struct CalibrationSet<'a> {
    pub source: &'a dyn SampleSource,
    pub spec: InputSpec,
    pub batch: usize,
    pub batches: usize,
}

/// Measures the range of every value of the fused network of the model at `model_path`, one tract
/// run per batch, on every core.
pub fn measure(model_path: &Path, set: &CalibrationSet, percentile: f64) -> Result<Calibration, GpuError> {
    let origin = model_path.display().to_string();
    let bytes = std::fs::read(model_path).map_err(|source| GpuError::ModelUnreadable { origin: origin.clone(), source })?;
    let proto = tract_onnx::pb::ModelProto::decode(bytes.as_slice()).map_err(|source| GpuError::NotOnnx { origin: origin.clone(), source })?;
    let net = network::build(&proto).map_err(|e| e.in_model(&origin))?;
    let tensors: Vec<String> = net.nodes.iter().map(|n| n.tensor.clone()).collect();
    let spec = InputSpec { batch_size: set.batch, ..set.spec };
    let plan = tract_onnx::onnx()
        .with_ignore_output_shapes(true)
        .model_for_proto_model(&proto)
        .and_then(|m| m.with_input_fact(0, f32::fact([set.batch, spec.channels, spec.height, spec.width]).into()))
        .and_then(|m| m.with_outputs_by_name(&tensors))
        .and_then(|m| m.into_optimized())
        .and_then(|m| m.into_runnable())
        .map_err(|e| GpuError::Calibration(format!("calibration: cannot prepare {origin} with its {} fused values as outputs: {e:#}", tensors.len())))?;
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    let per_batch = parallel_chunks(0..set.batch * set.batches, threads, set.batch, |range| {
        let samples: Vec<_> = range.map(|i| set.source.sample(i)).collect();
        let input = batch_tensor(&spec, Layout::Nchw, &samples.iter().map(|s| &s[..]).collect::<Vec<_>>(), set.batch, &origin).map_err(|e| e.to_string())?;
        let outputs = plan.run(tvec!(input.into_tvalue())).map_err(|e| format!("calibration run of {origin}: {e:#}"))?;
        let mut counts = vec![0u64; outputs.len() * BINS];
        for (t, counts) in outputs.iter().zip(counts.chunks_exact_mut(BINS)) {
            let t = t.cast_to::<f32>().map_err(|e| format!("{e:#}"))?;
            let view = t.try_as_plain_ram().map_err(|e| format!("{e:#}"))?;
            histogram(view.as_slice::<f32>().map_err(|e| format!("{e:#}"))?, counts);
        }
        Ok(vec![counts])
    })
    .map_err(GpuError::Calibration)?;
    let mut amax = BTreeMap::new();
    for (i, name) in tensors.into_iter().enumerate() {
        let counts: Vec<u64> = (0..BINS).map(|b| per_batch.iter().map(|c| c[i * BINS + b]).sum()).collect();
        amax.insert(name, percentile_range(&counts, percentile));
    }
    Ok(Calibration { model_sha256: sha256_hex(&bytes), images: set.batch * set.batches, percentile, amax })
}

/// What [`ensure`] did.
#[derive(Debug, PartialEq)]
pub enum CacheOutcome {
    Reused,
    Written,
}

/// The calibration of the model at `model_path`: the cache at `cache_path` when it was measured on
/// this model, or measured and written there when there is none (or with `force`). A cache for
/// another model is an error, never silently replaced: it may be a cache someone committed.
pub fn ensure(cache_path: &Path, model_path: &Path, set: &CalibrationSet, force: bool) -> Result<(Calibration, CacheOutcome), GpuError> {
    ensure_with(cache_path, model_path, force, || measure(model_path, set, PERCENTILE))
}

/// [`ensure`] with another measurement (BERT's linears' inputs, measured by its own forward).
pub fn ensure_with(cache_path: &Path, model_path: &Path, force: bool, measure: impl FnOnce() -> Result<Calibration, GpuError>) -> Result<(Calibration, CacheOutcome), GpuError> {
    if cache_path.exists() && !force {
        let cached = Calibration::load(cache_path)?;
        let model = file_sha256(model_path)?;
        if cached.model_sha256 != model {
            return Err(GpuError::Calibration(format!(
                "calibration cache {} was measured on a model with sha256 {}, but {} has sha256 {model}; \
                 recalibrate with `mlperf calibrate --force` (it replaces the cache) or point cache_file elsewhere",
                cache_path.display(),
                cached.model_sha256,
                model_path.display()
            )));
        }
        return Ok((cached, CacheOutcome::Reused));
    }
    let calibration = measure()?;
    write_atomic(cache_path, calibration.to_text().as_bytes())?;
    Ok((calibration, CacheOutcome::Written))
}
