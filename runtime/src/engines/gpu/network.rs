//! The GPU engine builder's graph: an image classifier imported from ONNX and rewritten into the
//! few fused layers the GPU runs (a cuDNN fused convolution per `Conv [+ BatchNormalization]
//! [+ Add] [+ Relu]` chain, max pooling, global average pooling, the classifier as a 1x1
//! convolution). Everything here is plain CPU code, tested in CI; nothing needs a GPU.
//!
//! Passes, in order (each one a function, so tests can check them one at a time):
//! 1. [`fold_batch_norms`]: `Conv -> BatchNormalization` becomes one `Conv` with scaled weights and
//!    a shifted bias (the norm is an affine map per output channel).
//! 2. [`fuse_residuals`]: `Add(Conv(x), y)` becomes the convolution with `y` as its residual input,
//!    which cuDNN adds before the activation (`y = act(conv(x) + bias + z)`).
//! 3. [`fuse_activations`]: `Conv -> Relu` sets the convolution's activation.
//!
//! A node that no pass absorbed is an error naming it: the GPU runs only what it can fuse.
//!
//! The lowering applies three rewrites afterwards: [`space_to_depth`] (the stem's input layout),
//! [`fuse_pool_conversions`] and [`fuse_conv_quantization`] (int8 conversions moved into the
//! pooling and the stem).

use super::error::GpuError;
use crate::engines::onnx_reader::{attr_float, attr_int, attr_ints, f32_values};
use tract_onnx::pb;

/// A value in the network: 0 is the input image, `i + 1` is the output of node `i`.
pub type ValueId = usize;

/// One operation of the imported graph.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    Conv(Conv),
    BatchNorm {
        scale: Vec<f32>,
        shift: Vec<f32>,
        mean: Vec<f32>,
        variance: Vec<f32>,
        epsilon: f32,
    },
    Relu,
    /// Element-wise sum with another value.
    Add(ValueId),
    MaxPool {
        kernel: usize,
        stride: usize,
        pad: usize,
        /// `Some(scale)`: writes int8, as a [`Op::Quantize`] of this scale reading it would (see
        /// [`fuse_pool_conversions`]).
        int8_output: Option<f32>,
    },
    GlobalAveragePool,
    /// To int8: `q = clamp(round(x / scale), -127, 127)` (inserted by [`quantize`]).
    Quantize {
        scale: f32,
    },
    /// Back from int8: `x = q * scale` of the int8 value read (inserted by [`quantize`]).
    Dequantize,
}

/// A 2-D convolution (square kernel, no dilation, one group) with everything fused into it.
#[derive(Clone, Debug, PartialEq)]
pub struct Conv {
    pub cin: usize,
    pub cout: usize,
    pub kernel: usize,
    pub stride: usize,
    pub pad: usize,
    /// `[cout][cin][kernel][kernel]` (ONNX's OIHW).
    pub weight: Vec<f32>,
    /// `[cout]`.
    pub bias: Vec<f32>,
    /// Added after the convolution and bias, before the activation.
    pub residual: Option<ValueId>,
    pub relu: bool,
    /// Set by [`quantize`]: the convolution reads and writes int8.
    pub int8: Option<Int8Conv>,
    /// Set by [`fuse_conv_quantization`]: an fp16 convolution whose output is rounded to int8 on
    /// this scale, as a [`Op::Quantize`] of it would.
    pub quantized_output: Option<f32>,
}

impl Conv {
    /// The int8 scale of the output: `Some` when the convolution writes int8.
    pub fn output_scale(&self) -> Option<f32> {
        self.int8.as_ref().map(|q| q.output_scale).or(self.quantized_output)
    }
}

/// The scales of an int8 convolution: output channel `k`'s weights are `weight_scales[k]` times
/// integers in [-127, 127] (already rounded so in `weight`), its output is `output_scale` times
/// integers.
#[derive(Clone, Debug, PartialEq)]
pub struct Int8Conv {
    pub weight_scales: Vec<f32>,
    pub scaling: WeightScaling,
    pub output_scale: f32,
}

/// How finely an int8 convolution's weights are scaled. Per output channel loses less (TensorRT's
/// scheme) and needs cuDNN's graph API; cuDNN's legacy fused call takes one scale per layer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WeightScaling {
    PerTensor,
    PerChannel,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Node {
    pub name: String,
    pub op: Op,
    pub input: ValueId,
    /// The ONNX tensor that holds this node's output (after fusion: the last fused node's), which
    /// calibration measures.
    pub tensor: String,
}

