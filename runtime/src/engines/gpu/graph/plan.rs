//! The safe layer: an operation graph on a handle, execution plans from cuDNN's heuristics (the
//! first that finalizes, or the fastest of several, timed), plans to and from cuDNN's JSON, and
//! execution with a variant pack.

use super::checked::{Cudnn, Descriptor, cudnn_version};
use super::error::{GraphError, cuda};
use super::lowering::{AttrValue, Lowered, build, lower};
use super::spec::{OperationGraph, Uid};
use crate::engines::gpu::cudnn::Handle;
use crate::engines::gpu::device::{DeviceBuffer, DevicePtr};
use cudarc::cudnn::sys;
use cudarc::driver::{CudaStream, sys as ds};
use serde::{Deserialize, Serialize};
use std::ffi::c_void;
use std::ptr;
use std::sync::Arc;

use sys::cudnnBackendAttributeName_t as A;
use sys::cudnnBackendDescriptorType_t as K;

/// An operation graph's descriptors, made on a handle: what plans are made for.
pub struct Graph {
    lowered: Arc<Lowered<Descriptor>>,
}

/// An engine config of cuDNN's heuristics, and the global index of its engine.
struct EngineConfig {
    descriptor: Descriptor,
    engine: i64,
}

fn engine_of(config: &Descriptor) -> Result<i64, GraphError> {
    config.get_descriptor(A::CUDNN_ATTR_ENGINECFG_ENGINE, K::CUDNN_BACKEND_ENGINE_DESCRIPTOR)?.get_int64(A::CUDNN_ATTR_ENGINE_GLOBAL_INDEX)
}

/// How many plans autotuning times, and how many runs each.
#[derive(Clone, Copy, Debug)]
pub struct Autotune {
    pub candidates: usize,
    pub runs: usize,
}

/// The fastest plan, and each timed plan's engine and mean time in microseconds, fastest first.
pub struct Tuned {
    pub plan: ExecutionPlan,
    pub timings: Vec<(i64, f64)>,
}

impl Graph {
    /// Validates `spec` and makes its descriptors on `handle`.
    pub fn build(handle: &Handle, spec: &OperationGraph) -> Result<Graph, GraphError> {
        let lowered = lower(&mut Cudnn::new(handle), spec)?;
        Ok(Graph { lowered: Arc::new(lowered) })
    }

    /// The engine configs cuDNN's heuristics rank for the graph, mode A's then FALLBACK's (as
    /// NVIDIA recommends), and why a mode offered none.
    fn engine_configs(&self, handle: &Handle) -> Result<(Vec<EngineConfig>, Vec<String>), GraphError> {
        let mut cudnn = Cudnn::new(handle);
        let (mut configs, mut refusals) = (Vec::new(), Vec::new());
        for mode in [sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_A, sys::cudnnBackendHeurMode_t::CUDNN_HEUR_MODE_FALLBACK] {
            let attrs =
                vec![(A::CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, AttrValue::Descriptors(vec![self.lowered.graph()])), (A::CUDNN_ATTR_ENGINEHEUR_MODE, AttrValue::HeurMode(mode))];
            let heuristics = build(&mut cudnn, K::CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, attrs);
            match heuristics.and_then(|h| h.get_descriptors(A::CUDNN_ATTR_ENGINEHEUR_RESULTS, K::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)) {
                Ok(found) => {
                    for descriptor in found {
                        configs.push(EngineConfig { engine: engine_of(&descriptor)?, descriptor });
                    }
                }
                Err(e @ GraphError::NotSupported { .. }) => refusals.push(format!("heuristics {mode:?}: {}", e.reason())),
                Err(e) => return Err(e),
            }
        }
        Ok((configs, refusals))
    }

    /// Plans of the heuristics' configs in their order, skipping those cuDNN cannot finalize (this
    /// is where runtime-fusion engines compile their kernels, and where NOT_SUPPORTED usually
    /// appears) and those needing more than `workspace_limit` bytes of workspace: the first `max`.
    pub fn plans(&self, handle: &Handle, workspace_limit: usize, max: usize) -> Result<Vec<ExecutionPlan>, GraphError> {
        let (configs, mut rejected) = self.engine_configs(handle)?;
        let offered = configs.len();
        let mut plans = Vec::new();
        for config in configs {
            if plans.len() == max {
                break;
            }
            let engine = config.engine;
            match ExecutionPlan::finalize(handle, config, self.lowered.clone()) {
                Ok(plan) if plan.workspace_bytes <= workspace_limit => plans.push(plan),
                Ok(plan) => rejected.push(format!("engine {engine}: needs {} bytes of workspace", plan.workspace_bytes)),
                Err(e) => rejected.push(format!("engine {engine}: {}", e.reason())),
            }
        }
        if plans.is_empty() {
            return Err(GraphError::NoEngine { configs: offered, workspace_limit, rejected });
        }
        Ok(plans)
    }

