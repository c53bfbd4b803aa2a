//! The CPU engine for BERT question answering (SQuAD): an ONNX model with MLPerf BERT's interface
//! run by tract. Each sample is one SQuAD feature as NVIDIA's tensors hold it (`input_ids`,
//! `segment_ids`, `input_mask`, int32 rows of the dataset's sequence length, concatenated), and
//! each answer is the feature's start and end logits, f32 `[length, 2]` (what `accuracy-squad.py`
//! reads with its default `--output_dtype float32`; it pads shorter answers with -10000).
//!
//! It runs CPU-only systems and is the accuracy oracle of GPU BERT engines, so, as the image
//! engine, it favours exactness and determinism:
//!
//! - **Sequence-length buckets.** Most SQuAD features are much shorter than 384 tokens. A sample
//!   runs on the plan of the smallest bucket (a multiple of [`BUCKET`] tokens) that holds its
//!   tokens, zero-padded to it. Padding never changes a real token's logits: the attention mask
//!   gives padded keys a weight of exactly zero (`exp(-10000)` underflows) and every other
//!   operation is per token. Each bucket has a fixed-shape plan, optimised once when the engine is
//!   built, so the choice of plan depends on the sample alone and a sample's answer never varies.
//! - **One sample per run.** A token sequence already gives the matrix products hundreds of rows,
//!   so batching samples saves little on a CPU; parallelism comes from the harness's workers.
//! - **Inputs by name.** The model's inputs are matched by name (`input_ids`, `input_mask`,
//!   `segment_ids`, as the reference SUT feeds them) and fed in the integer type it declares
//!   (int64 for MLPerf's model); its outputs are start and end logits (two `[N, S]` outputs) or
//!   one `[N, S, 2]`.

use std::path::Path;

use tract_onnx::pb::ModelProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use super::error::BertError;
use crate::engines::cpu::Plan;
use crate::engines::{Engine, EngineError, SampleSource};

/// Bucket granularity in tokens.
pub const BUCKET: usize = 64;

/// The three tensors of a sample, in NVIDIA's `tensor_path` order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    InputIds,
    SegmentIds,
    InputMask,
}

impl Role {
    /// Which tensor a model input of this name is (`input_ids`, `input_ids:0`, `segment_ids`,
    /// `token_type_ids`, `input_mask`, `attention_mask`).
    pub(crate) fn of(name: &str) -> Option<Role> {
        let n = name.to_ascii_lowercase();
        if n.contains("input_ids") {
            Some(Role::InputIds)
        } else if n.contains("segment") || n.contains("token_type") {
            Some(Role::SegmentIds)
        } else if n.contains("mask") {
            Some(Role::InputMask)
        } else {
            None
        }
    }

    /// Position of this tensor's row in a sample.
    fn row(self) -> usize {
        self as usize
    }
}

/// How the model gives its logits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Logits {
    /// Two `[N, S]` outputs: start at the first index, end at the second.
    Pair { start: usize, end: usize },
    /// One `[N, S, 2]` output.
    Stacked,
}

/// One SQuAD feature decoded from its sample bytes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Feature {
    /// Rows in [`Role`] order, each of the dataset's sequence length.
    rows: [Vec<i32>; 3],
    /// Real tokens: the mask's ones (a prefix of the row).
    pub length: usize,
}

impl Feature {
    /// Decodes a sample of `3 x seq` little-endian int32 values.
    pub fn decode(bytes: &[u8], seq: usize) -> Result<Feature, BertError> {
        if bytes.len() != 3 * seq * 4 {
            return Err(BertError::SampleSize { bytes: bytes.len(), seq });
        }
        let row = |r: usize| -> Vec<i32> { bytes[r * seq * 4..(r + 1) * seq * 4].chunks_exact(4).map(|b| i32::from_le_bytes(b.try_into().unwrap())).collect() };
        let rows = [row(0), row(1), row(2)];
        let length = rows[Role::InputMask.row()].iter().take_while(|&&m| m != 0).count();
        Ok(Feature { rows, length })
    }

