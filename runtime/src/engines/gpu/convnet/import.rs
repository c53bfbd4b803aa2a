//! ONNX import for the convnet engine: a static-shape network (batch and input dims fixed at build
//! time) read from a `ModelProto` into [`Net`]: values with channels-last shapes (channels padded to
//! a multiple of [`CHANNEL_ALIGN`] for tensor cores), ops with their weights in the GPU's layout in
//! one blob, and the fusions the GPU runs in one step: Conv + Relu, Conv + SiLU (`x * Sigmoid(x)`),
//! InstanceNormalization + Relu. Shape work (YOLO's attention and detection head: Reshape,
//! Transpose, MatMul, Softmax, broadcast arithmetic) runs on *dense* values, f32 in the ONNX
//! logical order ([`tensor`](super::tensor)), converted from and to images where ops meet. CPU only,
//! tested in CI.

use crate::engines::gpu::GpuError;
use crate::engines::gpu::graph::plan::SerializedPlan;
use crate::engines::onnx_reader::{attr, attr_float, attr_int, attr_ints, f32_values};
use half::f16;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use tract_onnx::pb;

/// Channel counts are padded to this (cuDNN's fp16 tensor-core kernels want multiples of 8).
pub const CHANNEL_ALIGN: usize = 8;

fn network(msg: impl Into<String>) -> GpuError {
    GpuError::Network(msg.into())
}

/// A value's per-sample shape: logical channels, their padded count (the channels-last row), and
/// the spatial dims (1 to 3 of them); or, `dense`, a row-major f32 tensor of dims
/// `[channels, spatial...]` (any rank from 1, nothing padded).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValueShape {
    pub channels: usize,
    pub padded: usize,
    pub spatial: Vec<usize>,
    pub dense: bool,
}

impl ValueShape {
    pub(super) fn new(channels: usize, spatial: Vec<usize>) -> ValueShape {
        ValueShape { channels, padded: channels.next_multiple_of(CHANNEL_ALIGN), spatial, dense: false }
    }

    /// A dense value of per-sample `dims` (at least one).
    pub(super) fn dense(dims: &[usize]) -> ValueShape {
        ValueShape { channels: dims[0], padded: dims[0], spatial: dims[1..].to_vec(), dense: true }
    }

    /// The logical per-sample dims, `[channels, spatial...]`.
    pub fn dims(&self) -> Vec<usize> {
        std::iter::once(self.channels).chain(self.spatial.iter().copied()).collect()
    }

    /// Bytes per sample: fp16 images, f32 dense values.
    pub fn bytes(&self) -> usize {
        self.elements() * if self.dense { 4 } else { 2 }
    }

    /// Spatial positions per sample.
    pub fn positions(&self) -> usize {
        self.spatial.iter().product()
    }

    /// Stored elements per sample (padded channels).
    pub fn elements(&self) -> usize {
        self.positions() * self.padded
    }
}

/// An activation fused after an op.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Act {
    None,
    Relu,
    Sigmoid,
    /// `x * sigmoid(x)`.
    Silu,
}

impl Act {
    /// The kernels' code for it (`kernels.cu`'s `act`).
    pub fn code(self) -> i32 {
        match self {
            Act::None => 0,
            Act::Relu => 1,
            Act::Sigmoid => 2,
            Act::Silu => 3,
        }
    }
}

/// Geometry of a convolution over `spatial.len()` dims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConvGeometry {
    pub kernel: Vec<usize>,
    pub stride: Vec<usize>,
    pub pad: Vec<usize>,
    pub dilation: Vec<usize>,
    pub groups: usize,
}

impl ConvGeometry {
    /// 2-D with one group: what cuDNN's fused graphs run, with strided rows and a residual.
    pub fn is_plain_2d(&self) -> bool {
        self.groups == 1 && self.kernel.len() == 2
    }

    /// 2-D, one channel per group (`channels` of them), undilated, its fp16 weights within
    /// [`KERNEL_SHARED_BYTES`]: what our `depthwise` kernel runs with its bias and activation in
    /// one pass (cuDNN's algorithms leave the epilogue to a second one and are slow at small batches).
    pub fn is_depthwise_2d(&self, channels: usize) -> bool {
        self.kernel.len() == 2 && self.groups == channels && self.dilation.iter().all(|&d| d == 1) && self.depthwise_weight_bytes(channels) <= KERNEL_SHARED_BYTES
    }

    /// The fp16 weights of a depthwise convolution over `channels`: what the `depthwise` kernel
    /// copies into shared memory.
    pub fn depthwise_weight_bytes(&self, channels: usize) -> usize {
        channels * self.kernel.iter().product::<usize>() * 2
    }
}