/// An image classifier: NCHW image in, `classes` logits out.
#[derive(Clone, Debug, PartialEq)]
pub struct Network {
    pub channels: usize,
    pub height: usize,
    pub width: usize,
    pub nodes: Vec<Node>,
    /// The logits.
    pub output: ValueId,
    pub classes: usize,
}

/// Shape of a value for one sample: (channels, height, width).
pub type Shape = (usize, usize, usize);

impl Network {
    /// The node producing `value` (None for the input).
    pub fn producer(&self, value: ValueId) -> Option<&Node> {
        value.checked_sub(1).map(|i| &self.nodes[i])
    }

    /// How many nodes read `value` (as main or residual input), plus one if it is the output.
    pub fn uses(&self, value: ValueId) -> usize {
        let reads = self
            .nodes
            .iter()
            .map(|n| {
                usize::from(n.input == value) + usize::from(matches!(&n.op, Op::Add(v) if *v == value)) + usize::from(matches!(&n.op, Op::Conv(c) if c.residual == Some(value)))
            })
            .sum::<usize>();
        reads + usize::from(self.output == value)
    }

    /// Per-sample shape of every value (index = ValueId).
    pub fn shapes(&self) -> Vec<Shape> {
        let mut shapes = vec![(self.channels, self.height, self.width)];
        for node in &self.nodes {
            let (c, h, w) = shapes[node.input];
            shapes.push(match &node.op {
                Op::Conv(conv) => (conv.cout, out_size(h, conv.kernel, conv.stride, conv.pad), out_size(w, conv.kernel, conv.stride, conv.pad)),
                Op::MaxPool { kernel, stride, pad, .. } => (c, out_size(h, *kernel, *stride, *pad), out_size(w, *kernel, *stride, *pad)),
                Op::GlobalAveragePool => (c, 1, 1),
                Op::BatchNorm { .. } | Op::Relu | Op::Add(_) | Op::Quantize { .. } | Op::Dequantize => (c, h, w),
            });
        }
        shapes
    }

    /// Removes node `index`, whose output is replaced by its input everywhere.
    fn bypass(&mut self, index: usize) {
        let (removed, replacement) = (index + 1, self.nodes[index].input);
        let node = self.nodes.remove(index);
        if let Some(producer) = replacement.checked_sub(1) {
            self.nodes[producer].tensor = node.tensor;
        }
        self.renumber(|v| match v {
            v if v == removed => replacement,
            v if v > removed => v - 1,
            v => v,
        });
    }

    /// Replaces every value read (main inputs, residuals, Add operands, the output) by `remap` of it.
    fn renumber(&mut self, remap: impl Fn(ValueId) -> ValueId) {
        for node in &mut self.nodes {
            node.input = remap(node.input);
            match &mut node.op {
                Op::Add(v) => *v = remap(*v),
                Op::Conv(c) => c.residual = c.residual.map(&remap),
                _ => {}
            }
        }
        self.output = remap(self.output);
    }

    /// Inserts `node` right after the producer of its input and returns its value; values after
    /// it shift by one. No reader is rewired: the caller chooses which ones read the new value.
    fn insert_after_input(&mut self, node: Node) -> ValueId {
        let at = node.input;
        self.renumber(|v| if v > at { v + 1 } else { v });
        self.nodes.insert(at, node);
        at + 1
    }

    /// The int8 scale of `value`: `Some` when its producer writes int8.
    pub fn int8_scale(&self, value: ValueId) -> Option<f32> {
        match self.producer(value).map(|p| &p.op) {
            Some(Op::Conv(conv)) => conv.output_scale(),
            Some(Op::Quantize { scale } | Op::MaxPool { int8_output: Some(scale), .. }) => Some(*scale),
            _ => None,
        }
    }

    /// The single node reading `value`, if exactly one node reads it and it is not the output.
    fn sole_consumer(&self, value: ValueId) -> Option<usize> {
        if self.uses(value) != 1 || self.output == value {
            return None;
        }
        self.nodes.iter().position(|n| n.input == value || matches!(&n.op, Op::Add(v) if *v == value))
    }
}

fn out_size(size: usize, kernel: usize, stride: usize, pad: usize) -> usize {
    (size + 2 * pad - kernel) / stride + 1
}

/// Imports an ONNX image classifier and runs every pass: the graph the GPU engine runs.
pub fn build(model: &pb::ModelProto) -> Result<Network, GpuError> {
    let mut net = import(model)?;
    fold_batch_norms(&mut net);
    fuse_residuals(&mut net);
    fuse_activations(&mut net);
    check_fused(&net)?;
    Ok(net)
}

