#!/usr/bin/env python3
"""Per-layer cuDNN timing of ResNet50's convolutions on this GPU, through cuDNN's fused
convolution-bias-activation call (the one the GPU engine uses), for the layouts and precisions the
engine could choose. Not part of the tool: evidence for engine decisions (space-to-depth stem
channel count, fp16 sums, whether int8 through cuDNN pays), recorded in docs/performance.md.

Usage: python3 scripts/probe_cudnn_resnet50_layers.py [batch=256] [configs=fp16,fp16half,fp16inplace,int8]
  fp16         NHWC fp16, fp32 sums (the engine's default)
  fp16half     NHWC fp16, fp16 sums
  fp16inplace  as fp16, the residual read from the output buffer (in place); residual layers only
  int8         NHWC int8, int32 sums, int8 output
  int8x32      NCHW_VECT_C int8x32 (C a multiple of 32)
Tensors are zeros (timing only). Prints the best algorithm's time (ms) per layer and sums.
"""
import ctypes, torch, sys
cd = ctypes.CDLL("libcudnn.so.9")
print("cudnn", cd.cudnnGetVersion(), torch.cuda.get_device_name())
V = ctypes.c_void_p
def ck(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: cuDNN status {r}")
h = V(); ck(cd.cudnnCreate(ctypes.byref(h)), "create")
NCHW, NHWC, VECT = 0, 1, 2
FLOAT, HALF, INT8, INT32, INT8x32 = 0, 2, 3, 4, 8
class Perf(ctypes.Structure):
    _fields_ = [("algo", ctypes.c_int), ("status", ctypes.c_int), ("time", ctypes.c_float), ("memory", ctypes.c_size_t),
                ("determinism", ctypes.c_int), ("mathType", ctypes.c_int), ("reserved", ctypes.c_int * 3)]
def tdesc(fmt, dt, n, c, hh, w):
    d = V(); ck(cd.cudnnCreateTensorDescriptor(ctypes.byref(d)), "ct"); ck(cd.cudnnSetTensor4dDescriptor(d, fmt, dt, n, c, hh, w), f"st {fmt} {dt}"); return d
def fdesc(fmt, dt, k, c, r, s):
    d = V(); ck(cd.cudnnCreateFilterDescriptor(ctypes.byref(d)), "cf"); ck(cd.cudnnSetFilter4dDescriptor(d, dt, fmt, k, c, r, s), "sf"); return d
def cdesc(pad, stride, compute):
    d = V(); ck(cd.cudnnCreateConvolutionDescriptor(ctypes.byref(d)), "cc")
    ck(cd.cudnnSetConvolution2dDescriptor(d, pad, pad, stride, stride, 1, 1, 1, compute), "sc")
    ck(cd.cudnnSetConvolutionMathType(d, 1), "mt"); return d
act = V(); cd.cudnnCreateActivationDescriptor(ctypes.byref(act)); ck(cd.cudnnSetActivationDescriptor(act, 1, 0, ctypes.c_double(0.0)), "act")
ws = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")

def run(cfg, N, C, H, W, K, R, stride, pad, residual):
    Ho = (H + 2 * pad - R) // stride + 1
    if cfg.startswith("fp16"):
        fmt, dt, comp, tt = NHWC, HALF, (HALF if cfg == "fp16half" else FLOAT), torch.float16
    elif cfg == "int8":
        fmt, dt, comp, tt = NHWC, INT8, INT32, torch.int8
    else:
        fmt, dt, comp, tt = VECT, INT8x32, INT32, torch.int8
    x = torch.zeros(N * C * H * W, dtype=tt, device="cuda"); y = torch.zeros(N * K * Ho * Ho, dtype=tt, device="cuda")
    z = torch.zeros_like(y); wt = torch.zeros(K * C * R * R, dtype=tt, device="cuda"); b = torch.zeros(K, dtype=torch.float32 if not cfg.startswith("fp16") else torch.float16, device="cuda")
    xd, yd = tdesc(fmt, dt, N, C, H, W), tdesc(fmt, dt, N, K, Ho, Ho)
    bd = tdesc(NCHW if not cfg.startswith("fp16") else NHWC, FLOAT if not cfg.startswith("fp16") else HALF, 1, K, 1, 1)
    wd, cv = fdesc(fmt, dt, K, C, R, R), cdesc(pad, stride, comp)
    perf = (Perf * 10)(); cnt = ctypes.c_int()
    r = cd.cudnnGetConvolutionForwardAlgorithm_v7(h, xd, wd, cv, yd, 10, ctypes.byref(cnt), perf)
    if r: return f"v7 status {r}"
    algos = [p.algo for p in perf[:cnt.value] if p.status == 0]
    best = None
    one, zero = ctypes.c_float(1.0), ctypes.c_float(0.0)
    a2 = one if residual else zero
    for algo in algos:
        wsz = ctypes.c_size_t()
        if cd.cudnnGetConvolutionForwardWorkspaceSize(h, xd, wd, cv, yd, algo, ctypes.byref(wsz)) or wsz.value > ws.numel(): continue
        def go():
            return cd.cudnnConvolutionBiasActivationForward(h, ctypes.byref(one), xd, V(x.data_ptr()), wd, V(wt.data_ptr()), cv, algo,
                V(ws.data_ptr()), ctypes.c_size_t(wsz.value), ctypes.byref(a2), yd, V((y if cfg == "fp16inplace" else z).data_ptr()), bd, V(b.data_ptr()), act, yd, V(y.data_ptr()))
        r = go()
        if r: continue
        torch.cuda.synchronize()
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        for _ in range(10): go()
        e1.record(); torch.cuda.synchronize()
        ms = e0.elapsed_time(e1) / 10
        if best is None or ms < best[0]: best = (ms, algo)
    return best if best else f"no algo ran (cands {algos})"

N = int(sys.argv[1]) if len(sys.argv) > 1 else 256
stems = [("stem7x7 c8", 8, 224, 64, 7, 2, 3, False, 1), ("stem s2d c16", 16, 115, 64, 4, 1, 0, False, 1),
         ("stem s2d c24", 24, 115, 64, 4, 1, 0, False, 1), ("stem s2d c32", 32, 115, 64, 4, 1, 0, False, 1)]
net = []
for stage, (blocks, width, size) in enumerate([(3, 64, 56), (4, 128, 28), (6, 256, 14), (3, 512, 7)]):
    cin = 64 if stage == 0 else width * 2
    for b in range(blocks):
        first = b == 0
        insize = size * 2 if (first and stage > 0) else size
        net.append((f"s{stage}b{b} 1x1a", cin if first else width * 4, insize, width, 1, 1, 0, False, 1))
        net.append((f"s{stage}b{b} 3x3", width, insize, width, 3, 2 if (first and stage > 0) else 1, 1, False, 1))
        if first:
            net.append((f"s{stage} down", cin, insize, width * 4, 1, 2 if stage > 0 else 1, 0, False, 1))
        net.append((f"s{stage}b{b} 1x1c+res", width, size, width * 4, 1, 1, 0, True, 1))
cfgs = sys.argv[2].split(",") if len(sys.argv) > 2 else ["fp16", "fp16half", "fp16inplace", "int8"]
tot = {c: 0.0 for c in cfgs}; best = 0.0
for name, C, H, K, R, s, p, res, count in stems + net:
    out = [name]; row = {}
    for cfg in cfgs:
        if cfg == "fp16inplace" and not res: continue
        try:
            r = run(cfg, N, C, H, H, K, R, s, p, res)
            out.append(f"{cfg}={r[0]:.3f}/a{r[1]}" if isinstance(r, tuple) else f"{cfg}={r}")
            if isinstance(r, tuple): row[cfg] = r[0]
        except Exception as e: out.append(f"{cfg}=ERR {e}")
    if not name.startswith("stem"):
        for c in cfgs: tot[c] += row.get(c, row.get("fp16", 0))
        best += min(row.values())
    print(" | ".join(out), flush=True)
print(f"network without stem, ms per batch {N}:", {c: round(v, 3) for c, v in tot.items()}, "best-of", round(best, 3))
