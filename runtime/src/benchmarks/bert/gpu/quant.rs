//! Int8 linears of the GPU BERT engine, on the CPU: the quantization arithmetic its kernels follow,
//! an f32 forward of an imported BERT that runs each linear in f32 or as the int8 engine does
//! (simulated in f32: the same scales, the same rounding), the range of each linear's input (for
//! comparing static scales), how one engine's answers agree with another's (span F1, start and end
//! tokens, logit error). CPU only, in CI.
//!
//! The engine's scheme: weights int8 per output channel (`max |w| / 127`); each linear's input int8
//! per token, at the token's own step (`max |x_row| / 127`, measured where the input is produced:
//! the layer norms, the attention output's quantization, the GELU epilogue), round to nearest
//! (ties to even, as PTX's `cvt.rni`), saturated to +-127; products accumulate in int32 and are
//! dequantized by `step_x[row] * scale_w[c]` before the bias. Attention, layer norms, GELU and the
//! answer head stay in floating point. The forward computes the tanh form of GELU, as the GPU
//! engine does. One static (calibrated) step per input is simulated too, for comparison:
//! `int8_on_bert_large_by_group_and_scheme` measures both.

use super::import::{Bert, LayerNorm, Linear};
use crate::engines::cpu::parallel_chunks;
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

    /// `x W^T` of int8 rows `x` (`[rows, inputs]`, row r in steps of `x_steps[r]`) in exact int32
    /// arithmetic, dequantized and plus `bias`: what the GPU's product and epilogue compute, for
    /// checking them.
    pub fn apply_exact(&self, x: &[i8], x_steps: &[f32], bias: &[f32]) -> Vec<f32> {
        let mut y = Vec::with_capacity(x_steps.len() * self.outputs);
        for (xr, x_step) in x.chunks_exact(self.inputs).zip(x_steps) {
            for ((w, scale), b) in self.values.chunks_exact(self.inputs).zip(&self.scales).zip(bias) {
                let acc: i32 = xr.iter().zip(w).map(|(&a, &b)| a as i32 * b as i32).sum();
                y.push(acc as f32 * (x_step * scale) + b);
            }
        }
        y
    }
}

/// The largest magnitude of each linear's input, per layer in [`Site`] order.
pub type InputRanges = Vec<[f32; 4]>;

/// The input ranges of `bert`'s linears over `features` (each a feature's ids and segments), on
/// every core: what a calibration of static scales measures (the largest magnitude).
pub fn measure_ranges(bert: &Bert, features: &[(Vec<i32>, Vec<i32>)]) -> InputRanges {
    let forward = Forward::f32(bert);
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

/// How a linear's input is quantized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum InputScale {
    /// One calibrated step for every token.
    Static(f32),
    /// Each token's own step, `max |x_row| / 127`, measured as the input is produced.
    PerToken,
}

/// A token's step: its largest magnitude over 127 (what the GPU's kernels compute where they
/// produce a linear's input).
pub fn token_step(row: impl IntoIterator<Item = f32>) -> f32 {
    scale_of(row.into_iter().fold(0f32, |m, v| m.max(v.abs())))
}

/// Each row of `x` in int8 steps (`scale` per tensor or per row), returned as the values the int8
/// product multiplies (step times level).
fn fake_quantize(x: &Array2<f32>, scale: InputScale) -> Array2<f32> {
    let mut q = x.clone();
    for mut row in q.rows_mut() {
        let step = match scale {
            InputScale::Static(step) => step,
            InputScale::PerToken => token_step(row.iter().copied()),
        };
        row.mapv_inplace(|v| quantize(v, 1.0 / step) as f32 * step);
    }
    q
}

/// One linear of the forward: its weight as the product sees it, its bias, and how its input is
/// quantized when it runs in int8.
struct Product {
    weight: Array2<f32>,
    bias: Vec<f32>,
    input: Option<InputScale>,
}

