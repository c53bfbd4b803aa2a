//! The GPU engine for YOLO: the network on the convnet engine (`engines::gpu::convnet`: the
//! backbone fp16 channels-last through cuDNN, the attention as f32 dense values), cut where the
//! detection head's convolutions end ([`LEVELS`]: the three levels' rows of 4 x 16 DFL logits and 80
//! class logits); its ends on the device ([`gpu.cu`](self)): a batch's letterboxed bytes go up as
//! they are (3 bytes a pixel), or with `start_from_device` are read from the device's resident
//! sample pool, and become the network's fp16 input there; one kernel decodes the levels as the
//! exported head does (DFL, anchors, strides, sigmoids) and keeps per anchor the best class and its
//! score, so 6 values per anchor come back instead of 84, and the head's twenty-odd dense
//! reshuffles never run. NMS, the boxes back to the image and the response are the CPU engine's
//! own ([`super::detect`]), on the host, one thread per image of a batch. The slots' networks run
//! in turn on the GPU ([`InTurn`]), so one slot's NMS overlaps the next one's network rather than
//! every slot's NMS falling into the same gap.
//!
//! `generate_engines` builds the plan and checks the `output0` that the decoding kernel writes
//! from it against the CPU engine's (tract, f32, the whole exported head) on the set's first
//! images before writing it; runs refuse a missing, stale or corrupt plan.

use super::cpu::CpuYoloEngine;
use super::dataset::{CocoSet, read_image};
use super::detect::{Detection, respond, suppress};
use super::error::YoloError;
use super::letterbox::{SAMPLE_HEADER, letterbox, sample_bytes};
use super::model::{CLASSES, REG_MAX, STRIDES, anchors};
use crate::benchmarks::WorkloadSpec;
use crate::engines::cpu::parallel_chunks;
use crate::engines::gpu::convnet::builder::{ConvnetSpec, build, model_input_dims};
use crate::engines::gpu::convnet::exec::{Convnet, Slot, elementwise as launch};
use crate::engines::gpu::convnet::import::{Cut, Net, OpKind, TensorOp, ValueShape};
use crate::engines::gpu::convnet::plan::ConvnetPlan;
use crate::engines::gpu::device::{self, DeviceBuffer, InTurn, PinnedBuffer, compile_for, cu, host_threads};
use crate::engines::gpu::open_each;
use crate::engines::gpu::resident::ResidentPool;
use crate::engines::gpu::{GpuError, RunOptions, SlotPool};
use crate::engines::{Engine, EngineError, SampleSource};
use cudarc::driver::{CudaEvent, CudaFunction, LaunchConfig, PushKernelArg, result as dr};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const KERNELS: &str = concat!(include_str!("../../engines/gpu/half.cuh"), include_str!("gpu.cu"));
/// Values per anchor the device returns: the box (centre, size), the best score, its class.
const ANCHOR_VALUES: usize = 6;
/// Channels of each level's output: the DFL's logits, then the classes'.
const LEVEL_CHANNELS: usize = 4 * REG_MAX + CLASSES;

/// YOLO's plans end at the detection head's three level outputs, decoded by `decode_levels`.
pub const LEVELS: Cut = Cut { name: "yolo detect levels", outputs: detect_levels };

/// The head's level outputs of an imported YOLO network: per stride, the one image value of
/// [`LEVEL_CHANNELS`] channels at that level's side that the head flattens (a `Reshape` to dense).
fn detect_levels(net: &Net) -> Result<Vec<usize>, GpuError> {
    let size = net.values[0].spatial.first().copied().unwrap_or(0);
    let (_, readers) = net.uses();
    let flattened = |v: usize| readers[v].iter().any(|&r| matches!(net.ops[r].kind, OpKind::Tensor(TensorOp::ToDense)));
    STRIDES
        .iter()
        .map(|&stride| {
            let side = size / stride;
            let found: Vec<usize> = (0..net.values.len())
                .filter(|&v| {
                    let shape = &net.values[v];
                    !shape.dense && shape.channels == LEVEL_CHANNELS && shape.spatial == [side, side] && flattened(v)
                })
                .collect();
            match found.as_slice() {
                [v] => Ok(*v),
                _ => Err(GpuError::Network(format!(
                    "{} values of {LEVEL_CHANNELS} channels at {side} x {side} flattened by the head, where a YOLO detection head has one per level (stride {stride}): not an exported YOLOv11",
                    found.len()
                ))),
            }
        })
        .collect()
}

