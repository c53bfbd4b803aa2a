#!/usr/bin/env bash
# YOLO's GPU engine through `mlperf` on a GPU machine (CUDA 13, cuDNN 9, PyTorch; no Rust needed),
# with PyTorch fp16 on the same ONNX file in the same command:
#
#   scripts/gpu_check_yolo.sh MLPERF_BINARY TEST_BINARY [SCENARIOS]
#
# Binaries may be gzipped. TEST_BINARY is the runtime's unit-test binary (`cargo test --release -p
# mlperf-runtime --lib --no-run`). In a scratch space of its own ($MLPERF_SCRATCH_PATH, default
# /tmp/yolo-scratch): the opt-in engine tests (small network vs the CPU engine); the synthetic set
# on the GPU (its 64 px model: generate_engines, run_harness AccuracyOnly scored); then YOLOv11-L's
# size (the generated 640 px network at models/yolo/yolo11l.onnx, the synthetic images as the
# "real" set): per scenario generate_engines, `bench engine`, run_harness --test_run (Offline at the
# bench's rate); a corrupted
# plan refused; PyTorch fp16 at the Offline batch and at batch 1. YOLO_ONLY_FULL=1 skips the tests
# and the synthetic set (a second call over the other scenarios).
set -u
. "$(dirname "$0")/gpu_common.sh"
MLPERF=$(unzip_to "$1" /tmp/yolo-mlperf)
TESTS=$(unzip_to "$2" /tmp/yolo-tests)
SCENARIOS=${3:-offline,singlestream,multistream}
export MLPERF_SCRATCH_PATH=${MLPERF_SCRATCH_PATH:-/tmp/yolo-scratch}
LOGS=${OUT:-/tmp}/yolo-logs; mkdir -p "$LOGS"
mkdir -p "$MLPERF_SCRATCH_PATH/models/yolo" "$MLPERF_SCRATCH_PATH/preprocessed_data"
MODEL=$MLPERF_SCRATCH_PATH/models/yolo/yolo11l.onnx
MLPERF_YOLO_ONNX=$MODEL "$TESTS" --exact benchmarks::yolo::model::tests::the_full_size_network_has_ultralytics_yolo11l_layers 2>&1 | grep -E "test result"
if [ -z "${YOLO_ONLY_FULL:-}" ]; then
  echo "== engine tests (small network; at 640 px the time of a batch's parts)"
  timeout 60 "$TESTS" --ignored --nocapture yolo_gpu_matches 2>&1 | grep -E "yolo_gpu small|panicked|test result"
  MLPERF_YOLO_ONNX=$MODEL timeout 300 "$TESTS" --ignored --nocapture yolo_gpu_engine 2>&1 | grep -E "yolo_gpu engine|panicked|test result"
fi
echo "== synthetic set on $SYS"
S=(--system_name=$SYS --benchmarks=yolo --scenarios=offline --dataset=synthetic)
# With YOLO_ONLY_FULL, only its images (CPU-dev generates the set without a GPU plan).
[ -n "${YOLO_ONLY_FULL:-}" ] && S=(--system_name=CPU-dev --benchmarks=yolo --scenarios=offline)
timeout 200 "$MLPERF" generate_engines "${S[@]}" 2>&1 | tail -1
if [ -z "${YOLO_ONLY_FULL:-}" ]; then
  timeout 120 "$MLPERF" run_harness "${S[@]}" --test_mode=AccuracyOnly --log_dir="$LOGS/synthetic-acc" 2>&1 | tail -3
  find "$LOGS/synthetic-acc" -name accuracy.txt -exec tail -3 {} \;
fi
echo "== YOLOv11-L size (generated 640 px network) on $SYS"
ln -sfn "$MLPERF_SCRATCH_PATH/models/synthetic/coco-yolo" "$MLPERF_SCRATCH_PATH/preprocessed_data/coco2017-yolo"
for SC in ${SCENARIOS//,/ }; do
  R=(--system_name=$SYS --benchmarks=yolo --scenarios=$SC)
  echo "-- $SC"
  timeout 300 "$MLPERF" generate_engines "${R[@]}" 2>&1 | tail -1
  timeout 60 "$MLPERF" bench engine "${R[@]}" --seconds 5 2>&1 | tee "$LOGS/bench-$SC.log" | tail -6
  # Offline issues the expected rate's samples for 60 s: the engine's measured rate, not an older estimate.
  rate=$(grep -m1 "^| (a)" "$LOGS/bench-$SC.log" | awk -F'|' '{gsub(/ /,"",$4); print $4}')
  EXPECTED=(); [ "$SC" = offline ] && [ -n "$rate" ] && EXPECTED=(--offline_expected_qps=$rate)
  timeout 200 "$MLPERF" run_harness "${R[@]}" --test_run "${EXPECTED[@]}" --log_dir="$LOGS/$SC" 2>&1 | tail -3
done
P=$(ls build/engines/$SYS/Offline/yolo/*.plan 2>/dev/null | head -1)
if [ -n "$P" ] && [ -z "${YOLO_ONLY_FULL:-}" ]; then
  printf 'x' | dd of="$P" bs=1 seek=100 conv=notrunc 2>/dev/null
  timeout 100 "$MLPERF" run_harness --system_name=$SYS --benchmarks=yolo --scenarios=offline --test_run 2>&1 | grep -iE "error|plan" | head -2
  echo "rc after corrupting $P: ${PIPESTATUS[0]}"
fi
echo "== PyTorch fp16, same ONNX"
timeout 80 python3 "$(dirname "$0")/onnx_torch.py" "$MODEL" --batch 64 --seconds 5 2>&1 | tail -1
timeout 80 python3 "$(dirname "$0")/onnx_torch.py" "$MODEL" --latency --seconds 5 2>&1 | tail -1
