//! The CPU engine: an ONNX image classifier run by tract, answering each sample with its predicted
//! class as a little-endian i32 (what the ImageNet accuracy script reads with `--dtype int32`).
//!
//! It is the engine of the CPU-only development system and the accuracy oracle that GPU engines are
//! checked against, so it favours exactness and determinism over speed:
//!
//! - **Fixed shapes.** The model is typed and optimised for the configured batch size (a fixed shape
//!   lets tract pick its kernels and lay out memory once), plus a second plan for batch 1. A request
//!   runs as whole batches on the first; what is left (a short batch: SingleStream's single sample,
//!   a Server batch cut short by its timeout, the tail of an Offline run) runs either one sample at
//!   a time on the batch-1 plan or zero-padded to a whole batch, whichever is cheaper. Which is
//!   cheaper depends on the machine and model (a batch amortises the weight traffic, padding wastes
//!   compute), so the engine times both plans once when it is built and keeps the crossover. Tract
//!   gives bit-identical results per sample whatever the batch and padding (tested below), so the
//!   choice never changes an answer.
//! - **Threads.** A tract plan is immutable and shared (`Arc<TypedSimplePlan>`); what one run
//!   mutates is its `SimpleState`. Each plan keeps a pool of idle states: a worker takes one, runs,
//!   and puts it back, so concurrent `infer` calls never wait on each other and never allocate a
//!   state after warm-up. Tract itself runs single-threaded here: parallelism comes from the
//!   harness's workers (one per core), which is what a 2-core machine wants.
//! - **Inputs.** Samples arrive in the configured layout and element type; they are converted to
//!   f32 in the model's own layout (NCHW or NHWC, read from the model) while the batch tensor is
//!   filled, which costs one pass over the input and nothing when layouts already agree.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use tract_onnx::pb::ModelProto;
use tract_onnx::prelude::tract_data::internal::DimLike;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

use crate::engines::io::InputSpecError;
use crate::engines::{Engine, EngineError, InputSpec, Layout, SampleSource};

/// Why the CPU engine cannot load a model or run it. Load errors (the model file missing,
/// unparsable, or not the classifier the config describes) are [`crate::Error::Data`]; run errors
/// are [`crate::Error::Other`]. tract's own errors are kept (`cause`) and shown with their chain.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CpuError {
    #[error("CPU engine: model {origin}: {source}")]
    ModelUnreadable { origin: String, source: std::io::Error },
    #[error("CPU engine: model {origin} is not a file")]
    NotAFile { origin: String },
    #[error("CPU engine: cannot read ONNX model {origin}: {cause:#}")]
    NotOnnx { origin: String, cause: TractError },
    /// The config's input spec is unusable; `reason` is [`InputSpec::validate`]'s.
    #[error("CPU engine for {origin}: {reason}")]
    BadSpec { origin: String, reason: InputSpecError },
    #[error("CPU engine: model {origin} does not accept a batch of {batch} x {input}: {cause:#}")]
    BatchNotAccepted { origin: String, batch: usize, input: String, cause: TractError },
    /// tract refused a query about the model's graph.
    #[error("CPU engine: model {origin}: {cause:#}")]
    Model { origin: String, cause: TractError },
    /// tract failed without a model to name (building a tensor, reading outlets).
    #[error("{0:#}")]
    Tract(TractError),
    #[error("CPU engine: cannot optimise model {origin} for batch {batch}: {cause:#}")]
    CannotOptimise { origin: String, batch: usize, cause: TractError },
    #[error("CPU engine: model {origin} has {count} inputs; an image classifier has one")]
    InputCount { origin: String, count: usize },
    #[error("CPU engine: model {origin} takes {dtype:?} input `{input}`; the CPU engine feeds f32")]
    InputType { origin: String, dtype: DatumType, input: String },
    #[error("CPU engine: model {origin} declares input `{input}` as {shape}, not a batch of images (rank 4)")]
    InputRank { origin: String, input: String, shape: String },
    #[error(
        "CPU engine: model {origin} declares input `{input}` as {shape}, which fits neither {c}x{h}x{w} (NCHW) nor \
         {h}x{w}x{c} (NHWC) from the config (image size {h}x{w}, {c} channels)"
    )]
    InputShape { origin: String, input: String, shape: String, c: usize, h: usize, w: usize },
    #[error(
        "CPU engine: model {origin} has no classifier output (per-sample scores or class ids) for batch {batch}; \
         outputs: {}",
        outputs.join(", ")
    )]
    NoClassifierOutput { origin: String, batch: usize, outputs: Vec<String> },
    #[error("model {origin} outputs class ids, not scores")]
    NotScores { origin: String },
    #[error("CPU engine: model {origin} failed: {cause:#}")]
    RunFailed { origin: String, cause: TractError },
    #[error("CPU engine: model {origin}: unexpected output: {cause:#}")]
    UnexpectedOutput { origin: String, cause: TractError },
    #[error("CPU engine for {origin}: a sample has {bytes} bytes, the input is {input} = {needs} bytes")]
    SampleSize { origin: String, bytes: usize, input: String, needs: usize },
}

