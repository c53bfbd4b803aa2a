//! The GPU engine for 3D-UNet (KiTS19): the network on the convnet engine
//! (`engines::gpu::convnet`, fp16 channels-last), the sliding windows of [`super::cpu`] on the
//! device. A volume is uploaded once; its windows (the region of interest at a stride of half of it,
//! depth outermost, the CPU engine's order) are gathered by a kernel into batches of the plan's
//! size, the windows of the volumes of one call packed one after another (so that only the call's
//! last batch runs part-empty, not every volume's); each window's logits times the Gaussian importance map are summed in f32 on the device with
//! the weights alongside, one window after another as the CPU engine sums them; the weighted means'
//! arg-max (first class on ties) is taken there too, and one byte per voxel comes back. The volume's
//! bytes go up as the sample holds them (f32 little-endian) through pinned memory, copied there on
//! several threads, and the labels come back the same way.

use super::cpu::{CLASSES, VolumeShape, f32s, importance_map, le_bytes, windows};
use super::error::UNetError;
use super::preprocessed::{Case, Preprocessed};
use crate::benchmarks::WorkloadSpec;
use crate::benchmarks::unet3d::cpu::CpuUNet3dEngine;
use crate::engines::gpu::convnet::builder::{ConvnetSpec, build, model_input_dims};
use crate::engines::gpu::convnet::exec::{Convnet, Slot, elementwise as launch};
use crate::engines::gpu::convnet::plan::ConvnetPlan;
use crate::engines::gpu::device::{self, DeviceBuffer, PinnedBuffer, compile_for, cu, host_threads};
use crate::engines::gpu::open_each;
use crate::engines::gpu::{GpuError, SlotPool};
use crate::engines::{Engine, EngineError, SampleSource};
use cudarc::driver::{CudaFunction, PushKernelArg, result as dr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const KERNELS: &str = concat!(include_str!("../../engines/gpu/half.cuh"), include_str!("gpu.cu"));

struct Kernels {
    gather: CudaFunction,
    accumulate: CudaFunction,
    arg_max: CudaFunction,
}

/// One stream's network slot and, for each volume a packed call can hold, its buffers.
struct VolumeSlot {
    net: Slot,
    volumes: Vec<VolumeBuffers>,
}

/// One volume's buffers, sized for the largest volume.
struct VolumeBuffers {
    host_volume: PinnedBuffer,
    host_labels: PinnedBuffer,
    volume: DeviceBuffer,
    sums: DeviceBuffer,
    weights: DeviceBuffer,
    labels: DeviceBuffer,
}

/// One GPU segmenting volumes with a 3D-UNet plan.
pub struct GpuUNet3dEngine {
    name: String,
    model: Arc<Convnet>,
    kernels: Kernels,
    importance: DeviceBuffer,
    roi: usize,
    shapes: Vec<VolumeShape>,
    slots: SlotPool<VolumeSlot>,
}

impl GpuUNet3dEngine {
    /// The plan on GPU `ordinal` with `streams` slots, for volumes of `shapes` (by sample index).
    pub fn open(ordinal: usize, plan: &ConvnetPlan, shapes: Vec<VolumeShape>, streams: usize, use_graphs: bool) -> Result<GpuUNet3dEngine, GpuError> {
        let model = Convnet::load(ordinal, plan)?;
        let (x, y) = (model.input_shape().clone(), model.output_shape().clone());
        let roi = x.spatial[0];
        if x.channels != 1 || x.spatial != [roi; 3] || y.channels != CLASSES || y.spatial != x.spatial {
            return Err(GpuError::PlanContent(format!("the plan built from {} is not a 3D-UNet ({x:?} -> {y:?}); rebuild it", plan.header.model_path)));
        }
        let cc = cu("compute capability", model.ctx.compute_capability())?;
        let module = cu("load kernels", model.ctx.load_module(compile_for("3d-unet kernels", KERNELS, cc, Vec::new())?))?;
        let f = |name: &str| cu(&format!("kernel {name}"), module.load_function(name));
        let kernels = Kernels { gather: f("gather_window")?, accumulate: f("accumulate_window")?, arg_max: f("arg_max")? };
        let map = le_bytes(&importance_map(roi));
        let importance = DeviceBuffer::new(map.len())?;
        cu("upload importance map", importance.upload(0, &map))?;
        let voxels = shapes.iter().map(|s| s.iter().product::<usize>()).max().unwrap_or(0);
        let workspace = plan.header.net.ops.iter().map(|op| match op.kind {
            crate::engines::gpu::convnet::import::OpKind::Conv { workspace, .. } | crate::engines::gpu::convnet::import::OpKind::ConvTranspose { workspace, .. } => workspace,
            _ => 0,
        });
        let workspace = workspace.max().unwrap_or(0);
        let buffers = || -> Result<VolumeBuffers, GpuError> {
            Ok(VolumeBuffers {
                host_volume: PinnedBuffer::new(4 * voxels)?,
                host_labels: PinnedBuffer::new(voxels)?,
                volume: DeviceBuffer::new(4 * voxels)?,
                sums: DeviceBuffer::new(4 * CLASSES * voxels)?,
                weights: DeviceBuffer::new(4 * voxels)?,
                labels: DeviceBuffer::new(voxels)?,
            })
        };
        // As many volumes as one batch can hold windows of (one each at least).
        let packed = model.batch().min(shapes.len()).max(1);
        let slots = (0..streams.max(1))
            .map(|_| Ok(VolumeSlot { net: Slot::new(&model, workspace, use_graphs)?, volumes: (0..packed).map(|_| buffers()).collect::<Result<_, GpuError>>()? }))
            .collect::<Result<Vec<_>, GpuError>>()?;
        Ok(GpuUNet3dEngine { name: format!("gpu{ordinal}-3d-unet"), model, kernels, importance, roi, shapes, slots: SlotPool::new(slots) })
    }

    pub fn batch(&self) -> usize {
        self.model.batch()
    }

    /// The labels of `volume` (`shape`, f32 little-endian in C order: a sample's bytes as read).
    pub fn segment(&self, volume: &[u8], shape: VolumeShape) -> Result<Vec<u8>, UNetError> {
        Ok(self.segment_all(&[(volume, shape)])?.remove(0))
    }

    /// The labels of each of `volumes`, their windows packed into the plan's batches.
    pub fn segment_all(&self, volumes: &[(&[u8], VolumeShape)]) -> Result<Vec<Vec<u8>>, UNetError> {
        let mut windowed = Vec::with_capacity(volumes.len());
        for (index, &(bytes, shape)) in volumes.iter().enumerate() {
            if bytes.len() != 4 * shape.iter().product::<usize>() {
                return Err(UNetError::SampleSize { index, bytes: bytes.len(), shape });
            }
            windowed.push((bytes, shape, windows(shape, self.roi)?));
        }
        self.slots
            .with(|slot| {
                let mut labels = Vec::with_capacity(volumes.len());
                for chunk in windowed.chunks(slot.volumes.len()) {
                    labels.extend(self.segment_on(slot, chunk)?);
                }
                Ok::<_, GpuError>(labels)
            })
            .map_err(UNetError::from)
    }

    fn segment_on(&self, slot: &mut VolumeSlot, volumes: &[(&[u8], VolumeShape, Vec<VolumeShape>)]) -> Result<Vec<Vec<u8>>, GpuError> {
        device::bind(&self.model.ctx)?;
        let stream = slot.net.stream.clone();
        let s = stream.cu_stream();
        let threads = host_threads(usize::MAX);
        for ((volume, _, _), buffers) in volumes.iter().zip(&mut slot.volumes) {
            let voxels = volume.len() / 4;
            if volume.len() > buffers.volume.bytes {
                return Err(GpuError::Run(format!("a volume of {voxels} voxels, above the {} the engine was opened for", buffers.volume.bytes / 4)));
            }
            let pieces: Vec<&[u8]> = volume.chunks(volume.len().div_ceil(threads).max(1)).collect();
            buffers.host_volume.fill_from(&pieces, threads);
            // SAFETY: within the volume's buffers, sized for the largest volume (checked above); the
            // stream finishes (synchronized below) before the pinned buffers are touched again.
            unsafe {
                cu("upload volume", dr::memcpy_htod_async(buffers.volume.ptr().raw(), &buffers.host_volume.as_slice()[..volume.len()], s))?;
                cu("clear sums", dr::memset_d8_async(buffers.sums.ptr().raw(), 0, 4 * CLASSES * voxels, s))?;
                cu("clear weights", dr::memset_d8_async(buffers.weights.ptr().raw(), 0, 4 * voxels, s))?;
            }
        }
        let (x, y) = (self.model.input_shape(), self.model.output_shape());
        let (roi, (xp, yp), cube) = (self.roi as i32, (x.padded as i32, y.padded as i32), self.roi.pow(3));
        let imp = self.importance.ptr().raw();
        // Every window of the call, volume after volume, each in the CPU engine's order: a voxel's
        // sum still adds its windows in that order.
        let all: Vec<(usize, VolumeShape)> = volumes.iter().enumerate().flat_map(|(v, (_, _, origins))| origins.iter().map(move |&o| (v, o))).collect();
        for batch in all.chunks(self.batch()) {
            for (b, &(v, o)) in batch.iter().enumerate() {
                let (volume_ptr, [_, h, w]) = (slot.volumes[v].volume.ptr().raw(), volumes[v].1.map(|d| d as i32));
                let input = slot.net.input().offset(2 * b * x.elements()).raw();
                let [oz, oy, ox] = o.map(|v| v as i32);
                let mut l = stream.launch_builder(&self.kernels.gather);
                l.arg(&volume_ptr).arg(&input).arg(&h).arg(&w).arg(&roi).arg(&xp).arg(&oz).arg(&oy).arg(&ox);
                // SAFETY: gather_window's parameters; the window lies in its volume (`windows`
                // checked the shape) and sample b of the network's input.
                cu("gather window", unsafe { l.launch(launch(x.elements())) })?;
            }
            slot.net.run()?;
            for (b, &(v, o)) in batch.iter().enumerate() {
                let buffers = &slot.volumes[v];
                let (sums, weights, [_, h, w]) = (buffers.sums.ptr().raw(), buffers.weights.ptr().raw(), volumes[v].1.map(|d| d as i32));
                let logits = slot.net.output().offset(2 * b * y.elements()).raw();
                let [oz, oy, ox] = o.map(|v| v as i32);
                let total = (volumes[v].0.len() / 4) as i64;
                let mut l = stream.launch_builder(&self.kernels.accumulate);
                l.arg(&logits).arg(&imp).arg(&sums).arg(&weights).arg(&total).arg(&h).arg(&w).arg(&roi).arg(&yp).arg(&oz).arg(&oy).arg(&ox);
                // SAFETY: accumulate_window's parameters; the window lies in its volume.
                cu("accumulate window", unsafe { l.launch(launch(cube)) })?;
            }
        }
        for ((volume, _, _), buffers) in volumes.iter().zip(&mut slot.volumes) {
            let voxels = volume.len() / 4;
            let (sums, weights, labels, total) = (buffers.sums.ptr().raw(), buffers.weights.ptr().raw(), buffers.labels.ptr().raw(), voxels as i64);
            let mut l = stream.launch_builder(&self.kernels.arg_max);
            l.arg(&sums).arg(&weights).arg(&labels).arg(&total);
            // SAFETY: arg_max's parameters over the volume's voxels.
            cu("arg max", unsafe { l.launch(launch(voxels)) })?;
            // SAFETY: `voxels` bytes of the labels buffer into the volume's pinned buffer of the
            // largest volume's size; read after the synchronization below.
            cu("download labels", unsafe { dr::memcpy_dtoh_async(&mut buffers.host_labels.as_mut_slice()[..voxels], labels, s) })?;
        }
        cu("synchronize", stream.synchronize())?;
        Ok(volumes.iter().zip(&slot.volumes).map(|((volume, _, _), buffers)| buffers.host_labels.as_slice()[..volume.len() / 4].to_vec()).collect())
    }
}

impl Engine for GpuUNet3dEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        let mut samples = Vec::with_capacity(indices.len());
        for &index in indices {
            let shape = *self.shapes.get(index).ok_or(UNetError::UnknownSample { index, cases: self.shapes.len() }).map_err(EngineError::new)?;
            let sample = source.sample(index);
            if sample.len() != 4 * shape.iter().product::<usize>() {
                return Err(EngineError::new(UNetError::SampleSize { index, bytes: sample.len(), shape }));
            }
            samples.push((sample, shape));
        }
        let volumes: Vec<(&[u8], VolumeShape)> = samples.iter().map(|(sample, shape)| (&sample[..], *shape)).collect();
        outputs.extend(self.segment_all(&volumes).map_err(EngineError::new)?);
        Ok(())
    }
}