impl ConvGeometry {
    /// What `few_channel_conv` lays out in shared memory for inputs of `x_padded` channels and
    /// outputs of `y_padded`: per k-step of 16 values (taps x channels), the B fragments (per 8
    /// outputs two 32-bit words a lane) and its two halves' taps (two i32 each).
    pub fn few_channel_shared_bytes(&self, x_padded: usize, y_padded: usize) -> usize {
        (self.kernel.iter().product::<usize>() * x_padded).div_ceil(16) * ((y_padded / 8) * 32 * 8 + 2 * 8)
    }
}

/// The most output channels `few_channel_conv` computes (a warp's 8 accumulator tiles).
pub const FEW_CHANNEL_OUTPUTS: usize = 64;

/// A convolution one of our kernels runs instead of cuDNN, where the builder timed it faster.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum OwnKernel {
    /// `kernels.cu`'s `depthwise`, its bias and activation in the same pass ([`ConvGeometry::is_depthwise_2d`]).
    Depthwise,
    /// `kernels.cu`'s `few_channel_conv` on tensor cores: inputs of 8 or 16 padded channels (a stem).
    FewChannels,
}

impl std::fmt::Display for OwnKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str(match self {
            OwnKernel::Depthwise => "depthwise kernel",
            OwnKernel::FewChannels => "few-channel kernel",
        })
    }
}

/// Our convolution kernels hold a layer's weights in shared memory: at most the 48 KiB a block gets
/// without opting in (a depthwise 3x3 layer of up to 2,730 channels).
pub const KERNEL_SHARED_BYTES: usize = 48 * 1024;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum OpKind {
    /// Cross-correlation; fp16 weights `[K, kernel..., C / groups]` (padded) at `weights`, f32 bias
    /// `[K padded]` at `bias` if any; `algorithm` is cuDNN's forward algorithm, chosen by timing,
    /// unless the builder found `graph` faster: a cuDNN graph running the convolution with its
    /// bias and activation in one kernel (2-D, one group). A second input is a residual, added
    /// after the activation (a residual sum fused into its convolution: [`fuse_residuals`]).
    /// `depthwise`: our kernel runs it instead ([`ConvGeometry::is_depthwise_2d`], where the
    /// builder timed it faster than cuDNN's algorithms); `own`: one of our kernels runs it, where
    /// the builder timed it faster than cuDNN ([`Net::own_kernel`]).
    Conv { geometry: ConvGeometry, weights: usize, bias: Option<usize>, act: Act, algorithm: i32, workspace: usize, graph: Option<SerializedPlan>, own: Option<OwnKernel> },
    /// Transposed convolution with kernel = stride, no padding, run as cuDNN's backward data of the
    /// convolution it transposes: fp16 weights `[C_in, kernel..., C_out]` (padded), f32 bias.
    ConvTranspose { geometry: ConvGeometry, weights: usize, bias: Option<usize>, algorithm: i32, workspace: usize },
    /// Per sample and channel: `act((x - mean) / sqrt(var + epsilon) * scale + shift)`; f32 scale
    /// and shift `[C padded]` (zero on padding) at `params`.
    InstanceNorm { params: usize, epsilon: f32, act: Act },
    /// Channel concatenation; each input's channels copied into their slice of the output's rows.
    Concat,
    /// An activation alone.
    Activation(Act),
    /// The shape and tensor ops of [`super::tensor`].
    Tensor(TensorOp),
}

/// The tensor ops' kinds (imported by [`super::tensor`], run by `tensor_exec`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    /// The kernels' code for it (`tensor.cu`'s `binary`).
    pub fn code(self) -> i32 {
        self as i32
    }
}

