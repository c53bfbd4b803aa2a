//! The checked layer: cuDNN's backend API through cudarc's `sys` bindings (cudarc has no result or
//! safe layer for it). Every status becomes a [`GraphError`] that names the call and carries
//! cuDNN's own reason (`cudnnGetLastErrorString`); descriptors are owned values destroyed on drop.

use super::error::GraphError;
use super::lowering::{Attr, AttrValue, Backend, DescriptorKind};
use crate::engines::gpu::cudnn::Handle;
use cudarc::cudnn::{result as cr, sys};
use std::ffi::{CStr, c_void};
use std::ptr;
use std::sync::OnceLock;

use sys::cudnnBackendAttributeType_t as T;

/// The loaded cuDNN's version (`cudnnGetVersion`, 90100 for 9.1.0), read once; an error below 9.0,
/// whose backend API lacks what this layer uses (`cudnnGetLastErrorString` among it).
pub fn cudnn_version() -> Result<usize, GraphError> {
    static VERSION: OnceLock<usize> = OnceLock::new();
    let found = *VERSION.get_or_init(cr::get_version);
    if found < 90000 {
        return Err(GraphError::CudnnTooOld { found });
    }
    Ok(found)
}

/// cuDNN's explanation of the last error of this thread.
fn last_error() -> String {
    let mut message = [0u8; 1024];
    // SAFETY: cuDNN writes at most `message.len()` bytes, NUL included; only called after a
    // descriptor exists, so after `cudnn_version` found a cuDNN that has this function.
    unsafe { sys::cudnnGetLastErrorString(message.as_mut_ptr().cast(), message.len()) };
    let text = CStr::from_bytes_until_nul(&message).map_or_else(|_| String::from_utf8_lossy(&message).into_owned(), |s| s.to_string_lossy().into_owned());
    if text.is_empty() { "cuDNN gave no reason".into() } else { text }
}

fn check(status: sys::cudnnStatus_t, call: impl FnOnce() -> String) -> Result<(), GraphError> {
    if status == sys::cudnnStatus_t::CUDNN_STATUS_SUCCESS {
        return Ok(());
    }
    let (call, message) = (call(), last_error());
    match status as u32 {
        3000..=3999 => Err(GraphError::NotSupported { call, status, message }),
        _ => Err(GraphError::Cudnn { call, status, message }),
    }
}

/// A backend descriptor, destroyed on drop.
#[derive(Debug)]
pub struct Descriptor {
    raw: sys::cudnnBackendDescriptor_t,
    kind: DescriptorKind,
}

// SAFETY: a descriptor is a heap object of cuDNN's with no thread affinity. Shared references only
// reach cuDNN calls that read a finalized descriptor (plans, executions, attribute reads), and
// cuDNN is thread-safe except for a handle used by two threads at once (cuDNN Developer Guide,
// "Thread Safety"); `Handle` is not `Sync`.
unsafe impl Send for Descriptor {}
// SAFETY: as above.
unsafe impl Sync for Descriptor {}

impl Descriptor {
    pub fn new(kind: DescriptorKind) -> Result<Descriptor, GraphError> {
        cudnn_version()?;
        let mut raw = ptr::null_mut();
        // SAFETY: cuDNN writes the new descriptor's address to `raw`.
        check(unsafe { sys::cudnnBackendCreateDescriptor(kind, &mut raw) }, || format!("creating a {kind:?}"))?;
        Ok(Descriptor { raw, kind })
    }

    /// Fills the pre-created descriptors `into` with the elements of `attr` (descriptors of their
    /// kind), and returns how many cuDNN filled.
    fn fill(&self, attr: Attr, into: &[Descriptor]) -> Result<usize, GraphError> {
        let mut raw: Vec<_> = into.iter().map(|d| d.raw).collect();
        let mut filled = 0i64;
        // SAFETY: `raw` holds `raw.len()` live descriptors (owned by `into`, borrowed for the call),
        // which cuDNN fills in place; it writes their count to `filled`.
        let status = unsafe { sys::cudnnBackendGetAttribute(self.raw, attr, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, raw.len() as i64, &mut filled, raw.as_mut_ptr().cast()) };
        check(status, || format!("reading {attr:?} of a {:?}", self.kind))?;
        Ok(filled as usize)
    }

    /// The one descriptor `attr` holds, read into a new descriptor of `kind`.
    pub fn get_descriptor(&self, attr: Attr, kind: DescriptorKind) -> Result<Descriptor, GraphError> {
        let found = Descriptor::new(kind)?;
        self.fill(attr, std::slice::from_ref(&found))?;
        Ok(found)
    }

    /// Every descriptor `attr` holds, read into new descriptors of `kind`.
    pub fn get_descriptors(&self, attr: Attr, kind: DescriptorKind) -> Result<Vec<Descriptor>, GraphError> {
        let mut count = 0i64;
        // SAFETY: a count query: no elements requested, so cuDNN writes only the count.
        let status = unsafe { sys::cudnnBackendGetAttribute(self.raw, attr, T::CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &mut count, ptr::null_mut()) };
        check(status, || format!("counting {attr:?} of a {:?}", self.kind))?;
        let mut found = (0..count).map(|_| Descriptor::new(kind)).collect::<Result<Vec<_>, _>>()?;
        let filled = self.fill(attr, &found)?;
        found.truncate(filled);
        Ok(found)
    }