impl From<CpuError> for crate::Error {
    fn from(e: CpuError) -> crate::Error {
        match e {
            CpuError::NotScores { .. } | CpuError::RunFailed { .. } | CpuError::UnexpectedOutput { .. } | CpuError::SampleSize { .. } | CpuError::Tract(_) => {
                crate::Error::Other(e.to_string())
            }
            _ => crate::Error::Data(e.to_string()),
        }
    }
}

/// One optimised plan for one input shape, with its pool of idle run states (the BERT engine's
/// plans too, one per sequence-length bucket).
pub(crate) struct Plan {
    batch: usize,
    plan: Arc<TypedSimplePlan>,
    /// States not in use. A state holds per-run scratch; taking one out of the pool (rather than
    /// locking one shared state for the whole run) lets any number of workers run at once.
    idle: Mutex<Vec<TypedSimpleState>>,
}

impl Plan {
    pub(crate) fn new(model: TypedModel, batch: usize) -> TractResult<Plan> {
        let plan = model.into_optimized()?.into_runnable()?;
        Ok(Plan { batch, plan, idle: Mutex::new(Vec::new()) })
    }

    fn run(&self, input: Tensor) -> TractResult<TVec<TValue>> {
        self.run_inputs(tvec!(input.into_tvalue()))
    }

    pub(crate) fn run_inputs(&self, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let pooled = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        let mut state = match pooled {
            Some(state) => state,
            None => self.plan.spawn()?,
        };
        let out = state.run(inputs)?;
        // A state whose run failed is dropped rather than reused: its turn may be half reset.
        self.idle.lock().unwrap_or_else(|p| p.into_inner()).push(state);
        Ok(out)
    }
}

/// What the model's chosen output holds per sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    /// One score (logit or probability) per class: the engine takes the argmax.
    Scores { classes: usize },
    /// The class id itself (a model ending in ArgMax).
    ClassId,
}

/// An ONNX classifier on the CPU. See the module documentation for how it batches and threads.
pub struct CpuEngine {
    name: String,
    /// Where the model came from, for error messages.
    origin: String,
    spec: InputSpec,
    /// The layout of the model's image input (the samples' layout may differ).
    model_layout: Layout,
    /// The plan for whole batches of `spec.batch_size`.
    full: Plan,
    /// The plan for single samples (what is left after whole batches); `None` when the batch size
    /// is already 1.
    single: Option<Plan>,
    /// Short batches of at least this many samples run padded on `full`, shorter ones sample by
    /// sample on `single` (measured when the engine is built).
    pad_from: usize,
    output: Output,
    /// Added to every class id: -1 for 1001-class models whose class 0 is "background" (the
    /// TensorFlow-trained MLPerf ResNet50), so answers use the 1000 ImageNet labels.
    class_offset: i32,
}

