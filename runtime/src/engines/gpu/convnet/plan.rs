//! The convnet engine's plan: the imported [`Net`] with the algorithms timed on the GPU, its
//! weight blob, and the key of what it was built from, in the GPU plans' file framing
//! (`engines::gpu::plan`: magic, format version, JSON header, blob; written atomically; a stale or
//! corrupt plan refused with the command that rebuilds it).

use super::import::Net;
use crate::engines::ElementType;
use crate::engines::gpu::plan::{FORMAT_VERSION, Header, PlanKey};
use serde::{Deserialize, Serialize};

/// Bumped whenever the convnet builder's output changes: plans of another version are stale.
pub const BUILDER_VERSION: u32 = 8;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ConvnetHeader {
    pub key: PlanKey,
    pub model_path: String,
    pub net: Net,
    pub blob_len: usize,
    pub blob_sha256: String,
    /// What the builder's check against the CPU engine found (empty if it was skipped).
    pub verification: String,
}

impl Header for ConvnetHeader {
    fn blob_len(&self) -> usize {
        self.blob_len
    }
    fn blob_sha256(&self) -> &str {
        &self.blob_sha256
    }
}

pub type ConvnetPlan = crate::engines::gpu::plan::Plan<ConvnetHeader>;

/// The GPU a plan is for, as keys name it.
#[derive(Clone, Debug)]
pub struct GpuIdentity {
    pub name: String,
    pub compute_capability: String,
    pub driver: i32,
    pub cudnn: usize,
}

/// The key of a convnet plan: model, GPU, cuDNN, batch, per-sample input shape (f32 NC...),
/// fp16, workspace, builder version and the family's cut, if any.
pub fn key(model_sha256: &str, gpu: &GpuIdentity, batch: usize, input: &[usize], workspace_bytes: usize, cut: Option<&str>) -> PlanKey {
    let cut = cut.map(|c| format!(", cut at {c}")).unwrap_or_default();
    PlanKey {
        format_version: FORMAT_VERSION,
        model_sha256: model_sha256.to_string(),
        gpu_name: gpu.name.clone(),
        compute_capability: gpu.compute_capability.clone(),
        cuda_driver_version: gpu.driver,
        cudnn_version: gpu.cudnn,
        cublaslt_version: 0,
        batch_size: batch,
        precision: ElementType::F16,
        input: format!("f32 NC... {input:?} convnet builder {BUILDER_VERSION}{cut}"),
        workspace_bytes: workspace_bytes as u64,
        calibration_sha256: String::new(),
    }
}
