//! The command line as clap parses it (NVIDIA's command and flag names). Every enumerated flag is
//! parsed into its type here, so a bad value is refused before anything else happens, with the
//! values that would be accepted.

use super::parsers::{ConfigVers, DelayMillis, List, PositiveMillis, PositiveSeconds, every, from_one, one_of};
use crate::TABLES;
use clap::{Args, Parser, Subcommand};
use mlperf_config::benchmark::BenchmarkInfo;
use mlperf_config::{AccuracyTarget, AuditTest, Harness, PowerSetting, Round, Scenario, ServingApi};
use mlperf_runtime::results::Format;
use mlperf_runtime::rundir::plan::{BackendKind, TestMode};
use std::num::{NonZeroU32, NonZeroU64, NonZeroUsize};
use std::path::PathBuf;

#[derive(Parser, Debug)]
#[command(
    name = "mlperf",
    version,
    about = "Compiled MLPerf Inference submission system",
    after_help = "A submission, in order: info, preprocess_data, calibrate, generate_engines, run_harness (run = generate_engines + \
                  run_harness), run_audit_harness, stage_results, stage_compliance, infer_results, truncate_results, check_submission, \
                  export_submission, pack_submission.\n\
                  Exit status: 0 done, 1 other error, 2 usage, 3 config, 4 data missing, 5 a run INVALID, 6 a run FAILED, 7 check \
                  failed, 128+N stopped by signal N (README, \"Exit codes\")."
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More diagnostics on stderr: -v debug, -vv trace (RUST_LOG, when set, decides instead).
    #[arg(short = 'v', long = "verbose", action = clap::ArgAction::Count, global = true)]
    pub verbose: u8,
    /// Fewer: -q only errors (results still print on stdout), -qq none.
    #[arg(short = 'q', long = "quiet", action = clap::ArgAction::Count, global = true)]
    pub quiet: u8,
    /// Seconds between progress lines when stderr is not a terminal (a terminal gets a bar).
    #[arg(long = "progress_interval", value_parser = PositiveSeconds::parse, default_value_t = PositiveSeconds(30.0), global = true, value_name = "SECONDS")]
    pub progress_interval: PositiveSeconds,
}

/// Which configs a command works on (NVIDIA's RUN_ARGS selection flags).
#[derive(Args, Debug, Clone, Default)]
pub struct Selection {
    /// Comma-separated benchmarks (resnet50, bert, llama2-70b, ...) or all; default: all configured.
    #[arg(long, value_parser = List::<&'static BenchmarkInfo>::parser())]
    pub benchmarks: Option<List<&'static BenchmarkInfo>>,
    /// Comma-separated scenarios or all; default: all configured.
    #[arg(long, value_parser = List::<Scenario>::parser())]
    pub scenarios: Option<List<Scenario>>,
    /// Comma-separated legacy workload names (default, high_accuracy, maxq, high_accuracy_maxq,
    /// triton, ...) or all; the three flags below override parts of each.
    #[arg(long = "config_ver", value_parser = ConfigVers::parser())]
    pub config_ver: Option<ConfigVers>,
    /// Accuracy target of the workload (99 % or 99.9 % of the reference).
    #[arg(long = "accuracy_target", value_parser = one_of::<AccuracyTarget>())]
    pub accuracy_target: Option<AccuracyTarget>,
    /// Power setting of the workload.
    #[arg(long = "power_setting", value_parser = one_of::<PowerSetting>())]
    pub power_setting: Option<PowerSetting>,
    /// Harness of the workload.
    #[arg(long = "harness_type", value_parser = one_of::<Harness>())]
    pub harness_type: Option<Harness>,
    /// Use this system instead of the detected one (development builds only; env SYSTEM_NAME).
    #[arg(long = "system_name")]
    pub system_name: Option<String>,
}

/// The round a command applies (default: the newest this build holds).
#[derive(Args, Debug, Clone, Default)]
pub struct RoundArg {
    /// Round whose LoadGen, layout and rules apply (default: the newest).
    #[arg(long, value_parser = one_of::<&'static Round>())]
    pub round: Option<&'static Round>,
}

