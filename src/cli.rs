//! Command-line surface (NVIDIA's command and flag names), parsed raw by clap and resolved into
//! runtime calls here.

use clap::{Args, Parser, Subcommand};
use mlperf_config::Tables;
use mlperf_runtime::dataset::scratch::Scratch;
use mlperf_runtime::{check, compliance, detect, generate, harness, select, show, submission};

#[derive(Parser, Debug)]
#[command(name = "mlperf", version, about = "Compiled MLPerf Inference submission system")]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

/// Which configs a command works on (NVIDIA's RUN_ARGS selection flags).
#[derive(Args, Debug, Default)]
pub struct Selection {
    /// Comma-separated benchmarks (resnet50, bert, llama2-70b, ...); default: all configured.
    #[arg(long)]
    pub benchmarks: Option<String>,
    /// Comma-separated scenarios (offline, server, singlestream, multistream, interactive).
    #[arg(long)]
    pub scenarios: Option<String>,
    /// Legacy workload name: default, high_accuracy, maxq, high_accuracy_maxq, triton, ..., or all.
    #[arg(long = "config_ver")]
    pub config_ver: Option<String>,
    /// 0.99 or 0.999.
    #[arg(long = "accuracy_target")]
    pub accuracy_target: Option<String>,
    /// MaxP or MaxQ.
    #[arg(long = "power_setting")]
    pub power_setting: Option<String>,
    /// custom, triton or hetero.
    #[arg(long = "harness_type")]
    pub harness_type: Option<String>,
    /// Use this system instead of the detected one (development builds only; env SYSTEM_NAME).
    #[arg(long = "system_name")]
    pub system_name: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Detected hardware, the matching system (or the nearest and why not), and the build.
    Info,
    /// The systems this binary holds.
    Systems,
    /// Scaffold systems/<id>.{toml,json} from this machine's hardware; prints the Cargo feature line.
    #[command(name = "add_system", alias = "add-system")]
    AddSystem {
        /// New system id, e.g. MyBox_L40Sx4 (names files and config directories).
        #[arg(long)]
        id: String,
        /// Cargo feature that locks a build to it, e.g. system-mybox.
        #[arg(long)]
        feature: String,
        /// Project root (where systems/ and Cargo.toml are).
        #[arg(long, default_value = ".")]
        root: std::path::PathBuf,
    },
    /// Write user.conf, measurements.json, README.md, mlperf.conf and system descriptions for every
    /// compiled config into measurements/ (or --out), in each round's layout.
    #[command(name = "generate_conf_files", alias = "generate-conf-files")]
    GenerateConfFiles {
        /// Output directory.
        #[arg(long, default_value = "measurements")]
        out: std::path::PathBuf,
        /// Round to generate (v6.1, v5.1) or all.
        #[arg(long, default_value = "all")]
        round: String,
        /// Delete files under the generated round directories that no config produces any more.
        #[arg(long)]
        prune: bool,
    },
    /// Run LoadGen tests of the selected configs and print a result table.
    #[command(name = "run_harness", alias = "run-harness")]
    RunHarness(HarnessArgs),
    /// Prepare engines for the selected configs, then run them (generate_engines + run_harness).
    Run(HarnessArgs),
    /// Build (or reuse, when up to date) the engine plans of the selected configs under build/engines.
    #[command(name = "generate_engines", alias = "generate-engines")]
    GenerateEngines {
        #[command(flatten)]
        selection: Selection,
    },
    /// Measure the int8 calibration of the selected configs (NVIDIA's `calibrate`): each value's
    /// range over the calibration images, on the CPU, into the config's cache_file
    /// (build/calibration/<benchmark>/ by default). generate_engines calibrates when no cache exists.
    Calibrate {
        #[command(flatten)]
        selection: Selection,
        /// Measure again and replace an existing cache (also one made for another model).
        #[arg(long)]
        force: bool,
    },
    /// Run the round's compliance audits of the selected configs, verify them natively against the
    /// newest VALID reference runs, and write build/compliance/<system>/<bench>/<Scenario>/<TEST>/.
    #[command(name = "run_audit_harness", alias = "run-audit-harness")]
    RunAuditHarness(AuditArgs),
    /// One LoadGen test in a prepared run directory (started by run_harness; one per process).
    #[command(name = "run_loadgen_test", hide = true)]
    RunLoadgenTest { dir: std::path::PathBuf },
    /// Preprocess raw datasets in $MLPERF_SCRATCH_PATH into the tensors the selected configs read.
    #[command(name = "preprocess_data", alias = "preprocess-data")]
    PreprocessData {
        #[command(flatten)]
        selection: Selection,
    },
    /// Pre-flight of the official submission checker on a staged tree (each rule names the file and
    /// the fix); with --inference-repo also runs the official checker and compares verdicts.
    #[command(name = "check_submission", alias = "check-submission")]
    CheckSubmission {
        /// Submission root (holds closed/, open/, network/).
        #[arg(long, default_value = "build/submission")]
        input: std::path::PathBuf,
        /// Round whose rules apply (default: the newest).
        #[arg(long)]
        round: Option<String>,
        /// Check only this submitter's tree.
        #[arg(long)]
        submitter: Option<String>,
        /// A checkout of mlcommons/inference: also run its submission checker.
        #[arg(long = "inference-repo", alias = "inference_repo")]
        inference_repo: Option<std::path::PathBuf>,
        /// Where the official checker's output is saved (default: <input>/../checker_log.txt).
        #[arg(long = "checker-log", alias = "checker_log")]
        checker_log: Option<std::path::PathBuf>,
        /// Overwrite an existing checker log.
        #[arg(long)]
        force: bool,
        /// Python interpreter for the official checker (needs PyYAML).
        #[arg(long, default_value = "python3")]
        python: String,
    },
    /// Collect the newest VALID performance and accuracy runs of the selected configs from build/logs
    /// into the round's submission layout, with their generated measurement files and system description.
    #[command(name = "stage_results", alias = "stage-results")]
    StageResults(StageArgs),
    /// Collect the verified audits (build/compliance) of the selected configs into the staged submission.
    #[command(name = "stage_compliance", alias = "stage-compliance")]
    StageCompliance(StageArgs),
    /// Infer the MultiStream / Offline results of edge systems from staged SingleStream / MultiStream
    /// ones, as the checker allows (after stage_compliance, before truncate_results).
    #[command(name = "infer_results", alias = "infer-results")]
    InferResults(TreeArgs),
    /// Hash and truncate the staged accuracy logs as the official truncate_accuracy_log.py does,
    /// after backing the full logs up (only once the round's audits are staged).
    #[command(name = "truncate_results", alias = "truncate-results")]
    TruncateResults {
        #[command(flatten)]
        tree: TreeArgs,
        /// Where the full accuracy logs are kept (same relative paths).
        #[arg(long, default_value = "build/full_results")]
        backup: std::path::PathBuf,
    },
    /// A clean copy of the staged submission: no symbolic links, run provenance or editor backups.
    #[command(name = "export_submission", alias = "export-submission")]
    ExportSubmission {
        /// The staged submission root.
        #[arg(long, default_value = "build/submission")]
        input: std::path::PathBuf,
        #[arg(long, default_value = "build/export")]
        out: std::path::PathBuf,
        /// Replace an earlier export.
        #[arg(long)]
        force: bool,
    },
    /// Pack the exported submission as mlperf_submission_<submitter>.tar.gz with a sha256 checksum
    /// file; --encrypt runs `openssl enc -e -aes256` like the official pack_submission.sh.
    #[command(name = "pack_submission", alias = "pack-submission")]
    PackSubmission {
        /// The exported submission root.
        #[arg(long, default_value = "build/export")]
        input: std::path::PathBuf,
        /// Where the tarball and checksum file go.
        #[arg(long, default_value = "build")]
        out: std::path::PathBuf,
        /// Default: the one submitter directory under the input.
        #[arg(long)]
        submitter: Option<String>,
        /// Encrypt with the passphrase in $MLPERF_PACK_PASSPHRASE (needs openssl).
        #[arg(long)]
        encrypt: bool,
        /// Replace an earlier tarball.
        #[arg(long)]
        force: bool,
    },
    /// Benchmarks that print a comparison table (ratio first).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Inspect the compiled configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
}

