//! A BERT question-answering model with seeded weights, written as ONNX protobuf messages with the
//! interface and operator set of MLPerf's BERT-Large (`model.onnx`, exported from Hugging Face's
//! `BertForQuestionAnswering`):
//!
//! - inputs `input_ids`, `input_mask`, `segment_ids`: int64 `[N, S]` (the reference SUT's feed);
//! - outputs `output_start_logits`, `output_end_logits`: f32 `[N, S]`;
//! - word, position and token-type embeddings (`Gather`), layer norms spelled out as the exporter
//!   writes them (`ReduceMean`, `Sub`, `Pow`, `Sqrt`, `Div`, `Mul`, `Add`), the attention mask as
//!   `(1 - mask) * -10000` added to the scores, multi-head attention as `MatMul` / `Reshape` /
//!   `Transpose` / `Softmax`, and the erf form of GELU (`Div`, `Erf`, `Add`, `Mul`).
//!
//! Only the sizes differ (a few narrow layers), so the CPU engine runs it fast enough for CI, and
//! it reads any sequence length up to `max_positions` (the position table is sliced to the input's
//! length, as the exported model does). Weights are uniform with variance `1 / fan_in`, which keeps
//! activations O(1) through the layers, except the two projections back into the residual stream,
//! scaled by [`RESIDUAL_BRANCH_GAIN`]: with full-size branches a deep random BERT collapses every
//! token onto the same vector (at 24 layers its logits differed between tokens by 3e-4, below
//! fp16 rounding), where a trained one keeps tokens apart. The question-answering head gives
//! logits of unit scale, so answers are well separated and an engine's rounding rarely changes one.

use tract_onnx::pb;
use tract_onnx::pb::tensor_proto::DataType;

use crate::engines::onnx_writer::{Dim, GraphWriter, attr_int, attr_ints, typed_value_info};
use crate::engines::synthetic::rng::SplitMix64;

/// The model's graph inputs, in the reference SUT's order.
pub const INPUT_NAMES: [&str; 3] = ["input_ids", "input_mask", "segment_ids"];
/// The model's graph outputs: start and end logits.
pub const OUTPUT_NAMES: [&str; 2] = ["output_start_logits", "output_end_logits"];
/// Layer norm epsilon (BERT's).
const LAYER_NORM_EPSILON: f32 = 1e-12;
/// What the attention mask adds to the scores of padding positions (BERT's).
const MASKED_SCORE: f32 = -10_000.0;
/// Scale of the attention-output and FFN-output weights (see the module notes).
const RESIDUAL_BRANCH_GAIN: f32 = 0.2;

/// The sizes of a BERT model (BERT-Large: 30522, 1024, 16, 24, 4096, 512).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BertShape {
    pub vocab: usize,
    pub hidden: usize,
    pub heads: usize,
    pub layers: usize,
    pub intermediate: usize,
    pub max_positions: usize,
}

