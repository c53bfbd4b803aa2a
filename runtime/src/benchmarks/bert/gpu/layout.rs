//! The GPU BERT plan: an imported BERT's weights in the engine's layout, their offsets, and the
//! header that keys them (the same file framing and staleness rules as ResNet50's plans,
//! [`crate::engines::gpu::plan`]). CPU only, tested in CI.
//!
//! Layout: every linear is fp16 `[outputs, inputs]` row-major (cuBLASLt's transposed-A operand),
//! Q, K and V stacked into one `[3 * hidden, hidden]` linear; biases fp16 (cuBLASLt's epilogue
//! reads the output type); embeddings fp16 `[rows, hidden]`; layer-norm parameters and the
//! question-answering head's bias fp32. Each region starts on a 256-byte boundary.

use crate::benchmarks::bert::gpu::import::{Bert, Gelu, LayerNorm, Linear};
use crate::benchmarks::bert::gpu::quant::QuantizedWeight;
use crate::engines::gpu::GpuError;
use crate::engines::gpu::plan::{Header, PlanKey, sha256_hex};
use serde::{Deserialize, Serialize};

/// The model's dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Shape {
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub layers: usize,
    pub vocab: usize,
    pub max_positions: usize,
    pub token_types: usize,
}

impl Shape {
    pub fn head_size(&self) -> usize {
        self.hidden / self.heads
    }
}

/// Byte offsets of a linear's weight and bias in the blob.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinearAt {
    pub weight: usize,
    pub bias: usize,
    pub outputs: usize,
    pub inputs: usize,
    /// In int8 plans: the weight is int8 (its scales here), the bias fp32; the input is quantized
    /// per token as it is produced.
    #[serde(default)]
    pub int8: Option<Int8At>,
}

