//! The pure description of a cuDNN operation graph: typed tensors and operations, the two patterns
//! we run, and the checks that would otherwise surface only as a bare NOT_SUPPORTED from cuDNN
//! after a whole graph is built (docs/cudnn-graph-api.md §2a, §2b, §5). No FFI.

use std::collections::HashMap;

/// A tensor's unique id in its graph; the variant pack binds device memory by it.
pub type Uid = i64;

/// Element types of tensors and computations.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    Int8,
    Int32,
    Half,
    Float,
}

impl DataType {
    pub fn bytes(self) -> i64 {
        match self {
            DataType::Int8 => 1,
            DataType::Half => 2,
            DataType::Int32 | DataType::Float => 4,
        }
    }
}

/// The byte alignment every tensor declares (as cuDNN's frontend does): support surface 90 needs
/// 128 bits for the convolution's and the matmul's inputs, and cudaMalloc gives 256.
pub const ALIGNMENT: i64 = 16;

#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    pub uid: Uid,
    /// For error messages.
    pub name: String,
    pub data_type: DataType,
    /// Logical dimensions: `[N, C, H, W]` for images, `[K, C, R, S]` for filters, `[B, M, N]` for
    /// matrices; the strides give the memory layout.
    pub dims: Vec<i64>,
    pub strides: Vec<i64>,
    /// Bytes the device address is guaranteed to be aligned to.
    pub alignment: i64,
    /// An intermediate that lives only inside the fused kernel: never bound, never in memory.
    pub is_virtual: bool,
}

impl Tensor {
    /// A packed channels-last tensor of logical dims `[n, c, h, w]`: NHWC for images, KRSC for
    /// filters `[k, c, r, s]` (the same strides).
    pub fn channels_last(uid: Uid, name: &str, data_type: DataType, [n, c, h, w]: [i64; 4]) -> Tensor {
        Tensor { uid, name: name.into(), data_type, dims: vec![n, c, h, w], strides: vec![h * w * c, 1, w * c, c], alignment: ALIGNMENT, is_virtual: false }
    }

    /// A channels-last image `[n, c, h, w]` whose positions are `row` elements apart (`row >= c`: the
    /// image is a slice of a wider one's channels).
    pub fn channels_last_in_rows(uid: Uid, name: &str, data_type: DataType, [n, c, h, w]: [i64; 4], row: i64) -> Tensor {
        Tensor { strides: vec![h * w * row, 1, w * row, row], ..Tensor::channels_last(uid, name, data_type, [n, c, h, w]) }
    }

    /// A packed row-major tensor: the last dimension contiguous.
    pub fn row_major(uid: Uid, name: &str, data_type: DataType, dims: &[i64]) -> Tensor {
        let mut strides = vec![1; dims.len()];
        for i in (0..dims.len().saturating_sub(1)).rev() {
            strides[i] = strides[i + 1] * dims[i + 1];
        }
        Tensor { uid, name: name.into(), data_type, dims: dims.to_vec(), strides, alignment: ALIGNMENT, is_virtual: false }
    }

    pub fn into_virtual(self) -> Tensor {
        Tensor { is_virtual: true, ..self }
    }

    pub fn elements(&self) -> i64 {
        self.dims.iter().product()
    }

