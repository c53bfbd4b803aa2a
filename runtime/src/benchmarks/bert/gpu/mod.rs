//! The GPU BERT engine (fp16): BERT question answering on packed sequences, no padding to 384.
//!
//! A batch's real tokens go one after another ([`pack`]); per layer, cuBLASLt runs the four
//! linears with their bias (and GELU) fused into the product ([`matmul`]), and our NVRTC kernels
//! (`kernels.cu`) the rest: embeddings + layer norm, fused flash-style attention over each
//! sequence (tensor cores, online softmax, nothing `[L, L]` in memory), residual + layer norm, and
//! the answer head in fp32. Responses are each feature's f32 `[length, 2]` logits, as the CPU
//! engine gives them. With `use_graphs`, one-feature batches (SingleStream) replay a CUDA graph
//! captured per 64-token length bucket: launches depend on a batch's shape, never its contents.
//!
//! - [`layout`]: the plan (weights in the engine's layout, the header and its key). CPU only.
//! - [`pack`]: packing a batch. CPU only.
//! - [`matmul`]: the linears through cuBLASLt.
//! - [`builder`]: `generate_engines`: import, lay out, check against the CPU engine, write.

pub mod builder;
pub mod import;
pub mod layout;
pub mod matmul;
pub mod pack;
pub mod quant;

use crate::benchmarks::bert::cpu::Feature;
use crate::engines::gpu::GpuError;
use crate::engines::gpu::device::{self, DeviceBuffer, DeviceError, DevicePtr, PinnedBuffer, compile_for, cu};
use crate::engines::gpu::plan::Plan;
use crate::engines::gpu::{SlotPool, open_each};
use crate::engines::{Engine, EngineError, SampleSource};
use cudarc::driver::{CudaContext, CudaFunction, CudaGraph, CudaStream, LaunchConfig, PushKernelArg, result as dr, sys as ds};
use layout::{BertPlanHeader, LinearAt, NormAt};
use matmul::{Epilogue, Linear, Matmuls};
use pack::{KEY_STEP, Limits, Packed, Upload};
use std::collections::HashMap;
use std::sync::Arc;

type Result<T> = std::result::Result<T, GpuError>;

const KERNELS: &str = include_str!("kernels.cu");
/// Warps per block of the one-warp-per-token kernels.
const TOKEN_WARPS: usize = 8;
/// Warps per attention block (the kernel's `WARPS`), 16 query rows each.
const ATTENTION_WARPS: usize = 8;
/// Below this many attention blocks (sequences x heads) a sequence's query rows are split over
/// several blocks: one block per head would leave most of the GPU idle (SingleStream).
const ATTENTION_MIN_BLOCKS: usize = 256;
/// Threads per block of the int8 epilogue (`dequantize`'s DEQUANTIZE_THREADS), a row each.
const DEQUANTIZE_THREADS: u32 = 256;
/// cuBLASLt's workspace per stream (what NVIDIA recommends on Hopper).
pub const WORKSPACE_BYTES: usize = 32 << 20;

/// The launch of a one-warp-per-token kernel over `tokens` tokens.
fn per_token(tokens: usize) -> LaunchConfig {
    LaunchConfig { grid_dim: (tokens.div_ceil(TOKEN_WARPS) as u32, 1, 1), block_dim: (32 * TOKEN_WARPS as u32, 1, 1), shared_mem_bytes: 0 }
}

/// What the launches of a batch depend on (never its contents): the products' rows, the
/// attention's sequences and staged keys, where the token count is.
#[derive(Clone, Copy, Debug)]
struct BatchShape {
    padded: usize,
    sequences: usize,
    longest: usize,
    total_at: usize,
}

/// Shared memory of an attention block whose sequence has up to `longest` tokens: its keys and
/// values, rounded up to whole softmax steps, in padded fp16 rows.
fn attention_shared_bytes(longest: usize, head_size: usize) -> usize {
    2 * longest.next_multiple_of(KEY_STEP) * (head_size + 8) * 2
}