/// One stream's network slot and its staging buffers, sized for the plan's batch.
struct ImageSlot {
    net: Slot,
    /// The network's three level outputs: each one's address and row width, as `decode_levels` takes them.
    levels: [(u64, i32); 3],
    host_pixels: PinnedBuffer,
    pixels: DeviceBuffer,
    /// Where each image of the batch starts on the device (u64 addresses), for `letterboxed_input`.
    host_images: PinnedBuffer,
    images: DeviceBuffer,
    host_anchors: PinnedBuffer,
    anchors: DeviceBuffer,
    /// Recorded after the slot's network, for the next slot's run to wait on ([`InTurn`]).
    network_done: Arc<CudaEvent>,
}

/// What the levels are decoded into: the slot's anchor rows (downloaded for NMS), or output0.
enum Decoded<'a> {
    Anchors,
    Output0(&'a DeviceBuffer),
}

/// A batch's images: the letterboxed pixels on the host, or the resident pool's slot numbers.
enum Images<'a> {
    Host(&'a [&'a [u8]]),
    Resident(&'a [i32]),
}

impl Images<'_> {
    fn len(&self) -> usize {
        match self {
            Images::Host(i) => i.len(),
            Images::Resident(s) => s.len(),
        }
    }
}

/// One GPU detecting with a YOLO plan.
pub struct GpuYoloEngine {
    name: String,
    model: Arc<Convnet>,
    to_input: CudaFunction,
    decode: CudaFunction,
    size: usize,
    anchors: usize,
    slots: SlotPool<ImageSlot>,
    /// The slots' networks run one after another, so that one slot's NMS overlaps another's network.
    networks: InTurn,
    /// `start_from_device`: the performance set's samples (header and pixels) on the device.
    resident: Option<ResidentPool>,
}

impl GpuYoloEngine {
    /// The plan on GPU `ordinal`, run as `options` say.
    pub fn open(ordinal: usize, plan: &ConvnetPlan, options: RunOptions) -> Result<GpuYoloEngine, GpuError> {
        let model = Convnet::load(ordinal, plan)?;
        let x = model.input_shape().clone();
        let size = x.spatial.first().copied().unwrap_or(0);
        let levels: Vec<_> = model.output_shapes().into_iter().cloned().collect();
        let level_fits = |(y, stride): (&ValueShape, &usize)| !y.dense && y.channels == LEVEL_CHANNELS && y.padded == LEVEL_CHANNELS && y.spatial == [size / stride, size / stride];
        if x.channels != 3 || x.padded % 8 != 0 || x.spatial != [size, size] || levels.len() != STRIDES.len() || !levels.iter().zip(&STRIDES).all(level_fits) {
            return Err(GpuError::PlanContent(format!(
                "the plan built from {} is not a YOLO detector cut at its head's levels ({x:?} -> {levels:?}); rebuild it",
                plan.header.model_path
            )));
        }
        let cc = cu("compute capability", model.ctx.compute_capability())?;
        let module = cu("load kernels", model.ctx.load_module(compile_for("yolo kernels", KERNELS, cc, Vec::new())?))?;
        let f = |name: &str| cu(&format!("kernel {name}"), module.load_function(name));
        let (to_input, decode) = (f("letterboxed_input")?, f("decode_levels")?);
        let workspace = plan.header.net.ops.iter().map(|op| if let OpKind::Conv { workspace, .. } = op.kind { workspace } else { 0 }).max().unwrap_or(0);
        let workspace = workspace.min(options.workspace_bytes.max(1));
        let (batch, anchors) = (model.batch(), anchors(size));
        let (pixel_bytes, anchor_bytes) = (batch * 3 * size * size, 4 * batch * anchors * ANCHOR_VALUES);
        let slots = (0..options.streams.max(1))
            .map(|_| {
                let net = Slot::new(&model, workspace, options.use_graphs)?;
                let levels = net.outputs().iter().map(|(p, row)| (p.raw(), *row as i32)).collect::<Vec<_>>().try_into().expect("three levels, checked above");
                Ok(ImageSlot {
                    net,
                    levels,
                    host_pixels: PinnedBuffer::new(pixel_bytes)?,
                    pixels: DeviceBuffer::new(pixel_bytes)?,
                    host_images: PinnedBuffer::new(8 * batch)?,
                    images: DeviceBuffer::new(8 * batch)?,
                    host_anchors: PinnedBuffer::new(anchor_bytes)?,
                    anchors: DeviceBuffer::new(anchor_bytes)?,
                    network_done: Arc::new(cu("create event", model.ctx.new_event(None))?),
                })
            })
            .collect::<Result<Vec<_>, GpuError>>()?;
        let resident = match options.resident_samples {
            0 => None,
            n => Some(ResidentPool::new(n, sample_bytes(size))?),
        };
        Ok(GpuYoloEngine { name: format!("gpu{ordinal}-yolo"), model, to_input, decode, size, anchors, slots: SlotPool::new(slots), networks: InTurn::default(), resident })
    }

    pub fn batch(&self) -> usize {
        self.model.batch()
    }