    pub fn bytes(&self) -> i64 {
        self.elements() * self.data_type.bytes()
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointwiseMode {
    Add,
    Mul,
    ReluFwd,
    /// The erf form of GELU (BERT's), not the tanh approximation.
    GeluFwd,
    /// A plain copy, which converts to the output tensor's type.
    Identity,
    /// `x * sigmoid(x)` (SiLU: swish with beta 1, cuDNN's default).
    SwishFwd,
}

impl PointwiseMode {
    /// Whether the mode takes a second operand (`b`).
    pub fn is_binary(self) -> bool {
        matches!(self, PointwiseMode::Add | PointwiseMode::Mul)
    }

    fn is_activation(self) -> bool {
        matches!(self, PointwiseMode::ReluFwd | PointwiseMode::GeluFwd | PointwiseMode::SwishFwd)
    }
}

/// A 2-D cross-correlation (what deep-learning frameworks call convolution).
#[derive(Clone, Debug, PartialEq)]
pub struct Convolution {
    /// The accumulator: Int32 for int8 inputs (the only pairing cuDNN lists).
    pub compute: DataType,
    /// Zero padding before and after, per spatial dimension.
    pub padding: [i64; 2],
    pub stride: [i64; 2],
    pub dilation: [i64; 2],
}

impl Convolution {
    /// The output's spatial size for an input of `input` (height, width) and a filter of `filter`.
    pub fn output_size(&self, input: [i64; 2], filter: [i64; 2]) -> [i64; 2] {
        std::array::from_fn(|i| (input[i] + 2 * self.padding[i] - (filter[i] - 1) * self.dilation[i] - 1) / self.stride[i] + 1)
    }
}

#[derive(Clone, Debug, PartialEq)]
pub enum Operation {
    /// `y = conv(x, w)`, x `[N, C, H, W]`, w `[K, C, R, S]`, y `[N, K, P, Q]`.
    ConvolutionForward { x: Uid, w: Uid, y: Uid, conv: Convolution },
    /// `y = mode(x, b)`: y has x's shape, b broadcasts to it (size 1 in broadcast dimensions).
    Pointwise { mode: PointwiseMode, precision: DataType, x: Uid, b: Option<Uid>, y: Uid },
    /// `c = a · b`, a `[B, M, K]`, b `[B or 1, K, N]`, c `[B, M, N]`.
    Matmul { a: Uid, b: Uid, c: Uid, compute: DataType },
}

impl Operation {
    fn inputs(&self) -> Vec<Uid> {
        match self {
            Operation::ConvolutionForward { x, w, .. } => vec![*x, *w],
            Operation::Pointwise { x, b, .. } => std::iter::once(*x).chain(*b).collect(),
            Operation::Matmul { a, b, .. } => vec![*a, *b],
        }
    }

    fn output(&self) -> Uid {
        match self {
            Operation::ConvolutionForward { y, .. } | Operation::Pointwise { y, .. } => *y,
            Operation::Matmul { c, .. } => *c,
        }
    }

    fn kind(&self) -> String {
        match self {
            Operation::ConvolutionForward { .. } => "convolution".into(),
            Operation::Pointwise { mode, .. } => format!("pointwise {mode:?}"),
            Operation::Matmul { .. } => "matmul".into(),
        }
    }
}

/// What cuDNN fuses into one kernel: the tensors, and the operations in dataflow order.
#[derive(Clone, Debug, PartialEq)]
pub struct OperationGraph {
    pub tensors: Vec<Tensor>,
    pub operations: Vec<Operation>,
}

/// A graph cuDNN would refuse, or that would not compute what it says.
#[derive(Debug, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SpecError {
    #[error("tensors {first} and {second} share uid {uid}: give every tensor of a graph its own uid")]
    DuplicateUid { uid: Uid, first: String, second: String },
    #[error("tensor {tensor} has dims {dims:?} and strides {strides:?}: give as many strides as dims, all of them at least 1")]
    Layout { tensor: String, dims: Vec<i64>, strides: Vec<i64> },
    #[error("{op} refers to uid {uid}, which no tensor of the graph has")]
    UnknownUid { op: String, uid: Uid },
    #[error("{op}: {tensor} has {found} dimensions, the operation takes {expected}")]
    Rank { op: String, tensor: String, expected: usize, found: usize },
    #[error("{op}: {tensor} has dims {found:?}, expected {expected:?}")]
    Shape { op: String, tensor: String, expected: Vec<i64>, found: Vec<i64> },
    #[error("{op}: {tensor} is not a broadcast of {expected:?} (each of its dims {found:?} must be equal or 1)")]
    Broadcast { op: String, tensor: String, expected: Vec<i64>, found: Vec<i64> },
    #[error("{op}: mode {mode:?} takes {} operands", if mode.is_binary() { "two" } else { "one" })]
    Operands { op: String, mode: PointwiseMode },
    #[error(
        "{op}: {tensor}'s {dim} is {size}, not a multiple of {multiple} (128 bits): cuDNN's fast fused engine needs it aligned (cuDNN 9.14 on an H100 offers only an engine about half as fast without); pad it with zeros (weights too)"
    )]
    NotAligned { op: String, tensor: String, dim: &'static str, size: i64, multiple: i64 },
    #[error("{op}: {inputs:?} inputs need compute type {expected:?}, not {found:?}")]
    ComputeType { op: String, inputs: DataType, expected: DataType, found: DataType },
    #[error("{op}: activations run in Float math precision on cuDNN's runtime-fusion engines, not {found:?}")]
    ActivationPrecision { op: String, found: DataType },
    #[error("{tensor} (uid {uid}) is written by {op} and by an earlier operation: each tensor has one writer")]
    WrittenTwice { op: String, tensor: String, uid: Uid },
    #[error("{op} reads {tensor} (uid {uid}) before the operation that writes it: list operations in dataflow order")]
    OutOfOrder { op: String, tensor: String, uid: Uid },
    #[error("{tensor} (uid {uid}) is written by one operation and read by another: make it virtual (an intermediate of the fused kernel has no memory)")]
    IntermediateNotVirtual { tensor: String, uid: Uid },
    #[error("{tensor} (uid {uid}) is virtual but is the graph's {}: only intermediates can be virtual", if *.input { "input" } else { "output" })]
    VirtualEndpoint { tensor: String, uid: Uid, input: bool },
}

