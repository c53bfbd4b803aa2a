#!/usr/bin/env bash
# The whole path from runs to a packed submission, with full-length (600 s) runs:
#   performance + accuracy runs -> the round's audits, verified -> stage results and audits ->
#   infer the edge scenarios not measured -> truncate accuracy logs -> check_submission -> export -> pack.
#
# Usage: scripts/submission_chain.sh [mlperf binary]        (run it from the directory that holds build/)
#   SYSTEM=CPU-dev            the system to run (default CPU-dev: CPU engine, synthetic ResNet50)
#   BENCHMARKS=resnet50       the benchmark (default resnet50; llama2-70b: see below)
#   SCENARIOS=singlestream    the scenarios to measure (default singlestream; offline,server for llama2-70b);
#                             on an edge system the checker's other required scenarios (MultiStream,
#                             Offline) are inferred from SingleStream
#   SELECT_FLAGS="..."        more selection flags for every step, e.g. "--accuracy_target=0.999"
#   INFERENCE_REPO=PATH       a checkout of mlcommons/inference: check_submission also runs the official checker
#   ALLOW_NON_SUBMITTABLE=1   (the default on CPU-dev) stage runs marked non-submittable
#   RUN_FLAGS="..."           extra flags for the runs and audits, e.g. "--min_duration=10000" for a quick
#                             rehearsal (check_submission then fails on the short runs, as it should)
#   POWER_DEV=PATH            measure power (a rehearsal, never submittable): the performance runs go through
#                             `run_harness_power` and this checkout of mlcommons/power-dev (c4b3ad8) against a
#                             loopback director (scripts/power_director.sh: power-dev's server, the PTD and NTP
#                             stand-ins; root for NTP's port 123; STANDIN_FLAGS, default "--watts 120
#                             --testing_watts 118"); power-dev's compliance/check.py then checks each staged
#                             power result. Steps: power runs, accuracy runs, stage, check.py, audits, and on.
#
# On CPU-dev every run uses synthetic data and model, so every step needs --allow-non-submittable and the
# tree demonstrates the pipeline, not a result. A real system (real data, no overrides) needs no flag.
#
# BENCHMARKS=llama2-70b on CPU-dev rehearses the LLM chain (Offline + Server, TEST06) with no model: a
# synthetic dataset of the OpenOrca file's structure and size and a tokenizer for it are generated once
# into build/synthetic-llama2-70b (scripts/make_synthetic_llm_dataset.py; PYTHON=a Python with pandas),
# and the stand-in server answers each prompt with the dataset's reference answer, so accuracy scores as
# a perfect model would. Its scratch space is build/synthetic-llama2-70b/scratch; NLTK's punkt_tab model
# comes from tests/fixtures when none is installed. SERVER_QPS (default 100) and OFFLINE_QPS (default 400: above
# the ~340 samples/s that 512 requests in flight of ~1.5 s each allow, so the 600 s minimum is met)
# set the rates. About 35 minutes on two cores.
#
# Keep the machine quiet from the performance runs to the end of the audits: TEST01 compares the audit's
# p90 latency (SingleStream) or throughput with the run's within 10 %, and on a 2-core machine a build
# beside either of them moved it by 20 % (66 against 81 samples/s), even under SCHED_IDLE (shared caches,
# memory bandwidth, a VM's vCPUs).
# check_submission then refuses the failed verification, as it should.
#
# Nothing is overwritten: the runs and audits go to new timestamped directories, and staging, export and
# pack refuse to replace earlier output (remove build/submission, build/export and the tarball first).
set -euo pipefail
BIN=${1:-target/release/mlperf}
SYSTEM=${SYSTEM:-CPU-dev}
BENCHMARKS=${BENCHMARKS:-resnet50}
if [ "$BENCHMARKS" = llama2-70b ]; then SCENARIOS=${SCENARIOS:-offline,server}; else SCENARIOS=${SCENARIOS:-singlestream}; fi
read -r -a SELECT <<< "${SELECT_FLAGS:-}"
SEL=(--system_name="$SYSTEM" --benchmarks="$BENCHMARKS" --scenarios="$SCENARIOS" "${SELECT[@]}")
ALLOW=()
if [ "${ALLOW_NON_SUBMITTABLE:-$([ "$SYSTEM" = CPU-dev ] && echo 1)}" = 1 ]; then ALLOW=(--allow-non-submittable); fi
read -r -a RUN <<< "${RUN_FLAGS:-}"
CHECK=()
if [ -n "${INFERENCE_REPO:-}" ]; then CHECK=(--inference-repo="$INFERENCE_REPO"); fi

