#!/usr/bin/env bash
# BERT int8 (bert-99's configs as shipped) and fp16 on one GPU through `mlperf` (CUDA 13, PyTorch;
# no Rust needed), with PyTorch fp16 on the same features and weights in the same command:
#
#   scripts/gpu_check_bert_int8.sh MLPERF_BINARY TEST_BINARY
#
# Binaries may be gzipped. TEST_BINARY is the runtime's unit-test binary (`cargo test --release -p
# mlperf-runtime --lib --no-run`). In a scratch space of its own ($MLPERF_SCRATCH_PATH, default
# /tmp/bert-scratch), on the synthetic set (its BERT-Large-shaped model, seeded weights): the
# opt-in GPU test of the int8 path against the CPU; generate_engines int8 (the config's precision)
# and fp16, each plan checked against the CPU engine (f32) on 512 features, both check lines
# printed; `bench engine` int8 and fp16; PyTorch fp16 (sorted by length and padded); then
# `run --test_run` with no precision override (int8), at the int8 bench rate. About 6 minutes on
# an H200 (set and model generation ~1, the two plan checks ~1.5, benches ~1, PyTorch ~1, run ~1.5).
set -u
. "$(dirname "$0")/gpu_common.sh"
MLPERF=$(unzip_to "$1" /tmp/bert-mlperf)
TESTS=$(unzip_to "$2" /tmp/bert-tests)
export MLPERF_SCRATCH_PATH=${MLPERF_SCRATCH_PATH:-/tmp/bert-scratch}
SECS=${SECS:-8}
LOGS=${OUT:-/tmp}/bert-logs; mkdir -p "$LOGS"
R=(--system_name=$SYS --benchmarks=bert --scenarios=offline --dataset=synthetic)
SET=$MLPERF_SCRATCH_PATH/models/synthetic/squad

echo "== opt-in GPU test: int8 product, epilogue and per-token quantization vs the CPU"
timeout 120 "$TESTS" --ignored --nocapture bert::gpu::int8_tests 2>&1 | tee "$LOGS/test.log" | grep -E "int8 linear|GELU epilogue|panicked|test result"

for P in int8 fp16; do
  O=(); [ $P = fp16 ] && O=(--precision=fp16)
  echo "== generate_engines $P on $SYS (the plan checked against the CPU engine)"
  timeout 400 "$MLPERF" generate_engines "${R[@]}" "${O[@]}" 2>&1 | tee "$LOGS/generate-$P.log" | grep -E "checked against|disagrees|built|up to date|rror" | tail -2
  echo "-- bench engine $P"
  timeout 120 "$MLPERF" bench engine "${R[@]}" "${O[@]}" --seconds "$SECS" --skip_server_search 2>&1 | tee "$LOGS/bench-$P.log" | tail -4
done

echo "== PyTorch fp16 on the same features and weights"
timeout 150 python3 "$(dirname "$0")/bench_pytorch_bert.py" --tensors "$SET" --onnx "$(ls "$SET"/bert-large-shape.*.onnx)" --batch 256 --seconds "$SECS" --no-compile 2>&1 | tee "$LOGS/pytorch.log" | tail -4

rate() { grep -m1 -F '(a) engine alone' "$LOGS/bench-$1.log" | awk -F'|' '{gsub(/ /,"",$4); print int($4)}'; }
INT8=$(rate int8); FP16=$(rate fp16)
echo "== run --test_run, no precision override (int8), expected ${INT8:-(the config)} samples/s"
timeout 300 "$MLPERF" run "${R[@]}" --test_run ${INT8:+--offline_expected_qps=$INT8} --log_dir="$LOGS/run" 2>&1 | tee "$LOGS/run.log" | tail -4

echo "== summary"
for P in int8 fp16; do echo "$P plan check: $(grep -ohE "checked against the CPU engine on [0-9]+ features: .*|the GPU BERT plan disagrees.*" "$LOGS/generate-$P.log" | head -1)"; done
RATIO=$(awk -v a="${INT8:-0}" -v b="${FP16:-0}" 'BEGIN { if (b > 0) printf "%.3f", a / b; else print "-" }')
echo "bench engine (a): int8 ${INT8:-none}, fp16 ${FP16:-none} samples/s; int8 / fp16 $RATIO"
grep -iE "samples/s" "$LOGS/pytorch.log" | tail -3
grep -iE "VALID|INVALID|samples per second|samples/s" "$LOGS/run.log" | tail -3