impl RoundArg {
    pub fn get(&self) -> &'static Round {
        self.round.unwrap_or_else(|| TABLES.default_round())
    }
}

/// The commands in the order of a submission's workflow, then the tools around it.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Detected hardware, the matching system (or the nearest and why not), and the build.
    Info,
    /// The systems this binary holds.
    Systems,
    /// Preprocess raw datasets in $MLPERF_SCRATCH_PATH into the tensors the selected configs read.
    #[command(name = "preprocess_data", alias = "preprocess-data")]
    PreprocessData {
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
    /// Build (or reuse, when up to date) the engine plans of the selected configs under build/engines.
    #[command(name = "generate_engines", alias = "generate-engines")]
    GenerateEngines {
        #[command(flatten)]
        selection: Selection,
        /// Measure int8 calibrations again instead of reusing their caches (NVIDIA's flag).
        #[arg(long = "force_calibration")]
        force_calibration: bool,
    },
    /// Run LoadGen tests of the selected configs and print a result table.
    #[command(name = "run_harness", alias = "run-harness")]
    RunHarness(HarnessArgs),
    /// Prepare engines for the selected configs, then run them (generate_engines + run_harness).
    Run(HarnessArgs),
    /// Run the round's compliance audits of the selected configs, verify them natively against the
    /// newest VALID reference runs, and write build/compliance/<system>/<bench>/<Scenario>/<TEST>/.
    #[command(name = "run_audit_harness", alias = "run-audit-harness")]
    RunAuditHarness(AuditArgs),
    /// One LoadGen test in a prepared run directory (started by run_harness; one per process).
    #[command(name = "run_loadgen_test", hide = true)]
    RunLoadgenTest { dir: PathBuf },
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
        backup: PathBuf,
    },
    /// Pre-flight of the official submission checker on a staged tree (each rule names the file and
    /// the fix); with --inference-repo also runs the official checker and compares verdicts.
    #[command(name = "check_submission", alias = "check-submission")]
    CheckSubmission(CheckArgs),
    /// Score again the accuracy log an accuracy run kept (its run directory, under build/logs/):
    /// the run's benchmark, settings and set, as the run would have scored it, into its
    /// accuracy.txt (written atomically). For a run whose scoring failed, once its cause (a
    /// truncated tokenizer.json, say) is fixed: its samples need not run again.
    Score {
        /// The run directory (holding run_plan.json and mlperf_log_accuracy.json).
        dir: PathBuf,
        /// Replace an existing accuracy.txt.
        #[arg(long)]
        force: bool,
    },
    /// A clean copy of the staged submission: no symbolic links, run provenance or editor backups.
    #[command(name = "export_submission", alias = "export-submission")]
    ExportSubmission {
        /// The staged submission root.
        #[arg(long, default_value = "build/submission")]
        input: PathBuf,
        #[arg(long, default_value = "build/export")]
        out: PathBuf,
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
        input: PathBuf,
        /// Where the tarball and checksum file go.
        #[arg(long, default_value = "build")]
        out: PathBuf,
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
    /// Apply the power limit of the selected MaxQ configs (`power_limit`) to every GPU through NVML
    /// (NVIDIA's `make power_set_maxq_state`, `nvidia-smi -pl`; needs root), after checking it
    /// against each card's range; the limits it replaces go to <log_dir>/power_state.json.
    #[command(name = "power_set_maxq_state", alias = "power-set-maxq-state")]
    PowerSetMaxqState {
        #[command(flatten)]
        selection: Selection,
        /// Where the record of the replaced limits is kept (beside the runs).
        #[arg(long = "log_dir", default_value = "build/logs")]
        log_dir: PathBuf,
    },
    /// Run the selected performance tests under the MLCommons power workflow (NVIDIA's `make
    /// run_harness_power`): power-dev's own client, from the checkout --power_dev names (checked
    /// against the round's accepted sources first), runs each test twice against the director's
    /// meter, ranging then testing; the session (power/, ranging/, run_1/) is kept in the testing
    /// run's directory, where stage_results takes it from.
    #[command(name = "run_harness_power", alias = "run-harness-power")]
    RunHarnessPower(PowerHarnessArgs),
    /// An NTP server stand-in for tests (never submittable): answers NTP requests with this host's
    /// clock until stopped, so power-dev's client and server can run where no NTP server is.
    #[command(name = "ntp_standin", hide = true)]
    NtpStandin {
        /// Where to answer (port 123 is NTP's, which power-dev's clients ask; binding it needs root).
        #[arg(long, default_value = "127.0.0.1:123")]
        listen: String,
    },
    /// Put back the power limits power_set_maxq_state replaced, as its record holds them (NVIDIA's
    /// `make power_reset_maxq_state`).
    #[command(name = "power_restore_state", alias = "power-restore-state", alias = "power_reset_maxq_state")]
    PowerRestoreState {
        /// Where power_set_maxq_state kept its record.
        #[arg(long = "log_dir", default_value = "build/logs")]
        log_dir: PathBuf,
    },
    /// Check a power-dev checkout (its root or its ptd_client_server/) against the round's accepted
    /// power-dev sources, as the power checker will: each differing file is named.
    #[command(name = "power_check_sources", alias = "power-check-sources")]
    PowerCheckSources {
        /// The mlcommons/power-dev checkout.
        checkout: PathBuf,
    },
    /// A PTDaemon stand-in for tests (never submittable: no meter): answers power-dev's server on
    /// 127.0.0.1 with readings of a configured load. As power-dev's `[ptd] ptd`, a wrapper script
    /// `exec mlperf ptd_standin --watts 100 -- "$@"` passes it PTDaemon's command line (-l, -p).
    #[command(name = "ptd_standin", hide = true)]
    PtdStandin(PtdStandinArgs),
    /// Start the serving engine of the selected LLM config and keep it running until Ctrl-C or
    /// SIGTERM (NVIDIA's `make run_llm_server`); `run_harness` then attaches to it as external.
    #[command(name = "run_llm_server", alias = "run-llm-server")]
    RunLlmServer {
        #[command(flatten)]
        selection: Selection,
        /// Where the engine's logs go.
        #[arg(long = "log_dir", default_value = "build/logs/llm_server")]
        log_dir: PathBuf,
    },
    /// The stand-in serving engine: an OpenAI-compatible test double with configurable delays,
    /// output lengths and faults (what CPU-only development systems run their LLM configs against).
    #[command(name = "serve_stand_in", alias = "serve-stand-in")]
    ServeStandIn(StandInArgs),
    /// Write user.conf, measurements.json, README.md, mlperf.conf and system descriptions for every
    /// compiled config into measurements/ (or --out), in each round's layout.
    #[command(name = "generate_conf_files", alias = "generate-conf-files")]
    GenerateConfFiles {
        /// Output directory.
        #[arg(long, default_value = "measurements")]
        out: PathBuf,
        /// Rounds to generate (comma-separated) or all.
        #[arg(long, value_parser = List::<&'static Round>::parser(), default_value = "all")]
        round: List<&'static Round>,
        /// Delete files under the generated round directories that no config produces any more.
        #[arg(long)]
        prune: bool,
    },
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
        root: PathBuf,
    },
    /// Inspect the compiled configuration.
    Config {
        #[command(subcommand)]
        command: ConfigCommand,
    },
    /// Benchmarks that print a comparison table (ratio first).
    Bench {
        #[command(subcommand)]
        command: BenchCommand,
    },
    /// Print a completion script for a shell, e.g. `mlperf completions bash > /etc/bash_completion.d/mlperf`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
}

