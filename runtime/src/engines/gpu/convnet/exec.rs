//! Running a convnet plan on one GPU: the weights uploaded once, and per inference stream a slot
//! with its cuDNN handle, a buffer per value that has its own rows (channels-last fp16, the plan's
//! batch size; values placed in a concatenation's rows use its buffer, [`super::place`]), the
//! descriptors of every op, and (with `use_graphs`) one CUDA graph of the whole network, captured
//! after a plain run. Convolutions run cuDNN's algorithm the plan names (transposed ones as its
//! backward data), or our depthwise or few-channel kernel where the builder timed it faster; the
//! dense products (YOLO's attention) run on cuBLASLt, TF32 tensor cores over the f32 values;
//! everything else is our kernels (`kernels.cu`).

use super::import::{Act, ConvGeometry, FEW_CHANNEL_OUTPUTS, KERNEL_SHARED_BYTES, Op, OpKind, OwnKernel, TensorOp, ValueShape};
use super::plan::{ConvnetHeader, ConvnetPlan};
use crate::engines::gpu::GpuError;
use crate::engines::gpu::cublaslt;
use crate::engines::gpu::cudnn::{self, Algorithm, BackwardDataAlgorithm, Convolution, DataType, Filter, Handle, Operand, Tensor};
use crate::engines::gpu::device::{self, DeviceBuffer, DevicePtr, compile_for, cu};
use crate::engines::gpu::exec::time_runs;
use crate::engines::gpu::graph::plan::{Autotune, ExecutionPlan, Graph, SerializedPlan};
use crate::engines::gpu::graph::spec::{ConvLayer, ConvShape, HalfConv, PointwiseMode, Uid, conv_bias_act};
use cudarc::driver::{CudaContext, CudaFunction, CudaGraph, CudaModule, CudaStream, LaunchConfig, PushKernelArg, result as dr, sys as ds};
use std::sync::Arc;

type Result<T> = std::result::Result<T, GpuError>;

const KERNELS: &str = concat!(include_str!("../half.cuh"), include_str!("kernels.cu"), include_str!("tensor.cu"));
/// Threads per block of the element-wise kernels.
const THREADS: u32 = 256;
/// The depthwise kernel's largest grid: 8 blocks of [`THREADS`] on each of an H100's or H200's 132 SMs.
const DEPTHWISE_BLOCKS: u32 = 1056;
/// The few-channel kernel's largest grid: 16 blocks of 4 warps on each of an H100's or H200's 132 SMs.
const FEW_CHANNEL_BLOCKS: u32 = 2112;
/// The most output rows a thread of the depthwise kernel's 3 x 3 stride-1 path walks down.
const DEPTHWISE_RUN: usize = 8;
/// cuBLASLt's workspace per slot (what NVIDIA advises for Hopper).
const PRODUCT_WORKSPACE: usize = 32 << 20;
/// Positions each block of `norm_stats` sums.
const NORM_CHUNK: usize = 4096;

/// `norm_stats`' blocks per sample and rows summed side by side in a block (`kernels.cu` derives
/// the same from the row's 8-channel vectors).
fn norm_layout(v: &ValueShape) -> (usize, usize) {
    let lanes = (v.padded / 8).min(THREADS as usize);
    (v.positions().div_ceil(NORM_CHUNK), THREADS as usize / lanes)
}

/// Bytes of the stats buffer an instance norm over `v` uses: the blocks' f32 sums, then the f32
/// affine map per (sample, channel).
fn norm_bytes(v: &ValueShape, n: usize) -> usize {
    (norm_layout(v).0 + 1) * n * v.padded * 8
}

/// One thread per value, in blocks of 256: also the families' kernels around the network.
pub fn elementwise(total: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: ((total as u64).div_ceil(THREADS as u64) as u32, 1, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: 0 }
}

/// One thread per 8 fp16 values (the vectorised kernels; every row holds a multiple of 8).
pub(super) fn vectorised(values: usize) -> LaunchConfig {
    elementwise(values / 8)
}

/// `tensor.cu`'s kernels, loaded with the engine's module.
pub struct TensorKernels {
    pub(super) max_pool: CudaFunction,
    pub(super) upsample: CudaFunction,
    pub(super) space_to_depth: CudaFunction,
    pub(super) image_add: CudaFunction,
    pub(super) strided_copy: CudaFunction,
    pub(super) strided_copy32: CudaFunction,
    pub(super) binary: CudaFunction,
    pub(super) softmax: CudaFunction,
    pub(super) softmax_rows: CudaFunction,
    pub(super) pointwise: CudaFunction,
    pub(super) dense_act: CudaFunction,
}

impl TensorKernels {
    pub fn load(module: &Arc<CudaModule>) -> device::Result<TensorKernels> {
        let f = |name: &str| cu(&format!("kernel {name}"), module.load_function(name));
        Ok(TensorKernels {
            max_pool: f("max_pool")?,
            upsample: f("upsample")?,
            space_to_depth: f("space_to_depth")?,
            image_add: f("image_add")?,
            strided_copy: f("strided_copy")?,
            strided_copy32: f("strided_copy32")?,
            binary: f("binary")?,
            softmax: f("softmax")?,
            softmax_rows: f("softmax_rows")?,
            pointwise: f("pointwise")?,
            dense_act: f("dense_act")?,
        })
    }
}

/// The plan's weights and our kernels on one GPU, shared by its slots.
pub struct Convnet {
    pub ctx: Arc<CudaContext>,
    pub header: ConvnetHeader,
    pub(super) weights: DeviceBuffer,
    bias_act: CudaFunction,
    depthwise: CudaFunction,
    few_channel_conv: CudaFunction,
    norm_stats: CudaFunction,
    norm_finish: CudaFunction,
    norm_apply: CudaFunction,
    pub(super) copy_slice: CudaFunction,
    pub(super) to_channels_last: CudaFunction,
    pub(super) from_channels_last: CudaFunction,
    pub(super) to_dense_tiles: CudaFunction,
    pub(super) tensor: TensorKernels,
}

