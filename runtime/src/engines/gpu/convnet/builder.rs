//! Building a convnet plan on a GPU: import, time cuDNN's algorithms for every (transposed)
//! convolution at the plan's batch size, and frame the result with its key. Families check the
//! plan against the CPU engine on their own data and write it ([`write`]).

use super::exec::{Convnet, Slot};
use super::import::{Cut, import};
use super::place::places;
use super::plan::{self, ConvnetHeader, ConvnetPlan, GpuIdentity};
use crate::engines::ElementType;
use crate::engines::gpu::GpuError;
use crate::engines::gpu::device::{self, device_identity};
use crate::engines::gpu::plan::{PlanKey, PlanStatus, check, file_sha256, require_fresh, sha256_hex};
use crate::engines::gpu::spec::PlanIdentity;
use prost::Message;
use std::path::{Path, PathBuf};
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
    /// Where the family ends the network, if before the model's output.
    pub cut: Option<Cut>,
}

pub fn gpu_identity(ordinal: usize) -> Result<GpuIdentity, GpuError> {
    let (name, compute_capability, driver) = device_identity(ordinal)?;
    Ok(GpuIdentity { name, compute_capability, driver, cudnn: crate::engines::gpu::cudnn::version() })
}

/// The key a plan for `request` must have on this machine.
pub fn wanted_key(request: &ConvnetRequest) -> Result<PlanKey, GpuError> {
    let gpu = gpu_identity(request.ordinal)?;
    Ok(plan::key(&file_sha256(request.model_path)?, &gpu, request.batch, request.input, request.workspace_bytes, request.cut.map(|c| c.name)))
}

fn read_model(path: &Path) -> Result<(String, pb::ModelProto), GpuError> {
    let origin = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|source| GpuError::ModelUnreadable { origin: origin.clone(), source })?;
    let model = pb::ModelProto::decode(bytes.as_slice()).map_err(|source| GpuError::NotOnnx { origin: origin.clone(), source })?;
    Ok((origin, model))
}

/// The dims of an ONNX model's first input (`None` where symbolic): what a family reads its
/// plan's per-sample input shape from.
pub fn model_input_dims(path: &Path) -> Result<Vec<Option<i64>>, GpuError> {
    use tract_onnx::pb::tensor_shape_proto::dimension::Value;
    use tract_onnx::pb::type_proto::Value as TypeValue;
    let (_, model) = read_model(path)?;
    Ok(model
        .graph
        .as_ref()
        .and_then(|g| g.input.first())
        .and_then(|i| i.r#type.as_ref())
        .and_then(|t| match &t.value {
            Some(TypeValue::TensorType(t)) => t.shape.as_ref(),
            _ => None,
        })
        .map(|s| s.dim.iter().map(|d| if let Some(Value::DimValue(v)) = d.value { Some(v) } else { None }).collect())
        .unwrap_or_default())
}

/// Imports the model and times its algorithms on GPU `ordinal`; progress to `report`.
pub fn build(request: &ConvnetRequest, report: &mut dyn FnMut(&str)) -> Result<ConvnetPlan, GpuError> {
    device::require_cuda()?;
    let (origin, model) = read_model(request.model_path)?;
    let (mut net, blob) = import(&model, request.input).map_err(|e| e.in_model(&origin))?;
    if let Some(cut) = request.cut {
        net.cut((cut.outputs)(&net).map_err(|e| e.in_model(&origin))?)?;
    }
    net.places = places(&net);
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

/// The convnet plan a family's config describes: its model, plan file, batch (`gpu_batch_size`),
/// workspace, streams and graphs. Families add their own ends and the check against their CPU engine.
#[derive(Clone, Debug)]
pub struct ConvnetSpec {
    pub model_path: PathBuf,
    pub plan_path: PathBuf,
    pub batch: usize,
    pub workspace_bytes: usize,
    pub streams: usize,
    pub use_graphs: bool,
    pub cut: Option<Cut>,
}

impl ConvnetSpec {
    /// The plan of `benchmark`'s config (`settings`, for the run `plan`) for `model_path`. The engine
    /// runs fp16: another precision (NVIDIA's int8, say) is refused with the flag that runs it.
    pub fn of(settings: &mlperf_config::Settings, plan: &PlanIdentity, benchmark: &str, model_path: PathBuf) -> Result<ConvnetSpec, crate::Error> {
        if let Some(p) = settings.precision.filter(|p| ElementType::from_config(*p) != Some(ElementType::F16)) {
            return Err(crate::Error::Config(format!("the GPU {benchmark} engine runs fp16, the config asks {}: run it with --precision=fp16", p.name())));
        }
        let batch = settings.batch_size(benchmark).unwrap_or(1).max(1) as usize;
        Ok(ConvnetSpec {
            plan_path: plan.plan_path(benchmark, ElementType::F16, batch),
            model_path,
            batch,
            workspace_bytes: settings.workspace_size.unwrap_or(1 << 30) as usize,
            streams: settings.gpu_inference_streams.unwrap_or(1).max(1) as usize,
            use_graphs: settings.use_graphs.unwrap_or(true),
            cut: None,
        })
    }

    /// The build request for per-sample `input` on GPU 0.
    pub fn request<'a>(&'a self, input: &'a [usize]) -> ConvnetRequest<'a> {
        ConvnetRequest { model_path: &self.model_path, ordinal: 0, batch: self.batch, input, workspace_bytes: self.workspace_bytes, cut: self.cut }
    }

    /// Whether the plan file is up to date for `input` on this machine (`generate_engines` reuses it).
    pub fn is_fresh(&self, input: &[usize]) -> Result<bool, GpuError> {
        Ok(check(&self.plan_path, &wanted_key(&self.request(input))?) == PlanStatus::Fresh)
    }

    /// Writes a plan the family has checked, with what the check found.
    pub fn write_checked(&self, mut plan: ConvnetPlan, verification: String) -> Result<(), GpuError> {
        plan.header.verification = verification;
        write(&plan, &self.plan_path)
    }

    /// The plan for `input`; a missing, stale or corrupt one is refused with the command that
    /// rebuilds it.
    pub fn load_fresh(&self, input: &[usize]) -> Result<ConvnetPlan, crate::Error> {
        let wanted = wanted_key(&self.request(input)).map_err(|e| crate::Error::Data(e.to_string()))?;
        require_fresh(&self.plan_path, &wanted)?;
        Ok(ConvnetPlan::load(&self.plan_path)?)
    }
}