    pub fn get_int64(&self, attr: Attr) -> Result<i64, GraphError> {
        let (mut value, mut count) = (0i64, 0i64);
        // SAFETY: room for the one INT64 requested.
        let status = unsafe { sys::cudnnBackendGetAttribute(self.raw, attr, T::CUDNN_TYPE_INT64, 1, &mut count, ptr::from_mut(&mut value).cast()) };
        check(status, || format!("reading {attr:?} of a {:?}", self.kind))?;
        Ok(value)
    }

    pub fn get_chars(&self, attr: Attr) -> Result<Vec<u8>, GraphError> {
        let mut count = 0i64;
        let what = || format!("reading {attr:?} of a {:?}", self.kind);
        // SAFETY: a count query: no elements requested, so cuDNN writes only the count.
        check(unsafe { sys::cudnnBackendGetAttribute(self.raw, attr, T::CUDNN_TYPE_CHAR, 0, &mut count, ptr::null_mut()) }, what)?;
        let mut chars = vec![0u8; count as usize];
        // SAFETY: room for the `count` chars requested.
        check(unsafe { sys::cudnnBackendGetAttribute(self.raw, attr, T::CUDNN_TYPE_CHAR, count, &mut count, chars.as_mut_ptr().cast()) }, what)?;
        chars.truncate(count as usize);
        Ok(chars)
    }
}

impl Drop for Descriptor {
    fn drop(&mut self) {
        // SAFETY: created in `new`, destroyed once, here; descriptors that refer to this one are
        // dropped first (their owners drop them so: `Lowered`, `ExecutionPlan`).
        unsafe { sys::cudnnBackendDestroyDescriptor(self.raw) };
    }
}

/// The real [`Backend`]: cuDNN's calls, on a handle (which operation graphs and plans record).
pub struct Cudnn<'h> {
    handle: &'h Handle,
}

impl<'h> Cudnn<'h> {
    pub fn new(handle: &'h Handle) -> Cudnn<'h> {
        Cudnn { handle }
    }

    /// Enqueues `plan` on the handle's stream with the tensors and workspace of `variant_pack`.
    ///
    /// # Safety
    /// The variant pack's addresses must be device memory of the handle's context holding what the
    /// plan's tensors of those uids describe, its workspace at least the plan's workspace size, and
    /// all of it must stay allocated until the work has run.
    pub unsafe fn execute(&self, plan: &Descriptor, variant_pack: &Descriptor) -> Result<(), GraphError> {
        // SAFETY: the handle and both finalized descriptors are live (borrowed); the memory is the
        // caller's contract.
        check(unsafe { sys::cudnnBackendExecute(self.handle.raw(), plan.raw, variant_pack.raw) }, || "executing a plan".into())
    }
}

impl Backend for Cudnn<'_> {
    type Descriptor = Descriptor;

    fn create(&mut self, kind: DescriptorKind) -> Result<Descriptor, GraphError> {
        Descriptor::new(kind)
    }

    /// Each value as cuDNN's attribute type, element count and element array.
    fn set(&mut self, d: &Descriptor, attr: Attr, value: AttrValue<&Descriptor>) -> Result<(), GraphError> {
        let handle = self.handle.raw();
        let descriptors: Vec<sys::cudnnBackendDescriptor_t>;
        let (kind, count, elements): (_, usize, *const c_void) = match &value {
            AttrValue::Int64s(v) => (T::CUDNN_TYPE_INT64, v.len(), v.as_ptr().cast()),
            AttrValue::Float(v) => (T::CUDNN_TYPE_FLOAT, 1, ptr::from_ref(v).cast()),
            // A Rust bool is C's: one byte, 0 or 1.
            AttrValue::Bool(v) => (T::CUDNN_TYPE_BOOLEAN, 1, ptr::from_ref(v).cast()),
            // cudarc's enums are `repr(u32)`, the 4-byte C enums cuDNN reads.
            AttrValue::DataType(v) => (T::CUDNN_TYPE_DATA_TYPE, 1, ptr::from_ref(v).cast()),
            AttrValue::PointwiseMode(v) => (T::CUDNN_TYPE_POINTWISE_MODE, 1, ptr::from_ref(v).cast()),
            AttrValue::ConvolutionMode(v) => (T::CUDNN_TYPE_CONVOLUTION_MODE, 1, ptr::from_ref(v).cast()),
            AttrValue::HeurMode(v) => (T::CUDNN_TYPE_HEUR_MODE, 1, ptr::from_ref(v).cast()),
            AttrValue::Descriptors(v) => {
                descriptors = v.iter().map(|d| d.raw).collect();
                (T::CUDNN_TYPE_BACKEND_DESCRIPTOR, descriptors.len(), descriptors.as_ptr().cast())
            }
            AttrValue::Handle => (T::CUDNN_TYPE_HANDLE, 1, ptr::from_ref(&handle).cast()),
            AttrValue::Pointers(v) => (T::CUDNN_TYPE_VOID_PTR, v.len(), v.as_ptr().cast()),
            AttrValue::Chars(v) => (T::CUDNN_TYPE_CHAR, v.len(), v.as_ptr().cast()),
        };
        // SAFETY: `elements` points to `count` elements of the type `kind` names (above), alive
        // until the call returns (cuDNN copies them); the descriptors named are live (borrowed).
        let status = unsafe { sys::cudnnBackendSetAttribute(d.raw, attr, kind, count as i64, elements) };
        check(status, || format!("setting {attr:?} ({kind:?} x{count}) on a {:?}", d.kind))
    }

    fn finalize(&mut self, d: &Descriptor) -> Result<(), GraphError> {
        // SAFETY: a live descriptor (borrowed).
        check(unsafe { sys::cudnnBackendFinalize(d.raw) }, || format!("finalizing a {:?}", d.kind))
    }
}