impl Product {
    fn new(parts: &[&Linear], input: Option<InputScale>) -> Product {
        let bias = parts.iter().flat_map(|l| l.bias.iter().copied()).collect();
        let weight = match input {
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
        Product { weight, bias, input }
    }

    fn apply(&self, x: &Array2<f32>) -> Array2<f32> {
        let mut y = match self.input {
            Some(scale) => fake_quantize(x, scale).dot(&self.weight),
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
    /// Linears in f32 where `input` gives None, otherwise as the int8 engine runs them, their
    /// input quantized as `input(layer, site)` says.
    pub fn new(bert: &'a Bert, input: &dyn Fn(usize, Site) -> Option<InputScale>) -> Forward<'a> {
        let layers = bert
            .layers
            .iter()
            .enumerate()
            .map(|(i, l)| {
                [
                    Product::new(&[&l.query, &l.key, &l.value], input(i, Site::Qkv)),
                    Product::new(&[&l.attention_output], input(i, Site::AttentionOutput)),
                    Product::new(&[&l.intermediate], input(i, Site::Intermediate)),
                    Product::new(&[&l.output], input(i, Site::Output)),
                ]
            })
            .collect();
        Forward { bert, layers }
    }

    /// Every linear in f32.
    pub fn f32(bert: &'a Bert) -> Forward<'a> {
        Forward::new(bert, &|_, _| None)
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

/// Every answer span a feature allows (start <= end, at most [`MAX_ANSWER_TOKENS`] tokens, past
/// the leading `[CLS]`) with its score, start + end logit.
pub fn spans(logits: &[[f32; 2]]) -> impl Iterator<Item = ((usize, usize), f32)> + '_ {
    (1.min(logits.len().saturating_sub(1))..logits.len())
        .flat_map(move |start| (start..logits.len().min(start + MAX_ANSWER_TOKENS)).map(move |end| ((start, end), logits[start][0] + logits[end][1])))
}

/// The answer span with the largest score (the first of equals).
pub fn best_span(logits: &[[f32; 2]]) -> (usize, usize) {
    spans(logits).fold(((0, 0), f32::NEG_INFINITY), |best, s| if s.1 > best.1 { s } else { best }).0
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

/// How one engine's logits and answers agree with a reference engine's over some features.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Agreement {
    pub features: usize,
    /// Features whose start (end) token, the argmax of the start (end) logits, is the reference's.
    pub starts: usize,
    pub ends: usize,
    f1_sum: f64,
    error_sq: f64,
    max_error: f32,
    values: usize,
    spread_sq: f64,
}

impl Agreement {
    /// Adds one feature's logits (`[start, end]` per token, as responses hold them).
    pub fn add(&mut self, ours: &[[f32; 2]], reference: &[[f32; 2]]) {
        let argmax = |v: &[[f32; 2]], k: usize| crate::engines::cpu::argmax(&v.iter().map(|p| p[k]).collect::<Vec<_>>());
        self.features += 1;
        self.starts += usize::from(argmax(ours, 0) == argmax(reference, 0));
        self.ends += usize::from(argmax(ours, 1) == argmax(reference, 1));
        self.f1_sum += span_f1(best_span(ours), best_span(reference));
        for k in 0..2 {
            let column: Vec<f32> = reference.iter().map(|p| p[k]).collect();
            self.spread_sq += variance(&column);
        }
        for (a, b) in ours.iter().flatten().zip(reference.iter().flatten()) {
            self.max_error = self.max_error.max((a - b).abs());
            self.error_sq += ((a - b) as f64).powi(2);
        }
        self.values += 2 * reference.len();
    }

    /// The mean F1 of the best spans against the reference's.
    pub fn f1(&self) -> f64 {
        self.f1_sum / self.features.max(1) as f64
    }

    /// The logits' rms error.
    pub fn rms_error(&self) -> f64 {
        (self.error_sq / self.values.max(1) as f64).sqrt()
    }

    /// How much the reference's logits vary between a feature's tokens (rms of their standard
    /// deviations): what decides an answer, unlike the logits' common offset.
    pub fn spread(&self) -> f64 {
        (self.spread_sq / (2 * self.features).max(1) as f64).sqrt()
    }

    /// The rms error relative to the spread.
    pub fn relative_error(&self) -> f64 {
        self.rms_error() / self.spread().max(f64::MIN_POSITIVE)
    }
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let n = self.features;
        write!(
            f,
            "logits rms error {:.2e} (max {:.2e}) = {:.3} of their spread between tokens ({:.2e}); start agrees {}/{n}, end {}/{n}; answers' F1 {:.4}",
            self.rms_error(),
            self.max_error,
            self.relative_error(),
            self.spread(),
            self.starts,
            self.ends,
            self.f1()
        )
    }
}

/// Variance of `v` about its mean.
fn variance(v: &[f32]) -> f64 {
    let mean = v.iter().map(|&x| x as f64).sum::<f64>() / v.len().max(1) as f64;
    v.iter().map(|&x| (x as f64 - mean).powi(2)).sum::<f64>() / v.len().max(1) as f64
}

#[cfg(test)]
#[path = "quant_tests.rs"]
mod tests;
