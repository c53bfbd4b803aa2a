//! Each command: resolve its flags, call the runtime, print what it returns. No decisions are
//! made here beyond which runtime function a command is.

use super::args::{
    AuditArgs, BenchCommand, CheckArgs, Cli, Command, ConfigCommand, HarnessArgs, LlmBenchArgs, PowerHarnessArgs, PtdStandinArgs, Selection, StageArgs, StandInArgs, TreeArgs,
};
use super::parsers::{List, PositiveSeconds};
use super::resolve;
use crate::TABLES;
use mlperf_config::Round;
use mlperf_runtime::benchmarks::llm::stand_in::reference_answers;
use mlperf_runtime::dataset::scratch::Scratch;
use mlperf_runtime::engines::serving::stand_in::{Faults, StandInOptions};
use mlperf_runtime::results::Format;
use mlperf_runtime::rundir::plan::BackendKind;
use mlperf_runtime::select::Override;
use mlperf_runtime::{Error, out, outln};
use mlperf_runtime::{bench, benchmarks, check, compliance, detect, engines, generate, harness, power, rundir, scaffold, show, signals, submission};
use std::num::NonZeroU64;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// Starts logging as the global flags say; a run's child also logs into its run directory.
pub fn start_logging(cli: &Cli) -> Result<(), Error> {
    let options = mlperf_runtime::logging::LogOptions { verbose: cli.verbose, quiet: cli.quiet, progress_interval: cli.progress_interval.duration() };
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
            | Command::RunHarnessPower(_)
            | Command::Bench { command: BenchCommand::Engine { .. } }
    )
}

/// The command's function, once the overrides are known to apply to it.
pub fn run(cli: Cli, overrides: Vec<Override>) -> Result<(), Error> {
    if let (Some(first), false) = (overrides.first(), takes_overrides(&cli.command)) {
        return Err(Error::Usage(format!(
            "config overrides (--{}=...) apply only to run_harness, run, run_harness_power, run_audit_harness, generate_engines, calibrate, run_llm_server and bench engine",
            first.field
        )));
    }
    let overrides = &overrides[..];
    match cli.command {
        Command::RunHarness(args) => run_harness(&args, overrides, false),
        Command::Run(args) => run_harness(&args, overrides, true),
        Command::RunAuditHarness(args) => run_audit_harness(&args, overrides),
        Command::RunLoadgenTest { dir } => run_loadgen_test(&dir),
        Command::GenerateEngines { selection, force_calibration } => generate_engines(&selection, overrides, force_calibration),
        Command::Calibrate { selection, force } => calibrate(&selection, overrides, force),
        Command::PreprocessData { selection } => preprocess_data(&selection),
        Command::RunLlmServer { selection, log_dir } => run_llm_server(&selection, overrides, &log_dir),
        Command::ServeStandIn(args) => serve_stand_in(&args),
        Command::PowerSetMaxqState { selection, log_dir } => power_set_maxq_state(&selection, &log_dir),
        Command::PowerRestoreState { log_dir } => power_restore_state(&log_dir),
        Command::RunHarnessPower(args) => run_harness_power(&args, overrides),
        Command::NtpStandin { listen } => ntp_standin(&listen),
        Command::PowerCheckSources { checkout } => power_check_sources(&checkout),
        Command::PtdStandin(args) => ptd_standin(&args),
        Command::Bench { command } => dispatch_bench(command, overrides),
        Command::Info => info(),
        Command::CheckSubmission(args) => check_submission(&args),
        Command::StageResults(args) => stage_results(&args),
        Command::StageCompliance(args) => stage_compliance(&args),
        Command::InferResults(tree) => infer_results(&tree),
        Command::TruncateResults { tree, backup } => truncate_results(&tree, &backup),
        Command::Score { dir, force } => score(&dir, force),
        Command::ExportSubmission { input, out, force } => export_submission(&input, &out, force),
        Command::PackSubmission { input, out, submitter, encrypt, force } => pack_submission(&input, &out, submitter, encrypt, force),
        Command::Systems => systems(),
        Command::AddSystem { id, feature, root } => add_system(&id, &feature, &root),
        Command::GenerateConfFiles { out, round, prune } => generate_conf_files(&out, round, prune),
        Command::Completions { shell } => completions(shell),
        Command::Config { command: ConfigCommand::Fields } => config_fields(),
        Command::Config { command: ConfigCommand::Show { selection, explain } } => config_show(&selection, explain),
    }
}