/// How the input conversion lays the image out for the first layer: `block` x `block` pixel
/// blocks become channels, (row, column, channel) in that order, on a grid shifted by `offset`
/// pixels (the zero padding of the original convolution, rounded up to a whole block). Block 1 with
/// offset 0 is the image as it is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SpaceToDepth {
    pub block: usize,
    pub offset: usize,
}

impl SpaceToDepth {
    pub const IDENTITY: SpaceToDepth = SpaceToDepth { block: 1, offset: 0 };

    /// The image element (channel, row, column) that rearranged channel `ch` at grid position
    /// (`a`, `b`) holds, or None where it holds zero (padding); `channels` is the image's.
    /// The input conversion kernel (`exec.cu`) computes the same.
    pub fn source(&self, channels: usize, height: usize, width: usize, ch: usize, a: usize, b: usize) -> Option<(usize, usize, usize)> {
        let (sub, c) = (ch / channels, ch % channels);
        if sub >= self.block * self.block {
            return None;
        }
        let y = (a * self.block + sub / self.block).checked_sub(self.offset).filter(|&y| y < height)?;
        let x = (b * self.block + sub % self.block).checked_sub(self.offset).filter(|&x| x < width)?;
        Some((c, y, x))
    }
}

/// Rewrites a stride-2 convolution reading the image into a stride-1 convolution on the image
/// rearranged into 2x2 pixel blocks (4x the channels, a quarter of the pixels; a 7x7 kernel
/// becomes 4x4), which tensor cores run far better: ResNet50's stem on an H200 took 1.23 ms per
/// 256 images as 7x7/2 on 8 padded channels and 0.45 ms rearranged on 32 (cuDNN 9.19).
/// Output y[i] = sum_k x[2i + k - pad] w[k]; with rows a = i + m of the shifted grid
/// (x row 2a + p - offset), tap m and row p of the block take original tap k = 2m + p + pad - offset.
pub fn space_to_depth(net: &mut Network) -> SpaceToDepth {
    let readers: Vec<usize> = (0..net.nodes.len()).filter(|&i| net.nodes[i].input == 0).collect();
    let &[stem] = readers.as_slice() else { return SpaceToDepth::IDENTITY };
    let Op::Conv(conv) = &mut net.nodes[stem].op else { return SpaceToDepth::IDENTITY };
    if conv.stride != 2 || conv.residual.is_some() {
        return SpaceToDepth::IDENTITY;
    }
    let s2d = SpaceToDepth { block: 2, offset: conv.pad.next_multiple_of(2) };
    let taps = (conv.kernel - 1 + s2d.offset - conv.pad) / 2 + 1;
    let (k, cin) = (conv.kernel, conv.cin);
    let cin4 = 4 * cin;
    let mut weight = vec![0f32; conv.cout * cin4 * taps * taps];
    for o in 0..conv.cout {
        for ch in 0..cin4 {
            let (sub, c) = (ch / cin, ch % cin);
            for m in 0..taps {
                for n in 0..taps {
                    let ky = (2 * m + sub / 2 + conv.pad).checked_sub(s2d.offset).filter(|&v| v < k);
                    let kx = (2 * n + sub % 2 + conv.pad).checked_sub(s2d.offset).filter(|&v| v < k);
                    if let (Some(ky), Some(kx)) = (ky, kx) {
                        weight[((o * cin4 + ch) * taps + m) * taps + n] = conv.weight[((o * cin + c) * k + ky) * k + kx];
                    }
                }
            }
        }
    }
    let (out_h, out_w) = (out_size(net.height, k, 2, conv.pad), out_size(net.width, k, 2, conv.pad));
    *conv = Conv { cin: cin4, kernel: taps, stride: 1, pad: 0, weight, ..conv.clone() };
    (net.channels, net.height, net.width) = (cin4, out_h + taps - 1, out_w + taps - 1);
    s2d
}