/// An operand of a dense binary op: one of the op's inputs, or f32 constants in the blob.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Operand {
    Input(usize),
    Constant(usize),
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum TensorOp {
    /// Image -> dense (the output's dims may differ in rank: a Reshape of the logical order).
    ToDense,
    /// Dense -> image (fp16 channels-last, padded).
    ToImage,
    /// Max pooling over an image's spatial dims (-inf padding, as ONNX's).
    MaxPool { kernel: Vec<usize>, stride: Vec<usize>, pad: Vec<usize> },
    /// Nearest upsampling of an image by integer factors.
    Upsample { scale: Vec<usize> },
    /// An image of C channels (at most [`SPACE_TO_DEPTH_CHANNELS`]) as 4 x C channels at half its
    /// resolution: `y[Y, X, (sy * 2 + sx) * C + c] = x[2Y - pad[0] + sy, 2X - pad[1] + sx, c]`, zero
    /// outside the image ([`space_to_depth_stems`]).
    SpaceToDepth { pad: Vec<usize> },
    /// The image's channels [offset, offset + the output's).
    ChannelSlice { offset: usize },
    /// The sum of two images of one shape.
    ImageAdd,
    /// Dense copies, one per input: per sample and index `i` over `dims`,
    /// `y[y_offset + i . y_strides] = x[x_offset + i . x_strides]`. `tables[j]` is input j's i64
    /// table in the blob (dims, x strides, y strides, x offset, y offset), `counts[j]` its indices.
    Copy { tables: Vec<usize>, counts: Vec<usize>, rank: usize },
    /// `y[i] = a[i . a_strides] op b[i . b_strides]` per sample over the output's dims; the i64 table
    /// (dims, a strides, b strides) at `table`.
    Binary { op: BinOp, a: Operand, b: Operand, table: usize, rank: usize },
    /// Softmax over `len` entries `inner` apart, `outer` groups per sample.
    Softmax { outer: usize, len: usize, inner: usize },
    /// Per sample `batches` products `alpha [m, k] x [k, n]`, row-major; an operand `transposed`
    /// is stored as its transpose (`[k, m]`, `[n, k]`): the Transpose before it is never copied.
    /// `alpha` is a scalar Mul after the product, folded in ([`fold_scales`]).
    MatMul { batches: usize, m: usize, k: usize, n: usize, a_transposed: bool, b_transposed: bool, alpha: f32 },
    /// An activation of a dense value.
    Activation(Act),
    /// A 1x1 convolution of a dense `[c, rest]` value: `y[o, r] = act(sum_c w[o, c] x[c, r] + b[o])`,
    /// f32 weights `[k, c]` and bias.
    Pointwise { weights: usize, bias: Option<usize>, k: usize, c: usize, rest: usize, act: Act },
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Op {
    pub name: String,
    pub kind: OpKind,
    pub inputs: Vec<usize>,
    pub output: usize,
}

/// A value's rows: channels `[offset, offset + padded)` of the rows of value `root`'s buffer (its
/// own buffer when `root` is the value itself, at offset 0). Rows are `root`'s padded width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Place {
    pub root: usize,
    pub offset: usize,
}

impl Place {
    /// Value `v` in its own buffer.
    pub fn own(v: usize) -> Place {
        Place { root: v, offset: 0 }
    }
}

/// The imported network: value 0 is the input; each op writes one value, whose rows lie where
/// `places` says (each value its own as imported; [`super::place::places`] moves them). `outputs`
/// are what a run leaves readable: the model's output, or the values a family cut it at ([`Cut`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Net {
    pub values: Vec<ValueShape>,
    pub ops: Vec<Op>,
    pub outputs: Vec<usize>,
    pub places: Vec<Place>,
}

/// Where a family ends a network before its model does, to run the rest with kernels of its own
/// (YOLO's detection head: the three levels' raw rows, decoded on the device by the family's
/// kernel, instead of some twenty dense reshuffles). `name` goes into the plan's key, so a plan
/// cut otherwise (or not at all) is stale.
#[derive(Clone, Copy, Debug)]
pub struct Cut {
    pub name: &'static str,
    /// The values the network ends at, found in the imported net.
    pub outputs: fn(&Net) -> Result<Vec<usize>, GpuError>,
}

impl Net {
    /// The first output: the model's own unless the net was cut.
    pub fn output(&self) -> usize {
        self.outputs[0]
    }

    pub fn is_output(&self, v: usize) -> bool {
        self.outputs.contains(&v)
    }

    /// Ends the network at `outputs` (values of it): what only the rest reads is dropped.
    pub fn cut(&mut self, outputs: Vec<usize>) -> Result<(), GpuError> {
        if outputs.is_empty() || outputs.iter().any(|&v| v >= self.values.len()) {
            return Err(network(format!("a cut at values {outputs:?} of a network of {} values", self.values.len())));
        }
        self.outputs = outputs;
        drop_unread(self);
        Ok(())
    }

    /// Every value in its own buffer (as imported).
    pub fn own_places(&self) -> Vec<Place> {
        (0..self.values.len()).map(Place::own).collect()
    }

    /// Whether value `value` already lies at channel `at` of value `of`'s rows (placed there): a
    /// concatenation or a slice has nothing to copy.
    pub fn lies_in(&self, value: usize, of: usize, at: usize) -> bool {
        self.places[value] == Place { root: self.places[of].root, offset: self.places[of].offset + at }
    }

    /// Which of our kernels can run convolution `op` instead of cuDNN (the builder times it).
    pub fn own_kernel(&self, op: &Op) -> Option<OwnKernel> {
        let OpKind::Conv { geometry: g, .. } = &op.kind else { return None };
        let (x, y) = (&self.values[op.inputs[0]], &self.values[op.output]);
        if g.is_depthwise_2d(x.channels) {
            return Some(OwnKernel::Depthwise);
        }
        let few = g.is_plain_2d()
            && g.dilation == [1, 1]
            && !x.dense
            && matches!(x.padded, 8 | 16)
            && y.padded <= FEW_CHANNEL_OUTPUTS
            && op.inputs.len() == 1
            && g.few_channel_shared_bytes(x.padded, y.padded) <= KERNEL_SHARED_BYTES;
        few.then_some(OwnKernel::FewChannels)
    }