impl Convnet {
    pub fn load(ordinal: usize, plan: &ConvnetPlan) -> Result<Arc<Convnet>> {
        let ctx = cu("open device", CudaContext::new(ordinal)).map_err(|source| GpuError::OnGpu { ordinal, source })?;
        // SAFETY: the engine creates no `CudaSlice`s; it orders the uses of its own buffers per stream.
        unsafe { ctx.disable_event_tracking() };
        device::bind(&ctx)?;
        let weights = DeviceBuffer::new(plan.blob.len())?;
        cu("upload weights", weights.upload(0, &plan.blob))?;
        let cc = cu("compute capability", ctx.compute_capability())?;
        let module = cu("load kernels", ctx.load_module(compile_for("convnet kernels", KERNELS, cc, Vec::new())?))?;
        let f = |name: &str| cu(&format!("kernel {name}"), module.load_function(name));
        Ok(Arc::new(Convnet {
            header: plan.header.clone(),
            weights,
            bias_act: f("bias_act")?,
            depthwise: f("depthwise")?,
            few_channel_conv: f("few_channel_conv")?,
            norm_stats: f("norm_stats")?,
            norm_finish: f("norm_finish")?,
            norm_apply: f("norm_apply")?,
            copy_slice: f("copy_slice")?,
            to_channels_last: f("to_channels_last")?,
            from_channels_last: f("from_channels_last")?,
            to_dense_tiles: f("to_dense_tiles")?,
            tensor: TensorKernels::load(&module)?,
            ctx,
        }))
    }

    pub fn batch(&self) -> usize {
        self.header.key.batch_size
    }

    pub fn input_shape(&self) -> &ValueShape {
        &self.header.net.values[0]
    }

    pub fn output_shape(&self) -> &ValueShape {
        &self.header.net.values[self.header.net.output()]
    }

    /// Every output's per-sample shape (several where a family cut the network).
    pub fn output_shapes(&self) -> Vec<&ValueShape> {
        self.header.net.outputs.iter().map(|&v| &self.header.net.values[v]).collect()
    }
}

/// cuDNN's (or cuBLASLt's) objects of one op.
enum OpDescriptors {
    /// A dense product as cuBLASLt sees it: column-major, so `y^T = b^T a^T`, its first operand
    /// the op's second input and its second the first.
    Product {
        desc: cublaslt::Desc,
        first: cublaslt::Layout,
        second: cublaslt::Layout,
        out: cublaslt::Layout,
        algo: cudarc::cublaslt::sys::cublasLtMatmulAlgo_t,
    },
    Conv {
        x: Tensor,
        y: Tensor,
        w: Filter,
        conv: Convolution,
    },
    /// A convolution with its epilogue as one cuDNN graph plan, and its tensors' addresses.
    Graph {
        plan: ExecutionPlan,
        bindings: Vec<(Uid, DevicePtr)>,
    },
    Transpose {
        dy: Tensor,
        dx: Tensor,
        w: Filter,
        conv: Convolution,
    },
    Kernels,
}

/// One inference stream of a device.
pub struct Slot {
    pub model: Arc<Convnet>,
    pub stream: Arc<CudaStream>,
    descriptors: Vec<OpDescriptors>,
    handle: Handle,
    /// cuBLASLt's handle, where the net has products (after `descriptors`: dropped after them).
    products: Option<cublaslt::Handle>,
    /// Per value: its own buffer, `None` for a value placed in another's rows.
    buffers: Vec<Option<DeviceBuffer>>,
    stats: DeviceBuffer,
    workspace: DeviceBuffer,
    graph: Option<CudaGraph>,
    use_graphs: bool,
}

// SAFETY: a slot is used by one thread at a time; its handles and device memory belong to its
// device's context, bound on every use.
unsafe impl Send for Slot {}

impl Slot {
    /// A slot with `workspace_bytes` of cuDNN workspace (at least what the plan's algorithms need).
    pub fn new(model: &Arc<Convnet>, workspace_bytes: usize, use_graphs: bool) -> Result<Slot> {
        device::bind(&model.ctx)?;
        let stream = cu("create stream", model.ctx.new_stream())?;
        let handle = Handle::new(&stream)?;
        let (net, n) = (&model.header.net, model.batch());
        // A value without a producer (a transpose a MatMul reads through) needs no buffer either.
        let mut produced = vec![false; net.values.len()];
        produced[0] = true;
        net.ops.iter().for_each(|op| produced[op.output] = true);
        let own = |v: usize| net.places[v].root == v && produced[v];
        let buffers =
            net.values.iter().enumerate().map(|(v, shape)| own(v).then(|| DeviceBuffer::new(n * shape.bytes())).transpose()).collect::<std::result::Result<Vec<_>, _>>()?;
        // Zeroed once: a concatenation leaves its padding channels as they are, and the next
        // convolution's zero weights there must not meet NaN bit patterns.
        for b in buffers.iter().flatten() {
            // SAFETY: within the buffer just allocated; synchronous.
            cu("clear buffers", unsafe { dr::memset_d8_sync(b.ptr().raw(), 0, b.bytes) })?;
        }
        let stats_bytes = net.ops.iter().filter(|op| matches!(op.kind, OpKind::InstanceNorm { .. })).map(|op| norm_bytes(&net.values[op.inputs[0]], n)).max().unwrap_or(0);
        let has_products = net.ops.iter().any(|op| matches!(op.kind, OpKind::Tensor(TensorOp::MatMul { .. })));
        let products = has_products.then(|| cublaslt::Handle::new(PRODUCT_WORKSPACE)).transpose()?;
        let mut descriptors = Vec::new();
        let mut need = 0;
        for op in &net.ops {
            let (x, y) = (&net.values[op.inputs[0]], &net.values[op.output]);
            let t = |v: usize| Tensor::channels_last(DataType::Half, n, net.values[v].padded, row(net, v), &net.values[v].spatial);
            let d = match &op.kind {
                OpKind::Conv { graph: Some(serialized), weights: w_at, bias, .. } => {
                    let plan = serialized.restore(&handle, &model.header.key.gpu_name).map_err(|e| GpuError::from(e).in_layer(&op.name))?;
                    need = need.max(plan.workspace_bytes());
                    let ptr = |v: usize| value_ptr(net, &buffers, v);
                    let residual = op.inputs.get(1).map(|&r| ptr(r));
                    OpDescriptors::Graph { plan, bindings: conv_bindings(ptr(op.inputs[0]), model.weights.ptr(), *w_at, *bias, residual, ptr(op.output)) }
                }
                OpKind::Conv { geometry: g, algorithm, .. } => {
                    let w = Filter::channels_last(DataType::Half, y.padded, x.padded / g.groups, &g.kernel)?;
                    let conv = Convolution::nd(&g.pad, &g.stride, &g.dilation, g.groups, DataType::Float)?;
                    let d = OpDescriptors::Conv { x: t(op.inputs[0])?, y: t(op.output)?, w, conv };
                    if let (OpDescriptors::Conv { x, y, w, conv }, Some(algo)) = (&d, Algorithm::from_code(*algorithm)) {
                        need = need.max(cudnn::workspace_size(&handle, x, w, conv, y, algo)?);
                    }
                    d
                }
                OpKind::ConvTranspose { geometry: g, algorithm, .. } => {
                    let w = Filter::channels_last(DataType::Half, x.padded, y.padded, &g.kernel)?;
                    let conv = Convolution::nd(&g.pad, &g.stride, &g.dilation, 1, DataType::Float)?;
                    let d = OpDescriptors::Transpose { dy: t(op.inputs[0])?, dx: t(op.output)?, w, conv };
                    if let (OpDescriptors::Transpose { dy, dx, w, conv }, Some(algo)) = (&d, BackwardDataAlgorithm::from_code(*algorithm)) {
                        need = need.max(cudnn::backward_data_workspace_size(&handle, w, dy, conv, dx, algo)?);
                    }
                    d
                }
                OpKind::Tensor(TensorOp::MatMul { batches, m, k, n: cols, a_transposed, b_transposed, .. }) => {
                    let products = products.as_ref().expect("made above for a net with products");
                    product_descriptors(products, *batches * n, *m, *k, *cols, *a_transposed, *b_transposed).map_err(|e| GpuError::from(e).in_layer(&op.name))?
                }
                _ => OpDescriptors::Kernels,
            };
            descriptors.push(d);
        }
        Ok(Slot {
            stats: DeviceBuffer::new(stats_bytes.max(1))?,
            workspace: DeviceBuffer::new(need.max(workspace_bytes))?,
            model: model.clone(),
            stream,
            descriptors,
            handle,
            products,
            buffers,
            graph: None,
            use_graphs,
        })
    }

