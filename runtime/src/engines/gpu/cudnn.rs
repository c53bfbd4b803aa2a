//! The few cuDNN objects the engine uses, as owned Rust values over cudarc's `cudnn::result` layer
//! (cudarc's sys/result/safe layering: cudarc gives sys and result, this is our safe layer). Raw
//! cuDNN handles never leave this file: each type keeps its own private and frees it on drop, and
//! the calls that touch device memory take it as [`Operand`]s, a descriptor with the address of
//! its data. Every descriptor is NHWC, fp16 or int8 (convolutions accumulate in fp32, fp16 or
//! int32).

use super::device::{DeviceBuffer, DeviceError, DevicePtr, Result};
use cudarc::cudnn::result as cr;
use cudarc::cudnn::sys;
use cudarc::driver::CudaStream;
use std::ffi::{c_int, c_void};
use std::fmt;
use std::sync::Arc;

fn check<T>(what: &str, r: std::result::Result<T, cr::CudnnError>) -> Result<T> {
    r.map_err(|source| DeviceError::Cudnn { what: what.to_string(), source })
}

/// A device address as cuDNN's API takes it.
fn addr(p: DevicePtr) -> *mut c_void {
    p.raw() as *mut c_void
}

/// A cuDNN handle bound to one CUDA stream, which it holds so that the stream outlives it.
pub struct Handle {
    raw: sys::cudnnHandle_t,
    _stream: Arc<CudaStream>,
}

impl Handle {
    /// A handle of the context bound to this thread, enqueuing on `stream` (of that context).
    pub fn new(stream: &Arc<CudaStream>) -> Result<Handle> {
        let raw = check("create handle", cr::create_handle())?;
        let h = Handle { raw, _stream: stream.clone() };
        // SAFETY: `raw` was just created, and the stream is live: `h` holds it.
        check("set stream", unsafe { cr::set_stream(raw, stream.cu_stream() as sys::cudaStream_t) })?;
        Ok(h)
    }

    /// The raw handle, for the graph layer's backend calls (`graph::checked`).
    pub(super) fn raw(&self) -> sys::cudnnHandle_t {
        self.raw
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here; its stream is still held.
        unsafe { cr::destroy_handle(self.raw) }.ok();
    }
}

// SAFETY: a handle is used by one stream slot at a time (the slot's owner holds it exclusively).
unsafe impl Send for Handle {}

/// Element types of tensors, filters and sums.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataType {
    Half,
    Float,
    Int8,
    Int32,
}

impl DataType {
    fn cudnn(self) -> sys::cudnnDataType_t {
        match self {
            DataType::Half => sys::cudnnDataType_t::CUDNN_DATA_HALF,
            DataType::Float => sys::cudnnDataType_t::CUDNN_DATA_FLOAT,
            DataType::Int8 => sys::cudnnDataType_t::CUDNN_DATA_INT8,
            DataType::Int32 => sys::cudnnDataType_t::CUDNN_DATA_INT32,
        }
    }
}

/// An NHWC activation tensor `n x c x h x w`.
pub struct Tensor(sys::cudnnTensorDescriptor_t);

impl Tensor {
    pub fn nhwc(dtype: DataType, n: usize, c: usize, h: usize, w: usize) -> Result<Tensor> {
        let d = check("create tensor", cr::create_tensor_descriptor())?;
        let t = Tensor(d);
        // SAFETY: `d` was just created (and is freed by `t` if this fails).
        check("set tensor", unsafe {
            cr::set_tensor4d_descriptor(d, sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC, dtype.cudnn(), [n as c_int, c as c_int, h as c_int, w as c_int])
        })?;
        Ok(t)
    }
}

/// Dims padded to cuDNN's minimum of two spatial dims (a 1-D layer is a 2-D one of height 1).
fn at_least_2d(spatial: &[usize]) -> Vec<usize> {
    let mut dims = vec![1; 2usize.saturating_sub(spatial.len())];
    dims.extend_from_slice(spatial);
    dims
}