/// Folds each batch norm that is the only reader of a convolution into it.
pub fn fold_batch_norms(net: &mut Network) {
    let mut i = 0;
    while i < net.nodes.len() {
        let fold = match &net.nodes[i].op {
            Op::BatchNorm { .. } => {
                matches!(net.producer(net.nodes[i].input).map(|p| &p.op), Some(Op::Conv(c)) if c.residual.is_none() && !c.relu) && net.uses(net.nodes[i].input) == 1
            }
            _ => false,
        };
        if !fold {
            i += 1;
            continue;
        }
        let Op::BatchNorm { scale, shift, mean, variance, epsilon } = net.nodes[i].op.clone() else { unreachable!() };
        let conv_index = net.nodes[i].input - 1;
        let Op::Conv(conv) = &mut net.nodes[conv_index].op else { unreachable!() };
        let per_output = conv.cin * conv.kernel * conv.kernel;
        for o in 0..conv.cout {
            // In f64, one rounding per value: bn(conv(x) + b) = a*conv(x) + (a*(b - mean) + shift).
            let a = scale[o] as f64 / (variance[o] as f64 + epsilon as f64).sqrt();
            for w in &mut conv.weight[o * per_output..(o + 1) * per_output] {
                *w = (*w as f64 * a) as f32;
            }
            conv.bias[o] = (a * (conv.bias[o] as f64 - mean[o] as f64) + shift[o] as f64) as f32;
        }
        net.bypass(i);
    }
}

/// Turns `Add(conv, other)` into the convolution's residual input, when the Add is the
/// convolution's only reader and the convolution has no activation yet.
pub fn fuse_residuals(net: &mut Network) {
    let mut i = 0;
    while i < net.nodes.len() {
        let Op::Add(b) = net.nodes[i].op else {
            i += 1;
            continue;
        };
        let a = net.nodes[i].input;
        let fusable = |v: ValueId, net: &Network| matches!(net.producer(v).map(|p| &p.op), Some(Op::Conv(c)) if c.residual.is_none() && !c.relu) && net.uses(v) == 1;
        // The later convolution absorbs the Add, so the other operand is already computed.
        // The convolution that absorbs the Add runs where it stands, so the other operand must be
        // computed before it: prefer the later convolution.
        let (conv_value, other) = match (fusable(a, net), fusable(b, net)) {
            (true, true) => (a.max(b), a.min(b)),
            (true, false) if b < a => (a, b),
            (false, true) if a < b => (b, a),
            _ => {
                i += 1;
                continue;
            }
        };
        let Op::Conv(conv) = &mut net.nodes[conv_value - 1].op else { unreachable!() };
        conv.residual = Some(other);
        // The Add's output becomes the convolution's.
        net.nodes[i].input = conv_value;
        net.bypass(i);
    }
}

/// Sets the activation of each convolution whose only reader is a Relu.
pub fn fuse_activations(net: &mut Network) {
    let mut i = 0;
    while i < net.nodes.len() {
        let input = net.nodes[i].input;
        let fuse = matches!(net.nodes[i].op, Op::Relu) && matches!(net.producer(input).map(|p| &p.op), Some(Op::Conv(c)) if !c.relu) && net.sole_consumer(input) == Some(i);
        if !fuse {
            i += 1;
            continue;
        }
        let Op::Conv(conv) = &mut net.nodes[input - 1].op else { unreachable!() };
        conv.relu = true;
        net.bypass(i);
    }
}

/// Largest int8 magnitude: the grid is symmetric (-127..=127), so zero stays exactly zero.
pub const INT8_MAX: f32 = 127.0;