/// What answers the queries, for run_harness, run and run_audit_harness.
#[derive(Args, Debug)]
pub struct BackendArgs {
    /// What answers the queries: config (the configured engine), null, or fixed_latency (test doubles).
    #[arg(long, value_parser = one_of::<BackendKind>(), default_value = "config")]
    pub backend: BackendKind,
    /// Per-batch latency of the fixed_latency backend, in microseconds.
    #[arg(long = "backend_latency_us", default_value_t = 1000)]
    pub backend_latency_us: u64,
}

/// Flags of run_harness / run (NVIDIA's names).
#[derive(Args, Debug)]
pub struct HarnessArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Which LoadGen runs: SubmissionRun is an accuracy run, then a performance run.
    #[arg(long = "test_mode", value_parser = one_of::<TestMode>(), default_value = "PerformanceOnly")]
    pub test_mode: TestMode,
    /// One-minute runs (min_duration 60 s, Offline/Server min_query_count 1); never submittable. An
    /// explicit --min_duration / --min_query_count wins over these (NON_SUBMITTABLE.txt says what ran).
    #[arg(long = "test_run")]
    pub test_run: bool,
    /// Run a compliance test of the round with its audit settings.
    #[arg(long = "audit_test", value_parser = one_of::<AuditTest>())]
    pub audit_test: Option<AuditTest>,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub round: RoundArg,
    /// Log directory (default build/logs, or build/compliance_logs/<TEST> with --audit_test).
    #[arg(long = "log_dir")]
    pub log_dir: Option<PathBuf>,
    /// Print each run's mlperf_log_detail.txt on stdout before the result table (NVIDIA's flag).
    #[arg(long = "log_copy_detail_to_stdout", conflicts_with = "format")]
    pub log_copy_detail_to_stdout: bool,
    /// How the results print: table, json (docs/results.schema.json) or csv.
    #[arg(long, value_parser = one_of::<Format>(), default_value = "table")]
    pub format: Format,
    /// Run LoadGen with this user.conf instead of the one rendered from the config (NVIDIA's flag;
    /// the runs are not submittable: the staged user.conf is the config's).
    #[arg(long = "user_conf_path")]
    pub user_conf_path: Option<PathBuf>,
    /// `run` only: measure int8 calibrations again before building the engines (NVIDIA's flag).
    #[arg(long = "force_calibration")]
    pub force_calibration: bool,
}