/// How far the GPU's labels agree with the CPU engine's over a set of volumes: voxels and, per
/// foreground class, the DICE of the GPU's labels against the CPU's.
#[derive(Clone, Debug, PartialEq)]
pub struct Agreement {
    pub voxels: usize,
    pub agreeing: usize,
    /// Kidney, tumor.
    pub dice: [f64; 2],
}

impl Agreement {
    pub fn of(cpu: &[Vec<u8>], gpu: &[Vec<u8>]) -> Agreement {
        let (mut voxels, mut agreeing) = (0, 0);
        let mut overlap = [[0usize; 3]; 2];
        for (c, g) in cpu.iter().zip(gpu) {
            voxels += c.len();
            for (&a, &b) in c.iter().zip(g) {
                agreeing += usize::from(a == b);
                for (k, o) in overlap.iter_mut().enumerate() {
                    let class = k as u8 + 1;
                    o[0] += usize::from(a == class && b == class);
                    o[1] += usize::from(a == class);
                    o[2] += usize::from(b == class);
                }
            }
        }
        // Both empty: full agreement, as the scorer's smoothing gives.
        let dice = overlap.map(|[both, a, b]| if a + b == 0 { 1.0 } else { 2.0 * both as f64 / (a + b) as f64 });
        Agreement { voxels, agreeing, dice }
    }

