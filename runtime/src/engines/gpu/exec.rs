//! Running a plan on one GPU through cudarc: the weights uploaded once, and per inference stream a
//! "slot" with its own cuDNN handle, the cuDNN graph plans of the int8 layers that run one
//! (restored from the plan's JSON), activation buffers, workspace, pinned host buffers and one
//! CUDA graph per batch size (captured on first use after a warm-up run, then replayed).
//!
//! A batch on a slot: the samples are copied into the slot's pinned input buffer (or, with
//! `start_from_device`, found in the device's resident sample pool), and one graph launch does the
//! rest: upload, conversion to NHWC fp16 (space-to-depth when the plan's stem wants it), every
//! layer, top-1 selection and the download of one int32 class per sample into pinned memory.

use super::cudnn::{self, Activation, Algorithm, Convolution, DataType, Filter, FusedConv, Handle, Operand, Pooling, Tensor};
use super::device::{self, DeviceBuffer, DeviceError, DevicePtr, PinnedBuffer, compile_for, cu};
use super::error::GpuError;
use super::graph::GraphError;
use super::graph::plan::{Autotune, ExecutionPlan, Graph, SerializedPlan, Tuned};
use super::graph::spec::{self as graph_spec, ConvLayer, Uid};
use super::plan::{Accumulator, ConvRunner, LayerKind, PlanHeader, PlannedLayer};
use super::pointwise::{self, Pointwise};
use super::stem::{self, StemConv};
use crate::engines::{ElementType, InputSpec, Layout};
use cudarc::driver::{CudaContext, CudaEvent, CudaFunction, CudaGraph, CudaStream, LaunchConfig, PushKernelArg, result as dr, sys as ds};
use std::collections::HashMap;
use std::sync::Arc;

type Result<T> = std::result::Result<T, GpuError>;