    /// Where value `value`'s first row starts.
    pub(super) fn ptr(&self, value: usize) -> DevicePtr {
        value_ptr(&self.model.header.net, &self.buffers, value)
    }

    /// Elements between value `value`'s positions (its padded channels unless placed in a wider
    /// value's rows).
    pub(super) fn row(&self, value: usize) -> usize {
        row(&self.model.header.net, value)
    }

    /// The network's input buffer: the plan's batch of channels-last fp16 samples.
    pub fn input(&self) -> DevicePtr {
        self.ptr(0)
    }

    /// The network's output buffer: channels-last fp16 with padded rows for an image, f32 in the
    /// ONNX output's logical order (per sample [`Convnet::output_shape`]'s `dims()`) for a dense value.
    pub fn output(&self) -> DevicePtr {
        self.ptr(self.model.header.net.output())
    }

    /// Each output's buffer and its row width (elements between positions), in
    /// [`Convnet::output_shapes`]'s order.
    pub fn outputs(&self) -> Vec<(DevicePtr, usize)> {
        self.model.header.net.outputs.iter().map(|&v| (self.ptr(v), self.row(v))).collect()
    }

    /// Enqueues op `index`.
    ///
    /// # Safety
    /// Every value's buffer is sized for the plan's batch (the slot's own), the weights are the
    /// plan's; the caller synchronizes before reading results.
    unsafe fn enqueue_op(&self, index: usize, algorithms: (Option<Algorithm>, Option<BackwardDataAlgorithm>)) -> Result<()> {
        let m = &self.model;
        let (net, n) = (&m.header.net, m.batch());
        let op = &net.ops[index];
        let (xs, ys) = (&net.values[op.inputs[0]], &net.values[op.output]);
        let (x, y, weights) = (self.ptr(op.inputs[0]).raw(), self.ptr(op.output).raw(), m.weights.ptr());
        let rows = (n * ys.positions()) as i64;
        let missing = || GpuError::PlanContent("the plan has no algorithm (build incomplete); rebuild it".into()).in_layer(&op.name);
        // The epilogue of a legacy algorithm's output: bias, activation, then the residual if any.
        let bias_act = |bias: Option<usize>, act: Act| -> Result<()> {
            let residual = op.inputs.get(1).copied();
            if bias.is_none() && act == Act::None && residual.is_none() {
                return Ok(());
            }
            let b = bias.map_or(0, |o| weights.offset(o).raw());
            let (r, r_row) = residual.map_or((0, 0), |v| (self.ptr(v).raw(), self.row(v) as i32));
            let (c, y_row, kind) = (ys.padded as i32, self.row(op.output) as i32, act.code());
            let mut l = self.stream.launch_builder(&m.bias_act);
            l.arg(&y).arg(&y).arg(&b).arg(&r).arg(&rows).arg(&c).arg(&y_row).arg(&y_row).arg(&r_row).arg(&kind);
            // SAFETY: bias_act's parameters in order and type; in place on the op's output.
            cu("bias_act", unsafe { l.launch(vectorised(rows as usize * ys.padded)) })?;
            Ok(())
        };
        match (&op.kind, &self.descriptors[index]) {
            // SAFETY: the bindings address the slot's buffers and the plan's weights; the workspace
            // holds what the plan needs (sized in `new`).
            (OpKind::Conv { .. }, OpDescriptors::Graph { plan, bindings }) => {
                unsafe { plan.execute(&self.handle, bindings, Some(&self.workspace)) }.map_err(|e| GpuError::from(e).in_layer(&op.name))?
            }
            // SAFETY: our caller's contract.
            (OpKind::Conv { own: Some(kernel), .. }, _) => unsafe { self.enqueue_own(op, *kernel) }?,
            (OpKind::Conv { weights: w_at, bias, act, .. }, OpDescriptors::Conv { x: xd, y: yd, w, conv }) => {
                let algo = algorithms.0.ok_or_else(missing)?;
                // SAFETY: the descriptors describe the slot's buffers and the plan's weights; the
                // workspace holds what the algorithm needs (sized in `new`, checked when timing).
                unsafe {
                    cudnn::forward(
                        &self.handle,
                        Operand { desc: xd, ptr: self.ptr(op.inputs[0]) },
                        Operand { desc: w, ptr: weights.offset(*w_at) },
                        conv,
                        algo,
                        &self.workspace,
                        Operand { desc: yd, ptr: self.ptr(op.output) },
                    )
                }?;
                bias_act(*bias, *act)?;
            }
            (OpKind::ConvTranspose { weights: w_at, bias, .. }, OpDescriptors::Transpose { dy, dx, w, conv }) => {
                let algo = algorithms.1.ok_or_else(missing)?;
                // SAFETY: as above.
                unsafe {
                    cudnn::backward_data(
                        &self.handle,
                        Operand { desc: dy, ptr: self.ptr(op.inputs[0]) },
                        Operand { desc: w, ptr: weights.offset(*w_at) },
                        conv,
                        algo,
                        &self.workspace,
                        Operand { desc: dx, ptr: self.ptr(op.output) },
                    )
                }?;
                bias_act(*bias, Act::None)?;
            }
            (OpKind::InstanceNorm { params, epsilon, act }, _) => {
                let (positions, c) = (xs.positions() as i64, xs.padded as i32);
                let (blocks, rows) = norm_layout(xs);
                let (partials, chunk) = (self.stats.ptr().raw(), NORM_CHUNK as i32);
                let mut l = self.stream.launch_builder(&m.norm_stats);
                l.arg(&x).arg(&partials).arg(&positions).arg(&c).arg(&chunk);
                let shared = (rows * xs.padded * 8) as u32;
                // SAFETY: norm_stats's parameters; the stats buffer holds n x blocks x channels
                // pairs (`norm_bytes`), shared memory the block's rows of pairs.
                cu("norm_stats", unsafe { l.launch(LaunchConfig { grid_dim: (blocks as u32, n as u32, 1), block_dim: (THREADS, 1, 1), shared_mem_bytes: shared }) })?;
                let (p, kind, batch, blocks) = (weights.offset(*params).raw(), act.code(), n as i32, blocks as i32);
                let ab = self.stats.ptr().offset(n * blocks as usize * xs.padded * 8).raw();
                let mut l = self.stream.launch_builder(&m.norm_finish);
                l.arg(&partials).arg(&ab).arg(&p).arg(&positions).arg(&c).arg(&blocks).arg(epsilon).arg(&batch);
                // SAFETY: norm_finish's parameters; `ab` follows the partial sums within the buffer.
                cu("norm_finish", unsafe { l.launch(elementwise(n * xs.padded)) })?;
                let mut l = self.stream.launch_builder(&m.norm_apply);
                l.arg(&x).arg(&y).arg(&ab).arg(&positions).arg(&c).arg(&kind).arg(&batch);
                // SAFETY: norm_apply's parameters in order and type.
                cu("norm_apply", unsafe { l.launch(vectorised(n * xs.elements())) })?;
            }
            (OpKind::Concat, _) => {
                let mut offset = 0i32;
                for &input in &op.inputs {
                    let v = &net.values[input];
                    let (src, c, x_row, y_row) = (self.ptr(input).raw(), v.channels as i32, self.row(input) as i32, self.row(op.output) as i32);
                    if net.lies_in(input, op.output, offset as usize) {
                        offset += c;
                        continue;
                    }
                    let mut l = self.stream.launch_builder(&m.copy_slice);
                    l.arg(&src).arg(&y).arg(&rows).arg(&c).arg(&x_row).arg(&0i32).arg(&y_row).arg(&offset);
                    // The kernel moves 8 channels at a time when every count is a multiple of 8.
                    let total = rows as usize * c as usize;
                    let launch = if (c | x_row | y_row | offset) % 8 == 0 { vectorised(total) } else { elementwise(total) };
                    // SAFETY: copy_slice's parameters; the slice lies within the output's rows.
                    cu("copy_slice", unsafe { l.launch(launch) })?;
                    offset += c;
                }
            }
            (OpKind::Activation(act), _) => {
                let (c, x_row, y_row, kind) = (ys.padded as i32, self.row(op.inputs[0]) as i32, self.row(op.output) as i32, act.code());
                let mut l = self.stream.launch_builder(&m.bias_act);
                l.arg(&x).arg(&y).arg(&0u64).arg(&0u64).arg(&rows).arg(&c).arg(&x_row).arg(&y_row).arg(&0i32).arg(&kind);
                // SAFETY: bias_act's parameters in order and type.
                cu("activation", unsafe { l.launch(vectorised(rows as usize * ys.padded)) })?;
            }
            (OpKind::Tensor(TensorOp::MatMul { alpha, .. }), OpDescriptors::Product { desc, first, second, out, algo }) => {
                let products = self.products.as_ref().expect("a slot with products has their handle");
                let (a, b) = (self.ptr(op.inputs[0]), self.ptr(op.inputs[1]));
                // SAFETY: the layouts describe the op's buffers over the plan's batch (made from its
                // shapes in `new`); alpha is f32, the descriptor's scale type; the algorithm is the
                // heuristic's for these descriptors.
                unsafe { products.enqueue(desc, alpha, (b, first), (a, second), (self.ptr(op.output), out), algo, self.stream.cu_stream()) }
                    .map_err(|e| GpuError::from(e).in_layer(&op.name))?;
            }
            // SAFETY: our caller's contract.
            (OpKind::Tensor(t), _) => unsafe { self.enqueue_tensor(op, t) }?,
            _ => return Err(GpuError::PlanContent("an op whose descriptors do not match it (corrupt plan); rebuild it".into()).in_layer(&op.name)),
        }
        Ok(())
    }

