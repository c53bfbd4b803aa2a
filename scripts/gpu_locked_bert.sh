#!/usr/bin/env bash
# A locked build runs BERT as shipped: `run --benchmarks=bert --scenarios=offline --test_run` with no
# flag but the selection (a locked build refuses every config override), on the real data layout
# filled with the synthetic set's files (its dev set, vocabulary and BERT-Large-shaped model, put where
# the real ones go and tokenized by `preprocess_data`), so the real path runs end to end; the results
# are speed, not accuracy. Then an override, which the locked build must refuse.
#
#   scripts/gpu_locked_bert.sh DEV_BINARY LOCKED_BINARY SYSTEM
#
# DEV_BINARY (a development build) generates the synthetic set; LOCKED_BINARY is built with
# `--features system-h200x1` (SYSTEM H200-SXM-141GBx1) or `system-h100x1` (DGX-H100_H100-SXM-80GBx1)
# for the card in the machine. Binaries may be gzipped.
set -u
. "$(dirname "$0")/gpu_common.sh"
DEV=$(unzip_to "$1" /tmp/bert-dev); LOCKED=$(unzip_to "$2" /tmp/bert-locked); SYS=$3
export MLPERF_SCRATCH_PATH=${MLPERF_SCRATCH_PATH:-/tmp/locked-scratch}
LOGS=${OUT:-/tmp}/locked; mkdir -p "$LOGS"
timeout 200 "$DEV" generate_engines --system_name="$SYS" --benchmarks=bert --scenarios=offline --dataset=synthetic > "$LOGS/synthetic.log" 2>&1 || tail -3 "$LOGS/synthetic.log"
S=$MLPERF_SCRATCH_PATH/models/synthetic/squad
mkdir -p "$MLPERF_SCRATCH_PATH/data/squad" "$MLPERF_SCRATCH_PATH/models/bert"
cp "$S/dev-v1.1.json" "$MLPERF_SCRATCH_PATH/data/squad/"
cp "$S/vocab.txt" "$MLPERF_SCRATCH_PATH/models/bert/"
cp "$S"/bert-large-shape.*.onnx "$MLPERF_SCRATCH_PATH/models/bert/bert_large_v1_1_fake_quant.onnx"
"$LOCKED" info 2>&1 | head -8
"$LOCKED" preprocess_data --benchmarks=bert --scenarios=offline 2>&1 | tail -2
echo "== locked: run --test_run"
T0=$(date +%s)
timeout 260 "$LOCKED" run --benchmarks=bert --scenarios=offline --test_run --log_dir="$LOGS/run" > "$LOGS/run.log" 2>&1
echo "rc=$? ($(( $(date +%s) - T0 )) s)"
grep -E "checked against|disagrees|rror" "$LOGS/run.log" | tail -3; tail -6 "$LOGS/run.log"
echo "== locked: an override is refused"
"$LOCKED" run --benchmarks=bert --scenarios=offline --test_run --precision=int8 2>&1 | tail -1