    /// Per value: the op that writes it (if any) and the ops that read it (each once).
    pub fn uses(&self) -> (Vec<Option<usize>>, Vec<Vec<usize>>) {
        let mut producer = vec![None; self.values.len()];
        let mut readers = vec![Vec::new(); self.values.len()];
        for (i, op) in self.ops.iter().enumerate() {
            producer[op.output] = Some(i);
            for &v in &op.inputs {
                if !readers[v].contains(&i) {
                    readers[v].push(i);
                }
            }
        }
        (producer, readers)
    }
}

/// Weights in the GPU's layout, appended 256-byte aligned.
#[derive(Debug, Default)]
pub struct Blob(pub Vec<u8>);

impl Blob {
    pub(super) fn push(&mut self, bytes: &[u8]) -> usize {
        let at = self.0.len().next_multiple_of(256);
        self.0.resize(at, 0);
        self.0.extend_from_slice(bytes);
        at
    }
    fn push_f16(&mut self, values: &[f32]) -> usize {
        let bytes: Vec<u8> = values.iter().flat_map(|&v| f16::from_f32(v).to_le_bytes()).collect();
        self.push(&bytes)
    }
    pub(super) fn push_f32(&mut self, values: &[f32]) -> usize {
        let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
        self.push(&bytes)
    }
}

/// `values` (length `n`) zero-padded to `padded`.
fn padded(mut values: Vec<f32>, padded: usize) -> Vec<f32> {
    values.resize(padded, 0.0);
    values
}

/// The network of `model` for inputs of per-sample shape `[C, spatial...]` (NC... order, as ONNX
/// has them), and its weight blob.
pub fn import(model: &pb::ModelProto, input: &[usize]) -> Result<(Net, Blob), GpuError> {
    let graph = model.graph.as_ref().ok_or_else(|| network("the ONNX model has no graph"))?;
    let inits: HashMap<&str, &pb::TensorProto> = graph.initializer.iter().map(|t| (t.name.as_str(), t)).collect();
    let graph_input = graph.input.iter().find(|i| !inits.contains_key(i.name.as_str())).ok_or_else(|| network("the ONNX model has no input"))?;
    let [channels, spatial @ ..] = input else { return Err(network("the input shape is empty")) };
    if spatial.is_empty() || spatial.len() > 3 {
        return Err(network(format!("input shape {input:?}: the convnet engine takes 1 to 3 spatial dims")));
    }
    let mut b = Importer {
        inits,
        ints: HashMap::new(),
        ids: HashMap::new(),
        net: Net { values: vec![ValueShape::new(*channels, spatial.to_vec())], ops: Vec::new(), outputs: Vec::new(), places: Vec::new() },
        blob: Blob::default(),
        swapped: HashMap::new(),
    };
    b.ids.insert(graph_input.name.clone(), 0);
    // Consumers of each name, for fusion: an activation is fused when its producer has no other.
    let mut consumers: HashMap<&str, Vec<usize>> = HashMap::new();
    for (i, node) in graph.node.iter().enumerate() {
        for input in &node.input {
            consumers.entry(input.as_str()).or_default().push(i);
        }
    }
    let mut done = vec![false; graph.node.len()];
    for (i, node) in graph.node.iter().enumerate() {
        if done[i] {
            continue;
        }
        // The fusable activation after node i: (act, the node whose output is the fused result, nodes eaten).
        let only = |name: &str| consumers.get(name).map(|c| c.as_slice()).unwrap_or(&[]).to_vec();
        let out = node.output.first().ok_or_else(|| network(format!("node {} has no output", node.name)))?;
        let (act, last, eaten) = match only(out).as_slice() {
            [j] if graph.node[*j].op_type == "Relu" => (Act::Relu, *j, vec![*j]),
            [s, m] | [m, s]
                if graph.node[*s].op_type == "Sigmoid"
                    && graph.node[*m].op_type == "Mul"
                    && only(&graph.node[*s].output[0]) == [*m]
                    && graph.node[*m].input.contains(&graph.node[*s].output[0]) =>
            {
                (Act::Silu, *m, vec![*s, *m])
            }
            _ => (Act::None, i, vec![]),
        };
        let fusable = matches!(node.op_type.as_str(), "Conv" | "InstanceNormalization");
        let (act, last) = if fusable && act != Act::None {
            eaten.iter().for_each(|&j| done[j] = true);
            (act, last)
        } else {
            (Act::None, i)
        };
        let result = &graph.node[last].output[0];
        // InstanceNorm subtracts each channel's mean, so a per-channel bias before it cancels
        // exactly: a convolution feeding only a norm skips its bias pass.
        let normalised = act == Act::None && matches!(only(out).as_slice(), [j] if graph.node[*j].op_type == "InstanceNormalization");
        if b.tensor_node(node, &graph.node[last].output[0], act)? {
            continue;
        }
        let kind = match node.op_type.as_str() {
            "Conv" => b.conv(node, act, !normalised)?,
            "ConvTranspose" => b.conv_transpose(node)?,
            "InstanceNormalization" => b.instance_norm(node, act)?,
            "Concat" => b.concat(node)?,
            "Relu" => b.activation(node, Act::Relu)?,
            "Sigmoid" => b.activation(node, Act::Sigmoid)?,
            other => return Err(network(format!("node {}: op {other} is not one the convnet engine runs", node.name))),
        };
        b.emit(node, kind, result)?;
    }
    let out = graph.output.first().ok_or_else(|| network("the ONNX model has no output"))?;
    b.net.outputs = vec![b.value(&out.name)?];
    drop_unread(&mut b.net);
    fuse_residuals(&mut b.net);
    fold_scales(&mut b.net, &b.blob);
    space_to_depth_stems(&mut b.net, &mut b.blob);
    b.net.places = b.net.own_places();
    Ok((b.net, b.blob))
}

