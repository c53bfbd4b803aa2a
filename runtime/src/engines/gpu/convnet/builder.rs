//! Building a convnet plan on a GPU: import, time cuDNN's algorithms for every (transposed)
//! convolution at the plan's batch size, and frame the result with its key. Families check the
//! plan against the CPU engine on their own data and write it ([`write`]).

use super::exec::{Convnet, Slot};
use super::import::import;
use super::plan::{self, ConvnetHeader, ConvnetPlan, GpuIdentity};
use crate::engines::gpu::GpuError;
use crate::engines::gpu::device::{self, device_identity};
use crate::engines::gpu::plan::{PlanKey, file_sha256, sha256_hex};
use prost::Message;
use std::path::Path;
use tract_onnx::pb;

/// The most cuDNN workspace the builder offers an algorithm.
pub const TUNING_WORKSPACE: usize = 4 << 30;

/// What a plan is built for.
#[derive(Clone, Debug)]
pub struct ConvnetRequest<'a> {
    pub model_path: &'a Path,
    pub ordinal: usize,
    pub batch: usize,
    /// Per-sample input shape, NC... (channels, spatial dims).
    pub input: &'a [usize],
    pub workspace_bytes: usize,
}

pub fn gpu_identity(ordinal: usize) -> Result<GpuIdentity, GpuError> {
    let (name, compute_capability, driver) = device_identity(ordinal)?;
    Ok(GpuIdentity { name, compute_capability, driver, cudnn: crate::engines::gpu::cudnn::version() })
}

/// The key a plan for `request` must have on this machine.
pub fn wanted_key(request: &ConvnetRequest) -> Result<PlanKey, GpuError> {
    let gpu = gpu_identity(request.ordinal)?;
    Ok(plan::key(&file_sha256(request.model_path)?, &gpu, request.batch, request.input, request.workspace_bytes))
}

/// Imports the model and times its algorithms on GPU `ordinal`; progress to `report`.
pub fn build(request: &ConvnetRequest, report: &mut dyn FnMut(&str)) -> Result<ConvnetPlan, GpuError> {
    device::require_cuda()?;
    let origin = request.model_path.display().to_string();
    let bytes = std::fs::read(request.model_path).map_err(|source| GpuError::ModelUnreadable { origin: origin.clone(), source })?;
    let model = pb::ModelProto::decode(bytes.as_slice()).map_err(|source| GpuError::NotOnnx { origin: origin.clone(), source })?;
    let (net, blob) = import(&model, request.input).map_err(|e| e.in_model(&origin))?;
    let header = ConvnetHeader { key: wanted_key(request)?, model_path: origin, net, blob_len: blob.0.len(), blob_sha256: sha256_hex(&blob.0), verification: String::new() };
    let mut plan = ConvnetPlan { header, blob: blob.0 };
    let model = Convnet::load(request.ordinal, &plan)?;
    // Configs may allow far more workspace than is worth allocating to time (NVIDIA's 3D-UNet: 128 GB).
    let workspace = request.workspace_bytes.min(TUNING_WORKSPACE);
    let slot = Slot::new(&model, workspace, false)?;
    slot.choose_algorithms(&mut plan.header, workspace, report)?;
    Ok(plan)
}

/// Writes `plan` to `path` atomically.
pub fn write(plan: &ConvnetPlan, path: &Path) -> Result<(), GpuError> {
    Ok(crate::fsutil::write_atomic(path, &plan.to_bytes())?)
}
