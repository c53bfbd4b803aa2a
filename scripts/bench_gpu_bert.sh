#!/usr/bin/env bash
# GPU BERT engine benchmark on one GPU, with the PyTorch comparator in the same run.
# Usage: scripts/bench_gpu_bert.sh <mlperf binary> <1-GPU system id>, e.g. ./mlperf H200-SXM-141GBx1
# SECS sets each measurement's length; BATCH the PyTorch batch (default 256); STREAMS the engine's
# gpu_inference_streams (default the config's).
#
# No SQuAD or MLPerf model here: the engine runs the synthetic set's BERT-Large-shaped model
# (--dataset=synthetic, so every run is marked non-submittable), at the config's precision (fp16 for
# bert-99 since issue 41; PRECISION=int8 overrides it). NCU=1 ends with ncu over 300 kernels of one
# `bench engine` (the first batches), summed per kernel by scripts/ncu_by_kernel.py.
set -euo pipefail
BIN=$1; SYS=$2
SECS=${SECS:-10}
export MLPERF_SCRATCH_PATH=${MLPERF_SCRATCH_PATH:-/tmp/mlperf_scratch}
DEV=(--benchmarks=bert --scenarios=offline --dataset=synthetic)
[ -n "${PRECISION:-}" ] && DEV+=(--precision="$PRECISION")
[ -n "${STREAMS:-}" ] && DEV+=(--gpu_inference_streams="$STREAMS")
SET=$MLPERF_SCRATCH_PATH/models/synthetic/squad
nvidia-smi -L
"$BIN" info | sed -n 1,6p

echo "== generate_engines, $SYS (then again: must reuse)"
"$BIN" generate_engines --system_name="$SYS" "${DEV[@]}"
"$BIN" generate_engines --system_name="$SYS" "${DEV[@]}"
echo "== bench engine, $SYS"
"$BIN" bench engine --system_name="$SYS" --seconds="$SECS" --skip_server_search "${DEV[@]}" | tee /tmp/bench_bert.txt

echo "== PyTorch fp16 SDPA on the same features and weights"
python3 "$(dirname "$0")/bench_pytorch_bert.py" --tensors "$SET" --onnx "$(ls "$SET"/bert-large-shape.*.onnx)" --batch "${BATCH:-256}" --seconds "$SECS" ${NO_COMPILE:+--no-compile}

RATE=$(grep -F '(a) engine alone' /tmp/bench_bert.txt | awk -F'|' '{gsub(/ /,"",$4); print int($4)}')
echo "== LoadGen Offline test run on $SYS at the measured $RATE samples/s"
"$BIN" run_harness --system_name="$SYS" --test_run --offline_expected_qps="$RATE" "${DEV[@]}" --log_dir="${LOG_DIR:-build/logs}"
if [ -n "${NCU:-}" ]; then
  echo "== ncu: the first 300 kernels of bench engine, per kernel"
  python3 "$(dirname "$0")/ncu_by_kernel.py" 300 "$BIN" bench engine --system_name="$SYS" --seconds 1 --skip_server_search "${DEV[@]}"
fi
