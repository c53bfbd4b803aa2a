//! An opt-in check of the graph layer on a GPU ([`run`]): the two fused patterns on a ResNet50-shaped
//! and a BERT-shaped problem, autotuned, compared with references computed here on the CPU (on a
//! slice of the output), timed, and their plans sent through cuDNN's JSON and run again. The
//! ignored test `gpu_self_check` runs it from `cargo test`.
//!
//! [`bench_resnet50`] (`mlperf bench cudnn_graph`) runs the convolution pattern on ResNet50's
//! layer shapes, each timed against the legacy API's fused convolution (per-tensor scale, bias,
//! residual and ReLU, int8 in and out) and, on the 1x1 shapes it takes, our own kernel
//! (`engines::gpu::pointwise`, checked against the same reference), on the same buffers: the
//! three ways the ResNet50 builder chooses between.

use super::checked::cudnn_version;
use super::error::{GraphError, cuda};
use super::plan::{Autotune, Graph, SerializedPlan};
use super::spec::{ConvLayer, ConvShape, Gemm, OperationGraph, Uid, bert_gemm, conv_scale_bias_residual_relu, matmul_bias_gelu, resnet_layer};
use crate::engines::gpu::cudnn::Handle;
use crate::engines::gpu::device::{self, DeviceBuffer};
use crate::engines::gpu::pointwise::{self, Pointwise};
use crate::engines::synthetic::rng::SplitMix64;
use cudarc::driver::{CudaContext, CudaFunction, CudaStream, result as dr};
use half::f16;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

/// The most workspace a plan may use here.
const WORKSPACE_LIMIT: usize = 256 << 20;
const AUTOTUNE: Autotune = Autotune { candidates: 8, runs: 5 };
/// Runs timed for the report, after a warm-up.
const TIMED_RUNS: usize = 50;

/// What the check found, one row per graph.
pub struct Report {
    pub cudnn_version: usize,
    pub gpu: String,
    pub rows: Vec<Row>,
}

pub struct Row {
    pub graph: &'static str,
    pub shape: String,
    pub result: Result<Measurement, GraphError>,
}

pub struct Measurement {
    /// The fastest plan's engine, and how many plans autotuning timed.
    pub engine: i64,
    pub candidates: usize,
    pub workspace_bytes: usize,
    pub mean_us: f64,
    /// Tera-operations per second (a multiply-add counts 2).
    pub tera_ops: f64,
    /// Output elements compared with the CPU reference.
    pub compared: usize,
    /// Elements farther from the reference than the output type's rounding.
    pub differing: usize,
    pub max_difference: f64,
    /// The largest difference that passes.
    pub tolerance: f64,
    pub json: JsonRoundTrip,
    /// The legacy API's time for the same layer (convolutions compared in [`bench_resnet50`]).
    pub legacy_us: Option<Result<f64, GraphError>>,
    /// Our 1x1 kernel on the same layer, where it takes it (in [`bench_resnet50`]).
    pub kernel: Option<Result<KernelRun, GraphError>>,
}

/// Our 1x1 kernel's run of a layer: its output against the graph's reference, and its time.
pub struct KernelRun {
    pub mean_us: f64,
    pub differing: usize,
    pub max_difference: f64,
}

/// The fastest plan sent through [`SerializedPlan`] and run again.
pub enum JsonRoundTrip {
    /// Restored, and gave the same output bit for bit.
    Same,
    /// Restored, and its output differs from the original plan's in this many elements.
    Differs(usize),
    /// cuDNN could not serialise the plan (some precompiled engines cannot), or not restore it.
    Failed(GraphError),
}

impl Measurement {
    pub fn passed(&self) -> bool {
        let kernel_agrees = !matches!(&self.kernel, Some(Ok(k)) if k.max_difference > self.tolerance);
        self.max_difference <= self.tolerance && !matches!(self.json, JsonRoundTrip::Differs(_)) && kernel_agrees
    }
}

impl Report {
    pub fn passed(&self) -> bool {
        self.rows.iter().all(|r| r.result.as_ref().is_ok_and(Measurement::passed))
    }
}

