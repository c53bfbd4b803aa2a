//! ONNX import of BERT question-answering models (MLPerf's BERT-Large, the synthetic BERT) into
//! typed weights: what a GPU BERT engine lays out on the device. Plain CPU code, tested in CI.
//!
//! Exporters name things differently (`bert.encoder.layer.3.attention.self.query.weight`,
//! `onnx::MatMul_1234`), so the import goes by dataflow, never by name:
//!
//! - a **linear** is a `MatMul` (or `Gemm`) with a constant 2-D weight, with the constant vector
//!   `Add`ed to its output as its bias;
//! - a **layer norm** is `LayerNormalization`, or the exporter's spelled-out chain `ReduceMean`,
//!   `Sub`, `Pow`, `ReduceMean`, `Add` (epsilon), `Sqrt`, `Div`, `Mul` (gamma), `Add` (beta);
//! - an **attention** is a `MatMul` of two computed values feeding a `Softmax` (the scores), whose
//!   operands trace back to the query and key linears, and the `MatMul` of the probabilities with
//!   the value linear; the head count comes from the `Reshape` that splits the query into heads;
//! - the **embeddings** are `Gather`s from constant tables, told apart by their indices (the
//!   `input_ids` and `segment_ids` inputs; anything else indexes positions).
//!
//! Linears other than the attention's come in graph order: the attention output, the intermediate
//! and the output projection of each layer, then the question-answering head (`[hidden, 2]`,
//! column 0 the start logits). Anything that does not fit is an error naming the node.

use std::collections::HashMap;

use tract_onnx::pb;

use crate::benchmarks::bert::cpu::Role;
use crate::engines::gpu::GpuError;
use crate::engines::onnx_reader::{attr_float, attr_int, f32_values, i64_values};

/// `y = x W + b` with `W` row-major `[inputs, outputs]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Linear {
    pub inputs: usize,
    pub outputs: usize,
    pub weight: Vec<f32>,
    pub bias: Vec<f32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct LayerNorm {
    pub gamma: Vec<f32>,
    pub beta: Vec<f32>,
    pub epsilon: f32,
}

/// The GELU the model computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gelu {
    /// `x / 2 * (1 + erf(x / sqrt(2)))` (BERT's).
    Erf,
    /// The tanh approximation.
    Tanh,
}

#[derive(Clone, Debug, PartialEq)]
pub struct EncoderLayer {
    pub query: Linear,
    pub key: Linear,
    pub value: Linear,
    pub attention_output: Linear,
    pub attention_norm: LayerNorm,
    pub intermediate: Linear,
    pub output: Linear,
    pub output_norm: LayerNorm,
}

/// Embedding tables, row-major `[rows, hidden]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Embeddings {
    pub words: Vec<f32>,
    pub positions: Vec<f32>,
    pub token_types: Vec<f32>,
    pub norm: LayerNorm,
}

/// A BERT question-answering model's weights.
#[derive(Clone, Debug, PartialEq)]
pub struct Bert {
    pub hidden: usize,
    pub heads: usize,
    pub intermediate: usize,
    pub embeddings: Embeddings,
    pub layers: Vec<EncoderLayer>,
    /// `[hidden, 2]`: start and end logits.
    pub qa: Linear,
    pub gelu: Gelu,
}

impl Bert {
    pub fn head_size(&self) -> usize {
        self.hidden / self.heads
    }

    pub fn vocab(&self) -> usize {
        self.embeddings.words.len() / self.hidden
    }

    pub fn max_positions(&self) -> usize {
        self.embeddings.positions.len() / self.hidden
    }
}

/// The graph with its constants (initializers and `Constant` nodes) and who produces and reads
/// each value.
struct Graph<'a> {
    nodes: &'a [pb::NodeProto],
    inputs: Vec<&'a str>,
    constants: HashMap<&'a str, &'a pb::TensorProto>,
    producer: HashMap<&'a str, usize>,
    consumers: HashMap<&'a str, Vec<usize>>,
}