if [ "$BENCHMARKS" = llama2-70b ] && [ "$SYSTEM" = CPU-dev ]; then
  SYN=$PWD/build/synthetic-llama2-70b
  FILE=open_orca_gpt4_tokenized_llama.sampled_24576.pkl
  HERE=$(cd "$(dirname "$0")" && pwd)
  if [ ! -f "$SYN/$FILE" ] || [ ! -f "$SYN/tokenizer.json" ]; then
    printf '\n== generating the synthetic llama2-70b dataset and tokenizer into %s\n' "$SYN"
    "${PYTHON:-python3}" "$HERE/make_synthetic_llm_dataset.py" "$SYN"
  fi
  export MLPERF_SCRATCH_PATH=$SYN/scratch
  mkdir -p "$MLPERF_SCRATCH_PATH/data/llama2-70b"
  ln -sfn "$SYN/$FILE" "$MLPERF_SCRATCH_PATH/data/llama2-70b/$FILE"
  PUNKT=
  IFS=: read -r -a NLTK_ROOTS <<< "${NLTK_DATA:-}"
  for root in "${NLTK_ROOTS[@]}" "$HOME/nltk_data" /usr/share/nltk_data /usr/local/share/nltk_data /usr/lib/nltk_data /usr/local/lib/nltk_data; do
    if [ -f "$root/tokenizers/punkt_tab/english/ortho_context.tab" ]; then PUNKT=$root; fi
  done
  if [ -z "$PUNKT" ]; then
    mkdir -p "$SYN/nltk_data/tokenizers/punkt_tab"
    ln -sfn "$HERE/../tests/fixtures/accuracy/punkt_tab/english" "$SYN/nltk_data/tokenizers/punkt_tab/english"
    export NLTK_DATA=$SYN/nltk_data
  fi
  SEL+=(--accuracy_target=0.999)
  # The round's sample count (CPU-dev's configs load 1,024), rates the stand-in sustains on two cores,
  # and the stand-in answering with the references (20 ms to the first token, 5 ms per token).
  RUN=(--dataset=real --tokenizer_path="$SYN/tokenizer.json" --performance_sample_count_override=24576
       --server_target_qps=${SERVER_QPS:-100} --offline_expected_qps=${OFFLINE_QPS:-400} --max_concurrency=512
       --serving_args="[\"--first_token_ms=20\", \"--token_ms=5\", \"--reference_answers=$SYN/$FILE\", \"--tokenizer=$SYN/tokenizer.json\"]"
       "${RUN[@]}")
fi

step() { printf '\n== %s  %s\n' "$(date -u +%H:%M:%S)" "$*"; }

if [ -n "${POWER_DEV:-}" ]; then
  PORT=${POWER_PORT:-4950}
  read -r -a STANDIN <<< "${STANDIN_FLAGS:---watts 120 --testing_watts 118}"
  step "1/8 the loopback director on 127.0.0.1:$PORT (its output: build/power_director/server.out)"
  # A process group of its own (setsid), stopped whole when this script ends, however it ends.
  setsid "$(dirname "$0")/power_director.sh" "$(realpath "$BIN")" "$(realpath "$POWER_DEV")" build/power_director "$PORT" "${STANDIN[@]}" &
  DIRECTOR=$!
  trap 'kill -TERM -- -$DIRECTOR 2>/dev/null || true' EXIT
  for _ in $(seq 100); do (: < "/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break; sleep 0.3; done
  # One scenario at a time, in SCENARIOS' order (a SingleStream run lasts 600 s whatever the load;
  # an Offline run lasts as long as its expected_qps x 600 samples take).
  for scenario in ${SCENARIOS//,/ }; do
    step "1/8 $scenario under power (ranging, then testing: full length)"
    "$BIN" run_harness_power "${SEL[@]/#--scenarios=*/--scenarios=$scenario}" --power_dev="$POWER_DEV" --director_port="$PORT" --ntp_server=127.0.0.1 "${RUN[@]}"
  done
  step "1/8 the accuracy runs"
  "$BIN" run "${SEL[@]}" --test_mode=AccuracyOnly "${RUN[@]}"
  kill -TERM -- -"$DIRECTOR"
  step "3/8 stage the newest VALID runs with their measurement files, power logs and system description"
  "$BIN" stage_results "${SEL[@]}" "${ALLOW[@]}"
  step "3/8 power-dev's compliance/check.py on each staged power result"
  for perf in $(find build/submission -path '*/performance/power' -type d | sort); do
    printf -- '-- %s\n' "${perf%/power}"
    PYTHONPATH=$POWER_DEV python3 "$POWER_DEV/compliance/check.py" "${perf%/power}"
  done
  step "2/8 the round's audits (resnet50: TEST01, TEST04), verified against the runs of step 1"
  "$BIN" run_audit_harness "${SEL[@]}" "${RUN[@]}"
else
  step "1/8 accuracy and performance runs (SubmissionRun: the whole accuracy set, then the full-length performance run)"
  "$BIN" run "${SEL[@]}" --test_mode=SubmissionRun "${RUN[@]}"
  step "2/8 the round's audits (resnet50: TEST01, TEST04; llama2-70b: TEST06), verified against the runs of step 1"
  "$BIN" run_audit_harness "${SEL[@]}" "${RUN[@]}"
  step "3/8 stage the newest VALID runs with their measurement files and system description"
  "$BIN" stage_results "${SEL[@]}" "${ALLOW[@]}"
fi
step "4/8 stage the verified audits"
"$BIN" stage_compliance "${SEL[@]}" "${ALLOW[@]}"
step "5/8 infer the edge scenarios that were not measured"
"$BIN" infer_results
step "6/8 truncate the accuracy logs (full logs kept in build/full_results)"
"$BIN" truncate_results
step "7/8 check the staged tree"
"$BIN" check_submission "${CHECK[@]}"
step "8/8 export a clean copy, check it, pack it"
"$BIN" export_submission
"$BIN" check_submission --input=build/export
"$BIN" pack_submission
ls -l build/mlperf_submission_*
