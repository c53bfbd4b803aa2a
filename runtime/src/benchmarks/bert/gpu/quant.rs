//! Int8 linears of the GPU BERT engine, on the CPU: the quantization arithmetic its kernels follow,
//! an f32 forward of an imported BERT that runs its linears either in f32 or as the int8 engine
//! does (simulated in f32: the same scales, the same rounding), the range of each linear's input
//! (what calibration measures), and the F1 of one answer span against another. CPU only, in CI.
//!
//! The scheme: weights int8 per output channel (`max |w| / 127`), each linear's input int8 with one
//! calibrated scale (`amax / 127`), round to nearest (ties to even, as PTX's `cvt.rni`), saturated
//! to +-127; products accumulate in int32 and are dequantized by `scale_x * scale_w[c]` before the
//! bias. Attention, layer norms, GELU and the answer head stay in floating point. The forward
//! computes the tanh form of GELU, as the GPU engine does.

use super::import::{Bert, LayerNorm, Linear};
use crate::engines::cpu::parallel_chunks;
use std::collections::BTreeMap;
use tract_onnx::prelude::tract_ndarray::{Array2, ArrayView2, Axis, s};

/// The largest int8 magnitude used (symmetric: -128 is never produced).
pub const LEVELS: f32 = 127.0;
/// SQuAD's longest answer in tokens (MLPerf's `max_answer_length`), for [`best_span`].
pub const MAX_ANSWER_TOKENS: usize = 30;

/// The four linears of an encoder layer, in the order they run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Site {
    Qkv,
    AttentionOutput,
    Intermediate,
    Output,
}

impl Site {
    pub const ALL: [Site; 4] = [Site::Qkv, Site::AttentionOutput, Site::Intermediate, Site::Output];

    /// The name of this linear's input in layer `layer`, as a calibration cache lists it.
    pub fn input_name(self, layer: usize) -> String {
        let site = match self {
            Site::Qkv => "qkv",
            Site::AttentionOutput => "attention_output",
            Site::Intermediate => "intermediate",
            Site::Output => "output",
        };
        format!("layer.{layer}.{site}.input")
    }
}

/// The scale (one int8 step) of values whose magnitudes reach `amax`; an all-zero input gets 1, so
/// no division by zero reaches a kernel.
pub fn scale_of(amax: f32) -> f32 {
    if amax > 0.0 && amax.is_finite() { amax / LEVELS } else { 1.0 }
}

/// `x` in steps of `1 / inv_scale`, rounded to nearest (ties to even) and saturated.
pub fn quantize(x: f32, inv_scale: f32) -> i8 {
    (x * inv_scale).round_ties_even().clamp(-LEVELS, LEVELS) as i8
}

/// A linear's weight quantized per output channel: `[outputs, inputs]` row-major (cuBLASLt's
/// transposed-A operand, as the fp16 plan lays weights out), a scale per output.
#[derive(Clone, Debug, PartialEq)]
pub struct QuantizedWeight {
    pub outputs: usize,
    pub inputs: usize,
    pub values: Vec<i8>,
    pub scales: Vec<f32>,
}

impl QuantizedWeight {
    /// Linears stacked along their outputs (Q, K and V as one), each `[inputs, outputs]` as imported.
    pub fn of(parts: &[&Linear]) -> QuantizedWeight {
        let inputs = parts[0].inputs;
        let (mut values, mut scales) = (Vec::new(), Vec::new());
        for l in parts {
            for o in 0..l.outputs {
                let column = || (0..inputs).map(|i| l.weight[i * l.outputs + o]);
                let scale = scale_of(column().fold(0f32, |m, w| m.max(w.abs())));
                values.extend(column().map(|w| quantize(w, 1.0 / scale)));
                scales.push(scale);
            }
        }
        QuantizedWeight { outputs: scales.len(), inputs, values, scales }
    }

    /// The weight the int8 product effectively multiplies by, `[inputs, outputs]` in f32.
    fn dequantized(&self) -> Array2<f32> {
        Array2::from_shape_fn((self.inputs, self.outputs), |(i, o)| self.values[o * self.inputs + i] as f32 * self.scales[o])
    }

    /// `x W^T` of int8 rows `x` (`[rows, inputs]`) in exact int32 arithmetic, dequantized with
    /// `x_scale` and plus `bias`: what the GPU's product and epilogue compute, for checking them.
    pub fn apply_exact(&self, x: &[i8], x_scale: f32, bias: &[f32]) -> Vec<f32> {
        let rows = x.len() / self.inputs;
        let mut y = Vec::with_capacity(rows * self.outputs);
        for r in 0..rows {
            let xr = &x[r * self.inputs..(r + 1) * self.inputs];
            for ((w, scale), b) in self.values.chunks_exact(self.inputs).zip(&self.scales).zip(bias) {
                let acc: i32 = xr.iter().zip(w).map(|(&a, &b)| a as i32 * b as i32).sum();
                y.push(acc as f32 * (x_scale * scale) + b);
            }
        }
        y
    }
}