impl<'a> Graph<'a> {
    fn new(graph: &'a pb::GraphProto) -> Graph<'a> {
        let mut constants: HashMap<&str, &pb::TensorProto> = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
        let mut producer = HashMap::new();
        let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
        for (i, node) in graph.node.iter().enumerate() {
            if node.op_type == "Constant"
                && let (Some(out), Some(t)) = (node.output.first(), node.attribute.iter().find(|a| a.name == "value").and_then(|a| a.t.as_ref()))
            {
                constants.insert(out.as_str(), t);
            }
            for out in &node.output {
                producer.insert(out.as_str(), i);
            }
            for input in &node.input {
                consumers.entry(input.as_str()).or_default().push(i);
            }
        }
        let inputs = graph.input.iter().map(|i| i.name.as_str()).filter(|n| !constants.contains_key(n)).collect();
        Graph { nodes: &graph.node, inputs, constants, producer, consumers }
    }

    fn name(&self, i: usize) -> String {
        let n = &self.nodes[i];
        format!("{} node {:?}", n.op_type, if n.name.is_empty() { n.output.first().map_or("", String::as_str) } else { &n.name })
    }

    fn constant(&self, value: &str) -> Option<&'a pb::TensorProto> {
        self.constants.get(value).copied()
    }

    /// The one node reading `value`, if exactly one does and it is an `op`.
    fn sole(&self, value: &str, op: &str) -> Option<usize> {
        match self.consumers.get(value).map(Vec::as_slice) {
            Some(&[i]) if self.nodes[i].op_type == op => Some(i),
            _ => None,
        }
    }

    /// The constant operand of a binary node, and the other operand.
    fn constant_operand(&self, i: usize) -> Option<(&'a pb::TensorProto, &'a str)> {
        let n = &self.nodes[i];
        match (self.constant(&n.input[0]), n.input.get(1).and_then(|v| self.constant(v))) {
            (None, Some(c)) => Some((c, &n.input[0])),
            (Some(c), None) => Some((c, n.input.get(1)?)),
            _ => None,
        }
    }

    fn scalar(&self, t: &pb::TensorProto) -> Option<f32> {
        f32_values(t).ok().filter(|v| v.len() == 1).map(|v| v[0])
    }
}

/// A linear found in the graph: its `MatMul`, the value after its bias, and its weights.
struct FoundLinear {
    node: usize,
    output: String,
    linear: Linear,
}

fn find_linears(g: &Graph) -> Result<Vec<FoundLinear>, GpuError> {
    let mut found = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        let gemm = n.op_type == "Gemm";
        if !(n.op_type == "MatMul" || gemm) {
            continue;
        }
        let Some(w) = n.input.get(1).and_then(|v| g.constant(v)) else { continue };
        let dims: Vec<usize> = w.dims.iter().map(|&d| d as usize).collect();
        let [rows, cols] = dims[..] else { return Err(GpuError::Network(format!("{}: a {}-D weight; linears have 2-D weights", g.name(i), dims.len()))) };
        let values = f32_values(w).map_err(|e| GpuError::Network(format!("{}: {e}", g.name(i))))?;
        let transposed = gemm && attr_int(n, "transB") == Some(1);
        if gemm && (attr_int(n, "transA") == Some(1) || attr_float(n, "alpha").unwrap_or(1.0) != 1.0 || attr_float(n, "beta").unwrap_or(1.0) != 1.0) {
            return Err(GpuError::Network(format!("{}: only Gemm with alpha = beta = 1 and no transA is a linear", g.name(i))));
        }
        let (inputs, outputs) = if transposed { (cols, rows) } else { (rows, cols) };
        let weight = if transposed { (0..inputs).flat_map(|r| (0..outputs).map(move |c| (r, c))).map(|(r, c)| values[c * inputs + r]).collect() } else { values };
        let bias_of = |t: &pb::TensorProto| f32_values(t).ok().filter(|b| b.len() == outputs);
        let (bias, output) = if let Some(b) = n.input.get(2).and_then(|v| g.constant(v)).and_then(bias_of) {
            (b, n.output[0].clone())
        } else if let Some(add) = g.sole(&n.output[0], "Add")
            && let Some(b) = g.constant_operand(add).and_then(|(t, _)| bias_of(t))
        {
            (b, g.nodes[add].output[0].clone())
        } else {
            (vec![0.0; outputs], n.output[0].clone())
        };
        found.push(FoundLinear { node: i, output, linear: Linear { inputs, outputs, weight, bias } });
    }
    Ok(found)
}