impl Tensor {
    /// A channels-last tensor `n x c x spatial...` (NDHWC for 3 spatial dims), whose rows hold
    /// `row` >= `c` channels (a channel slice of a wider tensor when `row` > `c`).
    pub fn channels_last(dtype: DataType, n: usize, c: usize, row: usize, spatial: &[usize]) -> Result<Tensor> {
        let spatial = at_least_2d(spatial);
        let mut dims = vec![n, c];
        dims.extend(&spatial);
        let mut strides = vec![0usize; dims.len()];
        strides[1] = 1;
        let mut step = row;
        for d in (2..dims.len()).rev() {
            strides[d] = step;
            step *= dims[d];
        }
        strides[0] = step;
        let (dims, strides): (Vec<c_int>, Vec<c_int>) = (dims.iter().map(|&d| d as c_int).collect(), strides.iter().map(|&s| s as c_int).collect());
        let d = check("create tensor", cr::create_tensor_descriptor())?;
        let t = Tensor(d);
        // SAFETY: `d` was just created (and is freed by `t` if this fails); both arrays have the
        // length the call is told of.
        check("set tensor", unsafe { cr::set_tensornd_descriptor(d, dtype.cudnn(), dims.len() as c_int, dims.as_ptr(), strides.as_ptr()) })?;
        Ok(t)
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        // SAFETY: created in `nhwc`, destroyed once, here; cuDNN reads descriptors only during the calls given them.
        unsafe { cr::destroy_tensor_descriptor(self.0) }.ok();
    }
}

/// KRSC filters.
pub struct Filter(sys::cudnnFilterDescriptor_t);

impl Filter {
    pub fn krsc(dtype: DataType, k: usize, c: usize, r: usize, s: usize) -> Result<Filter> {
        let d = check("create filter", cr::create_filter_descriptor())?;
        let f = Filter(d);
        // SAFETY: `d` was just created (and is freed by `f` if this fails).
        check("set filter", unsafe {
            cr::set_filter4d_descriptor(d, dtype.cudnn(), sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC, [k as c_int, c as c_int, r as c_int, s as c_int])
        })?;
        Ok(f)
    }
}

impl Filter {
    /// Channels-last filters `k x c x kernel...` (K, kernel..., C in memory).
    pub fn channels_last(dtype: DataType, k: usize, c: usize, kernel: &[usize]) -> Result<Filter> {
        let mut dims = vec![k as c_int, c as c_int];
        dims.extend(at_least_2d(kernel).iter().map(|&d| d as c_int));
        let d = check("create filter", cr::create_filter_descriptor())?;
        let f = Filter(d);
        // SAFETY: `d` was just created (and is freed by `f` if this fails); `dims` has the length
        // the call is told of.
        check("set filter", unsafe { cr::set_filternd_descriptor(d, dtype.cudnn(), sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC, dims.len() as c_int, dims.as_ptr()) })?;
        Ok(f)
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        // SAFETY: created in `krsc`, destroyed once, here; cuDNN reads descriptors only during the calls given them.
        unsafe { cr::destroy_filter_descriptor(self.0) }.ok();
    }
}

/// A cross-correlation on tensor cores, accumulating in `sums` (Float or Half for fp16 data, Int32
/// for int8).
pub struct Convolution(sys::cudnnConvolutionDescriptor_t);

impl Convolution {
    pub fn new(pad: usize, stride: usize, sums: DataType) -> Result<Convolution> {
        let compute = sums.cudnn();
        let d = check("create convolution", cr::create_convolution_descriptor())?;
        let c = Convolution(d);
        // SAFETY: `d` was just created (and is freed by `c` if this fails).
        check("set convolution", unsafe {
            cr::set_convolution2d_descriptor(d, pad as c_int, pad as c_int, stride as c_int, stride as c_int, 1, 1, sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION, compute)
        })?;
        // SAFETY: as above.
        check("set math type", unsafe { cr::set_convolution_math_type(d, sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH) })?;
        Ok(c)
    }
}

impl Convolution {
    /// An N-d cross-correlation (1-D as 2-D of height 1) with `groups` groups, on tensor cores.
    pub fn nd(pad: &[usize], stride: &[usize], dilation: &[usize], groups: usize, sums: DataType) -> Result<Convolution> {
        let extend = |v: &[usize], fill: usize| -> Vec<c_int> {
            let mut out = vec![fill as c_int; 2usize.saturating_sub(v.len())];
            out.extend(v.iter().map(|&x| x as c_int));
            out
        };
        let (pad, stride, dilation) = (extend(pad, 0), extend(stride, 1), extend(dilation, 1));
        let d = check("create convolution", cr::create_convolution_descriptor())?;
        let c = Convolution(d);
        // SAFETY: `d` was just created (and is freed by `c` if this fails); the three arrays have
        // the length the call is told of.
        check("set convolution", unsafe {
            cr::set_convolutionnd_descriptor(
                d,
                pad.len() as c_int,
                pad.as_ptr(),
                stride.as_ptr(),
                dilation.as_ptr(),
                sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION,
                sums.cudnn(),
            )
        })?;
        // SAFETY: as above.
        check("set group count", unsafe { cr::set_convolution_group_count(d, groups as c_int) })?;
        // SAFETY: as above.
        check("set math type", unsafe { cr::set_convolution_math_type(d, sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH) })?;
        Ok(c)
    }
}