impl CpuEngine {
    /// Loads the ONNX model at `model_path` and optimises it for `input`. Errors name the model
    /// file and say what is wrong (missing file, unparsable model, input shape mismatch, ...).
    pub fn load(model_path: &Path, input: InputSpec) -> Result<CpuEngine, CpuError> {
        let origin = model_path.display().to_string();
        let meta = std::fs::metadata(model_path).map_err(|source| CpuError::ModelUnreadable { origin: origin.clone(), source })?;
        if !meta.is_file() {
            return Err(CpuError::NotAFile { origin });
        }
        let model = onnx().with_ignore_output_shapes(true).model_for_path(model_path).map_err(|cause| CpuError::NotOnnx { origin: origin.clone(), cause })?;
        let name = format!("cpu-tract:{}", model_path.file_stem().and_then(|s| s.to_str()).unwrap_or("model"));
        CpuEngine::build(model, name, origin, input)
    }

    /// Builds an engine from an in-memory ONNX model (the synthetic generator calibrates its model
    /// this way before writing it). `origin` names it in errors.
    pub fn from_proto(model: &ModelProto, origin: &str, input: InputSpec) -> Result<CpuEngine, CpuError> {
        let model = onnx().with_ignore_output_shapes(true).model_for_proto_model(model).map_err(|cause| CpuError::NotOnnx { origin: origin.to_string(), cause })?;
        CpuEngine::build(model, format!("cpu-tract:{origin}"), origin.to_string(), input)
    }

    fn build(model: InferenceModel, name: String, origin: String, spec: InputSpec) -> Result<CpuEngine, CpuError> {
        spec.validate().map_err(|reason| CpuError::BadSpec { origin: origin.clone(), reason })?;
        let model_layout = check_input(&model, &origin, &spec)?;
        let shape = |batch: usize| match model_layout {
            Layout::Nchw => [batch, spec.channels, spec.height, spec.width],
            Layout::Nhwc => [batch, spec.height, spec.width, spec.channels],
        };
        let typed = |batch: usize| -> Result<TypedModel, CpuError> {
            model.clone().with_input_fact(0, f32::fact(shape(batch)).into()).and_then(|m| m.into_typed()).map_err(|cause| CpuError::BatchNotAccepted {
                origin: origin.clone(),
                batch,
                input: spec.describe(),
                cause,
            })
        };

        let mut full_model = typed(spec.batch_size)?;
        let (output_ix, output, class_offset) = choose_output(&full_model, spec.batch_size, &origin)?;
        let keep = |m: &mut TypedModel| -> Result<(), CpuError> {
            let outlet = m.output_outlets().map_err(CpuError::Tract)?[output_ix];
            m.select_output_outlets(&[outlet]).map_err(|cause| CpuError::Model { origin: origin.clone(), cause })
        };
        keep(&mut full_model)?;
        let origin_ref = origin.as_str();
        let optimise_err = |batch: usize| move |cause: TractError| CpuError::CannotOptimise { origin: origin_ref.to_string(), batch, cause };
        let full = Plan::new(full_model, spec.batch_size).map_err(optimise_err(spec.batch_size))?;
        let single = if spec.batch_size > 1 {
            let mut m = typed(1)?;
            keep(&mut m)?;
            Some(Plan::new(m, 1).map_err(optimise_err(1))?)
        } else {
            None
        };
        let mut engine = CpuEngine { name, origin, spec, model_layout, full, single, output, class_offset, pad_from: 1 };
        engine.pad_from = engine.measure_crossover()?;
        Ok(engine)
    }

    /// The input this engine was built for.
    pub fn spec(&self) -> &InputSpec {
        &self.spec
    }

    /// Number of classes the model scores (`None` for models that output class ids).
    pub fn classes(&self) -> Option<usize> {
        match self.output {
            Output::Scores { classes } => Some(classes),
            Output::ClassId => None,
        }
    }