/// How the engine runs, from the config.
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    /// Features per batch at most (`gpu_batch_size`).
    pub batch_size: usize,
    /// Tokens per feature as the sample library holds them (384).
    pub seq: usize,
    /// Batches in flight on the GPU (`gpu_inference_streams`), each with its own buffers.
    pub streams: usize,
    /// Replay a captured CUDA graph for batches of one feature (`use_graphs`; SingleStream's
    /// latency is mostly launches), one graph per 64-token length bucket.
    pub use_graphs: bool,
}

/// A plan's weights on one GPU, and the kernels compiled for its shape.
struct DeviceBert {
    ctx: Arc<CudaContext>,
    header: BertPlanHeader,
    weights: DeviceBuffer,
    embed: CudaFunction,
    residual_norm: CudaFunction,
    attention: CudaFunction,
    answer: CudaFunction,
    quantize_rows: CudaFunction,
    dequantize: CudaFunction,
}

impl DeviceBert {
    fn load(ordinal: usize, plan: &Plan<BertPlanHeader>) -> Result<DeviceBert> {
        crate::engines::gpu::device::require_cuda()?;
        matmul::require_cublaslt()?;
        let ctx = cu("open device", CudaContext::new(ordinal)).map_err(|source| GpuError::OnGpu { ordinal, source })?;
        // SAFETY: the engine creates no `CudaSlice`s (see `exec::DeviceModel::load`).
        unsafe { ctx.disable_event_tracking() };
        device::bind(&ctx)?;
        let (major, minor) = cu("compute capability", ctx.compute_capability())?;
        if major < 8 {
            return Err(GpuError::Unsupported(format!("the GPU BERT engine needs tensor cores of compute capability 8.0 or later; GPU {ordinal} has {major}.{minor}")));
        }
        let weights = DeviceBuffer::new(plan.blob.len())?;
        cu("upload weights", weights.upload(0, &plan.blob))?;
        let shape = plan.header.shape;
        let defines = vec![format!("-DHIDDEN={}", shape.hidden), format!("-DHEAD_DIM={}", shape.head_size())];
        let ptx = compile_for("BERT kernels", KERNELS, (major, minor), defines)?;
        let module = cu("load BERT kernels", ctx.load_module(ptx))?;
        let function = |name: &str| cu(&format!("kernel {name}"), module.load_function(name));
        let attention = function("attention")?;
        let staged = attention_shared_bytes(shape.max_positions, shape.head_size());
        let most = cu("shared memory limit", ctx.attribute(ds::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN))? as usize;
        if staged > most {
            return Err(GpuError::Unsupported(format!(
                "the attention kernel stages {staged} bytes for {} positions of head size {}; GPU {ordinal} allows {most} per block",
                shape.max_positions,
                shape.head_size()
            )));
        }
        cu("attention shared memory", attention.set_attribute(ds::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, staged as i32))?;
        Ok(DeviceBert {
            embed: function("embed_layernorm")?,
            residual_norm: function("residual_layernorm")?,
            attention,
            answer: function("qa_head")?,
            quantize_rows: function("quantize_rows")?,
            dequantize: function("dequantize")?,
            ctx,
            header: plan.header.clone(),
            weights,
        })
    }

    fn at(&self, offset: usize) -> DevicePtr {
        self.weights.ptr().offset(offset)
    }

    fn limits(&self) -> Limits {
        let s = self.header.shape;
        Limits { vocab: s.vocab, token_types: s.token_types, max_positions: s.max_positions }
    }
}