/// `bench <what>`: the function of each.
fn dispatch_bench(command: BenchCommand, overrides: &[Override]) -> Result<(), Error> {
    match command {
        BenchCommand::Loadgen { repeats, duration_ms, threads, out } => bench_loadgen(&out, bench::LoadgenBenchOptions { repeats, duration_ms, threads }),
        BenchCommand::Engine { selection, seconds, skip_server_search, out } => bench_engine(selection, overrides, seconds, skip_server_search, &out),
        BenchCommand::Llm(args) => bench_llm(&args),
        BenchCommand::CudnnGraph { batch, device } => bench_cudnn_graph(batch, device),
        BenchCommand::Dataset { file, reference_column, repeats, python } => bench_dataset(bench::dataset::DatasetBenchOptions { file, reference_column, repeats, python }),
    }
}

/// Progress lines of the preparing commands, on stdout.
fn say(line: &str) {
    outln!("{line}");
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
    // An error after some runs finished (a full disk) still shows their rows, then ends the command.
    let (outcomes, error) = match harness::run_all(&request) {
        harness::Ran { outcomes, error: Some(e) } if outcomes.is_empty() => return Err(e),
        harness::Ran { outcomes, error } => (outcomes, error),
    };
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
            Format::Table => mlperf_runtime::results::runs_table(&outcomes),
            Format::Json => mlperf_runtime::results::runs_json(&outcomes),
            Format::Csv => mlperf_runtime::results::runs_csv(&outcomes),
        }
    );
    match error {
        Some(e) => Err(e),
        None => rundir::report::verdict(&outcomes, signals::received()),
    }
}

/// `run_audit_harness`: the audits' table; a failed verification fails the command.
fn run_audit_harness(args: &AuditArgs, overrides: &[Override]) -> Result<(), Error> {
    let results = compliance::audit::run_audit_harness(&resolve::audit_request(args, overrides)?)?;
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
    Ok(())
}

/// `run_loadgen_test` (a run's child). The error also goes into the run's log (debug level: the
/// terminal shows it once).
fn run_loadgen_test(dir: &Path) -> Result<(), Error> {
    harness::child::run_one(&TABLES, dir).inspect_err(|e| tracing::debug!("the run ends: {e}"))
}

fn generate_engines(selection: &Selection, overrides: &[Override], force_calibration: bool) -> Result<(), Error> {
    benchmarks::prepare_all(&resolve::selection(selection, overrides)?.configs, force_calibration, &mut say)
}

fn calibrate(selection: &Selection, overrides: &[Override], force: bool) -> Result<(), Error> {
    benchmarks::calibrate_all(&resolve::selection(selection, overrides)?.configs, force, &mut say)
}

fn preprocess_data(selection: &Selection) -> Result<(), Error> {
    benchmarks::preprocess_all(&Scratch::from_env(), &resolve::selection(selection, &[])?.configs, &mut say)
}

/// `run_llm_server`: the serving engines of the selection, until a signal stops them.
fn run_llm_server(selection: &Selection, overrides: &[Override], log_dir: &Path) -> Result<(), Error> {
    let resolved = resolve::selection(selection, overrides)?;
    harness::serving_engines::serve_until_stopped(resolved.system.system, &resolved.configs, &log_dir.join(harness::timestamp()))
}

fn serve_stand_in(args: &StandInArgs) -> Result<(), Error> {
    Ok(engines::serving::stand_in::serve(stand_in_options(args)?)?)
}

/// `bench loadgen`: the null SUTs' runs under `out/<timestamp>`.
fn bench_loadgen(out: &Path, options: bench::LoadgenBenchOptions) -> Result<(), Error> {
    let out = out.join(harness::timestamp());
    out!("{}", bench::loadgen(&out, options)?);
    Ok(())
}