    /// What our kernels take of convolution `op`.
    fn own_conv<'a>(&'a self, op: &'a Op) -> OwnConv<'a> {
        let net = &self.model.header.net;
        let OpKind::Conv { geometry, weights: w_at, bias, act, .. } = &op.kind else { unreachable!("a convolution") };
        let weights = self.model.weights.ptr();
        OwnConv {
            x_shape: &net.values[op.inputs[0]],
            y_shape: &net.values[op.output],
            geometry,
            x: self.ptr(op.inputs[0]).raw(),
            w: weights.offset(*w_at).raw(),
            b: bias.map_or(0, |o| weights.offset(o).raw()),
            y: self.ptr(op.output).raw(),
            x_row: self.row(op.inputs[0]) as i32,
            y_row: self.row(op.output) as i32,
            kind: act.code(),
        }
    }

    /// Enqueues convolution `op` on our `kernel`, with its bias and activation.
    ///
    /// # Safety
    /// As for [`Slot::enqueue_op`].
    unsafe fn enqueue_own(&self, op: &Op, kernel: OwnKernel) -> Result<()> {
        // SAFETY: our caller's contract.
        match kernel {
            OwnKernel::Depthwise => unsafe { self.enqueue_depthwise(op) },
            OwnKernel::FewChannels => unsafe { self.enqueue_few_channels(op) },
        }
    }

