//! Opt-in GPU tests of the int8 linears (`cargo test --release -p mlperf-runtime --lib
//! bert::gpu::int8_tests -- --ignored`, on a GPU of compute capability 8.0 or later).

use super::import::Linear as Weights;
use super::matmul::{Linear, Matmuls};
use super::quant::{QuantizedWeight, quantize};
use super::{KERNELS, WORKSPACE_BYTES};
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

/// cuBLASLt's int8 product is bit-exact against int32 arithmetic on the CPU, and the epilogue
/// kernel's fp16 output is the CPU's dequantized value to fp16 rounding.
#[test]
#[ignore]
fn the_int8_linear_on_the_gpu_matches_the_exact_cpu_product() {
    device::require_cuda().unwrap();
    let ctx = CudaContext::new(0).unwrap();
    // SAFETY: this test creates no `CudaSlice`s (raw buffers only), as the engine.
    unsafe { ctx.disable_event_tracking() };
    device::bind(&ctx).unwrap();
    let (inputs, outputs, tokens) = (1024usize, 4096usize, 192usize);
    let mut rng = SplitMix64::new(3);
    let w = Weights { inputs, outputs, weight: (0..inputs * outputs).map(|_| rng.symmetric() * 0.05).collect(), bias: (0..outputs).map(|_| rng.symmetric()).collect() };
    let q = QuantizedWeight::of(&[&w]);
    let x_scale = 0.02f32;
    let x: Vec<i8> = (0..tokens * inputs).map(|_| quantize(rng.symmetric() * 3.0, 1.0 / x_scale)).collect();
    let want = q.apply_exact(&x, x_scale, &w.bias);

    let weight = upload(&q.values.iter().map(|&v| v as u8).collect::<Vec<_>>());
    let xs = upload(&x.iter().map(|&v| v as u8).collect::<Vec<_>>());
    let (scales, bias) = (upload(&f32_bytes(&q.scales)), upload(&f32_bytes(&w.bias)));
    let acc = DeviceBuffer::new(tokens * outputs * 4).unwrap();
    let y = DeviceBuffer::new(tokens * outputs * 2).unwrap();
    let (major, minor) = ctx.compute_capability().unwrap();
    let ptx = compile_for("BERT kernels", KERNELS, (major, minor), vec!["-DHIDDEN=1024".into(), "-DHEAD_DIM=64".into()]).unwrap();
    let module = ctx.load_module(ptx).unwrap();
    let dequantize = module.load_function("dequantize").unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut matmuls = Matmuls::new(WORKSPACE_BYTES).unwrap();
    // SAFETY: the weight holds outputs x inputs int8 values and outlives the linear.
    let linear = unsafe { Linear::int8(weight.ptr(), outputs, inputs) }.unwrap();
    // SAFETY: x holds tokens x inputs int8 values, acc tokens x outputs int32; synchronized below.
    unsafe { matmuls.run(&linear, xs.ptr(), acc.ptr(), tokens, stream.cu_stream()) }.unwrap();
    let (a, s, b, out, none) = (acc.ptr().raw(), scales.ptr().raw(), bias.ptr().raw(), y.ptr().raw(), 0u64);
    let (width, n, gelu, q_inv) = (outputs as i32, (tokens * outputs) as i32, 0i32, 0f32);
    let mut launch = stream.launch_builder(&dequantize);
    launch.arg(&a).arg(&s).arg(&b).arg(&x_scale).arg(&width).arg(&n).arg(&gelu).arg(&out).arg(&none).arg(&q_inv);
    // SAFETY: dequantize's parameters in order and type; every buffer holds n values of its type.
    unsafe { launch.launch(LaunchConfig { grid_dim: (1024, 1, 1), block_dim: (256, 1, 1), shared_mem_bytes: 0 }) }.unwrap();
    stream.synchronize().unwrap();

    let mut acc_host = vec![0u8; tokens * outputs * 4];
    let mut y_host = vec![0u8; tokens * outputs * 2];
    // SAFETY: both buffers are as long as their device sources; the stream is synchronized.
    unsafe { dr::memcpy_dtoh_sync(&mut acc_host, acc.ptr().raw()) }.unwrap();
    // SAFETY: as above.
    unsafe { dr::memcpy_dtoh_sync(&mut y_host, y.ptr().raw()) }.unwrap();
    for (i, c) in acc_host.chunks_exact(4).enumerate().step_by(97) {
        let (t, o) = (i / outputs, i % outputs);
        let exact: i32 = (0..inputs).map(|k| x[t * inputs + k] as i32 * q.values[o * inputs + k] as i32).sum();
        assert_eq!(i32::from_le_bytes(c.try_into().unwrap()), exact, "token {t}, output {o}");
    }
    let worst = y_host.chunks_exact(2).zip(&want).map(|(h, &v)| (half::f16::from_le_bytes([h[0], h[1]]).to_f32() - v).abs() / (v.abs() + 1e-3)).fold(0f32, f32::max);
    eprintln!("int8 linear {inputs} -> {outputs} over {tokens} tokens: int32 products exact, epilogue within {worst:.2e} (relative)");
    assert!(worst < 2e-3, "the epilogue differs from the CPU's dequantized values by {worst} (relative)");
}