/// The whole model as an ONNX `ModelProto`.
pub fn bert(shape: &BertShape, seed: u64) -> pb::ModelProto {
    assert!(shape.hidden.is_multiple_of(shape.heads), "hidden size divisible by the head count");
    let mut g = Builder { seed, onnx: GraphWriter::default() };
    let [ids, mask, segments] = INPUT_NAMES;
    let h = shape.hidden;

    // Embeddings: words + token types + positions 0..S, then a layer norm.
    let words = g.weight("bert.embeddings.word_embeddings.weight", &[shape.vocab, h], 1.0);
    let types = g.weight("bert.embeddings.token_type_embeddings.weight", &[2, h], 1.0);
    let positions = g.weight("bert.embeddings.position_embeddings.weight", &[shape.max_positions, h], 1.0);
    let word_emb = g.node("Gather", "embeddings.words", &[&words, ids], vec![]);
    let type_emb = g.node("Gather", "embeddings.types", &[&types, segments], vec![]);
    let input_shape = g.node("Shape", "embeddings.input_shape", &[ids], vec![]);
    let one = g.onnx.constant_i64("const.index1", &[1], &[1]);
    let seq_len = g.node("Gather", "embeddings.seq_len", &[&input_shape, &one], vec![attr_int("axis", 0)]);
    let all_positions = g.onnx.constant_i64("bert.embeddings.position_ids", &[shape.max_positions], &(0..shape.max_positions as i64).collect::<Vec<_>>());
    let zero = g.onnx.constant_i64("const.zero1", &[1], &[0]);
    let position_ids = g.node("Slice", "embeddings.position_ids", &[&all_positions, &zero, &seq_len, &zero], vec![]);
    let pos_emb = g.node("Gather", "embeddings.positions", &[&positions, &position_ids], vec![]);
    let sum = g.node("Add", "embeddings.add1", &[&word_emb, &type_emb], vec![]);
    let sum = g.node("Add", "embeddings.add2", &[&sum, &pos_emb], vec![]);
    let mut x = g.layer_norm("bert.embeddings.LayerNorm", &sum, h);

    // The additive attention mask [N, 1, 1, S].
    let axes12 = g.onnx.constant_i64("const.axes12", &[2], &[1, 2]);
    let mask4 = g.node("Unsqueeze", "mask.unsqueeze", &[mask, &axes12], vec![]);
    let mask4 = g.node("Cast", "mask.cast", &[&mask4], vec![attr_int("to", DataType::Float as i64)]);
    let unit = g.scalar("const.one", 1.0);
    let inverted = g.node("Sub", "mask.invert", &[&unit, &mask4], vec![]);
    let masked = g.scalar("const.masked_score", MASKED_SCORE);
    let score_bias = g.node("Mul", "mask.bias", &[&inverted, &masked], vec![]);

    for layer in 0..shape.layers {
        x = g.encoder_layer(&format!("bert.encoder.layer.{layer}"), &x, &score_bias, shape);
    }

    // Question-answering head: [N, S, 2], split into start and end logits.
    let logits = g.linear("qa_outputs", &x, h, 2);
    for (i, name) in OUTPUT_NAMES.iter().enumerate() {
        let index = g.onnx.constant_i64(&format!("const.logit{i}"), &[], &[i as i64]);
        g.node("Gather", name, &[&logits, &index], vec![attr_int("axis", 2)]);
    }

    let int64 = |name: &str| typed_value_info(name, DataType::Int64, vec![Dim::Param("N"), Dim::Param("S")]);
    let float = |name: &str| typed_value_info(name, DataType::Float, vec![Dim::Param("N"), Dim::Param("S")]);
    g.onnx.into_model(
        format!("synthetic-bert-{}x{}", shape.layers, shape.hidden),
        format!("Synthetic BERT question answering (MLPerf BERT interface), seed {seed}, {shape:?}"),
        INPUT_NAMES.iter().map(|n| int64(n)).collect(),
        OUTPUT_NAMES.iter().map(|n| float(n)).collect(),
    )
}

struct Builder {
    seed: u64,
    onnx: GraphWriter,
}

impl Builder {
    fn node(&mut self, op: &str, name: &str, inputs: &[&str], attribute: Vec<pb::AttributeProto>) -> String {
        self.onnx.node(op, name, inputs, attribute)
    }

    fn scalar(&mut self, name: &str, value: f32) -> String {
        self.onnx.constant(name, &[], &[value])
    }

    /// Uniform weights of standard deviation `sd`, seeded by their name.
    fn weight(&mut self, name: &str, dims: &[usize], sd: f32) -> String {
        let mut rng = SplitMix64::derive(self.seed, name, 0);
        let bound = sd * 3f32.sqrt();
        let values: Vec<f32> = (0..dims.iter().product::<usize>()).map(|_| rng.symmetric() * bound).collect();
        self.onnx.constant(name, dims, &values)
    }

