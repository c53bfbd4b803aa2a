#!/usr/bin/env bash
# GPU engine benchmark for resnet50 on a machine with one or two GPUs, with the PyTorch comparator
# in the same run. Usage: scripts/bench_gpu_resnet50.sh <mlperf binary> <1-GPU system id> [<2-GPU system id>]
# e.g. scripts/bench_gpu_resnet50.sh ./mlperf H200-SXM-141GBx1 H200-SXM-141GBx2
# NCU=1 ends with ncu over the first 60 kernels of one `bench engine` (one batch and the next's first
# kernels), summed per kernel by scripts/ncu_by_kernel.py.
# VARIANTS=1 adds CUDA graphs, 2 streams and batch 512 on one GPU (graphs and 2 streams on two); SECS sets each measurement's length.
#
# The config's precision (int8, calibrated on the synthetic calibration images first) unless
# PRECISION=fp16 overrides it. No ImageNet here: the engine runs the synthetic ResNet50 at 224 px (--dataset=synthetic
# override, so every run is marked non-submittable).
set -euo pipefail
BIN=$1; ONE=$2; TWO=${3:-}
SECS=${SECS:-10}
export MLPERF_SCRATCH_PATH=${MLPERF_SCRATCH_PATH:-/tmp/mlperf_scratch}
DEV=(--benchmarks=resnet50 --scenarios=offline --dataset=synthetic)
[ -n "${PRECISION:-}" ] && DEV+=(--precision="$PRECISION")
nvidia-smi -L
"$BIN" info | sed -n 1,6p

echo "== PyTorch fp16 channels_last + CUDA graph, 1 GPU"
for b in 256 2048; do python3 "$(dirname "$0")/bench_pytorch_resnet50.py" --batch $b --seconds "$SECS"; done

echo "== generate_engines, $ONE (then again: must reuse)"
CUDA_VISIBLE_DEVICES=0 "$BIN" generate_engines --system_name="$ONE" "${DEV[@]}"
CUDA_VISIBLE_DEVICES=0 "$BIN" generate_engines --system_name="$ONE" "${DEV[@]}"
echo "== bench engine, $ONE, as configured"
CUDA_VISIBLE_DEVICES=0 "$BIN" bench engine --system_name="$ONE" --seconds="$SECS" "${DEV[@]}" | tee /tmp/bench1.txt
TUNED=(--use_graphs=true --gpu_inference_streams=2)
if [ -n "${VARIANTS:-}" ]; then
  echo "== bench engine, $ONE: with CUDA graphs, then also 2 streams, then also batch 512"
  CUDA_VISIBLE_DEVICES=0 "$BIN" bench engine --system_name="$ONE" --seconds="$SECS" "${DEV[@]}" --use_graphs=true | grep -F "(a) engine alone"
  CUDA_VISIBLE_DEVICES=0 "$BIN" bench engine --system_name="$ONE" --seconds="$SECS" "${DEV[@]}" "${TUNED[@]}" | grep -F "(a) engine alone"
  CUDA_VISIBLE_DEVICES=0 "$BIN" generate_engines --system_name="$ONE" "${DEV[@]}" "--gpu_batch_size={resnet50=512}" | tail -1
  CUDA_VISIBLE_DEVICES=0 "$BIN" bench engine --system_name="$ONE" --seconds="$SECS" "${DEV[@]}" "${TUNED[@]}" "--gpu_batch_size={resnet50=512}" | grep -F "(a) engine alone"
fi

if [ -n "$TWO" ]; then
  echo "== PyTorch, 2 GPUs (one process each, concurrently)"
  python3 "$(dirname "$0")/bench_pytorch_resnet50.py" --batch 2048 --seconds "$SECS" --device 0 &
  python3 "$(dirname "$0")/bench_pytorch_resnet50.py" --batch 2048 --seconds "$SECS" --device 1
  wait
  echo "== generate_engines + bench engine, $TWO"
  "$BIN" generate_engines --system_name="$TWO" "${DEV[@]}"
  "$BIN" bench engine --system_name="$TWO" --seconds="$SECS" "${DEV[@]}" | tee /tmp/bench2.txt
  if [ -n "${VARIANTS:-}" ]; then
    "$BIN" bench engine --system_name="$TWO" --seconds="$SECS" "${DEV[@]}" "${TUNED[@]}" | grep -F "(a) engine alone"
  fi
fi

SYS=${TWO:-$ONE}
TABLE=/tmp/bench1.txt
[ -n "$TWO" ] && TABLE=/tmp/bench2.txt
RATE=$(grep -F '(a) engine alone' "$TABLE" | awk -F'|' '{gsub(/ /,"",$4); print int($4)}')
echo "== LoadGen Offline test run on $SYS at the measured $RATE samples/s"
"$BIN" run_harness --system_name="$SYS" --test_run --offline_expected_qps="$RATE" "${DEV[@]}" --log_dir="${LOG_DIR:-build/logs}"
if [ -n "${NCU:-}" ]; then
  echo "== ncu: the first 60 kernels of bench engine on $ONE, per kernel"
  CUDA_VISIBLE_DEVICES=0 python3 "$(dirname "$0")/ncu_by_kernel.py" 60 "$BIN" bench engine --system_name="$ONE" --seconds 1 --skip_server_search "${DEV[@]}"
fi
