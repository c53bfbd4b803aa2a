//! `generate_engines` for the GPU engine: a plan is reused when its key matches what is wanted
//! now, rebuilt (saying why) when stale or corrupt, and built from the ONNX model otherwise:
//! import and fuse, quantise (int8 plans, with the calibration's ranges, weights per channel),
//! lower, time cuDNN's algorithms and accumulators, and for int8 layers cuDNN graphs and our 1x1
//! kernel, on GPU 0 within the workspace limit, quantise again per tensor the int8 layers the
//! legacy call runs, check the result against the CPU engine (retuning with fp32 sums only if a
//! plan with fp16 sums disagrees), write the plan atomically. An int8 plan is checked against its
//! quantised network run by the CPU engine (`export`); what int8 changes against the fp32 model is
//! reported.

use super::calibration::Calibration;
use super::device;
use super::error::GpuError;
use super::exec::{DeviceModel, Slot};
use super::network::WeightScaling;
use super::plan::{self, Accumulator, Plan, PlanHeader, PlanKey, PlanStatus};
use super::spec::GpuSpec;
use super::{GpuEngine, RunOptions, export, lower, network};
use crate::engines::cpu::{CpuEngine, parallel_chunks};
use crate::engines::{ElementType, InputSpec, SampleSource};
use crate::fsutil::write_atomic;
use prost::Message as _;

pub struct BuildRequest<'a> {
    pub spec: &'a GpuSpec,
    /// Samples to check the plan against the CPU engine with (none: no check).
    pub check_samples: Option<(&'a dyn SampleSource, usize)>,
    /// The int8 ranges (int8 plans only).
    pub calibration: Option<&'a Calibration>,
}

/// What `ensure_plan` did.
pub enum Outcome {
    Reused,
    Built { reason: String, report: String },
}

/// The samples as a plan key records them, e.g. "int8 NCHW 3x224x224 scale 1".
pub fn input_description(f: &InputSpec) -> String {
    format!("{} {} {}x{}x{} scale {}", f.element, f.layout.name(), f.channels, f.height, f.width, f.scale)
}

/// The key a plan for this request must have on this machine (GPU 0 stands for all: a system's
/// GPUs are identical).
pub fn wanted_key(req: &BuildRequest) -> Result<PlanKey, GpuError> {
    let spec = req.spec;
    let calibration_sha256 = match (spec.precision, req.calibration) {
        (ElementType::F16, _) => String::new(),
        (ElementType::I8, Some(c)) => c.sha256(),
        (ElementType::I8, None) => return Err(GpuError::Build("an int8 plan needs a calibration (run `mlperf calibrate`)".into())),
        (other @ (ElementType::F32 | ElementType::I32), _) => return Err(GpuError::Build(format!("the GPU engine builds fp16 and int8 plans; this config asks for {other}"))),
    };
    let (gpu_name, compute_capability, cuda_driver_version) = device::device_identity(0)?;
    Ok(PlanKey {
        format_version: plan::FORMAT_VERSION,
        model_sha256: plan::file_sha256(&spec.model_path)?,
        gpu_name,
        compute_capability,
        cuda_driver_version,
        cudnn_version: super::cudnn::version(),
        cublaslt_version: 0,
        batch_size: spec.batch_size(),
        precision: spec.precision,
        input: input_description(&spec.input),
        workspace_bytes: spec.workspace_bytes as u64,
        calibration_sha256,
    })
}

/// Reuses an up-to-date plan or builds a new one.
pub fn ensure_plan(req: &BuildRequest, progress: &mut dyn FnMut(&str)) -> Result<Outcome, GpuError> {
    let key = wanted_key(req)?;
    let reason = match plan::check(&req.spec.plan_path, &key) {
        PlanStatus::Fresh => return Ok(Outcome::Reused),
        PlanStatus::Missing => "no plan yet".to_string(),
        PlanStatus::Stale(diffs) => format!("stale plan ({})", diffs.join("; ")),
        PlanStatus::Corrupt(why) => format!("corrupt plan ({why})"),
    };
    progress(&format!("building {}: {reason}", req.spec.plan_path.display()));
    let report = build(req, key, progress)?;
    Ok(Outcome::Built { reason, report })
}

