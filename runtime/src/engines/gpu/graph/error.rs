//! The graph layer's error: what failed, cuDNN's own reason where it gave one, and what to do.

use super::spec::SpecError;
use cudarc::cudnn::sys::cudnnStatus_t;
use cudarc::driver::DriverError;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// The description is invalid; nothing was asked of cuDNN.
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("the loaded cuDNN is version {found}; the graph layer needs cuDNN 9.0 or newer: install cuDNN 9 (libcudnn.so.9) or put its directory first in LD_LIBRARY_PATH")]
    CudnnTooOld { found: usize },
    /// A status of 3000..3999: cuDNN has no engine, or this engine has no kernel, for what was asked.
    #[error("cuDNN does not support this: {call} returned {status:?} ({message}); {}", not_supported_hint(*status))]
    NotSupported { call: String, status: cudnnStatus_t, message: String },
    #[error("cuDNN failed: {call} returned {status:?} ({message})")]
    Cudnn { call: String, status: cudnnStatus_t, message: String },
    #[error(
        "none of the {configs} engine configs cuDNN's heuristics (modes A, then FALLBACK) offered makes a plan for this graph within {workspace_limit} bytes of workspace{}",
        rejected.iter().map(|r| format!("\n  {r}")).collect::<String>()
    )]
    NoEngine { configs: usize, workspace_limit: usize, rejected: Vec<String> },
    #[error("the plan needs {needed} bytes of workspace, {given} were given")]
    WorkspaceTooSmall { needed: usize, given: usize },
    #[error(
        "the plan was made by cuDNN {plan_cudnn} on {plan_gpu}, this is cuDNN {cudnn} on {gpu}: rebuild it (cuDNN loads plans only on the GPU model and version that made them)"
    )]
    StalePlan { plan_cudnn: usize, plan_gpu: String, cudnn: usize, gpu: String },
    /// Device memory, streams, events (the GPU self-check).
    #[error("CUDA: {0}")]
    Device(String),
    /// A call of the device layer (libraries, memory, cuDNN's legacy API, our kernels).
    #[error("CUDA: {0}")]
    DeviceLayer(#[from] super::super::device::DeviceError),
}

impl GraphError {
    /// The reason alone, without the advice: for lists of rejected engines.
    pub fn reason(&self) -> String {
        match self {
            GraphError::NotSupported { call, status, message } | GraphError::Cudnn { call, status, message } => format!("{call} returned {status:?} ({message})"),
            other => other.to_string(),
        }
    }
}

/// Maps a CUDA driver error of `what` (a step: "allocate the workspace").
pub fn cuda(what: &str) -> impl FnOnce(DriverError) -> GraphError + '_ {
    move |e| GraphError::Device(format!("{what}: {e:?}"))
}

fn not_supported_hint(status: cudnnStatus_t) -> &'static str {
    match status {
        cudnnStatus_t::CUDNN_STATUS_NOT_SUPPORTED_RUNTIME_PREREQUISITE_MISSING => {
            "cuDNN's runtime-compiled engines need NVRTC (libnvrtc.so) and some need cuBLASLt (libcublasLt.so): add their directory to LD_LIBRARY_PATH"
        }
        cudnnStatus_t::CUDNN_STATUS_NOT_SUPPORTED_ARCH_MISMATCH => "this cuDNN has no kernels for this GPU: install a cuDNN built for it",
        _ => "other engine configs may run it; otherwise change the graph's shapes, types or layouts (docs/cudnn-graph-api.md §2 and §5 list what the fused engines take)",
    }
}
