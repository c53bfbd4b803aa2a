//! Our stem kernel (`stem.cu`): the image's convolution on tensor cores in fp16, writing int8 on
//! the grid of the max pooling after it (`network::fuse_conv_quantization`). What it takes,
//! compiling it, launching it.

use super::device::{DeviceError, DevicePtr, compile_for, cu};
use super::plan::{ConvRunner, LayerKind, PlannedLayer};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, sys as ds};
use std::sync::Arc;

const SOURCE: &str = concat!(include_str!("tensor_cores.cuh"), include_str!("stem.cu"));

/// Input channels the kernel reads per pixel (24 bytes of fp16): the space-to-depth image's 2x2
/// pixels of 3 channels, none of them padding.
pub const CHANNELS: usize = 12;
/// The convolution's size the kernel is compiled for (`stem.cu`'s KERNEL): ResNet50's 7x7
/// stride-2 stem after space-to-depth. A kernel row of 12-channel pixels is then whole k-steps.
const KERNEL: usize = 4;
/// Output channels per block (`stem.cu`'s TILE_N), and rows (positions) per tile (TILE_M).
const TILE_N: usize = 64;
const TILE_M: usize = 256;
/// Consecutive tiles per block, whose patch loads pipeline.
const TILES_PER_BLOCK: usize = 8;
/// The most dynamic shared memory a block may take: what every GPU of compute capability 8.0 or
/// later gives one block (99 KiB on the L4 and L40S); two blocks fit an H100's or B200's SM.
/// ResNet50's stem (on a 115-pixel-wide image) takes 74.3 KiB.
const MAX_SHARED_BYTES: usize = 96 * 1024;

/// The block's dynamic shared memory for an image `width` wide: the weights, two patch buffers
/// and the output tile (`stem.cu`).
fn shared_bytes(width: usize) -> usize {
    let pixel = 2 * CHANNELS;
    let weights = TILE_N * (KERNEL * KERNEL * pixel + 32);
    let patch = (TILE_M + (KERNEL - 1) * (width + 1)) * pixel;
    let buffer = (patch + 8).next_multiple_of(16);
    let tile = TILE_M * (TILE_N + 16);
    weights + 2 * buffer + tile
}

/// Whether the kernel takes a `kernel` x `kernel` convolution (of its one size, 4) without stride
/// or padding of an image `width` wide with `input` channels (at most [`CHANNELS`]; the lowering
/// pads them) to `output` channels.
pub fn takes(kernel: usize, stride: usize, pad: usize, input: usize, output: usize, width: usize) -> bool {
    kernel == KERNEL && stride == 1 && pad == 0 && input <= CHANNELS && output.is_multiple_of(TILE_N) && shared_bytes(width) <= MAX_SHARED_BYTES
}

/// Whether `layer` is one the kernel runs: an fp16 convolution with an int8 output, channels
/// already padded, a shape it takes.
pub fn fits(layer: &PlannedLayer) -> bool {
    let LayerKind::Conv { kernel, stride, pad, quantized_output: Some(_), residual: None, epilogue_offset: None, .. } = layer.kind else { return false };
    let ((ci, _, wi), (co, ..)) = (layer.input_shape, layer.output_shape);
    ci == CHANNELS && takes(kernel, stride, pad, ci, co, wi)
}

/// Whether the plan's `layer` is to run on the kernel.
pub fn runs(layer: &PlannedLayer) -> bool {
    matches!(layer.kind, LayerKind::Conv { runner: ConvRunner::Stem, .. })
}

/// The kernel compiled for `ctx`'s GPU of compute `capability`, or `None` below 8.0 (no fp16
/// `mma.sync` of this shape).
pub fn load(ctx: &Arc<CudaContext>, capability: (i32, i32)) -> Result<Option<CudaFunction>, DeviceError> {
    if capability.0 < 8 {
        return Ok(None);
    }
    let ptx = compile_for("stem.cu", SOURCE, capability, vec![format!("-DTILES_PER_BLOCK={TILES_PER_BLOCK}"), format!("-DKERNEL={KERNEL}")])?;
    let module = cu("load stem.cu", ctx.load_module(ptx))?;
    let function = cu("kernel stem_conv", module.load_function("stem_conv"))?;
    cu("stem kernel shared memory", function.set_attribute(ds::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, MAX_SHARED_BYTES as i32))?;
    Ok(Some(function))
}

/// One stem convolution for the kernel: an NHWC fp16 image of [`CHANNELS`] channels, KRSC fp16
/// weights and biases, an NHWC int8 output on `scale`'s grid.
pub struct StemConv {
    pub x: DevicePtr,
    pub weights: DevicePtr,
    pub bias: DevicePtr,
    pub y: DevicePtr,
    pub batch: usize,
    /// Input (channels, height, width) and output (channels, height, width) per sample.
    pub input: (usize, usize, usize),
    pub output: (usize, usize, usize),
    pub relu: bool,
    pub scale: f32,
}

impl StemConv {
    /// Enqueues the convolution on `stream`.
    ///
    /// # Safety
    /// [`takes`] its shape with [`CHANNELS`] input channels, and every pointer addresses device
    /// memory holding its tensor at this shape and stays live until the work has run.
    pub unsafe fn launch(&self, function: &CudaFunction, stream: &Arc<CudaStream>) -> Result<(), DeviceError> {
        let ((_, h, w), (co, ho, wo)) = (self.input, self.output);
        let (x, wp, b, y) = (self.x.raw(), self.weights.raw(), self.bias.raw(), self.y.raw());
        let mut launch = stream.launch_builder(function);
        launch.arg(&x).arg(&wp).arg(&b).arg(&y);
        let ints = [self.batch, h, w, ho, wo, usize::from(self.relu)].map(|v| v as i32);
        for v in &ints {
            launch.arg(v);
        }
        launch.arg(&self.scale);
        let tiles = self.batch * (ho * w).div_ceil(TILE_M);
        let blocks = tiles.div_ceil(TILES_PER_BLOCK);
        let grid = u32::try_from(blocks).map_err(|_| DeviceError::LaunchTooLarge { blocks: blocks as u64 })?;
        let config = LaunchConfig { grid_dim: (grid, (co / TILE_N) as u32, 1), block_dim: (256, 1, 1), shared_mem_bytes: shared_bytes(w) as u32 };
        // SAFETY: the arguments are stem_conv's parameters in order and type (4 pointers, 6 ints, a
        // float); it reads the batch's images (each `h` x `w` pixels of 12 fp16 channels), the
        // weights and biases of `co` channels, and writes `batch` x `ho` x `wo` pixels of `co` int8
        // channels, all within their buffers (our contract); the shared memory is what the shape
        // needs, within the attribute `load` set (`takes`).
        cu("stem kernel", unsafe { launch.launch(config) }).map(|_| ())
    }
}
