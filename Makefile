# NVIDIA's make targets mapped onto `mlperf`, so scripts written for closed/NVIDIA keep working:
#   make run_harness RUN_ARGS="--benchmarks=resnet50 --scenarios=offline --test_run"
# Each target is the `mlperf` command of the same name with RUN_ARGS appended; the default binary is
# built (cargo build --release) first. MLPERF=<path> runs another binary, a locked build for instance.
MLPERF ?= target/release/mlperf
RUN_ARGS ?=

COMMANDS := info systems generate_conf_files preprocess_data calibrate generate_engines run_harness run \
	run_audit_harness run_llm_server stage_results stage_compliance infer_results truncate_results \
	check_submission export_submission pack_submission run_harness_power power_set_maxq_state power_restore_state power_reset_maxq_state

.PHONY: build $(COMMANDS)

build:
	cargo build --release

$(COMMANDS): $(if $(filter target/release/mlperf,$(MLPERF)),build)
	$(MLPERF) $@ $(RUN_ARGS)