impl fmt::Display for Report {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        writeln!(f, "cuDNN graph layer self-check: cuDNN {} on {}", self.cudnn_version, self.gpu)?;
        writeln!(
            f,
            "{:>10} {:<34} {:<30} {:>6} {:>5} {:>11} {:>9} {:>9} {:>7} {:>9} {:>9} {:>13}  {:<10} result",
            "legacy/us", "graph", "shape", "engine", "timed", "workspace", "mean us", "legacy us", "TOPS", "compared", "differing", "max diff/tol", "plan JSON"
        )?;
        for row in &self.rows {
            match &row.result {
                Ok(m) => {
                    let json = match &m.json {
                        JsonRoundTrip::Same => "same".to_string(),
                        JsonRoundTrip::Differs(n) => format!("{n} differ"),
                        JsonRoundTrip::Failed(_) => "failed".to_string(),
                    };
                    let verdict = if m.passed() { "pass" } else { "FAIL" };
                    let difference = format!("{:.3}/{:.3}", m.max_difference, m.tolerance);
                    let (ratio, legacy) = match &m.legacy_us {
                        Some(Ok(us)) => (format!("{:.2}", us / m.mean_us), format!("{us:.1}")),
                        Some(Err(_)) => ("-".into(), "failed".into()),
                        None => ("-".into(), "-".into()),
                    };
                    writeln!(
                        f,
                        "{ratio:>10} {:<34} {:<30} {:>6} {:>5} {:>11} {:>9.1} {legacy:>9} {:>7.1} {:>9} {:>9} {:>13}  {json:<10} {verdict}",
                        row.graph, row.shape, m.engine, m.candidates, m.workspace_bytes, m.mean_us, m.tera_ops, m.compared, m.differing, difference
                    )?;
                    if let JsonRoundTrip::Failed(e) = &m.json {
                        writeln!(f, "  plan JSON: {e}")?;
                    }
                    if let Some(Err(e)) = &m.legacy_us {
                        writeln!(f, "  legacy: {e}")?;
                    }
                    match &m.kernel {
                        Some(Ok(k)) => {
                            let verdict = if k.max_difference <= m.tolerance { "pass" } else { "FAIL" };
                            writeln!(
                                f,
                                "{:>10.2} {:<34} {:>9.1} us, {} of {} differing, max diff {:.3}/{:.3}  {verdict}",
                                m.mean_us / k.mean_us,
                                "  our 1x1 kernel (graph us / ours)",
                                k.mean_us,
                                k.differing,
                                m.compared,
                                k.max_difference,
                                m.tolerance
                            )?;
                        }
                        Some(Err(e)) => writeln!(f, "  our 1x1 kernel: {e}")?,
                        None => {}
                    }
                }
                Err(e) => writeln!(f, "{:<34} {:<30} FAIL: {e}", row.graph, row.shape)?,
            }
        }
        Ok(())
    }
}

/// Runs the check on GPU `ordinal`. An error here is one of the set-up (no CUDA, no cuDNN 9);
/// each graph's own failure is in its row.
pub fn run(ordinal: usize) -> Result<Report, GraphError> {
    run_cases(ordinal, || Ok(vec![conv_case(&resnet_layer(), false)?, gemm_case(&bert_gemm())?]))
}

/// ResNet50 v1.5's convolutions that carry a residual (each stage's last 1x1) and its 3x3s, at
/// `batch` images, graph against legacy. Residual layers are the ones the graph can improve most.
pub fn bench_resnet50(ordinal: usize, batch: i64) -> Result<Report, GraphError> {
    let layer = |c: i64, size: i64, k: i64, kernel: i64| ConvLayer {
        shape: ConvShape { batch, in_channels: c, height: size, width: size, out_channels: k, kernel: [kernel; 2], padding: [kernel / 2; 2], stride: [1, 1] },
        ..resnet_layer()
    };
    let layers = [
        layer(64, 56, 64, 3),
        layer(64, 56, 256, 1),
        layer(128, 28, 128, 3),
        layer(128, 28, 512, 1),
        layer(256, 14, 256, 3),
        layer(256, 14, 1024, 1),
        layer(512, 7, 512, 3),
        layer(512, 7, 2048, 1),
    ];
    run_cases(ordinal, || layers.iter().map(|l| conv_case(l, true)).collect())
}