/// Layer norms in graph order, by the node that starts each.
fn find_layer_norms(g: &Graph) -> Result<Vec<LayerNorm>, GpuError> {
    let mut norms = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if n.op_type == "LayerNormalization" {
            let operand = |k: usize| n.input.get(k).and_then(|v| g.constant(v)).ok_or_else(|| GpuError::Network(format!("{}: input {k} is not a constant", g.name(i))));
            let gamma = f32_values(operand(1)?)?;
            let beta = if n.input.len() > 2 { f32_values(operand(2)?)? } else { vec![0.0; gamma.len()] };
            norms.push(LayerNorm { gamma, beta, epsilon: attr_float(n, "epsilon").unwrap_or(1e-5) });
            continue;
        }
        // The spelled-out chain starts at the ReduceMean of x (not the one of the squares).
        if n.op_type != "ReduceMean" || g.producer.get(n.input[0].as_str()).is_some_and(|&p| g.nodes[p].op_type == "Pow") {
            continue;
        }
        let x = n.input[0].as_str();
        let Some(sub) = g.consumers.get(n.output[0].as_str()).and_then(|c| c.iter().copied().find(|&c| g.nodes[c].op_type == "Sub" && g.nodes[c].input[0] == x)) else {
            continue;
        };
        let broken = |what: &str| GpuError::Network(format!("{}: the layer norm starting here has no {what}", g.name(i)));
        let centred = g.nodes[sub].output[0].as_str();
        let pow = g.consumers.get(centred).and_then(|c| c.iter().copied().find(|&c| g.nodes[c].op_type == "Pow")).ok_or_else(|| broken("Pow"))?;
        let mean_sq = g.sole(&g.nodes[pow].output[0], "ReduceMean").ok_or_else(|| broken("ReduceMean of the squares"))?;
        let add_eps = g.sole(&g.nodes[mean_sq].output[0], "Add").ok_or_else(|| broken("epsilon Add"))?;
        let epsilon = g.constant_operand(add_eps).and_then(|(t, _)| g.scalar(t)).ok_or_else(|| broken("constant epsilon"))?;
        let sqrt = g.sole(&g.nodes[add_eps].output[0], "Sqrt").ok_or_else(|| broken("Sqrt"))?;
        let div = g.sole(&g.nodes[sqrt].output[0], "Div").filter(|&d| g.nodes[d].input[0] == centred).ok_or_else(|| broken("Div of the centred values"))?;
        let mul = g.sole(&g.nodes[div].output[0], "Mul").ok_or_else(|| broken("gamma Mul"))?;
        let gamma = f32_values(g.constant_operand(mul).ok_or_else(|| broken("constant gamma"))?.0)?;
        let add = g.sole(&g.nodes[mul].output[0], "Add").ok_or_else(|| broken("beta Add"))?;
        let beta = f32_values(g.constant_operand(add).ok_or_else(|| broken("constant beta"))?.0)?;
        norms.push(LayerNorm { gamma, beta, epsilon });
    }
    Ok(norms)
}