    /// The predicted class of each sample, in order.
    pub fn classify(&self, samples: &[&[u8]]) -> Result<Vec<i32>, CpuError> {
        let mut classes = Vec::with_capacity(samples.len());
        self.for_each_run(samples, |out, n| {
            match self.output {
                Output::Scores { classes: k } => {
                    let scores = out.cast_to::<f32>()?;
                    let scores = scores.try_as_plain_ram()?;
                    let scores = scores.as_slice::<f32>()?;
                    classes.extend(scores.chunks_exact(k).take(n).map(|row| argmax(row) as i32 + self.class_offset));
                }
                Output::ClassId => {
                    let ids = out.cast_to::<i64>()?;
                    let ids = ids.try_as_plain_ram()?;
                    classes.extend(ids.as_slice::<i64>()?.iter().take(n).map(|&c| c as i32 + self.class_offset));
                }
            }
            Ok(())
        })?;
        Ok(classes)
    }

    /// The raw scores of each sample (`samples.len() x classes`, row-major). For calibration and
    /// comparisons with other engines; fails for models that output class ids.
    pub fn scores(&self, samples: &[&[u8]]) -> Result<Vec<f32>, CpuError> {
        let Output::Scores { classes: k } = self.output else {
            return Err(CpuError::NotScores { origin: self.origin.clone() });
        };
        let mut scores = Vec::with_capacity(samples.len() * k);
        self.for_each_run(samples, |out, n| {
            let s = out.cast_to::<f32>()?;
            scores.extend_from_slice(&s.try_as_plain_ram()?.as_slice::<f32>()?[..n * k]);
            Ok(())
        })?;
        Ok(scores)
    }

    /// Runs `samples` as whole batches on the main plan, then what is left either padded to a whole
    /// batch or one by one on the batch-1 plan (see `pad_from`), handing each output tensor and the
    /// number of real samples in it to `sink`.
    fn for_each_run(&self, samples: &[&[u8]], mut sink: impl FnMut(&Tensor, usize) -> TractResult<()>) -> Result<(), CpuError> {
        let batch = self.full.batch;
        let whole = samples.len() / batch * batch;
        let rest = &samples[whole..];
        let runs = samples[..whole].chunks(batch).map(|c| (&self.full, c));
        let rest: Box<dyn Iterator<Item = (&Plan, &[&[u8]])>> = match &self.single {
            Some(single) if rest.len() < self.pad_from => Box::new(rest.chunks(1).map(move |c| (single, c))),
            _ => Box::new(rest.chunks(batch).map(|c| (&self.full, c))),
        };
        for (plan, chunk) in runs.chain(rest) {
            let input = self.assemble(chunk, plan.batch)?;
            let out = plan.run(input).map_err(|cause| CpuError::RunFailed { origin: self.origin.clone(), cause })?;
            sink(&out[0], chunk.len()).map_err(|cause| CpuError::UnexpectedOutput { origin: self.origin.clone(), cause })?;
        }
        Ok(())
    }

    /// The smallest short batch worth padding: times one run of each plan (after a warm-up run,
    /// which also leaves a ready state in each pool) and compares `r` single runs with one padded
    /// run. Returns `batch_size` (never pad) when there is no batch-1 plan.
    fn measure_crossover(&self) -> Result<usize, CpuError> {
        let Some(single) = &self.single else { return Ok(self.full.batch) };
        let time = |plan: &Plan| -> Result<f64, CpuError> {
            let zeros = vec![0u8; self.spec.sample_bytes()];
            let samples = vec![zeros.as_slice(); plan.batch];
            let mut best = f64::INFINITY;
            for _ in 0..2 {
                let input = self.assemble(&samples, plan.batch)?;
                let t = std::time::Instant::now();
                plan.run(input).map_err(|cause| CpuError::RunFailed { origin: self.origin.clone(), cause })?;
                best = best.min(t.elapsed().as_secs_f64());
            }
            Ok(best)
        };
        let (t_full, t_single) = (time(&self.full)?, time(single)?);
        let r = (t_full / t_single.max(1e-9)).ceil() as usize;
        Ok(r.clamp(1, self.full.batch))
    }