fn run_cases(ordinal: usize, cases: impl FnOnce() -> Result<Vec<Case>, GraphError>) -> Result<Report, GraphError> {
    device::require_cuda().map_err(GraphError::DeviceLayer)?;
    let ctx = CudaContext::new(ordinal).map_err(cuda("open the device"))?;
    ctx.bind_to_thread().map_err(cuda("bind the device"))?;
    let stream = ctx.new_stream().map_err(cuda("create a stream"))?;
    let handle = Handle::new(&stream).map_err(GraphError::DeviceLayer)?;
    let capability = ctx.compute_capability().map_err(cuda("read the compute capability"))?;
    let kernel = pointwise::load(&ctx, capability).map_err(GraphError::DeviceLayer)?;
    let device = Device { gpu: ctx.name().map_err(cuda("read the device name"))?, stream, handle, kernel };
    let cudnn_version = cudnn_version()?;
    let rows = cases()?.into_iter().map(|case| case.run(&device)).collect();
    Ok(Report { cudnn_version, gpu: device.gpu, rows })
}

struct Device {
    gpu: String,
    stream: Arc<CudaStream>,
    handle: Handle,
    /// Our 1x1 kernel (compute capability 8.0 or later).
    kernel: Option<CudaFunction>,
}

/// How far a result may be from the reference.
#[derive(Clone, Copy)]
struct Tolerance {
    /// Differences above this count as differing.
    rounding: f64,
    /// Differences above this fail.
    limit: f64,
    /// Differences are relative to max(1, |reference|).
    relative: bool,
}

/// One graph with its data and the reference of a slice of its output.
struct Case {
    graph: &'static str,
    shape: String,
    /// Multiply-adds times 2.
    operations: f64,
    spec: OperationGraph,
    /// The contents of every bound tensor but the output.
    inputs: Vec<(Uid, Vec<u8>)>,
    output: Uid,
    /// Byte ranges of the output the reference covers, and its values there, in order.
    checked: Vec<Range<usize>>,
    expected: Vec<f64>,
    decode: fn(&[u8]) -> Vec<f64>,
    tolerance: Tolerance,
    /// Also time the legacy API's fused convolution of this layer, and our 1x1 kernel where it
    /// takes it.
    legacy: Option<ConvLayer>,
}

impl Case {
    fn run(self, device: &Device) -> Row {
        let (graph, shape) = (self.graph, self.shape.clone());
        Row { graph, shape, result: self.measure(device) }
    }

    fn measure(self, device: &Device) -> Result<Measurement, GraphError> {
        let Device { gpu, stream, handle, .. } = device;
        let buffers =
            self.spec.bound_tensors().map(|t| Ok((t.uid, DeviceBuffer::new(t.bytes() as usize).map_err(GraphError::DeviceLayer)?))).collect::<Result<Vec<_>, GraphError>>()?;
        let buffer = |uid: Uid| &buffers.iter().find(|(u, _)| *u == uid).expect("every bound tensor has a buffer").1;
        for (uid, data) in &self.inputs {
            buffer(*uid).upload(0, data).map_err(cuda("upload an input"))?;
        }
        let bindings: Vec<_> = buffers.iter().map(|(uid, b)| (*uid, b.ptr())).collect();
        let workspace = DeviceBuffer::new(WORKSPACE_LIMIT).map_err(GraphError::DeviceLayer)?;
        let graph = Graph::build(handle, &self.spec)?;
        // SAFETY: every bound tensor has a buffer of its size, allocated by cudaMalloc (256-byte
        // aligned); buffers and workspace live until this returns, after the timing synchronized.
        let tuned = unsafe { graph.autotune(handle, stream, &bindings, &workspace, AUTOTUNE) }?;
        // SAFETY: as above.
        let mean_us = unsafe { tuned.plan.mean_time_us(handle, stream, &bindings, &workspace, TIMED_RUNS) }?;
        let output = buffer(self.output);
        let got = self.download(output)?;
        let (differing, max_difference) = compare(&(self.decode)(&got), &self.expected, self.tolerance);

        let restored = SerializedPlan::new(&tuned.plan, gpu).and_then(|saved| {
            let text = serde_json::to_string(&saved).expect("a plan serialises");
            serde_json::from_str::<SerializedPlan>(&text).expect("and reads back").restore(handle, gpu)
        });
        let json = match restored {
            Ok(plan) => {
                for range in &self.checked {
                    output.upload(range.start, &vec![0; range.len()]).map_err(cuda("clear the output"))?;
                }
                // SAFETY: as above; the stream is synchronized before the output is read.
                unsafe { plan.execute(handle, &bindings, Some(&workspace)) }?;
                stream.synchronize().map_err(cuda("run the restored plan"))?;
                match self.download(output)?.iter().zip(&got).filter(|(a, b)| a != b).count() {
                    0 => JsonRoundTrip::Same,
                    n => JsonRoundTrip::Differs(n),
                }
            }
            Err(e) => JsonRoundTrip::Failed(e),
        };
        let legacy_us = self.legacy.as_ref().map(|layer| legacy_conv_us(device, layer, &buffer, &workspace));
        let kernel = match (&self.legacy, &device.kernel) {
            (Some(layer), Some(function)) if layer.kernel == [1, 1] && layer.padding == [0, 0] && pointwise::takes(layer.in_channels as usize, layer.out_channels as usize) => {
                Some(self.kernel_run(device, function, layer, &buffer))
            }
            _ => None,
        };
        Ok(Measurement {
            engine: tuned.plan.engine(),
            candidates: tuned.timings.len(),
            workspace_bytes: tuned.plan.workspace_bytes(),
            mean_us,
            tera_ops: self.operations / mean_us / 1e6,
            compared: self.expected.len(),
            differing,
            max_difference,
            tolerance: self.tolerance.limit,
            json,
            legacy_us,
            kernel,
        })
    }