/// Removes the ops whose values nothing reads (transposes a MatMul reads through), last first so
/// that what only they read goes too. Their values stay, without a producer: no buffer is made.
fn drop_unread(net: &mut Net) {
    let mut read = vec![false; net.values.len()];
    net.outputs.iter().for_each(|&v| read[v] = true);
    let mut kept = Vec::new();
    for op in std::mem::take(&mut net.ops).into_iter().rev() {
        if read[op.output] {
            op.inputs.iter().for_each(|&v| read[v] = true);
            kept.push(op);
        }
    }
    kept.reverse();
    net.ops = kept;
}

/// Folds each sum of two images into the convolution that makes one of them, when nothing else
/// reads that convolution's output and the other operand is ready before it runs: the
/// convolution then writes the sum (YOLO's bottlenecks and attention blocks). The folded value
/// keeps no producer: no buffer is made.
fn fuse_residuals(net: &mut Net) {
    let (producer, readers) = net.uses();
    let mut fused = Vec::new();
    for i in 0..net.ops.len() {
        let (op, sum) = (&net.ops[i], net.ops[i].output);
        if op.kind != OpKind::Tensor(TensorOp::ImageAdd) {
            continue;
        }
        let ready = |v: usize, before: usize| producer[v].is_none_or(|p| p < before);
        let folds = |c: usize, other: usize| {
            let p = producer[c]?;
            let fits = matches!(&net.ops[p].kind, OpKind::Conv { geometry, .. } if geometry.is_plain_2d());
            (fits && net.ops[p].inputs.len() == 1 && readers[c].len() == 1 && !net.is_output(c) && c != other && ready(other, p)).then_some((p, other))
        };
        let [a, b] = [op.inputs[0], op.inputs[1]];
        if let Some((p, other)) = folds(b, a).or_else(|| folds(a, b)) {
            net.ops[p].inputs.push(other);
            net.ops[p].output = sum;
            fused.push(i);
        }
    }
    remove_ops(net, &fused);
}

/// Removes the ops at `indices` (folded into others).
fn remove_ops(net: &mut Net, indices: &[usize]) {
    let mut index = 0;
    net.ops.retain(|_| {
        index += 1;
        !indices.contains(&(index - 1))
    });
}

/// Folds each product by a scalar constant into the MatMul that makes its other operand, when
/// nothing else reads the MatMul's output (the attention's `scores * scale`).
fn fold_scales(net: &mut Net, blob: &Blob) {
    let (producer, readers) = net.uses();
    let i64_at = |at: usize| i64::from_le_bytes(blob.0[at..at + 8].try_into().expect("8 bytes"));
    let mut folded = Vec::new();
    for i in 0..net.ops.len() {
        let OpKind::Tensor(TensorOp::Binary { op: BinOp::Mul, a: Operand::Input(0), b: Operand::Constant(at), table, rank }) = net.ops[i].kind else { continue };
        // The table: dims, a's strides, b's strides; a scalar's strides are all 0.
        let scalar = (0..rank).all(|d| i64_at(table + 8 * (2 * rank + d)) == 0);
        let x = net.ops[i].inputs[0];
        let Some(p) = producer[x] else { continue };
        if !scalar || readers[x].len() != 1 || net.is_output(x) {
            continue;
        }
        if let OpKind::Tensor(TensorOp::MatMul { alpha, .. }) = &mut net.ops[p].kind {
            *alpha *= f32::from_le_bytes(blob.0[at..at + 4].try_into().expect("4 bytes"));
            net.ops[p].output = net.ops[i].output;
            folded.push(i);
        }
    }
    remove_ops(net, &folded);
}

/// Input channels up to which a stride-2 convolution runs as a space-to-depth and a stride-1 one.
pub const SPACE_TO_DEPTH_CHANNELS: usize = 4;