    /// Short batches of at least this many samples are padded to a whole batch; shorter ones run
    /// sample by sample.
    pub fn pad_from(&self) -> usize {
        self.pad_from
    }

    /// The f32 input tensor of one run (see [`batch_tensor`]).
    fn assemble(&self, samples: &[&[u8]], batch: usize) -> Result<Tensor, CpuError> {
        batch_tensor(&self.spec, self.model_layout, samples, batch, &self.origin)
    }
}

/// The f32 input tensor of one run of a model whose input has `model_layout`: `samples` (as
/// `spec` describes them) converted to that layout, followed by zero padding up to `batch`.
/// `origin` names the model in errors.
pub fn batch_tensor(spec: &InputSpec, model_layout: Layout, samples: &[&[u8]], batch: usize, origin: &str) -> Result<Tensor, CpuError> {
    let s = spec;
    let (c, h, w) = (s.channels, s.height, s.width);
    let elems = s.sample_elements();
    let shape = match model_layout {
        Layout::Nchw => [batch, c, h, w],
        Layout::Nhwc => [batch, h, w, c],
    };
    let mut tensor = Tensor::zero::<f32>(&shape).map_err(CpuError::Tract)?;
    {
        let mut view = tensor.try_as_plain_ram_mut().map_err(CpuError::Tract)?;
        let dst = view.as_slice_mut::<f32>().map_err(CpuError::Tract)?;
        for (slot, bytes) in samples.iter().enumerate() {
            if bytes.len() != s.sample_bytes() {
                return Err(CpuError::SampleSize { origin: origin.to_string(), bytes: bytes.len(), input: s.describe(), needs: s.sample_bytes() });
            }
            let out = &mut dst[slot * elems..(slot + 1) * elems];
            if s.layout == model_layout {
                s.decode_into(bytes, out);
            } else {
                // Element `e` of the sample goes to position `map(e)` of the model's layout.
                let mut tmp = vec![0f32; elems];
                s.decode_into(bytes, &mut tmp);
                match s.layout {
                    Layout::Nhwc => {
                        for (e, v) in tmp.into_iter().enumerate() {
                            let (pix, ch) = (e / c, e % c);
                            out[ch * h * w + pix] = v;
                        }
                    }
                    Layout::Nchw => {
                        for (e, v) in tmp.into_iter().enumerate() {
                            let (ch, pix) = (e / (h * w), e % (h * w));
                            out[pix * c + ch] = v;
                        }
                    }
                }
            }
        }
    }
    Ok(tensor)
}

impl Engine for CpuEngine {
    fn name(&self) -> &str {
        &self.name
    }

    fn infer(&self, indices: &[usize], source: &dyn SampleSource, outputs: &mut Vec<Vec<u8>>) -> Result<(), EngineError> {
        let samples: Vec<_> = indices.iter().map(|&i| source.sample(i)).collect();
        let views: Vec<&[u8]> = samples.iter().map(|s| &**s).collect();
        let classes = self.classify(&views).map_err(EngineError::new)?;
        outputs.extend(classes.into_iter().map(|c| c.to_le_bytes().to_vec()));
        Ok(())
    }
}

/// Index of the largest score; the first one on ties, and NaN never wins (so a broken model gives
/// a stable answer rather than a random one).
pub fn argmax(scores: &[f32]) -> usize {
    let mut best = 0;
    let mut best_score = f32::NEG_INFINITY;
    for (i, &s) in scores.iter().enumerate() {
        if s > best_score {
            best = i;
            best_score = s;
        }
    }
    best
}

