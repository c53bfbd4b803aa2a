//! cuDNN 9's backend (graph) API, for the fused kernels the legacy API cannot express: an int8
//! convolution with its whole epilogue (per-channel scale, bias, residual, ReLU, int8 out) and a
//! matmul with bias and GELU. docs/cudnn-graph-api.md holds the facts this follows.
//!
//! Layered as cudarc is (sys, result, safe), so that what cuDNN is asked can be tested without it:
//! - [`spec`]: the pure description, typed tensors and operations, the two patterns, and the
//!   checks of cuDNN's rules that otherwise surface only as a bare NOT_SUPPORTED. No FFI.
//! - [`lowering`]: the description as Create / SetAttribute / Finalize calls on a [`Backend`]
//!   trait; CI checks the exact sequence with a recording backend.
//! - [`checked`]: the real backend, cudarc's `sys` calls with statuses as [`GraphError`]s carrying
//!   cuDNN's reason, and descriptors destroyed on drop.
//! - [`plan`]: the safe layer: graphs on a handle, plans from heuristics (autotuned if wanted),
//!   plans to and from cuDNN's JSON for our plan files, and execution.
//! - [`self_check`]: both patterns run on a GPU against CPU references, timed (opt-in).
//!
//! [`Backend`]: lowering::Backend

pub mod checked;
pub mod error;
pub mod lowering;
pub mod plan;
pub mod self_check;
pub mod spec;

pub use error::GraphError;