/// The launch of the element-wise kernels (quantize, dequantize, the int8 pools): one thread per
/// group of 8 elements, 256 per block.
fn per_group(groups: i64) -> LaunchConfig {
    LaunchConfig { grid_dim: ((groups as u64).div_ceil(256) as u32, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }
}

/// The conversion kernel's `dtype` argument (its ABI: 0 = f32, 1 = f16, 2 = int8 times `scale`).
fn kernel_dtype(element: ElementType) -> i32 {
    match element {
        ElementType::F32 => 0,
        ElementType::F16 => 1,
        ElementType::I8 => 2,
        ElementType::I32 => unreachable!("validated: image samples are never int32"),
    }
}

const KERNELS: &str = include_str!("exec.cu");

/// The plan resident on one GPU: weights and compiled kernels, shared by the device's slots.
pub struct DeviceModel {
    pub ctx: Arc<CudaContext>,
    /// The GPU's name, which keys cuDNN graph plans.
    gpu: String,
    pub header: PlanHeader,
    /// The samples as the sample library holds them.
    pub input: InputSpec,
    weights: DeviceBuffer,
    convert: CudaFunction,
    quantize: CudaFunction,
    dequantize: CudaFunction,
    max_pool_int8: CudaFunction,
    max_pool_from_int8: CudaFunction,
    average_pool_int8: CudaFunction,
    top1: CudaFunction,
    /// Our int8 1x1 kernel (`pointwise.cu`), on GPUs with int8 `mma.sync` (compute capability 8.0
    /// or later).
    pointwise: Option<CudaFunction>,
    /// Our stem kernel (`stem.cu`), on the same GPUs.
    stem: Option<CudaFunction>,
}

impl DeviceModel {
    pub fn load(ordinal: usize, header: &PlanHeader, blob: &[u8], input: InputSpec) -> Result<Arc<DeviceModel>> {
        let image_channels = header.layers.first().map_or(0, |l| l.input_shape.0);
        if !image_channels.is_multiple_of(4) {
            return Err(GpuError::PlanContent(format!(
                "the plan built from {}: its first layer reads {image_channels} channels, not a multiple of 4 (the conversion kernel writes 4 at a time); rebuild it",
                header.model_path
            )));
        }
        let converts = header.layers.iter().filter(|l| {
            matches!(
                l.kind,
                LayerKind::Quantize { .. } | LayerKind::Dequantize { .. } | LayerKind::MaxPool { int8_output: Some(_), .. } | LayerKind::GlobalAveragePool { int8_input: Some(_) }
            )
        });
        if let Some(l) = converts.into_iter().find(|l| l.input_shape.0 % 8 != 0) {
            return Err(GpuError::PlanContent(format!(
                "the plan built from {}: layer {} converts {} channels, not a multiple of 8 (its kernel converts 8 at a time)",
                header.model_path, l.name, l.input_shape.0
            )));
        }
        let runs_pointwise = |l: &&PlannedLayer| matches!(l.kind, LayerKind::Conv { runner: ConvRunner::Pointwise, .. });
        if let Some(l) = header.layers.iter().filter(runs_pointwise).find(|l| !l.fits_pointwise()) {
            return Err(GpuError::PlanContent(format!("the plan built from {}: layer {} is not one our 1x1 kernel takes (corrupt plan); rebuild it", header.model_path, l.name)));
        }
        if let Some(l) = header.layers.iter().find(|l| stem::runs(l) != stem::fits(l)) {
            return Err(GpuError::PlanContent(format!("the plan built from {}: layer {} and our stem kernel do not match (corrupt plan); rebuild it", header.model_path, l.name)));
        }
        let ctx = cu("open device", CudaContext::new(ordinal)).map_err(|source| GpuError::OnGpu { ordinal, source })?;
        // The engine orders its own work per stream; cudarc's per-buffer event tracking would add
        // events to every launch and to the captured graphs.
        // SAFETY: the contract concerns only `CudaSlice`s created afterwards, and the engine creates
        // none: its device memory is `DeviceBuffer`s, whose uses it orders itself.
        unsafe { ctx.disable_event_tracking() };
        device::bind(&ctx)?;
        let weights = DeviceBuffer::new(blob.len())?;
        cu("upload weights", weights.upload(0, blob))?;
        let (major, minor) = cu("compute capability", ctx.compute_capability())?;
        let ptx = compile_for("engine kernels", KERNELS, (major, minor), Vec::new())?;
        let module = cu("load kernels", ctx.load_module(ptx))?;
        let convert = cu("kernel convert_input", module.load_function("convert_input"))?;
        let top1 = cu("kernel top1", module.load_function("top1"))?;
        let gpu = cu("read the GPU's name", ctx.name())?;
        let quantize = cu("kernel quantize", module.load_function("quantize"))?;
        let dequantize = cu("kernel dequantize", module.load_function("dequantize"))?;
        let max_pool_int8 = cu("kernel max_pool_int8", module.load_function("max_pool_int8"))?;
        let max_pool_from_int8 = cu("kernel max_pool_from_int8", module.load_function("max_pool_from_int8"))?;
        let average_pool_int8 = cu("kernel average_pool_int8", module.load_function("average_pool_int8"))?;
        let (pointwise, stem) = (pointwise::load(&ctx, (major, minor))?, stem::load(&ctx, (major, minor))?);
        if (pointwise.is_none() && header.layers.iter().any(|l| runs_pointwise(&l))) || (stem.is_none() && header.layers.iter().any(stem::runs)) {
            return Err(GpuError::PlanContent(format!(
                "the plan built from {} runs layers on our kernels for tensor cores of compute capability 8.0 or later; GPU {ordinal} has {major}.{minor}",
                header.model_path
            )));
        }
        Ok(Arc::new(DeviceModel {
            ctx,
            gpu,
            header: header.clone(),
            input,
            weights,
            convert,
            quantize,
            dequantize,
            max_pool_int8,
            max_pool_from_int8,
            average_pool_int8,
            top1,
            pointwise,
            stem,
        }))
    }

    pub fn max_batch(&self) -> usize {
        self.header.key.batch_size
    }
}

/// The descriptors of one convolution layer at one batch size (runs and autotuning share them).
struct ConvDescriptors {
    x: Tensor,
    y: Tensor,
    filter: Filter,
    conv: Convolution,
    act: Activation,
    bias: Tensor,
}

impl ConvDescriptors {
    fn new(layer: &PlannedLayer, n: usize) -> Result<ConvDescriptors> {
        let LayerKind::Conv { kernel, stride, pad, relu, accumulator, .. } = layer.kind else { unreachable!("a convolution layer") };
        let ((ci, hi, wi), (co, ho, wo)) = (layer.input_shape, layer.output_shape);
        // cuDNN's int8 configuration: int8 data and filters, int32 sums, f32 bias.
        let (data, sums, bias) = match accumulator {
            Accumulator::Fp32 => (DataType::Half, DataType::Float, DataType::Half),
            Accumulator::Fp16 => (DataType::Half, DataType::Half, DataType::Half),
            Accumulator::Int32 => (DataType::Int8, DataType::Int32, DataType::Float),
        };
        Ok(ConvDescriptors {
            x: Tensor::nhwc(data, n, ci, hi, wi)?,
            y: Tensor::nhwc(data, n, co, ho, wo)?,
            filter: Filter::krsc(data, co, ci, kernel, kernel)?,
            conv: Convolution::new(pad, stride, sums)?,
            act: Activation::new(relu)?,
            bias: Tensor::nhwc(bias, 1, co, 1, 1)?,
        })
    }
}

/// Descriptors of one layer at one batch size.
enum LayerDescriptors {
    Conv {
        d: ConvDescriptors,
        algo: Algorithm,
        workspace: usize,
    },
    /// An int8 convolution as the slot's cuDNN graph plan of layer `layer`, with its tensors'
    /// addresses.
    Graph {
        layer: usize,
        bindings: Vec<(Uid, DevicePtr)>,
    },
    /// An int8 1x1 convolution run by our kernel.
    Pointwise,
    /// The image's convolution run by our stem kernel.
    Stem,
    Pool {
        x: Tensor,
        y: Tensor,
        pooling: Pooling,
    },
    /// Max pooling from fp16 (or, with `int8_input`, int8) to int8 on `scale`'s grid, by our
    /// kernels: `groups` groups of 8 output channels.
    PoolToInt8 {
        int8_input: bool,
        groups: i64,
        kernel: usize,
        stride: usize,
        pad: usize,
        scale: f32,
    },
    /// Global average pooling from int8 on `scale`'s grid to fp16, by our kernel: `groups` groups of
    /// 8 channels.
    AveragePoolInt8 {
        groups: i64,
        scale: f32,
    },
    /// Quantize (`to_int8`) or dequantize `groups` groups of 8 elements.
    Convert {
        to_int8: bool,
        groups: i64,
        scale: f32,
    },
}

struct BatchProgram {
    layers: Vec<LayerDescriptors>,
    graph: Option<CudaGraph>,
}

/// One inference stream of a device, with everything a batch needs.
pub struct Slot {
    model: Arc<DeviceModel>,
    pub stream: Arc<CudaStream>,
    /// The cuDNN graph plan of each layer that runs one (by layer index), restored with the slot
    /// (declared before the handle, so dropped before it). They run at the plan's batch size
    /// whatever the batch: a partial batch's other samples are whatever the buffers hold (int8, so
    /// any bits are numbers) and nothing reads them; a plan per batch size would compile its
    /// kernels mid-run (an H100 Offline run lost ~10 s so).
    graph_plans: Vec<Option<ExecutionPlan>>,
    handle: Handle,
    buffers: Vec<DeviceBuffer>,
    workspace: DeviceBuffer,
    /// The config's `workspace_size`: the most `workspace` may grow to.
    workspace_limit: usize,
    /// Workspaces outgrown by a smaller batch whose algorithms need more (cuDNN's need is not
    /// monotonic in the batch size): kept, because graphs captured earlier point into them.
    outgrown: Vec<DeviceBuffer>,
    /// Samples as the QSL holds them (max batch), then their slot numbers in `pool`.
    pub host_input: PinnedBuffer,
    host_slots: PinnedBuffer,
    device_input: DeviceBuffer,
    device_slots: DeviceBuffer,
    device_classes: DeviceBuffer,
    host_classes: PinnedBuffer,
    programs: HashMap<(usize, bool), BatchProgram>,
    use_graphs: bool,
    /// Whether `host_slots` holds 0, 1, 2, ... (the slot's own input buffer).
    identity_slots: bool,
}

// SAFETY: a slot is used by one thread at a time (taken out of the engine's pool while in use);
// its raw device pointers and handles belong to its device's context, bound on every use.
unsafe impl Send for Slot {}

impl Slot {
    /// A slot with `workspace_bytes` of cuDNN workspace, which grows on demand up to `workspace_limit`.
    pub fn new(model: &Arc<DeviceModel>, workspace_bytes: usize, workspace_limit: usize, use_graphs: bool) -> Result<Slot> {
        let ctx = &model.ctx;
        device::bind(ctx)?;
        let stream = cu("create stream", ctx.new_stream())?;
        let handle = Handle::new(&stream)?;
        let graph_plans = model
            .header
            .layers
            .iter()
            .map(|l| match &l.kind {
                LayerKind::Conv { runner: ConvRunner::Graph(plan), .. } => plan.restore(&handle, &model.gpu).map(Some).map_err(|e| GpuError::from(e).in_layer(&l.name)),
                _ => Ok(None),
            })
            .collect::<Result<Vec<_>>>()?;
        let n = model.max_batch();
        let buffers = model.header.buffer_elements.iter().map(|&e| DeviceBuffer::new(n * e * 2)).collect::<std::result::Result<Vec<_>, DeviceError>>()?;
        let sample_bytes = model.input.sample_bytes();
        Ok(Slot {
            model: model.clone(),
            stream,
            graph_plans,
            handle,
            buffers,
            workspace: DeviceBuffer::new(workspace_bytes)?,
            workspace_limit,
            outgrown: Vec::new(),
            host_input: PinnedBuffer::new(n * sample_bytes)?,
            host_slots: PinnedBuffer::new(n * 4)?,
            device_input: DeviceBuffer::new(n * sample_bytes)?,
            device_slots: DeviceBuffer::new(n * 4)?,
            device_classes: DeviceBuffer::new(n * 4)?,
            host_classes: PinnedBuffer::new(n * 4)?,
            programs: HashMap::new(),
            use_graphs,
            identity_slots: false,
        })
    }

    fn value_ptr(&self, value: usize) -> DevicePtr {
        self.buffers[self.model.header.buffer_of[value]].ptr()
    }

    /// The fused convolution of `layer` on this slot's buffers and the device's weights.
    fn fused<'a>(&self, layer: &PlannedLayer, d: &'a ConvDescriptors) -> FusedConv<'a> {
        let LayerKind::Conv { weight_offset, bias_offset, residual, scale, residual_scale, .. } = layer.kind else { unreachable!("a convolution layer") };
        let weights = self.model.weights.ptr();
        FusedConv {
            x: Operand { desc: &d.x, ptr: self.value_ptr(layer.input) },
            w: Operand { desc: &d.filter, ptr: weights.offset(weight_offset) },
            conv: &d.conv,
            act: &d.act,
            bias: Operand { desc: &d.bias, ptr: weights.offset(bias_offset) },
            z: residual.map(|r| self.value_ptr(r)),
            y: Operand { desc: &d.y, ptr: self.value_ptr(layer.output) },
            alphas: (scale, residual_scale),
        }
    }

    /// The addresses of int8 convolution `layer`'s graph tensors: the slot's buffers, the device's
    /// weights and the layer's epilogue (see `lower`).
    fn graph_bindings(&self, layer: &PlannedLayer) -> Vec<(Uid, DevicePtr)> {
        let LayerKind::Conv { residual, weight_offset, epilogue_offset: Some(epilogue), .. } = layer.kind else {
            unreachable!("an int8 convolution: lowering gives each an epilogue")
        };
        let (co, weights) = (layer.output_shape.0, self.model.weights.ptr());
        let mut bindings = vec![
            (ConvLayer::X, self.value_ptr(layer.input)),
            (ConvLayer::W, weights.offset(weight_offset)),
            (ConvLayer::SCALE, weights.offset(epilogue)),
            (ConvLayer::BIAS, weights.offset(epilogue + 4 * co)),
            (ConvLayer::Y, self.value_ptr(layer.output)),
        ];
        if let Some(r) = residual {
            bindings.extend([(ConvLayer::RESIDUAL, self.value_ptr(r)), (ConvLayer::RATIO, weights.offset(epilogue + 8 * co))]);
        }
        bindings
    }

    /// Enqueues int8 1x1 convolution `layer` at batch `n` on our kernel.
    ///
    /// # Safety
    /// the layer [`PlannedLayer::fits_pointwise`], `n` is at most the plan's batch size, and the device has the
    /// kernel.
    unsafe fn launch_pointwise(&self, layer: &PlannedLayer, n: usize) -> Result<()> {
        let LayerKind::Conv { residual, relu, stride, weight_offset, epilogue_offset: Some(epilogue), .. } = layer.kind else {
            unreachable!("an int8 convolution: lowering gives each an epilogue")
        };
        let function = self.model.pointwise.as_ref().expect("the caller checked the device has the kernel");
        let weights = self.model.weights.ptr();
        let conv = Pointwise {
            x: self.value_ptr(layer.input),
            weights: weights.offset(weight_offset),
            epilogue: weights.offset(epilogue),
            residual: residual.map(|r| self.value_ptr(r)),
            y: self.value_ptr(layer.output),
            batch: n,
            input: layer.input_shape,
            output: layer.output_shape,
            stride,
            relu,
        };
        // SAFETY: the layer's values in the slot's buffers (sized for the plan's batch size, `n` at
        // most), its weights and epilogue in the device's blob; the kernel takes the layer (our
        // contract).
        unsafe { conv.launch(function, &self.stream) }.map_err(|e| GpuError::from(e).in_layer(&layer.name))
    }

    /// Enqueues the image's convolution `layer` at batch `n` on our stem kernel.
    ///
    /// # Safety
    /// [`stem::fits`] the layer, `n` is at most the plan's batch size, and the device has the kernel.
    unsafe fn launch_stem(&self, layer: &PlannedLayer, n: usize) -> Result<()> {
        let LayerKind::Conv { relu, weight_offset, bias_offset, quantized_output: Some(scale), .. } = layer.kind else { unreachable!("a layer the stem kernel fits writes int8") };
        let function = self.model.stem.as_ref().expect("the caller checked the device has the kernel");
        let weights = self.model.weights.ptr();
        let conv = StemConv {
            x: self.value_ptr(layer.input),
            weights: weights.offset(weight_offset),
            bias: weights.offset(bias_offset),
            y: self.value_ptr(layer.output),
            batch: n,
            input: layer.input_shape,
            output: layer.output_shape,
            relu,
            scale,
        };
        // SAFETY: the layer's values in the slot's buffers (sized for the plan's batch size, `n` at
        // most), its weights and biases in the device's blob; the kernel fits the layer (our
        // contract).
        unsafe { conv.launch(function, &self.stream) }.map_err(|e| GpuError::from(e).in_layer(&layer.name))
    }

    /// The plan restored for graph layer `index`.
    fn graph_plan(&self, index: usize) -> &ExecutionPlan {
        self.graph_plans[index].as_ref().expect("graph layers' plans are restored with the slot")
    }

    fn descriptors(&self, n: usize) -> Result<Vec<LayerDescriptors>> {
        let mut out = Vec::new();
        for (index, layer) in self.model.header.layers.iter().enumerate() {
            let ((c, h, w), (co, ho, wo)) = (layer.input_shape, layer.output_shape);
            out.push(match &layer.kind {
                LayerKind::Conv { runner: ConvRunner::Graph(_), .. } => LayerDescriptors::Graph { layer: index, bindings: self.graph_bindings(layer) },
                LayerKind::Conv { runner: ConvRunner::Pointwise, .. } => LayerDescriptors::Pointwise,
                LayerKind::Conv { runner: ConvRunner::Stem, .. } => LayerDescriptors::Stem,
                LayerKind::Conv { per_channel: true, .. } => {
                    return Err(
                        GpuError::PlanContent("int8 weights scaled per channel but the legacy call to run them (build incomplete); rebuild the plan".into()).in_layer(&layer.name)
                    );
                }
                LayerKind::Conv { algorithm, .. } => {
                    let d = ConvDescriptors::new(layer, n)?;
                    let algo =
                        Algorithm::from_code(*algorithm).ok_or_else(|| GpuError::PlanContent("the plan has no algorithm (build incomplete)".into()).in_layer(&layer.name))?;
                    let workspace = cudnn::workspace_size(&self.handle, &d.x, &d.filter, &d.conv, &d.y, algo)?;
                    LayerDescriptors::Conv { d, algo, workspace }
                }
                &LayerKind::MaxPool { kernel, stride, pad, int8_input, int8_output: Some(scale) } => {
                    LayerDescriptors::PoolToInt8 { int8_input, groups: (n * co * ho * wo / 8) as i64, kernel, stride, pad, scale }
                }
                LayerKind::MaxPool { int8_input: true, int8_output: None, .. } => {
                    return Err(GpuError::PlanContent("a max pooling reads int8 but writes fp16 (corrupt plan); rebuild it".into()).in_layer(&layer.name));
                }
                LayerKind::MaxPool { kernel, stride, pad, int8_input: false, int8_output: None } => LayerDescriptors::Pool {
                    x: Tensor::nhwc(DataType::Half, n, c, h, w)?,
                    y: Tensor::nhwc(DataType::Half, n, co, ho, wo)?,
                    pooling: Pooling::new(false, *kernel, *stride, *pad)?,
                },
                &LayerKind::GlobalAveragePool { int8_input: Some(scale) } => LayerDescriptors::AveragePoolInt8 { groups: (n * c / 8) as i64, scale },
                LayerKind::GlobalAveragePool { int8_input: None } => {
                    LayerDescriptors::Pool { x: Tensor::nhwc(DataType::Half, n, c, h, w)?, y: Tensor::nhwc(DataType::Half, n, co, ho, wo)?, pooling: Pooling::new(true, h, 1, 0)? }
                }
                &LayerKind::Quantize { scale } => LayerDescriptors::Convert { to_int8: true, groups: (n * c * h * w / 8) as i64, scale },
                &LayerKind::Dequantize { scale } => LayerDescriptors::Convert { to_int8: false, groups: (n * c * h * w / 8) as i64, scale },
            });
        }
        Ok(out)
    }

    /// Enqueues one batch of `n` samples read from `pool` (device memory) at the slot numbers in
    /// `host_slots` (with `upload_input`, `pool` is the slot's own input buffer, filled from
    /// `host_input` first). The slot's own memory, which the work reaches as well, lives as long
    /// as the slot and so as the graphs captured from this.
    ///
    /// # Safety
    /// `n` is at most the plan's batch size (the slot's buffers are sized for that), `layers` are
    /// [`Slot::descriptors`] of `n` with the workspace fitted to them ([`Slot::fit_workspace`]), and
    /// `pool` holds every sample the slot numbers in `host_slots` name while the work (or a graph
    /// captured from it) may run.
    unsafe fn enqueue(&self, n: usize, layers: &[LayerDescriptors], pool: DevicePtr, upload_input: bool) -> Result<()> {
        let s = self.stream.cu_stream();
        let m = &self.model;
        let f = &m.input;
        if upload_input {
            // SAFETY: `n` samples fit `device_input`; the source is pinned memory of the slot, which
            // its owner changes only between batches.
            cu("upload samples", unsafe { dr::memcpy_htod_async(self.device_input.ptr().raw(), &self.host_input.as_slice()[..n * f.sample_bytes()], s) })?;
        }
        // SAFETY: as above, for `n` slot numbers into `device_slots`.
        cu("upload slots", unsafe { dr::memcpy_htod_async(self.device_slots.ptr().raw(), &self.host_slots.as_slice()[..n * 4], s) })?;
        let (cpad, hs, ws) = m.header.layers[0].input_shape;
        let threads = (hs * ws * cpad / 4) as u32;
        let (pool, slots, out, sample_bytes) = (pool.raw(), self.device_slots.ptr().raw(), self.value_ptr(0).raw(), f.sample_bytes() as i64);
        let layout = m.header.input_layout;
        let dims = [f.channels, f.height, f.width, hs, ws, cpad, layout.block, layout.offset].map(|v| v as i32);
        let mut launch = self.stream.launch_builder(&m.convert);
        launch.arg(&pool).arg(&slots).arg(&out);
        for d in &dims {
            launch.arg(d);
        }
        let (dtype, nchw) = (kernel_dtype(f.element), i32::from(f.layout == Layout::Nchw));
        launch.arg(&sample_bytes).arg(&dtype).arg(&nchw).arg(&f.scale);
        let grid = (threads.div_ceil(128), n as u32, 1);
        // SAFETY: the arguments are convert_input's parameters in order and type (3 pointers, 8 ints,
        // a long long, 2 ints, a float); it reads `n` slot numbers and the samples they name in
        // `pool` (our contract) and writes `n` samples of the first layer's input to value 0's buffer.
        cu("convert input", unsafe { launch.launch(LaunchConfig { grid_dim: grid, block_dim: (128, 1, 1), shared_mem_bytes: 0 }) })?;

        for (layer, descriptors) in m.header.layers.iter().zip(layers) {
            match descriptors {
                // SAFETY: descriptors of batch `n` (our contract) on the slot's buffers and the
                // weights at the plan's offsets (lowering laid them out in the blob the device holds);
                // `fit_workspace` sized the workspace for them, and keeps any it outgrows.
                LayerDescriptors::Conv { d, algo, .. } => unsafe { self.fused(layer, d).launch(&self.handle, *algo, &self.workspace) }.map_err(GpuError::from),
                // SAFETY: the bindings address the slot's buffers and the device's weights at the
                // plan's offsets, each sized and laid out as the graph (of the plan's batch size)
                // declares; the workspace was fitted to the plan.
                LayerDescriptors::Graph { layer, bindings } => unsafe { self.graph_plan(*layer).execute(&self.handle, bindings, Some(&self.workspace)) }.map_err(GpuError::from),
                // SAFETY: a layer the builder timed the kernel on (so one it takes), at batch `n`
                // (our contract) on the slot's buffers.
                LayerDescriptors::Pointwise => unsafe { self.launch_pointwise(layer, n) },
                // SAFETY: a layer the plan's load found the kernel fits, at batch `n` (our contract)
                // on the slot's buffers.
                LayerDescriptors::Stem => unsafe { self.launch_stem(layer, n) },
                // SAFETY: descriptors of batch `n` (our contract) on the slot's buffers.
                LayerDescriptors::Pool { x, y, pooling } => unsafe {
                    cudnn::pool(&self.handle, pooling, Operand { desc: x, ptr: self.value_ptr(layer.input) }, Operand { desc: y, ptr: self.value_ptr(layer.output) })
                        .map_err(GpuError::from)
                },
                LayerDescriptors::Convert { to_int8, groups, scale } => {
                    let (x, y) = (self.value_ptr(layer.input).raw(), self.value_ptr(layer.output).raw());
                    let mut launch = self.stream.launch_builder(if *to_int8 { &m.quantize } else { &m.dequantize });
                    launch.arg(&x).arg(&y).arg(groups).arg(scale);
                    // SAFETY: the arguments are the kernel's parameters in order and type (2 pointers,
                    // a long long, a float); `groups` groups of 8 are the layer's elements at batch
                    // `n` (our contract), within both values' buffers.
                    cu("convert int8", unsafe { launch.launch(per_group(*groups)) }).map(|_| ()).map_err(GpuError::from)
                }
                LayerDescriptors::PoolToInt8 { int8_input, groups, kernel, stride, pad, scale } => {
                    let ((c, h, w), (_, ho, wo)) = (layer.input_shape, layer.output_shape);
                    let (x, y) = (self.value_ptr(layer.input).raw(), self.value_ptr(layer.output).raw());
                    let mut launch = self.stream.launch_builder(if *int8_input { &m.max_pool_from_int8 } else { &m.max_pool_int8 });
                    launch.arg(&x).arg(&y).arg(groups);
                    let ints = [c / 8, h, w, ho, wo, *kernel, *stride, *pad].map(|v| v as i32);
                    for v in &ints {
                        launch.arg(v);
                    }
                    if !int8_input {
                        launch.arg(scale);
                    }
                    // SAFETY: the arguments are max_pool_int8's parameters in order and type (2
                    // pointers, a long long, 8 ints, a float), or max_pool_from_int8's (the same
                    // without the float); it reads the layer's fp16 or int8 input and writes `groups`
                    // groups of 8 int8 outputs at batch `n` (our contract), within both values'
                    // buffers; the channels are a multiple of 8 (`DeviceModel::load`).
                    cu("max pool to int8", unsafe { launch.launch(per_group(*groups)) }).map(|_| ()).map_err(GpuError::from)
                }
                LayerDescriptors::AveragePoolInt8 { groups, scale } => {
                    let (c, h, w) = layer.input_shape;
                    let (x, y) = (self.value_ptr(layer.input).raw(), self.value_ptr(layer.output).raw());
                    let (c8, pixels) = ((c / 8) as i32, (h * w) as i32);
                    let mut launch = self.stream.launch_builder(&m.average_pool_int8);
                    launch.arg(&x).arg(&y).arg(groups).arg(&c8).arg(&pixels).arg(scale);
                    // SAFETY: the arguments are average_pool_int8's parameters in order and type (2
                    // pointers, a long long, 2 ints, a float); it reads the layer's int8 input and
                    // writes `groups` groups of 8 fp16 outputs at batch `n` (our contract), within
                    // both values' buffers; the channels are a multiple of 8 (`DeviceModel::load`).
                    cu("average pool from int8", unsafe { launch.launch(per_group(*groups)) }).map(|_| ()).map_err(GpuError::from)
                }
            }
            .map_err(|e| e.in_layer(&layer.name))?;
        }

        let h = &m.header;
        let (n32, stride) = (n as i32, logit_channels(h) as i32);
        let (logits, classes_out) = (self.value_ptr(h.output).raw(), self.device_classes.ptr().raw());
        let (classes, offset) = (h.classes as i32, h.class_offset);
        let mut launch = self.stream.launch_builder(&m.top1);
        launch.arg(&logits).arg(&classes_out).arg(&n32).arg(&classes).arg(&stride).arg(&offset);
        let threads = (n as u32) * 32;
        // SAFETY: the arguments are top1's parameters in order and type (2 pointers, 4 ints); it
        // reads `n` rows of `stride` logits from the output value's buffer and writes `n` ints to
        // `device_classes`.
        cu("top-1", unsafe { launch.launch(LaunchConfig { grid_dim: (threads.div_ceil(256), 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }) })?;
        // SAFETY: `n` ints fit `host_classes`, pinned and page-aligned; no other borrow of it is live
        // (`run` reads it after synchronizing the stream).
        let host = unsafe { std::slice::from_raw_parts_mut(self.host_classes.raw() as *mut i32, n) };
        // SAFETY: `n` ints from `device_classes` into that pinned memory, which outlives the copy.
        cu("download classes", unsafe { dr::memcpy_dtoh_async(host, classes_out, s) })?;
        Ok(())
    }

    /// Runs a batch of `n` (<= the plan's batch size) whose samples are already in place: in
    /// `host_input`, or (with `resident_pool`) in that device buffer at the slot numbers set by
    /// [`Slot::set_slots`]. Returns the top-1 class of each sample.
    ///
    /// # Safety
    /// With `resident_pool`: the pool holds every sample those slot numbers name, and it is the
    /// same pool on every such call and stays allocated while the slot lives (graphs captured with
    /// it keep its address).
    pub unsafe fn run(&mut self, n: usize, resident_pool: Option<DevicePtr>) -> Result<Vec<i32>> {
        assert!(n > 0 && n <= self.model.max_batch(), "batch within the plan");
        device::bind(&self.model.ctx)?;
        if resident_pool.is_none() {
            self.reset_slots();
        }
        let pool = resident_pool.unwrap_or(self.device_input.ptr());
        let upload = resident_pool.is_none();
        if !self.programs.contains_key(&(n, upload)) {
            let layers = self.descriptors(n)?;
            self.fit_workspace(n, &layers)?;
            // A plain run first: cuDNN loads kernels and sizes internals lazily, which must not
            // happen inside a capture.
            // SAFETY: `n` is within the plan (asserted above), the descriptors are of `n` with the
            // workspace fitted to them, and `pool` is the slot's input buffer or the resident pool
            // of our contract.
            unsafe { self.enqueue(n, &layers, pool, upload) }?;
            cu("synchronize", self.stream.synchronize())?;
            let graph = if self.use_graphs {
                // SAFETY: as above.
                Some(unsafe { self.capture(n, &layers, pool, upload) }?)
            } else {
                None
            };
            self.programs.insert((n, upload), BatchProgram { layers, graph });
        }
        let program = &self.programs[&(n, upload)];
        match &program.graph {
            Some(graph) => cu("launch graph", graph.launch())?,
            // SAFETY: as above: the program's descriptors were built and fitted for `n` when it was.
            None => unsafe { self.enqueue(n, &program.layers, pool, upload) }?,
        }
        cu("synchronize", self.stream.synchronize())?;
        Ok(self.host_classes.as_slice()[..n * 4].chunks_exact(4).map(|c| i32::from_ne_bytes(c.try_into().expect("4 bytes"))).collect())
    }

    /// Grows the workspace when the plan's algorithms need more at batch `n` than at the sizes run
    /// so far (seen on an H100: 8 KB at batch 2048, 7.9 MB at batch 456), up to `workspace_limit`.
    fn fit_workspace(&mut self, n: usize, layers: &[LayerDescriptors]) -> Result<()> {
        let needs = self.model.header.layers.iter().zip(layers).filter_map(|(layer, d)| match d {
            LayerDescriptors::Conv { workspace, .. } => Some((*workspace, &layer.name)),
            LayerDescriptors::Graph { layer: index, .. } => Some((self.graph_plan(*index).workspace_bytes(), &layer.name)),
            LayerDescriptors::Pool { .. }
            | LayerDescriptors::PoolToInt8 { .. }
            | LayerDescriptors::AveragePoolInt8 { .. }
            | LayerDescriptors::Convert { .. }
            | LayerDescriptors::Pointwise
            | LayerDescriptors::Stem => None,
        });
        let Some((need, name)) = needs.max_by_key(|(bytes, _)| *bytes) else { return Ok(()) };
        if need <= self.workspace.bytes {
            return Ok(());
        }
        if need > self.workspace_limit {
            return Err(GpuError::WorkspaceLimit { layer: name.clone(), need, batch: n, limit: self.workspace_limit });
        }
        let grown = DeviceBuffer::new(need)?;
        self.outgrown.push(std::mem::replace(&mut self.workspace, grown));
        Ok(())
    }

    /// # Safety
    /// As for [`Slot::enqueue`].
    unsafe fn capture(&self, n: usize, layers: &[LayerDescriptors], pool: DevicePtr, upload: bool) -> Result<CudaGraph> {
        cu("begin capture", self.stream.begin_capture(ds::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))?;
        // SAFETY: our caller's contract.
        let enqueued = unsafe { self.enqueue(n, layers, pool, upload) };
        let graph = cu("end capture", self.stream.end_capture(ds::CUgraphInstantiate_flags(0)));
        enqueued?;
        Ok(graph?.ok_or(DeviceError::EmptyCapture)?)
    }

    /// Identity slot numbers: sample b is at position b of the slot's own input buffer.
    fn reset_slots(&mut self) {
        if !self.identity_slots {
            for (i, s) in self.host_slots.as_mut_slice().chunks_exact_mut(4).enumerate() {
                s.copy_from_slice(&(i as i32).to_le_bytes());
            }
            self.identity_slots = true;
        }
    }

    /// Sets the resident-pool slot numbers of the next batch.
    pub fn set_slots(&mut self, slots: &[i32]) {
        self.identity_slots = false;
        for (dst, s) in self.host_slots.as_mut_slice().chunks_exact_mut(4).zip(slots) {
            dst.copy_from_slice(&s.to_le_bytes());
        }
    }

    /// The logits of the last batch of `n` (fp32, `classes` per sample), for correctness checks.
    pub fn logits(&self, n: usize) -> Result<Vec<f32>> {
        assert!(n <= self.model.max_batch(), "batch within the plan");
        let h = &self.model.header;
        let channels = logit_channels(h);
        let mut raw = vec![0u16; n * channels];
        // SAFETY: `n` rows of `channels` fp16 logits, within the output value's buffer (sized for the
        // plan's batch size); the copy is synchronous, into a vector of exactly that size.
        cu("download logits", unsafe { dr::memcpy_dtoh_sync(&mut raw, self.value_ptr(h.output).raw()) })?;
        Ok(raw.chunks_exact(channels).flat_map(|row| row[..h.classes].iter().map(|&b| half::f16::from_bits(b).to_f32())).collect())
    }

    /// Autotunes the cuDNN graph of int8 convolution `layer` at batch `n` on the slot's buffers:
    /// the fastest plan and its mean time in microseconds, or `None` (reported) where cuDNN offers
    /// none that runs.
    fn tune_graph(&self, layer: &PlannedLayer, n: usize, report: &mut dyn FnMut(&str)) -> Option<(Tuned, f64)> {
        let (spec, bindings) = (graph_spec::conv_scale_bias_residual_relu(&conv_layer(layer, n)).map_err(GraphError::from), self.graph_bindings(layer));
        let options = Autotune { candidates: 8, runs: 5 };
        // SAFETY: the bindings address the slot's buffers, sized for the plan's batch size `n`, and
        // the device's weights at the plan's offsets; the handle enqueues on the slot's stream, and
        // `autotune` waits for its timed runs.
        let tuned = spec.and_then(|spec| Graph::build(&self.handle, &spec)).and_then(|g| unsafe { g.autotune(&self.handle, &self.stream, &bindings, &self.workspace, options) });
        match tuned {
            Ok(tuned) => {
                let us = tuned.timings[0].1;
                Some((tuned, us))
            }
            Err(e) => {
                report(&format!("{}: no cuDNN graph runs it ({e}); the legacy call will", layer.name));
                None
            }
        }
    }

    /// Times every candidate algorithm of every convolution, with each of `accumulators` (int8
    /// layers: int32), and for int8 layers the cuDNN graph's plans and our 1x1 kernel where it
    /// fits, at the plan's batch size, and writes the fastest that fits `workspace_limit` into the
    /// header (the builder's autotuning).
    pub fn choose_algorithms(&self, header: &mut PlanHeader, accumulators: &[Accumulator], workspace_limit: usize, report: &mut dyn FnMut(&str)) -> Result<()> {
        let n = self.model.max_batch();
        device::bind(&self.model.ctx)?;
        let ctx = &self.model.ctx;
        let event = || cu("event", ctx.new_event(Some(ds::CUevent_flags::CU_EVENT_DEFAULT)));
        let events = (event()?, event()?);
        for layer in header.layers.iter_mut() {
            let LayerKind::Conv { relu, .. } = layer.kind else { continue };
            if stem::runs(layer) {
                // Only our kernel writes int8 from fp16 sums: timed for the report.
                // SAFETY: a layer the kernel fits (`DeviceModel::load` checked the plan), at the
                // plan's batch size on the slot's buffers; `time_runs` waits for the work.
                let us = self.time_runs(&events, &mut || unsafe { self.launch_stem(layer, n) }.is_ok())?;
                let us = us.ok_or_else(|| GpuError::Build("our stem kernel did not launch".into()).in_layer(&layer.name))?;
                report(&format!("{} stem kernel ({us:.1} us)", shape_of(layer)));
                let LayerKind::Conv { measured_us, .. } = &mut layer.kind else { unreachable!() };
                *measured_us = us;
                continue;
            }
            let mut best: Option<(Accumulator, Algorithm, usize, f32)> = None;
            let int8 = matches!(layer.kind, LayerKind::Conv { accumulator: Accumulator::Int32, .. });
            for &sums in if int8 { &[Accumulator::Int32] } else { accumulators } {
                let LayerKind::Conv { accumulator, .. } = &mut layer.kind else { unreachable!() };
                *accumulator = sums;
                let d = ConvDescriptors::new(layer, n)?;
                let fused = self.fused(layer, &d);
                for (algo, _) in cudnn::candidate_algorithms(&self.handle, &d.x, &d.filter, &d.conv, &d.y)? {
                    // cuDNN's fused call supports only this algorithm without an activation.
                    if !relu && algo != Algorithm::IMPLICIT_PRECOMP_GEMM {
                        continue;
                    }
                    let Ok(bytes) = cudnn::workspace_size(&self.handle, &d.x, &d.filter, &d.conv, &d.y, algo) else { continue };
                    if bytes > workspace_limit.min(self.workspace.bytes) {
                        continue;
                    }
                    // SAFETY: descriptors of the plan's batch size on the slot's buffers, sized for it,
                    // and the weights at the plan's offsets; the workspace holds the `bytes` the
                    // algorithm needs (checked above); `time_runs` waits for the work.
                    let Some(us) = self.time_runs(&events, &mut || unsafe { fused.launch(&self.handle, algo, &self.workspace) }.is_ok())? else { continue };
                    if best.is_none_or(|(.., t)| us < t) {
                        best = Some((sums, algo, bytes, us));
                    }
                }
            }
            // Int8 layers: a cuDNN graph and, where the shape fits, our 1x1 kernel too (per-channel
            // weight scales, the epilogue fused).
            let graph = if int8 { self.tune_graph(layer, n, report) } else { None };
            let pointwise = if int8 && self.model.pointwise.is_some() && layer.fits_pointwise() {
                // SAFETY: an int8 1x1 layer the kernel takes, at the plan's batch size on the slot's
                // buffers; `time_runs` waits for the work.
                self.time_runs(&events, &mut || unsafe { self.launch_pointwise(layer, n) }.is_ok())?
            } else {
                None
            };
            let mut timed: Vec<(f32, Timed)> = Vec::new();
            timed.extend(best.map(|(sums, algo, bytes, us)| (us, Timed::Legacy { sums, algo, bytes })));
            timed.extend(graph.map(|(tuned, us)| (us as f32, Timed::Graph(tuned))));
            timed.extend(pointwise.map(|us| (us, Timed::Pointwise)));
            let mut timings: Vec<String> = timed.iter().map(|(us, form)| format!("{} {us:.1} us", form.describe())).collect();
            if best.is_none() {
                timings.insert(0, "no legacy algorithm".into());
            }
            let (us, fastest) = timed
                .into_iter()
                .min_by(|a, b| a.0.total_cmp(&b.0))
                .ok_or_else(|| GpuError::Build(format!("no cuDNN algorithm runs it within {workspace_limit} bytes of workspace")).in_layer(&layer.name))?;
            report(&format!("{} {:<10} ({})", shape_of(layer), fastest.name(), timings.join(", ")));
            let LayerKind::Conv { accumulator, algorithm, workspace_bytes, measured_us, runner, .. } = &mut layer.kind else { unreachable!() };
            (*accumulator, *algorithm, *workspace_bytes, *measured_us, *runner) = match fastest {
                Timed::Legacy { sums, algo, bytes } => (sums, algo.code(), bytes, us, ConvRunner::Legacy),
                Timed::Graph(tuned) => {
                    let plan = SerializedPlan::new(&tuned.plan, &self.model.gpu).map_err(|e| GpuError::from(e).in_layer(&layer.name))?;
                    (Accumulator::Int32, -1, tuned.plan.workspace_bytes(), us, ConvRunner::Graph(plan))
                }
                Timed::Pointwise => (Accumulator::Int32, -1, 0, us, ConvRunner::Pointwise),
            };
        }
        Ok(())
    }

    /// The mean time of five runs of `run` after an untimed one (lazy initialisation), in
    /// microseconds; `None` if a run fails to launch.
    fn time_runs(&self, events: &(CudaEvent, CudaEvent), run: &mut dyn FnMut() -> bool) -> Result<Option<f32>> {
        time_runs(&self.stream, events, run)
    }
}