/// One stream's buffers, sized for a full batch of full-length features.
struct Slot {
    stream: Arc<CudaStream>,
    matmuls: Matmuls,
    /// Per layer: QKV, attention output, intermediate (GELU), output.
    linears: Vec<[Linear; 4]>,
    x: DeviceBuffer,
    qkv: DeviceBuffer,
    context: DeviceBuffer,
    projected: DeviceBuffer,
    intermediate: DeviceBuffer,
    logits: DeviceBuffer,
    inputs: DeviceBuffer,
    host_inputs: PinnedBuffer,
    host_logits: PinnedBuffer,
    upload: Upload,
    /// Int8 plans: the linears' quantized inputs and their int32 products.
    int8: Option<Int8Buffers>,
    use_graphs: bool,
    /// Captured one-feature batches by padded token count.
    graphs: HashMap<usize, CudaGraph>,
}

/// An int8 plan's buffers: a linear's input in int8 (up to the intermediate width) with each
/// token's step, the output linear's own steps (its input is written while the intermediate's are
/// read), and int32 products (up to the widest output).
struct Int8Buffers {
    quantized: DeviceBuffer,
    steps: DeviceBuffer,
    gelu_steps: DeviceBuffer,
    products: DeviceBuffer,
}

/// Where a linear's input is: fp16 activations, or `quantized` in int8 with these per-token steps.
#[derive(Clone, Copy)]
enum Input {
    Fp16(DevicePtr),
    Int8 { steps: u64 },
}

/// Where a linear's output goes: fp16 activations, or `quantized` in int8 (the next linear's input)
/// with its per-token steps written here.
#[derive(Clone, Copy)]
enum Output {
    Fp16(DevicePtr),
    Int8 { steps: u64 },
}

// SAFETY: a slot is used by one thread at a time (taken out of the engine's pool while in use);
// its raw device pointers and handles belong to its device's context, bound on every use.
unsafe impl Send for Slot {}

impl Slot {
    fn new(model: &DeviceBert, options: &RunOptions) -> Result<Slot> {
        device::bind(&model.ctx)?;
        let s = model.header.shape;
        let tokens = (options.batch_size * options.seq).next_multiple_of(pack::TOKEN_ROUNDING);
        // Zeroed, so the rows past a batch's last token (read by the products, never returned)
        // hold finite numbers from the start.
        let zeroed = |bytes: usize| -> Result<DeviceBuffer> {
            let b = DeviceBuffer::new(bytes)?;
            // SAFETY: the whole fresh allocation, synchronously.
            cu("clear buffer", unsafe { dr::memset_d8_sync(b.ptr().raw(), 0, bytes) })?;
            Ok(b)
        };
        let linear = |at: &LinearAt, epilogue: Epilogue| {
            // SAFETY: the plan's offsets and sizes lie inside the weights buffer (the layout wrote
            // them; the blob's checksum was verified on load); the model outlives its slots.
            unsafe {
                match at.int8 {
                    Some(_) => Linear::int8(model.at(at.weight), at.outputs, at.inputs),
                    None => Linear::new(model.at(at.weight), model.at(at.bias), at.outputs, at.inputs, epilogue),
                }
            }
        };
        let int8 = match model.header.layers.first().and_then(|l| l.qkv.int8) {
            Some(_) => Some(Int8Buffers {
                quantized: zeroed(tokens * s.intermediate)?,
                steps: zeroed(tokens * 4)?,
                gelu_steps: zeroed(tokens * 4)?,
                products: zeroed(tokens * s.intermediate.max(3 * s.hidden) * 4)?,
            }),
            None => None,
        };
        let linears = model
            .header
            .layers
            .iter()
            .map(|l| {
                Ok([
                    linear(&l.qkv, Epilogue::Bias)?,
                    linear(&l.attention_output, Epilogue::Bias)?,
                    linear(&l.intermediate, Epilogue::GeluBias)?,
                    linear(&l.output, Epilogue::Bias)?,
                ])
            })
            .collect::<Result<Vec<_>>>()?;
        let upload = Upload::new(options.batch_size, options.seq);
        Ok(Slot {
            stream: cu("create stream", model.ctx.new_stream())?,
            matmuls: Matmuls::new(WORKSPACE_BYTES)?,
            linears,
            x: zeroed(tokens * s.hidden * 2)?,
            qkv: zeroed(tokens * 3 * s.hidden * 2)?,
            context: zeroed(tokens * s.hidden * 2)?,
            projected: zeroed(tokens * s.hidden * 2)?,
            intermediate: zeroed(tokens * s.intermediate * 2)?,
            logits: zeroed(tokens * 2 * 4)?,
            inputs: zeroed(upload.bytes())?,
            host_inputs: PinnedBuffer::new(upload.bytes())?,
            host_logits: PinnedBuffer::new(tokens * 2 * 4)?,
            upload,
            int8,
            use_graphs: options.use_graphs,
            graphs: HashMap::new(),
        })
    }

