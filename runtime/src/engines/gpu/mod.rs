//! The GPU layers, our own replacements for TensorRT engines: the device layer, cuDNN and its graph
//! API, our kernels, and the engine for convolutional image networks (ResNet50's, below). BERT's
//! GPU engine is its family's (`benchmarks::bert::gpu`), built on the device layer here.
//!
//! - [`device`]: device pointers and buffers, pinned memory, checked driver calls, NVRTC
//!   compilation; everything else here sits on it.
//! - [`network`]: ONNX import and the graph passes (batch-norm folding, residual and activation
//!   fusion, int8 quantisation). CPU only, tested in CI.
//! - [`calibration`]: int8 ranges measured on the CPU (tract) over calibration images, and their
//!   cache file. CPU only.
//! - [`lower`]: the space-to-depth stem, NHWC fp16 layout, channel padding, weight blob, buffer
//!   assignment. CPU only.
//! - [`plan`]: the serialized engine and its cache key; stale or corrupt plans are never run.
//! - [`spec`] and [`lifecycle`]: one plan as a family resolves it from a config, and what is done
//!   with it (calibrate, build or reuse, open on every GPU).
//! - [`export`]: the network back to ONNX, int8 rounding included: the CPU reference of an int8 plan.
//! - [`builder`]: `generate_engines`: import, quantise (int8 plans), lower, time cuDNN's algorithms
//!   (fp32 and fp16 sums, int32 for int8) on the GPU, check the result against the CPU engine,
//!   write the plan.
//! - [`cudnn`] and [`exec`]: execution through cudarc (cuDNN, the kernels of `exec.cu`): streams,
//!   CUDA graphs.
//! - [`resident`]: the device-resident sample pool (`start_from_device`), ResNet50's and YOLO's.
//! - [`pointwise`]: our int8 1x1 tensor-core kernel (NVRTC), a third way to run int8 1x1 layers.
//! - [`stem`]: our fp16 tensor-core kernel for the image's convolution, writing int8 for the max
//!   pooling after it (int8 plans).
//! - [`convnet`]: the op-by-op fp16 engine for other convolutional networks (3D-UNet's), with its
//!   own import, plan and kernels over [`cudnn`]'s N-d descriptors.
//! - [`graph`]: cuDNN's backend (graph) API for fused epilogues: int8 convolution + scale + bias +
//!   residual + ReLU, matmul + bias + GELU; descriptions checked in CI, plans, a GPU self-check.
//!
//! [`GpuEngine`] is one GPU behind the harness's `Engine` trait; the batching SUT gives it batches
//! from as many workers as the config has inference streams, each on its own stream slot.

pub mod builder;
pub mod calibration;
pub mod convnet;
pub mod cublaslt;
pub mod cudnn;
pub mod device;
pub mod error;
pub mod exec;
pub mod export;
pub mod graph;
pub mod lifecycle;
pub mod lower;
pub mod network;
pub mod plan;
pub mod pointwise;
pub mod resident;
pub mod spec;
pub mod stem;

#[cfg(test)]
mod network_tests;

use crate::engines::{Engine, EngineError, InputSpec, SampleSource};
use device::DeviceError;
pub use error::GpuError;
use exec::{DeviceModel, Slot};
use resident::{ResidentPool, sized_sample};
use std::sync::{Arc, Condvar, Mutex};

/// How a GPU engine runs, from the config (`gpu_inference_streams`, `use_graphs`,
/// `start_from_device`, `workspace_size`).
#[derive(Clone, Copy, Debug)]
pub struct RunOptions {
    pub streams: usize,
    pub use_graphs: bool,
    /// Keep up to this many samples resident in device memory (0 = copy every batch from the host).
    pub resident_samples: usize,
    pub workspace_bytes: usize,
}

/// An engine's per-stream slots: a batch takes one (waiting while all are busy) and puts it back.
pub struct SlotPool<S> {
    idle: Mutex<Vec<S>>,
    returned: Condvar,
}

impl<S> SlotPool<S> {
    pub fn new(slots: Vec<S>) -> SlotPool<S> {
        SlotPool { idle: Mutex::new(slots), returned: Condvar::new() }
    }

    /// Runs `f` on a free slot.
    pub fn with<T>(&self, f: impl FnOnce(&mut S) -> T) -> T {
        let mut slot = {
            let mut idle = self.idle.lock().expect("slot pool");
            loop {
                if let Some(slot) = idle.pop() {
                    break slot;
                }
                idle = self.returned.wait(idle).expect("slot pool");
            }
        };
        let out = f(&mut slot);
        self.idle.lock().expect("slot pool").push(slot);
        self.returned.notify_one();
        out
    }
}