    pub fn ids(&self) -> &[i32] {
        &self.rows[Role::InputIds.row()]
    }

    pub fn segments(&self) -> &[i32] {
        &self.rows[Role::SegmentIds.row()]
    }
}

/// A BERT question-answering model on the CPU. See the module documentation.
pub struct CpuBertEngine {
    name: String,
    origin: String,
    /// The samples' sequence length (the dataset's `max_seq_length`).
    seq: usize,
    /// Plans by bucket length, ascending; the last is `seq`.
    buckets: Vec<(usize, Plan)>,
    /// The model's inputs in its own order: which tensor and which integer type.
    inputs: Vec<(Role, DatumType)>,
    logits: Logits,
}

impl CpuBertEngine {
    /// Loads the ONNX model at `model_path` for samples of `seq` tokens.
    pub fn load(model_path: &Path, seq: usize) -> Result<CpuBertEngine, BertError> {
        let origin = model_path.display().to_string();
        if !model_path.is_file() {
            return Err(BertError::NotAFile { origin });
        }
        let model = tract_onnx::onnx().model_for_path(model_path).map_err(|cause| BertError::NotOnnx { origin: origin.clone(), cause })?;
        let stem = model_path.file_stem().and_then(|s| s.to_str()).unwrap_or("model");
        CpuBertEngine::build(model, format!("cpu-tract:{stem}"), origin, seq)
    }

    /// Builds an engine from an in-memory ONNX model; `origin` names it in errors.
    pub fn from_proto(model: &ModelProto, origin: &str, seq: usize) -> Result<CpuBertEngine, BertError> {
        let model = tract_onnx::onnx().model_for_proto_model(model).map_err(|cause| BertError::NotOnnx { origin: origin.to_string(), cause })?;
        CpuBertEngine::build(model, format!("cpu-tract:{origin}"), origin.to_string(), seq)
    }

    fn build(model: InferenceModel, name: String, origin: String, seq: usize) -> Result<CpuBertEngine, BertError> {
        if seq == 0 {
            return Err(BertError::ZeroSequence { origin });
        }
        let tract = |what: String| move |cause: TractError| BertError::Tract { what, cause };
        let fail = |cause: TractError| tract(format!("model {origin}"))(cause);
        let mut inputs = Vec::new();
        for (i, outlet) in model.input_outlets().map_err(fail)?.iter().enumerate() {
            let input_name = &model.node(outlet.node).name;
            let role = Role::of(input_name).ok_or_else(|| BertError::UnknownInput { origin: origin.clone(), input: input_name.clone() })?;
            let dt = model.input_fact(i).map_err(fail)?.datum_type.concretize().unwrap_or(DatumType::I64);
            if !matches!(dt, DatumType::I64 | DatumType::I32) {
                return Err(BertError::InputType { origin, dtype: format!("{dt:?}"), input: input_name.clone() });
            }
            inputs.push((role, dt));
        }
        let mut roles: Vec<Role> = inputs.iter().map(|r| r.0).collect();
        roles.sort_by_key(|r| r.row());
        roles.dedup();
        if roles.len() != 3 || inputs.len() != 3 {
            return Err(BertError::InputCount { origin, count: inputs.len() });
        }

        let typed = |length: usize| -> Result<TypedModel, BertError> {
            let mut m = model.clone();
            for (i, (_, dt)) in inputs.iter().enumerate() {
                m = m.with_input_fact(i, InferenceFact::dt_shape(*dt, [1, length])).map_err(fail)?;
            }
            m.into_typed().map_err(tract(format!("model {origin} does not accept 1 x {length} tokens")))
        };
        let first = typed(seq)?;
        let logits = choose_logits(&first, &origin)?;
        let mut buckets = Vec::new();
        for length in bucket_lengths(seq) {
            let m = if length == seq { first.clone() } else { typed(length)? };
            let plan = Plan::new(m, 1).map_err(tract(format!("cannot optimise model {origin} for {length} tokens")))?;
            buckets.push((length, plan));
        }
        Ok(CpuBertEngine { name, origin, seq, buckets, inputs, logits })
    }