    /// Where the layer norms and the attention's quantization write the next linear's input in
    /// int8 plans (quantized values, per-token steps); nulls in fp16 plans.
    fn quantized_input(&self) -> (u64, u64) {
        self.int8.as_ref().map_or((0, 0), |b| (b.quantized.ptr().raw(), b.steps.ptr().raw()))
    }

    /// Enqueues `x = LayerNorm(x + projected)` over the batch's rows (`total` of them, within
    /// `padded`), in int8 too in int8 plans.
    fn residual_norm(&self, model: &DeviceBert, norm: &NormAt, total: u64, padded: usize) -> Result<()> {
        let (x, y, gamma, beta) = (self.x.ptr().raw(), self.projected.ptr().raw(), model.at(norm.gamma).raw(), model.at(norm.beta).raw());
        let (q, steps) = self.quantized_input();
        let mut launch = self.stream.launch_builder(&model.residual_norm);
        launch.arg(&x).arg(&y).arg(&gamma).arg(&beta).arg(&total).arg(&norm.epsilon).arg(&q).arg(&steps);
        // SAFETY: residual_layernorm's parameters in order and type (5 pointers, a float, 2
        // pointers); both values hold `padded` rows of `hidden` (a slot is sized for a full
        // batch), the layer norm's parameters `hidden` floats each, `total` the uploaded token
        // count; `q` (null in fp16 plans) `padded` rows of `hidden` bytes, `steps` a float per row.
        Ok(cu("residual + layer norm", unsafe { launch.launch(per_token(padded)) }).map(|_| ())?)
    }

    /// Enqueues linear `index` (of `self.linears`, by layer and place) of `at` over `padded` rows:
    /// cuBLASLt with its epilogue (fp16 plans), or the int8 product of the quantized input and
    /// our epilogue (int8 plans), GELU where `gelu`.
    ///
    /// # Safety
    /// As for the products in [`Slot::enqueue`]: the buffers hold `padded` rows of the linear's
    /// widths.
    unsafe fn product(&mut self, model: &DeviceBert, at: &LinearAt, (layer, place): (usize, usize), input: Input, output: Output, padded: usize) -> Result<()> {
        let s = self.stream.cu_stream();
        let linear = &self.linears[layer][place];
        let (Some(q), Some(buffers), Input::Int8 { steps: x_steps }) = (at.int8, &self.int8, input) else {
            let (Input::Fp16(x), Output::Fp16(y), None) = (input, output, at.int8) else {
                return Err(GpuError::Run("an int8 input or output given to an fp16 linear, or an fp16 one to an int8 linear".into()));
            };
            // SAFETY: our caller's contract.
            return Ok(unsafe { self.matmuls.run(linear, x, y, padded, s) }?);
        };
        // SAFETY: the quantized input holds `padded` rows of `inputs`, the products buffer of the
        // widest output (sized at the slot's creation).
        unsafe { self.matmuls.run(linear, buffers.quantized.ptr(), buffers.products.ptr(), padded, s) }?;
        let (products, scales, bias) = (buffers.products.ptr().raw(), model.at(q.scales).raw(), model.at(at.bias).raw());
        let (width, gelu) = (at.outputs as i32, i32::from(place == 2));
        let (y, to, to_steps) = match output {
            Output::Fp16(y) => (y.raw(), 0u64, 0u64),
            Output::Int8 { steps } => (0u64, buffers.quantized.ptr().raw(), steps),
        };
        let mut launch = self.stream.launch_builder(&model.dequantize);
        launch.arg(&products).arg(&scales).arg(&bias).arg(&x_steps).arg(&width).arg(&gelu).arg(&y).arg(&to).arg(&to_steps);
        let rows = LaunchConfig { grid_dim: (padded as u32, 1, 1), block_dim: (DEQUANTIZE_THREADS, 1, 1), shared_mem_bytes: 0 };
        // SAFETY: dequantize's parameters in order and type; the products hold `padded` rows of
        // `width` int32 values, the scales and bias `width` floats, the steps a float per row, the
        // output `padded` rows of `width` values of its type. The int8 output overwrites the
        // input, which the product has read before (one stream).
        cu("dequantize", unsafe { launch.launch(rows) })?;
        Ok(())
    }