fn build(req: &BuildRequest, key: PlanKey, progress: &mut dyn FnMut(&str)) -> Result<String, GpuError> {
    let spec = req.spec;
    let model_path = &spec.model_path;
    let origin = || model_path.display().to_string();
    let bytes = std::fs::read(model_path).map_err(|source| GpuError::ModelUnreadable { origin: origin(), source })?;
    let proto = tract_onnx::pb::ModelProto::decode(bytes.as_slice()).map_err(|source| GpuError::NotOnnx { origin: origin(), source })?;
    let fp32_net = network::build(&proto).map_err(|e| e.in_model(model_path.display()))?;
    let input = &spec.input;
    if (fp32_net.channels, fp32_net.height, fp32_net.width) != (input.channels, input.height, input.width) {
        return Err(GpuError::Build(format!(
            "{} takes {}x{}x{} images but the config's samples are {}x{}x{}",
            model_path.display(),
            fp32_net.channels,
            fp32_net.height,
            fp32_net.width,
            input.channels,
            input.height,
            input.width
        )));
    }
    // Int8 weights start per channel; layers where the legacy call wins are quantised per tensor
    // after tuning (`settle_weight_scaling`).
    let mut net = fp32_net.clone();
    if let Some(calibration) = req.calibration {
        let int8 = network::quantize(&mut net, &calibration.amax, &|_| WeightScaling::PerChannel)?;
        progress(&format!("{int8} convolutions quantised to int8 ({} calibration images)", calibration.images));
    }
    let mut plan = lowered_plan(&net, key, model_path)?;
    let classes = plan.header.classes;
    let convs = plan.header.layers.iter().filter(|l| matches!(l.kind, plan::LayerKind::Conv { .. })).count();
    progress(&format!("{} layers ({convs} fused convolutions); timing cuDNN algorithms and graphs at batch {}", plan.header.layers.len(), spec.batch_size()));
    tune(&mut plan, req, &[Accumulator::Fp32, Accumulator::Fp16], progress)?;
    settle_weight_scaling(&mut plan, &mut net, &fp32_net, req.calibration, progress)?;
    if let Some((source, samples)) = req.check_samples {
        let samples = samples.min(spec.batch_size());
        let origin = model_path.display().to_string();
        let fp32 = reference_logits(&proto, &origin, req, source, samples)?;
        let quantised = |net: &network::Network| reference_logits(&export::to_onnx(net)?.model, &format!("{origin}, quantised"), req, source, samples);
        let int8 = req.calibration.map(|_| quantised(&net)).transpose()?;
        let mut references = References { fp32, int8, classes, offset: header_offset(classes) };
        plan.header.verification = match verify(&plan, req, source, &references) {
            Err(why) if count_sums(&plan.header, Accumulator::Fp16) > 0 => {
                progress(&format!("{why}; {} layers sum in fp16: timing again with fp32 sums only", count_sums(&plan.header, Accumulator::Fp16)));
                tune(&mut plan, req, &[Accumulator::Fp32], progress)?;
                if settle_weight_scaling(&mut plan, &mut net, &fp32_net, req.calibration, progress)? {
                    references.int8 = Some(quantised(&net)?);
                }
                verify(&plan, req, source, &references)?
            }
            checked => checked?,
        };
        progress(&plan.header.verification);
    }
    write_atomic(&spec.plan_path, &plan.to_bytes())?;
    let runs = |runner: fn(&plan::ConvRunner) -> bool| plan.header.layers.iter().filter(|l| matches!(&l.kind, plan::LayerKind::Conv { runner: r, .. } if runner(r))).count();
    let (graphs, pointwise) = (runs(|r| matches!(r, plan::ConvRunner::Graph(_))), runs(|r| matches!(r, plan::ConvRunner::Pointwise)));
    let stem = if runs(|r| matches!(r, plan::ConvRunner::Stem)) > 0 { "; the stem on our kernel, writing int8" } else { "" };
    let total_us: f32 = plan.header.layers.iter().map(|l| if let plan::LayerKind::Conv { measured_us, .. } = l.kind { measured_us } else { 0.0 }).sum();
    Ok(format!(
        "{convs} convolutions ({} in int8, {graphs} of them as cuDNN graphs and {pointwise} as our 1x1 kernel, with per-channel weight scales; {} summing in fp16{stem}), {:.2} ms per batch of {} in convolutions alone; {}",
        count_sums(&plan.header, Accumulator::Int32),
        count_sums(&plan.header, Accumulator::Fp16),
        total_us / 1000.0,
        spec.batch_size(),
        plan.header.verification
    ))
}