    /// The samples' sequence length.
    pub fn seq(&self) -> usize {
        self.seq
    }

    /// The start and end logits of one sample's real tokens.
    pub fn logits(&self, sample: &[u8]) -> Result<(Vec<f32>, Vec<f32>), BertError> {
        let feature = Feature::decode(sample, self.seq).map_err(|e| BertError::Sample { origin: self.origin.clone(), source: Box::new(e) })?;
        let bucket = self.buckets.iter().position(|(l, _)| *l >= feature.length.max(1)).expect("the last bucket is the whole sequence");
        self.logits_in(&feature, bucket)
    }

    /// [`CpuBertEngine::logits`] on the plan of bucket `bucket` (which must hold the feature).
    fn logits_in(&self, feature: &Feature, bucket: usize) -> Result<(Vec<f32>, Vec<f32>), BertError> {
        let (length, plan) = &self.buckets[bucket];
        let fail = |cause: TractError| BertError::Tract { what: format!("model {} failed", self.origin), cause };
        let mut feed = TVec::new();
        for (role, dt) in &self.inputs {
            let row = &feature.rows[role.row()][..*length];
            let tensor = tract_ndarray::Array2::from_shape_vec((1, *length), row.to_vec()).map_err(BertError::Shape)?.into_tensor();
            feed.push(tensor.cast_to_dt(*dt).map_err(fail)?.into_owned().into_tvalue());
        }
        let out = plan.run_inputs(feed).map_err(fail)?;
        let values = |v: &TValue| -> Result<Vec<f32>, BertError> {
            let t = v.cast_to::<f32>().map_err(fail)?;
            Ok(t.try_as_plain_ram().map_err(fail)?.as_slice::<f32>().map_err(fail)?.to_vec())
        };
        let n = feature.length;
        match self.logits {
            Logits::Pair { start, end } => {
                let (s, e) = (values(&out[start])?, values(&out[end])?);
                Ok((s[..n].to_vec(), e[..n].to_vec()))
            }
            Logits::Stacked => {
                let both = values(&out[0])?;
                Ok((both.iter().step_by(2).take(n).copied().collect(), both.iter().skip(1).step_by(2).take(n).copied().collect()))
            }
        }
    }
}

/// Bucket lengths for samples of `seq` tokens: multiples of [`BUCKET`] below `seq`, then `seq`.
fn bucket_lengths(seq: usize) -> Vec<usize> {
    (1..).map(|k| k * BUCKET).take_while(|&l| l < seq).chain([seq]).collect()
}

/// The logits as a response: `[length, 2]` little-endian f32, start then end per token.
pub fn response_bytes(start: &[f32], end: &[f32]) -> Vec<u8> {
    start.iter().zip(end).flat_map(|(s, e)| s.to_le_bytes().into_iter().chain(e.to_le_bytes())).collect()
}

/// Where the model's logits are: two `[N, S]` outputs (an output named `*end*` is the end
/// logits, otherwise the first is the start), or one `[N, S, 2]`.
fn choose_logits(model: &TypedModel, origin: &str) -> Result<Logits, BertError> {
    let outlets = model.output_outlets().map_err(BertError::Outputs)?;
    let rank = |i: usize| model.outlet_fact(outlets[i]).map(|f| f.rank()).unwrap_or(0);
    match outlets.len() {
        2 if rank(0) == 2 && rank(1) == 2 => {
            let label = model.outlet_label(outlets[0]).unwrap_or(&model.node(outlets[0].node).name);
            let first_is_end = label.to_ascii_lowercase().contains("end");
            Ok(if first_is_end { Logits::Pair { start: 1, end: 0 } } else { Logits::Pair { start: 0, end: 1 } })
        }
        1 if rank(0) == 3 => Ok(Logits::Stacked),
        n => Err(BertError::OutputCount { origin: origin.to_string(), count: n }),
    }
}