/// What answers the queries, for run_harness, run and run_audit_harness.
#[derive(Args, Debug)]
pub struct BackendArgs {
    /// What answers the queries: config (the configured engine), null, or fixed_latency (test doubles).
    #[arg(long, default_value = "config")]
    pub backend: String,
    /// Per-batch latency of the fixed_latency backend, in microseconds.
    #[arg(long = "backend_latency_us", default_value_t = 1000)]
    pub backend_latency_us: u64,
}

impl BackendArgs {
    fn parse(&self) -> Result<harness::Backend, String> {
        harness::Backend::parse(&self.backend, self.backend_latency_us)
    }
}

/// Flags of run_harness / run (NVIDIA's names).
#[derive(Args, Debug)]
pub struct HarnessArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// PerformanceOnly, AccuracyOnly, SubmissionRun (accuracy then performance) or FindPeakPerformance.
    #[arg(long = "test_mode", default_value = "PerformanceOnly")]
    pub test_mode: String,
    /// One-minute runs (min_duration 60 s, Offline/Server min_query_count 1); never submittable.
    #[arg(long = "test_run")]
    pub test_run: bool,
    /// Run a compliance test of the round (TEST01, TEST04, TEST06, ...) with its audit settings.
    #[arg(long = "audit_test")]
    pub audit_test: Option<String>,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Round whose LoadGen and rules apply (default: the newest).
    #[arg(long)]
    pub round: Option<String>,
    /// Log directory (default build/logs, or build/compliance_logs/<TEST> with --audit_test).
    #[arg(long = "log_dir")]
    pub log_dir: Option<std::path::PathBuf>,
}