    /// Times the first `options.candidates` plans that fit `workspace` and keeps the fastest.
    ///
    /// # Safety
    /// As for [`ExecutionPlan::execute`], with `workspace`; the handle must enqueue on `stream`.
    pub unsafe fn autotune(&self, handle: &Handle, stream: &CudaStream, bindings: &[(Uid, DevicePtr)], workspace: &DeviceBuffer, options: Autotune) -> Result<Tuned, GraphError> {
        let plans = self.plans(handle, workspace.bytes, options.candidates)?;
        let candidates = plans.len();
        let (mut timed, mut rejected) = (Vec::new(), Vec::new());
        for plan in plans {
            // SAFETY: our caller's contract.
            match unsafe { plan.mean_time_us(handle, stream, bindings, workspace, options.runs) } {
                Ok(us) => timed.push((plan, us)),
                Err(e) => rejected.push(format!("engine {}: {}", plan.engine, e.reason())),
            }
        }
        timed.sort_by(|a, b| a.1.total_cmp(&b.1));
        let timings = timed.iter().map(|(plan, us)| (plan.engine, *us)).collect();
        let (plan, _) = timed.into_iter().next().ok_or(GraphError::NoEngine { configs: candidates, workspace_limit: workspace.bytes, rejected })?;
        Ok(Tuned { plan, timings })
    }
}

/// A finalized plan: an engine config's kernels for one graph, runnable on handles of the GPU it
/// was made on.
pub struct ExecutionPlan {
    descriptor: Descriptor,
    /// The engine config and graph the plan was made from, kept for as long as it lives (declared
    /// after it, so dropped after it); a plan restored from JSON has no graph.
    _config: Descriptor,
    _graph: Option<Arc<Lowered<Descriptor>>>,
    engine: i64,
    workspace_bytes: usize,
}

impl ExecutionPlan {
    fn finalize(handle: &Handle, config: EngineConfig, graph: Arc<Lowered<Descriptor>>) -> Result<ExecutionPlan, GraphError> {
        let attrs = vec![(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, AttrValue::Handle), (A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, AttrValue::Descriptors(vec![&config.descriptor]))];
        let descriptor = build(&mut Cudnn::new(handle), K::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, attrs)?;
        let workspace_bytes = workspace_of(&descriptor)?;
        Ok(ExecutionPlan { descriptor, _config: config.descriptor, _graph: Some(graph), engine: config.engine, workspace_bytes })
    }

    /// A plan from cuDNN's JSON of it ([`ExecutionPlan::to_json`]), made by the same cuDNN version
    /// on the same GPU model (see [`SerializedPlan`]).
    pub fn from_json(handle: &Handle, json: &str) -> Result<ExecutionPlan, GraphError> {
        let attrs = vec![(A::CUDNN_ATTR_EXECUTION_PLAN_HANDLE, AttrValue::Handle), (A::CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION, AttrValue::Chars(json.as_bytes().to_vec()))];
        let descriptor = build(&mut Cudnn::new(handle), K::CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, attrs)?;
        let config = descriptor.get_descriptor(A::CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, K::CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)?;
        let (engine, workspace_bytes) = (engine_of(&config)?, workspace_of(&descriptor)?);
        Ok(ExecutionPlan { descriptor, _config: config, _graph: None, engine, workspace_bytes })
    }

    /// cuDNN's JSON of the plan. Runtime-compiled (fusion) engines serialise; some precompiled
    /// engines may not, which fails here: keep the graph to rebuild such plans.
    pub fn to_json(&self) -> Result<String, GraphError> {
        let mut chars = self.descriptor.get_chars(A::CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION)?;
        // cuDNN counts the terminating NUL.
        while chars.last() == Some(&0) {
            chars.pop();
        }
        // cuDNN writes ASCII.
        Ok(String::from_utf8_lossy(&chars).into_owned())
    }

    /// The global index of the plan's engine (as cuDNN's logs and heuristics name engines).
    pub fn engine(&self) -> i64 {
        self.engine
    }

    pub fn workspace_bytes(&self) -> usize {
        self.workspace_bytes
    }