/// The plan of a fused (and possibly quantised) network, untuned.
pub(super) fn lowered_plan(net: &network::Network, key: PlanKey, model_path: &std::path::Path) -> Result<Plan, GpuError> {
    // Our tensor-core kernels need compute capability 8.0 (the key's "MAJOR.MINOR").
    let tensor_cores = key.compute_capability.split('.').next().and_then(|major| major.parse::<u32>().ok()).is_some_and(|major| major >= 8);
    let lowered = lower::lower(net, tensor_cores)?;
    let classes = lowered.classes;
    let header = PlanHeader {
        key,
        model_path: model_path.display().to_string(),
        layers: lowered.layers,
        buffer_of: lowered.buffer_of,
        buffer_elements: lowered.buffer_elements,
        output: lowered.output,
        classes,
        class_offset: header_offset(classes),
        input_layout: lowered.input_layout,
        blob_len: lowered.blob.len(),
        blob_sha256: plan::sha256_hex(&lowered.blob),
        verification: String::new(),
    };
    Ok(Plan { header, blob: lowered.blob })
}

/// Makes each int8 layer's weight scaling fit what tuning chose to run it: per channel for a cuDNN
/// graph or our 1x1 kernel, per tensor for the legacy call (which takes one scale). Where any
/// differs, the network is quantised again from `fp32` and lowered, and the tuning carried over
/// layer by layer (the times do not depend on the weights' values). Returns whether the network
/// changed.
pub(super) fn settle_weight_scaling(
    plan: &mut Plan,
    net: &mut network::Network,
    fp32: &network::Network,
    calibration: Option<&Calibration>,
    progress: &mut dyn FnMut(&str),
) -> Result<bool, GpuError> {
    let Some(calibration) = calibration else { return Ok(false) };
    // Each int8 layer's scaling follows its form; the layers whose current scaling differs.
    let (mut wanted, mut to_tensor, mut to_channel) = (std::collections::HashMap::new(), 0, 0);
    for layer in &plan.header.layers {
        let plan::LayerKind::Conv { epilogue_offset: Some(_), per_channel, runner, .. } = &layer.kind else { continue };
        let scaling = runner.weight_scaling();
        wanted.insert(layer.name.as_str(), scaling);
        match (*per_channel, scaling == WeightScaling::PerChannel) {
            (true, false) => to_tensor += 1,
            (false, true) => to_channel += 1,
            _ => {}
        }
    }
    if to_tensor + to_channel == 0 {
        return Ok(false);
    }
    progress(&format!(
        "quantising again: {to_tensor} int8 layers per tensor (the legacy call runs them; it takes one weight scale), {to_channel} per channel (a graph or our 1x1 kernel runs them)"
    ));
    // Only int8 layers are asked (`quantize` keeps the others fp16).
    let scaling = |name: &str| wanted.get(name).copied().unwrap_or(WeightScaling::PerTensor);
    let mut requantised = fp32.clone();
    network::quantize(&mut requantised, &calibration.amax, &scaling)?;
    let mut settled = lowered_plan(&requantised, plan.header.key.clone(), std::path::Path::new(&plan.header.model_path))?;
    for (new, tuned) in settled.header.layers.iter_mut().zip(&plan.header.layers) {
        use plan::LayerKind::Conv;
        if let (
            Conv { accumulator, algorithm, workspace_bytes, measured_us, runner, .. },
            Conv { accumulator: a, algorithm: al, workspace_bytes: w, measured_us: m, runner: r, .. },
        ) = (&mut new.kind, &tuned.kind)
        {
            (*accumulator, *algorithm, *workspace_bytes, *measured_us, *runner) = (*a, *al, *w, *m, r.clone());
        }
    }
    (*plan, *net) = (settled, requantised);
    Ok(true)
}

