#!/usr/bin/env bash
# 3D-UNet's GPU engine at MLPerf's size through `mlperf` on a GPU machine (CUDA 13, cuDNN 9, PyTorch;
# no Rust needed), with PyTorch fp16 on the same ONNX file in the same command:
#
#   scripts/gpu_check_unet3d.sh MLPERF_BINARY TEST_BINARY
#
# Binaries may be gzipped. TEST_BINARY is the runtime's unit-test binary (`cargo test --release -p
# mlperf-runtime --lib --no-run`). In a scratch space of its own ($MLPERF_SCRATCH_PATH, default
# /tmp/unet3d-scratch): the opt-in test `unet3d_gpu_full_size_agreement_and_throughput` writes the
# generated full-size network (KiTS19 topology, ROI 128) where the configs' model_path points and 43
# volumes of KiTS19-like shapes in the reference's preprocessed layout where their tensor_path points
# (its labels are the GPU engine's: speed figures, not accuracy); PyTorch fp16 on the same file; then
# on the Offline config generate_engines (its plan checked against the CPU engine on the first case),
# `bench engine` with one and two inference streams, and run_harness --test_run with the faster
# stream count and `bench engine`'s rate as the expected one.
set -u
. "$(dirname "$0")/gpu_common.sh"
MLPERF=$(unzip_to "$1" /tmp/unet3d-mlperf)
TESTS=$(unzip_to "$2" /tmp/unet3d-tests)
export MLPERF_SCRATCH_PATH=${MLPERF_SCRATCH_PATH:-/tmp/unet3d-scratch}
LOGS=${OUT:-/tmp}/unet3d-logs; mkdir -p "$LOGS"
MODEL=$MLPERF_SCRATCH_PATH/models/3d-unet-kits19/3dUNetKiTS19.onnx
SET=$MLPERF_SCRATCH_PATH/preprocessed_data/KiTS19/inference/int8
mkdir -p "$(dirname "$MODEL")" "$SET"
echo "== full size: plan, network alone, whole volumes, the set, agreement with the CPU engine"
MLPERF_UNET3D_ONNX=$MODEL MLPERF_UNET3D_SET=$SET MLPERF_UNET3D_BATCH=8 timeout 330 "$TESTS" --ignored --nocapture unet3d_gpu_full_size 2>&1 \
  | tee "$LOGS/full.log" | grep -E "unet3d_gpu|panicked|test result"
echo "== PyTorch fp16, same ONNX, batch 8"
timeout 60 python3 "$(dirname "$0")/onnx_torch.py" "$MODEL" --batch 8 --seconds 8 2>&1 | tail -1
R=(--system_name=$SYS --benchmarks=3d-unet --scenarios=offline)
echo "== generate_engines on $SYS"
timeout 200 "$MLPERF" generate_engines "${R[@]}" 2>&1 | tail -1
best=0; streams=1
for S in 1 2; do
  echo "-- bench engine, $S inference stream(s)"
  timeout 120 "$MLPERF" bench engine "${R[@]}" --seconds 8 --skip_server_search --gpu_inference_streams=$S 2>&1 | tee "$LOGS/bench$S.log" | tail -4
  rate=$(grep -m1 "^| (a)" "$LOGS/bench$S.log" | awk -F'|' '{gsub(/ /,"",$4); print $4}')
  if awk "BEGIN{exit !(${rate:-0} > $best)}"; then best=$rate; streams=$S; fi
done
echo "== run_harness --test_run, $streams stream(s), expected $best"
timeout 200 "$MLPERF" run_harness "${R[@]}" --test_run --gpu_inference_streams=$streams --offline_expected_qps=$best --log_dir="$LOGS/offline" 2>&1 | tail -3