impl OperationGraph {
    pub fn tensor(&self, uid: Uid) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.uid == uid)
    }

    /// The tensors a variant pack binds: every one that is not virtual.
    pub fn bound_tensors(&self) -> impl Iterator<Item = &Tensor> {
        self.tensors.iter().filter(|t| !t.is_virtual)
    }

    /// Checks the tensors, the dataflow, and each operation's shapes and types.
    pub fn validate(&self) -> Result<(), SpecError> {
        let mut by_uid: HashMap<Uid, &Tensor> = HashMap::new();
        for t in &self.tensors {
            if let Some(first) = by_uid.insert(t.uid, t) {
                return Err(SpecError::DuplicateUid { uid: t.uid, first: first.name.clone(), second: t.name.clone() });
            }
            if t.dims.len() != t.strides.len() || t.dims.iter().chain(&t.strides).any(|&d| d < 1) {
                return Err(SpecError::Layout { tensor: t.name.clone(), dims: t.dims.clone(), strides: t.strides.clone() });
            }
        }
        let mut writer: HashMap<Uid, usize> = HashMap::new();
        for (i, op) in self.operations.iter().enumerate() {
            let name = format!("operation {i} ({})", op.kind());
            let tensor = |uid: Uid| by_uid.get(&uid).copied().ok_or_else(|| SpecError::UnknownUid { op: name.clone(), uid });
            let out = tensor(op.output())?;
            if writer.insert(out.uid, i).is_some() {
                return Err(SpecError::WrittenTwice { op: name, tensor: out.name.clone(), uid: out.uid });
            }
            for uid in op.inputs() {
                tensor(uid)?;
            }
        }
        let mut read = std::collections::HashSet::new();
        for (i, op) in self.operations.iter().enumerate() {
            let name = format!("operation {i} ({})", op.kind());
            for uid in op.inputs() {
                if writer.get(&uid).is_some_and(|&w| w >= i) {
                    return Err(SpecError::OutOfOrder { op: name, tensor: by_uid[&uid].name.clone(), uid });
                }
                read.insert(uid);
            }
            check_operation(&name, op, &|uid| by_uid[&uid])?;
        }
        for t in &self.tensors {
            let (written, is_read) = (writer.contains_key(&t.uid), read.contains(&t.uid));
            if !t.is_virtual && written && is_read {
                return Err(SpecError::IntermediateNotVirtual { tensor: t.name.clone(), uid: t.uid });
            }
            if t.is_virtual && !(written && is_read) {
                return Err(SpecError::VirtualEndpoint { tensor: t.name.clone(), uid: t.uid, input: !written });
            }
        }
        Ok(())
    }
}

fn rank(op: &str, t: &Tensor, expected: usize) -> Result<(), SpecError> {
    match t.dims.len() == expected {
        true => Ok(()),
        false => Err(SpecError::Rank { op: op.into(), tensor: t.name.clone(), expected, found: t.dims.len() }),
    }
}

fn shape(op: &str, t: &Tensor, expected: &[i64]) -> Result<(), SpecError> {
    match t.dims == expected {
        true => Ok(()),
        false => Err(SpecError::Shape { op: op.into(), tensor: t.name.clone(), expected: expected.to_vec(), found: t.dims.clone() }),
    }
}

/// `size` must be a multiple of the elements that make 128 bits of `t`'s type.
fn aligned(op: &str, t: &Tensor, dim: &'static str, size: i64) -> Result<(), SpecError> {
    let multiple = 16 / t.data_type.bytes();
    match size % multiple {
        0 => Ok(()),
        _ => Err(SpecError::NotAligned { op: op.into(), tensor: t.name.clone(), dim, size, multiple }),
    }
}

