//! The device layer under the GPU engines, in cudarc's style: checked driver calls ([`cu`]),
//! device memory ([`DevicePtr`], [`DeviceBuffer`]), pinned host memory ([`PinnedBuffer`]), runs of
//! one network from several streams in turn ([`InTurn`]), NVRTC
//! compilation for the GPU at hand ([`compile_for`]) and what is known of the GPUs before anything
//! runs ([`require_cuda`], [`device_identity`], [`device_count`]). Executors and kernels sit above
//! it; it imports nothing of them.

use cudarc::driver::{CudaContext, CudaEvent, CudaStream, result as dr, sys as ds};
use cudarc::nvrtc::{CompileError, CompileOptions, Ptx};
use std::sync::{Arc, Mutex};

/// The device layer's error: which call failed and the library's own error, or which libraries
/// are missing. Messages render the library error's `Debug` form (its status name).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeviceError {
    /// A CUDA driver call (`what`: "open device", "upload weights") failed.
    #[error("CUDA {what}: {source:?}")]
    Driver { what: String, source: dr::DriverError },
    /// Device memory could not be allocated.
    #[error("CUDA allocate device memory: {source:?} ({bytes} bytes)")]
    Allocate { bytes: usize, source: dr::DriverError },
    /// The context could not be bound to the calling thread.
    #[error("{0:?}")]
    Bind(#[source] dr::DriverError),
    /// NVRTC could not compile `what` (the error holds NVRTC's log).
    #[error("NVRTC ({what}): {source:?}")]
    Nvrtc { what: String, source: CompileError },
    /// A cuDNN call of the legacy API (`cudnn`) failed.
    #[error("cuDNN {what}: {source:?}")]
    Cudnn { what: String, source: cudarc::cudnn::result::CudnnError },
    /// A cuBLASLt call failed.
    #[error("cuBLASLt {what}: {source:?}")]
    CublasLt { what: String, source: cudarc::cublaslt::result::CublasError },
    /// cuBLASLt (BERT's linears, the convnet engine's products) cannot be loaded.
    #[error(
        "the GPU engine cannot load cuBLASLt (libcublasLt.so.13; BERT's linears and YOLO's attention run on it): install the CUDA toolkit's cuBLAS or add its directory to LD_LIBRARY_PATH"
    )]
    CublasLtMissing,
    /// cuBLASLt's heuristic offers no algorithm for a product of this shape.
    #[error("cuBLASLt has no algorithm for {shape}: {source:?}")]
    CublasLtNoAlgorithm { shape: String, source: cudarc::cublaslt::result::CublasError },
    /// The CUDA driver, cuDNN or NVRTC cannot be loaded.
    #[error(
        "the GPU engine cannot load {}: install them or add their directory to LD_LIBRARY_PATH (this machine may have no GPU; CPU-only systems use engine = \"cpu\")",
        missing.join(", ")
    )]
    LibrariesMissing { missing: Vec<&'static str> },
    /// Capturing a CUDA graph gave none.
    #[error("CUDA graph capture produced no graph")]
    EmptyCapture,
    /// A kernel launch needs more blocks than a grid holds.
    #[error("{blocks} blocks exceed a launch")]
    LaunchTooLarge { blocks: u64 },
    /// The system's config names more GPUs than this machine has.
    #[error("the system has {devices} GPUs but this machine shows {present}")]
    TooFewGpus { devices: usize, present: usize },
}

pub type Result<T> = std::result::Result<T, DeviceError>;

pub fn cu<T>(what: &str, r: std::result::Result<T, dr::DriverError>) -> Result<T> {
    r.map_err(|source| DeviceError::Driver { what: what.to_string(), source })
}

/// One GPU's network runs from several slots (streams), one after another on the GPU: each waits
/// there, not on the host, for the run enqueued before it. Runs enqueued at once would share the
/// SMs and finish together, and then every slot's host work (copies, NMS) would fall into the same
/// gap with the GPU idle; in turn, one slot's host work overlaps the next slot's run.
#[derive(Default)]
pub struct InTurn {
    last: Mutex<Option<Arc<CudaEvent>>>,
}