impl Drop for Convolution {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here; cuDNN reads descriptors only during the calls given them.
        unsafe { cr::destroy_convolution_descriptor(self.0) }.ok();
    }
}

pub struct Activation(sys::cudnnActivationDescriptor_t);

impl Activation {
    pub fn new(relu: bool) -> Result<Activation> {
        let d = check("create activation", cr::create_activation_descriptor())?;
        let a = Activation(d);
        let mode = if relu { sys::cudnnActivationMode_t::CUDNN_ACTIVATION_RELU } else { sys::cudnnActivationMode_t::CUDNN_ACTIVATION_IDENTITY };
        // SAFETY: `d` was just created (and is freed by `a` if this fails).
        check("set activation", unsafe { cr::set_activation_descriptor(d, mode, sys::cudnnNanPropagation_t::CUDNN_NOT_PROPAGATE_NAN, 0.0) })?;
        Ok(a)
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here (cudarc's result layer has no destroy for
        // this descriptor); cuDNN reads descriptors only during the calls given them.
        unsafe { sys::cudnnDestroyActivationDescriptor(self.0) };
    }
}

pub struct Pooling(sys::cudnnPoolingDescriptor_t);

impl Pooling {
    /// Max pooling, or (with `average`) average pooling counting the padding, as global pooling needs.
    pub fn new(average: bool, window: usize, stride: usize, pad: usize) -> Result<Pooling> {
        let d = check("create pooling", cr::create_pooling_descriptor())?;
        let p = Pooling(d);
        let mode = if average { sys::cudnnPoolingMode_t::CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING } else { sys::cudnnPoolingMode_t::CUDNN_POOLING_MAX };
        let (w, s, pd) = ([window as c_int; 2], [stride as c_int; 2], [pad as c_int; 2]);
        // SAFETY: `d` was just created (and is freed by `p` if this fails); the window, padding and
        // stride arrays have the 2 entries the call is told of.
        check("set pooling", unsafe { cr::set_pooling_descriptor(d, mode, sys::cudnnNanPropagation_t::CUDNN_NOT_PROPAGATE_NAN, 2, &w, &pd, &s) })?;
        Ok(p)
    }
}

impl Drop for Pooling {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here (cudarc's result layer has no destroy for
        // this descriptor); cuDNN reads descriptors only during the calls given them.
        unsafe { sys::cudnnDestroyPoolingDescriptor(self.0) };
    }
}

/// A forward convolution algorithm. Plans store it as cuDNN's enum code ([`Algorithm::code`]).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Algorithm(sys::cudnnConvolutionFwdAlgo_t);

impl Algorithm {
    /// The one algorithm cuDNN's fused call supports without an activation.
    pub const IMPLICIT_PRECOMP_GEMM: Algorithm = Algorithm(sys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM);

    /// The algorithm of a plan's code, None for a code that names none (an unbuilt plan's).
    pub fn from_code(code: i32) -> Option<Algorithm> {
        use sys::cudnnConvolutionFwdAlgo_t::*;
        [
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM,
            CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM,
            CUDNN_CONVOLUTION_FWD_ALGO_GEMM,
            CUDNN_CONVOLUTION_FWD_ALGO_DIRECT,
            CUDNN_CONVOLUTION_FWD_ALGO_FFT,
            CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING,
            CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD,
            CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED,
        ]
        .into_iter()
        .find(|a| *a as i32 == code)
        .map(Algorithm)
    }