    pub fn percent(&self) -> f64 {
        100.0 * self.agreeing as f64 / self.voxels.max(1) as f64
    }

    /// The builder's rule: fp16 storage flips voxels near class boundaries, where two logits tie
    /// within fp16's rounding (about 1e-3 of their size); a plan that computes the same network
    /// agrees on all but a thin boundary layer (>= 99 % of voxels) and per-class DICE within 0.02
    /// of 1. A wrong op or layout disagrees on whole regions.
    pub fn acceptable(&self) -> bool {
        self.percent() >= MIN_VOXEL_AGREEMENT_PERCENT && self.dice.iter().all(|&d| d >= MIN_DICE_AGREEMENT)
    }
}

pub const MIN_VOXEL_AGREEMENT_PERCENT: f64 = 99.0;
pub const MIN_DICE_AGREEMENT: f64 = 0.98;

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "voxel agreement {:.3} % of {}, DICE vs CPU kidney {:.4} tumor {:.4}", self.percent(), self.voxels, self.dice[0], self.dice[1])
    }
}

/// Cases the builder checks a plan on: the synthetic set's labels are the CPU engine's, so several
/// cost nothing; real cases are segmented by the CPU engine first (tens of seconds per window at
/// MLPerf's size), so one.
const CHECK_SYNTHETIC_CASES: usize = 8;
const CHECK_REAL_CASES: usize = 1;