/// `bench engine`: each selected config (Offline unless `--scenarios` says) under
/// `out/<timestamp>/<benchmark>-<Scenario>-<workload>`.
fn bench_engine(mut selection: Selection, overrides: &[Override], seconds: PositiveSeconds, skip_server_search: bool, out: &Path) -> Result<(), Error> {
    selection.scenarios.get_or_insert_with(|| List(vec![mlperf_config::Scenario::Offline]));
    let resolved = resolve::selection(&selection, overrides)?;
    let out = out.join(harness::timestamp());
    let options = bench::engine::EngineBenchOptions { seconds: seconds.0, server_search: !skip_server_search };
    for selected in &resolved.configs {
        let c = selected.config;
        let dir = out.join(format!("{}-{}-{}", c.benchmark, c.scenario, c.workload.section_name()));
        let report = bench::engine::run(resolved.system.system, selected, TABLES.default_round(), &dir, options)?;
        outln!("{}", bench::engine::render(&report));
    }
    Ok(())
}

/// `bench cudnn_graph`: ResNet50's convolutions three ways, then the graph patterns' self-check;
/// an output that differs from its CPU reference fails the command.
fn bench_cudnn_graph(batch: u32, device: usize) -> Result<(), Error> {
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
    Ok(())
}

fn bench_dataset(options: bench::dataset::DatasetBenchOptions) -> Result<(), Error> {
    out!("{}", bench::dataset::run(&options)?);
    Ok(())
}

/// `bench llm`: the serving client against the stand-in, and its Python comparator.
fn bench_llm(args: &LlmBenchArgs) -> Result<(), Error> {
    let options = bench::llm::LlmBenchOptions {
        in_flight: args.in_flight,
        comparator_in_flight: args.comparator_in_flight,
        output_tokens: args.output_tokens,
        seconds: args.seconds.0,
        warm_up: args.warm_up.0,
        paced_token_ms: args.paced_token_ms.0,
        python: args.python.clone(),
        reference_client: args.reference_client.as_ref().map(|checkout| bench::llm::ReferenceClientOptions {
            checkout: checkout.clone(),
            python: args.reference_python.clone(),
            samples: args.reference_samples,
        }),
    };
    let report = bench::llm::run(TABLES.default_round(), &args.out.join(harness::timestamp()), &options)?;
    out!("{}", bench::llm::render(&report));
    Ok(())
}

/// `power_set_maxq_state`: the selected MaxQ configs' one power limit on every GPU.
fn power_set_maxq_state(selection: &Selection, log_dir: &Path) -> Result<(), Error> {
    let resolved = resolve::selection(selection, &[])?;
    let target = power::maxq::target(&resolved.system.system.id, &resolved.configs)?;
    let path = log_dir.join(power::maxq::RECORD);
    let record = power::maxq::set_maxq_state(&mut power::maxq::Nvml::open()?, &target, &path)?;
    for gpu in &record.gpus {
        outln!("GPU {}: power limit {} W (was {} W)", gpu.gpu, record.watts, f64::from(gpu.previous_mw) / 1000.0);
    }
    outln!("{}: the limits replaced ({}); `mlperf power_restore_state` puts them back", path.display(), record.from);
    Ok(())
}

/// `power_restore_state`: the limits power_set_maxq_state recorded, put back.
fn power_restore_state(log_dir: &Path) -> Result<(), Error> {
    let record = power::maxq::restore_state(&mut power::maxq::Nvml::open()?, &log_dir.join(power::maxq::RECORD))?;
    for gpu in &record.gpus {
        outln!("GPU {}: power limit {} W (was {} W)", gpu.gpu, f64::from(gpu.previous_mw) / 1000.0, record.watts);
    }
    Ok(())
}