/// The mean time of five runs of `run` on `stream` after an untimed one (lazy initialisation), in
/// microseconds; `None` if a run fails to launch (the builders' autotuning).
pub(super) fn time_runs(stream: &Arc<CudaStream>, (start, end): &(CudaEvent, CudaEvent), run: &mut dyn FnMut() -> bool) -> Result<Option<f32>> {
    if !run() {
        return Ok(None);
    }
    cu("record", start.record(stream))?;
    let runs = (0..5).all(|_| run());
    cu("record", end.record(stream))?;
    cu("synchronize", end.synchronize())?;
    Ok(runs.then_some(cu("elapsed", start.elapsed_ms(end))? * 1000.0 / 5.0))
}

/// A convolution layer's name and shape, for the builder's report.
fn shape_of(layer: &PlannedLayer) -> String {
    let ((ci, hi, _), (co, ho, _)) = (layer.input_shape, layer.output_shape);
    let LayerKind::Conv { kernel, stride, .. } = layer.kind else { unreachable!("a convolution layer") };
    format!("{:<28} {:>4}x{:<4} k{kernel} s{stride} -> {:>4}x{:<4}", layer.name, ci, hi, co, ho)
}

/// A way to run a convolution that the builder timed.
enum Timed {
    Legacy { sums: Accumulator, algo: Algorithm, bytes: usize },
    Graph(Tuned),
    Pointwise,
}