/// Runs the convolutions between the stem and the classifier in int8 (they read what a
/// convolution or max pooling wrote; the stem reads the image and the classifier the pooled
/// features, and both stay fp16, where int8 would cost accuracy for little time). `amax` holds each
/// value's calibrated range by ONNX tensor name (see `calibration`): a value's scale is
/// `amax / 127`. Weights get one scale per output channel or per convolution, as `scaling` says
/// for each convolution (by node name), and are rounded to it here, so the network computes
/// exactly what the GPU's int8 arithmetic does, up to rounding ties. `Quantize` goes where fp16
/// values enter the int8 region and `Dequantize` where int8 values leave it. Returns the number of
/// int8 convolutions.
pub fn quantize(net: &mut Network, amax: &std::collections::BTreeMap<String, f32>, scaling: &dyn Fn(&str) -> WeightScaling) -> Result<usize, GpuError> {
    let scale_of = |tensor: &str| -> Result<f32, GpuError> {
        match amax.get(tensor) {
            Some(&a) if a.is_finite() && a >= 0.0 => Ok(a.max(f32::MIN_POSITIVE) / INT8_MAX),
            Some(a) => Err(GpuError::Network(format!("the calibration cache gives tensor {tensor:?} the range {a}; recalibrate"))),
            None => Err(GpuError::Network(format!("the calibration cache has no range for tensor {tensor:?} (calibrated on another model?); recalibrate"))),
        }
    };
    let mut count = 0;
    for i in 0..net.nodes.len() {
        let reads_features = matches!(net.producer(net.nodes[i].input).map(|p| &p.op), Some(Op::Conv(_) | Op::MaxPool { .. }));
        let (tensor, scaling) = (net.nodes[i].tensor.clone(), scaling(&net.nodes[i].name));
        let Op::Conv(conv) = &mut net.nodes[i].op else { continue };
        // cuDNN's int8 NHWC convolutions need channel counts that are multiples of 4.
        if !reads_features || conv.cin % 4 != 0 || conv.cout % 4 != 0 || net.output == i + 1 {
            continue;
        }
        let scale_of_weights = |w: &[f32]| {
            let largest = w.iter().fold(0f32, |m, w| m.max(w.abs()));
            if largest > 0.0 { largest / INT8_MAX } else { 1.0 }
        };
        let per_channel = conv.weight.len() / conv.cout;
        let weight_scales = match scaling {
            WeightScaling::PerTensor => vec![scale_of_weights(&conv.weight); conv.cout],
            WeightScaling::PerChannel => conv.weight.chunks_exact(per_channel).map(scale_of_weights).collect(),
        };
        for (channel, &scale) in conv.weight.chunks_exact_mut(per_channel).zip(&weight_scales) {
            channel.iter_mut().for_each(|w| *w = (*w / scale).round() * scale);
        }
        conv.int8 = Some(Int8Conv { weight_scales, scaling, output_scale: scale_of(&tensor)? });
        count += 1;
    }
    let is_int8_conv = |n: &Node| matches!(&n.op, Op::Conv(c) if c.int8.is_some());
    let reads = |n: &Node, v: ValueId| n.input == v || matches!(&n.op, Op::Conv(c) if c.residual == Some(v)) || matches!(&n.op, Op::Add(a) if *a == v);
    let rewire = |n: &mut Node, from: ValueId, to: ValueId| {
        if n.input == from {
            n.input = to;
        }
        match &mut n.op {
            Op::Conv(c) if c.residual == Some(from) => c.residual = Some(to),
            Op::Add(a) if *a == from => *a = to,
            _ => {}
        }
    };
    // Highest value first: an insertion shifts only the values after it.
    for v in (0..=net.nodes.len()).rev() {
        let int8 = net.int8_scale(v).is_some();
        // Int8 readers of an fp16 value, or fp16 readers (and the output) of an int8 value.
        let crossing = |n: &Node| reads(n, v) && is_int8_conv(n) != int8;
        if !(net.nodes.iter().any(crossing) || (int8 && net.output == v)) {
            continue;
        }
        let producer = net.producer(v).ok_or_else(|| GpuError::Network("an int8 convolution reads the image; the stem must stay fp16".into()))?;
        let (name, tensor) = (producer.name.clone(), producer.tensor.clone());
        let (suffix, op) = if int8 { ("dequantize", Op::Dequantize) } else { ("quantize", Op::Quantize { scale: scale_of(&tensor)? }) };
        let q = net.insert_after_input(Node { name: format!("{name}/{suffix}"), op, input: v, tensor });
        for n in net.nodes.iter_mut().skip(q) {
            if reads(n, v) && is_int8_conv(n) != int8 {
                rewire(n, v, q);
            }
        }
        if int8 && net.output == v {
            net.output = q;
        }
    }
    Ok(count)
}

/// Fuses int8 conversions into the pooling next to them, for the GPU's lowering (the CPU engine's
/// export keeps them apart), so that the pooled tensors are read once, not written in fp16 and read
/// back:
/// - a [`Op::Quantize`] that alone reads a max pooling: the pooling writes int8 itself, exactly
///   (max pooling commutes with the monotonic rounding);
/// - a [`Op::Dequantize`] that a global average pooling alone reads: the pooling reads the int8
///   value (its `int8_scale`) and sums it exactly, before scaling.
///
/// Returns the number fused.
pub fn fuse_pool_conversions(net: &mut Network) -> usize {
    let mut fused = 0;
    let mut i = 0;
    while i < net.nodes.len() {
        let read = net.nodes[i].input;
        let fuses = match net.nodes[i].op {
            Op::Quantize { scale } if net.sole_consumer(read) == Some(i) => match read.checked_sub(1).map(|p| &mut net.nodes[p].op) {
                Some(Op::MaxPool { int8_output: output @ None, .. }) => {
                    *output = Some(scale);
                    true
                }
                _ => false,
            },
            Op::Dequantize => net.sole_consumer(i + 1).is_some_and(|reader| matches!(net.nodes[reader].op, Op::GlobalAveragePool)),
            _ => false,
        };
        if fuses {
            net.bypass(i);
            fused += 1;
        } else {
            i += 1;
        }
    }
    fused
}

