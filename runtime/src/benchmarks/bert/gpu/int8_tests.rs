//! Opt-in GPU tests of the int8 linears (`cargo test --release -p mlperf-runtime --lib
//! bert::gpu::int8_tests -- --ignored`, on a GPU of compute capability 8.0 or later).

use super::import::Linear as Weights;
use super::matmul::{Linear, Matmuls};
use super::quant::{QuantizedWeight, gelu_tanh, quantize, token_step};
use super::{DEQUANTIZE_THREADS, KERNELS, WORKSPACE_BYTES, per_token};
use crate::engines::gpu::device::{self, DeviceBuffer, compile_for};
use crate::engines::synthetic::rng::SplitMix64;
use cudarc::driver::{CudaContext, LaunchConfig, PushKernelArg, result as dr};

fn upload(bytes: &[u8]) -> DeviceBuffer {
    let b = DeviceBuffer::new(bytes.len()).unwrap();
    b.upload(0, bytes).unwrap();
    b
}

fn f32_bytes(v: &[f32]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

fn download(b: &DeviceBuffer) -> Vec<u8> {
    let mut host = vec![0u8; b.bytes];
    // SAFETY: the host buffer is as long as the device one; callers synchronize first.
    unsafe { dr::memcpy_dtoh_sync(&mut host, b.ptr().raw()) }.unwrap();
    host
}

fn f32s(bytes: &[u8]) -> Vec<f32> {
    bytes.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().unwrap())).collect()
}

/// Each row of `x` (`width` wide) in int8 at its own step, as the GPU's kernels quantize.
fn quantized_rows(x: &[f32], width: usize) -> (Vec<i8>, Vec<f32>) {
    let steps: Vec<f32> = x.chunks_exact(width).map(|r| token_step(r.iter().copied())).collect();
    let q = x.chunks_exact(width).zip(&steps).flat_map(|(r, s)| r.iter().map(move |&v| quantize(v, 1.0 / s))).collect();
    (q, steps)
}