/// Flags of run_harness_power.
#[derive(Args, Debug)]
pub struct PowerHarnessArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// One-minute runs (as run_harness's); never submittable.
    #[arg(long = "test_run")]
    pub test_run: bool,
    #[command(flatten)]
    pub round: RoundArg,
    /// Where the runs go (their LoadGen logs are what the client collects).
    #[arg(long = "log_dir", default_value = "build/logs")]
    pub log_dir: PathBuf,
    /// Where power-dev's client writes its sessions (outside --log_dir, as the client requires).
    #[arg(long = "power_logs", default_value = "build/power_logs")]
    pub power_logs: PathBuf,
    /// The mlcommons/power-dev checkout whose client runs (the round's accepted revision).
    #[arg(long = "power_dev")]
    pub power_dev: PathBuf,
    /// The director: the host running power-dev's server and PTDaemon.
    #[arg(long, default_value = "127.0.0.1")]
    pub director: String,
    #[arg(long = "director_port", default_value_t = 4950)]
    pub director_port: u16,
    /// The NTP server both this host and the director sync with.
    #[arg(long = "ntp_server")]
    pub ntp_server: String,
    /// The Python that runs power-dev's client.
    #[arg(long, default_value = "python3")]
    pub python: String,
}

/// Flags of serve_stand_in.
#[derive(Args, Debug)]
pub struct StandInArgs {
    #[arg(long, default_value = "127.0.0.1")]
    pub host: String,
    /// 0: any free port (printed).
    #[arg(long, default_value_t = 30000)]
    pub port: u16,
    /// The dialect it speaks.
    #[arg(long, value_parser = one_of::<ServingApi>(), default_value = "completions-token-ids")]
    pub api: ServingApi,
    /// The model name /v1/models lists.
    #[arg(long, default_value = "stand-in")]
    pub model: String,
    /// Delay from a request to its first token.
    #[arg(long = "first_token_ms", value_parser = DelayMillis::parse, default_value_t = DelayMillis(0.0))]
    pub first_token_ms: DelayMillis,
    /// Delay between tokens.
    #[arg(long = "token_ms", value_parser = DelayMillis::parse, default_value_t = DelayMillis(0.0))]
    pub token_ms: DelayMillis,
    /// Shortest answer (a request's max_tokens caps every answer).
    #[arg(long = "min_output_tokens", default_value_t = 128)]
    pub min_output_tokens: u32,
    /// Longest answer.
    #[arg(long = "max_output_tokens", default_value_t = 128)]
    pub max_output_tokens: u32,
    #[arg(long, value_parser = from_one::<NonZeroU32>, default_value = "32000")]
    pub vocab: NonZeroU32,
    /// Worker threads.
    #[arg(long, value_parser = from_one::<NonZeroUsize>, default_value = "2")]
    pub threads: NonZeroUsize,
    /// Run on these CPUs only (comma-separated numbers; default: wherever the system puts it).
    #[arg(long, value_delimiter = ',')]
    pub cpus: Vec<usize>,
    /// Fault: every n-th request answers HTTP 500.
    #[arg(long = "http_500_every", value_parser = every)]
    pub http_500_every: Option<NonZeroU64>,
    /// Fault: every n-th request's second event is not JSON.
    #[arg(long = "malformed_every", value_parser = every)]
    pub malformed_every: Option<NonZeroU64>,
    /// Fault: every n-th request's connection is cut after its first token.
    #[arg(long = "drop_every", value_parser = every)]
    pub drop_every: Option<NonZeroU64>,
    /// Fault: the first n requests' connections are cut after their first token (a burst of drops).
    #[arg(long = "drop_first", value_parser = every)]
    pub drop_first: Option<NonZeroU64>,
    /// Fault: every n-th request stalls after its first token.
    #[arg(long = "stall_every", value_parser = every)]
    pub stall_every: Option<NonZeroU64>,
    /// Fault: the process exits after the first token of its n-th request.
    #[arg(long = "die_after", value_parser = every)]
    pub die_after: Option<NonZeroU64>,
    /// /health answers 503 this long after start.
    #[arg(long = "ready_after_ms", default_value_t = 0)]
    pub ready_after_ms: u64,
    /// Fault: /health never answers 200.
    #[arg(long = "never_ready")]
    pub never_ready: bool,
    /// Answer this dataset's requests with its reference answers, read as --benchmark's family
    /// reads them (the LLMs need --tokenizer).
    #[arg(long = "reference_answers")]
    pub reference_answers: Option<PathBuf>,
    /// The model's tokenizer.json, which turns an LLM's reference answers into token ids.
    #[arg(long)]
    pub tokenizer: Option<PathBuf>,
    /// The benchmark whose dataset --reference_answers is (default: an LLM's, read with --tokenizer).
    #[arg(long)]
    pub benchmark: Option<String>,
}

