//! The linears through cuBLASLt: `y = x W^T + b`, optionally GELU, on fp16 row-major activations
//! `[tokens, width]` with fp32 accumulation, the bias and GELU fused into the product's epilogue;
//! or, for int8 plans, `acc = x W^T` of int8 operands into int32 (cuBLASLt's IMMA path: A
//! transposed, B not, K contiguous in both, dimensions multiples of 4), which our epilogue kernel
//! (`dequantize` in `kernels.cu`) scales, biases and activates.
//!
//! Written over cudarc's `cublaslt::result` layer rather than its safe `Matmul`: that one asks
//! cuBLASLt's heuristic for an algorithm on every call and takes `CudaSlice`s, where the engine
//! owns raw buffers and runs ~100 products a batch on a few token counts. Here descriptors are
//! made once per linear, and layouts and the chosen algorithm once per (shape, token count).

use crate::engines::gpu::device::{DeviceBuffer, DeviceError, DevicePtr, Result};
use cudarc::cublaslt::{result as lt, sys};
use std::collections::HashMap;
use std::ffi::c_void;

fn check<T>(what: &str, r: std::result::Result<T, lt::CublasError>) -> Result<T> {
    r.map_err(|source| DeviceError::CublasLt { what: what.to_string(), source })
}

/// What the product's epilogue adds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Epilogue {
    Bias,
    /// Bias, then cuBLASLt's GELU (the tanh form).
    GeluBias,
}

/// What a product computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Product {
    /// fp16 operands and output, fp32 accumulation, cuBLASLt's epilogue.
    Fp16(Epilogue),
    /// int8 operands, int32 accumulation and output, no epilogue.
    Int8,
}

impl Product {
    /// Operand, output and compute types, and the scale type (alpha and beta).
    fn types(self) -> (sys::cudaDataType_t, sys::cudaDataType_t, sys::cublasComputeType_t, sys::cudaDataType_t) {
        use sys::cudaDataType_t::{CUDA_R_8I, CUDA_R_16F, CUDA_R_32F, CUDA_R_32I};
        match self {
            Product::Fp16(_) => (CUDA_R_16F, CUDA_R_16F, sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, CUDA_R_32F),
            Product::Int8 => (CUDA_R_8I, CUDA_R_32I, sys::cublasComputeType_t::CUBLAS_COMPUTE_32I, CUDA_R_32I),
        }
    }
}

/// cuBLASLt's version, for plan keys.
pub fn version() -> usize {
    // SAFETY: reads a number; the library's presence was checked by `require_cublaslt`.
    unsafe { sys::cublasLtGetVersion() }
}

/// Fails with a message (where cudarc would panic) when cuBLASLt cannot be loaded.
pub fn require_cublaslt() -> Result<()> {
    // SAFETY: only loads the library by its usual names (see `device::require_cuda`).
    if unsafe { sys::is_culib_present() } { Ok(()) } else { Err(DeviceError::CublasLtMissing) }
}

struct Layout(sys::cublasLtMatrixLayout_t);

impl Layout {
    /// A column-major matrix of `rows` x `cols`, leading dimension `rows`.
    fn new(dtype: sys::cudaDataType_t, rows: usize, cols: usize) -> Result<Layout> {
        check("matrix layout", lt::create_matrix_layout(dtype, rows as u64, cols as u64, rows as i64)).map(Layout)
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here.
        unsafe { lt::destroy_matrix_layout(self.0) }.ok();
    }
}

/// One linear's product description: weight `[outputs, inputs]` (fp16, or int8), what it computes.
pub struct Linear {
    desc: sys::cublasLtMatmulDesc_t,
    weight: DevicePtr,
    pub outputs: usize,
    pub inputs: usize,
    product: Product,
}

impl Linear {
    /// # Safety
    /// `weight` must hold `outputs * inputs` fp16 values and `bias` `outputs`, for as long as the
    /// linear is run.
    pub unsafe fn new(weight: DevicePtr, bias: DevicePtr, outputs: usize, inputs: usize, epilogue: Epilogue) -> Result<Linear> {
        let linear = Linear::described(weight, outputs, inputs, Product::Fp16(epilogue))?;
        let kind = match epilogue {
            Epilogue::Bias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            Epilogue::GeluBias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
        };
        let bias = bias.raw();
        let attributes: [(sys::cublasLtMatmulDescAttributes_t, *const c_void, usize); 2] = [
            (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE, (&kind as *const sys::cublasLtEpilogue_t).cast(), size_of::<sys::cublasLtEpilogue_t>()),
            (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER, (&bias as *const u64).cast(), size_of::<u64>()),
        ];
        for (attribute, value, size) in attributes {
            // SAFETY: each value is a live local of the attribute's documented type and size.
            check("matmul attribute", unsafe { lt::set_matmul_desc_attribute(linear.desc, attribute, value, size) })?;
        }
        Ok(linear)
    }

    /// An int8 linear: `[outputs, inputs]` int8 weight, int32 output, no epilogue. Shapes
    /// cuBLASLt's int8 path cannot take (not multiples of 4) fail when first run, naming them.
    ///
    /// # Safety
    /// `weight` must hold `outputs * inputs` int8 values for as long as the linear is run.
    pub unsafe fn int8(weight: DevicePtr, outputs: usize, inputs: usize) -> Result<Linear> {
        Linear::described(weight, outputs, inputs, Product::Int8)
    }