/// Moves the int8 output of each max pooling that writes int8 ([`fuse_pool_conversions`]) onto the
/// fp16 convolution it alone reads, where `takes` that convolution's node and input shape (for the
/// GPU's lowering: our stem kernel writes int8): the convolution rounds its output to the
/// pooling's grid and the pooling reads int8, exactly as before, since max pooling commutes with
/// the monotonic rounding. The fp16 tensor between them is never written. Returns the number moved.
pub fn fuse_conv_quantization(net: &mut Network, takes: &dyn Fn(&Node, Shape) -> bool) -> usize {
    let shapes = net.shapes();
    let mut fused = 0;
    for i in 0..net.nodes.len() {
        let (read, op) = (net.nodes[i].input, &net.nodes[i].op);
        let &Op::MaxPool { int8_output: Some(scale), .. } = op else { continue };
        if net.sole_consumer(read) != Some(i) {
            continue;
        }
        let Some(producer) = read.checked_sub(1) else { continue };
        if !takes(&net.nodes[producer], shapes[net.nodes[producer].input]) {
            continue;
        }
        if let Op::Conv(conv @ Conv { int8: None, quantized_output: None, .. }) = &mut net.nodes[producer].op {
            conv.quantized_output = Some(scale);
            fused += 1;
        }
    }
    fused
}

/// After the passes only convolutions and pooling may remain.
fn check_fused(net: &Network) -> Result<(), GpuError> {
    for node in &net.nodes {
        let what = match &node.op {
            Op::BatchNorm { .. } => "a BatchNormalization that follows no convolution (or one read elsewhere)",
            Op::Relu => "a Relu that follows no convolution",
            Op::Add(_) => "an Add of two values neither of which is a convolution read only by it",
            _ => continue,
        };
        return Err(GpuError::Network(format!("node {:?} is {what}; the GPU engine runs only fused convolution chains", node.name)));
    }
    Ok(())
}