/// Rewrites each stride-2 2-D convolution of an image of at most [`SPACE_TO_DEPTH_CHANNELS`]
/// channels (an image network's stem: 3 colours in rows padded to 8) as a space-to-depth of its
/// input ([`TensorOp::SpaceToDepth`]) and a stride-1 unpadded convolution of a kernel half the
/// size over it: the same sums, but cuDNN reads 16 channels a tap over a quarter of the positions
/// instead of 8 mostly-zero ones over all of them (YOLO's stem, 3 -> 64 channels at 640 px, took
/// 1.5 ms a batch of 64 on an H200 as it was). Row `Y` of the new value holds input rows `2Y - pad`
/// and `2Y - pad + 1`, so kernel row `ky` of output row `oy` (input row `2 oy - pad + ky`) is new
/// row `oy + ky / 2`, sub-row `ky % 2`; the same for columns. The new value is numbered just before
/// the convolution's output, so values stay in dataflow order; the direct layout's weights stay in
/// the blob unread (a stem's few KB).
fn space_to_depth_stems(net: &mut Net, blob: &mut Blob) {
    let stems: Vec<usize> = (0..net.ops.len())
        .filter(|&i| {
            let x = &net.values[net.ops[i].inputs[0]];
            let fits = |g: &ConvGeometry| g.is_plain_2d() && g.stride == [2, 2] && g.dilation == [1, 1];
            matches!(&net.ops[i].kind, OpKind::Conv { geometry, .. } if fits(geometry)) && !x.dense && x.channels <= SPACE_TO_DEPTH_CHANNELS && x.padded > x.channels
        })
        .collect();
    // Last first: inserting an op and a value moves only what comes after them.
    for &i in stems.iter().rev() {
        let (x, y) = (net.values[net.ops[i].inputs[0]].clone(), net.values[net.ops[i].output].clone());
        let OpKind::Conv { geometry: g, weights, .. } = &mut net.ops[i].kind else { unreachable!("picked above") };
        let half = [g.kernel[0].div_ceil(2), g.kernel[1].div_ceil(2)];
        let s = ValueShape::new(4 * x.channels, vec![y.spatial[0] + half[0] - 1, y.spatial[1] + half[1] - 1]);
        // [K, kh, kw, C padded] -> [K, kh / 2, kw / 2, (sub-row, sub-column, C) padded], f16 bits as they are.
        let mut w = vec![0u8; 2 * y.padded * half[0] * half[1] * s.padded];
        for o in 0..y.padded {
            for ky in 0..g.kernel[0] {
                for kx in 0..g.kernel[1] {
                    for c in 0..x.channels {
                        let from = *weights + 2 * ((o * g.kernel[0] * g.kernel[1] + ky * g.kernel[1] + kx) * x.padded + c);
                        let to = 2 * ((o * half[0] * half[1] + (ky / 2) * half[1] + kx / 2) * s.padded + ((ky % 2) * 2 + kx % 2) * x.channels + c);
                        w[to..to + 2].copy_from_slice(&blob.0[from..from + 2]);
                    }
                }
            }
        }
        *weights = blob.push(&w);
        let pad = std::mem::replace(&mut g.pad, vec![0, 0]);
        (g.kernel, g.stride) = (half.to_vec(), vec![1, 1]);
        let at = net.ops[i].output;
        net.values.insert(at, s);
        let later = |v: &mut usize| *v += usize::from(*v >= at);
        for op in &mut net.ops {
            op.inputs.iter_mut().for_each(later);
            later(&mut op.output);
        }
        net.outputs.iter_mut().for_each(later);
        let input = std::mem::replace(&mut net.ops[i].inputs[0], at);
        let name = format!("{}.space_to_depth", net.ops[i].name);
        net.ops.insert(i, Op { name, kind: OpKind::Tensor(TensorOp::SpaceToDepth { pad }), inputs: vec![input], output: at });
    }
}

/// An initializer's dims and values.
type Constant = (Vec<usize>, Vec<f32>);

pub(super) struct Importer<'a> {
    pub(super) inits: HashMap<&'a str, &'a pb::TensorProto>,
    /// Integer tensors known at import: shapes, split sizes, axes (initializers, Constant and
    /// Shape nodes).
    pub(super) ints: HashMap<String, Vec<i64>>,
    pub(super) ids: HashMap<String, usize>,
    pub(super) net: Net,
    pub(super) blob: Blob,
    /// Values that are another's last two per-sample dims swapped (a Transpose), and that other:
    /// a MatMul reads the source transposed instead of the copy.
    pub(super) swapped: HashMap<usize, usize>,
}

impl<'a> Importer<'a> {
    pub(super) fn value(&self, name: &str) -> Result<usize, GpuError> {
        self.ids.get(name).copied().ok_or_else(|| network(format!("value {name:?} is used before any op writes it (or is not a tensor the engine computes)")))
    }

    pub(super) fn init(&self, node: &pb::NodeProto, index: usize) -> Result<Option<Constant>, GpuError> {
        let Some(name) = node.input.get(index).filter(|n| !n.is_empty()) else { return Ok(None) };
        let t = self.inits.get(name.as_str()).ok_or_else(|| network(format!("node {}: input {name:?} must be a constant initializer", node.name)))?;
        Ok(Some((t.dims.iter().map(|&d| d as usize).collect(), f32_values(t)?)))
    }