    /// Our 1x1 kernel on the graph's buffers, its epilogue made of the case's scale and bias (ratio
    /// 1: the graph adds the residual in the output's units): the output compared with the
    /// reference where the graph's was, then the mean of [`TIMED_RUNS`].
    fn kernel_run<'a>(&self, device: &Device, function: &CudaFunction, layer: &ConvLayer, buffer: &dyn Fn(Uid) -> &'a DeviceBuffer) -> Result<KernelRun, GraphError> {
        let input = |uid: Uid| &self.inputs.iter().find(|(u, _)| *u == uid).expect("the case's scale and bias").1;
        let channels = layer.out_channels as usize;
        let ratio = bytes(&vec![1f32; channels], f32::to_le_bytes);
        let epilogue_bytes = [input(ConvLayer::SCALE).as_slice(), input(ConvLayer::BIAS), &ratio].concat();
        let epilogue = DeviceBuffer::new(epilogue_bytes.len()).map_err(GraphError::DeviceLayer)?;
        epilogue.upload(0, &epilogue_bytes).map_err(cuda("upload the epilogue"))?;
        let output = buffer(ConvLayer::Y);
        for range in &self.checked {
            output.upload(range.start, &vec![0; range.len()]).map_err(cuda("clear the output"))?;
        }
        let [n, k, p, q] = layer.output_dims().map(|d| d as usize);
        let conv = Pointwise {
            x: buffer(ConvLayer::X).ptr(),
            weights: buffer(ConvLayer::W).ptr(),
            epilogue: epilogue.ptr(),
            residual: layer.residual.map(|_| buffer(ConvLayer::RESIDUAL).ptr()),
            y: output.ptr(),
            batch: n,
            input: (layer.in_channels as usize, layer.height as usize, layer.width as usize),
            output: (k, p, q),
            stride: layer.stride[0] as usize,
            relu: layer.relu,
        };
        // SAFETY: the graph's buffers hold the layer's tensors at these shapes (int8 NHWC, KRSC
        // weights), the epilogue buffer its three vectors; the kernel takes the layer (checked by
        // the caller), and `mean_us` synchronizes the stream before any buffer can go.
        let run = |runs: usize| mean_us(device, runs, "run our 1x1 kernel", &mut || unsafe { conv.launch(function, &device.stream) }.map_err(GraphError::DeviceLayer));
        run(1)?;
        let (differing, max_difference) = compare(&(self.decode)(&self.download(output)?), &self.expected, self.tolerance);
        Ok(KernelRun { mean_us: run(TIMED_RUNS)?, differing, max_difference })
    }

    /// The checked ranges of the output, in order.
    fn download(&self, output: &DeviceBuffer) -> Result<Vec<u8>, GraphError> {
        let mut host = vec![0u8; self.checked.iter().map(Range::len).sum()];
        let mut at = 0;
        for range in &self.checked {
            assert!(range.end <= output.bytes, "checked ranges within the output");
            // SAFETY: the range lies inside the live output buffer (asserted), the destination
            // slice has its length, and the copy is synchronous.
            unsafe { dr::memcpy_dtoh_sync(&mut host[at..at + range.len()], output.ptr().offset(range.start).raw()) }.map_err(cuda("download the output"))?;
            at += range.len();
        }
        Ok(host)
    }
}