fn check_operation<'a>(op: &str, operation: &Operation, tensor: &dyn Fn(Uid) -> &'a Tensor) -> Result<(), SpecError> {
    match operation {
        Operation::ConvolutionForward { x, w, y, conv } => {
            let (x, w, y) = (tensor(*x), tensor(*w), tensor(*y));
            for t in [x, w, y] {
                rank(op, t, 4)?;
            }
            let (n, c, h, wd) = (x.dims[0], x.dims[1], x.dims[2], x.dims[3]);
            let (k, r, s) = (w.dims[0], w.dims[2], w.dims[3]);
            shape(op, w, &[k, c, r, s])?;
            let [p, q] = conv.output_size([h, wd], [r, s]);
            shape(op, y, &[n, k, p, q])?;
            if x.data_type == DataType::Int8 {
                if conv.compute != DataType::Int32 {
                    return Err(SpecError::ComputeType { op: op.into(), inputs: DataType::Int8, expected: DataType::Int32, found: conv.compute });
                }
                aligned(op, x, "channels", c)?;
            }
            Ok(())
        }
        Operation::Pointwise { mode, precision, x, b, y } => {
            let (x, y) = (tensor(*x), tensor(*y));
            if mode.is_binary() != b.is_some() {
                return Err(SpecError::Operands { op: op.into(), mode: *mode });
            }
            if mode.is_activation() && *precision != DataType::Float {
                return Err(SpecError::ActivationPrecision { op: op.into(), found: *precision });
            }
            shape(op, y, &x.dims)?;
            if let Some(b) = b.map(tensor) {
                rank(op, b, x.dims.len())?;
                if b.dims.iter().zip(&x.dims).any(|(&bd, &xd)| bd != xd && bd != 1) {
                    return Err(SpecError::Broadcast { op: op.into(), tensor: b.name.clone(), expected: x.dims.clone(), found: b.dims.clone() });
                }
            }
            Ok(())
        }
        Operation::Matmul { a, b, c, .. } => {
            let (a, b, c) = (tensor(*a), tensor(*b), tensor(*c));
            for t in [a, b, c] {
                rank(op, t, 3)?;
            }
            let (batch, m, k, n) = (a.dims[0], a.dims[1], a.dims[2], b.dims[2]);
            shape(op, b, &[if b.dims[0] == 1 { 1 } else { batch }, k, n])?;
            shape(op, c, &[batch, m, n])?;
            if a.data_type == DataType::Half {
                aligned(op, a, "K", k)?;
                aligned(op, b, "N", n)?;
            }
            Ok(())
        }
    }
}

/// One int8 convolution layer with ResNet50's epilogue: per-channel scale and bias, an optional
/// residual, ReLU, and the result in `output`'s type.
#[derive(Clone, Debug, PartialEq)]
pub struct ConvLayer {
    pub shape: ConvShape,
    /// The residual's type (Int8, Half or Float), when the layer adds one.
    pub residual: Option<DataType>,
    /// Multiplies by a per-channel `ratio` after the residual is added: an int8 residual holds
    /// other units than the output (its own scale), so the sum runs in the residual's units and
    /// `ratio` (residual scale / output scale) brings it to the output's.
    pub rescale: bool,
    pub relu: bool,
    pub output: DataType,
}

/// A 2-D convolution's sizes: `batch` images of `in_channels` x `height` x `width` to
/// `out_channels`, a `kernel`, symmetric `padding`, `stride`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ConvShape {
    pub batch: i64,
    pub in_channels: i64,
    pub height: i64,
    pub width: i64,
    pub out_channels: i64,
    pub kernel: [i64; 2],
    pub padding: [i64; 2],
    pub stride: [i64; 2],
}

/// The layer's sizes read as its own fields (`layer.batch`).
impl std::ops::Deref for ConvLayer {
    type Target = ConvShape;
    fn deref(&self) -> &ConvShape {
        &self.shape
    }
}

impl ConvLayer {
    pub const X: Uid = 1;
    pub const W: Uid = 2;
    pub const SCALE: Uid = 3;
    pub const BIAS: Uid = 4;
    pub const RESIDUAL: Uid = 5;
    pub const Y: Uid = 6;
    pub const RATIO: Uid = 7;

    pub fn convolution(&self) -> Convolution {
        Convolution { compute: DataType::Int32, padding: self.padding, stride: self.stride, dilation: [1, 1] }
    }

    /// `[N, K, P, Q]`.
    pub fn output_dims(&self) -> [i64; 4] {
        let [p, q] = self.convolution().output_size([self.height, self.width], self.kernel);
        [self.batch, self.out_channels, p, q]
    }
}