/// Chooses every convolution's algorithm and accumulator on GPU 0 (see `Slot::choose_algorithms`).
fn tune(plan: &mut Plan, req: &BuildRequest, accumulators: &[Accumulator], progress: &mut dyn FnMut(&str)) -> Result<(), GpuError> {
    let limit = req.spec.workspace_bytes;
    let model = DeviceModel::load(0, &plan.header, &plan.blob, req.spec.input)?;
    let slot = Slot::new(&model, limit, limit, false)?;
    slot.choose_algorithms(&mut plan.header, accumulators, limit, progress)
}

fn count_sums(header: &PlanHeader, sums: Accumulator) -> usize {
    header.layers.iter().filter(|l| matches!(l.kind, plan::LayerKind::Conv { accumulator, .. } if accumulator == sums)).count()
}

/// The class id of logit 0: 1001-class models (MLPerf's resnet50_v1.onnx) put "background" there.
fn header_offset(classes: usize) -> i32 {
    if classes == 1001 { -1 } else { 0 }
}

/// Top-1 agreement with the CPU engine an fp16 plan needs. fp16 storage alone flips near-ties: 2
/// of 256 with fp32 sums on the synthetic ResNet50 at 224 px (an H200), so 99% would leave no
/// headroom; fp16 sums flipped 10 of 256 there and are rejected; a broken plan agrees on a few
/// percent. The accuracy run, not this check, is the gate for MLPerf's 99% accuracy target.
pub const MIN_AGREEMENT_PERCENT: usize = 98;
/// How much larger than the quantised network's own (on the CPU) an int8 plan's logit error
/// against the fp32 model may be. Top-1 agreement cannot judge an int8 plan: one rounding step
/// taken differently (another summation order, the fp16 stem) changes later roundings, so two
/// correct int8 computations differ about as much as int8 differs from fp32, and on a model with
/// small top-1 margins (the synthetic one) that flips many answers. A wrong layer adds error well
/// beyond the quantisation's.
pub const MAX_INT8_ERROR_RATIO: f32 = 1.25;

/// The CPU engine's (tract, fp32) logits of `model` for the first `samples` samples, computed once
/// per build and on every core (one tract thread would otherwise dominate the build time).
fn reference_logits(model: &tract_onnx::pb::ModelProto, origin: &str, req: &BuildRequest, source: &dyn SampleSource, samples: usize) -> Result<Vec<f32>, GpuError> {
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).min(samples.max(1));
    let chunk = samples.div_ceil(threads).max(1);
    let cpu = CpuEngine::from_proto(model, origin, InputSpec { batch_size: chunk, ..req.spec.input })?;
    parallel_chunks(0..samples, threads, chunk, |range| {
        let data: Vec<_> = range.map(|i| source.sample(i)).collect();
        cpu.scores(&data.iter().map(|s| &s[..]).collect::<Vec<_>>()).map_err(|e| e.to_string())
    })
    .map_err(GpuError::Other)
}

/// What a plan is checked against: the CPU engine's logits of the model and, for an int8 plan, of
/// the quantised network (`export`), on the same samples.
struct References {
    fp32: Vec<f32>,
    int8: Option<Vec<f32>>,
    classes: usize,
    /// Class id of logit 0.
    offset: i32,
}