/// The linear a value comes from, through shape and scale operations, and the head count of the
/// first rank-4 `Reshape` on the way (`[.., heads, head_size]`).
fn trace_linear(g: &Graph, linears: &[FoundLinear], value: &str) -> Option<(usize, Option<usize>)> {
    let mut value = value;
    let mut heads = None;
    loop {
        if let Some(l) = linears.iter().position(|l| l.output == value) {
            return Some((l, heads));
        }
        let p = *g.producer.get(value)?;
        let n = &g.nodes[p];
        match n.op_type.as_str() {
            "Reshape" => {
                if heads.is_none()
                    && let Some(shape) = n.input.get(1).and_then(|v| g.constant(v)).and_then(|t| i64_values(t).ok())
                    && shape.len() == 4
                {
                    heads = usize::try_from(shape[2]).ok().filter(|&h| h > 0);
                }
                value = &n.input[0];
            }
            "Transpose" | "Identity" | "Cast" => value = &n.input[0],
            "Mul" | "Div" | "Add" => value = g.constant_operand(p)?.1,
            _ => return None,
        }
    }
}

/// The query, key and value linears of each attention, and the head count, in graph order.
fn find_attentions(g: &Graph, linears: &[FoundLinear]) -> Result<Vec<([usize; 3], usize)>, GpuError> {
    let mut attentions = Vec::new();
    for (i, n) in g.nodes.iter().enumerate() {
        if n.op_type != "Softmax" {
            continue;
        }
        // Back from the softmax to the scores MatMul, through the scale and the mask.
        let mut value = n.input[0].as_str();
        let scores = loop {
            let p = *g.producer.get(value).ok_or_else(|| GpuError::Network(format!("{}: no scores MatMul before it", g.name(i))))?;
            match g.nodes[p].op_type.as_str() {
                "MatMul" => break p,
                "Mul" | "Div" | "Add" | "Cast" => value = g.constant_operand(p).map_or(&g.nodes[p].input[0], |(_, v)| v),
                other => return Err(GpuError::Network(format!("{}: reached by {other}, not by the scores MatMul of an attention", g.name(i)))),
            }
        };
        let context = g.consumers.get(n.output[0].as_str()).and_then(|c| c.iter().copied().find(|&c| g.nodes[c].op_type == "MatMul"));
        let context = context.ok_or_else(|| GpuError::Network(format!("{}: its probabilities multiply no values", g.name(i))))?;
        let operand = |node: usize, k: usize, what: &str| {
            trace_linear(g, linears, &g.nodes[node].input[k]).ok_or_else(|| GpuError::Network(format!("{}: the {what} comes from no linear", g.name(node))))
        };
        let (q, heads) = operand(scores, 0, "query")?;
        let (k, _) = operand(scores, 1, "key")?;
        let (v, _) = operand(context, 1, "value")?;
        let heads = heads.ok_or_else(|| GpuError::Network(format!("{}: no Reshape into [.., heads, head_size] on the query", g.name(scores))))?;
        attentions.push(([q, k, v], heads));
    }
    Ok(attentions)
}