    /// Enqueues convolution `op` (an input of 8 or 16 padded channels, [`super::import::Net::own_kernel`])
    /// on `few_channel_conv`: tensor cores, bias and activation fused.
    ///
    /// # Safety
    /// As for [`Slot::enqueue_op`].
    unsafe fn enqueue_few_channels(&self, op: &Op) -> Result<()> {
        let (a, n) = (self.own_conv(op), self.model.batch());
        let (xs, ys) = (a.x_shape, a.y_shape);
        let positions = n * ys.positions();
        let shared = a.geometry.few_channel_shared_bytes(xs.padded, ys.padded);
        if (n * xs.positions()).max(positions) > i32::MAX as usize || shared > KERNEL_SHARED_BYTES || ys.padded > FEW_CHANNEL_OUTPUTS {
            return Err(GpuError::PlanContent(format!(
                "the few-channel kernel takes under 2^31 positions, {KERNEL_SHARED_BYTES} bytes of shared memory and {FEW_CHANNEL_OUTPUTS} outputs, not {positions}, {shared} and {}; rebuild the plan",
                ys.padded
            ))
            .in_layer(&op.name));
        }
        let [h, w, oh, ow, kh, kw, sy, sx, py, px] = a.sides();
        let (total, c, p, tiles) = (positions as i32, xs.channels as i32, xs.padded as i32, (ys.padded / 8) as i32);
        let mut l = self.stream.launch_builder(&self.model.few_channel_conv);
        l.arg(&a.x).arg(&a.w).arg(&a.b).arg(&a.y).arg(&total).arg(&h).arg(&w).arg(&c).arg(&p).arg(&tiles).arg(&oh).arg(&ow).arg(&kh).arg(&kw);
        l.arg(&sy).arg(&sx).arg(&py).arg(&px).arg(&a.x_row).arg(&a.y_row).arg(&a.kind);
        // Warps of 16 positions, 4 a block; a few blocks per SM stride over the rest, each laying
        // out the weights' fragments once.
        let blocks = (positions.div_ceil(16 * 4) as u32).min(FEW_CHANNEL_BLOCKS);
        let config = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (128, 1, 1), shared_mem_bytes: shared as u32 };
        // SAFETY: few_channel_conv's parameters in order and type; the op's buffers hold the
        // batch's rows (rows of 8 or 16 channels in, 8 x tiles out), the weights `[8 x tiles][kh x
        // kw][p]` fp16 and the bias 8 x tiles floats; `shared` holds the fragments and taps; every index
        // fits an i32 (checked above).
        cu("few_channel_conv", unsafe { l.launch(config) })?;
        Ok(())
    }

    /// Enqueues depthwise convolution `op` on our kernel, with its bias and activation.
    ///
    /// # Safety
    /// As for [`Slot::enqueue_op`].
    unsafe fn enqueue_depthwise(&self, op: &Op) -> Result<()> {
        let (a, n) = (self.own_conv(op), self.model.batch());
        let (xs, ys) = (a.x_shape, a.y_shape);
        let [h, w, oh, ow, kh, kw, sy, sx, py, px] = a.sides();
        let (batch, c) = (n as i32, xs.channels as i32);
        let largest = (n * xs.positions() * a.x_row as usize).max(n * ys.positions() * a.y_row as usize);
        let shared = a.geometry.depthwise_weight_bytes(xs.channels);
        if largest > i32::MAX as usize || shared > KERNEL_SHARED_BYTES {
            return Err(GpuError::PlanContent(format!(
                "the depthwise kernel takes tensors under 2^31 values and {KERNEL_SHARED_BYTES} bytes of weights, not {largest} and {shared}; rebuild the plan"
            ))
            .in_layer(&op.name));
        }
        // Rows per thread on the 3 x 3 stride-1 path: as many as keep the grid a full wave, up to
        // DEPTHWISE_RUN (each row then costs 3 loads plus the first two rows' 6, shared by the run).
        let vectors = n * ys.positions() * xs.channels / 8;
        let run = (vectors / (DEPTHWISE_BLOCKS * THREADS) as usize).clamp(1, DEPTHWISE_RUN) as i32;
        let mut l = self.stream.launch_builder(&self.model.depthwise);
        l.arg(&a.x).arg(&a.w).arg(&a.b).arg(&a.y).arg(&batch).arg(&h).arg(&w).arg(&c).arg(&oh).arg(&ow).arg(&kh).arg(&kw).arg(&sy).arg(&sx).arg(&py).arg(&px);
        l.arg(&a.x_row).arg(&a.y_row).arg(&a.kind).arg(&run);
        // A few blocks per SM stride over the output, each copying the weights into shared memory once.
        let LaunchConfig { grid_dim: (blocks, ..), block_dim, .. } = vectorised(n * ys.positions() * xs.channels);
        let config = LaunchConfig { grid_dim: (blocks.min(DEPTHWISE_BLOCKS), 1, 1), block_dim, shared_mem_bytes: shared as u32 };
        // SAFETY: depthwise's parameters in order and type; the op's buffers hold the batch's
        // rows, the weights `c x kh x kw` fp16 values and the bias `c` floats; `shared` holds the
        // weights, and every index fits an i32 (checked above).
        cu("depthwise", unsafe { l.launch(config) })?;
        Ok(())
    }

    fn algorithms(&self, index: usize) -> (Option<Algorithm>, Option<BackwardDataAlgorithm>) {
        match &self.model.header.net.ops[index].kind {
            OpKind::Conv { algorithm, .. } => (Algorithm::from_code(*algorithm), None),
            OpKind::ConvTranspose { algorithm, .. } => (None, BackwardDataAlgorithm::from_code(*algorithm)),
            _ => (None, None),
        }
    }

    /// # Safety
    /// As for [`Slot::enqueue_op`].
    unsafe fn enqueue(&self) -> Result<()> {
        for index in 0..self.model.header.net.ops.len() {
            // SAFETY: our caller's contract.
            unsafe { self.enqueue_op(index, self.algorithms(index)) }?;
        }
        Ok(())
    }

    /// Enqueues the network on the slot's stream over the input buffer (a whole batch); the first
    /// call runs plainly, then captures a graph when the slot uses them.
    pub fn run(&mut self) -> Result<()> {
        device::bind(&self.model.ctx)?;
        if let Some(graph) = &self.graph {
            return Ok(cu("launch graph", graph.launch())?);
        }
        // SAFETY: the slot's own buffers and the plan's weights; graphs capture the same.
        unsafe { self.enqueue() }?;
        if self.use_graphs {
            cu("synchronize", self.stream.synchronize())?;
            cu("begin capture", self.stream.begin_capture(ds::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))?;
            // SAFETY: as above.
            let enqueued = unsafe { self.enqueue() };
            let graph = cu("end capture", self.stream.end_capture(ds::CUgraphInstantiate_flags(0)));
            enqueued?;
            self.graph = graph?;
        }
        Ok(())
    }

    /// Runs `input` (the plan's batch of NC... f32 samples) and returns the output NC... f32
    /// (logical channels): for checks against the CPU engine.
    pub fn run_host(&mut self, input: &[f32]) -> Result<Vec<f32>> {
        let m = self.model.clone();
        let n = m.batch();
        let (xs, ys) = (m.input_shape(), m.output_shape());
        if input.len() != n * xs.positions() * xs.channels {
            return Err(GpuError::Run(format!("{} input values for a batch of {n} samples of {} channels x {:?}", input.len(), xs.channels, xs.spatial)));
        }
        device::bind(&m.ctx)?;
        let staging = DeviceBuffer::new(4 * input.len().max(n * ys.positions() * ys.channels))?;
        let bytes: Vec<u8> = input.iter().flat_map(|v| v.to_le_bytes()).collect();
        cu("upload input", staging.upload(0, &bytes))?;
        let stream = self.stream.clone();
        let convert = |f: &CudaFunction, from: u64, to: u64, v: &ValueShape, total: usize| -> Result<()> {
            let (p, c, pad, b) = (v.positions() as i64, v.channels as i32, v.padded as i32, n as i32);
            let mut l = stream.launch_builder(f);
            l.arg(&from).arg(&to).arg(&p).arg(&c).arg(&pad).arg(&b);
            // SAFETY: the conversion kernels' parameters; both buffers hold the batch.
            cu("convert", unsafe { l.launch(elementwise(total)) })?;
            Ok(())
        };
        convert(&m.to_channels_last, staging.ptr().raw(), self.input().raw(), xs, n * xs.elements())?;
        self.run()?;
        // A dense output is already f32 in the logical order.
        let result = if ys.dense {
            self.output()
        } else {
            convert(&m.from_channels_last, self.output().raw(), staging.ptr().raw(), ys, n * ys.positions() * ys.channels)?;
            staging.ptr()
        };
        cu("synchronize", self.stream.synchronize())?;
        let mut out = vec![0f32; n * ys.positions() * ys.channels];
        // SAFETY: `out` is within the buffer read; the stream has finished.
        cu("download output", unsafe { dr::memcpy_dtoh_sync(&mut out, result.raw()) })?;
        Ok(out)
    }

    /// Times every candidate cuDNN algorithm of every (transposed) convolution at the plan's batch
    /// within `workspace_limit`, cuDNN's fused graph where one applies and our kernel where one
    /// applies ([`super::import::Net::own_kernel`]), and writes the fastest into `header` (the builder's autotuning); one
    /// report line per op.
    pub fn choose_algorithms(&self, header: &mut ConvnetHeader, workspace_limit: usize, report: &mut dyn FnMut(&str)) -> Result<()> {
        device::bind(&self.model.ctx)?;
        let event = || cu("event", self.model.ctx.new_event(Some(ds::CUevent_flags::CU_EVENT_DEFAULT)));
        let events = (event()?, event()?);
        let limit = workspace_limit.min(self.workspace.bytes);
        let mut tuned_shapes = Vec::new();
        for (index, d) in self.descriptors.iter().enumerate() {
            let mut best: Option<(f32, i32, usize)> = None;
            let op = &self.model.header.net.ops[index];
            // Our kernels where one applies: timed like cuDNN's (which win some shapes and batches).
            let offered = self.model.header.net.own_kernel(op);
            // SAFETY: our kernel on the slot's buffers.
            let ours = match offered {
                Some(kernel) => time_runs(&self.stream, &events, &mut || unsafe { self.enqueue_own(op, kernel) }.is_ok())?,
                None => None,
            };
            // Where our kernel was offered and cuDNN won, the report says by how much (or that it failed).
            let beaten = match (offered, ours) {
                (None, _) => String::new(),
                (Some(kernel), Some(us)) => format!("; {kernel} {us:.1} us"),
                (Some(kernel), None) => format!("; {kernel} failed to run"),
            };
            match d {
                OpDescriptors::Conv { x, y, w, conv } => {
                    for (algo, _) in cudnn::candidate_algorithms(&self.handle, x, w, conv, y)? {
                        let Ok(bytes) = cudnn::workspace_size(&self.handle, x, w, conv, y, algo) else { continue };
                        // SAFETY: a candidate within the workspace, on the slot's buffers.
                        let us = if bytes <= limit { time_runs(&self.stream, &events, &mut || unsafe { self.enqueue_op(index, (Some(algo), None)) }.is_ok())? } else { None };
                        if let Some(us) = us.filter(|&us| best.is_none_or(|(t, ..)| us < t)) {
                            best = Some((us, algo.code(), bytes));
                        }
                    }
                }
                OpDescriptors::Transpose { dy, dx, w, conv } => {
                    for algo in cudnn::candidate_backward_data_algorithms(&self.handle, w, dy, conv, dx)? {
                        let Ok(bytes) = cudnn::backward_data_workspace_size(&self.handle, w, dy, conv, dx, algo) else { continue };
                        // SAFETY: as above.
                        let us = if bytes <= limit { time_runs(&self.stream, &events, &mut || unsafe { self.enqueue_op(index, (None, Some(algo))) }.is_ok())? } else { None };
                        if let Some(us) = us.filter(|&us| best.is_none_or(|(t, ..)| us < t)) {
                            best = Some((us, algo.code(), bytes));
                        }
                    }
                }
                OpDescriptors::Kernels | OpDescriptors::Graph { .. } | OpDescriptors::Product { .. } => continue,
            }
            let fused = self.tune_graph(index, limit, &header.key.gpu_name, &mut tuned_shapes);
            let cudnn_best = [best.map(|(us, ..)| us), fused.as_ref().map(|c| c.us as f32)].into_iter().flatten().reduce(f32::min);
            let op = &mut header.net.ops[index];
            if let (OpKind::Conv { algorithm, workspace, .. } | OpKind::ConvTranspose { algorithm, workspace, .. }, Some((_, code, bytes))) = (&mut op.kind, best) {
                (*algorithm, *workspace) = (code, bytes);
            }
            // cuDNN's legacy algorithms refuse rows wider than the channels (a value placed in a
            // concatenation's rows); its runtime-fused graphs take them, so a graph may be all there is.
            match (fused, &mut op.kind, best) {
                (_, OpKind::Conv { own, algorithm, workspace, .. }, _) if ours.is_some_and(|us| cudnn_best.is_none_or(|t| us < t)) => {
                    let cudnn = cudnn_best.map_or("none runs it".to_string(), |us| format!("{us:.1} us"));
                    report(&format!("{:<28} {} ({:.1} us; cuDNN {cudnn})", op.name, offered.expect("timed"), ours.unwrap_or(f32::NAN)));
                    // No cuDNN algorithm runs it, so none sizes the slots' workspace.
                    (*own, *algorithm, *workspace) = (offered, -1, 0);
                }
                (Some(choice), OpKind::Conv { graph, workspace, .. }, _) if best.is_none_or(|(us, ..)| (choice.us as f32) < us) => {
                    let legacy = best.map_or("none runs it".to_string(), |(us, code, _)| format!("{code} {us:.1} us"));
                    let timed_on = if choice.timed_on == op.name { String::new() } else { format!(", timed on {}", choice.timed_on) };
                    report(&format!("{:<28} graph engine {} ({:.1} us{timed_on}; legacy algorithm {legacy}{beaten})", op.name, choice.engine, choice.us));
                    (*graph, *workspace) = (Some(choice.plan), choice.workspace);
                }
                (_, _, Some((us, code, bytes))) => report(&format!("{:<28} algorithm {code} ({us:.1} us, {bytes} bytes of workspace{beaten})", op.name)),
                (..) => return Err(GpuError::Build(format!("no cuDNN algorithm or graph runs it within {workspace_limit} bytes of workspace")).in_layer(&op.name)),
            }
        }
        Ok(())
    }

    /// The fastest cuDNN graph plan running convolution `index` with its bias and activation (2-D,
    /// one group), timed on the slot's buffers, as the plan file keeps it (made on GPU `gpu`);
    /// `None` where the op is not such a convolution or cuDNN has no plan for it. A layer of the
    /// shape of one already tuned (`tuned`: networks repeat their blocks' shapes) takes that one's
    /// choice: each candidate of a runtime-fusion engine compiles a kernel.
    fn tune_graph(&self, index: usize, workspace_limit: usize, gpu: &str, tuned: &mut Vec<(HalfConv, Option<GraphChoice>)>) -> Option<GraphChoice> {
        let net = &self.model.header.net;
        let op = &net.ops[index];
        let OpKind::Conv { geometry: g, weights, bias, act, .. } = &op.kind else { return None };
        let (x, y) = (&net.values[op.inputs[0]], &net.values[op.output]);
        if !g.is_plain_2d() {
            return None;
        }
        let two = |v: &[usize]| [v[0] as i64, v[1] as i64];
        let act = match act {
            Act::None => None,
            Act::Relu => Some(PointwiseMode::ReluFwd),
            Act::Silu => Some(PointwiseMode::SwishFwd),
            Act::Sigmoid => return None,
        };
        let layer = HalfConv {
            shape: ConvShape {
                batch: self.model.batch() as i64,
                in_channels: x.padded as i64,
                height: x.spatial[0] as i64,
                width: x.spatial[1] as i64,
                out_channels: y.padded as i64,
                kernel: two(&g.kernel),
                padding: two(&g.pad),
                stride: two(&g.stride),
            },
            dilation: two(&g.dilation),
            bias: bias.is_some(),
            act,
            x_row: self.row(op.inputs[0]) as i64,
            y_row: self.row(op.output) as i64,
            residual_row: op.inputs.get(1).map(|&r| self.row(r) as i64),
        };
        if let Some((_, choice)) = tuned.iter().find(|(shape, _)| *shape == layer) {
            return choice.clone();
        }
        let residual = op.inputs.get(1).map(|&r| self.ptr(r));
        let bindings = conv_bindings(self.ptr(op.inputs[0]), self.model.weights.ptr(), *weights, *bias, residual, self.ptr(op.output));
        // Runtime-fusion engines compile a kernel per candidate. Twelve ran YOLO's convolutions at
        // batch 64 in 14.99 ms where four took 15.44 (thirty-two, no faster than twelve).
        let options = Autotune { candidates: 12, runs: 5 };
        if self.workspace.bytes > workspace_limit {
            return None;
        }
        // SAFETY: the bindings address the slot's buffers (the plan's batch) and the plan's
        // weights; the handle enqueues on the slot's stream and autotuning waits for its runs.
        let fastest = conv_bias_act(&layer)
            .map_err(Into::into)
            .and_then(|spec| Graph::build(&self.handle, &spec))
            .and_then(|g| unsafe { g.autotune(&self.handle, &self.stream, &bindings, &self.workspace, options) });
        // A plan that cuDNN cannot serialize could not be stored in the plan file: not offered.
        let choice = fastest.ok().and_then(|t| {
            let plan = SerializedPlan::new(&t.plan, gpu).ok()?;
            Some(GraphChoice { us: t.timings[0].1, engine: t.plan.engine(), plan, workspace: t.plan.workspace_bytes(), timed_on: op.name.clone() })
        });
        tuned.push((layer, choice.clone()));
        choice
    }

    /// Each op's mean time alone (microseconds, five runs after one), for finding where a network's
    /// time goes; the total exceeds a graph replay's by the launch gaps the graph removes.
    pub fn profile(&self) -> Result<Vec<f32>> {
        device::bind(&self.model.ctx)?;
        let event = || cu("event", self.model.ctx.new_event(Some(ds::CUevent_flags::CU_EVENT_DEFAULT)));
        let events = (event()?, event()?);
        (0..self.model.header.net.ops.len())
            .map(|index| {
                // SAFETY: the slot's own buffers and the plan's weights and algorithms.
                let us = time_runs(&self.stream, &events, &mut || unsafe { self.enqueue_op(index, self.algorithms(index)) }.is_ok())?;
                us.ok_or_else(|| GpuError::Run("an op failed while profiled".into()).in_layer(&self.model.header.net.ops[index].name))
            })
            .collect()
    }

    /// Mean milliseconds per batch of `runs` runs (after one untimed), the graph when there is one.
    pub fn time_batches(&mut self, runs: usize) -> Result<f64> {
        self.run()?;
        cu("synchronize", self.stream.synchronize())?;
        let started = std::time::Instant::now();
        for _ in 0..runs {
            self.run()?;
        }
        cu("synchronize", self.stream.synchronize())?;
        Ok(started.elapsed().as_secs_f64() * 1000.0 / runs.max(1) as f64)
    }
}