/// Checks the model's declared image input against `spec` and returns the model's layout.
///
/// ONNX models may declare their input with a symbolic batch and concrete sides; tract would happily
/// retype a 224 px model for 64 px (ResNet's global pooling makes any side work), so a declared side
/// that differs from the config is an error here rather than a silently different workload.
fn check_input(model: &InferenceModel, origin: &str, spec: &InputSpec) -> Result<Layout, CpuError> {
    let model_err = |cause| CpuError::Model { origin: origin.to_string(), cause };
    let inputs = model.input_outlets().map_err(model_err)?;
    if inputs.len() != 1 {
        return Err(CpuError::InputCount { origin: origin.to_string(), count: inputs.len() });
    }
    let input_name = model.node(inputs[0].node).name.clone();
    let fact = model.input_fact(0).map_err(model_err)?;
    if let Some(dt) = fact.datum_type.concretize()
        && dt != f32::datum_type()
    {
        return Err(CpuError::InputType { origin: origin.to_string(), dtype: dt, input: input_name });
    }
    let dims: Vec<Option<usize>> = fact.shape.dims().map(|d| d.concretize().and_then(|d| d.to_usize().ok())).collect();
    let shown = || {
        let d: Vec<String> = dims.iter().map(|d| d.map_or("?".to_string(), |d| d.to_string())).collect();
        format!("[{}]", d.join(", "))
    };
    if dims.is_empty() && fact.shape.is_open() {
        return Ok(Layout::Nchw); // nothing declared: ONNX's convention
    }
    if dims.len() != 4 {
        return Err(CpuError::InputRank { origin: origin.to_string(), input: input_name, shape: shown() });
    }
    let fits = |expected: [usize; 3]| dims[1..].iter().zip(expected).all(|(d, e)| d.is_none_or(|d| d == e));
    let (c, h, w) = (spec.channels, spec.height, spec.width);
    if fits([c, h, w]) {
        Ok(Layout::Nchw)
    } else if fits([h, w, c]) {
        Ok(Layout::Nhwc)
    } else {
        Err(CpuError::InputShape { origin: origin.to_string(), input: input_name, shape: shown(), c, h, w })
    }
}

/// Picks the output to read classes from: the first with per-sample scores (a 1001-class output
/// has ImageNet's background class first and gets offset -1), else the first with one integer per
/// sample (a model ending in ArgMax).
fn choose_output(model: &TypedModel, batch: usize, origin: &str) -> Result<(usize, Output, i32), CpuError> {
    let model_err = |cause| CpuError::Model { origin: origin.to_string(), cause };
    let outlets = model.output_outlets().map_err(model_err)?;
    let mut class_id = None;
    let mut seen = Vec::new();
    for ix in 0..outlets.len() {
        let fact = model.output_fact(ix).map_err(model_err)?;
        let shape: Option<Vec<usize>> = fact.shape.as_concrete().map(|s| s.to_vec());
        seen.push(format!("{:?} {:?}", fact.datum_type, shape));
        let Some(shape) = shape else { continue };
        if shape.first() != Some(&batch) {
            continue;
        }
        let per_sample: usize = shape[1..].iter().product();
        if fact.datum_type.is_float() && per_sample > 1 {
            let offset = if per_sample == 1001 { -1 } else { 0 };
            return Ok((ix, Output::Scores { classes: per_sample }, offset));
        }
        if fact.datum_type.is_integer() && per_sample == 1 && class_id.is_none() {
            class_id = Some(ix);
        }
    }
    class_id.map(|ix| (ix, Output::ClassId, 0)).ok_or_else(|| CpuError::NoClassifierOutput { origin: origin.to_string(), batch, outputs: seen })
}