impl Timed {
    fn name(&self) -> &'static str {
        match self {
            Timed::Legacy { .. } => "legacy",
            Timed::Graph(_) => "graph",
            Timed::Pointwise => "1x1 kernel",
        }
    }

    /// The form and its details, for the builder's report.
    fn describe(&self) -> String {
        match self {
            Timed::Legacy { sums, algo, .. } => format!("legacy {algo:?} {sums:?} sums"),
            Timed::Graph(tuned) => format!("graph engine {}", tuned.plan.engine()),
            Timed::Pointwise => "1x1 kernel".into(),
        }
    }
}

/// The cuDNN graph description of int8 convolution `layer` at batch `n`.
pub(super) fn conv_layer(layer: &PlannedLayer, n: usize) -> ConvLayer {
    let LayerKind::Conv { kernel, stride, pad, relu, residual, .. } = layer.kind else { unreachable!("a convolution layer") };
    let ((ci, hi, wi), (co, ..)) = (layer.input_shape, layer.output_shape);
    let int8 = graph_spec::DataType::Int8;
    ConvLayer {
        shape: graph_spec::ConvShape {
            batch: n as i64,
            in_channels: ci as i64,
            height: hi as i64,
            width: wi as i64,
            out_channels: co as i64,
            kernel: [kernel as i64; 2],
            padding: [pad as i64; 2],
            stride: [stride as i64; 2],
        },
        residual: residual.map(|_| int8),
        rescale: residual.is_some(),
        relu,
        output: int8,
    }
}

/// Channels of the logits tensor (the class count padded for tensor cores).
fn logit_channels(h: &PlanHeader) -> usize {
    h.layers[h.output - 1].output_shape.0
}
