//! Our int8 1x1 convolution kernel (`pointwise.cu`): what it takes, compiling it, launching it. The
//! ResNet50 builder times it beside cuDNN's legacy call and graph (`exec::Slot::choose_algorithms`),
//! and `mlperf bench cudnn_graph` checks and times it on ResNet50's 1x1 shapes.

use super::device::{DeviceError, DevicePtr, compile_for, cu};
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, LaunchConfig, PushKernelArg, sys as ds};
use std::sync::Arc;

const SOURCE: &str = concat!(include_str!("tensor_cores.cuh"), include_str!("pointwise.cu"));

/// The kernel's tiling, passed to it as defines.
struct Tile {
    /// Rows (output pixels) and columns (output channels) of a tile.
    m: usize,
    n: usize,
    /// Input channels read per step.
    k: usize,
    /// Consecutive tiles per block, whose steps pipeline.
    per_block: usize,
}

const TILE: Tile = Tile { m: 128, n: 128, k: 64, per_block: 8 };
/// Its dynamic shared memory: two stages of both operands' rows and two tile buffers, rows padded
/// by 16 bytes (`pointwise.cu`'s STAGE_BYTES and TILE_BYTES).
const SHARED_BYTES: usize = {
    let Tile { m, n, k, .. } = TILE;
    2 * (m + n) * (k + 16) + 2 * m * (n + 16)
};

/// Whether the kernel takes a 1x1 convolution (no padding, any stride) of `input` to `output`
/// channels: counts its tiles divide.
pub fn takes(input: usize, output: usize) -> bool {
    input.is_multiple_of(TILE.k) && output.is_multiple_of(TILE.n)
}

/// The kernel compiled for `ctx`'s GPU of compute `capability`, or `None` below 8.0 (no int8
/// `mma.sync`).
pub fn load(ctx: &Arc<CudaContext>, capability: (i32, i32)) -> Result<Option<CudaFunction>, DeviceError> {
    if capability.0 < 8 {
        return Ok(None);
    }
    let Tile { m, n, k, per_block } = TILE;
    let defines = vec![format!("-DTILE_M={m}"), format!("-DTILE_N={n}"), format!("-DTILE_K={k}"), format!("-DTILES_PER_BLOCK={per_block}")];
    let ptx = compile_for("pointwise.cu", SOURCE, capability, defines)?;
    let module = cu("load pointwise.cu", ctx.load_module(ptx))?;
    let function = cu("kernel pointwise_conv_int8", module.load_function("pointwise_conv_int8"))?;
    cu("1x1 kernel shared memory", function.set_attribute(ds::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, SHARED_BYTES as i32))?;
    Ok(Some(function))
}

/// One 1x1 convolution for the kernel: NHWC int8 tensors, KRSC int8 weights and the graph's f32
/// epilogue (`[scale; channels]`, `[bias; channels]`, with a residual `[ratio; channels]`).
pub struct Pointwise {
    pub x: DevicePtr,
    pub weights: DevicePtr,
    pub epilogue: DevicePtr,
    pub residual: Option<DevicePtr>,
    pub y: DevicePtr,
    pub batch: usize,
    /// Input (channels, height, width) and output (channels, height, width) per sample.
    pub input: (usize, usize, usize),
    pub output: (usize, usize, usize),
    pub stride: usize,
    pub relu: bool,
}

impl Pointwise {
    /// Enqueues the convolution on `stream`.
    ///
    /// # Safety
    /// [`takes`] its channel counts, every pointer addresses device memory holding its tensor at
    /// this shape (the output `stride` times smaller than the input, rounded up), and stays live
    /// until the work has run.
    pub unsafe fn launch(&self, function: &CudaFunction, stream: &Arc<CudaStream>) -> Result<(), DeviceError> {
        let ((k, h, w), (co, ho, wo)) = (self.input, self.output);
        let (x, wp, e, y) = (self.x.raw(), self.weights.raw(), self.epilogue.raw(), self.y.raw());
        let z = self.residual.map_or(0, |r| r.raw());
        let m = (self.batch * ho * wo) as i64;
        let mut launch = stream.launch_builder(function);
        launch.arg(&x).arg(&wp).arg(&e).arg(&z).arg(&y).arg(&m);
        let ints = [co, k, usize::from(self.relu), h, w, ho, wo, self.stride].map(|v| v as i32);
        for v in &ints {
            launch.arg(v);
        }
        let tiles = (m as usize).div_ceil(TILE.m) * (co / TILE.n);
        let blocks = tiles.div_ceil(TILE.per_block);
        let grid = u32::try_from(blocks).map_err(|_| DeviceError::LaunchTooLarge { blocks: blocks as u64 })?;
        let config = LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: SHARED_BYTES as u32 };
        // SAFETY: the arguments are pointwise_conv_int8's parameters in order and type (5 pointers,
        // a long long, 8 ints); it reads `m` rows of `k` int8 channels (strided input pixels), the
        // weights and epilogue, and the residual, and writes `m` rows of `co` int8 channels, all
        // within their buffers (our contract); the tile sizes divide `k` and `co` (`takes`).
        cu("1x1 kernel", unsafe { launch.launch(config) }).map(|_| ())
    }
}