    /// `x @ W + b` with `W: [inputs, outputs]` of variance `1 / inputs`.
    fn linear(&mut self, name: &str, x: &str, inputs: usize, outputs: usize) -> String {
        self.scaled_linear(name, x, inputs, outputs, 1.0)
    }

    /// `x @ W + b` with `W` of standard deviation `gain / sqrt(inputs)`.
    fn scaled_linear(&mut self, name: &str, x: &str, inputs: usize, outputs: usize, gain: f32) -> String {
        let w = self.weight(&format!("{name}.weight"), &[inputs, outputs], gain * (inputs as f32).recip().sqrt());
        let b = self.weight(&format!("{name}.bias"), &[outputs], 0.1);
        let y = self.node("MatMul", &format!("{name}.matmul"), &[x, &w], vec![]);
        self.node("Add", &format!("{name}.add"), &[&y, &b], vec![])
    }

    /// Layer norm over the last axis, as the exporter spells it out.
    fn layer_norm(&mut self, name: &str, x: &str, width: usize) -> String {
        let last = vec![attr_ints("axes", &[-1]), attr_int("keepdims", 1)];
        let mean = self.node("ReduceMean", &format!("{name}.mean"), &[x], last.clone());
        let centred = self.node("Sub", &format!("{name}.centre"), &[x, &mean], vec![]);
        let two = self.scalar(&format!("{name}.two"), 2.0);
        let squares = self.node("Pow", &format!("{name}.square"), &[&centred, &two], vec![]);
        let variance = self.node("ReduceMean", &format!("{name}.variance"), &[&squares], last);
        let epsilon = self.scalar(&format!("{name}.epsilon"), LAYER_NORM_EPSILON);
        let variance = self.node("Add", &format!("{name}.add_epsilon"), &[&variance, &epsilon], vec![]);
        let deviation = self.node("Sqrt", &format!("{name}.sqrt"), &[&variance], vec![]);
        let normal = self.node("Div", &format!("{name}.normalise"), &[&centred, &deviation], vec![]);
        let gamma = self.onnx.constant(&format!("{name}.weight"), &[width], &vec![1.0; width]);
        let beta = self.weight(&format!("{name}.bias"), &[width], 0.1);
        let scaled = self.node("Mul", &format!("{name}.scale"), &[&normal, &gamma], vec![]);
        self.node("Add", &format!("{name}.shift"), &[&scaled, &beta], vec![])
    }

    /// GELU, erf form: `x * 0.5 * (1 + erf(x / sqrt(2)))`.
    fn gelu(&mut self, name: &str, x: &str) -> String {
        let root2 = self.scalar(&format!("{name}.sqrt2"), std::f32::consts::SQRT_2);
        let scaled = self.node("Div", &format!("{name}.div"), &[x, &root2], vec![]);
        let erf = self.node("Erf", &format!("{name}.erf"), &[&scaled], vec![]);
        let one = self.scalar(&format!("{name}.one"), 1.0);
        let shifted = self.node("Add", &format!("{name}.add"), &[&erf, &one], vec![]);
        let product = self.node("Mul", &format!("{name}.mul"), &[x, &shifted], vec![]);
        let half = self.scalar(&format!("{name}.half"), 0.5);
        self.node("Mul", &format!("{name}.half_mul"), &[&product, &half], vec![])
    }

    /// `[N, S, H]` to `[N, heads, S, H / heads]` (or, `transposed`, `[N, heads, H / heads, S]`).
    fn split_heads(&mut self, name: &str, x: &str, shape: &BertShape, transposed: bool) -> String {
        let dims = self.onnx.constant_i64(&format!("{name}.shape"), &[4], &[0, 0, shape.heads as i64, (shape.hidden / shape.heads) as i64]);
        let split = self.node("Reshape", &format!("{name}.reshape"), &[x, &dims], vec![]);
        let perm: &[i64] = if transposed { &[0, 2, 3, 1] } else { &[0, 2, 1, 3] };
        self.node("Transpose", &format!("{name}.transpose"), &[&split], vec![attr_ints("perm", perm)])
    }