impl References {
    /// `logits` and their class ids `top1` compared with `reference`.
    fn compare(&self, logits: &[f32], top1: &[i32], reference: &[f32]) -> Agreement {
        let mut agreement = Agreement { samples: top1.len(), top1: 0, max_relative_error: 0.0, rms_relative_error: 0.0 };
        let (mut error_sq, mut reference_sq) = (0f64, 0f64);
        for (b, (l, r)) in logits.chunks_exact(self.classes).zip(reference.chunks_exact(self.classes)).enumerate() {
            let scale = r.iter().fold(0f32, |m, v| m.max(v.abs())).max(f32::MIN_POSITIVE);
            let err = l.iter().zip(r).fold(0f32, |m, (x, y)| m.max((x - y).abs()));
            agreement.max_relative_error = agreement.max_relative_error.max(err / scale);
            error_sq += l.iter().zip(r).map(|(x, y)| ((x - y) as f64).powi(2)).sum::<f64>();
            reference_sq += r.iter().map(|y| (*y as f64).powi(2)).sum::<f64>();
            agreement.top1 += usize::from(crate::engines::cpu::argmax(r) as i32 + self.offset == top1[b]);
        }
        agreement.rms_relative_error = (error_sq / reference_sq.max(f64::MIN_POSITIVE)).sqrt() as f32;
        agreement
    }
}

/// How far one engine's answers are from a reference's on the same samples.
struct Agreement {
    samples: usize,
    /// Samples whose top-1 class is the reference's.
    top1: usize,
    /// The largest logit error, relative to the sample's largest reference logit.
    max_relative_error: f32,
    /// The root of the summed squared logit errors over the summed squared reference logits.
    rms_relative_error: f32,
}

impl std::fmt::Display for Agreement {
    fn fmt(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        let (top1, n, max, rms) = (self.top1, self.samples, self.max_relative_error, self.rms_relative_error);
        write!(f, "top-1 agreement {top1}/{n}, max relative logit error {max:.2e}, rms {rms:.2e}")
    }
}

/// Runs the plan on the references' samples and judges its answers (see [`judge`]).
fn verify(plan: &Plan, req: &BuildRequest, source: &dyn SampleSource, references: &References) -> Result<String, GpuError> {
    let options = RunOptions { streams: 1, use_graphs: false, resident_samples: 0, workspace_bytes: req.spec.workspace_bytes };
    let gpu = GpuEngine::open(0, plan, req.spec.input, options)?;
    let indices: Vec<usize> = (0..references.fp32.len() / references.classes).collect();
    let (gpu_top1, gpu_logits) = gpu.classify(&indices, source, true)?;
    judge(references, &gpu_logits, &gpu_top1)
}

/// A plan's logits and class ids against the references. An fp16 plan needs
/// [`MIN_AGREEMENT_PERCENT`] top-1 agreement with the CPU engine; an int8 plan's error against
/// fp32 may be at most [`MAX_INT8_ERROR_RATIO`] times the quantised network's (or it agrees with
/// the quantised network as an fp16 plan must with fp32).
fn judge(references: &References, logits: &[f32], top1: &[i32]) -> Result<String, GpuError> {
    let batch = top1.len();
    let vs_fp32 = references.compare(logits, top1, &references.fp32);
    let Some(int8) = &references.int8 else {
        let line = format!("checked against the CPU engine: {vs_fp32}");
        if vs_fp32.top1 * 100 < batch * MIN_AGREEMENT_PERCENT {
            return Err(GpuError::Build(format!("the GPU plan disagrees with the CPU engine: {line}")));
        }
        return Ok(line);
    };
    let int8_top1: Vec<i32> = int8.chunks_exact(references.classes).map(|l| crate::engines::cpu::argmax(l) as i32 + references.offset).collect();
    let own = references.compare(int8, &int8_top1, &references.fp32);
    let vs_int8 = references.compare(logits, top1, int8);
    let ratio = vs_fp32.rms_relative_error / own.rms_relative_error.max(f32::MIN_POSITIVE);
    let line = format!(
        "checked against the CPU engine: the plan against fp32: {vs_fp32} ({ratio:.2}x the int8 network's); \
         the int8 network against fp32: {own}; the plan against the int8 network: {vs_int8}"
    );
    // Where int8 loses next to nothing the ratio measures fp16 noise: matching answers suffice.
    if ratio > MAX_INT8_ERROR_RATIO && vs_int8.top1 * 100 < batch * MIN_AGREEMENT_PERCENT {
        return Err(GpuError::Build(format!("the GPU plan errs more than its int8 network (at most {MAX_INT8_ERROR_RATIO}x): {line}")));
    }
    Ok(line)
}