impl Engine for CpuBertEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        for &i in indices {
            let (start, end) = self.logits(&source.sample(i)).map_err(EngineError::new)?;
            outputs.push(response_bytes(&start, &end));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::bert::model::{BertShape, bert};
    use crate::engines::onnx_writer::{Dim, GraphWriter, value_info};
    use crate::engines::synthetic::rng::SplitMix64;

    const SHAPE: BertShape = BertShape { vocab: 40, hidden: 32, heads: 2, layers: 2, intermediate: 64, max_positions: 512 };

    /// A sample of `length` real tokens (question in segment 0, document in segment 1).
    fn sample(length: usize, seq: usize, seed: u64) -> Vec<u8> {
        let mut rng = SplitMix64::new(seed);
        let ids: Vec<i32> = (0..seq).map(|i| if i < length { rng.range(1, SHAPE.vocab as u32 - 1) as i32 } else { 0 }).collect();
        let segments: Vec<i32> = (0..seq).map(|i| i32::from(i >= length / 3 && i < length)).collect();
        let mask: Vec<i32> = (0..seq).map(|i| i32::from(i < length)).collect();
        ids.iter().chain(&segments).chain(&mask).flat_map(|v| v.to_le_bytes()).collect()
    }

    #[test]
    fn padding_to_a_larger_bucket_never_changes_a_tokens_logits() {
        let engine = CpuBertEngine::from_proto(&bert(&SHAPE, 7), "test BERT", 384).unwrap();
        assert_eq!(engine.buckets.iter().map(|b| b.0).collect::<Vec<_>>(), [64, 128, 192, 256, 320, 384]);
        for (length, seed) in [(50, 1), (64, 2), (200, 3)] {
            let bytes = sample(length, 384, seed);
            let feature = Feature::decode(&bytes, 384).unwrap();
            assert_eq!(feature.length, length);
            let (start, end) = engine.logits(&bytes).unwrap();
            assert_eq!((start.len(), end.len()), (length, length));
            let (full_start, full_end) = engine.logits_in(&feature, 5).unwrap();
            let worst = start.iter().zip(&full_start).chain(end.iter().zip(&full_end)).map(|(a, b)| (a - b).abs()).fold(0f32, f32::max);
            assert!(worst < 1e-4, "length {length}: logits differ by {worst} between buckets");
            assert!(start.iter().all(|v| v.is_finite()) && start.iter().any(|&v| v != start[0]), "logits vary by token");
            // The same sample always gives the same bytes.
            assert_eq!(response_bytes(&start, &end), response_bytes(&engine.logits(&bytes).unwrap().0, &engine.logits(&bytes).unwrap().1));
        }
    }

    #[test]
    fn responses_interleave_start_and_end_per_token() {
        let bytes = response_bytes(&[1.0, 2.0], &[3.0, 4.0]);
        let values: Vec<f32> = bytes.chunks_exact(4).map(|b| f32::from_le_bytes(b.try_into().unwrap())).collect();
        assert_eq!(values, [1.0, 3.0, 2.0, 4.0]);
    }

    #[test]
    fn bad_models_and_samples_say_what_is_wrong() {
        let mut g = GraphWriter::default();
        g.node("Identity", "out", &["image"], vec![]);
        let image_model =
            g.into_model("image".into(), String::new(), vec![value_info("image", vec![Dim::Value(1), Dim::Value(3)])], vec![value_info("out", vec![Dim::Value(1), Dim::Value(3)])]);
        let err = CpuBertEngine::from_proto(&image_model, "an image model", 384).err().unwrap().to_string();
        assert!(err.contains("has an input `image`") && err.contains("input_ids, input_mask and segment_ids"), "{err}");
        let engine = CpuBertEngine::from_proto(&bert(&SHAPE, 7), "test BERT", 128).unwrap();
        let err = engine.logits(&sample(10, 384, 1)).unwrap_err().to_string();
        assert!(err.contains("4608 bytes; 3 int32 rows of 128 tokens are 1536 bytes"), "{err}");
    }
}