/// Flags of ptd_standin.
#[derive(Args, Debug)]
pub struct PtdStandinArgs {
    /// Where it listens, on 127.0.0.1 (PTDaemon's -p after `--` wins).
    #[arg(long, default_value_t = 8888)]
    pub port: u16,
    /// The load's power.
    #[arg(long, default_value_t = 100.0)]
    pub watts: f64,
    /// The load during the testing run (default: --watts); below 95 % of it fails the power rules.
    #[arg(long = "testing_watts")]
    pub testing_watts: Option<f64>,
    /// The meter's uncertainty in percent; above 1 every testing reading logs PTDaemon's warning
    /// (the power checker's uncertainty error).
    #[arg(long = "uncertainty_percent", default_value_t = 0.1)]
    pub uncertainty_percent: f64,
    /// The model Identify names.
    #[arg(long, default_value = "YokogawaWT310")]
    pub model: String,
    /// The PTDaemon version Identify names.
    #[arg(long = "ptd_version", default_value = "1.11.1")]
    pub ptd_version: String,
    /// Time between readings.
    #[arg(long = "period_ms", value_parser = PositiveMillis::parse, default_value_t = PositiveMillis(1000.0))]
    pub period_ms: PositiveMillis,
    /// Fault: drop the connection at the first command containing this text (e.g. `_testing`: the
    /// testing run's Go).
    #[arg(long = "drop_on", conflicts_with = "error_on")]
    pub drop_on: Option<String>,
    /// Fault: answer the first command containing this text with an `Error:` line.
    #[arg(long = "error_on")]
    pub error_on: Option<String>,
    /// PTDaemon's own command line, as power-dev's server gives it (-l <log> -p <port> ...).
    #[arg(last = true)]
    pub ptd_argv: Vec<String>,
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
    pub out: PathBuf,
    #[command(flatten)]
    pub round: RoundArg,
    /// Where the runs are.
    #[arg(long = "log_dir", default_value = "build/logs")]
    pub log_dir: PathBuf,
    /// Where the verified audits are.
    #[arg(long = "compliance_dir", default_value = "build/compliance")]
    pub compliance_dir: PathBuf,
    /// DANGEROUS: also stage runs marked non-submittable (test runs, overrides, synthetic data);
    /// each reason is printed and NON_SUBMITTABLE.txt stays next to the staged logs.
    #[arg(long = "allow-non-submittable")]
    pub allow_non_submittable: bool,
    /// Also stage an accuracy run that scored below the round's target (said loudly;
    /// check_submission still refuses it in the closed division).
    #[arg(long = "allow-below-target")]
    pub allow_below_target: bool,
    /// Replace staged files whose contents would change.
    #[arg(long)]
    pub force: bool,
}