    pub fn code(self) -> i32 {
        self.0 as i32
    }
}

/// cuDNN's name of the algorithm, as the builder reports it.
impl fmt::Debug for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// The forward algorithms cuDNN's heuristics rank for a convolution, best first, with their
/// workspace needs.
pub fn candidate_algorithms(h: &Handle, x: &Tensor, w: &Filter, conv: &Convolution, y: &Tensor) -> Result<Vec<(Algorithm, usize)>> {
    const COUNT: usize = sys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_COUNT as usize;
    let mut perf: [std::mem::MaybeUninit<sys::cudnnConvolutionFwdAlgoPerf_t>; COUNT] = [const { std::mem::MaybeUninit::uninit() }; COUNT];
    let mut returned: c_int = 0;
    // SAFETY: the handle and descriptors are live (borrowed) and set; `perf` has room for the COUNT
    // results the call is allowed to write.
    check("get forward algorithms", unsafe { cr::get_convolution_forward_algorithm(h.raw, x.0, w.0, conv.0, y.0, COUNT as c_int, &mut returned, perf.as_mut_ptr() as *mut _) })?;
    Ok(perf[..returned as usize]
        .iter()
        // SAFETY: cuDNN wrote the first `returned` entries.
        .map(|p| unsafe { p.assume_init_read() })
        .filter(|p| p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)
        .map(|p| (Algorithm(p.algo), p.memory))
        .collect())
}

/// A backward-data algorithm (a transposed convolution's), stored in plans as its enum code.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub struct BackwardDataAlgorithm(sys::cudnnConvolutionBwdDataAlgo_t);

impl BackwardDataAlgorithm {
    pub fn from_code(code: i32) -> Option<BackwardDataAlgorithm> {
        use sys::cudnnConvolutionBwdDataAlgo_t::*;
        [
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_0,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD,
            CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED,
        ]
        .into_iter()
        .find(|a| *a as i32 == code)
        .map(BackwardDataAlgorithm)
    }

    pub fn code(self) -> i32 {
        self.0 as i32
    }
}

/// The backward-data algorithms cuDNN's heuristics rank for `dx = conv^T(dy, w)`, best first.
pub fn candidate_backward_data_algorithms(h: &Handle, w: &Filter, dy: &Tensor, conv: &Convolution, dx: &Tensor) -> Result<Vec<BackwardDataAlgorithm>> {
    const COUNT: usize = sys::cudnnConvolutionBwdDataAlgo_t::CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT as usize;
    let mut perf: [std::mem::MaybeUninit<sys::cudnnConvolutionBwdDataAlgoPerf_t>; COUNT] = [const { std::mem::MaybeUninit::uninit() }; COUNT];
    let mut returned: c_int = 0;
    // SAFETY: the handle and descriptors are live (borrowed) and set; `perf` has room for COUNT results.
    check("get backward data algorithms", unsafe {
        cr::get_convolution_backward_data_algorithm(h.raw, w.0, dy.0, conv.0, dx.0, COUNT as c_int, &mut returned, perf.as_mut_ptr() as *mut _)
    })?;
    Ok(perf[..returned as usize]
        .iter()
        // SAFETY: cuDNN wrote the first `returned` entries.
        .map(|p| unsafe { p.assume_init_read() })
        .filter(|p| p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)
        .map(|p| BackwardDataAlgorithm(p.algo))
        .collect())
}

pub fn backward_data_workspace_size(h: &Handle, w: &Filter, dy: &Tensor, conv: &Convolution, dx: &Tensor, algo: BackwardDataAlgorithm) -> Result<usize> {
    // SAFETY: the handle and descriptors are live (borrowed) and set.
    check("backward data workspace size", unsafe { cr::get_convolution_backward_data_workspace_size(h.raw, w.0, dy.0, conv.0, dx.0, algo.0) })
}

/// Enqueues `y = conv(x, w)` (plain forward, no epilogue) on the handle's stream.
///
/// # Safety
/// As for [`FusedConv::launch`], for `x`, `w`, `y` and `workspace`.
pub unsafe fn forward(
    h: &Handle,
    x: Operand<'_, Tensor>,
    w: Operand<'_, Filter>,
    conv: &Convolution,
    algo: Algorithm,
    workspace: &DeviceBuffer,
    y: Operand<'_, Tensor>,
) -> Result<()> {
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: the handle and descriptors are live (borrowed) and set, the alphas are f32; the
    // memory is the caller's contract.
    check("convolution", unsafe {
        cr::convolution_forward(
            h.raw,
            &alpha as *const f32 as *const _,
            x.desc.0,
            addr(x.ptr),
            w.desc.0,
            addr(w.ptr),
            conv.0,
            algo.0,
            addr(workspace.ptr()),
            workspace.bytes,
            &beta as *const f32 as *const _,
            y.desc.0,
            addr(y.ptr),
        )
    })
}

/// Enqueues `dx = conv^T(dy, w)` (a transposed convolution) on the handle's stream.
///
/// # Safety
/// As for [`FusedConv::launch`], for `dy`, `w`, `dx` and `workspace`.
pub unsafe fn backward_data(
    h: &Handle,
    dy: Operand<'_, Tensor>,
    w: Operand<'_, Filter>,
    conv: &Convolution,
    algo: BackwardDataAlgorithm,
    workspace: &DeviceBuffer,
    dx: Operand<'_, Tensor>,
) -> Result<()> {
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: the handle and descriptors are live (borrowed) and set, the alphas are f32; the
    // memory is the caller's contract.
    check("transposed convolution", unsafe {
        cr::convolution_backward_data(
            h.raw,
            &alpha as *const f32 as *const _,
            w.desc.0,
            addr(w.ptr),
            dy.desc.0,
            addr(dy.ptr),
            conv.0,
            algo.0,
            addr(workspace.ptr()),
            workspace.bytes,
            &beta as *const f32 as *const _,
            dx.desc.0,
            addr(dx.ptr),
        )
    })
}

pub fn workspace_size(h: &Handle, x: &Tensor, w: &Filter, conv: &Convolution, y: &Tensor, algo: Algorithm) -> Result<usize> {
    // SAFETY: the handle and descriptors are live (borrowed) and set.
    check("workspace size", unsafe { cr::get_convolution_forward_workspace_size(h.raw, x.0, w.0, conv.0, y.0, algo.0) })
}

/// A tensor or filter in device memory: its descriptor and the address of its data.
pub struct Operand<'a, D> {
    pub desc: &'a D,
    pub ptr: DevicePtr,
}