impl InTurn {
    /// Enqueues `run` on `stream` after the run enqueued before it, and records `done` (the
    /// slot's own event) after it.
    pub fn run<E: From<DeviceError>>(&self, stream: &CudaStream, done: &Arc<CudaEvent>, run: impl FnOnce() -> std::result::Result<(), E>) -> std::result::Result<(), E> {
        let mut last = self.last.lock().expect("runs in turn");
        if let Some(previous) = last.as_ref() {
            cu("wait for the previous run", stream.wait(previous))?;
        }
        run()?;
        cu("record the run", done.record(stream))?;
        *last = Some(done.clone());
        Ok(())
    }
}

/// Binds `ctx` to the calling thread.
pub fn bind(ctx: &CudaContext) -> Result<()> {
    ctx.bind_to_thread().map_err(DeviceError::Bind)
}

/// `source` (`what`, in errors) compiled by NVRTC for a GPU of compute capability `(major, minor)`,
/// with `defines` (`-DNAME=value` options).
pub fn compile_for(what: &str, source: &str, (major, minor): (i32, i32), defines: Vec<String>) -> Result<Ptx> {
    let mut options = defines;
    options.push(format!("--gpu-architecture=compute_{major}{minor}"));
    cudarc::nvrtc::compile_ptx_with_opts(source, CompileOptions { options, ..Default::default() }).map_err(|source| DeviceError::Nvrtc { what: what.to_string(), source })
}

/// An address in device memory (the driver's `CUdeviceptr`). It borrows nothing, so the calls
/// that read or write through one are `unsafe`: their callers vouch that the memory is there.
#[derive(Clone, Copy, Debug)]
pub struct DevicePtr(ds::CUdeviceptr);

impl DevicePtr {
    /// The address `bytes` further on.
    pub fn offset(self, bytes: usize) -> DevicePtr {
        DevicePtr(self.0 + bytes as u64)
    }

    /// The raw address, for driver calls and kernel arguments: the FFI boundary, and only there.
    pub fn raw(self) -> ds::CUdeviceptr {
        self.0
    }
}

/// Device memory, freed on drop.
pub struct DeviceBuffer {
    ptr: DevicePtr,
    pub bytes: usize,
}

impl DeviceBuffer {
    pub fn new(bytes: usize) -> Result<DeviceBuffer> {
        // SAFETY: the memory is reached only through device addresses, never as Rust values, so
        // its unset contents need to be valid for no type.
        let ptr = unsafe { dr::malloc_sync(bytes.max(256)) }.map_err(|source| DeviceError::Allocate { bytes, source })?;
        Ok(DeviceBuffer { ptr: DevicePtr(ptr), bytes })
    }

    pub fn ptr(&self) -> DevicePtr {
        self.ptr
    }

    /// Copies `data` to `offset` bytes into the buffer, returning when it is there.
    ///
    /// # Panics
    /// If `data` does not fit.
    pub fn upload(&self, offset: usize, data: &[u8]) -> std::result::Result<(), dr::DriverError> {
        assert!(offset + data.len() <= self.bytes, "upload within the buffer");
        // SAFETY: the range is inside this live allocation (checked above); the copy is synchronous,
        // so `data` is read before this returns.
        unsafe { dr::memcpy_htod_sync(self.ptr.offset(offset).raw(), data) }
    }
}