/// Flags of run_audit_harness.
#[derive(Args, Debug)]
pub struct AuditArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Comma-separated tests or all (each benchmark's required tests in the round, the default).
    #[arg(long = "audit_tests", value_parser = List::<AuditTest>::parser())]
    pub audit_tests: Option<List<AuditTest>>,
    /// One-minute audit runs; never submittable (the reference runs must match). An explicit
    /// --min_duration / --min_query_count wins over the test run's.
    #[arg(long = "test_run")]
    pub test_run: bool,
    #[command(flatten)]
    pub backend: BackendArgs,
    #[command(flatten)]
    pub round: RoundArg,
    /// Holds logs/ (reference runs), compliance_logs/ (audit runs) and compliance/ (verified tests).
    #[arg(long = "build_dir", default_value = "build")]
    pub build_dir: PathBuf,
    /// Replace verified TEST directories that already exist.
    #[arg(long)]
    pub force: bool,
    /// How the results print: table, json (docs/results.schema.json) or csv.
    #[arg(long, value_parser = one_of::<Format>(), default_value = "table")]
    pub format: Format,
}

/// Flags of check_submission.
#[derive(Args, Debug)]
pub struct CheckArgs {
    /// Submission root (holds closed/, open/, network/).
    #[arg(long, default_value = "build/submission")]
    pub input: PathBuf,
    #[command(flatten)]
    pub round: RoundArg,
    /// Check only this submitter's tree.
    #[arg(long)]
    pub submitter: Option<String>,
    /// A checkout of mlcommons/inference: also run its submission checker.
    #[arg(long = "inference-repo", alias = "inference_repo")]
    pub inference_repo: Option<PathBuf>,
    /// Where the official checker's output is saved (default: <input>/../checker_log.txt).
    #[arg(long = "checker-log", alias = "checker_log")]
    pub checker_log: Option<PathBuf>,
    /// Overwrite an existing checker log.
    #[arg(long)]
    pub force: bool,
    /// Python interpreter for the official checker (needs PyYAML).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// How the findings print: table, json (docs/results.schema.json) or csv.
    #[arg(long, value_parser = one_of::<Format>(), default_value = "table")]
    pub format: Format,
}

