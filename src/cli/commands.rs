//! Each command: resolve its flags, call the runtime, print what it returns. No decisions are
//! made here beyond which runtime function a command is.

use super::args::{BenchCommand, Cli, Command, ConfigCommand, HarnessArgs, StandInArgs};
use super::resolve;
use crate::TABLES;
use mlperf_runtime::benchmarks::llm::stand_in::reference_answers;
use mlperf_runtime::dataset::scratch::Scratch;
use mlperf_runtime::engines::serving::stand_in::{Faults, StandInOptions};
use mlperf_runtime::results::Format;
use mlperf_runtime::rundir::plan::BackendKind;
use mlperf_runtime::rundir::report::Outcome;
use mlperf_runtime::select::Override;
use mlperf_runtime::{Error, out, outln};
use mlperf_runtime::{bench, benchmarks, check, compliance, detect, engines, generate, harness, rundir, scaffold, show, signals, submission};
use std::sync::Arc;
use std::time::Duration;

/// Starts logging as the global flags say; a run's child also logs into its run directory.
pub fn start_logging(cli: &Cli) -> Result<(), Error> {
    if !(cli.progress_interval.is_finite() && cli.progress_interval > 0.0) {
        return Err(Error::Usage(format!("--progress_interval={}: give a positive number of seconds", cli.progress_interval)));
    }
    let options = mlperf_runtime::logging::LogOptions { verbose: cli.verbose, quiet: cli.quiet, progress_interval: Duration::from_secs_f64(cli.progress_interval) };
    let run_log = match &cli.command {
        Command::RunLoadgenTest { dir } => Some(dir.join(mlperf_runtime::rundir::RUN_LOG)),
        _ => None,
    };
    Ok(mlperf_runtime::logging::init(options, run_log.as_deref())?)
}

/// Commands that take `--<config field>=<value>` overrides.
fn takes_overrides(command: &Command) -> bool {
    matches!(
        command,
        Command::RunHarness(_)
            | Command::Run(_)
            | Command::RunAuditHarness(_)
            | Command::GenerateEngines { .. }
            | Command::Calibrate { .. }
            | Command::RunLlmServer { .. }
            | Command::Bench { command: BenchCommand::Engine { .. } }
    )
}

