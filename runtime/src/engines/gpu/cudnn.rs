//! The few cuDNN objects the engine uses, as owned Rust values over cudarc's `cudnn::result` layer
//! (cudarc's sys/result/safe layering: cudarc gives sys and result, this is our safe layer).
//! Every descriptor is NHWC, fp16 or int8 (convolutions accumulate in fp32, fp16 or int32); each
//! type frees itself on drop.

use cudarc::cudnn::result as cr;
use cudarc::cudnn::sys;
use std::ffi::c_int;

pub type Result<T> = std::result::Result<T, String>;

fn check<T>(what: &str, r: std::result::Result<T, cr::CudnnError>) -> Result<T> {
    r.map_err(|e| format!("cuDNN {what}: {e:?}"))
}

/// A cuDNN handle bound to one CUDA stream.
pub struct Handle(pub sys::cudnnHandle_t);

impl Handle {
    pub fn new(stream: sys::cudaStream_t) -> Result<Handle> {
        let h = check("create handle", cr::create_handle())?;
        check("set stream", unsafe { cr::set_stream(h, stream) })?;
        Ok(Handle(h))
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        unsafe { cr::destroy_handle(self.0) }.ok();
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
pub struct Tensor(pub sys::cudnnTensorDescriptor_t);

impl Tensor {
    pub fn nhwc(dtype: DataType, n: usize, c: usize, h: usize, w: usize) -> Result<Tensor> {
        let d = check("create tensor", cr::create_tensor_descriptor())?;
        let t = Tensor(d);
        check("set tensor", unsafe {
            cr::set_tensor4d_descriptor(d, sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC, dtype.cudnn(), [n as c_int, c as c_int, h as c_int, w as c_int])
        })?;
        Ok(t)
    }
}

impl Drop for Tensor {
    fn drop(&mut self) {
        unsafe { cr::destroy_tensor_descriptor(self.0) }.ok();
    }
}

/// KRSC filters.
pub struct Filter(pub sys::cudnnFilterDescriptor_t);

impl Filter {
    pub fn krsc(dtype: DataType, k: usize, c: usize, r: usize, s: usize) -> Result<Filter> {
        let d = check("create filter", cr::create_filter_descriptor())?;
        let f = Filter(d);
        check("set filter", unsafe {
            cr::set_filter4d_descriptor(d, dtype.cudnn(), sys::cudnnTensorFormat_t::CUDNN_TENSOR_NHWC, [k as c_int, c as c_int, r as c_int, s as c_int])
        })?;
        Ok(f)
    }
}

impl Drop for Filter {
    fn drop(&mut self) {
        unsafe { cr::destroy_filter_descriptor(self.0) }.ok();
    }
}

/// A cross-correlation on tensor cores, accumulating in `sums` (Float or Half for fp16 data, Int32
/// for int8).
pub struct Convolution(pub sys::cudnnConvolutionDescriptor_t);

impl Convolution {
    pub fn new(pad: usize, stride: usize, sums: DataType) -> Result<Convolution> {
        let compute = sums.cudnn();
        let d = check("create convolution", cr::create_convolution_descriptor())?;
        let c = Convolution(d);
        check("set convolution", unsafe {
            cr::set_convolution2d_descriptor(d, pad as c_int, pad as c_int, stride as c_int, stride as c_int, 1, 1, sys::cudnnConvolutionMode_t::CUDNN_CROSS_CORRELATION, compute)
        })?;
        check("set math type", unsafe { cr::set_convolution_math_type(d, sys::cudnnMathType_t::CUDNN_TENSOR_OP_MATH) })?;
        Ok(c)
    }
}

impl Drop for Convolution {
    fn drop(&mut self) {
        unsafe { cr::destroy_convolution_descriptor(self.0) }.ok();
    }
}

pub struct Activation(pub sys::cudnnActivationDescriptor_t);

impl Activation {
    pub fn new(relu: bool) -> Result<Activation> {
        let d = check("create activation", cr::create_activation_descriptor())?;
        let a = Activation(d);
        let mode = if relu { sys::cudnnActivationMode_t::CUDNN_ACTIVATION_RELU } else { sys::cudnnActivationMode_t::CUDNN_ACTIVATION_IDENTITY };
        check("set activation", unsafe { cr::set_activation_descriptor(d, mode, sys::cudnnNanPropagation_t::CUDNN_NOT_PROPAGATE_NAN, 0.0) })?;
        Ok(a)
    }
}

impl Drop for Activation {
    fn drop(&mut self) {
        unsafe { sys::cudnnDestroyActivationDescriptor(self.0) };
    }
}

pub struct Pooling(pub sys::cudnnPoolingDescriptor_t);

impl Pooling {
    /// Max pooling, or (with `average`) average pooling counting the padding, as global pooling needs.
    pub fn new(average: bool, window: usize, stride: usize, pad: usize) -> Result<Pooling> {
        let d = check("create pooling", cr::create_pooling_descriptor())?;
        let p = Pooling(d);
        let mode = if average { sys::cudnnPoolingMode_t::CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING } else { sys::cudnnPoolingMode_t::CUDNN_POOLING_MAX };
        let (w, s, pd) = ([window as c_int; 2], [stride as c_int; 2], [pad as c_int; 2]);
        check("set pooling", unsafe { cr::set_pooling_descriptor(d, mode, sys::cudnnNanPropagation_t::CUDNN_NOT_PROPAGATE_NAN, 2, &w, &pd, &s) })?;
        Ok(p)
    }
}

impl Drop for Pooling {
    fn drop(&mut self) {
        unsafe { sys::cudnnDestroyPoolingDescriptor(self.0) };
    }
}

/// The forward algorithms cuDNN's heuristics rank for a convolution, best first, with their
/// workspace needs.
pub fn candidate_algorithms(h: &Handle, x: &Tensor, w: &Filter, conv: &Convolution, y: &Tensor) -> Result<Vec<(sys::cudnnConvolutionFwdAlgo_t, usize)>> {
    const COUNT: usize = sys::cudnnConvolutionFwdAlgo_t::CUDNN_CONVOLUTION_FWD_ALGO_COUNT as usize;
    let mut perf: [std::mem::MaybeUninit<sys::cudnnConvolutionFwdAlgoPerf_t>; COUNT] = [const { std::mem::MaybeUninit::uninit() }; COUNT];
    let mut returned: c_int = 0;
    check("get forward algorithms", unsafe { cr::get_convolution_forward_algorithm(h.0, x.0, w.0, conv.0, y.0, COUNT as c_int, &mut returned, perf.as_mut_ptr() as *mut _) })?;
    Ok(perf[..returned as usize]
        .iter()
        .map(|p| unsafe { p.assume_init_read() })
        .filter(|p| p.status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS)
        .map(|p| (p.algo, p.memory))
        .collect())
}

pub fn workspace_size(h: &Handle, x: &Tensor, w: &Filter, conv: &Convolution, y: &Tensor, algo: sys::cudnnConvolutionFwdAlgo_t) -> Result<usize> {
    check("workspace size", unsafe { cr::get_convolution_forward_workspace_size(h.0, x.0, w.0, conv.0, y.0, algo) })
}

/// The descriptors and pointers of one fused convolution:
/// `y = act(alphas.0 * conv(x, w) + alphas.1 * z + bias)`.
pub struct FusedConv<'a> {
    pub x: (&'a Tensor, u64),
    pub w: (&'a Filter, u64),
    pub conv: &'a Convolution,
    pub act: &'a Activation,
    pub bias: (&'a Tensor, u64),
    /// The residual input, or None (then `y` is passed as z, with alphas.1 zero, as cuDNN allows).
    pub z: Option<u64>,
    pub y: (&'a Tensor, u64),
    pub alphas: (f32, f32),
}

impl FusedConv<'_> {
    /// # Safety
    /// Pointers must be device memory of the shapes the descriptors say, on the handle's device.
    pub unsafe fn launch(&self, h: &Handle, algo: sys::cudnnConvolutionFwdAlgo_t, workspace: (u64, usize)) -> Result<()> {
        let (alpha1, alpha2) = self.alphas;
        let z = self.z.unwrap_or(self.y.1);
        check("fused convolution", unsafe {
            cr::convolution_bias_activation_forward(
                h.0,
                &alpha1 as *const f32 as *const _,
                self.x.0.0,
                self.x.1 as *const _,
                self.w.0.0,
                self.w.1 as *const _,
                self.conv.0,
                algo,
                workspace.0 as *mut _,
                workspace.1,
                &alpha2 as *const f32 as *const _,
                self.y.0.0,
                z as *const _,
                self.bias.0.0,
                self.bias.1 as *const _,
                self.act.0,
                self.y.0.0,
                self.y.1 as *mut _,
            )
        })
    }
}

/// # Safety
/// As [`FusedConv::launch`].
pub unsafe fn pool(h: &Handle, p: &Pooling, x: (&Tensor, u64), y: (&Tensor, u64)) -> Result<()> {
    let (alpha, beta) = (1.0f32, 0.0f32);
    check("pooling", unsafe { cr::pooling_forward(h.0, p.0, &alpha as *const f32 as *const _, x.0.0, x.1 as *const _, &beta as *const f32 as *const _, y.0.0, y.1 as *mut _) })
}

pub fn version() -> usize {
    cr::get_version()
}