    /// Enqueues the plan on the handle's stream: `bindings` give each non-virtual tensor's uid its
    /// device address (a variant pack is built per call, as it is cheap).
    ///
    /// # Safety
    /// `bindings` must bind every non-virtual tensor of the plan's graph to device memory of the
    /// handle's context, aligned as its tensor declares and holding what it describes; that memory
    /// and `workspace` must stay allocated until the work has run.
    pub unsafe fn execute(&self, handle: &Handle, bindings: &[(Uid, DevicePtr)], workspace: Option<&DeviceBuffer>) -> Result<(), GraphError> {
        let given = workspace.map_or(0, |w| w.bytes);
        if self.workspace_bytes > given {
            return Err(GraphError::WorkspaceTooSmall { needed: self.workspace_bytes, given });
        }
        let address = |p: DevicePtr| p.raw() as *mut c_void;
        let mut cudnn = Cudnn::new(handle);
        let attrs = vec![
            (A::CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, AttrValue::Int64s(bindings.iter().map(|(uid, _)| *uid).collect())),
            (A::CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, AttrValue::Pointers(bindings.iter().map(|(_, p)| address(*p)).collect())),
            (A::CUDNN_ATTR_VARIANT_PACK_WORKSPACE, AttrValue::Pointers(vec![workspace.map_or(ptr::null_mut(), |w| address(w.ptr()))])),
        ];
        let variant_pack = build(&mut cudnn, K::CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, attrs)?;
        // SAFETY: the workspace holds what the plan needs (checked above); the rest is our
        // caller's contract.
        unsafe { cudnn.execute(&self.descriptor, &variant_pack) }
    }

    /// The mean time of `runs` executions after an untimed one (which loads kernels), in
    /// microseconds, measured with CUDA events on `stream`; returns once they have run.
    ///
    /// # Safety
    /// As for [`ExecutionPlan::execute`]; the handle must enqueue on `stream`.
    pub unsafe fn mean_time_us(&self, handle: &Handle, stream: &CudaStream, bindings: &[(Uid, DevicePtr)], workspace: &DeviceBuffer, runs: usize) -> Result<f64, GraphError> {
        let event = || stream.context().new_event(Some(ds::CUevent_flags::CU_EVENT_DEFAULT)).map_err(cuda("create an event"));
        let (start, end) = (event()?, event()?);
        // SAFETY: our caller's contract.
        unsafe { self.execute(handle, bindings, Some(workspace)) }?;
        start.record(stream).map_err(cuda("record an event"))?;
        for _ in 0..runs {
            // SAFETY: as above.
            unsafe { self.execute(handle, bindings, Some(workspace)) }?;
        }
        end.record(stream).map_err(cuda("record an event"))?;
        let ms = start.elapsed_ms(&end).map_err(cuda("time the runs"))?;
        Ok(f64::from(ms) * 1000.0 / runs.max(1) as f64)
    }
}

fn workspace_of(plan: &Descriptor) -> Result<usize, GraphError> {
    Ok(plan.get_int64(A::CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE)?.max(0) as usize)
}

/// A plan as our plan files store it: cuDNN's JSON, keyed by the cuDNN version and GPU model that
/// made it, the only ones that load it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SerializedPlan {
    /// `cudnnGetVersion()` of the library that made the plan.
    pub cudnn_version: usize,
    /// The GPU's name (`CudaContext::name`).
    pub gpu: String,
    /// cuDNN's JSON of the plan.
    pub json: String,
}

impl SerializedPlan {
    /// `plan`, made on a GPU named `gpu` by the loaded cuDNN.
    pub fn new(plan: &ExecutionPlan, gpu: &str) -> Result<SerializedPlan, GraphError> {
        Ok(SerializedPlan { cudnn_version: cudnn_version()?, gpu: gpu.into(), json: plan.to_json()? })
    }

    /// The plan on `handle`, of a GPU named `gpu`: a [`GraphError::StalePlan`] if another cuDNN
    /// version or GPU model made it.
    pub fn restore(&self, handle: &Handle, gpu: &str) -> Result<ExecutionPlan, GraphError> {
        self.check_key(cudnn_version()?, gpu)?;
        ExecutionPlan::from_json(handle, &self.json)
    }

    fn check_key(&self, cudnn_version: usize, gpu: &str) -> Result<(), GraphError> {
        if (self.cudnn_version, self.gpu.as_str()) != (cudnn_version, gpu) {
            return Err(GraphError::StalePlan { plan_cudnn: self.cudnn_version, plan_gpu: self.gpu.clone(), cudnn: cudnn_version, gpu: gpu.into() });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_serialized_plan_loads_only_where_it_was_made() {
        let plan = SerializedPlan { cudnn_version: 91000, gpu: "NVIDIA H100 80GB HBM3".into(), json: r#"{"engineId":7}"#.into() };
        let text = serde_json::to_string(&plan).unwrap();
        let read: SerializedPlan = serde_json::from_str(&text).unwrap();
        assert_eq!(read, plan);
        assert!(read.check_key(91000, "NVIDIA H100 80GB HBM3").is_ok());
        let err = read.check_key(91100, "NVIDIA H100 80GB HBM3").unwrap_err();
        assert!(matches!(err, GraphError::StalePlan { plan_cudnn: 91000, cudnn: 91100, .. }), "{err}");
        assert!(err.to_string().contains("rebuild it"));
        assert!(matches!(read.check_key(91000, "NVIDIA H200"), Err(GraphError::StalePlan { .. })));
    }
}