pub fn run(cli: Cli, overrides: Vec<Override>) -> Result<(), Error> {
    if let (Some(first), false) = (overrides.first(), takes_overrides(&cli.command)) {
        return Err(Error::Usage(format!(
            "config overrides (--{}=...) apply only to run_harness, run, run_audit_harness, generate_engines, calibrate, run_llm_server and bench engine",
            first.field
        )));
    }
    let say = &mut |line: &str| outln!("{line}");
    match cli.command {
        Command::RunHarness(args) => run_harness(&args, &overrides, false)?,
        Command::Run(args) => run_harness(&args, &overrides, true)?,
        Command::RunAuditHarness(args) => {
            let results = compliance::audit::run_audit_harness(&resolve::audit_request(&args, &overrides)?)?;
            out!(
                "{}",
                match args.format {
                    Format::Table => compliance::audit::table(&results),
                    Format::Json => mlperf_runtime::results::audits_json(&results),
                    Format::Csv => mlperf_runtime::results::audits_csv(&results),
                }
            );
            let failed = results.iter().filter(|r| !r.passed).count();
            if failed > 0 {
                return Err(Error::CheckFailed(format!("{failed} of {} audits failed verification; see the verify_*.txt files", results.len())));
            }
        }
        // The error also goes into the run's log (debug level: the terminal shows it once).
        Command::RunLoadgenTest { dir } => harness::child::run_one(&TABLES, &dir).inspect_err(|e| tracing::debug!("the run ends: {e}"))?,
        Command::GenerateEngines { selection, force_calibration } => benchmarks::prepare_all(&resolve::selection(&selection, &overrides)?.configs, force_calibration, say)?,
        Command::Calibrate { selection, force } => benchmarks::calibrate_all(&resolve::selection(&selection, &overrides)?.configs, force, say)?,
        Command::PreprocessData { selection } => benchmarks::preprocess_all(&Scratch::from_env(), &resolve::selection(&selection, &[])?.configs, say)?,
        Command::Bench { command: BenchCommand::Loadgen { repeats, duration_ms, threads, out } } => {
            let out = out.join(harness::timestamp());
            out!("{}", bench::loadgen(&out, bench::LoadgenBenchOptions { repeats, duration_ms, threads })?);
        }
        Command::Bench { command: BenchCommand::Engine { mut selection, seconds, skip_server_search, out } } => {
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(Error::Usage(format!("--seconds={seconds}: give a positive number of seconds")));
            }
            selection.scenarios.get_or_insert_with(|| super::parsers::List(vec![mlperf_config::Scenario::Offline]));
            let resolved = resolve::selection(&selection, &overrides)?;
            let out = out.join(harness::timestamp());
            let options = bench::engine::EngineBenchOptions { seconds, server_search: !skip_server_search };
            for selected in &resolved.configs {
                let c = selected.config;
                let dir = out.join(format!("{}-{}-{}", c.benchmark, c.scenario, c.workload.section_name()));
                let report = bench::engine::run(resolved.system.system, selected, TABLES.default_round(), &dir, options)?;
                outln!("{}", bench::engine::render(&report));
            }
        }
        Command::RunLlmServer { selection, log_dir } => {
            let resolved = resolve::selection(&selection, &overrides)?;
            harness::serving_engines::serve_until_stopped(resolved.system.system, &resolved.configs, &log_dir.join(harness::timestamp()))?;
        }
        Command::ServeStandIn(args) => engines::serving::stand_in::serve(stand_in_options(&args)?)?,
        Command::Bench { command: BenchCommand::CudnnGraph { batch, device } } => {
            use engines::gpu::graph::self_check;
            let gpu_error = |e: engines::gpu::graph::GraphError| Error::EngineFailed(e.to_string());
            let layers = self_check::bench_resnet50(device, i64::from(batch.max(1))).map_err(gpu_error)?;
            outln!(
                "ResNet50 int8 convolutions at batch {batch}, graph (per-channel scale) vs legacy (per-tensor scale) and, on 1x1 layers, our kernel (per-channel scale), all with bias, residual and ReLU fused:\n{layers}"
            );
            let patterns = self_check::run(device).map_err(gpu_error)?;
            outln!("{patterns}");
            if !(layers.passed() && patterns.passed()) {
                return Err(Error::CheckFailed("a graph's output differs from its CPU reference (see FAIL above)".into()));
            }
        }
        Command::Bench { command: BenchCommand::Dataset { file, reference_column, repeats, python } } => {
            out!("{}", bench::dataset::run(&bench::dataset::DatasetBenchOptions { file, reference_column, repeats, python })?);
        }
        Command::Bench { command: BenchCommand::Llm(args) } => {
            for (flag, v) in [("--seconds", args.seconds), ("--warm_up", args.warm_up), ("--paced_token_ms", args.paced_token_ms)] {
                if !(v.is_finite() && v > 0.0) {
                    return Err(Error::Usage(format!("{flag}={v}: give a positive number")));
                }
            }
            let options = bench::llm::LlmBenchOptions {
                in_flight: args.in_flight,
                comparator_in_flight: args.comparator_in_flight,
                output_tokens: args.output_tokens,
                seconds: args.seconds,
                warm_up: args.warm_up,
                paced_token_ms: args.paced_token_ms,
                python: args.python.clone(),
            };
            let report = bench::llm::run(TABLES.default_round(), &args.out.join(harness::timestamp()), &options)?;
            out!("{}", bench::llm::render(&report));
        }
        Command::Info => {
            let hw = detect::detect()?;
            out!("{}", show::info(&TABLES, &hw));
            if let detect::SystemMatch::Matched(system) = detect::match_system(&hw, TABLES.systems) {
                let scratch = Scratch::from_env();
                outln!("\nScratch space {} (MLPERF_SCRATCH_PATH):", scratch.root.display());
                out!("{}", benchmarks::data_reports(&scratch, TABLES.configs_for(&system.id)));
            }
        }
        Command::CheckSubmission { input, round, submitter, inference_repo, checker_log, force, python, format } => {
            let round = round.get();
            let checker_log = checker_log.unwrap_or_else(|| input.parent().unwrap_or(std::path::Path::new(".")).join("checker_log.txt"));
            let official = inference_repo.as_deref().map(|repo| check::official::OfficialRequest {
                inference_repo: repo,
                round,
                input: &input,
                submitter: submitter.as_deref(),
                log_path: &checker_log,
                force,
                python: &python,
            });
            let checked = check::command(round, &input, submitter.as_deref(), official.as_ref())?;
            mlperf_runtime::results::print_check(&checked, &input, &round.checker_version, format)?;
        }
        Command::StageResults(args) => print_stage(&args.out, submission::stage::stage_results(&resolve::stage_request(&args)?)?),
        Command::StageCompliance(args) => print_stage(&args.out, submission::stage::stage_compliance(&resolve::stage_request(&args)?)?),
        Command::InferResults(tree) => {
            let report = submission::infer::infer_results(&tree.out, tree.round.get(), tree.submitter.as_deref())?;
            report.notes.iter().for_each(|n| outln!("note: {n}"));
            report.inferred.iter().for_each(|l| outln!("{l}"));
            outln!("{}: {} results inferred, {} files written", tree.out.display(), report.inferred.len(), report.files.written.len());
        }
        Command::TruncateResults { tree, backup } => {
            let report = submission::truncate::truncate_results(&tree.out, tree.round.get(), tree.submitter.as_deref(), &backup)?;
            report.truncated.iter().for_each(|p| outln!("truncated {}", p.display()));
            report.hashed_whole.iter().for_each(|p| outln!("hashed (under 4096 bytes, kept whole) {}", p.display()));
            outln!(
                "{}: {} logs truncated, {} kept whole, {} already done; full logs in {}",
                tree.out.display(),
                report.truncated.len(),
                report.hashed_whole.len(),
                report.already_done.len(),
                backup.display()
            );
        }
        Command::ExportSubmission { input, out, force } => {
            let report = submission::export::export(&input, &out, force)?;
            for (path, why) in &report.left_out {
                outln!("left out {}: {why}", path.display());
            }
            if !report.non_submittable.is_empty() {
                let runs: Vec<String> = report.non_submittable.iter().map(|p| format!("\n  {}", p.display())).collect();
                tracing::warn!(
                    "{} staged run(s) came from NON-SUBMITTABLE runs (their markers were left out, the results were not):{}",
                    report.non_submittable.len(),
                    runs.concat()
                );
            }
            outln!("{}: {} files exported, {} left out", out.display(), report.copied, report.left_out.len());
        }
        Command::PackSubmission { input, out, submitter, encrypt, force } => {
            let submitter = match submitter {
                Some(s) => s,
                None => submission::pack::only_submitter(&input)?,
            };
            let packed = submission::pack::pack(&submission::pack::PackRequest { input: &input, out_dir: &out, submitter: &submitter, encrypt, force })?;
            outln!("{} ({}{})", packed.tarball.display(), packed.divisions.join(", "), if packed.encrypted { ", encrypted with openssl enc -aes256" } else { "" });
            outln!("{}: sha256 {}", packed.checksum_file.display(), packed.sha256);
        }
        Command::Systems => out!("{}", show::systems(&TABLES)),
        Command::AddSystem { id, feature, root } => {
            let (files, line) = scaffold::add_system(&root, &id, &feature, &detect::detect()?)?;
            for f in files {
                outln!("wrote {}", f.display());
            }
            outln!("Now: fill every empty field of the description (the build names each one), add `{line}`");
            outln!("under [features] in Cargo.toml, and add configs under configs/<benchmark>/{id}/<Scenario>.toml.");
        }
        Command::GenerateConfFiles { out, round, prune } => {
            let rounds: Vec<_> = if round.0.is_empty() { TABLES.rounds.iter().collect() } else { round.0 };
            let report = generate::generate(&TABLES, &rounds, &out, prune)?;
            outln!(
                "{}: {} files written, {} unchanged{}",
                out.display(),
                report.written.len(),
                report.unchanged,
                if report.removed.is_empty() { String::new() } else { format!(", {} stale removed", report.removed.len()) }
            );
            if !report.stale.is_empty() {
                tracing::warn!("{} files no config produces any more (first: {}); rerun with --prune to delete them", report.stale.len(), report.stale[0].display());
            }
        }
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "mlperf", &mut script);
            out!("{}", String::from_utf8_lossy(&script));
        }
        Command::Config { command: ConfigCommand::Fields } => out!("{}", show::fields()),
        Command::Config { command: ConfigCommand::Show { selection, explain } } => {
            for selected in resolve::selection(&selection, &[])?.configs {
                outln!("{}", show::config(selected.config, explain));
            }
        }
    }
    Ok(())
}

