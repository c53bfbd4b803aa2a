//! The runtime through the real LoadGen: every scenario plus Interactive with the test backends
//! ([`alone`], the timing-bound runs), audit settings, a stale audit.config, an unwritable log
//! directory, bad flags, stop signals ([`signals`]), the CPU engines' runs and audits
//! ([`cpu_engine`], [`bert`]), LLMs against the stand-in serving engine ([`llm`]; the MLCommons reference
//! client against it: [`reference_client`]) and the submission chain.

mod alone;
mod bert;
mod broken_runs;
mod check;
mod cpu_engine;
mod exit_codes;
mod llm;
mod llm_real_engine;
mod power;
mod qwen3vl;
mod reference_client;
mod results;
mod signals;
mod submission;
mod unet3d;
mod whisper;
mod yolo;

use mlperf_runtime::fsutil::walk_files;
use mlperf_runtime::rundir::logs::DetailLog;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

/// A port for a server a test starts (the stand-in serving engine, a PTDaemon stand-in, power-dev's
/// server) that nothing listens on, with the port after it free too (power-dev's server puts its
/// PTDaemon there). Not port 0's pick: that comes from the kernel's ephemeral range, where another
/// test's connection can take it as its local port before the server binds it (seen in CI: the
/// stand-in exited, its port taken). Ports below that range are never handed to connections; a
/// counter keeps this binary's tests apart, the process id another test binary's.
fn free_port() -> u16 {
    static NEXT: AtomicU32 = AtomicU32::new(0);
    const FIRST: u32 = 10_000;
    let ephemeral = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range").ok().and_then(|r| r.split_whitespace().next()?.parse().ok()).unwrap_or(32_768u32);
    // Room for the port after the last one too.
    let room = ephemeral.saturating_sub(FIRST + 1).max(1_000);
    loop {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let port = (FIRST + (std::process::id().wrapping_mul(64) + n * 2) % room) as u16;
        if TcpListener::bind(("127.0.0.1", port)).is_ok() && TcpListener::bind(("127.0.0.1", port + 1)).is_ok() {
            return port;
        }
    }
}

/// An emptied directory under target/test-scratch/harness.
fn empty_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/test-scratch/harness").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The machine the tests' runs share. A run whose validity rests on timing (resnet50 Server's 15 ms
/// bound) takes it alone: on a two-core CI machine the other tests' processes stalled such a run
/// past its bound. Each test takes it once, through its scratch directory, so no thread ever
/// waits on a lock it holds.
static MACHINE: RwLock<()> = RwLock::new(());

/// A test's working directory, holding its share of the machine (or all of it) while it lives.
struct Scratch {
    dir: PathBuf,
    _machine: Machine,
}

enum Machine {
    Shared { _guard: RwLockReadGuard<'static, ()> },
    Alone { _guard: RwLockWriteGuard<'static, ()> },
}

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.dir
    }
}

impl AsRef<Path> for Scratch {
    fn as_ref(&self) -> &Path {
        &self.dir
    }
}

/// The working directory of a test that shares the machine with the others.
fn scratch(name: &str) -> Scratch {
    let machine = Machine::Shared { _guard: MACHINE.read().unwrap_or_else(PoisonError::into_inner) };
    Scratch { dir: empty_dir(name), _machine: machine }
}

/// The working directory of a test whose result rests on timing: it waits until no other test runs.
fn scratch_alone(name: &str) -> Scratch {
    let machine = Machine::Alone { _guard: MACHINE.write().unwrap_or_else(PoisonError::into_inner) };
    Scratch { dir: empty_dir(name), _machine: machine }
}

/// Asserts that the runs ran and LoadGen found them INVALID (exit status 5), as null-SUT runs are:
/// they answer before `min_duration` or run out of generated queries.
fn assert_ran_invalid(out: &Output) {
    assert_eq!(out.status.code(), Some(mlperf_runtime::error::exit::INVALID), "{}\n{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
}

/// Runs TEST01 Offline (`audit`: `run_audit_harness` and its flags) until it passes with every
/// logged response equal, at most three times; before a rerun, `reference` (a `run_harness`
/// performance run) runs again, so that each audit is compared with the run just before it. A
/// loaded 2-core CI machine's throughput drifts past TEST01's 10 % within a minute (once a BERT
/// reference at 1214 samples/s, then audits at 1081, 1050 and 993): a submitter reruns both too.
/// Returns every attempt's output when none passed.
fn test01_passes(run: &dyn Fn(&[&str]) -> Output, reference: &[&str], audit: &[&str]) -> Result<(), String> {
    let mut attempts = String::new();
    for attempt in 0..3 {
        if attempt > 0 {
            let out = run(reference);
            assert!(out.status.success(), "{}", shown(&out));
        }
        let out = run(audit);
        let stdout = String::from_utf8_lossy(&out.stdout);
        attempts += &shown(&out);
        if out.status.success() && stdout.lines().any(|l| l.contains("TEST01") && l.contains("PASS") && l.contains(", 0 differ")) {
            return Ok(());
        }
    }
    Err(attempts)
}

/// A run's stdout then stderr, for assertion messages.
fn shown(out: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr))
}