/// The int8 path on the GPU against the CPU: cuBLASLt's int8 product is bit-exact against int32
/// arithmetic; the epilogue's fp16 output is the dequantized value (per-token input steps,
/// per-channel weight scales) to fp16 rounding; its int8 output (GELU, then each row at its own
/// step) is the CPU's to one level; `quantize_rows` (the attention output's quantization, the
/// same code as the layer norms' int8 output) is exact.
#[test]
#[ignore]
fn the_int8_linear_and_per_token_quantization_on_the_gpu_match_the_cpu() {
    device::require_cuda().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    // SAFETY: this test creates no `CudaSlice`s (raw buffers only), as the engine.
    unsafe { ctx.disable_event_tracking() };
    device::bind(&ctx).unwrap();
    let (inputs, outputs, tokens) = (1024usize, 4096usize, 192usize);
    let mut rng = SplitMix64::new(3);
    let w = Weights { inputs, outputs, weight: (0..inputs * outputs).map(|_| rng.symmetric() * 0.05).collect(), bias: (0..outputs).map(|_| rng.symmetric()).collect() };
    let q = QuantizedWeight::of(&[&w]);
    // Rows of different magnitudes, so each gets its own step.
    let xf: Vec<f32> = (0..tokens * inputs).map(|i| rng.symmetric() * (1.0 + (i / inputs % 7) as f32)).collect();
    let (x, x_steps) = quantized_rows(&xf, inputs);
    let want = q.apply_exact(&x, &x_steps, &w.bias);

    let weight = upload(&q.values.iter().map(|&v| v as u8).collect::<Vec<_>>());
    let xs = upload(&x.iter().map(|&v| v as u8).collect::<Vec<_>>());
    let (scales, bias, steps) = (upload(&f32_bytes(&q.scales)), upload(&f32_bytes(&w.bias)), upload(&f32_bytes(&x_steps)));
    let acc = DeviceBuffer::new(tokens * outputs * 4).unwrap();
    let y = DeviceBuffer::new(tokens * outputs * 2).unwrap();
    let (q_out, q_steps) = (DeviceBuffer::new(tokens * outputs).unwrap(), DeviceBuffer::new(tokens * 4).unwrap());
    let (major, minor) = ctx.compute_capability().unwrap();
    let ptx = compile_for("BERT kernels", KERNELS, (major, minor), vec![format!("-DHIDDEN={inputs}"), "-DHEAD_DIM=64".into()]).unwrap();
    let module = ctx.load_module(ptx).unwrap();
    let (dequantize, quantize_rows) = (module.load_function("dequantize").unwrap(), module.load_function("quantize_rows").unwrap());
    let stream = ctx.new_stream().unwrap();
    let mut matmuls = Matmuls::new(WORKSPACE_BYTES).unwrap();
    // SAFETY: the weight holds outputs x inputs int8 values and outlives the linear.
    let linear = unsafe { Linear::int8(weight.ptr(), outputs, inputs) }.unwrap();
    // SAFETY: x holds tokens x inputs int8 values, acc tokens x outputs int32; synchronized below.
    unsafe { matmuls.run(&linear, xs.ptr(), acc.ptr(), tokens, stream.cu_stream()) }.unwrap();
    let (a, s, b, st, none) = (acc.ptr().raw(), scales.ptr().raw(), bias.ptr().raw(), steps.ptr().raw(), 0u64);
    let rows = LaunchConfig { grid_dim: (tokens as u32, 1, 1), block_dim: (DEQUANTIZE_THREADS, 1, 1), shared_mem_bytes: 0 };
    let width = outputs as i32;
    for (gelu, out, to, to_steps) in [(0i32, y.ptr().raw(), none, none), (1, none, q_out.ptr().raw(), q_steps.ptr().raw())] {
        let mut launch = stream.launch_builder(&dequantize);
        launch.arg(&a).arg(&s).arg(&b).arg(&st).arg(&width).arg(&gelu).arg(&out).arg(&to).arg(&to_steps);
        // SAFETY: dequantize's parameters in order and type; every buffer holds `tokens` rows.
        unsafe { launch.launch(rows) }.unwrap();
    }
    // The attention output's quantization: `HIDDEN` (= inputs) wide fp16 rows.
    let context: Vec<half::f16> = xf.iter().map(|&v| half::f16::from_f32(v)).collect();
    let context_gpu = upload(&context.iter().flat_map(|h| h.to_le_bytes()).collect::<Vec<_>>());
    let (ctx_q, ctx_steps, total) = (DeviceBuffer::new(tokens * inputs).unwrap(), DeviceBuffer::new(tokens * 4).unwrap(), upload(&(tokens as i32).to_le_bytes()));
    let (c, cq, cs, t) = (context_gpu.ptr().raw(), ctx_q.ptr().raw(), ctx_steps.ptr().raw(), total.ptr().raw());
    let mut launch = stream.launch_builder(&quantize_rows);
    launch.arg(&c).arg(&cq).arg(&cs).arg(&t);
    // SAFETY: quantize_rows's parameters; the buffers hold `tokens` rows of `inputs`.
    unsafe { launch.launch(per_token(tokens)) }.unwrap();
    stream.synchronize().unwrap();

    let acc_host = download(&acc);
    for (i, c) in acc_host.chunks_exact(4).enumerate().step_by(97) {
        let (t, o) = (i / outputs, i % outputs);
        let exact: i32 = (0..inputs).map(|k| x[t * inputs + k] as i32 * q.values[o * inputs + k] as i32).sum();
        assert_eq!(i32::from_le_bytes(c.try_into().unwrap()), exact, "token {t}, output {o}");
    }
    let y_host = download(&y);
    let worst = y_host.chunks_exact(2).zip(&want).map(|(h, &v)| (half::f16::from_le_bytes([h[0], h[1]]).to_f32() - v).abs() / (v.abs() + 1e-3)).fold(0f32, f32::max);
    eprintln!("int8 linear {inputs} -> {outputs} over {tokens} tokens, per-token input steps: int32 products exact, epilogue within {worst:.2e} (relative)");
    assert!(worst < 2e-3, "the epilogue differs from the CPU's dequantized values by {worst} (relative)");

    let (gelu_q, gelu_steps) = quantized_rows(&want.iter().map(|&v| gelu_tanh(v)).collect::<Vec<_>>(), outputs);
    let (got_q, got_steps) = (download(&q_out), f32s(&download(&q_steps)));
    let step_error = got_steps.iter().zip(&gelu_steps).map(|(a, b)| (a - b).abs() / b).fold(0f32, f32::max);
    let off = got_q.iter().zip(&gelu_q).map(|(&a, &b)| (a as i8 as i32 - b as i32).abs()).collect::<Vec<_>>();
    let moved = off.iter().filter(|&&d| d != 0).count();
    eprintln!("GELU epilogue in int8: steps within {step_error:.2e} (relative), {moved} of {} levels one off", off.len());
    assert!(step_error < 1e-3 && off.iter().all(|&d| d <= 1) && moved * 100 < off.len(), "GELU's int8 output: steps {step_error}, {moved} levels moved");

    let (want_q, want_steps) = quantized_rows(&context.iter().map(|h| h.to_f32()).collect::<Vec<_>>(), inputs);
    assert_eq!(f32s(&download(&ctx_steps)), want_steps, "quantize_rows's steps");
    assert_eq!(download(&ctx_q).iter().map(|&v| v as i8).collect::<Vec<_>>(), want_q, "quantize_rows's levels");
}