    /// The descriptor with A transposed (the weight's rows are its outputs).
    fn described(weight: DevicePtr, outputs: usize, inputs: usize, product: Product) -> Result<Linear> {
        let (_, _, compute, scale) = product.types();
        let desc = check("matmul descriptor", lt::create_matmul_desc(compute, scale))?;
        let linear = Linear { desc, weight, outputs, inputs, product };
        // cublasOperation_t's CUBLAS_OP_T (cudarc's cuBLASLt bindings leave the enum out).
        let transposed: i32 = 1;
        let attribute = sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA;
        // SAFETY: the value is a live i32, the attribute's documented type.
        check("matmul attribute", unsafe { lt::set_matmul_desc_attribute(desc, attribute, (&transposed as *const i32).cast(), size_of::<i32>()) })?;
        Ok(linear)
    }
}

impl Drop for Linear {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here.
        unsafe { lt::destroy_matmul_desc(self.desc) }.ok();
    }
}

/// Layouts and algorithm of one product shape at one token count.
struct Prepared {
    a: Layout,
    b: Layout,
    c: Layout,
    algo: sys::cublasLtMatmulAlgo_t,
}

/// A cuBLASLt handle with its workspace and what it has prepared, for one stream's use.
pub struct Matmuls {
    handle: sys::cublasLtHandle_t,
    workspace: DeviceBuffer,
    prepared: HashMap<(usize, usize, Product, usize), Prepared>,
}

// SAFETY: used by one thread at a time (each engine slot owns one); cuBLASLt handles may move
// between threads.
unsafe impl Send for Matmuls {}

impl Matmuls {
    pub fn new(workspace_bytes: usize) -> Result<Matmuls> {
        let handle = check("create handle", lt::create_handle())?;
        Ok(Matmuls { handle, workspace: DeviceBuffer::new(workspace_bytes)?, prepared: HashMap::new() })
    }

    fn prepare(&mut self, linear: &Linear, tokens: usize) -> Result<&Prepared> {
        let key = (linear.outputs, linear.inputs, linear.product, tokens);
        if !self.prepared.contains_key(&key) {
            // Column-major views of the row-major operands: W^T is `inputs x outputs`
            // (transposed by the descriptor), x is `inputs x tokens`, y is `outputs x tokens`.
            let (operands, output, _, _) = linear.product.types();
            let a = Layout::new(operands, linear.inputs, linear.outputs)?;
            let b = Layout::new(operands, linear.inputs, tokens)?;
            let c = Layout::new(output, linear.outputs, tokens)?;
            let pref = check("matmul preference", lt::create_matmul_pref())?;
            let bytes = self.workspace.bytes;
            // SAFETY: `pref` is live; the value is a usize, as the attribute documents.
            let set = unsafe {
                lt::set_matmul_pref_attribute(
                    pref,
                    sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                    (&bytes as *const usize).cast(),
                    size_of::<usize>(),
                )
            };
            // SAFETY: every descriptor is live; the heuristic only reads them.
            let heuristic = set.and_then(|_| unsafe { lt::get_matmul_algo_heuristic(self.handle, linear.desc, a.0, b.0, c.0, c.0, pref) });
            // SAFETY: created above, destroyed once, here.
            unsafe { lt::destroy_matmul_pref(pref) }.ok();
            let heuristic = heuristic.map_err(|source| DeviceError::CublasLtNoAlgorithm { inputs: linear.inputs, outputs: linear.outputs, tokens, source })?;
            self.prepared.insert(key, Prepared { a, b, c, algo: heuristic.algo });
        }
        Ok(&self.prepared[&key])
    }

    /// Enqueues `y = epilogue(x W^T + b)` (fp16) or `y = x W^T` (int8 into int32) for `tokens`
    /// rows on `stream`.
    ///
    /// # Safety
    /// `x` must hold `tokens * inputs` values of the operand type and `y` `tokens * outputs` of
    /// the output type, until the stream has run the product; `stream` must belong to the current
    /// context.
    pub unsafe fn run(&mut self, linear: &Linear, x: DevicePtr, y: DevicePtr, tokens: usize, stream: cudarc::driver::sys::CUstream) -> Result<()> {
        let workspace = (self.workspace.ptr(), self.workspace.bytes);
        let handle = self.handle;
        let p = self.prepare(linear, tokens)?;
        // One and zero in the scale type: f32 and i32 share their bit patterns' size.
        let (alpha, beta): (u32, u32) = match linear.product {
            Product::Fp16(_) => (1.0f32.to_bits(), 0),
            Product::Int8 => (1, 0),
        };
        let (a, b, c) = (linear.weight.raw() as *const c_void, x.raw() as *const c_void, y.raw() as *mut c_void);
        // SAFETY: the operands hold what the layouts describe (the caller's contract and
        // `Linear::new`'s); alpha and beta are f32, the descriptor's scale type; the workspace is
        // this handle's own, of the size the algorithm was chosen for.
        // alpha and beta hold the descriptor's scale type's bits.
        let r = unsafe {
            lt::matmul(
                handle,
                linear.desc,
                (&alpha as *const u32).cast(),
                (&beta as *const u32).cast(),
                a,
                p.a.0,
                b,
                p.b.0,
                c,
                p.c.0,
                c,
                p.c.0,
                &p.algo,
                workspace.0.raw() as *mut c_void,
                workspace.1,
                stream as sys::cudaStream_t,
            )
        };
        check("matmul", r)
    }
}

impl Drop for Matmuls {
    fn drop(&mut self) {
        self.prepared.clear();
        // SAFETY: created in `new`, destroyed once, here, after everything prepared with it.
        unsafe { lt::destroy_handle(self.handle) }.ok();
    }
}