    /// The network's input side S.
    pub fn size(&self) -> usize {
        self.size
    }

    /// The detections (input pixels, before NMS's cut to the image) of up to a batch of letterboxed
    /// images (RGB, CHW, S x S bytes each).
    pub fn detect(&self, images: &[&[u8]]) -> Result<Vec<Vec<Detection>>, GpuError> {
        self.detect_images(Images::Host(images))
    }

    /// [`Self::detect`] of samples `indices` of `source`, whose pixels are `images`: from the
    /// resident pool where the engine has one and the samples fit it.
    fn detect_samples(&self, indices: &[usize], source: &dyn SampleSource, images: &[&[u8]]) -> Result<Vec<Vec<Detection>>, GpuError> {
        // The pool uploads on this thread, which may not have the context yet (a harness worker).
        device::bind(&self.model.ctx)?;
        match self.resident.as_ref().map(|pool| pool.slots_for(indices, source)).transpose()?.flatten() {
            Some(slots) => self.detect_images(Images::Resident(&slots)),
            None => self.detect(images),
        }
    }

    fn detect_images(&self, images: Images) -> Result<Vec<Vec<Detection>>, GpuError> {
        self.slots.with(|slot| {
            self.run_on(slot, &images, Decoded::Anchors)?;
            let values: &[u8] = &slot.host_anchors.as_slice()[..4 * images.len() * self.anchors * ANCHOR_VALUES];
            Ok(post_process(values, images.len(), self.anchors))
        })
    }

    /// The exported model's `output0` (f32 `[n, 84, A]`, decoded from the plan's levels) for up to
    /// a batch of letterboxed images: what the builder checks against the CPU engine.
    pub fn output(&self, images: &[&[u8]]) -> Result<Vec<f32>, GpuError> {
        let mut out = vec![0f32; images.len() * (4 + CLASSES) * self.anchors];
        device::bind(&self.model.ctx)?;
        let whole = DeviceBuffer::new(4 * out.len())?;
        self.slots.with(|slot| self.run_on(slot, &Images::Host(images), Decoded::Output0(&whole)))?;
        // SAFETY: `n` images' output0 in a buffer of that size; run_on synchronized.
        cu("download output", unsafe { dr::memcpy_dtoh_sync(&mut out, whole.ptr().raw()) })?;
        Ok(out)
    }

    /// Uploads `images` (or finds them in the resident pool), runs the network and decodes its
    /// levels as `into` says; returns when the stream has finished.
    fn run_on(&self, slot: &mut ImageSlot, images: &Images, into: Decoded) -> Result<(), GpuError> {
        let (n, image_bytes) = (images.len(), 3 * self.size * self.size);
        if n == 0 || n > self.batch() || matches!(images, Images::Host(i) if i.iter().any(|i| i.len() != image_bytes)) {
            return Err(GpuError::Run(format!("{n} images for a plan of batch {} at {} px", self.batch(), self.size)));
        }
        device::bind(&self.model.ctx)?;
        let stream = slot.net.stream.clone();
        let s = stream.cu_stream();
        let starts: Vec<u64> = match images {
            Images::Host(images) => {
                slot.host_pixels.fill_from(images, host_threads(n));
                // SAFETY: `n` images of the slot's pinned buffer into its device buffer, both sized
                // for the plan's batch; the stream finishes before the host buffer is written again.
                cu("upload images", unsafe { dr::memcpy_htod_async(slot.pixels.ptr().raw(), &slot.host_pixels.as_slice()[..n * image_bytes], s) })?;
                (0..n).map(|i| slot.pixels.ptr().offset(i * image_bytes).raw()).collect()
            }
            Images::Resident(slots) => {
                let pool = self.resident.as_ref().expect("resident slots come from the engine's pool");
                // Past each sample's header (its original size) to its pixels.
                slots.iter().map(|&s| pool.ptr().offset(s as usize * pool.sample_bytes() + SAMPLE_HEADER).raw()).collect()
            }
        };
        let table = &mut slot.host_images.as_mut_slice()[..8 * n];
        for (to, start) in table.chunks_exact_mut(8).zip(&starts) {
            to.copy_from_slice(&start.to_le_bytes());
        }
        // SAFETY: `n` addresses from the slot's pinned table into its device table, both sized for
        // the plan's batch; the stream finishes before the host table is written again.
        cu("upload image table", unsafe { dr::memcpy_htod_async(slot.images.ptr().raw(), &slot.host_images.as_slice()[..8 * n], s) })?;
        let x = self.model.input_shape();
        let (pixels, input) = (slot.images.ptr().raw(), slot.net.input().raw());
        let (positions, padded) = ((self.size * self.size) as i32, x.padded as i32);
        let mut l = stream.launch_builder(&self.to_input);
        l.arg(&pixels).arg(&input).arg(&positions).arg(&padded);
        let per_image = launch(positions as usize);
        // SAFETY: letterboxed_input's parameters; `n` addresses of images of `positions` pixels (the
        // slot's upload or the pool's samples, which live as long as the engine) and `n` images of
        // the input buffer, whose rows hold `padded` (a multiple of 8, checked in `open`) channels.
        cu("convert images", unsafe { l.launch(LaunchConfig { grid_dim: (per_image.grid_dim.0, n as u32, 1), ..per_image }) })?;
        self.networks.run(&stream, &slot.network_done, || slot.net.run())?;
        let (whole, out) = match into {
            Decoded::Output0(buffer) => (1i32, buffer.ptr().raw()),
            Decoded::Anchors => (0i32, slot.anchors.ptr().raw()),
        };
        let sides = STRIDES.map(|s| (self.size / s) as i32);
        let (size, classes, a, total) = (self.size as i32, CLASSES as i32, self.anchors as i32, (n * self.anchors) as i64);
        let [(p0, r0), (p1, r1), (p2, r2)] = &slot.levels;
        let mut l = stream.launch_builder(&self.decode);
        l.arg(p0).arg(p1).arg(p2).arg(r0).arg(r1).arg(r2);
        l.arg(&sides[0]).arg(&sides[1]).arg(&sides[2]).arg(&size).arg(&classes).arg(&a).arg(&total).arg(&out).arg(&whole);
        // SAFETY: decode_levels's parameters; the three level outputs of `n` images (checked in
        // `open`: rows of LEVEL_CHANNELS channels, a multiple of 8, at the strides' sides), and an
        // output of `n` images' output0 (`output`'s buffer) or anchor rows (the slot's).
        cu("decode levels", unsafe { l.launch(launch(total as usize)) })?;
        if matches!(into, Decoded::Anchors) {
            let bytes = 4 * n * self.anchors * ANCHOR_VALUES;
            // SAFETY: the first `n` images' rows into the slot's pinned buffer of the batch's size;
            // read after the synchronization below.
            cu("download anchors", unsafe { dr::memcpy_dtoh_async(&mut slot.host_anchors.as_mut_slice()[..bytes], out, s) })?;
        }
        cu("synchronize", stream.synchronize())?;
        Ok(())
    }
}