    /// Enqueues a whole batch already written to `host_inputs`: its upload, every layer, and the
    /// download of `padded` tokens' logits. Everything it enqueues depends only on the batch's
    /// shape, never on its contents, so it can be captured and replayed.
    ///
    /// # Safety
    /// `host_inputs` holds a batch of this shape, written by `Packed::write` with this slot's
    /// upload layout; the linears' shapes at `padded` tokens were prepared before any capture.
    unsafe fn enqueue(&mut self, model: &DeviceBert, batch: BatchShape) -> Result<()> {
        let BatchShape { padded, sequences, longest, total_at } = batch;
        let shape = model.header.shape;
        let s = self.stream.cu_stream();
        // SAFETY: the span fits both buffers (both `Upload::bytes` long); the source is this slot's
        // pinned memory, which its owner changes only between batches.
        cu("upload tokens", unsafe { dr::memcpy_htod_async(self.inputs.ptr().raw(), &self.host_inputs.as_slice()[..self.upload.bytes()], s) })?;
        let [ids, segments, positions, starts] = self.upload.offsets().map(|o| self.inputs.ptr().offset(o).raw());
        let total = self.inputs.ptr().offset(total_at).raw();
        let (x, qkv, context, projected, intermediate) = (self.x.ptr(), self.qkv.ptr(), self.context.ptr(), self.projected.ptr(), self.intermediate.ptr());
        let xr = x.raw();

        let e = &model.header.embeddings;
        let tables = [e.words, e.positions, e.token_types, e.norm.gamma, e.norm.beta].map(|o| model.at(o).raw());
        let mut launch = self.stream.launch_builder(&model.embed);
        launch.arg(&xr).arg(&ids).arg(&segments).arg(&positions);
        for table in &tables {
            launch.arg(table);
        }
        let (q8, steps) = self.quantized_input();
        launch.arg(&total).arg(&e.norm.epsilon).arg(&q8).arg(&steps);
        // SAFETY: embed_layernorm's parameters in order and type (4 pointers, 3 fp16 tables, 2 fp32
        // vectors, the token count's address, a float, 2 pointers); the ids, segments and
        // positions of the batch were checked against the tables' sizes by `Packed::new`; `x`
        // holds `padded` rows, `q8` (null in fp16 plans) as many of int8, `steps` a float each.
        cu("embeddings + layer norm", unsafe { launch.launch(per_token(padded)) })?;

        let scale = 1.0 / (shape.head_size() as f32).sqrt();
        let rows_per_block = 16 * ATTENTION_WARPS;
        // From the staged rows (whole key steps), so a one-feature graph's launch fits its bucket.
        let splits = if sequences * shape.heads < ATTENTION_MIN_BLOCKS { longest.next_multiple_of(KEY_STEP).div_ceil(rows_per_block) } else { 1 };
        let attention = LaunchConfig {
            grid_dim: (sequences as u32, shape.heads as u32, splits as u32),
            block_dim: (32 * ATTENTION_WARPS as u32, 1, 1),
            shared_mem_bytes: attention_shared_bytes(longest, shape.head_size()) as u32,
        };
        let (q, c) = (qkv.raw(), context.raw());
        for (i, layer) in model.header.layers.iter().enumerate() {
            // Int8 plans: the layer norms write the QKV's and the intermediate's inputs in int8,
            // the attention's output is quantized for its linear, the intermediate's epilogue
            // writes the output linear's input.
            let (steps, gelu_steps) = self.int8.as_ref().map_or((None, None), |b| (Some(b.steps.ptr().raw()), Some(b.gelu_steps.ptr().raw())));
            let input = |x: DevicePtr, steps: Option<u64>| steps.map_or(Input::Fp16(x), |steps| Input::Int8 { steps });
            let output = |y: DevicePtr, steps: Option<u64>| steps.map_or(Output::Fp16(y), |steps| Output::Int8 { steps });
            // SAFETY (the products): each buffer holds `padded` rows of the linear's width
            // (slots are sized for a full batch, rounded up as `padded_tokens` rounds).
            unsafe { self.product(model, &layer.qkv, (i, 0), input(x, steps), Output::Fp16(qkv), padded) }?;
            let mut launch = self.stream.launch_builder(&model.attention);
            launch.arg(&q).arg(&c).arg(&starts).arg(&scale);
            // SAFETY: attention's parameters in order and type (3 pointers, a float); each of the
            // `sequences` blocks reads its packed rows within `qkv` and writes them in `context`,
            // with shared memory for `longest` tokens (within the limit set at load: positions are
            // checked against the model's by `Packed::new`).
            cu("attention", unsafe { launch.launch(attention) })?;
            if steps.is_some() {
                let (q8, steps) = self.quantized_input();
                let mut launch = self.stream.launch_builder(&model.quantize_rows);
                launch.arg(&c).arg(&q8).arg(&steps).arg(&total);
                // SAFETY: quantize_rows's parameters in order and type (4 pointers); `context`
                // holds `padded` rows of `hidden` fp16 values, `q8` as many int8 ones, `steps` a
                // float per row.
                cu("quantize attention", unsafe { launch.launch(per_token(padded)) })?;
            }
            // SAFETY: as for the first product.
            unsafe { self.product(model, &layer.attention_output, (i, 1), input(context, steps), Output::Fp16(projected), padded) }?;
            self.residual_norm(model, &layer.attention_norm, total, padded)?;
            // SAFETY: as for the first product.
            unsafe { self.product(model, &layer.intermediate, (i, 2), input(x, steps), output(intermediate, gelu_steps), padded) }?;
            // SAFETY: as for the first product.
            unsafe { self.product(model, &layer.output, (i, 3), input(intermediate, gelu_steps), Output::Fp16(projected), padded) }?;
            self.residual_norm(model, &layer.output_norm, total, padded)?;
        }

        let (w, b, logits) = (model.at(model.header.qa.weight).raw(), model.at(model.header.qa.bias).raw(), self.logits.ptr().raw());
        let mut launch = self.stream.launch_builder(&model.answer);
        launch.arg(&xr).arg(&w).arg(&b).arg(&logits).arg(&total);
        // SAFETY: qa_head's parameters (5 pointers); the head is [2, hidden] fp16 and its bias 2
        // floats; `logits` holds 2 floats per row for `padded` rows.
        cu("answer head", unsafe { launch.launch(per_token(padded)) })?;
        let out = &mut self.host_logits.as_mut_slice()[..padded * 8];
        // SAFETY: `padded` pairs of floats from the device into this slot's pinned memory, read
        // only after the stream is synchronized.
        Ok(cu("download logits", unsafe { dr::memcpy_dtoh_async(out, logits, s) }).map(|_| ())?)
    }