/// Runs `work` (CPU engine calls: one tract run uses one core) over consecutive chunks of `chunk`
/// indices on `threads` threads and concatenates the results in index order. The first error
/// stops the remaining chunks and is returned.
pub fn parallel_chunks<T: Send, E: Send>(
    indices: std::ops::Range<usize>,
    threads: usize,
    chunk: usize,
    work: impl Fn(std::ops::Range<usize>) -> Result<Vec<T>, E> + Sync,
) -> Result<Vec<T>, E> {
    let chunk = chunk.max(1);
    let start = indices.start;
    let chunks = indices.len().div_ceil(chunk);
    let range = |c: usize| start + c * chunk..(start + (c + 1) * chunk).min(indices.end);
    let threads = threads.clamp(1, chunks.max(1));
    if threads == 1 {
        // On the caller's thread: spawning one would only add to a small request's latency.
        let mut out = Vec::new();
        for c in 0..chunks {
            out.extend(work(range(c))?);
        }
        return Ok(out);
    }
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, Vec<T>)>> = Mutex::new(Vec::with_capacity(chunks));
    let failed: Mutex<Option<E>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let c = next.fetch_add(1, Ordering::Relaxed);
                    if c >= chunks || failed.lock().unwrap().is_some() {
                        break;
                    }
                    match work(range(c)) {
                        Ok(v) => done.lock().unwrap().push((c, v)),
                        Err(e) => {
                            failed.lock().unwrap().get_or_insert(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(e);
    }
    let mut done = done.into_inner().unwrap();
    done.sort_by_key(|(c, _)| *c);
    Ok(done.into_iter().flat_map(|(_, v)| v).collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engines::synthetic::{input_spec, model, synthetic_image};
    use std::sync::OnceLock;

    const SIZE: usize = 32;

    /// One uncalibrated synthetic ResNet50 at 32 px, and engines for batch 8 and batch 1, shared by
    /// the tests (building them is the slow part).
    fn proto() -> &'static ModelProto {
        static P: OnceLock<ModelProto> = OnceLock::new();
        P.get_or_init(|| model::resnet50(SIZE, 11))
    }
    fn engine(batch: usize) -> &'static CpuEngine {
        static E8: OnceLock<CpuEngine> = OnceLock::new();
        static E1: OnceLock<CpuEngine> = OnceLock::new();
        let cell = if batch == 8 { &E8 } else { &E1 };
        cell.get_or_init(|| CpuEngine::from_proto(proto(), "test", input_spec(SIZE, batch, Layout::Nchw)).unwrap())
    }
    fn images(range: std::ops::Range<usize>, layout: Layout) -> Vec<Vec<u8>> {
        range.map(|i| synthetic_image(i, SIZE, layout)).collect()
    }
    fn views(v: &[Vec<u8>]) -> Vec<&[u8]> {
        v.iter().map(|v| v.as_slice()).collect()
    }

    #[test]
    fn predictions_are_deterministic_and_independent_of_batch_size() {
        // 11 samples: one whole batch of 8, then a short batch of 3 (padded or sample by sample,
        // whichever the engine measured to be cheaper; the padding test covers the other way).
        let imgs = images(0..11, Layout::Nchw);
        let (e8, e1) = (engine(8), engine(1));
        assert_eq!(e8.classes(), Some(model::CLASSES));
        assert!((1..=8).contains(&e8.pad_from()) && engine(1).pad_from() == 1);
        let s8 = e8.scores(&views(&imgs)).unwrap();
        assert_eq!(s8, e8.scores(&views(&imgs)).unwrap(), "same input, same scores");
        let s1 = e1.scores(&views(&imgs)).unwrap();
        // Tract's kernels accumulate in the same order whatever the batch: bit-identical scores.
        assert_eq!(s8, s1);
        assert!(s8.iter().all(|s| s.is_finite()));
        let c8 = e8.classify(&views(&imgs)).unwrap();
        assert_eq!(c8, e1.classify(&views(&imgs)).unwrap());
        let expected: Vec<i32> = s8.chunks(model::CLASSES).map(|r| argmax(r) as i32).collect();
        assert_eq!(c8, expected);
    }

    #[test]
    fn padding_a_short_batch_does_not_change_results() {
        let imgs = images(20..23, Layout::Nchw);
        let e8 = engine(8);
        // Run 3 samples padded with zeros to a batch of 8 on the batch-8 plan directly.
        let input = e8.assemble(&views(&imgs), 8).unwrap();
        let out = e8.full.run(input).unwrap();
        let padded = out[0].cast_to::<f32>().unwrap().try_as_plain_ram().unwrap().as_slice::<f32>().unwrap()[..3 * model::CLASSES].to_vec();
        assert_eq!(padded, engine(1).scores(&views(&imgs)).unwrap());
    }

    #[test]
    fn concurrent_workers_get_the_same_answers() {
        let imgs = images(40..56, Layout::Nchw);
        let e8 = engine(8);
        let alone = e8.classify(&views(&imgs)).unwrap();
        let results: Vec<Vec<i32>> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..3).map(|_| s.spawn(|| e8.classify(&views(&imgs)).unwrap())).collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert!(results.iter().all(|r| *r == alone));
    }

    #[test]
    fn engine_trait_answers_little_endian_i32_classes() {
        let imgs = images(0..5, Layout::Nchw);
        let e8 = engine(8);
        let expected = e8.classify(&views(&imgs)).unwrap();
        let source = imgs;
        let mut outputs = vec![b"earlier".to_vec()];
        e8.infer(&[4, 0, 2], &source, &mut outputs).unwrap();
        assert_eq!(outputs.len(), 4, "appended after what was there");
        let got: Vec<i32> = outputs[1..].iter().map(|o| i32::from_le_bytes(o.as_slice().try_into().unwrap())).collect();
        assert_eq!(got, vec![expected[4], expected[0], expected[2]]);
    }

    #[test]
    fn nhwc_samples_feed_the_same_model() {
        let nchw = images(60..63, Layout::Nchw);
        let nhwc = images(60..63, Layout::Nhwc);
        let e1 = engine(1);
        let reference = e1.scores(&views(&nchw)).unwrap();
        let nhwc_engine = CpuEngine::from_proto(proto(), "test", input_spec(SIZE, 1, Layout::Nhwc)).unwrap();
        assert_eq!(nhwc_engine.scores(&views(&nhwc)).unwrap(), reference, "layout conversion is exact");
    }

    #[test]
    fn errors_name_the_model_and_the_problem() {
        let missing = Path::new("/nonexistent/dir/resnet50.onnx");
        let e = CpuEngine::load(missing, input_spec(SIZE, 8, Layout::Nchw)).err().unwrap().to_string();
        assert!(e.contains("/nonexistent/dir/resnet50.onnx"), "{e}");

        // The model declares 3x32x32; a 64 px config must not silently run it at another size.
        let e = CpuEngine::from_proto(proto(), "resnet50-32px.onnx", input_spec(64, 8, Layout::Nchw)).err().unwrap().to_string();
        assert!(e.contains("resnet50-32px.onnx") && e.contains("[?, 3, 32, 32]") && e.contains("64x64"), "{e}");

        let e = engine(8).classify(&[&[0u8; 12][..]]).err().unwrap().to_string();
        assert!(e.contains("12 bytes") && e.contains("12288 bytes"), "{e}");

        let mut bad = input_spec(SIZE, 8, Layout::Nchw);
        bad.batch_size = 0;
        assert!(CpuEngine::from_proto(proto(), "m.onnx", bad).err().unwrap().to_string().contains("zero"));
    }

    #[test]
    fn argmax_takes_the_first_maximum_and_ignores_nan() {
        assert_eq!(argmax(&[0.0, 2.0, 2.0, 1.0]), 1);
        assert_eq!(argmax(&[f32::NAN, -1.0, 0.5]), 2);
        assert_eq!(argmax(&[f32::NAN, f32::NAN]), 0);
    }
}