/// An int8 linear's weight scales: one per output channel (offset of fp32 values).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Int8At {
    pub scales: usize,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct NormAt {
    pub gamma: usize,
    pub beta: usize,
    pub epsilon: f32,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct LayerAt {
    pub qkv: LinearAt,
    pub attention_output: LinearAt,
    pub attention_norm: NormAt,
    pub intermediate: LinearAt,
    pub output: LinearAt,
    pub output_norm: NormAt,
}

#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct EmbeddingsAt {
    pub words: usize,
    pub positions: usize,
    pub token_types: usize,
    pub norm: NormAt,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BertPlanHeader {
    pub key: PlanKey,
    pub model_path: String,
    pub shape: Shape,
    /// The model's GELU; the engine computes cuBLASLt's (the tanh form, as NVIDIA's BERT plugin
    /// does), which the build's check against the CPU engine covers.
    pub model_gelu: String,
    pub embeddings: EmbeddingsAt,
    pub layers: Vec<LayerAt>,
    /// `[2, hidden]` fp16 weight (start row, end row) and fp32 bias.
    pub qa: LinearAt,
    pub blob_len: usize,
    pub blob_sha256: String,
    /// The build's comparison with the CPU engine.
    pub verification: String,
}

impl Header for BertPlanHeader {
    fn blob_len(&self) -> usize {
        self.blob_len
    }
    fn blob_sha256(&self) -> &str {
        &self.blob_sha256
    }
}

const ALIGN: usize = 256;

#[derive(Default)]
struct Blob(Vec<u8>);

impl Blob {
    fn start(&mut self) -> usize {
        self.0.resize(self.0.len().next_multiple_of(ALIGN), 0);
        self.0.len()
    }

    fn f16(&mut self, values: impl IntoIterator<Item = f32>) -> usize {
        let at = self.start();
        self.0.extend(values.into_iter().flat_map(|v| half::f16::from_f32(v).to_le_bytes()));
        at
    }

    fn f32(&mut self, values: &[f32]) -> usize {
        let at = self.start();
        self.0.extend(values.iter().flat_map(|v| v.to_le_bytes()));
        at
    }

    /// Linears stacked along their outputs, each transposed to `[outputs, inputs]`; `int8` or fp16.
    fn linears(&mut self, parts: &[&Linear], bias_f32: bool, int8: bool) -> LinearAt {
        let inputs = parts[0].inputs;
        let outputs = parts.iter().map(|l| l.outputs).sum();
        if int8 {
            let q = QuantizedWeight::of(parts);
            let weight = self.start();
            self.0.extend(q.values.iter().map(|&v| v as u8));
            let scales = self.f32(&q.scales);
            let bias = self.f32(&parts.iter().flat_map(|l| l.bias.iter().copied()).collect::<Vec<_>>());
            return LinearAt { weight, bias, outputs, inputs, int8: Some(Int8At { scales }) };
        }
        let weight = self.f16(parts.iter().flat_map(|l| (0..l.outputs).flat_map(move |o| (0..inputs).map(move |i| l.weight[i * l.outputs + o]))));
        let biases: Vec<f32> = parts.iter().flat_map(|l| l.bias.iter().copied()).collect();
        let bias = if bias_f32 { self.f32(&biases) } else { self.f16(biases) };
        LinearAt { weight, bias, outputs, inputs, int8: None }
    }

    fn norm(&mut self, n: &LayerNorm) -> NormAt {
        NormAt { gamma: self.f32(&n.gamma), beta: self.f32(&n.beta), epsilon: n.epsilon }
    }
}

/// Why this engine cannot run `bert`, if it cannot: its kernels take a warp per token (hidden a
/// multiple of 64) and tensor-core tiles of 16 (head size a multiple of 16).
pub fn unsupported(bert: &Bert) -> Option<String> {
    let head = bert.head_size();
    if !bert.hidden.is_multiple_of(64) || !head.is_multiple_of(16) || bert.hidden != head * bert.heads {
        return Some(format!(
            "hidden size {} with {} heads of {head}: the GPU BERT engine needs a hidden size that is a multiple of 64 and heads whose size is a multiple of 16",
            bert.hidden, bert.heads
        ));
    }
    if bert.qa.outputs != 2 {
        return Some(format!("the answer head has {} outputs, not 2 (start and end logits)", bert.qa.outputs));
    }
    None
}

/// The blob and the header (key and model path still to be filled in by the builder, checksum
/// filled in here): the encoder's linears in int8 (`int8`) or fp16.
pub fn lay_out(bert: &Bert, key: PlanKey, model_path: String, int8: bool) -> Result<(BertPlanHeader, Vec<u8>), GpuError> {
    if let Some(why) = unsupported(bert) {
        return Err(GpuError::Network(why));
    }
    let mut blob = Blob::default();
    let e = &bert.embeddings;
    let embeddings = EmbeddingsAt {
        words: blob.f16(e.words.iter().copied()),
        positions: blob.f16(e.positions.iter().copied()),
        token_types: blob.f16(e.token_types.iter().copied()),
        norm: blob.norm(&e.norm),
    };
    let layers = bert
        .layers
        .iter()
        .map(|l| LayerAt {
            qkv: blob.linears(&[&l.query, &l.key, &l.value], false, int8),
            attention_output: blob.linears(&[&l.attention_output], false, int8),
            attention_norm: blob.norm(&l.attention_norm),
            intermediate: blob.linears(&[&l.intermediate], false, int8),
            output: blob.linears(&[&l.output], false, int8),
            output_norm: blob.norm(&l.output_norm),
        })
        .collect();
    let qa = blob.linears(&[&bert.qa], true, false);
    let shape = Shape {
        hidden: bert.hidden,
        heads: bert.heads,
        intermediate: bert.intermediate,
        layers: bert.layers.len(),
        vocab: bert.vocab(),
        max_positions: bert.max_positions(),
        token_types: e.token_types.len() / bert.hidden,
    };
    let model_gelu = match bert.gelu {
        Gelu::Erf => "erf",
        Gelu::Tanh => "tanh",
    };
    let blob = blob.0;
    let header = BertPlanHeader {
        key,
        model_path,
        shape,
        model_gelu: model_gelu.into(),
        embeddings,
        layers,
        qa,
        blob_len: blob.len(),
        blob_sha256: sha256_hex(&blob),
        verification: String::new(),
    };
    Ok((header, blob))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::bert::gpu::import::import;
    use crate::benchmarks::bert::model::{BertShape, bert};
    use crate::engines::gpu::plan::{FORMAT_VERSION, Plan, PlanStatus, check, require_fresh};

    fn key() -> PlanKey {
        PlanKey {
            format_version: FORMAT_VERSION,
            model_sha256: "cd".repeat(32),
            gpu_name: "NVIDIA H200".into(),
            compute_capability: "9.0".into(),
            cuda_driver_version: 13000,
            cudnn_version: 0,
            cublaslt_version: 130000,
            batch_size: 64,
            precision: crate::engines::ElementType::F16,
            input: "int32 3x384".into(),
            workspace_bytes: 1 << 25,
            calibration_sha256: String::new(),
        }
    }

    fn f16_at(blob: &[u8], at: usize, i: usize) -> f32 {
        half::f16::from_le_bytes([blob[at + 2 * i], blob[at + 2 * i + 1]]).to_f32()
    }

    #[test]
    fn weights_are_laid_out_transposed_stacked_and_round_trip_through_a_plan_file() {
        let shape = BertShape { vocab: 40, hidden: 64, heads: 4, layers: 2, intermediate: 128, max_positions: 96 };
        let b = import(&bert(&shape, 7)).unwrap();
        let (header, blob) = lay_out(&b, key(), "bert.onnx".into(), false).unwrap();
        assert_eq!(header.shape, Shape { hidden: 64, heads: 4, intermediate: 128, layers: 2, vocab: 40, max_positions: 96, token_types: 2 });
        assert_eq!(header.model_gelu, "erf");
        let l = &header.layers[1];
        assert_eq!((l.qkv.outputs, l.qkv.inputs, l.intermediate.outputs, l.output.inputs), (192, 64, 128, 128));
        // Row o of the stacked QKV weight is output o: query outputs, then key, then value.
        let src = &b.layers[1];
        for (o, i) in [(0, 0), (5, 17), (64 + 3, 9), (128 + 63, 63)] {
            let (lin, oo) = match o / 64 {
                0 => (&src.query, o),
                1 => (&src.key, o - 64),
                _ => (&src.value, o - 128),
            };
            let want = lin.weight[i * lin.outputs + oo];
            assert!((f16_at(&blob, l.qkv.weight, o * 64 + i) - want).abs() <= want.abs() * 1e-3 + 1e-4, "qkv[{o}][{i}]");
        }
        assert!((f16_at(&blob, l.qkv.bias, 64 + 1) - src.key.bias[1]).abs() < 1e-3);
        // The answer head: [2, hidden], row 1 the end logits' weights.
        let want = b.qa.weight[5 * 2 + 1];
        assert!((f16_at(&blob, header.qa.weight, 64 + 5) - want).abs() <= want.abs() * 1e-3 + 1e-4);
        assert!(blob.len() == header.blob_len && [header.embeddings.positions, l.output_norm.beta, header.qa.bias].iter().all(|o| o % ALIGN == 0));

        let plan = Plan { header: header.clone(), blob };
        let back: Plan<BertPlanHeader> = Plan::from_bytes(&plan.to_bytes()).unwrap();
        assert_eq!(back.header, header);
    }

    #[test]
    fn int8_plans_hold_per_channel_int8_weights_and_their_scales() {
        let shape = BertShape { vocab: 40, hidden: 64, heads: 4, layers: 2, intermediate: 128, max_positions: 96 };
        let b = import(&bert(&shape, 7)).unwrap();
        let (header, blob) = lay_out(&b, key(), "bert.onnx".into(), true).unwrap();
        let l = &header.layers[1];
        let q = l.intermediate.int8.expect("an int8 linear");
        assert!([l.qkv, l.attention_output, l.output].iter().all(|l| l.int8.is_some()), "every encoder linear is int8");
        assert_eq!(header.qa.int8, None, "the answer head stays in floating point");
        // Row o of the weight is output o quantized at its channel's scale.
        let want = QuantizedWeight::of(&[&b.layers[1].intermediate]);
        let scale = |o: usize| f32::from_le_bytes(blob[q.scales + 4 * o..q.scales + 4 * o + 4].try_into().unwrap());
        for (o, i) in [(0, 0), (5, 17), (127, 63)] {
            assert_eq!(blob[l.intermediate.weight + o * 64 + i] as i8, want.values[o * 64 + i]);
            assert_eq!(scale(o), want.scales[o]);
        }
    }

    #[test]
    fn stale_and_corrupt_plans_are_refused_with_the_command_that_rebuilds_them() {
        let shape = BertShape { vocab: 40, hidden: 64, heads: 4, layers: 1, intermediate: 128, max_positions: 64 };
        let (header, blob) = lay_out(&import(&bert(&shape, 3)).unwrap(), key(), "bert.onnx".into(), false).unwrap();
        let dir = std::env::temp_dir().join(format!("mlperf-bert-plan-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("gpu-bert-fp16-b64.default.plan");
        let bytes = Plan { header, blob }.to_bytes();
        std::fs::write(&path, &bytes).unwrap();
        assert_eq!(check(&path, &key()), PlanStatus::Fresh);
        assert!(Plan::<BertPlanHeader>::load(&path).is_ok());

        let other_gpu = PlanKey { gpu_name: "NVIDIA H100 80GB HBM3".into(), ..key() };
        let err = require_fresh(&path, &other_gpu).unwrap_err().to_string();
        assert!(err.contains("is stale (gpu_name: plan has \"NVIDIA H200\"") && err.contains("run `mlperf generate_engines`"), "{err}");

        let mut flipped = bytes.clone();
        *flipped.last_mut().unwrap() ^= 1;
        std::fs::write(&path, &flipped).unwrap();
        let err = Plan::<BertPlanHeader>::load(&path).unwrap_err().to_string();
        assert!(err.contains("is corrupt") && err.contains("checksum") && err.contains("mlperf generate_engines"), "{err}");
        std::fs::write(&path, &bytes[..12]).unwrap();
        let err = require_fresh(&path, &key()).unwrap_err().to_string();
        assert!(err.contains("is corrupt") && err.contains("run `mlperf generate_engines`"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn shapes_the_kernels_cannot_run_are_refused_with_the_reason() {
        let shape = BertShape { vocab: 40, hidden: 32, heads: 2, layers: 1, intermediate: 64, max_positions: 64 };
        let b = import(&bert(&shape, 7)).unwrap();
        let err = lay_out(&b, key(), "m".into(), false).unwrap_err().to_string();
        assert!(err.contains("hidden size 32 with 2 heads of 16") && err.contains("multiple of 64"), "{err}");
    }
}