    /// Runs one batch and returns each feature's response.
    fn run(&mut self, model: &DeviceBert, features: &[(usize, Feature)]) -> Result<Vec<Vec<u8>>> {
        device::bind(&model.ctx)?;
        let packed = Packed::new(features, model.limits())?;
        packed.write(&self.upload, self.host_inputs.as_mut_slice());
        let padded = packed.padded_tokens();
        let batch = BatchShape { padded, sequences: packed.sequences(), longest: packed.longest, total_at: packed.total_at(&self.upload) };
        // A one-feature batch's shape follows from `padded` (its length rounds up to it).
        let replayable = self.use_graphs && features.len() == 1;
        match self.graphs.get(&padded) {
            Some(graph) if replayable => cu("launch graph", graph.launch())?,
            _ => {
                // SAFETY: the batch was just written with this slot's layout; a plain run prepares
                // the linears' shapes before any capture below.
                unsafe { self.enqueue(model, batch) }?;
                if replayable {
                    cu("synchronize", self.stream.synchronize())?;
                    // SAFETY: as above; the capture records the same work without running it.
                    let graph = unsafe { self.capture(model, batch) }?;
                    self.graphs.insert(padded, graph);
                }
            }
        }
        cu("run BERT batch", self.stream.synchronize())?;
        let logits = self.host_logits.as_slice();
        Ok(features.iter().zip(&packed.starts).map(|((_, f), &start)| logits[start as usize * 8..(start as usize + f.length) * 8].to_vec()).collect())
    }