/// cuDNN's fastest graph plan for a convolution as the builder keeps it: its mean time, engine,
/// serialized plan and workspace, and the layer it was timed on.
#[derive(Clone)]
struct GraphChoice {
    us: f64,
    engine: i64,
    plan: SerializedPlan,
    workspace: usize,
    timed_on: String,
}

/// What our 2-D convolution kernels (`depthwise`, `few_channel_conv`) take of a convolution, typed
/// as their parameters are: its shapes and geometry, the addresses of its input, weights, bias (0
/// without) and output, the rows' widths and the activation's code.
struct OwnConv<'a> {
    x_shape: &'a ValueShape,
    y_shape: &'a ValueShape,
    geometry: &'a ConvGeometry,
    x: u64,
    w: u64,
    b: u64,
    y: u64,
    x_row: i32,
    y_row: i32,
    kind: i32,
}

impl OwnConv<'_> {
    /// `[h, w, oh, ow, kh, kw, sy, sx, py, px]`: the input's and output's sides, the kernel, the
    /// strides and the padding.
    fn sides(&self) -> [i32; 10] {
        let (x, y, g) = (&self.x_shape.spatial, &self.y_shape.spatial, self.geometry);
        [x[0], x[1], y[0], y[1], g.kernel[0], g.kernel[1], g.stride[0], g.stride[1], g.pad[0], g.pad[1]].map(|v| v as i32)
    }
}