/// The GPU plan a 3D-UNet config describes ([`ConvnetSpec`]) and what 3D-UNet does with it.
pub struct UNetGpuSpec(pub ConvnetSpec);

impl std::ops::Deref for UNetGpuSpec {
    type Target = ConvnetSpec;
    fn deref(&self) -> &ConvnetSpec {
        &self.0
    }
}

impl UNetGpuSpec {
    pub fn of(spec: &WorkloadSpec, model_path: PathBuf) -> Result<UNetGpuSpec, crate::Error> {
        Ok(UNetGpuSpec(ConvnetSpec::of(spec.settings, &spec.plan, "3d-unet", model_path)?))
    }

    /// `generate_engines`: reuses an up-to-date plan, or builds one, checks it against the CPU
    /// engine on the first cases of `set` (refused below [`Agreement::acceptable`]) and writes it.
    /// Returns a line for the user.
    pub fn generate(&self, set: &Preprocessed, cases: &[Case], synthetic: bool, progress: &mut dyn FnMut(&str)) -> Result<String, UNetError> {
        let roi = model_roi(&self.model_path)?;
        let input = [1, roi, roi, roi];
        if self.is_fresh(&input)? {
            return Ok(format!("{}: up to date, reused", self.plan_path.display()));
        }
        let plan = build(&self.request(&input), progress)?;
        let checked = &cases[..cases.len().min(if synthetic { CHECK_SYNTHETIC_CASES } else { CHECK_REAL_CASES })];
        let shapes: Vec<VolumeShape> = checked.iter().map(|c| c.shape).collect();
        let engine = GpuUNet3dEngine::open(0, &plan, shapes.clone(), 1, false)?;
        let cpu_engine = if synthetic { None } else { Some(CpuUNet3dEngine::load(&self.model_path, shapes)?) };
        let (mut cpu, mut gpu) = (Vec::new(), Vec::new());
        for case in checked {
            let read = set.read_case(case)?;
            gpu.push(engine.segment(&read.image, case.shape)?);
            cpu.push(match &cpu_engine {
                Some(e) => e.segment(&f32s(&read.image), case.shape)?,
                None => read.labels.to_vec(),
            });
        }
        let agreement = Agreement::of(&cpu, &gpu);
        let verification = format!("{} cases: {agreement}", checked.len());
        if !agreement.acceptable() {
            return Err(GpuError::Build(format!(
                "the plan disagrees with the CPU engine ({verification}; needs >= {MIN_VOXEL_AGREEMENT_PERCENT} % of voxels and DICE >= {MIN_DICE_AGREEMENT}); not written"
            ))
            .into());
        }
        self.write_checked(plan, verification.clone())?;
        Ok(format!("{}: built; {verification}", self.plan_path.display()))
    }