/// The calibrated magnitude (`amax`) of each linear's input, per layer in [`Site::ALL`] order.
pub type InputRanges = Vec<[f32; 4]>;

/// The input ranges of `bert`'s linears over `features` (each a feature's ids and segments), on
/// every core: what an int8 plan's calibration measures (the largest magnitude: percentile 100).
pub fn measure_ranges(bert: &Bert, features: &[(Vec<i32>, Vec<i32>)]) -> InputRanges {
    let forward = Forward::new(bert, None);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(features.len().max(1));
    let per_thread: Result<Vec<InputRanges>, String> = parallel_chunks(0..features.len(), threads, features.len().div_ceil(threads).max(1), |range| {
        let mut seen = InputRanges::new();
        for (ids, segments) in &features[range] {
            forward.logits(ids, segments, Some(&mut seen));
        }
        Ok(vec![seen])
    });
    let mut ranges = vec![[0f32; 4]; bert.layers.len()];
    for seen in per_thread.unwrap_or_default() {
        for (r, s) in ranges.iter_mut().zip(seen) {
            *r = std::array::from_fn(|i| r[i].max(s[i]));
        }
    }
    ranges
}

/// The ranges as a calibration cache lists them ([`Site::input_name`]).
pub fn ranges_to_cache(ranges: &InputRanges) -> BTreeMap<String, f32> {
    ranges.iter().enumerate().flat_map(|(layer, r)| Site::ALL.iter().zip(r).map(move |(site, &amax)| (site.input_name(layer), amax))).collect()
}

/// The ranges of a model of `layers` layers from a cache's; a missing one is named.
pub fn ranges_from_cache(amax: &BTreeMap<String, f32>, layers: usize) -> Result<InputRanges, String> {
    (0..layers)
        .map(|layer| {
            Site::ALL
                .map(|site| amax.get(&site.input_name(layer)).copied().ok_or_else(|| site.input_name(layer)))
                .into_iter()
                .collect::<Result<Vec<_>, _>>()
                .map(|v| [v[0], v[1], v[2], v[3]])
        })
        .collect()
}

/// One linear of the forward: its weight as the product sees it, its bias, and the scale of its
/// input when it runs in int8.
struct Product {
    weight: Array2<f32>,
    bias: Vec<f32>,
    input_scale: Option<f32>,
}

impl Product {
    fn new(parts: &[&Linear], input_scale: Option<f32>) -> Product {
        let bias = parts.iter().flat_map(|l| l.bias.iter().copied()).collect();
        let weight = match input_scale {
            Some(_) => QuantizedWeight::of(parts).dequantized(),
            None => {
                let outputs: usize = parts.iter().map(|l| l.outputs).sum();
                let mut w = Array2::zeros((parts[0].inputs, outputs));
                let mut at = 0;
                for l in parts {
                    let part = ArrayView2::from_shape((l.inputs, l.outputs), &l.weight).expect("an imported linear's weight is inputs x outputs");
                    w.slice_mut(s![.., at..at + l.outputs]).assign(&part);
                    at += l.outputs;
                }
                w
            }
        };
        Product { weight, bias, input_scale }
    }

    fn apply(&self, x: &Array2<f32>) -> Array2<f32> {
        let mut y = match self.input_scale {
            Some(scale) => x.mapv(|v| quantize(v, 1.0 / scale) as f32 * scale).dot(&self.weight),
            None => x.dot(&self.weight),
        };
        for mut row in y.rows_mut() {
            row.iter_mut().zip(&self.bias).for_each(|(v, b)| *v += b);
        }
        y
    }
}

/// An imported BERT ready to run on the CPU, its linears in f32 or simulated int8.
pub struct Forward<'a> {
    bert: &'a Bert,
    layers: Vec<[Product; 4]>,
}