    /// # Safety
    /// As for [`Slot::enqueue`].
    unsafe fn capture(&mut self, model: &DeviceBert, batch: BatchShape) -> Result<CudaGraph> {
        cu("begin capture", self.stream.begin_capture(ds::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL))?;
        // SAFETY: our caller's contract.
        let enqueued = unsafe { self.enqueue(model, batch) };
        let graph = cu("end capture", self.stream.end_capture(ds::CUgraphInstantiate_flags(0)));
        enqueued?;
        Ok(graph?.ok_or(DeviceError::EmptyCapture)?)
    }
}

/// One GPU running a BERT plan.
pub struct GpuBertEngine {
    name: String,
    options: RunOptions,
    /// Declared before `model`: slots (their descriptors point into its weights) drop first.
    slots: SlotPool<Slot>,
    model: DeviceBert,
}

impl GpuBertEngine {
    pub fn open(ordinal: usize, plan: &Plan<BertPlanHeader>, options: RunOptions) -> Result<GpuBertEngine> {
        let model = DeviceBert::load(ordinal, plan)?;
        let slots = (0..options.streams.max(1)).map(|_| Slot::new(&model, &options)).collect::<Result<Vec<_>>>()?;
        Ok(GpuBertEngine { name: format!("gpu{ordinal}-bert"), options, slots: SlotPool::new(slots), model })
    }

    /// The plan on each of `devices` GPUs.
    pub fn open_all(devices: usize, plan: &Plan<BertPlanHeader>, options: RunOptions) -> Result<Vec<Arc<dyn Engine>>> {
        open_each(devices, |d| GpuBertEngine::open(d, plan, options))
    }

    /// The responses to `indices` (at most a batch), in order.
    fn answer(&self, indices: &[usize], source: &dyn SampleSource) -> Result<Vec<Vec<u8>>> {
        let features = indices
            .iter()
            .map(|&i| Feature::decode(&source.sample(i), self.options.seq).map(|f| (i, f)).map_err(|e| GpuError::Run(format!("sample {i}: {e}"))))
            .collect::<Result<Vec<_>>>()?;
        self.slots.with(|slot| slot.run(&self.model, &features))
    }

    /// The responses to `indices`, a batch at a time, appended to `outputs`.
    pub fn answer_all(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<()> {
        for chunk in indices.chunks(self.options.batch_size.max(1)) {
            outputs.extend(self.answer(chunk, source)?);
        }
        Ok(())
    }
}

impl Engine for GpuBertEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> std::result::Result<(), EngineError> {
        self.answer_all(indices, source, outputs).map_err(EngineError::new)
    }
}

#[cfg(test)]
mod int8_tests;