/// How many of `got` differ from `expected` by more than the rounding, and the largest difference.
fn compare(got: &[f64], expected: &[f64], tolerance: Tolerance) -> (usize, f64) {
    assert_eq!(got.len(), expected.len(), "a value per reference value");
    let differences = got.iter().zip(expected).map(|(g, e)| (g - e).abs() / if tolerance.relative { e.abs().max(1.0) } else { 1.0 });
    differences.fold((0, 0.0), |(n, max), d| (n + usize::from(d > tolerance.rounding), f64::max(max, d)))
}

fn int8s(rng: &mut SplitMix64, len: usize) -> Vec<i8> {
    (0..len).map(|_| (rng.next_u64() >> 56) as u8 as i8).collect()
}

fn bytes<T: Copy, const N: usize>(values: &[T], to_bytes: fn(T) -> [u8; N]) -> Vec<u8> {
    values.iter().flat_map(|&v| to_bytes(v)).collect()
}

/// The legacy API's fused int8 convolution, as the ResNet50 engine runs it, on the graph's buffers:
/// `relu(alpha1 * conv(x, w) + alpha2 * residual + bias)` to int8 with a per-tensor scale, the
/// fastest of cuDNN's algorithms within the workspace; mean microseconds over [`TIMED_RUNS`].
fn legacy_conv_us<'a>(device: &Device, layer: &ConvLayer, buffer: &dyn Fn(Uid) -> &'a DeviceBuffer, workspace: &DeviceBuffer) -> Result<f64, GraphError> {
    use crate::engines::gpu::cudnn::{Activation, Convolution, DataType, Filter, FusedConv, Operand, Tensor, candidate_algorithms};
    let [n, k, p, q] = layer.output_dims().map(|d| d as usize);
    let (c, h, w, r) = (layer.in_channels as usize, layer.height as usize, layer.width as usize, layer.kernel[0] as usize);
    let (x, y) = (Tensor::nhwc(DataType::Int8, n, c, h, w).map_err(GraphError::DeviceLayer)?, Tensor::nhwc(DataType::Int8, n, k, p, q).map_err(GraphError::DeviceLayer)?);
    let filter = Filter::krsc(DataType::Int8, k, c, r, r).map_err(GraphError::DeviceLayer)?;
    let conv = Convolution::new(layer.padding[0] as usize, layer.stride[0] as usize, DataType::Int32).map_err(GraphError::DeviceLayer)?;
    let act = Activation::new(true).map_err(GraphError::DeviceLayer)?;
    let bias = Tensor::nhwc(DataType::Float, 1, k, 1, 1).map_err(GraphError::DeviceLayer)?;
    let op = FusedConv {
        x: Operand { desc: &x, ptr: buffer(ConvLayer::X).ptr() },
        w: Operand { desc: &filter, ptr: buffer(ConvLayer::W).ptr() },
        conv: &conv,
        act: &act,
        bias: Operand { desc: &bias, ptr: buffer(ConvLayer::BIAS).ptr() },
        z: Some(buffer(ConvLayer::RESIDUAL).ptr()),
        y: Operand { desc: &y, ptr: buffer(ConvLayer::Y).ptr() },
        alphas: (1.0 / 4096.0, 1.0),
    };
    let time = |algo, runs: usize| {
        // SAFETY: every operand is a live buffer of the graph's tensor of the same shape and type,
        // the workspace is at least the algorithm's need (filtered below), and `mean_us`
        // synchronizes the stream before the buffers can go.
        mean_us(device, runs, "run the legacy convolution", &mut || unsafe { op.launch(&device.handle, algo, workspace) }.map_err(GraphError::DeviceLayer))
    };
    let algorithms = candidate_algorithms(&device.handle, &x, &filter, &conv, &y).map_err(GraphError::DeviceLayer)?;
    let mut best: Option<(f64, _)> = None;
    for (algo, _) in algorithms.into_iter().filter(|(_, bytes)| *bytes <= workspace.bytes) {
        // An algorithm that cannot run this configuration fails at once: the next one is tried.
        if let Ok(us) = time(algo, 1).and_then(|_| time(algo, AUTOTUNE.runs)) {
            best = best.filter(|(b, _)| *b <= us).or(Some((us, algo)));
        }
    }
    let (_, algo) = best.ok_or_else(|| GraphError::Device(format!("no legacy algorithm runs this int8 convolution within {} bytes of workspace", workspace.bytes)))?;
    time(algo, TIMED_RUNS)
}