#[cfg(test)]
mod tests {
    use super::{References, judge};
    use crate::engines::synthetic::rng::SplitMix64;

    const CLASSES: usize = 10;
    const SAMPLES: usize = 200;

    /// `base` plus uniform noise of half-width `noise` from `seed`'s stream.
    fn perturbed(base: &[f32], noise: f32, seed: u64) -> Vec<f32> {
        let mut rng = SplitMix64::new(seed);
        base.iter().map(|v| v + noise * rng.symmetric()).collect()
    }

    fn top1(logits: &[f32]) -> Vec<i32> {
        logits.chunks_exact(CLASSES).map(|l| crate::engines::cpu::argmax(l) as i32).collect()
    }

    #[test]
    fn fp16_plans_need_matching_answers() {
        let fp32 = perturbed(&vec![0.0; SAMPLES * CLASSES], 3.0, 1);
        let references = References { fp32: fp32.clone(), int8: None, classes: CLASSES, offset: 0 };
        let close = perturbed(&fp32, 1e-5, 2);
        assert!(judge(&references, &close, &top1(&close)).unwrap().contains(&format!("top-1 agreement {SAMPLES}/{SAMPLES}")));
        let unrelated = perturbed(&vec![0.0; SAMPLES * CLASSES], 3.0, 3);
        let e = judge(&references, &unrelated, &top1(&unrelated)).unwrap_err().to_string();
        assert!(e.starts_with("the GPU plan disagrees with the CPU engine"), "{e}");
        // The class ids are judged as the plan reports them, not recomputed from its logits.
        let shifted: Vec<i32> = top1(&close).iter().map(|c| (c + 1) % CLASSES as i32).collect();
        assert!(judge(&references, &close, &shifted).is_err());
    }

    #[test]
    fn int8_plans_may_err_as_much_as_their_quantised_network_not_more() {
        let fp32 = perturbed(&vec![0.0; SAMPLES * CLASSES], 3.0, 1);
        let int8 = perturbed(&fp32, 0.5, 2);
        let references = References { fp32: fp32.clone(), int8: Some(int8.clone()), classes: CLASSES, offset: 0 };
        // Another rounding of the same size (many answers differ from the int8 network's): passes.
        let rounded_otherwise = perturbed(&fp32, 0.5, 3);
        let line = judge(&references, &rounded_otherwise, &top1(&rounded_otherwise)).unwrap();
        assert!(line.contains("the int8 network against fp32: top-1 agreement"), "{line}");
        assert!(judge(&references, &int8, &top1(&int8)).unwrap().contains("(1.00x the int8 network's)"));
        // Twice the error: refused.
        let worse = perturbed(&fp32, 1.0, 4);
        let e = judge(&references, &worse, &top1(&worse)).unwrap_err().to_string();
        assert!(e.starts_with("the GPU plan errs more than its int8 network (at most 1.25x)"), "{e}");
        // A quantisation that loses nothing: the ratio is noise, matching answers pass.
        let lossless = References { int8: Some(perturbed(&fp32, 1e-6, 5)), ..references };
        let close = perturbed(&fp32, 1e-5, 6);
        assert!(judge(&lossless, &close, &top1(&close)).is_ok());
    }
}