impl Drop for DeviceBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_sync` in `new`, freed once, here; its owners synchronize the
        // work that uses it before they can drop it (a slot every batch, builds every timing).
        unsafe { dr::free_sync(self.ptr.raw()) }.ok();
    }
}

/// Page-locked host memory (copies from it run asynchronously and can be captured in graphs).
pub struct PinnedBuffer {
    ptr: *mut u8,
    pub bytes: usize,
}

// SAFETY: the buffer is plain memory owned by one slot; the slot's owner has exclusive access.
unsafe impl Send for PinnedBuffer {}

impl PinnedBuffer {
    /// `bytes` of zeroed pinned memory (zeroed so that the slices over it are initialised).
    pub fn new(bytes: usize) -> Result<PinnedBuffer> {
        let len = bytes.max(64);
        // SAFETY: the unset contents are overwritten below before anything reads them.
        let ptr = cu("allocate pinned memory", unsafe { dr::malloc_host(len, 0) })? as *mut u8;
        // SAFETY: `ptr` is a fresh allocation of `len` bytes.
        unsafe { ptr.write_bytes(0, len) };
        Ok(PinnedBuffer { ptr, bytes })
    }

    /// The memory's address, for copies the driver makes into it: the FFI boundary, and only there.
    pub fn raw(&self) -> *mut u8 {
        self.ptr
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `bytes` initialised bytes owned by the buffer, borrowed exclusively with it; the
        // GPU touches them only while a batch runs, and a slot's owner reaches them between batches.
        unsafe { std::slice::from_raw_parts_mut(self.ptr, self.bytes) }
    }

    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: as in `as_mut_slice`, borrowed shared with the buffer.
        unsafe { std::slice::from_raw_parts(self.ptr, self.bytes) }
    }

    /// Copies `pieces` one after another into the buffer's start, spread over up to `threads`
    /// threads: one thread copies tens of MB into pinned memory in about as long as a GPU takes to
    /// run them. Every piece but the last has the first's length.
    pub fn fill_from(&mut self, pieces: &[&[u8]], threads: usize) {
        let copy = |to: &mut [u8], from: &[&[u8]]| {
            let mut at = 0;
            for piece in from {
                to[at..at + piece.len()].copy_from_slice(piece);
                at += piece.len();
            }
        };
        let per_thread = pieces.len().div_ceil(threads.max(1)).max(1);
        let stride = per_thread * pieces.first().map_or(0, |p| p.len());
        if per_thread >= pieces.len() || stride == 0 {
            return copy(self.as_mut_slice(), pieces);
        }
        std::thread::scope(|scope| {
            for (to, from) in self.as_mut_slice().chunks_mut(stride).zip(pieces.chunks(per_thread)) {
                scope.spawn(move || copy(to, from));
            }
        });
    }
}

/// Threads for host work over `items` independent items: one per item, at most one per core.
pub fn host_threads(items: usize) -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get()).min(items).max(1)
}

impl Drop for PinnedBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated by `malloc_host` in `new`, freed once, here; no copy to or from it is in
        // flight (its slot synchronizes every batch).
        unsafe { dr::free_host(self.ptr as *mut _) }.ok();
    }
}

/// Fails with a message (where cudarc would panic) when the CUDA driver, cuDNN or NVRTC cannot be
/// loaded: the GPU engine needs all three at run time, and nothing of them at build time.
pub fn require_cuda() -> Result<()> {
    let libraries = [
        // SAFETY: only loads the library by its usual names, calling nothing in it (libloading's
        // contract: the library's initialisers must be sound, as NVIDIA's are trusted to be).
        ("the CUDA driver (libcuda.so)", unsafe { ds::is_culib_present() }),
        // SAFETY: as above.
        ("cuDNN 9 (libcudnn.so.9)", unsafe { cudarc::cudnn::sys::is_culib_present() }),
        // SAFETY: as above.
        ("NVRTC (libnvrtc.so)", unsafe { cudarc::nvrtc::sys::is_culib_present() }),
    ];
    let missing: Vec<&'static str> = libraries.iter().filter(|(_, present)| !present).map(|(name, _)| *name).collect();
    if missing.is_empty() {
        return Ok(());
    }
    Err(DeviceError::LibrariesMissing { missing })
}

/// The GPU's identity for plan keys: name, compute capability, driver version.
pub fn device_identity(ordinal: usize) -> Result<(String, String, i32)> {
    require_cuda()?;
    let ctx = cu("open device", CudaContext::new(ordinal))?;
    let name = cu("device name", ctx.name())?;
    let (major, minor) = cu("compute capability", ctx.compute_capability())?;
    let mut driver = 0;
    // SAFETY: writes one int to `driver`; the driver library is present (`require_cuda`).
    unsafe { ds::cuDriverGetVersion(&mut driver) };
    Ok((name, format!("{major}.{minor}"), driver))
}

pub fn device_count() -> Result<usize> {
    require_cuda()?;
    cu("count devices", CudaContext::device_count()).map(|n| n as usize)
}