/// `run_harness`, or with `prepare` (`mlperf run`) the engines first (for the CPU system: the
/// synthetic model and its labels, generated once before any timed run); then the result table.
/// A run stopped by a signal is an error.
fn run_harness(args: &HarnessArgs, overrides: &[Override], prepare: bool) -> Result<(), Error> {
    if args.force_calibration && !prepare {
        return Err(Error::Usage("--force_calibration applies to `run` and `generate_engines`, which build engines; run_harness only runs them".into()));
    }
    let request = resolve::run_request(args, overrides)?;
    if prepare && args.backend.backend == BackendKind::Config {
        benchmarks::prepare_all(&request.configs, args.force_calibration, &mut |line| tracing::info!("{line}"))?;
    }
    let outcomes: Vec<Outcome> = harness::run_all(&request)?;
    if args.log_copy_detail_to_stdout {
        for o in &outcomes {
            let detail = o.dir.join(rundir::DETAIL_LOG);
            outln!("==== {}", detail.display());
            out!("{}", std::fs::read_to_string(&detail).unwrap_or_else(|e| format!("(not written: {e})\n")));
        }
    }
    out!(
        "{}",
        match args.format {
            Format::Table => rundir::report::table(&outcomes),
            Format::Json => mlperf_runtime::results::runs_json(&outcomes),
            Format::Csv => mlperf_runtime::results::runs_csv(&outcomes),
        }
    );
    rundir::report::verdict(&outcomes, signals::received())
}

