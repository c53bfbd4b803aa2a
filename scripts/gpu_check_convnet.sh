#!/usr/bin/env bash
# The convnet engine's and 3D-UNet's opt-in GPU checks and the PyTorch comparator, in one command
# on a GPU machine (CUDA 13, cuDNN 9, PyTorch; no Rust needed):
#
#   scripts/gpu_check_convnet.sh TEST_BINARY [BATCH]
#
# TEST_BINARY is the runtime's unit-test binary (`cargo test --release -p mlperf-runtime --lib
# --no-run` prints its path; strip and gzip it to carry it). Prints each op graph's error against
# tract, the synthetic set's agreement with the CPU engine, the full-size (MLPerf-size) network's
# throughput and agreement, then PyTorch fp16 on the same ONNX file and batch.
set -u
BIN=$1
BATCH=${2:-8}
case "$BIN" in *.gz) gunzip -c "$BIN" > /tmp/convnet-tests && chmod +x /tmp/convnet-tests && BIN=/tmp/convnet-tests ;; esac
export MLPERF_UNET3D_ONNX=/tmp/unet3d_full.onnx MLPERF_UNET3D_BATCH=$BATCH
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "== op graphs vs tract"
timeout 80 "$BIN" --ignored --nocapture --test-threads=1 convnet_gpu 2>&1 | tee "${OUT:-/tmp}/convnet_ops.log" | grep -E "convnet_gpu|panicked|error|test result" | head -30
echo "== synthetic set (CPU-dev model) vs the CPU engine"
timeout 110 "$BIN" --ignored --nocapture unet3d_gpu_agrees 2>&1 | tee "${OUT:-/tmp}/unet3d_small.log" | grep -E "unet3d_gpu|panicked|error|test result" | head -20
echo "== full size: plan, throughput, agreement"
timeout 290 "$BIN" --ignored --nocapture unet3d_gpu_full_size 2>&1 | tee "${OUT:-/tmp}/unet3d_full.log" | grep -vE "^  (input|down|up|output)" | tail -25
echo "== PyTorch fp16, same ONNX, batch $BATCH"
timeout 80 python3 "$(dirname "$0")/onnx_torch.py" "$MLPERF_UNET3D_ONNX" --batch "$BATCH" --seconds 10 2>&1 | tail -5