/// Reads the ONNX graph into unfused nodes. Shape-only operators after global pooling (Flatten,
/// Reshape, Squeeze) and a final Softmax / ArgMax (the engine answers with the top-1 class, which
/// a softmax does not change) are dropped.
pub fn import(model: &pb::ModelProto) -> Result<Network, GpuError> {
    let graph = model.graph.as_ref().ok_or_else(|| GpuError::Network("the ONNX model has no graph".into()))?;
    let initializers: std::collections::HashMap<&str, &pb::TensorProto> = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
    let input = graph.input.iter().find(|i| !initializers.contains_key(i.name.as_str())).ok_or_else(|| GpuError::Network("the ONNX model has no image input".into()))?;
    let dims = input_dims(input)?;
    let (channels, height, width) = (dims[1], dims[2], dims[3]);
    let mut values: std::collections::HashMap<String, ValueId> = std::collections::HashMap::from([(input.name.clone(), 0)]);
    let mut net = Network { channels, height, width, nodes: Vec::new(), output: 0, classes: 0 };
    let mut pooled = false;

    for node in &graph.node {
        let name = if node.name.is_empty() { node.output.first().cloned().unwrap_or_default() } else { node.name.clone() };
        let at = |i: usize| -> Result<ValueId, GpuError> {
            let input = node.input.get(i).ok_or_else(|| GpuError::Network(format!("node {name:?} ({}) lacks input {i}", node.op_type)))?;
            values.get(input).copied().ok_or_else(|| GpuError::Network(format!("node {name:?} ({}) reads {input:?}, which no earlier node produces", node.op_type)))
        };
        let weight = |i: usize| -> Result<(Vec<usize>, Vec<f32>), GpuError> {
            let input = node.input.get(i).ok_or_else(|| GpuError::Network(format!("node {name:?} ({}) lacks input {i}", node.op_type)))?;
            let t =
                initializers.get(input.as_str()).ok_or_else(|| GpuError::Network(format!("node {name:?} ({}): input {input:?} must be a constant initializer", node.op_type)))?;
            Ok((t.dims.iter().map(|&d| d as usize).collect(), f32_values(t)?))
        };
        let op = match node.op_type.as_str() {
            "Conv" => {
                let (dims, w) = weight(1)?;
                let [cout, cin, kh, kw] = dims[..] else { return Err(GpuError::Network(format!("Conv {name:?}: weight must be 4-D, not {dims:?}"))) };
                let ints = |key: &str| attr_ints(node, key);
                let strides = ints("strides").unwrap_or_else(|| vec![1, 1]);
                let pads = ints("pads").unwrap_or_else(|| vec![0; 4]);
                if kh != kw || strides.iter().any(|&s| s != strides[0]) || pads.iter().any(|&p| p != pads[0]) {
                    return Err(GpuError::Network(format!(
                        "Conv {name:?}: only square kernels with equal strides and symmetric pads run on the GPU engine (kernel {kh}x{kw}, strides {strides:?}, pads {pads:?})"
                    )));
                }
                if ints("dilations").is_some_and(|d| d.iter().any(|&x| x != 1)) || attr_int(node, "group").is_some_and(|g| g != 1) {
                    return Err(GpuError::Network(format!("Conv {name:?}: dilated or grouped convolutions are not supported")));
                }
                let bias = if node.input.len() > 2 { weight(2)?.1 } else { vec![0.0; cout] };
                Op::Conv(Conv {
                    cin,
                    cout,
                    kernel: kh,
                    stride: strides[0] as usize,
                    pad: pads[0] as usize,
                    weight: w,
                    bias,
                    residual: None,
                    relu: false,
                    int8: None,
                    quantized_output: None,
                })
            }
            "BatchNormalization" => {
                Op::BatchNorm { scale: weight(1)?.1, shift: weight(2)?.1, mean: weight(3)?.1, variance: weight(4)?.1, epsilon: attr_float(node, "epsilon").unwrap_or(1e-5) }
            }
            "Relu" => Op::Relu,
            "Add" if initializers.contains_key(node.input[1].as_str()) => {
                // A classifier's bias after MatMul: fold into the preceding 1x1 convolution.
                let v = at(0)?;
                let (_, b) = weight(1)?;
                match net.nodes.get_mut(v.wrapping_sub(1)) {
                    Some(Node { op: Op::Conv(c), tensor, .. }) if c.bias.len() == b.len() => {
                        c.bias.iter_mut().zip(&b).for_each(|(x, y)| *x += y);
                        *tensor = node.output[0].clone();
                    }
                    _ => return Err(GpuError::Network(format!("Add {name:?}: a constant addend is supported only as a classifier bias"))),
                }
                values.insert(node.output[0].clone(), v);
                continue;
            }
            "Add" => Op::Add(at(1)?),
            "MaxPool" => {
                let k = attr_ints(node, "kernel_shape").unwrap_or_default();
                let s = attr_ints(node, "strides").unwrap_or_else(|| vec![1, 1]);
                let p = attr_ints(node, "pads").unwrap_or_else(|| vec![0; 4]);
                if k.len() != 2 || k[0] != k[1] || s[0] != s[1] || p.iter().any(|&x| x != p[0]) {
                    return Err(GpuError::Network(format!("MaxPool {name:?}: only square windows with symmetric pads are supported")));
                }
                Op::MaxPool { kernel: k[0] as usize, stride: s[0] as usize, pad: p[0] as usize, int8_output: None }
            }
            "GlobalAveragePool" => Op::GlobalAveragePool,
            "ReduceMean" if attr_ints(node, "axes").is_some_and(|a| a == [2, 3]) => Op::GlobalAveragePool,
            "Flatten" | "Reshape" | "Squeeze" | "Identity" | "Softmax" | "ArgMax" if pooled || node.op_type == "Identity" => {
                values.insert(node.output[0].clone(), at(0)?);
                continue;
            }
            "Gemm" | "MatMul" if pooled => {
                let (dims, w) = weight(1)?;
                let trans_b = node.op_type == "Gemm" && attr_int(node, "transB") == Some(1);
                if node.op_type == "Gemm"
                    && (attr_float(node, "alpha").unwrap_or(1.0) != 1.0 || attr_float(node, "beta").unwrap_or(1.0) != 1.0 || attr_int(node, "transA") == Some(1))
                {
                    return Err(GpuError::Network(format!("Gemm {name:?}: only alpha = beta = 1 without transA is supported")));
                }
                let [rows, cols] = dims[..] else { return Err(GpuError::Network(format!("{} {name:?}: weight must be 2-D", node.op_type))) };
                let (cout, cin) = if trans_b { (rows, cols) } else { (cols, rows) };
                // OIHW with 1x1 kernels is the [cout][cin] matrix.
                let weight = if trans_b { w } else { (0..cout).flat_map(|o| (0..cin).map(move |i| (o, i))).map(|(o, i)| w[i * cout + o]).collect() };
                let bias = if node.input.len() > 2 { weight_bias(&initializers, &node.input[2], cout)? } else { vec![0.0; cout] };
                Op::Conv(Conv { cin, cout, kernel: 1, stride: 1, pad: 0, weight, bias, residual: None, relu: false, int8: None, quantized_output: None })
            }
            other => {
                return Err(GpuError::Network(format!(
                    "node {name:?}: ONNX operator {other} is not supported by the GPU engine builder (it runs Conv, BatchNormalization, Relu, Add, MaxPool, GlobalAveragePool/ReduceMean, Gemm/MatMul and shape-only operators after pooling)"
                )));
            }
        };
        pooled |= matches!(op, Op::GlobalAveragePool);
        let input = at(0)?;
        net.nodes.push(Node { name, op, input, tensor: node.output[0].clone() });
        values.insert(node.output[0].clone(), net.nodes.len());
    }
    let output = graph.output.first().ok_or_else(|| GpuError::Network("the ONNX model has no output".into()))?;
    net.output = *values.get(&output.name).ok_or_else(|| GpuError::Network(format!("output {:?} is produced by no node", output.name)))?;
    net.classes = net.shapes()[net.output].0;
    Ok(net)
}