/// `run_harness_power`: per selected config, power-dev's client runs our run_harness (performance
/// only, into --log_dir) under a ranging then a testing measurement; the session goes into the
/// testing run's directory, checked against the power rules; a line per config.
fn run_harness_power(args: &PowerHarnessArgs, overrides: &[Override]) -> Result<(), Error> {
    // Ctrl-C, SIGTERM and SIGHUP reach us, not the client's own process group: they must be
    // caught to be forwarded to it (otherwise we die and the client and its workload run on).
    signals::install()?;
    let resolved = resolve::selection(&args.selection, overrides)?;
    let options = power::client::ClientOptions {
        checkout: args.power_dev.clone(),
        director: args.director.clone(),
        port: args.director_port,
        ntp: args.ntp_server.clone(),
        python: args.python.clone(),
    };
    // Ranging and testing must run at the config's power state: where the selection sets a limit,
    // every GPU must have it (power_set_maxq_state sets it).
    match power::maxq::target(&resolved.system.system.id, &resolved.configs) {
        Ok(target) => power::maxq::check_state(&power::maxq::Nvml::open()?, &target)?,
        Err(power::PowerError::NoPowerLimit { .. }) => outln!("no selected config sets `power_limit`: the GPUs' power state is not checked"),
        Err(e) => return Err(e.into()),
    }
    let exe = std::env::current_exe().map_err(|e| Error::Other(format!("cannot find this program to run it as the workload: {e}")))?;
    let stamp = mlperf_runtime::harness::timestamp();
    let mut outcomes = Vec::new();
    for selected in &resolved.configs {
        let c = selected.config;
        let label: String = format!("{}-{}-{}", c.benchmark, c.scenario.name(), c.workload.section_name())
            .chars()
            .map(|ch| if ch.is_ascii_alphanumeric() || ch == '-' { ch } else { '_' })
            .collect();
        let mut workload = vec![
            exe.display().to_string(),
            "run_harness".into(),
            format!("--system_name={}", c.system),
            format!("--benchmarks={}", c.benchmark),
            format!("--scenarios={}", c.scenario.name()),
            format!("--config_ver={}", c.workload.section_name()),
            "--test_mode=PerformanceOnly".into(),
            format!("--log_dir={}", args.log_dir.display()),
        ];
        if let Some(round) = args.round.round {
            workload.push(format!("--round={}", round.id));
        }
        if args.test_run {
            workload.push("--test_run".into());
        }
        workload.extend(overrides.iter().map(|o| format!("--{}={}", o.field, o.value)));
        let outdir = args.power_logs.join(&stamp).join(&label);
        outln!(
            "{label}: power-dev's client runs it twice (ranging, testing) against {}:{}; its output: {}",
            args.director,
            args.director_port,
            outdir.join("client.out").display()
        );
        let session = power::client::measure(&options, &label, &workload, &args.log_dir, &outdir)?;
        let (run_dir, testing) = power::client::keep_in_run_dir(&session, &args.log_dir)?;
        outln!("{label}: testing {testing:.2} W average over LoadGen's window; session kept in {}", run_dir.display());
        // The workload's own table and summaries came before the session existed: again, with power.
        let plan = rundir::plan::read_plan(&run_dir)?;
        let outcome = rundir::report::Outcome::read(&run_dir, &plan, signals::ChildExit::Code(0), args.round.get());
        if let Some(root) = run_dir.ancestors().find(|d| d.join(rundir::summaries::PERF_SUMMARY).is_file()) {
            rundir::summaries::write_summaries_with(root, std::slice::from_ref(&outcome), &mlperf_runtime::results::power_note)?;
        }
        outcomes.push(outcome);
    }
    out!("{}", mlperf_runtime::results::runs_table(&outcomes));
    Ok(())
}

/// `ntp_standin`: answers NTP requests until stopped.
fn ntp_standin(listen: &str) -> Result<(), Error> {
    let socket = std::net::UdpSocket::bind(listen).map_err(|e| Error::Other(format!("ntp_standin: cannot listen on {listen}: {e} (port 123 needs root)")))?;
    outln!("ntp_standin: answering on {}", socket.local_addr().map(|a| a.to_string()).unwrap_or_default());
    power::ntp::serve(&socket, &|| signals::received().is_some()).map_err(|e| Error::Other(format!("ntp_standin: {e}")))
}

fn power_check_sources(checkout: &Path) -> Result<(), Error> {
    let dir = power::sources::check_checkout(checkout)?;
    outln!("{}: the round's accepted power-dev sources (power-dev {})", dir.display(), power::sources::ACCEPTED_COMMIT);
    Ok(())
}

/// `ptd_standin`: the PTDaemon stand-in, until the process is stopped (power-dev's server
/// terminates it).
fn ptd_standin(args: &PtdStandinArgs) -> Result<(), Error> {
    let options = power::standin::StandInOptions {
        port: args.port,
        watts: args.watts,
        testing_watts: args.testing_watts,
        uncertainty_percent: args.uncertainty_percent,
        log: None,
        model: args.model.clone(),
        version: args.ptd_version.clone(),
        period: Duration::from_secs_f64(args.period_ms.0 / 1e3),
        fault: args.drop_on.clone().map(power::standin::Fault::Drop).or_else(|| args.error_on.clone().map(power::standin::Fault::Error)),
    }
    .with_ptd_argv(&args.ptd_argv)
    .map_err(Error::Usage)?;
    let port = options.port;
    let standin = power::standin::StandIn::bind(options, Box::new(std::io::stdout())).map_err(|e| Error::Other(format!("ptd_standin: cannot listen on 127.0.0.1:{port}: {e}")))?;
    standin.serve().map_err(|e| Error::Other(format!("ptd_standin: {e}")))
}