/// The mean wall time of `runs` calls of `launch`, which enqueue work on the device's stream, in
/// microseconds: the stream is synchronized before the clock stops.
fn mean_us(device: &Device, runs: usize, what: &str, launch: &mut dyn FnMut() -> Result<(), GraphError>) -> Result<f64, GraphError> {
    let started = std::time::Instant::now();
    for _ in 0..runs {
        launch()?;
    }
    device.stream.synchronize().map_err(cuda(what))?;
    Ok(started.elapsed().as_secs_f64() * 1e6 / runs as f64)
}

fn conv_case(layer: &ConvLayer, legacy: bool) -> Result<Case, GraphError> {
    let spec = conv_scale_bias_residual_relu(layer)?;
    let [n, k, p, q] = layer.output_dims().map(|d| d as usize);
    let (c, h, w) = (layer.in_channels as usize, layer.height as usize, layer.width as usize);
    let [r, s] = layer.kernel.map(|d| d as usize);
    let mut rng = SplitMix64::new(22);
    let x = int8s(&mut rng, n * h * w * c);
    let weights = int8s(&mut rng, k * r * s * c);
    // A sum of c*r*s products of int8s has a spread of about 24 * 128^2 / 3 (c*r*s = 576): scaled
    // by about 1/4096 it spreads over the int8 range, some of it saturating.
    let scale: Vec<f32> = (0..k).map(|_| (0.5 + rng.unit()) / 4096.0).collect();
    let bias: Vec<f32> = (0..k).map(|_| 16.0 * rng.symmetric()).collect();
    let residual = int8s(&mut rng, n * p * q * k);
    let data = ConvData { layer, x: &x, weights: &weights, scale: &scale, bias: &bias, residual: &residual };
    // The first and the last image.
    let image = p * q * k;
    let images = [0, n - 1];
    Ok(Case {
        graph: "conv+scale+bias+residual+relu int8",
        shape: format!("N{n} C{c} {h}x{w} K{k} {r}x{s} pad {}", layer.padding[0]),
        operations: 2.0 * (n * k * p * q * c * r * s) as f64,
        inputs: vec![
            (ConvLayer::X, bytes(&x, |v: i8| [v as u8])),
            (ConvLayer::W, bytes(&weights, |v: i8| [v as u8])),
            (ConvLayer::SCALE, bytes(&scale, f32::to_le_bytes)),
            (ConvLayer::BIAS, bytes(&bias, f32::to_le_bytes)),
            (ConvLayer::RESIDUAL, bytes(&residual, |v: i8| [v as u8])),
        ],
        output: ConvLayer::Y,
        checked: images.iter().map(|i| i * image..(i + 1) * image).collect(),
        expected: images.iter().flat_map(|&i| conv_reference(&data, i)).collect(),
        decode: |b| b.iter().map(|&v| f64::from(v as i8)).collect(),
        // The int8 cast's rounding is undocumented, and the epilogue's order of float operations
        // (fused multiply-adds or not) can move a value across a rounding boundary.
        tolerance: Tolerance { rounding: 0.0, limit: 1.0, relative: false },
        spec,
        legacy: legacy.then(|| layer.clone()),
    })
}

/// The data of an int8 convolution, as the graph's tensors hold it (NHWC, KRSC).
struct ConvData<'a> {
    layer: &'a ConvLayer,
    x: &'a [i8],
    weights: &'a [i8],
    scale: &'a [f32],
    bias: &'a [f32],
    residual: &'a [i8],
}