/// Imports a BERT question-answering model. See the module documentation.
pub fn import(model: &pb::ModelProto) -> Result<Bert, GpuError> {
    let graph = model.graph.as_ref().ok_or_else(|| GpuError::Network("the ONNX model has no graph".into()))?;
    let g = Graph::new(graph);
    let linears = find_linears(&g)?;
    let mut attentions = find_attentions(&g, &linears)?;
    attentions.sort_by_key(|([q, _, _], _)| linears[*q].node);
    let norms = find_layer_norms(&g)?;
    let layers = attentions.len();
    if layers == 0 {
        return Err(GpuError::Network("no attention (a Softmax of scores from two linears) in the model: not a BERT encoder".into()));
    }
    let heads = attentions[0].1;
    let hidden = linears[attentions[0].0[0]].linear.outputs;
    if norms.len() != 1 + 2 * layers {
        return Err(GpuError::Network(format!("{layers} attention layers need {} layer norms (embeddings + 2 per layer); the model has {}", 1 + 2 * layers, norms.len())));
    }
    let in_attention: Vec<usize> = attentions.iter().flat_map(|(qkv, _)| qkv.iter().copied()).collect();
    let others: Vec<&FoundLinear> = linears.iter().enumerate().filter(|(i, _)| !in_attention.contains(i)).map(|(_, l)| l).collect();
    if others.len() != 3 * layers + 1 {
        return Err(GpuError::Network(format!(
            "{layers} layers need {} more linears (attention output, intermediate, output per layer, and the answer head); the model has {}",
            3 * layers + 1,
            others.len()
        )));
    }
    let gelu = if graph.node.iter().any(|n| n.op_type == "Erf") {
        Gelu::Erf
    } else if graph.node.iter().any(|n| n.op_type == "Tanh") {
        Gelu::Tanh
    } else {
        return Err(GpuError::Network("no GELU (Erf or Tanh) in the model".into()));
    };

    let mut norms = norms.into_iter();
    let embedding_norm = norms.next().unwrap();
    let shape_error = |what: &str, l: &Linear, want: (usize, usize)| format!("{what} is {}x{}, expected {}x{}", l.inputs, l.outputs, want.0, want.1);
    let intermediate = others[1].linear.outputs;
    let mut encoder = Vec::with_capacity(layers);
    for (layer, (([q, k, v], h), rest)) in attentions.iter().zip(others.chunks(3)).enumerate() {
        let take = |i: usize| linears[i].linear.clone();
        let (query, key, value) = (take(*q), take(*k), take(*v));
        for (what, l, want) in [
            ("query", &query, (hidden, hidden)),
            ("key", &key, (hidden, hidden)),
            ("value", &value, (hidden, hidden)),
            ("attention output", &rest[0].linear, (hidden, hidden)),
            ("intermediate", &rest[1].linear, (hidden, intermediate)),
            ("output", &rest[2].linear, (intermediate, hidden)),
        ] {
            if (l.inputs, l.outputs) != want {
                return Err(GpuError::Network(format!("layer {layer}: {}", shape_error(what, l, want))));
            }
        }
        if *h != heads || !hidden.is_multiple_of(heads) {
            return Err(GpuError::Network(format!("layer {layer}: {h} heads (layer 0 has {heads}, hidden size {hidden})")));
        }
        encoder.push(EncoderLayer {
            query,
            key,
            value,
            attention_output: rest[0].linear.clone(),
            attention_norm: norms.next().unwrap(),
            intermediate: rest[1].linear.clone(),
            output: rest[2].linear.clone(),
            output_norm: norms.next().unwrap(),
        });
    }
    let qa = others.last().unwrap().linear.clone();
    if (qa.inputs, qa.outputs) != (hidden, 2) {
        return Err(GpuError::Network(format!("the answer head {}", shape_error("", &qa, (hidden, 2)).trim_start())));
    }
    let embeddings = find_embeddings(&g, hidden, embedding_norm)?;
    Ok(Bert { hidden, heads, intermediate, embeddings, layers: encoder, qa, gelu })
}