/// The operands of one fused convolution: `y = act(alphas.0 * conv(x, w) + alphas.1 * z + bias)`.
pub struct FusedConv<'a> {
    pub x: Operand<'a, Tensor>,
    pub w: Operand<'a, Filter>,
    pub conv: &'a Convolution,
    pub act: &'a Activation,
    pub bias: Operand<'a, Tensor>,
    /// The residual input (shaped as `y`), or None (then `y` is passed as z, with alphas.1 zero, as
    /// cuDNN allows).
    pub z: Option<DevicePtr>,
    pub y: Operand<'a, Tensor>,
    pub alphas: (f32, f32),
}

impl FusedConv<'_> {
    /// Enqueues the convolution on the handle's stream with `algo`, offering all of `workspace`.
    ///
    /// # Safety
    /// Every operand's address must be device memory of the handle's context holding what its
    /// descriptor describes (`z`: what `y`'s does), and `workspace` at least what
    /// [`workspace_size`] gives for `algo`; all of it must stay allocated until the work has run,
    /// and, when the work is captured in a CUDA graph, for as long as the graph may be launched.
    pub unsafe fn launch(&self, h: &Handle, algo: Algorithm, workspace: &DeviceBuffer) -> Result<()> {
        let (alpha1, alpha2) = self.alphas;
        let z = self.z.unwrap_or(self.y.ptr);
        // SAFETY: the handle and descriptors are live (borrowed) and set, the alphas are f32 (the
        // scaling type for every data type but double); the memory is the caller's contract.
        check("fused convolution", unsafe {
            cr::convolution_bias_activation_forward(
                h.raw,
                &alpha1 as *const f32 as *const _,
                self.x.desc.0,
                addr(self.x.ptr),
                self.w.desc.0,
                addr(self.w.ptr),
                self.conv.0,
                algo.0,
                addr(workspace.ptr()),
                workspace.bytes,
                &alpha2 as *const f32 as *const _,
                self.y.desc.0,
                addr(z),
                self.bias.desc.0,
                addr(self.bias.ptr),
                self.act.0,
                self.y.desc.0,
                addr(self.y.ptr),
            )
        })
    }
}

/// Enqueues `y = pool(x)` on the handle's stream.
///
/// # Safety
/// As for [`FusedConv::launch`], for `x` and `y`.
pub unsafe fn pool(h: &Handle, p: &Pooling, x: Operand<'_, Tensor>, y: Operand<'_, Tensor>) -> Result<()> {
    let (alpha, beta) = (1.0f32, 0.0f32);
    // SAFETY: the handle and descriptors are live (borrowed) and set, the alphas are f32; the
    // memory is the caller's contract.
    check("pooling", unsafe { cr::pooling_forward(h.raw, p.0, &alpha as *const f32 as *const _, x.desc.0, addr(x.ptr), &beta as *const f32 as *const _, y.desc.0, addr(y.ptr)) })
}

pub fn version() -> usize {
    cr::get_version()
}