/// Image `image` of `relu(conv(x, w) * scale + bias + residual)`, NHWC, as int8 (rounded to
/// nearest, ties to even, and saturated): exact int32 sums, then the epilogue in f32 as cuDNN runs
/// it.
fn conv_reference(d: &ConvData, image: usize) -> Vec<f64> {
    let layer = d.layer;
    let [_, k, p, q] = layer.output_dims().map(|v| v as usize);
    let (c, h, w) = (layer.in_channels as usize, layer.height as usize, layer.width as usize);
    let [r, s] = layer.kernel.map(|v| v as usize);
    let [pad_h, pad_w] = layer.padding.map(|v| v as isize);
    let [stride_h, stride_w] = layer.stride.map(|v| v as usize);
    let mut out = Vec::with_capacity(p * q * k);
    for oh in 0..p {
        for ow in 0..q {
            for ko in 0..k {
                let mut sum = 0i32;
                for fr in 0..r {
                    let ih = (oh * stride_h + fr) as isize - pad_h;
                    for fs in 0..s {
                        let iw = (ow * stride_w + fs) as isize - pad_w;
                        if ih < 0 || iw < 0 || ih as usize >= h || iw as usize >= w {
                            continue;
                        }
                        let x = &d.x[((image * h + ih as usize) * w + iw as usize) * c..][..c];
                        let f = &d.weights[((ko * r + fr) * s + fs) * c..][..c];
                        sum += x.iter().zip(f).map(|(&a, &b)| i32::from(a) * i32::from(b)).sum::<i32>();
                    }
                }
                let residual = f32::from(d.residual[((image * p + oh) * q + ow) * k + ko]);
                let y = (sum as f32 * d.scale[ko] + d.bias[ko] + residual).max(0.0);
                out.push(f64::from(y.round_ties_even().clamp(-128.0, 127.0)));
            }
        }
    }
    out
}

fn gemm_case(gemm: &Gemm) -> Result<Case, GraphError> {
    let spec = matmul_bias_gelu(gemm)?;
    let [m, k, n] = [gemm.m, gemm.k, gemm.n].map(|d| d as usize);
    let mut rng = SplitMix64::new(22);
    // Weights of about 1/sqrt(k) keep the products' sums near 1, where GELU bends.
    let mut halves = |len: usize, amplitude: f32| (0..len).map(|_| f16::from_f32(amplitude * rng.symmetric())).collect::<Vec<_>>();
    let a = halves(m * k, 1.0);
    let weights = halves(k * n, 2.0 / (k as f32).sqrt());
    let bias = halves(n, 0.5);
    // The first and the last 8 rows.
    let rows: Vec<usize> = (0..8).chain(m - 8..m).collect();
    Ok(Case {
        graph: "matmul+bias+gelu fp16",
        shape: format!("M{m} K{k} N{n}"),
        operations: 2.0 * (m * k * n) as f64,
        inputs: vec![(Gemm::A, bytes(&a, f16::to_le_bytes)), (Gemm::WEIGHTS, bytes(&weights, f16::to_le_bytes)), (Gemm::BIAS, bytes(&bias, f16::to_le_bytes))],
        output: Gemm::OUT,
        checked: [0..8, m - 8..m].map(|r| r.start * n * 2..r.end * n * 2).to_vec(),
        expected: rows.iter().flat_map(|&row| gemm_reference(&a[row * k..][..k], &weights, &bias)).collect(),
        decode: |b| b.chunks_exact(2).map(|h| f16::from_le_bytes([h[0], h[1]]).to_f64()).collect(),
        // fp16's spacing is 2^-10 relative: a result rounded once differs by half of it; allow a
        // few (float sums in another order, cuDNN's erf).
        tolerance: Tolerance { rounding: 1.0 / 1024.0, limit: 4.0 / 1024.0, relative: true },
        legacy: None,
        spec,
    })
}

/// One row of `gelu(a · weights + bias)`, in f64 from the fp16 inputs.
fn gemm_reference(a: &[f16], weights: &[f16], bias: &[f16]) -> Vec<f64> {
    let n = bias.len();
    let mut row: Vec<f64> = bias.iter().map(|b| b.to_f64()).collect();
    for (i, a) in a.iter().enumerate() {
        let a = a.to_f64();
        for (acc, w) in row.iter_mut().zip(&weights[i * n..][..n]) {
            *acc += a * w.to_f64();
        }
    }
    row.into_iter().map(|v| 0.5 * v * (1.0 + erf(v / std::f64::consts::SQRT_2))).collect()
}