/// cuBLASLt's view of `count` row-major f32 products `y [m, n] = a [m, k] b [k, n]` (an operand
/// `transposed` stored as its transpose): column-major, `y^T = b^T a^T`. A row-major `[r, c]` is a
/// column-major `c x r` of leading dimension `c`, so each operand is read as stored and transposed
/// by the descriptor where the op's is. TF32 tensor cores: fp16's 10-bit mantissa, as the network's
/// convolutions already store their values, at several times f32's speed.
fn product_descriptors(products: &cublaslt::Handle, count: usize, m: usize, k: usize, n: usize, a_transposed: bool, b_transposed: bool) -> device::Result<OpDescriptors> {
    use cudarc::cublaslt::sys::{cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32, cudaDataType_t::CUDA_R_32F};
    // Operand `rows x cols` as it lies: itself, or its transpose for the descriptor to transpose.
    let stored = |rows: usize, cols: usize, transposed: bool| if transposed { (cols, rows) } else { (rows, cols) };
    let layout = |(rows, cols): (usize, usize), stride: usize| cublaslt::Layout::new(CUDA_R_32F, rows, cols)?.batched(count, stride);
    // b^T: b stored [k, n] is n x k as it lies; stored [n, k] it is k x n, transposed.
    let first = layout(stored(n, k, b_transposed), k * n)?;
    let second = layout(stored(k, m, a_transposed), m * k)?;
    let out = layout((n, m), m * n)?;
    let desc = cublaslt::Desc::new(CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F, b_transposed, a_transposed)?;
    let algo = products.algorithm(&desc, &first, &second, &out, || format!("{count} products [{m}, {k}] x [{k}, {n}] (f32, TF32)"))?;
    Ok(OpDescriptors::Product { desc, first, second, out, algo })
}

/// Where value `v`'s first row starts: its root's buffer, `offset` channels in.
fn value_ptr(net: &super::import::Net, buffers: &[Option<DeviceBuffer>], v: usize) -> DevicePtr {
    let place = net.places[v];
    let root = buffers[place.root].as_ref().expect("every root value has its buffer (Slot::new)");
    root.ptr().offset(2 * place.offset)
}

/// Elements between value `v`'s positions: its root's padded channels.
fn row(net: &super::import::Net, v: usize) -> usize {
    net.values[net.places[v].root].padded
}

/// The graph tensors' addresses of a convolution: input, weights and bias in the plan's blob, the
/// residual if any, output.
fn conv_bindings(x: DevicePtr, weights: DevicePtr, w_at: usize, bias: Option<usize>, residual: Option<DevicePtr>, y: DevicePtr) -> Vec<(Uid, DevicePtr)> {
    let mut bindings = vec![(ConvLayer::X, x), (ConvLayer::W, weights.offset(w_at)), (ConvLayer::Y, y)];
    bindings.extend(bias.map(|b| (ConvLayer::BIAS, weights.offset(b))));
    bindings.extend(residual.map(|r| (ConvLayer::RESIDUAL, r)));
    bindings
}
