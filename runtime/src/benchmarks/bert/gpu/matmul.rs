//! The linears through cuBLASLt: `y = x W^T + b`, optionally GELU, on fp16 row-major activations
//! `[tokens, width]` with fp32 accumulation, the bias and GELU fused into the product's epilogue.
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
    /// A column-major fp16 matrix of `rows` x `cols`, leading dimension `rows`.
    fn new(rows: usize, cols: usize) -> Result<Layout> {
        check("matrix layout", lt::create_matrix_layout(sys::cudaDataType_t::CUDA_R_16F, rows as u64, cols as u64, rows as i64)).map(Layout)
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here.
        unsafe { lt::destroy_matrix_layout(self.0) }.ok();
    }
}

/// One linear's product description: weight `[outputs, inputs]` fp16, bias, epilogue.
pub struct Linear {
    desc: sys::cublasLtMatmulDesc_t,
    weight: DevicePtr,
    pub outputs: usize,
    pub inputs: usize,
    epilogue: Epilogue,
}

impl Linear {
    /// # Safety
    /// `weight` must hold `outputs * inputs` fp16 values and `bias` `outputs`, for as long as the
    /// linear is run.
    pub unsafe fn new(weight: DevicePtr, bias: DevicePtr, outputs: usize, inputs: usize, epilogue: Epilogue) -> Result<Linear> {
        let desc = check("matmul descriptor", lt::create_matmul_desc(sys::cublasComputeType_t::CUBLAS_COMPUTE_32F, sys::cudaDataType_t::CUDA_R_32F))?;
        let linear = Linear { desc, weight, outputs, inputs, epilogue };
        // cublasOperation_t's CUBLAS_OP_T (cudarc's cuBLASLt bindings leave the enum out).
        let transposed: i32 = 1;
        let kind = match epilogue {
            Epilogue::Bias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_BIAS,
            Epilogue::GeluBias => sys::cublasLtEpilogue_t::CUBLASLT_EPILOGUE_GELU_BIAS,
        };
        let bias = bias.raw();
        let attributes: [(sys::cublasLtMatmulDescAttributes_t, *const c_void, usize); 3] = [
            (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_TRANSA, (&transposed as *const i32).cast(), size_of::<i32>()),
            (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_EPILOGUE, (&kind as *const sys::cublasLtEpilogue_t).cast(), size_of::<sys::cublasLtEpilogue_t>()),
            (sys::cublasLtMatmulDescAttributes_t::CUBLASLT_MATMUL_DESC_BIAS_POINTER, (&bias as *const u64).cast(), size_of::<u64>()),
        ];
        for (attribute, value, size) in attributes {
            // SAFETY: each value is a live local of the attribute's documented type and size.
            check("matmul attribute", unsafe { lt::set_matmul_desc_attribute(desc, attribute, value, size) })?;
        }
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
    prepared: HashMap<(usize, usize, Epilogue, usize), Prepared>,
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
        let key = (linear.outputs, linear.inputs, linear.epilogue, tokens);
        if !self.prepared.contains_key(&key) {
            // Column-major views of the row-major operands: W^T is `inputs x outputs`
            // (transposed by the descriptor), x is `inputs x tokens`, y is `outputs x tokens`.
            let a = Layout::new(linear.inputs, linear.outputs)?;
            let b = Layout::new(linear.inputs, tokens)?;
            let c = Layout::new(linear.outputs, tokens)?;
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

    /// Enqueues `y = epilogue(x W^T + b)` for `tokens` rows on `stream`.
    ///
    /// # Safety
    /// `x` must hold `tokens * inputs` fp16 values and `y` `tokens * outputs`, until the stream
    /// has run the product; `stream` must belong to the current context.
    pub unsafe fn run(&mut self, linear: &Linear, x: DevicePtr, y: DevicePtr, tokens: usize, stream: cudarc::driver::sys::CUstream) -> Result<()> {
        let workspace = (self.workspace.ptr(), self.workspace.bytes);
        let handle = self.handle;
        let p = self.prepare(linear, tokens)?;
        let (alpha, beta) = (1.0f32, 0.0f32);
        let (a, b, c) = (linear.weight.raw() as *const c_void, x.raw() as *const c_void, y.raw() as *mut c_void);
        // SAFETY: the operands hold what the layouts describe (the caller's contract and
        // `Linear::new`'s); alpha and beta are f32, the descriptor's scale type; the workspace is
        // this handle's own, of the size the algorithm was chosen for.
        let r = unsafe {
            lt::matmul(
                handle,
                linear.desc,
                (&alpha as *const f32).cast(),
                (&beta as *const f32).cast(),
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