    /// The plan on each of `devices` GPUs for volumes of `shapes`; a missing, stale or corrupt plan
    /// is refused with the command that rebuilds it.
    pub fn open(&self, devices: usize, shapes: Vec<VolumeShape>) -> Result<Vec<Arc<dyn Engine>>, crate::Error> {
        let data = |e: UNetError| crate::Error::Data(e.to_string());
        let roi = model_roi(&self.model_path).map_err(data)?;
        let plan = self.load_fresh(&[1, roi, roi, roi])?;
        Ok(open_each(devices, |d| GpuUNet3dEngine::open(d, &plan, shapes.clone(), self.streams, self.use_graphs))?)
    }
}

/// The region of interest of a 3D-UNet ONNX model: its input's side (`[N, 1, R, R, R]`).
fn model_roi(path: &Path) -> Result<usize, UNetError> {
    let dims = model_input_dims(path)?;
    match dims.as_slice() {
        [_, Some(1), Some(d), Some(h), Some(w)] if d == h && h == w && *d >= 2 => Ok(*d as usize),
        _ => Err(UNetError::InputShape { origin: path.display().to_string(), shape: format!("{dims:?}") }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::gpu::convnet::builder::{ConvnetRequest, write};

    #[test]
    fn agreement_counts_voxels_and_per_class_dice() {
        let cpu = vec![vec![0, 1, 1, 2, 2, 0, 0, 0]];
        let gpu = vec![vec![0, 1, 2, 2, 2, 0, 0, 1]];
        let a = Agreement::of(&cpu, &gpu);
        assert_eq!((a.voxels, a.agreeing), (8, 6));
        // Kidney: both 1 voxel, CPU 2, GPU 2 -> 0.5; tumor: both 2, CPU 2, GPU 3 -> 0.8.
        assert_eq!(a.dice, [0.5, 0.8]);
        assert!(!a.acceptable());
        assert!(Agreement::of(&cpu, &cpu).acceptable());
        assert!(a.to_string().contains("75.000 %"), "{a}");
    }

    use crate::benchmarks::unet3d::model::{UNet3dShape, unet3d};
    use crate::benchmarks::unet3d::synthetic::{self, SEED, SyntheticKits, case_shape, case_volume};
    use prost::Message;
    use std::time::Instant;

    /// Builds a plan of `model` at `batch` (reporting the algorithm choices).
    fn plan_of(model: &Path, roi: usize, batch: usize) -> ConvnetPlan {
        let request = ConvnetRequest { model_path: model, ordinal: 0, batch, input: &[1, roi, roi, roi], workspace_bytes: 8 << 30, cut: None };
        let started = Instant::now();
        let plan = build(&request, &mut |line| println!("  {line}")).unwrap();
        println!("unet3d_gpu: plan of {} at batch {batch} built in {:.1} s", model.display(), started.elapsed().as_secs_f64());
        plan
    }

    #[test]
    fn configs_resolve_to_an_fp16_plan_of_the_model_s_region() {
        use crate::dataset::SampleSet;
        use crate::engines::gpu::spec::PlanIdentity;
        use mlperf_config::{DataType, Scenario, Settings, Workload as WorkloadSetting};
        let dir = std::env::temp_dir().join(format!("mlperf-unet3d-gpu-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = dir.join("m.onnx");
        let shape = UNet3dShape { filters: vec![8, 16], roi: 16, class_bias: [0.0; CLASSES] };
        std::fs::write(&model, unet3d(&shape, 1).encode_to_vec()).unwrap();
        assert_eq!(model_roi(&model).unwrap(), 16);
        let spec = |settings| WorkloadSpec {
            settings,
            plan: PlanIdentity { system: "H200-SXM-141GBx1", scenario: Scenario::Offline, workload: WorkloadSetting::default() },
            total_samples: 43,
            performance_samples: 43,
            set: SampleSet::Accuracy,
            devices: 1,
            output_limit: None,
        };
        let settings = Settings { gpu_batch_size: Some(vec![("3d-unet".into(), 8)].into()), precision: Some(DataType::Fp16), ..Settings::default() };
        let gpu = UNetGpuSpec::of(&spec(&settings), model.clone()).unwrap();
        assert_eq!(gpu.batch, 8);
        assert!(gpu.plan_path.ends_with("H200-SXM-141GBx1/Offline/3d-unet/gpu-3d-unet-fp16-b8.default.plan"), "{}", gpu.plan_path.display());
        let int8 = Settings { precision: Some(DataType::Int8), ..settings.clone() };
        let e = UNetGpuSpec::of(&spec(&int8), model).err().unwrap().to_string();
        assert!(e.contains("runs fp16") && e.contains("--precision=fp16"), "{e}");
        std::fs::write(dir.join("bad.onnx"), b"not onnx").unwrap();
        assert!(model_roi(&dir.join("bad.onnx")).unwrap_err().to_string().contains("not an ONNX model"));
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    #[ignore = "needs a GPU"]
    fn unet3d_gpu_agrees_with_the_cpu_engine_on_the_synthetic_set() {
        // The CPU-dev set: its labels are the CPU engine's, so DICE against them is agreement.
        let dir = std::env::temp_dir().join(format!("mlperf-unet3d-gpu-{}", std::process::id()));
        let set = SyntheticKits::in_dir(&dir);
        synthetic::ensure(&set, &mut |m| println!("{m}")).unwrap();
        let cases = set.preprocessed().read_index().unwrap();
        let roi = CpuUNet3dEngine::load(&set.model(), vec![]).unwrap().roi();
        let plan = plan_of(&set.model(), roi, 4);
        let path = dir.join("unet3d.plan");
        write(&plan, &path).unwrap();
        let plan = ConvnetPlan::load(&path).unwrap();
        let shapes: Vec<_> = cases.iter().map(|c| c.shape).collect();
        let engine = GpuUNet3dEngine::open(0, &plan, shapes, 2, true).unwrap();
        let (mut cpu, mut gpu) = (Vec::new(), Vec::new());
        for case in &cases {
            let read = set.preprocessed().read_case(case).unwrap();
            gpu.push(engine.segment(&read.image, case.shape).unwrap());
            cpu.push(read.labels.to_vec());
        }
        let agreement = Agreement::of(&cpu, &gpu);
        println!("unet3d_gpu synthetic set ({} cases, ROI {roi}): {agreement}", cases.len());
        assert!(agreement.acceptable(), "{agreement}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// MLPerf's size: filters [32, 64, 128, 256, 320], ROI 128; volumes of KiTS19-like shapes.
    /// `MLPERF_UNET3D_ONNX` names where the model is written (for the PyTorch comparator);
    /// `MLPERF_UNET3D_BATCH` the batch (8, the configs'); `MLPERF_UNET3D_SET`, if set, a directory
    /// where the 43 cases are written in the reference's preprocessed layout (the first a single
    /// window, so that `generate_engines` checks its plan against the CPU engine in seconds) with
    /// this plan's labels as their ground truth: a set of MLPerf's size for speed runs through
    /// `mlperf`, whose accuracy is agreement with this engine.
    #[test]
    #[ignore = "needs a GPU"]
    fn unet3d_gpu_full_size_agreement_and_throughput() {
        let roi = 128;
        let path = std::env::var("MLPERF_UNET3D_ONNX").map(std::path::PathBuf::from).unwrap_or_else(|_| std::env::temp_dir().join("unet3d_full.onnx"));
        let mut shape = UNet3dShape { filters: vec![32, 64, 128, 256, 320], roi, class_bias: [0.0; CLASSES] };
        std::fs::write(&path, unet3d(&shape, SEED).encode_to_vec()).unwrap();
        // The logits' biases as the synthetic set sets them (minus each class's mean), measured on
        // the GPU over the first volume's first window (a plan of batch 1).
        let first = case_shape(SEED, 0, roi);
        let volume = case_volume(SEED, 0, first, roi);
        let plan = plan_of(&path, roi, 1);
        let model = Convnet::load(0, &plan).unwrap();
        let mut slot = Slot::new(&model, 8 << 30, false).unwrap();
        let ([z, y, x], [_, h, w]) = (windows(first, roi).unwrap()[0], first);
        let mut input = Vec::new();
        for a in 0..roi {
            for c in 0..roi {
                let row = ((z + a) * h + y + c) * w + x;
                input.extend_from_slice(&volume[row..row + roi]);
            }
        }
        let logits = slot.run_host(&input).unwrap();
        let means: Vec<f64> = logits.chunks_exact(roi * roi * roi).map(|class| class.iter().map(|&v| f64::from(v)).sum::<f64>() / class.len() as f64).collect();
        drop(slot);
        let batch: usize = std::env::var("MLPERF_UNET3D_BATCH").ok().and_then(|b| b.parse().ok()).unwrap_or(8);
        shape.class_bias = [0, 1, 2].map(|k| -means[k] as f32);
        println!("unet3d_gpu full size: class biases {:?}", shape.class_bias);
        std::fs::write(&path, unet3d(&shape, SEED).encode_to_vec()).unwrap();
        let plan = plan_of(&path, roi, batch);

        // Throughput: the network alone per batch, and whole volumes of KiTS19-like shapes.
        let shapes: Vec<VolumeShape> = (0..6).map(|i| case_shape(SEED, i, roi)).collect();
        let engine = GpuUNet3dEngine::open(0, &plan, shapes.clone(), 1, true).unwrap();
        let ms = engine.slots.with(|s| s.net.time_batches(10)).unwrap();
        println!("unet3d_gpu network: {ms:.2} ms per batch of {batch} windows, {:.1} windows/s", 1000.0 * batch as f64 / ms);
        let volumes: Vec<Vec<u8>> = shapes.iter().enumerate().map(|(i, s)| le_bytes(&case_volume(SEED, i, *s, roi))).collect();
        engine.segment(&volumes[0], shapes[0]).unwrap();
        let count: usize = shapes.iter().map(|s| windows(*s, roi).unwrap().len()).sum();
        let report = |how: &str, secs: f64| {
            let (n, w) = (shapes.len() as f64, count as f64);
            println!("unet3d_gpu volumes, {how}: {n} volumes ({w} windows, shapes {shapes:?}) in {secs:.3} s: {:.2} volumes/s, {:.1} windows/s", n / secs, w / secs);
        };
        let started = Instant::now();
        let one_by_one: Vec<Vec<u8>> = volumes.iter().zip(&shapes).map(|(v, s)| engine.segment(v, *s).unwrap()).collect();
        report("1 stream, a volume a call", started.elapsed().as_secs_f64());
        let all: Vec<(&[u8], VolumeShape)> = volumes.iter().map(|v| &v[..]).zip(shapes.iter().copied()).collect();
        let started = Instant::now();
        let packed = engine.segment_all(&all).unwrap();
        report("1 stream, 6 volumes a call (windows packed)", started.elapsed().as_secs_f64());
        // Each voxel still adds its volume's windows in order; a window's logits may still change
        // in their last bits with its place in the batch, flipping voxels where two logits tie.
        let same = Agreement::of(&one_by_one, &packed);
        println!("unet3d_gpu packed vs a volume a call: {same}; identical: {}", packed == one_by_one);
        assert!(same.acceptable(), "{same}");
        let two = GpuUNet3dEngine::open(0, &plan, shapes.clone(), 2, true).unwrap();
        two.segment(&volumes[0], shapes[0]).unwrap();
        let started = Instant::now();
        std::thread::scope(|scope| {
            for half in all.chunks(3) {
                let two = &two;
                scope.spawn(move || two.segment_all(half).unwrap());
            }
        });
        report("2 streams, 3 volumes a call on each", started.elapsed().as_secs_f64());
        drop(two);
        if let Ok(dir) = std::env::var("MLPERF_UNET3D_SET") {
            let set = crate::benchmarks::unet3d::preprocessed::Preprocessed::in_dir(Path::new(&dir));
            std::fs::create_dir_all(&set.dir).unwrap();
            let cases: Vec<Case> = crate::benchmarks::unet3d::INFERENCE_CASES
                .iter()
                .enumerate()
                .map(|(i, name)| Case { name: name.to_string(), shape: if i == 0 { [roi; 3] } else { case_shape(SEED, i, roi) } })
                .collect();
            let engine = GpuUNet3dEngine::open(0, &plan, cases.iter().map(|c| c.shape).collect(), 1, true).unwrap();
            for (i, case) in cases.iter().enumerate() {
                let image = le_bytes(&case_volume(SEED, i, case.shape, roi));
                set.write_case(case, &image, &engine.segment(&image, case.shape).unwrap()).unwrap();
            }
            set.write_index(&cases).unwrap();
            let windows: usize = cases.iter().map(|c| windows(c.shape, roi).unwrap().len()).sum();
            println!("unet3d_gpu full size: {} cases ({windows} windows) written to {dir}", cases.len());
        }
        // Agreement with the CPU engine on a volume of two overlapping windows.
        let check = [[roi + roi / 2, roi, roi]];
        let engine = GpuUNet3dEngine::open(0, &plan, check.to_vec(), 1, true).unwrap();
        let cpu_engine = CpuUNet3dEngine::load(&path, check.to_vec()).unwrap();
        let (mut cpu, mut gpu) = (Vec::new(), Vec::new());
        for (i, s) in check.iter().enumerate() {
            let v = case_volume(SEED, i + 1, *s, roi);
            let started = Instant::now();
            cpu.push(cpu_engine.segment(&v, *s).unwrap());
            println!("unet3d_gpu full size: CPU engine {:?} in {:.1} s", s, started.elapsed().as_secs_f64());
            gpu.push(engine.segment(&le_bytes(&v), *s).unwrap());
        }
        let agreement = Agreement::of(&cpu, &gpu);
        let shares: Vec<f64> = (0..CLASSES as u8).map(|k| cpu.iter().flatten().filter(|&&l| l == k).count() as f64 / agreement.voxels as f64).collect();
        println!("unet3d_gpu full size vs CPU engine: {agreement}; CPU label shares {shares:.3?}");

        assert!(agreement.acceptable(), "{agreement}");
    }
}
