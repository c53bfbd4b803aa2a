//! What the GPU engines' products share over cudarc's `cublaslt::result` layer: the library's
//! presence and version, column-major layouts (strided batches too), a handle with its workspace,
//! the heuristic's algorithm for a product, and the enqueued product. BERT's linears
//! (`benchmarks::bert::gpu::matmul`) and the convnet engine's batched products (YOLO's attention)
//! describe their operands with these.
//!
//! Written over the `result` layer rather than cudarc's safe `Matmul`: that one asks the heuristic
//! on every call and takes `CudaSlice`s, where the engines own raw buffers and run the same few
//! shapes many times, so they prepare descriptors and algorithms once.

use super::device::{DeviceBuffer, DeviceError, DevicePtr, Result};
use cudarc::cublaslt::{result as lt, sys};
use std::ffi::c_void;

fn check<T>(what: &str, r: std::result::Result<T, lt::CublasError>) -> Result<T> {
    r.map_err(|source| DeviceError::CublasLt { what: what.to_string(), source })
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

/// A column-major matrix layout.
pub struct Layout(sys::cublasLtMatrixLayout_t);

impl Layout {
    /// `rows` x `cols`, leading dimension `rows`.
    pub fn new(dtype: sys::cudaDataType_t, rows: usize, cols: usize) -> Result<Layout> {
        check("matrix layout", lt::create_matrix_layout(dtype, rows as u64, cols as u64, rows as i64)).map(Layout)
    }

    /// `count` such matrices, each `stride` elements after the one before.
    pub fn batched(self, count: usize, stride: usize) -> Result<Layout> {
        let (count, stride) = (count as i32, stride as i64);
        use sys::cublasLtMatrixLayoutAttribute_t::{CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET};
        // SAFETY: the layout is live; the values are an i32 and an i64, the attributes' documented types.
        unsafe {
            check("layout batch", lt::set_matrix_layout_attribute(self.0, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, (&count as *const i32).cast(), size_of::<i32>()))?;
            check("layout stride", lt::set_matrix_layout_attribute(self.0, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, (&stride as *const i64).cast(), size_of::<i64>()))?;
        }
        Ok(self)
    }
}

impl Drop for Layout {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here.
        unsafe { lt::destroy_matrix_layout(self.0) }.ok();
    }
}

/// A product's description: compute and scale types, and which operands are transposed.
pub struct Desc(sys::cublasLtMatmulDesc_t);

impl Desc {
    pub fn new(compute: sys::cublasComputeType_t, scale: sys::cudaDataType_t, transpose_a: bool, transpose_b: bool) -> Result<Desc> {
        let desc = Desc(check("matmul descriptor", lt::create_matmul_desc(compute, scale))?);
        // cublasOperation_t's CUBLAS_OP_N and CUBLAS_OP_T (cudarc's cuBLASLt bindings leave the enum out).
        use sys::cublasLtMatmulDescAttributes_t::{CUBLASLT_MATMUL_DESC_TRANSA, CUBLASLT_MATMUL_DESC_TRANSB};
        for (attribute, transposed) in [(CUBLASLT_MATMUL_DESC_TRANSA, transpose_a), (CUBLASLT_MATMUL_DESC_TRANSB, transpose_b)] {
            desc.set(attribute, &i32::from(transposed))?;
        }
        Ok(desc)
    }

    /// Sets `attribute` to `value`, which must be of the attribute's documented type.
    pub fn set<T>(&self, attribute: sys::cublasLtMatmulDescAttributes_t, value: &T) -> Result<()> {
        // SAFETY: the descriptor is live and `value` a live `T` of `size_of::<T>()` bytes; the
        // caller gives the attribute's type.
        check("matmul attribute", unsafe { lt::set_matmul_desc_attribute(self.0, attribute, (value as *const T).cast(), size_of::<T>()) })
    }
}

impl Drop for Desc {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here.
        unsafe { lt::destroy_matmul_desc(self.0) }.ok();
    }
}

/// A cuBLASLt handle and its workspace, for one stream's use.
pub struct Handle {
    handle: sys::cublasLtHandle_t,
    workspace: DeviceBuffer,
}

// SAFETY: used by one thread at a time (each engine slot owns one); cuBLASLt handles may move
// between threads.
unsafe impl Send for Handle {}

impl Handle {
    pub fn new(workspace_bytes: usize) -> Result<Handle> {
        require_cublaslt()?;
        Ok(Handle { handle: check("create handle", lt::create_handle())?, workspace: DeviceBuffer::new(workspace_bytes)? })
    }

    /// The heuristic's first algorithm for `desc` over layouts `a`, `b` and `c` (also the output's)
    /// within the workspace; `shape` names the product in the error.
    pub fn algorithm(&self, desc: &Desc, a: &Layout, b: &Layout, c: &Layout, shape: impl FnOnce() -> String) -> Result<sys::cublasLtMatmulAlgo_t> {
        let pref = check("matmul preference", lt::create_matmul_pref())?;
        let bytes = self.workspace.bytes;
        let attribute = sys::cublasLtMatmulPreferenceAttributes_t::CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES;
        // SAFETY: `pref` is live; the value is a usize, as the attribute documents.
        let set = unsafe { lt::set_matmul_pref_attribute(pref, attribute, (&bytes as *const usize).cast(), size_of::<usize>()) };
        // SAFETY: every descriptor is live; the heuristic only reads them.
        let heuristic = set.and_then(|_| unsafe { lt::get_matmul_algo_heuristic(self.handle, desc.0, a.0, b.0, c.0, c.0, pref) });
        // SAFETY: created above, destroyed once, here.
        unsafe { lt::destroy_matmul_pref(pref) }.ok();
        heuristic.map(|h| h.algo).map_err(|source| DeviceError::CublasLtNoAlgorithm { shape: shape(), source })
    }

    /// Enqueues `c = alpha a b` (beta 0) on `stream`.
    ///
    /// # Safety
    /// `a`, `b` and `c` must hold what their layouts describe until the stream has run the
    /// product; `alpha` must be of the descriptor's scale type; `algo` must come from
    /// [`Handle::algorithm`] for these descriptors; `stream` must belong to the current context.
    #[allow(clippy::too_many_arguments)]
    pub unsafe fn enqueue<S>(
        &self,
        desc: &Desc,
        alpha: &S,
        a: (DevicePtr, &Layout),
        b: (DevicePtr, &Layout),
        c: (DevicePtr, &Layout),
        algo: &sys::cublasLtMatmulAlgo_t,
        stream: cudarc::driver::sys::CUstream,
    ) -> Result<()> {
        // A zero of any scale type: f32, f16 and i32 zeros are all-zero bits.
        let beta = 0u64;
        let out = c.0.raw() as *mut c_void;
        // SAFETY: the caller's contract; the workspace is this handle's, of the size the algorithm
        // was chosen within.
        let r = unsafe {
            lt::matmul(
                self.handle,
                desc.0,
                (alpha as *const S).cast(),
                (&beta as *const u64).cast(),
                a.0.raw() as *const c_void,
                a.1.0,
                b.0.raw() as *const c_void,
                b.1.0,
                out,
                c.1.0,
                out,
                c.1.0,
                algo,
                self.workspace.ptr().raw() as *mut c_void,
                self.workspace.bytes,
                stream as sys::cudaStream_t,
            )
        };
        check("matmul", r)
    }
}

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here; whoever prepared descriptors with it
        // drops them first (they are independent of the handle in cuBLASLt).
        unsafe { lt::destroy_handle(self.handle) }.ok();
    }
}