/// `y = [relu]((conv(x, w) * scale + bias [+ residual]) [* ratio])`, int8 NHWC in, as support
/// surface 90 takes it (docs/cudnn-graph-api.md §2a): int32 accumulation, Float intermediates, y
/// the first operand of every pointwise operation and the per-channel `[1, K, 1, 1]` tensors the
/// second.
pub fn conv_scale_bias_residual_relu(layer: &ConvLayer) -> Result<OperationGraph, SpecError> {
    let out = layer.output_dims();
    let channel = [1, layer.out_channels, 1, 1];
    let intermediate = |uid, name| Tensor::channels_last(uid, name, DataType::Float, out).into_virtual();
    let mut tensors = vec![
        Tensor::channels_last(ConvLayer::X, "x", DataType::Int8, [layer.batch, layer.in_channels, layer.height, layer.width]),
        Tensor::channels_last(ConvLayer::W, "w", DataType::Int8, [layer.out_channels, layer.in_channels, layer.kernel[0], layer.kernel[1]]),
        Tensor::channels_last(ConvLayer::SCALE, "scale", DataType::Float, channel),
        Tensor::channels_last(ConvLayer::BIAS, "bias", DataType::Float, channel),
        intermediate(101, "conv"),
        intermediate(102, "scaled"),
        intermediate(103, "biased"),
    ];
    let float = DataType::Float;
    let mut operations = vec![
        Operation::ConvolutionForward { x: ConvLayer::X, w: ConvLayer::W, y: 101, conv: layer.convolution() },
        Operation::Pointwise { mode: PointwiseMode::Mul, precision: float, x: 101, b: Some(ConvLayer::SCALE), y: 102 },
        Operation::Pointwise { mode: PointwiseMode::Add, precision: float, x: 102, b: Some(ConvLayer::BIAS), y: 103 },
    ];
    let mut last = 103;
    if let Some(residual) = layer.residual {
        tensors.push(Tensor::channels_last(ConvLayer::RESIDUAL, "residual", residual, out));
        tensors.push(intermediate(104, "summed"));
        operations.push(Operation::Pointwise { mode: PointwiseMode::Add, precision: float, x: last, b: Some(ConvLayer::RESIDUAL), y: 104 });
        last = 104;
    }
    if layer.rescale {
        tensors.push(Tensor::channels_last(ConvLayer::RATIO, "ratio", DataType::Float, channel));
        tensors.push(intermediate(105, "rescaled"));
        operations.push(Operation::Pointwise { mode: PointwiseMode::Mul, precision: float, x: last, b: Some(ConvLayer::RATIO), y: 105 });
        last = 105;
    }
    tensors.push(Tensor::channels_last(ConvLayer::Y, "y", layer.output, out));
    if layer.relu {
        operations.push(Operation::Pointwise { mode: PointwiseMode::ReluFwd, precision: float, x: last, b: None, y: ConvLayer::Y });
    } else {
        // The last operation writes y itself: a virtual intermediate cannot be the graph's output.
        let Some(Operation::Pointwise { y, .. }) = operations.last_mut() else { unreachable!("the bias Add comes last") };
        *y = ConvLayer::Y;
        tensors.retain(|t| t.uid != last);
    }
    let graph = OperationGraph { tensors, operations };
    graph.validate()?;
    Ok(graph)
}

/// One fp16 convolution of the convnet engine: NHWC in and out with channels padded to 8 (KRSC
/// weights), an optional f32 per-channel bias, an optional activation and an optional fp16
/// residual added last (`residual_row`: its row width). `x_row` and `y_row` are the elements
/// between positions of the input and the output (their channels when packed; more when they are
/// slices of a concatenation's rows).
#[derive(Clone, Debug, PartialEq)]
pub struct HalfConv {
    pub shape: ConvShape,
    pub dilation: [i64; 2],
    pub bias: bool,
    /// ReluFwd or SwishFwd.
    pub act: Option<PointwiseMode>,
    pub x_row: i64,
    pub y_row: i64,
    pub residual_row: Option<i64>,
}

/// `y = [act](conv(x, w) [+ bias]) [+ residual]`, fp16 in and out, Float accumulation and
/// epilogue: the convolution and its epilogue in one kernel (runtime fusion), uids those of
/// [`ConvLayer`].
pub fn conv_bias_act(half: &HalfConv) -> Result<OperationGraph, SpecError> {
    let (layer, bias, act) = (&half.shape, half.bias, half.act);
    let conv = Convolution { compute: DataType::Float, padding: layer.padding, stride: layer.stride, dilation: half.dilation };
    let [p, q] = conv.output_size([layer.height, layer.width], layer.kernel);
    let out = [layer.batch, layer.out_channels, p, q];
    let mut tensors = vec![
        Tensor::channels_last_in_rows(ConvLayer::X, "x", DataType::Half, [layer.batch, layer.in_channels, layer.height, layer.width], half.x_row),
        Tensor::channels_last(ConvLayer::W, "w", DataType::Half, [layer.out_channels, layer.in_channels, layer.kernel[0], layer.kernel[1]]),
    ];
    // Each step writes y itself when it is the last, else a virtual Float intermediate.
    let steps = usize::from(bias) + usize::from(act.is_some()) + usize::from(half.residual_row.is_some());
    let mut next = 100;
    let mut target = |tensors: &mut Vec<Tensor>, remaining: usize, name: &str| {
        if remaining == 0 {
            return ConvLayer::Y;
        }
        next += 1;
        tensors.push(Tensor::channels_last(next, name, DataType::Float, out).into_virtual());
        next
    };
    let mut last = target(&mut tensors, steps, "conv");
    let mut operations = vec![Operation::ConvolutionForward { x: ConvLayer::X, w: ConvLayer::W, y: last, conv }];
    if bias {
        tensors.push(Tensor::channels_last(ConvLayer::BIAS, "bias", DataType::Float, [1, layer.out_channels, 1, 1]));
        let y = target(&mut tensors, steps - 1, "biased");
        operations.push(Operation::Pointwise { mode: PointwiseMode::Add, precision: DataType::Float, x: last, b: Some(ConvLayer::BIAS), y });
        last = y;
    }
    if let Some(mode) = act {
        let y = target(&mut tensors, steps - usize::from(bias) - 1, "activated");
        operations.push(Operation::Pointwise { mode, precision: DataType::Float, x: last, b: None, y });
        last = y;
    }
    if let Some(row) = half.residual_row {
        tensors.push(Tensor::channels_last_in_rows(ConvLayer::RESIDUAL, "residual", DataType::Half, out, row));
        operations.push(Operation::Pointwise { mode: PointwiseMode::Add, precision: DataType::Float, x: last, b: Some(ConvLayer::RESIDUAL), y: ConvLayer::Y });
    }
    tensors.push(Tensor::channels_last_in_rows(ConvLayer::Y, "y", DataType::Half, out, half.y_row));
    let graph = OperationGraph { tensors, operations };
    graph.validate()?;
    Ok(graph)
}