/// Flags of stage_results / stage_compliance.
#[derive(Args, Debug)]
pub struct StageArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Submitter directory name; default (and it must match): the system description's "submitter".
    #[arg(long)]
    pub submitter: Option<String>,
    /// Submission root.
    #[arg(long, default_value = "build/submission")]
    pub out: std::path::PathBuf,
    /// Round whose layout and rules apply (default: the newest).
    #[arg(long)]
    pub round: Option<String>,
    /// Where the runs are.
    #[arg(long = "log_dir", default_value = "build/logs")]
    pub log_dir: std::path::PathBuf,
    /// Where the verified audits are.
    #[arg(long = "compliance_dir", default_value = "build/compliance")]
    pub compliance_dir: std::path::PathBuf,
    /// DANGEROUS: also stage runs marked non-submittable (test runs, overrides, synthetic data);
    /// each reason is printed and NON_SUBMITTABLE.txt stays next to the staged logs.
    #[arg(long = "allow-non-submittable")]
    pub allow_non_submittable: bool,
    /// Replace staged files whose contents would change.
    #[arg(long)]
    pub force: bool,
}

/// Flags of run_audit_harness.
#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Comma-separated tests (TEST01, TEST04, TEST06); default: each benchmark's required tests in the round.
    #[arg(long = "audit_tests")]
    pub audit_tests: Option<String>,
    /// One-minute audit runs; never submittable (the reference runs must match).
    #[arg(long = "test_run")]
    pub test_run: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
    /// Round whose LoadGen and rules apply (default: the newest).
    #[arg(long)]
    pub round: Option<String>,
    /// Holds logs/ (reference runs), compliance_logs/ (audit runs) and compliance/ (verified tests).
    #[arg(long = "build_dir", default_value = "build")]
    pub build_dir: std::path::PathBuf,
    /// Replace verified TEST directories that already exist.
    #[arg(long)]
    pub force: bool,
}