/// The three embedding tables, by what indexes them.
fn find_embeddings(g: &Graph, hidden: usize, norm: LayerNorm) -> Result<Embeddings, GpuError> {
    let (mut words, mut positions, mut token_types) = (None, None, None);
    for (i, n) in g.nodes.iter().enumerate() {
        let Some(table) = (n.op_type == "Gather").then(|| g.constant(&n.input[0])).flatten().filter(|t| t.dims.len() == 2 && t.dims[1] as usize == hidden) else {
            continue;
        };
        let role = g.inputs.contains(&n.input[1].as_str()).then(|| Role::of(&n.input[1])).flatten();
        let slot = match role {
            Some(Role::InputIds) => &mut words,
            Some(Role::SegmentIds) => &mut token_types,
            _ => &mut positions,
        };
        if slot.replace(f32_values(table).map_err(|e| GpuError::Network(format!("{}: {e}", g.name(i))))?).is_some() {
            return Err(GpuError::Network(format!("{}: a second embedding table indexed the same way", g.name(i))));
        }
    }
    let missing = |what: &str| GpuError::Network(format!("no {what} embedding table (a Gather from a constant [rows, {hidden}] table)"));
    Ok(Embeddings {
        words: words.ok_or_else(|| missing("word"))?,
        positions: positions.ok_or_else(|| missing("position"))?,
        token_types: token_types.ok_or_else(|| missing("token type"))?,
        norm,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::benchmarks::bert::model::{BertShape, bert};
    use crate::engines::synthetic::model::{initializer_mut, tensor_values};

    const SHAPE: BertShape = BertShape { vocab: 50, hidden: 32, heads: 4, layers: 3, intermediate: 64, max_positions: 128 };

    fn weights(model: &mut pb::ModelProto, name: &str) -> Vec<f32> {
        tensor_values(initializer_mut(model, name).unwrap())
    }

    #[test]
    fn imports_every_weight_of_a_generated_bert_by_dataflow() {
        let mut model = bert(&SHAPE, 3);
        // Q, K and V linears in another order than the generator's: the import follows the data.
        let nodes = &mut model.graph.as_mut().unwrap().node;
        let at = |nodes: &[pb::NodeProto], name: &str| nodes.iter().position(|n| n.name == name).unwrap();
        let (q, v) = (at(nodes, "bert.encoder.layer.1.attention.self.query.matmul"), at(nodes, "bert.encoder.layer.1.attention.self.value.matmul"));
        nodes.swap(q, v);
        let b = import(&model).unwrap();
        assert_eq!((b.hidden, b.heads, b.head_size(), b.intermediate, b.layers.len(), b.gelu), (32, 4, 8, 64, 3, Gelu::Erf));
        assert_eq!((b.vocab(), b.max_positions(), b.embeddings.token_types.len()), (50, 128, 64));
        let layer = &b.layers[1];
        let p = "bert.encoder.layer.1";
        assert_eq!(layer.query.weight, weights(&mut model, &format!("{p}.attention.self.query.weight")));
        assert_eq!(layer.value.bias, weights(&mut model, &format!("{p}.attention.self.value.bias")));
        assert_eq!(layer.key.weight, weights(&mut model, &format!("{p}.attention.self.key.weight")));
        assert_eq!(layer.output.weight, weights(&mut model, &format!("{p}.output.dense.weight")));
        assert_eq!(layer.output_norm.beta, weights(&mut model, &format!("{p}.output.LayerNorm.bias")));
        assert_eq!(layer.attention_norm.epsilon, 1e-12);
        assert_eq!(b.embeddings.words, weights(&mut model, "bert.embeddings.word_embeddings.weight"));
        assert_eq!(b.embeddings.positions, weights(&mut model, "bert.embeddings.position_embeddings.weight"));
        assert_eq!(b.qa.weight, weights(&mut model, "qa_outputs.weight"));
    }

    #[test]
    fn models_that_are_not_bert_are_refused_with_what_is_missing() {
        let image = crate::engines::synthetic::model::resnet50(32, 1);
        assert!(import(&image).unwrap_err().to_string().contains("no attention"), "an image classifier");
        let mut model = bert(&SHAPE, 3);
        model.graph.as_mut().unwrap().node.retain(|n| n.name != "bert.encoder.layer.2.output.LayerNorm.sqrt");
        assert!(import(&model).unwrap_err().to_string().contains("has no Sqrt"), "a broken layer norm");
        let mut model = bert(&SHAPE, 3);
        model.graph.as_mut().unwrap().node.retain(|n| n.op_type != "Erf");
        assert_eq!(import(&model).unwrap_err().to_string(), "no GELU (Erf or Tanh) in the model");
    }
}
