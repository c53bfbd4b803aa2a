#!/usr/bin/env python3
"""Times and checks versions of our stem kernel (runtime/src/engines/gpu/stem.cu) on one GPU.

The workload is ResNet50's stem after space-to-depth at 224 px: a 4x4 convolution, stride 1, no
padding, of 115x115 images with 12 fp16 channels to 64 channels, ReLU, int8 out. Each version is
NAME=PATH:CHANNELS, CHANNELS being the pixel layout the kernel reads: 16 (the image padded to 16
channels, with the `kernel` argument) or 12 (the channels packed). The comparator, in the same run,
is cuDNN's fp16 convolution of the same values through PyTorch (channels_last, fp16 out).

Every version is checked against the convolution in fp32 on four images (the first two, one in the
middle, the last) after its output was poisoned: at most one step of the int8 grid off (the
kernel multiplies by 1/scale and sums in another order), on at most 0.1 % of the values.

Needs cupy and torch (the device machine has both):
    python3 scripts/bench_stem_kernel.py new=runtime/src/engines/gpu/stem.cu:12 [old=old_stem.cu:16]
"""
import argparse
import pathlib
import statistics

import cupy as cp
import numpy as np
import torch
import torch.nn.functional as F

ROOT = pathlib.Path(__file__).resolve().parent.parent
H = W = 115
K = 4
HO = WO = H - K + 1
COUT = 64
TILE_M, TILE_N = 256, 64
SCALE = 0.04


def timed(launch, reps):
    for _ in range(3):
        launch()
    times = []
    for _ in range(reps):
        start, end = cp.cuda.Event(), cp.cuda.Event()
        start.record()
        launch()
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end))
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("versions", nargs="+", help="NAME=PATH:CHANNELS")
    ap.add_argument("--batch", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--tiles-per-block", type=int, default=8)
    args = ap.parse_args()
    b = args.batch
    torch.manual_seed(0)
    x12 = torch.randn(b, H, W, 12, device="cuda", dtype=torch.float16)
    w12 = (torch.randn(COUT, K, K, 12, device="cuda") * 0.1).half()
    bias = (torch.randn(COUT, device="cuda") * 0.5).half()
    checked = [0, 1, b // 2 + 1, b - 1]
    sums = F.conv2d(x12[checked].float().permute(0, 3, 1, 2), w12.float().permute(0, 3, 1, 2)) + bias.float()[None, :, None, None]
    reference = torch.clamp(torch.round(torch.relu(sums) / SCALE), -127, 127).permute(0, 2, 3, 1).to(torch.int8)
    header = (ROOT / "runtime/src/engines/gpu/tensor_cores.cuh").read_text()
    useful_flop = 2.0 * b * HO * WO * COUT * K * K * 12

    rows = []
    for version in args.versions:
        name, spec = version.split("=", 1)
        path, channels = spec.rsplit(":", 1)
        channels = int(channels)
        module = cp.RawModule(code=header + pathlib.Path(path).read_text(), options=(f"-DTILES_PER_BLOCK={args.tiles_per_block}", f"-DKERNEL={K}"))
        function = module.get_function("stem_conv")
        if channels == 16:
            x, w = F.pad(x12, (0, 4)).contiguous(), F.pad(w12, (0, 4)).contiguous()
            shared = TILE_N * (K * K * 32 + 16) + 2 * (TILE_M + (K - 1) * W + K - 1) * 32 + TILE_M * (TILE_N + 16)
        else:
            x, w = x12, w12
            patch = (TILE_M + (K - 1) * (W + 1)) * 24
            shared = TILE_N * (K * 96 + 32) + 2 * ((patch + 8 + 15) // 16 * 16) + TILE_M * (TILE_N + 16)
        function.max_dynamic_shared_size_bytes = shared
        y = torch.full((b, HO, WO, COUT), 99, dtype=torch.int8, device="cuda")
        ints = [b, H, W, HO, WO] + ([K] if channels == 16 else []) + [1]
        kernel_args = tuple([cp.asarray(x), cp.asarray(w), cp.asarray(bias), cp.asarray(y)] + [np.int32(v) for v in ints] + [np.float32(SCALE)])
        tiles = b * -(-HO * W // TILE_M)
        grid = (-(-tiles // args.tiles_per_block), COUT // TILE_N)
        function(grid, (256,), kernel_args, shared_mem=shared)
        cp.cuda.Device().synchronize()
        diff = (y[checked].int() - reference.int()).abs()
        check = f"max off {diff.max().item()}, {diff.ne(0).float().mean().item() * 100:.3f} % off"
        passed = diff.max().item() <= 1 and diff.ne(0).float().mean().item() <= 1e-3
        ms = timed(lambda: function(grid, (256,), kernel_args, shared_mem=shared), args.reps)
        rows.append((name, ms, ("PASS " if passed else "FAIL ") + check))
        del x, w, y

    torch.backends.cudnn.benchmark = True
    xin, win = x12.permute(0, 3, 1, 2), w12.permute(0, 3, 1, 2)
    cudnn_ms = timed(lambda: F.conv2d(xin, win, bias), args.reps)

    print(f"{torch.cuda.get_device_name()}, batch {b}, {args.reps} reps (median)")
    print("| ratio to the first | version | ms | useful TFLOP/s | check |")
    print("|---|---|---|---|---|")
    for name, ms, check in rows:
        print(f"| {rows[0][1] / ms:.3f} | {name} | {ms:.3f} | {useful_flop / ms / 1e9:.0f} | {check} |")
    print(f"| {rows[0][1] / cudnn_ms:.3f} | cuDNN fp16 via PyTorch (fp16 out) | {cudnn_ms:.3f} | {useful_flop / cudnn_ms / 1e9:.0f} | comparator |")


if __name__ == "__main__":
    main()