/// Flags of the commands that work on a staged submission tree.
#[derive(Args, Debug)]
pub struct TreeArgs {
    /// Submission root.
    #[arg(long, default_value = "build/submission")]
    pub out: std::path::PathBuf,
    /// Round whose layout and rules apply (default: the newest).
    #[arg(long)]
    pub round: Option<String>,
    /// Only this submitter's tree (default: all under the root).
    #[arg(long)]
    pub submitter: Option<String>,
}

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// LoadGen overhead: a null SUT through our binding vs the same null SUT in C++.
    Loadgen {
        #[arg(long, default_value_t = 5)]
        repeats: usize,
        /// Minimum duration of each LoadGen run.
        #[arg(long = "duration_ms", default_value_t = 1000)]
        duration_ms: u64,
        /// Worker threads of the Server null SUTs.
        #[arg(long, default_value_t = 4)]
        threads: usize,
        /// Where the runs' LoadGen logs go.
        #[arg(long, default_value = "build/bench/loadgen")]
        out: std::path::PathBuf,
    },
    /// The configured engines alone, through the batching SUT under LoadGen Offline, and a null
    /// engine through the batching SUT (Offline and Server): harness efficiency and ceiling.
    Engine {
        /// The configs to measure (default scenario: offline).
        #[command(flatten)]
        selection: Selection,
        /// Length of each measurement (engine loop, LoadGen minimum duration).
        #[arg(long, default_value_t = 10.0)]
        seconds: f64,
        /// Leave out the null engine's Server search (row c), which takes minutes: for comparing
        /// engines, where the harness's ceiling is not in question.
        #[arg(long = "skip_server_search")]
        skip_server_search: bool,
        /// Where the runs' LoadGen logs go.
        #[arg(long, default_value = "build/bench/engine")]
        out: std::path::PathBuf,
    },
}

#[derive(Subcommand, Debug)]
pub enum ConfigCommand {
    /// Effective values of the selected configs, with the file:line that set each.
    Show {
        #[command(flatten)]
        selection: Selection,
        /// Also print each field's help, its user.conf key and what each value overrode.
        #[arg(long)]
        explain: bool,
    },
    /// Every config field: type, unit, applicability, LoadGen key.
    Fields,
}

/// Splits `--<config field>=<value>` overrides (NVIDIA's RUN_ARGS habit) off the arguments.
pub fn split_overrides(args: Vec<String>) -> (Vec<String>, Vec<(String, String)>) {
    let mut rest = Vec::new();
    let mut overrides = Vec::new();
    for arg in args {
        match arg.strip_prefix("--").and_then(|a| a.split_once('=')) {
            Some((field, value)) if mlperf_config::Settings::index_of(field).is_some() => overrides.push((field.to_string(), value.to_string())),
            _ => rest.push(arg),
        }
    }
    (rest, overrides)
}