/// Runs `mlperf <command> --system_name=CPU-dev --benchmarks=<benchmark> <flags>` (`args`: the
/// command, then its flags) in `cwd`, with `space` as the scratch space.
fn on_cpu_dev<'a>(benchmark: &'a str, cwd: &'a Path, space: &'a Path) -> impl Fn(&[&str]) -> Output + 'a {
    move |args| {
        let select = ["--system_name=CPU-dev".to_string(), format!("--benchmarks={benchmark}")];
        Command::new(env!("CARGO_BIN_EXE_mlperf")).env("MLPERF_SCRATCH_PATH", space).args(&args[..1]).args(select).args(&args[1..]).current_dir(cwd).output().unwrap()
    }
}

fn mlperf(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_mlperf")).args(args).current_dir(cwd).output().expect("mlperf runs")
}

/// The detail log files under `cwd/build`. A run still in progress is writing its file, so a
/// test waiting for LoadGen to start looks for the files and reads none of them.
fn detail_log_paths(cwd: &Path) -> Vec<PathBuf> {
    walk_files(&cwd.join("build")).into_iter().filter(|p| p.ends_with("mlperf_log_detail.txt")).collect()
}

/// The `accuracy.txt` of the scored accuracy run under `cwd/build/logs`.
fn scored_accuracy(cwd: &Path) -> PathBuf {
    walk_files(&cwd.join("build/logs")).into_iter().find(|p| p.ends_with("accuracy.txt")).expect("a scored accuracy run")
}

/// The detail logs of every finished run under `cwd/build`, with their paths.
fn detail_logs(cwd: &Path) -> Vec<(PathBuf, DetailLog)> {
    detail_log_paths(cwd).into_iter().map(|p| (p.clone(), DetailLog::read(&p).unwrap())).collect()
}

const V61_SEEDS: (u64, u64, u64) = (2085463073848966840, 2747215439041700203, 16159082839903944936);

fn assert_round_logs(log: &DetailLog) {
    assert_eq!(log.str("loadgen_version"), Some("6.0.17 @ d6147c7eb7"));
    let seeds = (log.u64("effective_qsl_rng_seed").unwrap(), log.u64("effective_sample_index_rng_seed").unwrap(), log.u64("effective_schedule_rng_seed").unwrap());
    assert_eq!(seeds, V61_SEEDS, "the round's seeds, from the compiled-in mlperf.conf");
}

#[test]
fn test_run_with_the_null_backend_writes_round_logs_for_every_scenario() {
    let cwd = scratch("null-test-run");
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline,singlestream,multistream", "--test_run", "--backend=null"]);
    assert_ran_invalid(&out);
    let logs = detail_logs(&cwd);
    assert_eq!(logs.len(), 3);
    for (path, log) in &logs {
        assert_round_logs(log);
        assert_eq!(log.u64("effective_min_duration_ms"), Some(60_000), "{}", path.display());
        let dir = path.parent().unwrap();
        let reasons = std::fs::read_to_string(dir.join("NON_SUBMITTABLE.txt")).unwrap();
        assert!(reasons.contains("--test_run") && reasons.contains("synthetic"), "{reasons}");
        assert!(std::fs::read_to_string(dir.join("user.conf")).unwrap().contains("min_duration = 60000"));
        assert!(!dir.join("mlperf_log_trace.json").exists(), "empty traces are not kept");
    }
}