impl<'a> Forward<'a> {
    /// Linears in f32 (`ranges` None) or as the int8 engine runs them with these input ranges.
    pub fn new(bert: &'a Bert, ranges: Option<&InputRanges>) -> Forward<'a> {
        let layers = bert
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let scale = |site: usize| ranges.map(|r| scale_of(r[i][site]));
                [
                    Product::new(&[&l.query, &l.key, &l.value], scale(0)),
                    Product::new(&[&l.attention_output], scale(1)),
                    Product::new(&[&l.intermediate], scale(2)),
                    Product::new(&[&l.output], scale(3)),
                ]
            })
            .collect();
        Forward { bert, layers }
    }

    /// Start and end logits of each token of one feature (`ids` and `segments` of its real
    /// tokens); `seen`, when given, takes the largest magnitude of each linear's input.
    pub fn logits(&self, ids: &[i32], segments: &[i32], mut seen: Option<&mut InputRanges>) -> Vec<[f32; 2]> {
        let (b, h, n) = (self.bert, self.bert.hidden, ids.len());
        let e = &b.embeddings;
        let mut x = Array2::from_shape_fn((n, h), |(t, c)| e.words[ids[t] as usize * h + c] + e.positions[t * h + c] + e.token_types[segments[t] as usize * h + c]);
        layer_norm(&mut x, &e.norm);
        let mut observe = |layer: usize, site: usize, v: &Array2<f32>| {
            if let Some(seen) = seen.as_deref_mut() {
                seen.resize(b.layers.len(), [0.0; 4]);
                seen[layer][site] = v.iter().fold(seen[layer][site], |m, x| m.max(x.abs()));
            }
        };
        for (i, (layer, [qkv, attention_output, intermediate, output])) in b.layers.iter().zip(&self.layers).enumerate() {
            observe(i, 0, &x);
            let context = attention(&qkv.apply(&x), b.heads);
            observe(i, 1, &context);
            x = x + attention_output.apply(&context);
            layer_norm(&mut x, &layer.attention_norm);
            observe(i, 2, &x);
            let up = intermediate.apply(&x).mapv(gelu_tanh);
            observe(i, 3, &up);
            x = x + output.apply(&up);
            layer_norm(&mut x, &layer.output_norm);
        }
        let head = Product::new(&[&b.qa], None).apply(&x);
        head.rows().into_iter().map(|r| [r[0], r[1]]).collect()
    }
}

/// Softmax attention of each head over all of a feature's tokens; `qkv` is `[tokens, 3 * hidden]`.
fn attention(qkv: &Array2<f32>, heads: usize) -> Array2<f32> {
    let h = qkv.ncols() / 3;
    let d = h / heads;
    let scale = 1.0 / (d as f32).sqrt();
    let mut out = Array2::zeros((qkv.nrows(), h));
    for head in 0..heads {
        let at = head * d;
        let (q, k, v) = (qkv.slice(s![.., at..at + d]), qkv.slice(s![.., h + at..h + at + d]), qkv.slice(s![.., 2 * h + at..2 * h + at + d]));
        let mut scores = q.dot(&k.t()) * scale;
        for mut row in scores.rows_mut() {
            let m = row.fold(f32::NEG_INFINITY, |m, &x| m.max(x));
            row.mapv_inplace(|x| (x - m).exp());
            let sum = row.sum();
            row.mapv_inplace(|x| x / sum);
        }
        out.slice_mut(s![.., at..at + d]).assign(&scores.dot(&v));
    }
    out
}

fn layer_norm(x: &mut Array2<f32>, n: &LayerNorm) {
    for mut row in x.axis_iter_mut(Axis(0)) {
        let mean = row.mean().unwrap_or(0.0);
        let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f32>() / row.len() as f32;
        let inv = 1.0 / (var + n.epsilon).sqrt();
        for (c, v) in row.iter_mut().enumerate() {
            *v = (*v - mean) * inv * n.gamma[c] + n.beta[c];
        }
    }
}

/// GELU's tanh form (cuBLASLt's epilogue and the int8 epilogue kernel compute this one).
pub fn gelu_tanh(x: f32) -> f32 {
    0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
}

/// The answer span with the largest start + end logit (start <= end, at most
/// [`MAX_ANSWER_TOKENS`] tokens), past the leading `[CLS]`.
pub fn best_span(logits: &[[f32; 2]]) -> (usize, usize) {
    let mut best = ((0, 0), f32::NEG_INFINITY);
    for start in 1.min(logits.len().saturating_sub(1))..logits.len() {
        for end in start..logits.len().min(start + MAX_ANSWER_TOKENS) {
            let score = logits[start][0] + logits[end][1];
            if score > best.1 {
                best = ((start, end), score);
            }
        }
    }
    best.0
}

/// SQuAD's F1 of one span of tokens against another (the overlap's precision and recall).
pub fn span_f1(predicted: (usize, usize), truth: (usize, usize)) -> f64 {
    let overlap = (predicted.1.min(truth.1) + 1).saturating_sub(predicted.0.max(truth.0));
    if overlap == 0 {
        return 0.0;
    }
    let (p, r) = (overlap as f64 / (predicted.1 - predicted.0 + 1) as f64, overlap as f64 / (truth.1 - truth.0 + 1) as f64);
    2.0 * p * r / (p + r)
}

#[cfg(test)]
#[path = "quant_tests.rs"]
mod tests;