/// One GPU running a plan.
pub struct GpuEngine {
    name: String,
    model: Arc<DeviceModel>,
    slots: SlotPool<Slot>,
    /// Declared after `slots`, so dropped after the slots (whose graphs hold its address); a slot in
    /// use is put back before `classify` returns, while the engine is borrowed.
    resident: Option<ResidentPool>,
}

impl GpuEngine {
    pub fn open(ordinal: usize, plan: &plan::Plan, input: InputSpec, options: RunOptions) -> Result<GpuEngine, GpuError> {
        let model = DeviceModel::load(ordinal, &plan.header, &plan.blob, input)?;
        let workspace = plan.header.layers.iter().map(|l| match l.kind {
            plan::LayerKind::Conv { workspace_bytes, .. } => workspace_bytes,
            _ => 0,
        });
        let workspace = workspace.max().unwrap_or(0).min(options.workspace_bytes.max(1));
        let slots = (0..options.streams.max(1)).map(|_| Slot::new(&model, workspace, options.workspace_bytes, options.use_graphs)).collect::<Result<Vec<_>, GpuError>>()?;
        let resident = match options.resident_samples {
            0 => None,
            n => Some(ResidentPool::new(n, input.sample_bytes())?),
        };
        Ok(GpuEngine { name: format!("gpu{ordinal}"), model, slots: SlotPool::new(slots), resident })
    }

    /// Every GPU of the machine, each with the same plan.
    pub fn open_all(devices: usize, plan: &plan::Plan, input: InputSpec, options: RunOptions) -> Result<Vec<Arc<dyn Engine>>, GpuError> {
        open_each(devices, |d| GpuEngine::open(d, plan, input, options))
    }

    /// Runs one batch (at most the plan's batch size) and returns the top-1 classes; with
    /// `logits`, also the fp32 logits (correctness checks).
    pub fn classify(&self, indices: &[usize], source: &dyn SampleSource, logits: bool) -> Result<(Vec<i32>, Vec<f32>), GpuError> {
        self.slots.with(|slot| self.classify_on(slot, indices, source, logits))
    }

    fn classify_on(&self, slot: &mut Slot, indices: &[usize], source: &dyn SampleSource, logits: bool) -> Result<(Vec<i32>, Vec<f32>), GpuError> {
        let n = indices.len();
        self.model.ctx.bind_to_thread().map_err(|e| GpuError::Run(format!("CUDA: {e:?}")))?;
        let resident = match &self.resident {
            Some(pool) => pool.slots_for(indices, source)?,
            None => None,
        };
        let classes = match resident {
            Some(slots) => {
                slot.set_slots(&slots);
                // SAFETY: `slots_for` gave the slot numbers of samples it holds; every slot of this
                // engine is given the engine's one pool, which outlives them (see `resident`).
                unsafe { slot.run(n, Some(self.resident.as_ref().expect("resident pool").ptr())) }?
            }
            None => {
                let bytes = self.model.input.sample_bytes();
                let host = slot.host_input.as_mut_slice();
                for (b, &i) in indices.iter().enumerate() {
                    let sample = sized_sample(source, i, bytes)?;
                    host[b * bytes..(b + 1) * bytes].copy_from_slice(&sample);
                }
                // SAFETY: without a resident pool the slot reads only its own buffers.
                unsafe { slot.run(n, None) }?
            }
        };
        let logits = if logits { slot.logits(n)? } else { Vec::new() };
        Ok((classes, logits))
    }
}

impl Engine for GpuEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        for chunk in indices.chunks(self.model.max_batch()) {
            let (classes, _) = self.classify(chunk, source, false).map_err(EngineError::new)?;
            outputs.extend(classes.iter().map(|c| c.to_le_bytes().to_vec()));
        }
        Ok(())
    }
}

/// An engine on each of the system's `devices` GPUs, which this machine must have.
pub fn open_each<E: Engine + 'static, Err: From<DeviceError>>(devices: usize, open: impl Fn(usize) -> Result<E, Err>) -> Result<Vec<Arc<dyn Engine>>, Err> {
    let present = device::device_count()?;
    if present < devices {
        return Err(DeviceError::TooFewGpus { devices, present }.into());
    }
    (0..devices).map(|d| open(d).map(|e| Arc::new(e) as Arc<dyn Engine>)).collect()
}