#[test]
fn a_failing_nvidia_smi_does_not_stop_a_named_system() {
    let cwd = scratch("failing-nvidia-smi");
    // An nvidia-smi that fails first on PATH (NVML is absent here, so detection asks it).
    let bin = cwd.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("nvidia-smi"), "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.' >&2\nexit 9\n").unwrap();
    std::fs::set_permissions(bin.join("nvidia-smi"), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = format!("{}:{}", bin.display(), std::env::var("PATH").unwrap_or_default());
    let run = |args: &[&str]| Command::new(env!("CARGO_BIN_EXE_mlperf")).args(args).current_dir(&cwd).env("PATH", &path).env_remove("SYSTEM_NAME").output().unwrap();
    let named = run(&["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--backend=null", "--min_duration=100"]);
    let stderr = String::from_utf8_lossy(&named.stderr);
    assert_ran_invalid(&named);
    assert!(stderr.contains("warning: hardware detection failed (nvidia-smi is installed but failed") && stderr.contains("running as CPU-dev, as --system_name says"), "{stderr}");
    let (path, _) = detail_logs(&cwd).remove(0);
    let reasons = std::fs::read_to_string(path.parent().unwrap().join("NON_SUBMITTABLE.txt")).unwrap();
    assert!(reasons.contains("system CPU-dev chosen against the hardware: hardware not detected"), "{reasons}");
    let detected = run(&["run_harness", "--benchmarks=resnet50", "--scenarios=singlestream", "--backend=null", "--min_duration=100"]);
    assert!(
        !detected.status.success() && String::from_utf8_lossy(&detected.stderr).contains("could not communicate with the NVIDIA driver"),
        "without a name, detection's error stops the run"
    );
}

#[test]
fn nvidias_make_targets_run_the_commands_of_the_same_name() {
    let cwd = scratch("make-targets");
    let makefile = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("Makefile");
    let out = Command::new("make")
        .arg("-f")
        .arg(&makefile)
        .arg("run_harness")
        .arg(format!("MLPERF={}", env!("CARGO_BIN_EXE_mlperf")))
        // A VALID run (make stops on any other exit status): 1,024 queries of 1 ms.
        .arg("RUN_ARGS=--system_name=CPU-dev --benchmarks=resnet50 --scenarios=singlestream --backend=fixed_latency --backend_latency_us=1000 --single_stream_expected_latency_ns=1000000 --min_duration=100 --log_copy_detail_to_stdout")
        .current_dir(&cwd)
        .output()
        .expect("make runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("run_harness --system_name=CPU-dev"), "make echoes the command it maps to");
    assert!(stdout.contains("mlperf_log_detail.txt\n:::MLLOG {\"key\": \"loadgen_version\""), "NVIDIA's --log_copy_detail_to_stdout: {stdout}");
    assert_eq!(detail_logs(&cwd).len(), 1);
}

#[test]
fn shell_completions_know_the_commands_and_their_flags() {
    let cwd = scratch("completions");
    let bash = mlperf(&cwd, &["completions", "bash"]);
    let script = String::from_utf8_lossy(&bash.stdout);
    assert!(bash.status.success() && script.contains("run_harness") && script.contains("--benchmarks") && script.contains("--progress_interval"), "{script}");
    let tcsh = mlperf(&cwd, &["completions", "tcsh"]);
    assert_eq!(tcsh.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&tcsh.stderr).contains("possible values: bash, elvish, fish, powershell, zsh"), "{}", String::from_utf8_lossy(&tcsh.stderr));
}

