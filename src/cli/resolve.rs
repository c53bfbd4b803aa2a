//! The parsed flags resolved once into what the runtime works on (ripgrep's low-level to
//! high-level arguments): the selection (system, configs with their effective settings,
//! non-submittable reasons), the round, and the run requests. Every error here comes before any
//! model, data or engine is touched.

use super::args::{AuditArgs, BackendArgs, HarnessArgs, RoundArg, Selection, StageArgs};
use crate::TABLES;
use mlperf_config::Round;
use mlperf_runtime::Error;
use mlperf_runtime::compliance::audit::AuditRequest;
use mlperf_runtime::harness::user_conf::UserConf;
use mlperf_runtime::harness::{self, RunRequest};
use mlperf_runtime::rundir::plan::Backend;
use mlperf_runtime::select::{self, Override, Resolved, SelectionArgs};
use mlperf_runtime::submission::stage::StageRequest;
use mlperf_runtime::submittable::NonSubmittable;
use std::path::PathBuf;

/// Splits `--<config field>=<value>` overrides (NVIDIA's RUN_ARGS habit) off the arguments.
pub fn split_overrides(args: Vec<String>) -> (Vec<String>, Vec<Override>) {
    let mut rest = Vec::new();
    let mut overrides = Vec::new();
    for arg in args {
        match arg.strip_prefix("--").and_then(|a| a.split_once('=')) {
            Some((field, value)) if mlperf_config::Settings::index_of(field).is_some() => overrides.push(Override { field: field.to_string(), value: value.to_string() }),
            _ => rest.push(arg),
        }
    }
    (rest, overrides)
}

/// The selection flags as the runtime's typed selection.
fn selection_args(s: &Selection) -> SelectionArgs {
    SelectionArgs {
        benchmarks: s.benchmarks.clone().unwrap_or_default().0,
        scenarios: s.scenarios.clone().unwrap_or_default().0,
        config_ver: s.config_ver.clone().unwrap_or_default().0,
        accuracy: s.accuracy_target,
        power: s.power_setting,
        harness: s.harness_type,
        system_name: s.system_name.clone(),
    }
}

/// The selected configs of the chosen system with the overrides applied.
pub fn selection(s: &Selection, overrides: &[Override]) -> Result<Resolved, Error> {
    Ok(select::resolve(&TABLES, &selection_args(s), overrides)?)
}

/// The selection, every config of which must be valid in the round.
fn selection_in_round(s: &Selection, round: &RoundArg, overrides: &[Override]) -> Result<(Resolved, &'static Round), Error> {
    let resolved = selection(s, overrides)?;
    let round = round.get();
    resolved.require_round(round)?;
    Ok((resolved, round))
}

fn backend(b: &BackendArgs) -> Backend {
    b.backend.with_latency_us(b.backend_latency_us)
}

/// `run_harness` / `run`: the run request; logs go to `--log_dir`, else `build/logs` (or
/// `build/compliance_logs/<TEST>` for an audit run).
pub fn run_request(args: &HarnessArgs, overrides: &[Override]) -> Result<RunRequest, Error> {
    let (mut resolved, round) = selection_in_round(&args.selection, &args.round, overrides)?;
    let user_conf = match &args.user_conf_path {
        Some(path) => {
            let checked = UserConf::read(path, round, &resolved.configs)?;
            resolved.non_submittable.push(NonSubmittable::UserConf { path: path.clone() });
            Some(checked)
        }
        None => None,
    };
    let log_dir = match (&args.log_dir, args.audit_test) {
        (Some(dir), _) => dir.clone(),
        (None, Some(test)) => PathBuf::from("build/compliance_logs").join(test.name()),
        (None, None) => PathBuf::from("build/logs"),
    };
    Ok(RunRequest {
        system: resolved.system.system,
        round,
        overrides: resolved.override_pairs(),
        caveats: resolved.non_submittable,
        user_conf,
        configs: resolved.configs,
        test_mode: args.test_mode,
        test_run: args.test_run,
        audit_test: args.audit_test,
        backend: backend(&args.backend),
        log_dir,
        timestamp: harness::timestamp(),
    })
}

/// `run_audit_harness`.
pub fn audit_request<'a>(args: &'a AuditArgs, overrides: &[Override]) -> Result<AuditRequest<'a>, Error> {
    let (resolved, round) = selection_in_round(&args.selection, &args.round, overrides)?;
    Ok(AuditRequest {
        system: resolved.system.system,
        round,
        overrides: resolved.override_pairs(),
        caveats: resolved.non_submittable,
        configs: resolved.configs,
        tests: args.audit_tests.as_ref().map(|t| t.0.clone()).filter(|t| !t.is_empty()),
        test_run: args.test_run,
        backend: backend(&args.backend),
        build_dir: &args.build_dir,
        force: args.force,
    })
}

/// `stage_results` / `stage_compliance`: the selected configs valid in the round.
pub fn stage_request(args: &StageArgs) -> Result<StageRequest<'_>, Error> {
    let mut resolved = selection(&args.selection, &[])?;
    let round = args.round.get();
    resolved.keep_round(round)?;
    Ok(StageRequest {
        tables: &TABLES,
        round,
        configs: resolved.configs,
        submitter: args.submitter.clone(),
        out: &args.out,
        logs: &args.log_dir,
        compliance: &args.compliance_dir,
        allow_non_submittable: args.allow_non_submittable,
        allow_below_target: args.allow_below_target,
        force: args.force,
    })
}