    fn required(&self, node: &pb::NodeProto, index: usize, what: &str) -> Result<Constant, GpuError> {
        self.init(node, index)?.ok_or_else(|| network(format!("node {}: no {what}", node.name)))
    }

    pub(super) fn input_shape(&self, node: &pb::NodeProto) -> Result<ValueShape, GpuError> {
        let name = node.input.first().ok_or_else(|| network(format!("node {} has no input", node.name)))?;
        Ok(self.net.values[self.value(name)?].clone())
    }

    /// Kernel, strides, pads (begin = end required), dilations and groups of a (transposed) convolution.
    pub(super) fn geometry(&self, node: &pb::NodeProto, kernel: &[usize]) -> Result<ConvGeometry, GpuError> {
        let dims = kernel.len();
        let get = |key: &str, default: usize| -> Vec<usize> { attr_ints(node, key).map(|v| v.iter().map(|&x| x as usize).collect()).unwrap_or(vec![default; dims]) };
        let pads = attr_ints(node, "pads").map(|v| v.iter().map(|&x| x as usize).collect()).unwrap_or(vec![0; 2 * dims]);
        if pads.len() != 2 * dims || pads[..dims] != pads[dims..] {
            return Err(network(format!("node {}: pads {pads:?} are not symmetric (the engine pads both ends alike)", node.name)));
        }
        if attr(node, "auto_pad").is_some_and(|a| !a.s.is_empty() && a.s != b"NOTSET") {
            return Err(network(format!("node {}: auto_pad is not supported; export with explicit pads", node.name)));
        }
        Ok(ConvGeometry {
            kernel: kernel.to_vec(),
            stride: get("strides", 1),
            pad: pads[..dims].to_vec(),
            dilation: get("dilations", 1),
            groups: attr_int(node, "group").unwrap_or(1) as usize,
        })
    }

    /// A convolution; its bias (if any) is kept only `with_bias`.
    pub(super) fn conv(&mut self, node: &pb::NodeProto, act: Act, with_bias: bool) -> Result<OpKind, GpuError> {
        let x = self.input_shape(node)?;
        let (dims, w) = self.required(node, 1, "weights")?;
        let [k, cg, kernel @ ..] = dims.as_slice() else { return Err(network(format!("node {}: weights of shape {dims:?}", node.name))) };
        let g = self.geometry(node, kernel)?;
        if kernel.len() != x.spatial.len() || cg * g.groups != x.channels || k % g.groups != 0 {
            return Err(network(format!(
                "node {}: weights {dims:?} with {} groups do not fit an input of {} channels and {} spatial dims",
                node.name,
                g.groups,
                x.channels,
                x.spatial.len()
            )));
        }
        // Grouped convolutions keep their channel counts (padding would break the groups' slices).
        let (kp, cp) = if g.groups == 1 { (k.next_multiple_of(CHANNEL_ALIGN), x.padded) } else { (*k, *cg) };
        if g.groups > 1 && (x.padded != x.channels || !k.is_multiple_of(CHANNEL_ALIGN)) {
            return Err(network(format!("node {}: a grouped convolution needs channel counts that are multiples of {CHANNEL_ALIGN}", node.name)));
        }
        let taps: usize = kernel.iter().product();
        // ONNX [K, C, taps] -> [Kp, taps, Cp], zero-padded.
        let mut krsc = vec![0f32; kp * taps * cp];
        for o in 0..*k {
            for c in 0..*cg {
                for t in 0..taps {
                    krsc[(o * taps + t) * cp + c] = w[(o * cg + c) * taps + t];
                }
            }
        }
        let weights = self.blob.push_f16(&krsc);
        let bias = self.init(node, 2)?.filter(|_| with_bias).map(|(_, b)| self.blob.push_f32(&padded(b, kp)));
        Ok(OpKind::Conv { geometry: g, weights, bias, act, algorithm: -1, workspace: 0, graph: None, own: None })
    }

    fn conv_transpose(&mut self, node: &pb::NodeProto) -> Result<OpKind, GpuError> {
        let x = self.input_shape(node)?;
        let (dims, w) = self.required(node, 1, "weights")?;
        let [ci, co, kernel @ ..] = dims.as_slice() else { return Err(network(format!("node {}: weights of shape {dims:?}", node.name))) };
        let g = self.geometry(node, kernel)?;
        if *ci != x.channels || kernel.len() != x.spatial.len() || g.groups != 1 || g.stride != g.kernel || g.pad.iter().any(|&p| p != 0) || attr(node, "output_padding").is_some()
        {
            return Err(network(format!("node {}: the engine runs transposed convolutions of one group with stride = kernel and no padding", node.name)));
        }
        let taps: usize = kernel.iter().product();
        let cop = co.next_multiple_of(CHANNEL_ALIGN);
        // ONNX [Ci, Co, taps] -> [Ci padded, taps, Co padded]: the filter of the convolution it transposes.
        let mut layout = vec![0f32; x.padded * taps * cop];
        for i in 0..*ci {
            for o in 0..*co {
                for t in 0..taps {
                    layout[(i * taps + t) * cop + o] = w[(i * co + o) * taps + t];
                }
            }
        }
        let weights = self.blob.push_f16(&layout);
        let bias = self.init(node, 2)?.map(|(_, b)| self.blob.push_f32(&padded(b, cop)));
        Ok(OpKind::ConvTranspose { geometry: g, weights, bias, algorithm: -1, workspace: 0 })
    }