/// Per image, its anchors' rows (6 f32 each) to candidates and NMS; one thread per image (as
/// many as the machine has cores), since NMS of thousands of candidates is the host's share.
fn post_process(values: &[u8], images: usize, anchors: usize) -> Vec<Vec<Detection>> {
    let per_image = 4 * anchors * ANCHOR_VALUES;
    let one = |rows: &[u8]| -> Vec<Detection> {
        let value = |i: usize| f32::from_le_bytes([rows[4 * i], rows[4 * i + 1], rows[4 * i + 2], rows[4 * i + 3]]);
        let candidates = (0..anchors).filter_map(|a| {
            let v = |k: usize| value(a * ANCHOR_VALUES + k);
            Detection::of_anchor([v(0), v(1), v(2), v(3)], v(4), v(5) as usize)
        });
        suppress(candidates.collect())
    };
    let found =
        parallel_chunks(0..images, host_threads(images), 1, |range| Ok::<_, std::convert::Infallible>(range.map(|i| one(&values[i * per_image..(i + 1) * per_image])).collect()));
    match found {
        Ok(found) => found,
        Err(never) => match never {},
    }
}

impl Engine for GpuYoloEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        for chunk in indices.chunks(self.batch()) {
            respond(chunk, source, self.size, outputs, |images| Ok(self.detect_samples(chunk, source, images)?)).map_err(EngineError::new)?;
        }
        Ok(())
    }
}

/// How far a plan's `output0` is from the CPU engine's over the same images: the largest
/// difference in the box rows relative to the boxes' range, and in the score rows.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct OutputAgreement {
    pub images: usize,
    pub boxes: f32,
    pub scores: f32,
}

/// The builder's rule. fp16 storage through some 200 layers moves a box by well under a pixel of
/// 640 and a sigmoid score by well under 0.01 (measured: docs/performance.md); a wrong op or layout
/// moves them by their whole range.
pub const MAX_BOX_ERROR: f32 = 1e-2;
pub const MAX_SCORE_ERROR: f32 = 1e-2;