/// The error function, to 1.5e-7 (Abramowitz and Stegun 7.1.26; Rust's std has none).
fn erf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs());
    let poly = ((((1.061_405_429 * t - 1.453_152_027) * t + 1.421_413_741) * t - 0.284_496_736) * t + 0.254_829_592) * t;
    (1.0 - poly * (-x * x).exp()).copysign(x)
}

#[cfg(test)]
mod tests {
    use super::super::spec::DataType;
    use super::*;

    #[test]
    fn erf_is_accurate() {
        for (x, expected) in [(0.0, 0.0), (0.5, 0.520_499_877_8), (1.0, 0.842_700_792_9), (-2.0, -0.995_322_265_0), (3.5, 0.999_999_256_9)] {
            assert!((erf(x) - expected).abs() < 2e-7, "erf({x}) = {}", erf(x));
        }
    }

    #[test]
    fn conv_reference_pads_scales_rounds_and_saturates() {
        let layer = ConvLayer {
            shape: ConvShape { batch: 1, in_channels: 16, height: 3, width: 3, out_channels: 16, ..resnet_layer().shape },
            residual: Some(DataType::Int8),
            ..resnet_layer()
        };
        let (x, weights) = (vec![1i8; 9 * 16], vec![1i8; 16 * 9 * 16]);
        // Every output channel sums 16 channels of each input pixel the filter covers: 9 pixels in
        // the middle, 4 in a corner.
        let scale = vec![1.0 / 16.0; 16];
        let (bias, residual) = (vec![0.0; 16], vec![0i8; 9 * 16]);
        let out = conv_reference(&ConvData { layer: &layer, x: &x, weights: &weights, scale: &scale, bias: &bias, residual: &residual }, 0);
        assert_eq!((out[0], out[4 * 16]), (4.0, 9.0), "corner, middle");

        // Ties round to even; negative values are cut by ReLU; large ones saturate.
        let one_by_one = ConvLayer { shape: ConvShape { height: 1, width: 1, kernel: [1, 1], padding: [0, 0], ..layer.shape }, ..layer };
        let x: Vec<i8> = [1, 3, -100, 127].into_iter().chain([0; 12]).collect();
        let weights: Vec<i8> = (0..16 * 16).map(|i| i8::from(i / 16 == i % 16)).collect();
        let (mut scale, bias, residual) = (vec![0.5; 16], vec![3.0; 16], vec![0i8; 16]);
        scale[3] = 2.0;
        let out = conv_reference(&ConvData { layer: &one_by_one, x: &x, weights: &weights, scale: &scale, bias: &bias, residual: &residual }, 0);
        assert_eq!(out[..4], [4.0, 4.0, 0.0, 127.0], "3.5 -> 4, 4.5 -> 4, relu, saturation");
    }

    #[test]
    fn gemm_reference_is_gelu_of_the_affine_map() {
        let h = |v: f32| f16::from_f32(v);
        let out = gemm_reference(&[h(1.0), h(2.0)], &[h(1.0), h(0.0), h(0.5), h(-1.0)], &[h(0.0), h(-0.5)]);
        // [1 2] . [[1 0] [0.5 -1]] + [0 -0.5] = [2, -2.5]
        assert!((out[0] - 2.0 * 0.5 * (1.0 + erf(2.0 / 2f64.sqrt()))).abs() < 1e-12);
        assert!((out[0] - 1.954_499_7).abs() < 1e-6 && (out[1] - -0.015_524_6).abs() < 1e-6, "{out:?}");
    }

    #[test]
    fn comparison_counts_and_scales_differences() {
        let exact = Tolerance { rounding: 0.0, limit: 1.0, relative: false };
        assert_eq!(compare(&[1.0, 2.0, 5.0], &[1.0, 3.0, 3.0], exact), (2, 2.0));
        let relative = Tolerance { rounding: 0.01, limit: 0.04, relative: true };
        assert_eq!(compare(&[101.0, 0.5], &[100.0, 0.505], relative), (0, 0.01));
    }

    #[test]
    #[ignore = "needs a GPU and cuDNN 9: cargo test --release -p mlperf-runtime --lib graph::self_check -- --ignored --nocapture"]
    fn gpu_self_check() {
        let report = run(0).unwrap_or_else(|e| panic!("{e}"));
        println!("{report}");
        assert!(report.passed(), "{report}");
    }
}