/// `info`: the hardware and build; on a known system, the state of its scratch space's data too.
fn info() -> Result<(), Error> {
    let hw = detect::detect()?;
    out!("{}", show::info(&TABLES, &hw));
    if let detect::SystemMatch::Matched(system) = detect::match_system(&hw, TABLES.systems) {
        let scratch = Scratch::from_env();
        outln!("\nScratch space {} (MLPERF_SCRATCH_PATH):", scratch.root.display());
        out!("{}", benchmarks::data_reports(&scratch, TABLES.configs_for(&system.id)));
    }
    Ok(())
}

/// `check_submission`: the pre-flight, and with `--inference-repo` the official checker too.
fn check_submission(args: &CheckArgs) -> Result<(), Error> {
    let round = args.round.get();
    let checker_log = args.checker_log.clone().unwrap_or_else(|| args.input.parent().unwrap_or(Path::new(".")).join("checker_log.txt"));
    let official = args.inference_repo.as_deref().map(|repo| check::official::OfficialRequest {
        inference_repo: repo,
        round,
        input: &args.input,
        submitter: args.submitter.as_deref(),
        log_path: &checker_log,
        force: args.force,
        python: &args.python,
    });
    let checked = check::command(round, &args.input, args.submitter.as_deref(), official.as_ref())?;
    mlperf_runtime::results::print_check(&checked, &args.input, &round.checker_version, args.format)
}

fn stage_results(args: &StageArgs) -> Result<(), Error> {
    print_stage(&args.out, submission::stage::stage_results(&resolve::stage_request(args)?)?);
    Ok(())
}

fn stage_compliance(args: &StageArgs) -> Result<(), Error> {
    print_stage(&args.out, submission::stage::stage_compliance(&resolve::stage_request(args)?)?);
    Ok(())
}

fn infer_results(tree: &TreeArgs) -> Result<(), Error> {
    let report = submission::infer::infer_results(&tree.out, tree.round.get(), tree.submitter.as_deref())?;
    report.notes.iter().for_each(|n| outln!("note: {n}"));
    report.inferred.iter().for_each(|l| outln!("{l}"));
    outln!("{}: {} results inferred, {} files written", tree.out.display(), report.inferred.len(), report.files.written.len());
    Ok(())
}

fn truncate_results(tree: &TreeArgs, backup: &Path) -> Result<(), Error> {
    let report = submission::truncate::truncate_results(&tree.out, tree.round.get(), tree.submitter.as_deref(), backup)?;
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
    Ok(())
}

/// `export_submission`; runs staged from non-submittable runs are warned about.
fn score(dir: &Path, force: bool) -> Result<(), Error> {
    let scored = harness::rescore::rescore(dir, force)?;
    outln!("{}: {}", dir.join(mlperf_runtime::rundir::ACCURACY_TXT).display(), scored.text.trim());
    Ok(())
}

fn export_submission(input: &Path, out: &Path, force: bool) -> Result<(), Error> {
    let report = submission::export::export(input, out, force)?;
    for (path, why) in &report.left_out {
        outln!("left out {}: {why}", path.display());
    }
    if !report.non_submittable.is_empty() {
        let runs: Vec<String> = report.non_submittable.iter().map(|p| format!("\n  {}", p.display())).collect();
        tracing::warn!("{} staged run(s) came from NON-SUBMITTABLE runs (their markers were left out, the results were not):{}", report.non_submittable.len(), runs.concat());
    }
    outln!("{}: {} files exported, {} left out", out.display(), report.copied, report.left_out.len());
    Ok(())
}

/// `pack_submission`, for the one submitter under `input` unless `--submitter` names one.
fn pack_submission(input: &Path, out: &Path, submitter: Option<String>, encrypt: bool, force: bool) -> Result<(), Error> {
    let submitter = match submitter {
        Some(s) => s,
        None => submission::pack::only_submitter(input)?,
    };
    let packed = submission::pack::pack(&submission::pack::PackRequest { input, out_dir: out, submitter: &submitter, encrypt, force })?;
    outln!("{} ({}{})", packed.tarball.display(), packed.divisions.join(", "), if packed.encrypted { ", encrypted with openssl enc -aes256" } else { "" });
    outln!("{}: sha256 {}", packed.checksum_file.display(), packed.sha256);
    Ok(())
}