impl OutputAgreement {
    /// `gpu` and `cpu`: `output0` of the same images, `[n, 84, anchors]`.
    pub fn of(gpu: &[f32], cpu: &[f32], anchors: usize) -> OutputAgreement {
        let images = cpu.len() / ((4 + CLASSES) * anchors).max(1);
        // A length mismatch is a wrong network: no agreement at all.
        if gpu.len() != cpu.len() {
            return OutputAgreement { images, boxes: f32::INFINITY, scores: f32::INFINITY };
        }
        let (mut boxes, mut scores) = ((0f32, 0f32), (0f32, 0f32));
        for (i, (g, c)) in gpu.iter().zip(cpu).enumerate() {
            let e = if (i / anchors) % (4 + CLASSES) < 4 { &mut boxes } else { &mut scores };
            e.0 = e.0.max((g - c).abs());
            e.1 = e.1.max(c.abs());
        }
        OutputAgreement { images, boxes: boxes.0 / boxes.1.max(1e-3), scores: scores.0 / scores.1.max(1e-3) }
    }

    pub fn acceptable(&self) -> bool {
        self.boxes <= MAX_BOX_ERROR && self.scores <= MAX_SCORE_ERROR
    }
}

impl std::fmt::Display for OutputAgreement {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        write!(f, "output0 vs CPU engine over {} images: boxes {:.2e}, scores {:.2e} of their ranges", self.images, self.boxes, self.scores)
    }
}

/// Images the builder checks a plan on (the CPU engine runs YOLOv11-L in seconds per image).
const CHECK_IMAGES: usize = 4;

/// The GPU plan a YOLO config describes ([`ConvnetSpec`]) and what YOLO does with it.
pub struct YoloGpuSpec {
    plan: ConvnetSpec,
    /// `start_from_device`: the performance set stays on each GPU.
    resident_samples: usize,
}

impl std::ops::Deref for YoloGpuSpec {
    type Target = ConvnetSpec;
    fn deref(&self) -> &ConvnetSpec {
        &self.plan
    }
}

impl YoloGpuSpec {
    pub fn of(spec: &WorkloadSpec, model_path: PathBuf) -> Result<YoloGpuSpec, crate::Error> {
        let resident_samples = if spec.settings.start_from_device.unwrap_or(false) { spec.performance_samples } else { 0 };
        let plan = ConvnetSpec { cut: Some(LEVELS), ..ConvnetSpec::of(spec.settings, &spec.plan, "yolo", model_path)? };
        Ok(YoloGpuSpec { plan, resident_samples })
    }

    /// `generate_engines`: reuses an up-to-date plan, or builds one, checks its `output0` against
    /// the CPU engine's on the first images of `set` (refused beyond [`OutputAgreement::acceptable`])
    /// and writes it. Returns a line for the user.
    pub fn generate(&self, set: &CocoSet, images: &[PathBuf], progress: &mut dyn FnMut(&str)) -> Result<String, YoloError> {
        let size = model_size(&self.model_path)?;
        let input = [3, size, size];
        if self.is_fresh(&input)? {
            return Ok(format!("{}: up to date, reused", self.plan_path.display()));
        }
        let plan = build(&self.request(&input), progress)?;
        let engine = GpuYoloEngine::open(0, &plan, RunOptions { streams: 1, use_graphs: false, resident_samples: 0, workspace_bytes: self.workspace_bytes })?;
        let cpu_engine = CpuYoloEngine::load(&self.model_path, 1)?;
        let mut letterboxed = Vec::new();
        for (i, path) in images.iter().take(CHECK_IMAGES).enumerate() {
            letterboxed.push(letterbox(&read_image(path, i)?, size).0);
        }
        let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
        for chunk in letterboxed.chunks(engine.batch()) {
            let views: Vec<&[u8]> = chunk.iter().map(Vec::as_slice).collect();
            gpu.extend(engine.output(&views)?);
            for view in views {
                cpu.extend(cpu_engine.output(&[view])?);
            }
        }
        let agreement = OutputAgreement::of(&gpu, &cpu, anchors(size));
        if !agreement.acceptable() {
            return Err(GpuError::Build(format!(
                "the plan disagrees with the CPU engine on {} ({agreement}; needs boxes <= {MAX_BOX_ERROR:.0e} and scores <= {MAX_SCORE_ERROR:.0e}); not written",
                set.dir.display()
            ))
            .into());
        }
        self.write_checked(plan, agreement.to_string())?;
        Ok(format!("{}: built; {agreement}", self.plan_path.display()))
    }

    /// The plan on each of `devices` GPUs, and the model's input side S (read once: the export is
    /// about 100 MB); a missing, stale or corrupt plan is refused with the command that rebuilds it.
    pub fn open(&self, devices: usize) -> Result<(Vec<Arc<dyn Engine>>, usize), crate::Error> {
        let size = model_size(&self.model_path)?;
        let plan = self.load_fresh(&[3, size, size])?;
        let options = RunOptions { streams: self.streams, use_graphs: self.use_graphs, resident_samples: self.resident_samples, workspace_bytes: self.workspace_bytes };
        Ok((open_each(devices, |d| GpuYoloEngine::open(d, &plan, options))?, size))
    }
}

