#!/usr/bin/env bash
# cuDNN graph layer benchmark on one GPU: `mlperf bench cudnn_graph` (ResNet50's int8 convolutions,
# graph vs the legacy fused convolution the engine runs today, then both graph patterns checked
# against CPU references), with PyTorch's fp16 linear + GELU on the self-check's BERT-shaped matmul
# as the matmul's comparator in the same run. Usage: scripts/bench_cudnn_graph.sh <mlperf binary> [batch]
set -euo pipefail
BIN=$1; BATCH=${2:-256}
nvidia-smi -L
"$BIN" bench cudnn_graph --batch "$BATCH"
echo "== PyTorch fp16: gelu(linear(a, w, b)), M 12288 (32 x 384 tokens), K 1024, N 4096"
python3 - <<'PY'
import torch, torch.nn.functional as F
a = torch.randn(12288, 1024, device="cuda", dtype=torch.half)
w = torch.randn(4096, 1024, device="cuda", dtype=torch.half) / 32
b = torch.randn(4096, device="cuda", dtype=torch.half)
f = lambda: F.gelu(F.linear(a, w, b))
for _ in range(10): f()
start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
start.record()
for _ in range(50): f()
end.record(); torch.cuda.synchronize()
us = start.elapsed_time(end) * 1000 / 50
print(f"torch {torch.__version__} eager: {us:.1f} us, {2 * 12288 * 1024 * 4096 / us / 1e6:.1f} TFLOP/s")
PY