fn weight_bias(initializers: &std::collections::HashMap<&str, &pb::TensorProto>, name: &str, n: usize) -> Result<Vec<f32>, GpuError> {
    let t = initializers.get(name).ok_or_else(|| GpuError::Network(format!("bias {name:?} must be a constant initializer")))?;
    let v = f32_values(t)?;
    if v.len() != n {
        return Err(GpuError::Network(format!("bias {name:?} has {} values, expected {n}", v.len())));
    }
    Ok(v)
}

fn input_dims(input: &pb::ValueInfoProto) -> Result<Vec<usize>, GpuError> {
    use pb::tensor_shape_proto::dimension::Value;
    use pb::type_proto::Value as TypeValue;
    let Some(TypeValue::TensorType(t)) = input.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
        return Err(GpuError::Network(format!("input {:?} is not a tensor", input.name)));
    };
    let dims: Vec<Option<usize>> = t.shape.as_ref().map_or(Vec::new(), |s| {
        s.dim
            .iter()
            .map(|d| match d.value {
                Some(Value::DimValue(v)) if v > 0 => Some(v as usize),
                _ => None,
            })
            .collect()
    });
    match dims[..] {
        [_, Some(c), Some(h), Some(w)] => Ok(vec![0, c, h, w]),
        _ => Err(GpuError::Network(format!("input {:?} must be NCHW with fixed C, H and W (any batch), not {dims:?}", input.name))),
    }
}

/// Which buffer each value lives in while a batch runs: values whose last reader has run give
/// their buffer to later ones, so a 53-convolution network needs a handful of activation buffers.
/// Returns (buffer of each value, elements per sample of each buffer).
pub fn assign_buffers(net: &Network) -> (Vec<usize>, Vec<usize>) {
    let shapes = net.shapes();
    let mut last_use = vec![0usize; shapes.len()];
    for (i, node) in net.nodes.iter().enumerate() {
        last_use[node.input] = i;
        if let Op::Conv(Conv { residual: Some(r), .. }) | Op::Add(r) = &node.op {
            last_use[*r] = i;
        }
    }
    last_use[net.output] = usize::MAX;
    let mut buffer_of = vec![0usize; shapes.len()];
    let mut sizes: Vec<usize> = vec![shapes[0].0 * shapes[0].1 * shapes[0].2];
    let mut free_at: Vec<usize> = vec![last_use[0]]; // node index after which each buffer is free
    for (i, _) in net.nodes.iter().enumerate() {
        let value = i + 1;
        let (c, h, w) = shapes[value];
        // A buffer is reusable when its value's last reader ran before this node (never the node's
        // own inputs: cuDNN does not compute in place).
        let slot = (0..sizes.len()).find(|&b| free_at[b] < i);
        let b = slot.unwrap_or_else(|| {
            sizes.push(0);
            free_at.push(0);
            sizes.len() - 1
        });
        sizes[b] = sizes[b].max(c * h * w);
        free_at[b] = last_use[value];
        buffer_of[value] = b;
    }
    (buffer_of, sizes)
}
