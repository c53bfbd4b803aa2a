#!/usr/bin/env bash
# The whole path from runs to a packed submission, with full-length (600 s) runs:
#   performance + accuracy runs -> TEST01 + TEST04 audits, verified -> stage results and audits ->
#   infer the edge scenarios not measured -> truncate accuracy logs -> check_submission -> export -> pack.
#
# Usage: scripts/submission_chain.sh [mlperf binary]        (run it from the directory that holds build/)
#   SYSTEM=CPU-dev            the system to run (default CPU-dev: CPU engine, synthetic ResNet50)
#   SCENARIOS=singlestream    the scenarios to measure; on an edge system the checker's other required
#                             scenarios (MultiStream, Offline) are inferred from SingleStream
#   INFERENCE_REPO=PATH       a checkout of mlcommons/inference: check_submission also runs the official checker
#   ALLOW_NON_SUBMITTABLE=1   (the default on CPU-dev) stage runs marked non-submittable
#   RUN_FLAGS="..."           extra flags for the runs and audits, e.g. "--min_duration=10000" for a quick
#                             rehearsal (check_submission then fails on the short runs, as it should)
#
# On CPU-dev every run uses synthetic data and model, so every step needs --allow-non-submittable and the
# tree demonstrates the pipeline, not a result. A real system (real data, no overrides) needs no flag.
# Nothing is overwritten: the runs and audits go to new timestamped directories, and staging, export and
# pack refuse to replace earlier output (remove build/submission, build/export and the tarball first).
set -euo pipefail
BIN=${1:-target/release/mlperf}
SYSTEM=${SYSTEM:-CPU-dev}
SCENARIOS=${SCENARIOS:-singlestream}
SEL=(--system_name="$SYSTEM" --benchmarks=resnet50 --scenarios="$SCENARIOS")
ALLOW=()
if [ "${ALLOW_NON_SUBMITTABLE:-$([ "$SYSTEM" = CPU-dev ] && echo 1)}" = 1 ]; then ALLOW=(--allow-non-submittable); fi
read -r -a RUN <<< "${RUN_FLAGS:-}"
CHECK=()
if [ -n "${INFERENCE_REPO:-}" ]; then CHECK=(--inference-repo="$INFERENCE_REPO"); fi

step() { printf '\n== %s  %s\n' "$(date -u +%H:%M:%S)" "$*"; }

step "1/8 accuracy and performance runs (SubmissionRun: the whole accuracy set, then the full-length performance run)"
"$BIN" run "${SEL[@]}" --test_mode=SubmissionRun "${RUN[@]}"
step "2/8 the round's audits (resnet: TEST01, TEST04), verified against the runs of step 1"
"$BIN" run_audit_harness "${SEL[@]}" "${RUN[@]}"
step "3/8 stage the newest VALID runs with their measurement files and system description"
"$BIN" stage_results "${SEL[@]}" "${ALLOW[@]}"
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