fn systems() -> Result<(), Error> {
    out!("{}", show::systems(&TABLES));
    Ok(())
}

/// `add_system`: the scaffolded files, then what is left to do by hand.
fn add_system(id: &str, feature: &str, root: &Path) -> Result<(), Error> {
    let (files, line) = scaffold::add_system(root, id, feature, &detect::detect()?)?;
    for f in files {
        outln!("wrote {}", f.display());
    }
    outln!("Now: fill every empty field of the description (the build names each one), add `{line}`");
    outln!("under [features] in Cargo.toml, and add configs under configs/<benchmark>/{id}/<Scenario>.toml.");
    Ok(())
}

/// `generate_conf_files` for the given rounds (an empty list: every round).
fn generate_conf_files(out: &Path, round: List<&'static Round>, prune: bool) -> Result<(), Error> {
    let rounds: Vec<_> = if round.0.is_empty() { TABLES.rounds.iter().collect() } else { round.0 };
    let report = generate::generate(&TABLES, &rounds, out, prune)?;
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
    Ok(())
}

fn completions(shell: clap_complete::Shell) -> Result<(), Error> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut <Cli as clap::CommandFactory>::command(), "mlperf", &mut script);
    out!("{}", String::from_utf8_lossy(&script));
    Ok(())
}

fn config_fields() -> Result<(), Error> {
    out!("{}", show::fields());
    Ok(())
}

fn config_show(selection: &Selection, explain: bool) -> Result<(), Error> {
    for selected in resolve::selection(selection, &[])?.configs {
        outln!("{}", show::config(selected.config, explain));
    }
    Ok(())
}

fn stand_in_options(args: &StandInArgs) -> Result<StandInOptions, Error> {
    let options = StandInOptions {
        host: args.host.clone(),
        port: args.port,
        api: args.api,
        model: args.model.clone(),
        first_token: args.first_token_ms.duration(),
        per_token: args.token_ms.duration(),
        min_output_tokens: args.min_output_tokens,
        max_output_tokens: args.max_output_tokens,
        vocab: args.vocab.get(),
        threads: args.threads.get(),
        cpus: args.cpus.clone(),
        faults: Faults {
            http_500_every: args.http_500_every.map(NonZeroU64::get),
            malformed_every: args.malformed_every.map(NonZeroU64::get),
            drop_every: args.drop_every.map(NonZeroU64::get),
            drop_first: args.drop_first.map(NonZeroU64::get),
            stall_every: args.stall_every.map(NonZeroU64::get),
            die_after: args.die_after.map(NonZeroU64::get),
            ready_after: Duration::from_millis(args.ready_after_ms),
            never_ready: args.never_ready,
        },
        references: match (&args.reference_answers, &args.benchmark) {
            (Some(dataset), Some(benchmark)) => {
                Some(Arc::new(benchmarks::family(benchmark).stand_in_answers(dataset, args.tokenizer.as_deref()).map_err(|e| e.context("serve_stand_in --reference_answers"))?))
            }
            (Some(dataset), None) => {
                let Some(tokenizer) = &args.tokenizer else {
                    return Err(Error::Usage("serve_stand_in --reference_answers: name the benchmark (--benchmark) or, for an LLM, its tokenizer.json (--tokenizer)".into()));
                };
                Some(Arc::new(reference_answers(dataset, tokenizer).map_err(|e| Error::from(e).context("serve_stand_in --reference_answers"))?))
            }
            (None, _) => None,
        },
    };
    options.validate().map_err(|e| Error::Usage(format!("serve_stand_in: {e} (--min_output_tokens / --max_output_tokens / --vocab / --threads / --cpus / fault flags)")))?;
    Ok(options)
}

fn print_stage(out: &Path, report: submission::stage::StageReport) {
    report.warnings.iter().for_each(|w| tracing::warn!("{w}"));
    report.staged.iter().for_each(|l| outln!("staged {l}"));
    let files = &report.files;
    outln!("{}: {} files written, {} replaced (--force), {} unchanged", out.display(), files.written.len(), files.replaced.len(), files.unchanged);
}