pub fn run(cli: Cli, overrides: Vec<(String, String)>, tables: &'static Tables) -> Result<(), String> {
    if !overrides.is_empty()
        && !matches!(
            cli.command,
            Command::RunHarness(_)
                | Command::Run(_)
                | Command::RunAuditHarness(_)
                | Command::GenerateEngines { .. }
                | Command::Calibrate { .. }
                | Command::Bench { command: BenchCommand::Engine { .. } }
        )
    {
        return Err(format!("config overrides (--{}=...) apply only to run_harness, run, run_audit_harness, generate_engines, calibrate and bench engine", overrides[0].0));
    }
    match cli.command {
        Command::RunHarness(args) => report(run_harness(args, overrides, tables, false)?)?,
        Command::RunAuditHarness(args) => run_audit_harness(args, overrides, tables)?,
        Command::Run(args) => report(run_harness(args, overrides, tables, true)?)?,
        Command::Bench { command: BenchCommand::Loadgen { repeats, duration_ms, threads, out } } => {
            let out = out.join(harness::timestamp());
            print!("{}", mlperf_runtime::bench::loadgen(&out, mlperf_runtime::bench::LoadgenBenchOptions { repeats, duration_ms, threads })?);
        }
        Command::Bench { command: BenchCommand::Engine { mut selection, seconds, skip_server_search, out } } => {
            if !(seconds.is_finite() && seconds > 0.0) {
                return Err(format!("--seconds={seconds}: give a positive number of seconds"));
            }
            let choice = select::choose_system(tables, selection.system_name.as_deref())?;
            selection.scenarios.get_or_insert_with(|| "offline".to_string());
            let out = out.join(harness::timestamp());
            for c in selected_configs(tables, &choice, &selection)? {
                let dir = out.join(format!("{}-{}-{}", c.benchmark, c.scenario.name(), c.workload.section_name()));
                let options = mlperf_runtime::bench::engine::EngineBenchOptions { seconds, server_search: !skip_server_search };
                let settings = harness::apply_overrides(&c.settings, &overrides)?;
                let report = mlperf_runtime::bench::engine::run(choice.system, c, &settings, tables.default_round(), &dir, options)?;
                println!("{}", mlperf_runtime::bench::engine::render(&report));
            }
        }
        Command::RunLoadgenTest { dir } => harness::run_one(tables, &dir)?,
        Command::GenerateEngines { selection } => {
            let choice = select::choose_system(tables, selection.system_name.as_deref())?;
            for c in selected_configs(tables, &choice, &selection)? {
                println!("{}", prepare_engine(c, &overrides, tables)?);
            }
        }
        Command::Calibrate { selection, force } => {
            let choice = select::choose_system(tables, selection.system_name.as_deref())?;
            for c in selected_configs(tables, &choice, &selection)? {
                println!("{}", calibrate(c, &overrides, tables, force)?);
            }
        }
        Command::Info => {
            let hw = detect::detect()?;
            print!("{}", show::info(tables, &hw));
            // Data of the matched system's benchmarks (first workload of each; they share data).
            if let detect::SystemMatch::Matched(system) = detect::match_system(&hw, tables.systems) {
                let scratch = Scratch::from_env();
                println!("\nScratch space {} (MLPERF_SCRATCH_PATH):", scratch.root.display());
                let mut seen = Vec::new();
                for c in tables.configs_for(&system.id) {
                    if !seen.contains(&c.benchmark) {
                        seen.push(c.benchmark.clone());
                        print!("{}", mlperf_runtime::dataset::scratch::check(&scratch, &c.benchmark, &c.settings).render());
                    }
                }
            }
        }
        Command::PreprocessData { selection } => {
            let choice = select::choose_system(tables, selection.system_name.as_deref())?;
            let scratch = Scratch::from_env();
            let mut done: Vec<(String, Option<String>)> = Vec::new();
            for c in selected_configs(tables, &choice, &selection)? {
                // Workloads that read the same tensors are preprocessed once.
                let key = (c.benchmark.to_string(), c.settings.tensor_path.as_ref().map(|t| t.to_string()));
                if !done.contains(&key) {
                    println!("{}", mlperf_runtime::prepare::preprocess(&scratch, &c.benchmark, &c.settings)?);
                    done.push(key);
                }
            }
        }
        Command::CheckSubmission { input, round, submitter, inference_repo, checker_log, force, python } => {
            let round = resolve_round(tables, round.as_deref())?;
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
            check::command(round, &input, submitter.as_deref(), official.as_ref())?;
        }
        Command::StageResults(args) => stage(args, tables, submission::stage::stage_results)?,
        Command::StageCompliance(args) => stage(args, tables, submission::stage::stage_compliance)?,
        Command::InferResults(tree) => {
            let report = submission::infer::infer_results(&tree.out, resolve_round(tables, tree.round.as_deref())?, tree.submitter.as_deref())?;
            report.notes.iter().for_each(|n| println!("note: {n}"));
            report.inferred.iter().for_each(|l| println!("{l}"));
            println!("{}: {} results inferred, {} files written", tree.out.display(), report.inferred.len(), report.files.written.len());
        }
        Command::TruncateResults { tree, backup } => {
            let report = submission::truncate::truncate_results(&tree.out, resolve_round(tables, tree.round.as_deref())?, tree.submitter.as_deref(), &backup)?;
            report.truncated.iter().for_each(|p| println!("truncated {}", p.display()));
            report.hashed_whole.iter().for_each(|p| println!("hashed (under 4096 bytes, kept whole) {}", p.display()));
            println!(
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
                println!("left out {}: {why}", path.display());
            }
            if !report.non_submittable.is_empty() {
                eprintln!("WARNING: {} staged run(s) came from NON-SUBMITTABLE runs (their markers were left out, the results were not):", report.non_submittable.len());
                report.non_submittable.iter().for_each(|p| eprintln!("  {}", p.display()));
            }
            println!("{}: {} files exported, {} left out", out.display(), report.copied, report.left_out.len());
        }
        Command::PackSubmission { input, out, submitter, encrypt, force } => {
            let submitter = match submitter {
                Some(s) => s,
                None => submission::pack::only_submitter(&input)?,
            };
            let packed = submission::pack::pack(&submission::pack::PackRequest { input: &input, out_dir: &out, submitter: &submitter, encrypt, force })?;
            println!("{} ({}{})", packed.tarball.display(), packed.divisions.join(", "), if packed.encrypted { ", encrypted with openssl enc -aes256" } else { "" });
            println!("{}: sha256 {}", packed.checksum_file.display(), packed.sha256);
        }
        Command::Systems => print!("{}", show::systems(tables)),
        Command::AddSystem { id, feature, root } => {
            let hw = detect::detect()?;
            let (files, line) = mlperf_runtime::scaffold::add_system(&root, &id, &feature, &hw)?;
            for f in files {
                println!("wrote {}", f.display());
            }
            println!("Now: fill every empty field of the description (the build names each one), add `{line}`");
            println!("under [features] in Cargo.toml, and add configs under configs/<benchmark>/{id}/<Scenario>.toml.");
        }
        Command::GenerateConfFiles { out, round, prune } => {
            let rounds: Vec<_> = match round.as_str() {
                "all" => tables.rounds.iter().collect(),
                id => vec![tables.round(id).ok_or_else(|| format!("unknown round {id}; this build has {}", round_ids(tables)))?],
            };
            let mut files = generate::FileSet::new();
            for r in rounds {
                let conf = mlperf_loadgen::mlperf_conf(&r.loadgen.version)
                    .ok_or_else(|| format!("this build carries no mlperf.conf of LoadGen {} (round {})", r.loadgen.version, r.id))?;
                files.extend(generate::round_files(tables, r, conf));
            }
            let report = generate::write_tree(&out, &files, prune)?;
            println!(
                "{}: {} files written, {} unchanged{}",
                out.display(),
                report.written.len(),
                report.unchanged,
                if report.removed.is_empty() { String::new() } else { format!(", {} stale removed", report.removed.len()) }
            );
            if !report.stale.is_empty() {
                eprintln!("warning: {} files no config produces any more (first: {}); rerun with --prune to delete them", report.stale.len(), report.stale[0].display());
            }
        }
        Command::Config { command: ConfigCommand::Fields } => print!("{}", show::fields()),
        Command::Config { command: ConfigCommand::Show { selection, explain } } => {
            let choice = select::choose_system(tables, selection.system_name.as_deref())?;
            let configs = selected_configs(tables, &choice, &selection)?;
            for c in configs {
                println!("{}", show::config(c, explain));
            }
        }
    }
    Ok(())
}