/// Flags of the commands that work on a staged submission tree.
#[derive(Args, Debug)]
pub struct TreeArgs {
    /// Submission root.
    #[arg(long, default_value = "build/submission")]
    pub out: PathBuf,
    #[command(flatten)]
    pub round: RoundArg,
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
        out: PathBuf,
    },
    /// The configured engines alone, through the batching SUT under LoadGen Offline, and a null
    /// engine through the batching SUT (Offline and Server): harness efficiency and ceiling.
    Engine {
        /// The configs to measure (default scenario: offline).
        #[command(flatten)]
        selection: Selection,
        /// Length of each measurement (engine loop, LoadGen minimum duration).
        #[arg(long, value_parser = PositiveSeconds::parse, default_value_t = PositiveSeconds(10.0))]
        seconds: PositiveSeconds,
        /// Leave out the null engine's Server search (row c), which takes minutes: for comparing
        /// engines, where the harness's ceiling is not in question.
        #[arg(long = "skip_server_search")]
        skip_server_search: bool,
        /// Where the runs' LoadGen logs go.
        #[arg(long, default_value = "build/bench/engine")]
        out: PathBuf,
    },
    /// The serving client against the stand-in server with no delay: samples/s and tokens/s, CPU
    /// per token, the TTFT it adds at a paced load, and the highest VALID Server QPS under LoadGen;
    /// comparator in the same run: a Python client built like the MLCommons reference SUT.
    Llm(LlmBenchArgs),
    /// cuDNN's graph API (the int8 convolution with its whole epilogue fused) against the legacy
    /// fused convolution and, on 1x1 shapes, our own kernel: the three ways the ResNet50 builder
    /// chooses between, on ResNet50's layer shapes, each checked against a CPU reference; then the
    /// self-check of both graph patterns. Needs a GPU.
    #[command(name = "cudnn_graph", alias = "cudnn-graph")]
    CudnnGraph {
        /// Images per convolution.
        #[arg(long, default_value_t = 256)]
        batch: u32,
        /// The GPU (CUDA ordinal).
        #[arg(long, default_value_t = 0)]
        device: usize,
    },
    /// Reading an LLM dataset pickle into prompts and references against pandas reading it in
    /// Python: median time and peak memory of each.
    Dataset {
        /// The pickle (e.g. data/llama2-70b/open_orca_gpt4_tokenized_llama.sampled_24576.pkl).
        file: PathBuf,
        /// The column of reference answers.
        #[arg(long = "reference_column", default_value = "output")]
        reference_column: String,
        #[arg(long, default_value_t = 3)]
        repeats: usize,
        /// Python interpreter of the comparator (needs pandas).
        #[arg(long, default_value = "python3")]
        python: String,
    },
}

/// Flags of bench llm.
#[derive(Args, Debug)]
pub struct LlmBenchArgs {
    /// Requests in flight (client and comparator alike).
    #[arg(long = "in_flight", default_value_t = 1000)]
    pub in_flight: usize,
    /// Requests in flight of the comparator's throughput row (its best on 2 cores: 16 threads
    /// gave 308 samples/s, 64 gave 247, 256 gave 112, 1000 collapsed); its added-TTFT row uses --in_flight.
    #[arg(long = "comparator_in_flight", default_value_t = 16)]
    pub comparator_in_flight: usize,
    /// Output tokens of every answer.
    #[arg(long = "output_tokens", default_value_t = 128)]
    pub output_tokens: u32,
    /// Length of each measurement.
    #[arg(long, value_parser = PositiveSeconds::parse, default_value_t = PositiveSeconds(10.0))]
    pub seconds: PositiveSeconds,
    /// Warm-up before each measurement.
    #[arg(long = "warm_up", value_parser = PositiveSeconds::parse, default_value_t = PositiveSeconds(2.0))]
    pub warm_up: PositiveSeconds,
    /// Token pacing of the stand-in for the added-TTFT measurement (one token per this many ms).
    #[arg(long = "paced_token_ms", value_parser = PositiveMillis::parse, default_value_t = PositiveMillis(20.0))]
    pub paced_token_ms: PositiveMillis,
    /// Python interpreter of the comparator (scripts/llm_reference_client.py; needs requests).
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Also run the MLCommons reference llama2-70b client, unmodified, from this mlcommons/inference
    /// checkout (a work tree or a bare clone; scripts/reference_client.py), Offline against (c)'s stand-in.
    #[arg(long = "reference_client")]
    pub reference_client: Option<PathBuf>,
    /// Python of the reference client (needs mlcommons-loadgen, torch, transformers, datasets, pandas, requests).
    #[arg(long = "reference_python", default_value = "python3", requires = "reference_client")]
    pub reference_python: String,
    /// Samples of the reference client's Offline run (sent as one batch, as its SUT does).
    #[arg(long = "reference_samples", default_value_t = 8192, requires = "reference_client")]
    pub reference_samples: usize,
    /// Where the LoadGen runs' logs go.
    #[arg(long, default_value = "build/bench/llm")]
    pub out: PathBuf,
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