/// `out = gelu(a · weights + bias)`, fp16, a `[M, K]` and weights `[K, N]` row-major (a BERT dense
/// layer with its activation).
#[derive(Clone, Debug, PartialEq)]
pub struct Gemm {
    pub m: i64,
    pub k: i64,
    pub n: i64,
}

impl Gemm {
    pub const A: Uid = 1;
    pub const WEIGHTS: Uid = 2;
    pub const BIAS: Uid = 3;
    pub const OUT: Uid = 4;
}

/// The matmul + bias + erf-GELU fusion of docs/cudnn-graph-api.md §2b: fp16 in and out, Float
/// accumulation and intermediates.
pub fn matmul_bias_gelu(gemm: &Gemm) -> Result<OperationGraph, SpecError> {
    let Gemm { m, k, n } = *gemm;
    let float = DataType::Float;
    let graph = OperationGraph {
        tensors: vec![
            Tensor::row_major(Gemm::A, "a", DataType::Half, &[1, m, k]),
            Tensor::row_major(Gemm::WEIGHTS, "weights", DataType::Half, &[1, k, n]),
            Tensor::row_major(Gemm::BIAS, "bias", DataType::Half, &[1, 1, n]),
            Tensor::row_major(101, "product", float, &[1, m, n]).into_virtual(),
            Tensor::row_major(102, "biased", float, &[1, m, n]).into_virtual(),
            Tensor::row_major(Gemm::OUT, "out", DataType::Half, &[1, m, n]),
        ],
        operations: vec![
            Operation::Matmul { a: Gemm::A, b: Gemm::WEIGHTS, c: 101, compute: float },
            Operation::Pointwise { mode: PointwiseMode::Add, precision: float, x: 101, b: Some(Gemm::BIAS), y: 102 },
            Operation::Pointwise { mode: PointwiseMode::GeluFwd, precision: float, x: 102, b: None, y: Gemm::OUT },
        ],
    };
    graph.validate()?;
    Ok(graph)
}

/// ResNet50's 3x3 convolution of its first stage (64 channels at 56x56) at batch 64, int8 out, given
/// an int8 residual (which ResNet50 adds after a block's last, 1x1, convolution) so that one layer
/// has the whole epilogue: the self-check's and the tests' convolution.
pub fn resnet_layer() -> ConvLayer {
    ConvLayer {
        shape: ConvShape { batch: 64, in_channels: 64, height: 56, width: 56, out_channels: 64, kernel: [3, 3], padding: [1, 1], stride: [1, 1] },
        residual: Some(DataType::Int8),
        rescale: false,
        relu: true,
        output: DataType::Int8,
    }
}