/// The input side S of a YOLO ONNX export (`images` `[N, 3, S, S]`).
fn model_size(path: &Path) -> Result<usize, YoloError> {
    let dims = model_input_dims(path)?;
    match dims.as_slice() {
        [_, Some(3), Some(h), Some(w)] if h == w && *h >= 32 && h % 32 == 0 => Ok(*h as usize),
        _ => Err(YoloError::InputShape { origin: path.display().to_string(), shape: format!("{dims:?}") }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::gpu::convnet::builder::ConvnetRequest;

    #[test]
    fn output_agreement_is_relative_to_each_rows_range() {
        // 2 anchors: rows 0..4 boxes, then 80 score rows.
        let cpu: Vec<f32> = (0..84 * 2).map(|i| if i < 8 { 100.0 + i as f32 } else { 0.5 }).collect();
        let mut gpu = cpu.clone();
        gpu[3] += 0.5; // 0.5 px of a 107 px range
        gpu[100] += 0.004;
        let a = OutputAgreement::of(&gpu, &cpu, 2);
        assert_eq!(a.images, 1);
        assert!((a.boxes - 0.5 / 107.0).abs() < 1e-6 && (a.scores - 0.008).abs() < 1e-6, "{a:?}");
        assert!(a.acceptable());
        gpu[9] = 0.0;
        assert!(!OutputAgreement::of(&gpu, &cpu, 2).acceptable(), "a score off by its whole range");
        assert!(!OutputAgreement::of(&gpu[..84], &cpu, 2).acceptable(), "another shape");
        assert!(a.to_string().contains("over 1 images"), "{a}");
    }

    #[test]
    fn anchors_rows_become_the_cpu_engine_s_detections() {
        // The device's rows for 3 anchors of one image vs the CPU engine's path over the same
        // output: same candidates, same NMS.
        let anchors = 3;
        let mut output = vec![0f32; (4 + CLASSES) * anchors];
        let boxes = [[50.0, 50.0, 20.0, 20.0], [51.0, 50.0, 20.0, 20.0], [10.0, 10.0, 4.0, 4.0]];
        let best = [(3, 0.9), (3, 0.8), (7, 0.0005)];
        let mut rows = Vec::new();
        for a in 0..anchors {
            for r in 0..4 {
                output[r * anchors + a] = boxes[a][r];
            }
            output[(4 + best[a].0) * anchors + a] = best[a].1;
            rows.extend(boxes[a].iter().copied().chain([best[a].1, best[a].0 as f32]));
        }
        let bytes: Vec<u8> = rows.iter().flat_map(|v| v.to_le_bytes()).collect();
        let found = post_process(&bytes, 1, anchors);
        assert_eq!(found, vec![super::super::detect::non_max_suppression(&output, CLASSES, anchors)]);
        assert_eq!(found[0].len(), 1, "the second box is suppressed, the third below the threshold");
        let two: Vec<u8> = bytes.iter().chain(&bytes).copied().collect();
        assert_eq!(post_process(&two, 2, anchors), vec![found[0].clone(), found[0].clone()], "one thread per image");
    }

    /// The plan ends at the head's three levels: the DFL, the anchor arithmetic and the sigmoids
    /// (the decoding kernel's work) are gone, the attention's dense ops stay, nothing is
    /// overwritten before it is read; a network without YOLO's head is refused, saying why.
    #[test]
    fn plans_end_at_the_head_s_three_levels() {
        use super::super::model::{YoloShape, yolo11};
        use crate::engines::gpu::convnet::import::import;
        use crate::engines::gpu::convnet::place::{assert_schedule_keeps_values, places};
        let (mut net, _) = import(&yolo11(&YoloShape { size: 64, width_divisor: 16, class_bias: -2.0 }, 7), &[3, 64, 64]).unwrap();
        let all = net.ops.len();
        net.cut(detect_levels(&net).unwrap()).unwrap();
        let shapes: Vec<(usize, Vec<usize>)> = net.outputs.iter().map(|&v| (net.values[v].channels, net.values[v].spatial.clone())).collect();
        assert_eq!(shapes, [(144, vec![8, 8]), (144, vec![4, 4]), (144, vec![2, 2])]);
        let tensor = |f: &dyn Fn(&TensorOp) -> bool| net.ops.iter().filter(|op| matches!(&op.kind, OpKind::Tensor(t) if f(t))).count();
        assert_eq!(tensor(&|t| matches!(t, TensorOp::Softmax { .. })), 2, "the attention's, not the DFL's");
        let head: Vec<&str> = net
            .ops
            .iter()
            .filter(|op| matches!(&op.kind, OpKind::Tensor(TensorOp::Activation(_) | TensorOp::Pointwise { .. } | TensorOp::Binary { .. })) && !op.name.contains(".attn."))
            .map(|op| op.name.as_str())
            .collect();
        assert!(head.is_empty(), "the head's dense arithmetic is left: {head:?}");
        println!("{} of {all} ops left", net.ops.len());
        net.places = places(&net);
        assert_schedule_keeps_values(&net);
        let unet = crate::benchmarks::unet3d::model::unet3d(&crate::benchmarks::unet3d::model::UNet3dShape { filters: vec![8], roi: 16, class_bias: [0.0; 3] }, 1);
        let (unet, _) = import(&unet, &[1, 16, 16, 16]).unwrap();
        let e = detect_levels(&unet).unwrap_err().to_string();
        assert!(e.contains("0 values of 144 channels") && e.contains("not an exported YOLOv11"), "{e}");
    }

    /// The config's side of the plan (batch, path, fp16) is [`ConvnetSpec`]'s, tested with
    /// 3D-UNet's; YOLO's is the model's input side.
    #[test]
    fn models_give_their_input_side_and_others_are_refused() {
        let dir = std::env::temp_dir().join(format!("mlperf-yolo-gpu-spec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let model = dir.join("m.onnx");
        let shape = super::super::model::YoloShape { size: 64, width_divisor: 16, class_bias: -2.0 };
        std::fs::write(&model, prost::Message::encode_to_vec(&super::super::model::yolo11(&shape, 1))).unwrap();
        assert_eq!(model_size(&model).unwrap(), 64);
        std::fs::write(dir.join("bad.onnx"), b"not onnx").unwrap();
        let e = model_size(&dir.join("bad.onnx")).unwrap_err().to_string();
        assert!(e.contains("not an ONNX model"), "{e}");
        let unet = crate::benchmarks::unet3d::model::unet3d(&crate::benchmarks::unet3d::model::UNet3dShape { filters: vec![8], roi: 16, class_bias: [0.0; 3] }, 1);
        std::fs::write(dir.join("unet.onnx"), prost::Message::encode_to_vec(&unet)).unwrap();
        let e = model_size(&dir.join("unet.onnx")).unwrap_err().to_string();
        assert!(e.contains("takes") && e.contains("[N, 3, S, S]"), "{e}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    #[ignore = "needs a GPU"]
    fn yolo_gpu_engine_answers_as_the_cpu_engine() {
        use super::super::letterbox::encode_sample;
        use super::super::model::{YoloShape, yolo11};
        use crate::dataset::image::RgbImage;
        let dir = std::env::temp_dir().join(format!("mlperf-yolo-gpu-engine-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("yolo.onnx");
        std::fs::write(&path, prost::Message::encode_to_vec(&yolo11(&YoloShape { size: 64, width_divisor: 16, class_bias: -2.0 }, 7))).unwrap();
        let plan = build(&ConvnetRequest { model_path: &path, ordinal: 0, batch: 2, input: &[3, 64, 64], workspace_bytes: 1 << 30, cut: Some(LEVELS) }, &mut |_| {}).unwrap();
        let options = |streams, resident_samples| RunOptions { streams, use_graphs: true, resident_samples, workspace_bytes: 1 << 30 };
        let engine = GpuYoloEngine::open(0, &plan, options(2, 0)).unwrap();
        let samples: Vec<Vec<u8>> = [(40, 30), (50, 90), (64, 64)]
            .iter()
            .enumerate()
            .map(|(i, &(w, h))| encode_sample(&RgbImage::new(w, h, (0..w * h * 3).map(|v| ((v * (7 + i)) % 251) as u8).collect()), 64))
            .collect();
        let views: Vec<&[u8]> = samples[..2].iter().map(|s| &s[8..]).collect();
        // The device's per-anchor reduction gives what NMS over the whole output gives.
        let output = engine.output(&views).unwrap();
        let whole: Vec<Vec<Detection>> = output.chunks_exact((4 + CLASSES) * anchors(64)).map(|o| super::super::detect::non_max_suppression(o, CLASSES, anchors(64))).collect();
        assert_eq!(engine.detect(&views).unwrap(), whole);
        let cpu_engine = CpuYoloEngine::load(&path, 2).unwrap();
        let agreement = OutputAgreement::of(&output, &cpu_engine.output(&views).unwrap(), anchors(64));
        println!("yolo_gpu engine: {agreement}");
        assert!(agreement.acceptable(), "{agreement}");
        // Three samples at batch 2: a whole batch and a part one, each image answered.
        let (mut gpu, mut cpu) = (Vec::new(), Vec::new());
        engine.infer(&[0, 1, 2], &samples, &mut gpu).unwrap();
        cpu_engine.infer(&[0, 1, 2], &samples, &mut cpu).unwrap();
        let counts = |r: &[Vec<u8>]| r.iter().map(|b| b.len() / 28).collect::<Vec<_>>();
        println!("yolo_gpu engine: detections per image GPU {:?}, CPU {:?}", counts(&gpu), counts(&cpu));
        assert_eq!(gpu.len(), 3);
        assert!(gpu.iter().all(|r| !r.is_empty() && r.len() % 28 == 0));
        let e = engine.infer(&[0], &vec![vec![0u8; 5]], &mut Vec::new()).unwrap_err().to_string();
        assert!(e.contains("sample 0 holds 5 bytes"), "{e}");
        // start_from_device: the same responses from the resident pool, and from the host for a
        // batch past the pool's room (two samples: the third goes up with its batch), on a thread
        // of its own as the harness's workers are (the pool uploads there).
        let resident = GpuYoloEngine::open(0, &plan, options(2, 2)).unwrap();
        let mut from_pool = Vec::new();
        std::thread::scope(|s| s.spawn(|| resident.infer(&[0, 1, 2, 1, 0], &samples, &mut from_pool).unwrap()).join().unwrap());
        assert_eq!(from_pool, [0, 1, 2, 1, 0].map(|i| gpu[i].clone()));
        // Where a batch's time goes at full size, where MLPERF_YOLO_ONNX names a 640 px network:
        // the network alone, the network with the ends on the device, and the host's NMS.
        if let Ok(path) = std::env::var("MLPERF_YOLO_ONNX") {
            let batch: usize = std::env::var("MLPERF_YOLO_BATCH").ok().and_then(|b| b.parse().ok()).unwrap_or(64);
            for batch in [1, batch] {
                let plan =
                    build(&ConvnetRequest { model_path: Path::new(&path), ordinal: 0, batch, input: &[3, 640, 640], workspace_bytes: 1 << 30, cut: Some(LEVELS) }, &mut |_| {})
                        .unwrap();
                let engine = GpuYoloEngine::open(0, &plan, options(1, 0)).unwrap();
                let images: Vec<Vec<u8>> = (0..batch).map(|i| (0..3 * 640 * 640).map(|v| ((v * (7 + i)) % 251) as u8).collect()).collect();
                let views: Vec<&[u8]> = images.iter().map(Vec::as_slice).collect();
                let net = engine.slots.with(|s| s.net.time_batches(20)).unwrap();
                engine.slots.with(|s| super::super::model::tests::print_profile(&s.net, &plan, batch, net));
                let time = |f: &dyn Fn()| {
                    f();
                    let started = std::time::Instant::now();
                    for _ in 0..10 {
                        f();
                    }
                    started.elapsed().as_secs_f64() * 100.0
                };
                let ends = time(&|| engine.slots.with(|s| engine.run_on(s, &Images::Host(&views), Decoded::Anchors)).unwrap());
                let values = engine.slots.with(|s| s.host_anchors.as_slice()[..4 * batch * anchors(640) * ANCHOR_VALUES].to_vec());
                let host = time(&|| drop(post_process(&values, batch, anchors(640))));
                let whole = time(&|| drop(engine.detect(&views).unwrap()));
                println!("yolo_gpu engine batch {batch}: network {net:.3} ms, with the device's ends {ends:.3} ms, host NMS {host:.3} ms, detect {whole:.3} ms per batch");
                // Two slots at once, as Offline's two streams: the networks alone, then whole batches
                // from the host and from the resident pool (start_from_device).
                let rate = |f: &(dyn Fn() + Sync)| {
                    let started = std::time::Instant::now();
                    std::thread::scope(|s| {
                        for _ in 0..2 {
                            s.spawn(f);
                        }
                    });
                    (2 * 10 * batch) as f64 / started.elapsed().as_secs_f64()
                };
                let samples: Vec<Vec<u8>> = images.iter().map(|p| [&640u32.to_le_bytes()[..], &640u32.to_le_bytes(), p].concat()).collect();
                let indices: Vec<usize> = (0..batch).collect();
                for resident in [0, batch] {
                    let two = GpuYoloEngine::open(0, &plan, options(2, resident)).unwrap();
                    let nets = || {
                        two.slots.with(|s| {
                            for _ in 0..10 {
                                s.net.run().unwrap();
                            }
                            s.net.stream.synchronize().unwrap();
                        })
                    };
                    let infers = || (0..10).for_each(|_| two.infer(&indices, &samples, &mut Vec::new()).unwrap());
                    // The first round captures each slot's graph (and fills the pool).
                    let (_, nets, _, infers) = (rate(&nets), rate(&nets), rate(&infers), rate(&infers));
                    println!("yolo_gpu engine batch {batch}, two slots at once, {resident} resident: networks alone {nets:.1} images/s, whole batches {infers:.1} images/s");
                }
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