    fn instance_norm(&mut self, node: &pb::NodeProto, act: Act) -> Result<OpKind, GpuError> {
        let x = self.input_shape(node)?;
        let (_, scale) = self.required(node, 1, "scale")?;
        let (_, shift) = self.required(node, 2, "bias")?;
        if scale.len() != x.channels || shift.len() != x.channels {
            return Err(network(format!("node {}: {} scales and {} biases for {} channels", node.name, scale.len(), shift.len(), x.channels)));
        }
        let mut params = padded(scale, x.padded);
        params.extend(padded(shift, x.padded));
        Ok(OpKind::InstanceNorm { params: self.blob.push_f32(&params), epsilon: attr_float(node, "epsilon").unwrap_or(1e-5), act })
    }

    fn concat(&mut self, node: &pb::NodeProto) -> Result<OpKind, GpuError> {
        let axis = attr_int(node, "axis").unwrap_or(1);
        let first = self.input_shape(node)?;
        let rank = first.spatial.len() as i64 + 2;
        if axis != 1 && axis != 1 - rank {
            return Err(network(format!("node {}: concatenation on axis {axis}; the engine concatenates channels (axis 1)", node.name)));
        }
        for name in &node.input {
            let v = &self.net.values[self.value(name)?];
            if v.spatial != first.spatial {
                return Err(network(format!("node {}: input {name:?} ({v:?}) does not share the first input's spatial shape {:?}", node.name, first.spatial)));
            }
        }
        Ok(OpKind::Concat)
    }

    fn activation(&mut self, _node: &pb::NodeProto, act: Act) -> Result<OpKind, GpuError> {
        Ok(OpKind::Activation(act))
    }

    /// The output shape of `kind` on the node's inputs.
    fn output_shape(&self, node: &pb::NodeProto, kind: &OpKind) -> Result<ValueShape, GpuError> {
        let x = self.input_shape(node)?;
        Ok(match kind {
            OpKind::Conv { geometry: g, .. } => {
                let k = self.inits[node.input[1].as_str()].dims[0] as usize;
                let mut spatial = Vec::new();
                for (d, &s) in x.spatial.iter().enumerate() {
                    let span = g.dilation[d] * (g.kernel[d] - 1) + 1;
                    let padded = s + 2 * g.pad[d];
                    if padded < span {
                        return Err(network(format!("node {}: kernel {:?} larger than its padded input {:?}", node.name, g.kernel, x.spatial)));
                    }
                    spatial.push((padded - span) / g.stride[d] + 1);
                }
                ValueShape::new(k, spatial)
            }
            OpKind::ConvTranspose { geometry: g, .. } => {
                let co = self.inits[node.input[1].as_str()].dims[1] as usize;
                ValueShape::new(co, x.spatial.iter().zip(&g.stride).map(|(s, k)| s * k).collect())
            }
            OpKind::Concat => {
                let channels = node.input.iter().map(|n| self.value(n).map(|v| self.net.values[v].channels)).sum::<Result<usize, _>>()?;
                ValueShape::new(channels, x.spatial)
            }
            OpKind::InstanceNorm { .. } | OpKind::Activation(_) => x,
            OpKind::Tensor(_) => return Err(network(format!("node {}: a tensor op's shape comes from its importer", node.name))),
        })
    }

    fn emit(&mut self, node: &pb::NodeProto, kind: OpKind, result: &str) -> Result<(), GpuError> {
        let shape = self.output_shape(node, &kind)?;
        let inputs = match kind {
            OpKind::Concat => node.input.iter().map(|n| self.value(n)).collect::<Result<Vec<_>, _>>()?,
            _ => vec![self.value(&node.input[0])?],
        };
        self.push_op(&node.name, kind, inputs, shape, result);
        Ok(())
    }

    /// Appends an op writing a new value of `shape`, known as `result`; returns the value.
    pub(super) fn push_op(&mut self, name: &str, kind: OpKind, inputs: Vec<usize>, shape: ValueShape, result: &str) -> usize {
        self.net.values.push(shape);
        let output = self.net.values.len() - 1;
        self.ids.insert(result.to_string(), output);
        self.net.ops.push(Op { name: name.to_string(), kind, inputs, output });
        output
    }
}