/// BERT-large's feed-forward expansion over 32 sequences of 384 tokens: the self-check's and the
/// tests' matmul.
pub fn bert_gemm() -> Gemm {
    Gemm { m: 384 * 32, k: 1024, n: 4096 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_packed_channels_last_and_row_major() {
        let x = Tensor::channels_last(1, "x", DataType::Int8, [2, 16, 5, 7]);
        assert_eq!(x.strides, [5 * 7 * 16, 1, 7 * 16, 16]);
        let w = Tensor::channels_last(2, "w", DataType::Int8, [32, 16, 3, 3]);
        assert_eq!(w.strides, [16 * 3 * 3, 1, 3 * 16, 16], "KRSC: {{CRS, 1, SC, C}}");
        assert_eq!(Tensor::row_major(3, "a", DataType::Half, &[1, 4, 8]).strides, [32, 8, 1]);
    }

    #[test]
    fn convolution_output_size() {
        let conv = Convolution { compute: DataType::Int32, padding: [1, 1], stride: [2, 2], dilation: [1, 1] };
        assert_eq!(conv.output_size([56, 56], [3, 3]), [28, 28]);
        assert_eq!(ConvLayer { shape: ConvShape { stride: [1, 1], padding: [0, 0], kernel: [1, 1], ..resnet_layer().shape }, ..resnet_layer() }.output_dims(), [64, 64, 56, 56]);
    }

    #[test]
    fn conv_pattern_follows_support_surface_90() {
        let g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        let t = |uid| g.tensor(uid).unwrap();
        assert_eq!((t(ConvLayer::X).alignment, t(ConvLayer::W).alignment), (16, 16));
        assert_eq!(t(ConvLayer::SCALE).dims, [1, 64, 1, 1]);
        assert_eq!(t(ConvLayer::SCALE).data_type, DataType::Float);
        let Operation::ConvolutionForward { conv, .. } = &g.operations[0] else { panic!("the convolution first") };
        assert_eq!(conv.compute, DataType::Int32);
        // Each pointwise operation's x is the previous operation's output.
        let mut previous = g.operations[0].output();
        for op in &g.operations[1..] {
            let Operation::Pointwise { x, precision, .. } = op else { panic!("pointwise epilogue") };
            assert_eq!((*x, *precision), (previous, DataType::Float));
            previous = op.output();
        }
        assert_eq!(previous, ConvLayer::Y);
        let bound: Vec<Uid> = g.bound_tensors().map(|t| t.uid).collect();
        assert_eq!(bound, [1, 2, 3, 4, 5, 6]);
        let plain = conv_scale_bias_residual_relu(&ConvLayer { residual: None, output: DataType::Half, ..resnet_layer() }).unwrap();
        assert_eq!(plain.operations.len(), 4, "no residual add");
        assert_eq!(plain.tensor(ConvLayer::Y).unwrap().data_type, DataType::Half);
    }

    #[test]
    fn rescaled_residual_and_no_relu_end_on_y() {
        // ResNet50's int8 blocks: the sum in the residual's units, then the ratio to the output's.
        let g = conv_scale_bias_residual_relu(&ConvLayer { rescale: true, ..resnet_layer() }).unwrap();
        let modes: Vec<_> = g.operations[1..].iter().map(|op| if let Operation::Pointwise { mode, b, .. } = op { (*mode, *b) } else { panic!("pointwise") }).collect();
        let (mul, add, relu) = (PointwiseMode::Mul, PointwiseMode::Add, PointwiseMode::ReluFwd);
        assert_eq!(modes, [(mul, Some(ConvLayer::SCALE)), (add, Some(ConvLayer::BIAS)), (add, Some(ConvLayer::RESIDUAL)), (mul, Some(ConvLayer::RATIO)), (relu, None)]);
        assert_eq!(g.tensor(ConvLayer::RATIO).unwrap().dims, [1, 64, 1, 1]);
        // A projection shortcut: no residual, no activation; the bias Add writes y.
        let g = conv_scale_bias_residual_relu(&ConvLayer { residual: None, relu: false, ..resnet_layer() }).unwrap();
        assert_eq!(g.operations.len(), 3);
        assert_eq!(g.operations[2].output(), ConvLayer::Y);
        assert!(g.tensors.iter().all(|t| t.uid != 103), "the dropped intermediate is gone");
        let bound: Vec<Uid> = g.bound_tensors().map(|t| t.uid).collect();
        assert_eq!(bound, [1, 2, 3, 4, 6]);
    }

    /// The convnet engine's fp16 convolution: a residual is added after the activation; rows wider
    /// than the channels (a slice of a concatenation's) are the position strides.
    #[test]
    fn half_convolution_adds_its_residual_last_in_its_own_rows() {
        let half = HalfConv {
            shape: ConvShape { batch: 2, in_channels: 16, height: 5, width: 5, out_channels: 8, kernel: [3, 3], padding: [1, 1], stride: [1, 1] },
            dilation: [1, 1],
            bias: true,
            act: Some(PointwiseMode::SwishFwd),
            x_row: 48,
            y_row: 24,
            residual_row: Some(40),
        };
        let g = conv_bias_act(&half).unwrap();
        let steps: Vec<_> = g.operations[1..].iter().map(|op| if let Operation::Pointwise { mode, b, .. } = op { (*mode, *b) } else { panic!("pointwise") }).collect();
        assert_eq!(steps, [(PointwiseMode::Add, Some(ConvLayer::BIAS)), (PointwiseMode::SwishFwd, None), (PointwiseMode::Add, Some(ConvLayer::RESIDUAL))]);
        assert_eq!(g.operations[3].output(), ConvLayer::Y);
        let strides = |uid| g.tensor(uid).unwrap().strides.clone();
        assert_eq!(
            (strides(ConvLayer::X), strides(ConvLayer::Y), strides(ConvLayer::RESIDUAL)),
            (vec![25 * 48, 1, 5 * 48, 48], vec![25 * 24, 1, 5 * 24, 24], vec![25 * 40, 1, 5 * 40, 40])
        );
        let plain = conv_bias_act(&HalfConv { residual_row: None, act: None, ..half }).unwrap();
        assert_eq!((plain.operations.len(), plain.operations[1].output()), (2, ConvLayer::Y), "the bias Add writes y");
    }

    #[test]
    fn int8_channels_must_fill_128_bits() {
        let err = conv_scale_bias_residual_relu(&ConvLayer { shape: ConvShape { in_channels: 3, ..resnet_layer().shape }, ..resnet_layer() }).unwrap_err();
        assert!(matches!(err, SpecError::NotAligned { size: 3, multiple: 16, .. }), "{err}");
        assert!(err.to_string().contains("pad it with zeros"), "{err}");
        let err = matmul_bias_gelu(&Gemm { m: 5, k: 1020, n: 64 }).unwrap_err();
        assert!(matches!(err, SpecError::NotAligned { dim: "K", multiple: 8, .. }), "{err}");
    }

    #[test]
    fn int8_convolution_accumulates_in_int32() {
        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        let Operation::ConvolutionForward { conv, .. } = &mut g.operations[0] else { unreachable!() };
        conv.compute = DataType::Float;
        assert!(matches!(g.validate(), Err(SpecError::ComputeType { expected: DataType::Int32, found: DataType::Float, .. })));
    }

    #[test]
    fn shapes_must_agree() {
        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        let residual = g.tensors.iter_mut().find(|t| t.uid == ConvLayer::RESIDUAL).unwrap();
        *residual = Tensor::channels_last(ConvLayer::RESIDUAL, "residual", DataType::Int8, [64, 64, 28, 28]);
        let err = g.validate().unwrap_err();
        assert!(matches!(&err, SpecError::Broadcast { tensor, .. } if tensor == "residual"), "{err}");

        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        g.tensors[1] = Tensor::channels_last(ConvLayer::W, "w", DataType::Int8, [64, 32, 3, 3]);
        assert!(matches!(g.validate(), Err(SpecError::Shape { expected, .. }) if expected == [64, 64, 3, 3]));

        let mut g = matmul_bias_gelu(&Gemm { m: 16, k: 64, n: 32 }).unwrap();
        g.tensors[1] = Tensor::row_major(Gemm::WEIGHTS, "weights", DataType::Half, &[1, 32, 32]);
        assert!(matches!(g.validate(), Err(SpecError::Shape { .. })));
    }

    #[test]
    fn intermediates_are_virtual_and_only_intermediates() {
        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        g.tensors.iter_mut().find(|t| t.uid == 102).unwrap().is_virtual = false;
        let err = g.validate().unwrap_err();
        assert_eq!(err, SpecError::IntermediateNotVirtual { tensor: "scaled".into(), uid: 102 });

        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        g.tensors.iter_mut().find(|t| t.uid == ConvLayer::Y).unwrap().is_virtual = true;
        assert!(matches!(g.validate(), Err(SpecError::VirtualEndpoint { uid: ConvLayer::Y, input: false, .. })));
    }

    #[test]
    fn dataflow_is_checked() {
        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        g.operations.swap(1, 2);
        assert!(matches!(g.validate(), Err(SpecError::OutOfOrder { uid: 102, .. })));

        let mut g = conv_scale_bias_residual_relu(&resnet_layer()).unwrap();
        g.tensors[3].uid = ConvLayer::SCALE;
        assert!(matches!(g.validate(), Err(SpecError::DuplicateUid { uid: ConvLayer::SCALE, .. })));

        let mut g = matmul_bias_gelu(&Gemm { m: 16, k: 64, n: 32 }).unwrap();
        g.operations[2] = Operation::Pointwise { mode: PointwiseMode::GeluFwd, precision: DataType::Float, x: 102, b: None, y: 101 };
        assert!(matches!(g.validate(), Err(SpecError::WrittenTwice { uid: 101, .. })));

        g.operations[2] = Operation::Pointwise { mode: PointwiseMode::GeluFwd, precision: DataType::Half, x: 102, b: None, y: Gemm::OUT };
        assert!(matches!(g.validate(), Err(SpecError::ActivationPrecision { .. })));
        g.operations[2] = Operation::Pointwise { mode: PointwiseMode::Add, precision: DataType::Float, x: 102, b: None, y: Gemm::OUT };
        assert!(matches!(g.validate(), Err(SpecError::Operands { .. })));
        g.operations[2] = Operation::Pointwise { mode: PointwiseMode::GeluFwd, precision: DataType::Float, x: 102, b: None, y: 77 };
        assert!(matches!(g.validate(), Err(SpecError::UnknownUid { uid: 77, .. })));
    }
}