    fn encoder_layer(&mut self, p: &str, x: &str, score_bias: &str, shape: &BertShape) -> String {
        let h = shape.hidden;
        let q = self.linear(&format!("{p}.attention.self.query"), x, h, h);
        let k = self.linear(&format!("{p}.attention.self.key"), x, h, h);
        let v = self.linear(&format!("{p}.attention.self.value"), x, h, h);
        let q = self.split_heads(&format!("{p}.q"), &q, shape, false);
        let k = self.split_heads(&format!("{p}.k"), &k, shape, true);
        let v = self.split_heads(&format!("{p}.v"), &v, shape, false);
        let scores = self.node("MatMul", &format!("{p}.scores"), &[&q, &k], vec![]);
        let root = self.scalar(&format!("{p}.sqrt_head"), ((h / shape.heads) as f32).sqrt());
        let scores = self.node("Div", &format!("{p}.scaled_scores"), &[&scores, &root], vec![]);
        let scores = self.node("Add", &format!("{p}.masked_scores"), &[&scores, score_bias], vec![]);
        let probs = self.node("Softmax", &format!("{p}.probs"), &[&scores], vec![attr_int("axis", -1)]);
        let context = self.node("MatMul", &format!("{p}.context"), &[&probs, &v], vec![]);
        let context = self.node("Transpose", &format!("{p}.context.transpose"), &[&context], vec![attr_ints("perm", &[0, 2, 1, 3])]);
        let merged = self.onnx.constant_i64(&format!("{p}.context.shape"), &[3], &[0, 0, h as i64]);
        let context = self.node("Reshape", &format!("{p}.context.reshape"), &[&context, &merged], vec![]);
        let attended = self.scaled_linear(&format!("{p}.attention.output.dense"), &context, h, h, RESIDUAL_BRANCH_GAIN);
        let attended = self.node("Add", &format!("{p}.attention.residual"), &[&attended, x], vec![]);
        let attended = self.layer_norm(&format!("{p}.attention.output.LayerNorm"), &attended, h);
        let inner = self.linear(&format!("{p}.intermediate.dense"), &attended, h, shape.intermediate);
        let inner = self.gelu(&format!("{p}.intermediate.gelu"), &inner);
        let out = self.scaled_linear(&format!("{p}.output.dense"), &inner, shape.intermediate, h, RESIDUAL_BRANCH_GAIN);
        let out = self.node("Add", &format!("{p}.output.residual"), &[&out, &attended], vec![]);
        self.layer_norm(&format!("{p}.output.LayerNorm"), &out, h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn has_the_mlperf_interface_and_operator_set() {
        let shape = BertShape { vocab: 30, hidden: 16, heads: 2, layers: 3, intermediate: 32, max_positions: 64 };
        let model = bert(&shape, 1);
        let graph = model.graph.unwrap();
        let names = |v: &[pb::ValueInfoProto]| v.iter().map(|i| i.name.clone()).collect::<Vec<_>>();
        assert_eq!(names(&graph.input), INPUT_NAMES);
        assert_eq!(names(&graph.output), OUTPUT_NAMES);
        let mut ops: Vec<&str> = graph.node.iter().map(|n| n.op_type.as_str()).collect();
        ops.sort_unstable();
        ops.dedup();
        assert_eq!(
            ops,
            ["Add", "Cast", "Div", "Erf", "Gather", "MatMul", "Mul", "Pow", "ReduceMean", "Reshape", "Shape", "Slice", "Softmax", "Sqrt", "Sub", "Transpose", "Unsqueeze"]
        );
        assert_eq!(graph.node.iter().filter(|n| n.op_type == "Softmax").count(), 3, "one attention per layer");
    }
}