fn resolve_round(tables: &'static Tables, id: Option<&str>) -> Result<&'static mlperf_config::Round, String> {
    match id {
        Some(id) => tables.round(id).ok_or_else(|| format!("unknown round {id}; this build has {}", round_ids(tables))),
        None => Ok(tables.default_round()),
    }
}

type StageFn = fn(&submission::stage::StageRequest) -> Result<submission::stage::StageReport, String>;

/// stage_results / stage_compliance on the selected configs.
fn stage(args: StageArgs, tables: &'static Tables, run: StageFn) -> Result<(), String> {
    let choice = select::choose_system(tables, args.selection.system_name.as_deref())?;
    let round = resolve_round(tables, args.round.as_deref())?;
    let configs: Vec<_> = selected_configs(tables, &choice, &args.selection)?.into_iter().filter(|c| c.rounds.iter().any(|r| *r == round.id)).collect();
    if configs.is_empty() {
        return Err(format!("none of the selected configs of {} is valid in round {}; check --benchmarks/--scenarios/--round", choice.system.id, round.id));
    }
    let report = run(&submission::stage::StageRequest {
        tables,
        round,
        configs,
        submitter: args.submitter,
        out: &args.out,
        logs: &args.log_dir,
        compliance: &args.compliance_dir,
        allow_non_submittable: args.allow_non_submittable,
        force: args.force,
    })?;
    report.warnings.iter().for_each(|w| eprintln!("WARNING: {w}"));
    report.staged.iter().for_each(|l| println!("staged {l}"));
    let files = &report.files;
    println!("{}: {} files written, {} replaced (--force), {} unchanged", args.out.display(), files.written.len(), files.replaced.len(), files.unchanged);
    Ok(())
}

fn report(outcomes: Vec<harness::report::Outcome>) -> Result<(), String> {
    print!("{}", harness::report::table(&outcomes));
    if outcomes.iter().any(|o| o.status == "ABORTED") {
        return Err("interrupted".into());
    }
    Ok(())
}

/// `run_harness`, or with `prepare` (`mlperf run`) first the engines: for the CPU system that is the
/// synthetic model and its labels (generated once, with progress, before any timed run).
fn run_harness(args: HarnessArgs, overrides: Vec<(String, String)>, tables: &'static Tables, prepare: bool) -> Result<Vec<harness::report::Outcome>, String> {
    let choice = select::choose_system(tables, args.selection.system_name.as_deref())?;
    let configs = selected_configs(tables, &choice, &args.selection)?;
    let backend = args.backend.parse()?;
    if prepare && backend == harness::Backend::Config {
        for c in &configs {
            eprintln!("{}", prepare_engine(c, &overrides, tables)?);
        }
    }
    let (round, caveats) = round_and_caveats(tables, &choice, &configs, args.round.as_deref())?;
    let default_logs = match &args.audit_test {
        Some(test) => std::path::PathBuf::from("build/compliance_logs").join(test),
        None => std::path::PathBuf::from("build/logs"),
    };
    let log_dir = args.log_dir.unwrap_or(default_logs);
    harness::run_all(&harness::RunRequest {
        tables,
        system: choice.system,
        round,
        configs,
        test_mode: harness::TestMode::parse(&args.test_mode)?,
        test_run: args.test_run,
        audit_test: args.audit_test,
        backend,
        overrides,
        caveats,
        log_dir: &log_dir,
        timestamp: harness::timestamp(),
    })
}

/// A config's settings with the command line's overrides (refused by locked builds), and its label.
fn overridden(config: &mlperf_config::CompiledConfig, overrides: &[(String, String)], tables: &Tables) -> Result<(mlperf_config::Settings, String), String> {
    if !overrides.is_empty() && tables.locked_system.is_some() {
        return Err("command-line config overrides are refused by locked builds; build without system features to experiment".into());
    }
    let settings = harness::apply_overrides(&config.settings, overrides)?;
    Ok((settings, format!("{}/{}/{}", config.benchmark, config.scenario.name(), config.workload.section_name())))
}

/// `calibrate` for one config: int8 GPU configs measure (or reuse) their calibration cache.
fn calibrate(config: &mlperf_config::CompiledConfig, overrides: &[(String, String)], tables: &Tables, force: bool) -> Result<String, String> {
    let (settings, label) = overridden(config, overrides, tables)?;
    let gpu = match settings.engine {
        Some(mlperf_config::EngineKind::Gpu) | None => {
            let id = mlperf_runtime::engines::gpu::setup::PlanIdentity { system: &config.system, scenario: config.scenario.name(), workload: &config.workload.section_name() };
            mlperf_runtime::engines::gpu::setup::setup(&config.benchmark, &settings, &id, 0).map_err(|e| format!("{label}: {e}"))?
        }
        Some(kind) => return Ok(format!("{label}: {} engine, nothing to calibrate", kind.name())),
    };
    match gpu.calibration(&settings, force).map_err(|e| format!("{label}: {e}"))? {
        Some((_, line)) => Ok(format!("{label}: {line}")),
        None => Ok(format!("{label}: {} precision, nothing to calibrate", gpu.precision)),
    }
}

/// The engine of one config, ready to run: a GPU plan built or reused; for the CPU engine's
/// synthetic workload, the model and its labels (generated once, before any timed run).
fn prepare_engine(config: &mlperf_config::CompiledConfig, overrides: &[(String, String)], tables: &Tables) -> Result<String, String> {
    let (settings, label) = overridden(config, overrides, tables)?;
    match settings.engine {
        Some(mlperf_config::EngineKind::Gpu) | None => {
            let id = mlperf_runtime::engines::gpu::setup::PlanIdentity { system: &config.system, scenario: config.scenario.name(), workload: &config.workload.section_name() };
            mlperf_runtime::engines::gpu::setup::generate(&config.benchmark, &settings, &id).map_err(|e| format!("{label}: {e}"))
        }
        Some(_) if settings.dataset == Some(mlperf_config::DatasetSource::Synthetic) => {
            let a = harness::workload::ensure_synthetic(&settings)?;
            Ok(format!("{label}: synthetic model {} ({} labels over {} classes)", a.model_path.display(), a.samples, a.labels.distinct))
        }
        Some(kind) => Ok(format!("{label}: {} engine, nothing to build", kind.name())),
    }
}

/// The round the selected configs run in (checked valid for each) and the caveats that make
/// every run non-submittable.
fn round_and_caveats(
    tables: &'static Tables,
    choice: &select::SystemChoice,
    configs: &[&'static mlperf_config::CompiledConfig],
    round: Option<&str>,
) -> Result<(&'static mlperf_config::Round, Vec<String>), String> {
    let round = match round {
        Some(id) => tables.round(id).ok_or_else(|| format!("unknown round {id}; this build has {}", round_ids(tables)))?,
        None => tables.default_round(),
    };
    if let Some(c) = configs.iter().find(|c| !c.rounds.iter().any(|r| *r == round.id)) {
        return Err(format!("{}/{}/{} is not a valid config in round {} (valid in: {})", c.system, c.benchmark, c.scenario, round.id, c.rounds.join(", ")));
    }
    let mut caveats = Vec::new();
    if !choice.hardware_mismatch.is_empty() {
        caveats.push(format!("system {} chosen against the hardware: {}", choice.system.id, choice.hardware_mismatch.join("; ")));
    }
    Ok((round, caveats))
}

/// `run_audit_harness`: audits of the selected configs, verified, and the result table; fails
/// when any audit failed verification.
fn run_audit_harness(args: AuditArgs, overrides: Vec<(String, String)>, tables: &'static Tables) -> Result<(), String> {
    let choice = select::choose_system(tables, args.selection.system_name.as_deref())?;
    let configs = selected_configs(tables, &choice, &args.selection)?;
    let (round, caveats) = round_and_caveats(tables, &choice, &configs, args.round.as_deref())?;
    // "all" (or nothing) means each benchmark's required tests.
    let tests: Vec<String> = select::split_list(args.audit_tests.as_deref()).into_iter().map(|t| t.to_ascii_uppercase()).collect();
    let tests = (!tests.is_empty()).then_some(tests);
    let results = compliance::audit::run_audit_harness(&compliance::audit::AuditRequest {
        tables,
        system: choice.system,
        round,
        configs,
        tests,
        test_run: args.test_run,
        backend: args.backend.parse()?,
        overrides,
        caveats,
        build_dir: &args.build_dir,
        force: args.force,
    })?;
    print!("{}", compliance::audit::table(&results));
    let failed = results.iter().filter(|r| !r.passed).count();
    if failed > 0 {
        return Err(format!("{failed} of {} audits failed verification; see the verify_*.txt files", results.len()));
    }
    Ok(())
}

fn round_ids(tables: &Tables) -> String {
    tables.rounds.iter().map(|r| r.id.as_ref()).collect::<Vec<_>>().join(", ")
}

fn selected_configs(tables: &'static Tables, choice: &select::SystemChoice, selection: &Selection) -> Result<Vec<&'static mlperf_config::CompiledConfig>, String> {
    let workload = select::WorkloadQuery::from_flags(
        selection.config_ver.as_deref(),
        selection.accuracy_target.as_deref(),
        selection.power_setting.as_deref(),
        selection.harness_type.as_deref(),
    )?;
    select::select_configs(tables, choice.system, &select::split_list(selection.benchmarks.as_deref()), &select::split_list(selection.scenarios.as_deref()), &workload)
}