fn stand_in_options(args: &StandInArgs) -> Result<StandInOptions, Error> {
    let ms = |flag: &str, v: f64| {
        if v.is_finite() && v >= 0.0 { Ok(Duration::from_secs_f64(v / 1e3)) } else { Err(Error::Usage(format!("--{flag}={v}: give a number of milliseconds, 0 or more"))) }
    };
    let options = StandInOptions {
        host: args.host.clone(),
        port: args.port,
        api: args.api,
        model: args.model.clone(),
        first_token: ms("first_token_ms", args.first_token_ms)?,
        per_token: ms("token_ms", args.token_ms)?,
        min_output_tokens: args.min_output_tokens,
        max_output_tokens: args.max_output_tokens,
        vocab: args.vocab,
        threads: args.threads,
        cpus: args.cpus.clone(),
        faults: Faults {
            http_500_every: args.http_500_every,
            malformed_every: args.malformed_every,
            drop_every: args.drop_every,
            stall_every: args.stall_every,
            die_after: args.die_after,
            ready_after: Duration::from_millis(args.ready_after_ms),
            never_ready: args.never_ready,
        },
        references: match (&args.reference_answers, &args.tokenizer) {
            (Some(dataset), Some(tokenizer)) => Some(Arc::new(reference_answers(dataset, tokenizer).map_err(|e| Error::from(e).context("serve_stand_in --reference_answers"))?)),
            _ => None,
        },
    };
    options.validate().map_err(|e| Error::Usage(format!("serve_stand_in: {e} (--min_output_tokens / --max_output_tokens / --vocab / --threads / --cpus / fault flags)")))?;
    Ok(options)
}

fn print_stage(out: &std::path::Path, report: submission::stage::StageReport) {
    report.warnings.iter().for_each(|w| tracing::warn!("{w}"));
    report.staged.iter().for_each(|l| outln!("staged {l}"));
    let files = &report.files;
    outln!("{}: {} files written, {} replaced (--force), {} unchanged", out.display(), files.written.len(), files.replaced.len(), files.unchanged);
}