#[test]
fn user_conf_path_replaces_the_rendered_user_conf_and_marks_the_run() {
    let cwd = scratch("user-conf-path");
    let given = "*.SingleStream.min_query_count = 77\n*.SingleStream.min_duration = 50\n";
    std::fs::write(cwd.join("my_user.conf"), given).unwrap();
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--backend=null", "--user_conf_path=my_user.conf"]);
    assert_ran_invalid(&out);
    let (path, log) = detail_logs(&cwd).remove(0);
    assert_eq!(log.u64("requested_min_query_count"), Some(77));
    let dir = path.parent().unwrap();
    assert_eq!(std::fs::read_to_string(dir.join("user.conf")).unwrap(), given);
    let reasons = std::fs::read_to_string(dir.join("NON_SUBMITTABLE.txt")).unwrap();
    assert!(reasons.contains("user.conf from --user_conf_path my_user.conf instead of the config's"), "{reasons}");
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--force_calibration"]);
    assert_eq!(out.status.code(), Some(2), "run_harness builds no engine: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn a_closed_stdout_is_no_panic_and_keeps_the_exit_status() {
    let cwd = scratch("closed-stdout");
    let run = |args: &[&str]| {
        // A pipe whose reader is gone before the command starts: every write fails (EPIPE).
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        Command::new(env!("CARGO_BIN_EXE_mlperf")).args(args).current_dir(&cwd).stdout(writer).stderr(std::process::Stdio::piped()).output().unwrap()
    };
    let systems = run(&["systems"]);
    assert_eq!(systems.status.code(), Some(0), "{}", String::from_utf8_lossy(&systems.stderr));
    let invalid = run(&["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline", "--backend=null", "--min_duration=100"]);
    let stderr = String::from_utf8_lossy(&invalid.stderr);
    assert_eq!(invalid.status.code(), Some(mlperf_runtime::error::exit::INVALID), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}

#[test]
fn a_stale_audit_config_does_not_change_a_normal_run() {
    let cwd = scratch("stale-audit");
    std::fs::write(cwd.join("audit.config"), "*.*.mode = 1\n*.*.min_query_count = 7\n").unwrap();
    let out = mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--backend=null", "--min_duration=100"]);
    assert_ran_invalid(&out);
    let (_, log) = detail_logs(&cwd).remove(0);
    assert_eq!(log.str("effective_test_mode"), Some("PerformanceOnly"));
    assert_ne!(log.u64("effective_min_query_count"), Some(7));
}

#[test]
fn audit_tests_use_the_rounds_audit_settings() {
    let cwd = scratch("audit-test04");
    let out =
        mlperf(&cwd, &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=singlestream", "--backend=null", "--audit_test=TEST04", "--min_duration=100"]);
    assert_ran_invalid(&out);
    let (path, log) = detail_logs(&cwd).remove(0);
    assert!(path.starts_with(cwd.join("build/compliance_logs/TEST04")), "{}", path.display());
    assert_eq!(log.bool("effective_performance_issue_same"), Some(true));
    assert_eq!(log.u64("effective_performance_issue_same_index"), Some(3));
    let audit = std::fs::read_to_string(path.parent().unwrap().join("audit.config")).unwrap();
    assert!(audit.contains("*.*.performance_issue_same = 1"), "{audit}");
}

#[test]
fn a_bad_value_of_any_enumerated_flag_is_refused_before_anything_is_touched() {
    let cwd = scratch("bad-flags");
    let models = cwd.join("scratch-space");
    std::fs::create_dir_all(&models).unwrap();
    let base = ["run", "--system_name=CPU-dev", "--test_run"];
    for (flag, accepted) in [
        ("--test_mode=Typo", "PerformanceOnly"),
        ("--scenarios=ofline", "Offline"),
        ("--benchmarks=resnet5", "resnet50"),
        ("--backend=nul", "fixed_latency"),
        ("--round=v9.9", "v6.1"),
        ("--accuracy_target=0.95", "0.999"),
        ("--power_setting=MaxX", "MaxQ"),
        ("--harness_type=lwis", "triton"),
        ("--config_ver=fast", "high_accuracy"),
        ("--audit_test=TEST99", "TEST04"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_mlperf")).args(base).arg(flag).current_dir(&cwd).env("MLPERF_SCRATCH_PATH", &models).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{flag}: {stderr}");
        let value = flag.split_once('=').unwrap().1;
        assert!(stderr.contains(&format!("invalid value '{value}'")) && stderr.contains(accepted), "{flag}: {stderr}");
    }
    // The comma form of NVIDIA's guide parses.
    let out = mlperf(&cwd, &["config", "show", "--system_name=DGX-H100_H100-SXM-80GBx8", "--benchmarks=dlrm-v2", "--scenarios=offline", "--config_ver=default,high_accuracy"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && stdout.contains("[default]") && stdout.contains("[high_accuracy]"), "{stdout}{}", String::from_utf8_lossy(&out.stderr));
    // A bad override value too, before the synthetic model is generated.
    let out = Command::new(env!("CARGO_BIN_EXE_mlperf"))
        .args(base)
        .args(["--benchmarks=resnet50", "--scenarios=offline", "--offline_expected_qps=fast"])
        .current_dir(&cwd)
        .env("MLPERF_SCRATCH_PATH", &models)
        .output()
        .unwrap();
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--offline_expected_qps=fast"));
    assert!(std::fs::read_dir(&models).unwrap().next().is_none() && !cwd.join("build").exists(), "no model, data or log was touched");
}

#[test]
fn an_unwritable_log_directory_fails_before_anything_runs() {
    let cwd = scratch("unwritable");
    let blocker = cwd.join("not-a-dir");
    std::fs::write(&blocker, "").unwrap();
    let out = mlperf(
        &cwd,
        &["run_harness", "--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline", "--backend=null", "--log_dir", blocker.join("logs").to_str().unwrap()],
    );
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("cannot write logs under") && stderr.contains("--log_dir"), "{stderr}");
    assert!(detail_logs(&cwd).is_empty());
}

/// Opt-in, on a machine with one H200 or H100 (`cargo test --release --test harness -- --ignored gpu_`;
/// `MLPERF_GPU_TEST_SYSTEM` names the system, H200-SXM-141GBx1 by default): for fp16 and for int8
/// (resnet50's configured precision, calibrated first), the GPU engine's plan is built, checked
/// against the CPU engine (the check's figures are printed; a plan that fails it is not written),
/// reused on the second call, and gives a VALID Offline run. `scripts/bench_gpu_resnet50.sh` runs
/// the same steps at the configured batch size, with timings.
#[test]
#[ignore = "needs a GPU with CUDA, cuDNN 9 and NVRTC"]
fn gpu_engine_builds_checks_reuses_and_runs_offline() {
    let cwd = scratch("gpu-engine");
    let system = std::env::var("MLPERF_GPU_TEST_SYSTEM").unwrap_or_else(|_| "H200-SXM-141GBx1".into());
    let system_flag = format!("--system_name={system}");
    let text = |out: &Output| format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    for (precision, checked) in [("fp16", "top-1 agreement"), ("int8", "the int8 network against fp32")] {
        let precision_flag = format!("--precision={precision}");
        let dev = ["--benchmarks=resnet50", "--scenarios=offline", precision_flag.as_str(), "--dataset=synthetic", "--gpu_batch_size={resnet50=256}", system_flag.as_str()];
        let first = mlperf(&cwd, &[&["generate_engines"][..], &dev].concat());
        let (built, first) = (first.status.success(), text(&first));
        println!("{precision}: {first}");
        assert!(built && first.contains("built (no plan yet)") && first.contains(checked), "{first}");
        let second = text(&mlperf(&cwd, &[&["generate_engines"][..], &dev].concat()));
        assert!(second.contains("up to date, reused"), "{second}");
        assert_eq!(second.contains("calibration cache reused"), precision == "int8", "{second}");
        // LoadGen issues expected_qps x min_duration samples; an engine that answers them sooner
        // than min_duration makes the run INVALID, so the expected rate is above the fastest engine
        // measured (int8 on an H200, about 45,000 img/s at batch 2048; at this batch of 256 an
        // H100 ran 25,000 fp16 and 38,000 int8).
        let run = mlperf(&cwd, &[&["run_harness", "--test_run", "--min_duration=5000", "--offline_expected_qps=60000"][..], &dev].concat());
        let (ran, run) = (run.status.success(), text(&run));
        println!("{precision}: {run}");
        let logs = detail_logs(&cwd);
        assert!(ran && logs.len() == 1, "one Offline run per precision: {run}");
        assert_eq!(logs[0].1.str("result_validity"), Some("VALID"), "{run}");
        std::fs::remove_dir_all(cwd.join("build/logs")).unwrap();
    }
}

#[test]
fn gpu_configs_without_a_gpu_fail_with_what_is_missing() {
    if mlperf_runtime::engines::gpu::device::require_cuda().is_ok() {
        return; // a GPU machine: the ignored test above covers it
    }
    let cwd = scratch("gpu-missing");
    let out = mlperf(&cwd, &["generate_engines", "--system_name=H200-SXM-141GBx1", "--benchmarks=resnet50", "--scenarios=offline", "--precision=fp16"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("the GPU engine cannot load the CUDA driver (libcuda.so)") && !stderr.contains("panicked"), "{stderr}");
    // The run's child reports the same, and the result table shows the run as FAILED.
    let out = mlperf(&cwd, &["run_harness", "--system_name=H200-SXM-141GBx1", "--benchmarks=resnet50", "--scenarios=offline", "--test_run", "--precision=fp16"]);
    let (stdout, stderr) = (String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(stdout.contains("FAILED") && stderr.contains("cannot load the CUDA driver"), "{stdout}\n{stderr}");
}

/// The reference runs, then `run_audit_harness` on real LoadGen: TEST01 and TEST04 (resnet50's
/// required tests) verified into build/compliance in the checker's layout. Short runs come from
/// `--min_duration` overrides without `--test_run`: TEST01 would log most of a null SUT's queries.
#[test]
fn run_audit_harness_verifies_the_rounds_tests_against_the_reference_runs() {
    let cwd = scratch("audit-harness");
    let select = ["--system_name=CPU-dev", "--benchmarks=resnet50", "--scenarios=offline"];
    // Offline throughput of a fixed-latency device (batches of 8 every 2.5 ms) is steady enough for
    // TEST01's 10 % performance window on a busy machine. LoadGen issues at least 24576 samples.
    let fixed = ["--backend=fixed_latency", "--backend_latency_us=2500", "--offline_expected_qps=3200", "--min_duration=2000"];
    let args = |command: &str, extra: &[&str]| -> Vec<String> { [command].iter().chain(&select).chain(extra).map(|s| s.to_string()).collect() };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        mlperf(&cwd, &args)
    };

    // Without reference runs nothing runs, and the error names what to run.
    let out = run(args("run_audit_harness", &fixed));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success() && stderr.contains("--test_mode=PerformanceOnly") && stderr.contains("--test_mode=AccuracyOnly"), "{stderr}");
    assert!(!cwd.join("build/compliance_logs").exists());

    // The null SUT answers like the fixed-latency device, and scores 50000 samples instantly.
    assert!(run(args("run_harness", &["--backend=null", "--test_mode=AccuracyOnly"])).status.success());
    assert!(run(args("run_harness", &fixed)).status.success());
    let out = run(args("run_audit_harness", &fixed));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let scenario = cwd.join("build/compliance/CPU-dev_RS/resnet/Offline");
    for test in ["TEST01", "TEST04"] {
        assert!(stdout.lines().any(|l| l.contains(test) && l.contains("PASS")), "{stdout}");
        let provenance: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(scenario.join(format!("{test}.json"))).unwrap()).unwrap();
        assert_eq!(provenance["passed"], true);
        assert!(provenance["non_submittable"].to_string().contains("test backend"), "{provenance}");
    }
    let files = |dir: &Path| -> Vec<String> { walk_files(dir).iter().map(|p| p.strip_prefix(dir).unwrap().display().to_string()).collect() };
    assert_eq!(
        files(&scenario.join("TEST01")),
        [
            "accuracy/mlperf_log_accuracy.json",
            "performance/run_1/mlperf_log_detail.txt",
            "performance/run_1/mlperf_log_summary.txt",
            "verify_accuracy.txt",
            "verify_performance.txt"
        ]
    );
    assert_eq!(files(&scenario.join("TEST04")), ["performance/run_1/mlperf_log_detail.txt", "performance/run_1/mlperf_log_summary.txt", "verify_performance.txt"]);
    let verify_accuracy = std::fs::read_to_string(scenario.join("TEST01/verify_accuracy.txt")).unwrap();
    assert!(verify_accuracy.contains("num_perf_log_data_mismatch = 0\n") && verify_accuracy.ends_with("TEST PASS\n\n"), "{verify_accuracy}");
    let audit_log = DetailLog::read(&scenario.join("TEST01/performance/run_1/mlperf_log_detail.txt")).unwrap();
    assert_eq!(audit_log.u64("effective_accuracy_log_sampling_target"), Some(4096), "run with the round's TEST01 settings");
    for test in ["TEST01", "TEST04"] {
        assert!(std::fs::read_to_string(scenario.join(test).join("verify_performance.txt")).unwrap().contains("TEST PASS\n"));
    }

    // Verified results are never replaced without --force.
    let out = run(args("run_audit_harness", &fixed));
    assert!(!out.status.success() && String::from_utf8_lossy(&out.stderr).contains("--force"));

    // A device five times as fast (as a cache would make it) fails TEST04; with one retry, both
    // attempts' logs stay.
    let faster = ["--backend=fixed_latency", "--backend_latency_us=500", "--offline_expected_qps=16000", "--min_duration=2000"];
    let out = run(args("run_audit_harness", &[&faster[..], &["--audit_tests=TEST04", "--audit_retries=1", "--force"]].concat()));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.lines().any(|l| l.contains("TEST04") && l.contains("FAIL") && l.contains(" 2 ")), "{stdout}");
    assert!(std::fs::read_to_string(scenario.join("TEST04/verify_performance.txt")).unwrap().ends_with("TEST FAIL: Test score invalid\n"));
    let test04_runs = walk_files(&cwd.join("build/compliance_logs/TEST04")).into_iter().filter(|p| p.ends_with("mlperf_log_detail.txt")).count();
    assert_eq!(test04_runs, 3, "the first audit and both failed attempts");
}
