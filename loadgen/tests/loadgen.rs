//! Runs the real LoadGen (linked into this test binary) with null SUTs.
//!
//! LoadGen runs one test at a time per process and applies mlperf.conf only on
//! the first `FromConfig` of a process, so every test that runs LoadGen holds
//! `serial()` and only `from_user_conf_once_per_process` calls FromConfig.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, mpsc};

use mlperf_loadgen::bench::{self, NullQsl, NullSutKind, PoolNullSut, SyncNullSut};
use mlperf_loadgen::{LINKED_VERSION, LoadgenError, LogSettings, Qsl, QuerySample, Response, Scenario, Sut, TestMode, TestSettings};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// A fresh directory for one test.
fn temp_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("mlperf-loadgen-tests").join(name);
    if dir.exists() {
        fs::remove_dir_all(&dir).unwrap();
    }
    fs::create_dir_all(&dir).unwrap();
    dir
}

fn read(path: impl AsRef<Path>) -> String {
    let path = path.as_ref();
    fs::read_to_string(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()))
}

/// The first `"value"` logged for `key` in a detail log, as raw JSON text.
fn mllog_value(detail: &str, key: &str) -> Option<String> {
    let needle = format!("\"key\": \"{key}\", \"value\": ");
    let line = detail.lines().find(|line| line.contains(&needle))?;
    let rest = &line[line.find(&needle)? + needle.len()..];
    Some(rest[..rest.find(", \"time_ms\"")?].to_string())
}

/// A `*.*.<key>` value from mlperf.conf.
fn conf_value(conf: &str, key: &str) -> u64 {
    conf.lines()
        .find_map(|line| {
            let mut tokens = line.split_whitespace();
            (tokens.next() == Some(key) && tokens.next() == Some("=")).then(|| tokens.next().unwrap().parse().unwrap())
        })
        .unwrap_or_else(|| panic!("{key} not in mlperf.conf"))
}

/// Short programmatic settings for a performance run of `scenario`.
fn short_settings(scenario: Scenario) -> TestSettings {
    let mut s = TestSettings::new();
    s.set_scenario(scenario);
    s.set_mode(TestMode::PerformanceOnly);
    s.set_u64("min_duration_ms", 200).unwrap();
    match scenario {
        Scenario::SingleStream => {
            s.set_f64("single_stream_expected_latency_ns", 2_000.0).unwrap();
            s.set_u64("min_query_count", 100).unwrap();
        }
        Scenario::MultiStream => {
            s.set_f64("multi_stream_expected_latency_ns", 20_000.0).unwrap();
            s.set_u64("min_query_count", 700).unwrap();
        }
        Scenario::Server => {
            s.set_f64("server_target_qps", 5_000.0).unwrap();
            s.set_u64("server_target_latency_ns", 100_000_000).unwrap();
            s.set_u64("min_query_count", 500).unwrap();
        }
        Scenario::Offline => {
            s.set_f64("offline_expected_qps", 20_000.0).unwrap();
            s.set_u64("min_query_count", 100).unwrap();
        }
    }
    s
}

/// Wraps a SUT, counting what LoadGen asks of it.
struct Counting<S> {
    inner: S,
    queries: AtomicUsize,
    samples: AtomicUsize,
    flushes: AtomicUsize,
}

impl<S: Sut> Counting<S> {
    fn new(inner: S) -> Self {
        Self { inner, queries: AtomicUsize::new(0), samples: AtomicUsize::new(0), flushes: AtomicUsize::new(0) }
    }
}

impl<S: Sut> Sut for Counting<S> {
    fn name(&self) -> &str {
        self.inner.name()
    }
    fn issue_query(&self, samples: &[QuerySample]) {
        self.queries.fetch_add(1, Ordering::Relaxed);
        self.samples.fetch_add(samples.len(), Ordering::Relaxed);
        self.inner.issue_query(samples);
    }
    fn flush_queries(&self) {
        self.flushes.fetch_add(1, Ordering::Relaxed);
    }
}

/// Runs `scenario` with `sut` and checks the logs; returns the detail log.
fn run_scenario(scenario: Scenario, sut: impl Sut) -> String {
    let _serial = serial();
    let dir = temp_dir(&format!("scenario-{scenario}"));
    let sut = Counting::new(sut);
    mlperf_loadgen::start_test(&sut, &NullQsl, &short_settings(scenario), &LogSettings::in_dir(&dir), None).unwrap();

    let detail = read(dir.join("mlperf_log_detail.txt"));
    let summary = read(dir.join("mlperf_log_summary.txt"));
    assert!(detail.starts_with(":::MLLOG"), "{detail}");
    assert!(mllog_value(&detail, "loadgen_version").unwrap().starts_with(&format!("\"{LINKED_VERSION} @ ")));
    assert_eq!(mllog_value(&detail, "effective_scenario").unwrap(), format!("\"{scenario}\""));
    // Null SUTs outrun the generated schedule of SingleStream/MultiStream/
    // Offline (min duration not met); Server follows its schedule.
    let validity = mllog_value(&detail, "result_validity").unwrap();
    if scenario == Scenario::Server {
        assert_eq!(validity, "\"VALID\"", "{summary}");
        assert_eq!(mllog_value(&detail, "num_errors").unwrap(), "0", "{summary}");
    } else {
        assert!(["\"VALID\"", "\"INVALID\""].contains(&validity.as_str()), "{validity}");
        for error in detail.lines().filter(|l| l.contains("\"is_error\": true")) {
            assert!(error.contains("Ran out of generated queries"), "{error}");
        }
    }
    assert!(summary.contains(&format!("Scenario : {scenario}")), "{summary}");
    assert_eq!(fs::metadata(dir.join("mlperf_log_trace.json")).unwrap().len(), 0, "trace is off by default");

    let queries = sut.queries.load(Ordering::Relaxed);
    let samples = sut.samples.load(Ordering::Relaxed);
    let expected_per_query = match scenario {
        Scenario::MultiStream => 8,
        Scenario::Offline => samples,
        _ => 1,
    };
    assert!(queries > 0 && samples == queries * expected_per_query, "{queries} queries, {samples} samples");
    assert_eq!(mllog_value(&detail, "result_query_count").unwrap(), queries.to_string());
    assert!(sut.flushes.load(Ordering::Relaxed) > 0, "flush_queries reached the SUT");
    detail
}

#[test]
fn single_stream_runs() {
    run_scenario(Scenario::SingleStream, SyncNullSut);
}

#[test]
fn multi_stream_runs() {
    run_scenario(Scenario::MultiStream, SyncNullSut);
}

#[test]
fn server_runs_with_worker_pool() {
    run_scenario(Scenario::Server, PoolNullSut::new(2));
}

#[test]
fn offline_runs() {
    let detail = run_scenario(Scenario::Offline, SyncNullSut);
    assert_eq!(mllog_value(&detail, "effective_performance_sample_count").unwrap(), "1024");
}

#[test]
fn version_matches_linked_library() {
    let info = mlperf_loadgen::version_info();
    assert_eq!(mlperf_loadgen::loadgen_version(), LINKED_VERSION);
    assert_eq!(info.version, LINKED_VERSION);
    assert_eq!(info.git_status, "", "packaged from a clean checkout");
    assert!(!info.git_revision.is_empty() && info.sha1_of_files.contains("mlperf.conf"), "{info:?}");
}

#[test]
fn mlperf_conf_of_both_rounds_is_embedded_verbatim() {
    // As unpacked from the verified tarballs by build.rs.
    let sdist_51: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/loadgen-5.1.2/mlcommons_loadgen-5.1.2/mlperf.conf"));
    let sdist_61: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/loadgen-6.0.17/mlcommons_loadgen-6.0.17/mlperf.conf"));
    let v51 = mlperf_loadgen::mlperf_conf("5.1.2").unwrap();
    let v61 = mlperf_loadgen::mlperf_conf("6.0.17").unwrap();
    assert_eq!((v51.as_bytes(), v61.as_bytes()), (sdist_51, sdist_61));
    assert_ne!(v51, v61);
    for conf in [v51, v61] {
        assert!(conf.contains("resnet50.*.performance_sample_count_override = 1024"));
        assert!(conf_value(conf, "*.*.qsl_rng_seed") > 0);
    }
    assert!(v61.contains("gpt-oss-120b") && !v51.contains("gpt-oss-120b"));
    assert_eq!(mlperf_loadgen::mlperf_conf("6.0"), None);
    assert_eq!(mlperf_loadgen::MLPERF_CONF_VERSIONS.map(|v| mlperf_loadgen::mlperf_conf(v).is_some()), [true; 2]);
}

#[test]
fn settings_accessors() {
    let mut s = TestSettings::new();
    let e = s.effective();
    assert_eq!((e.scenario, e.mode), (Scenario::SingleStream, TestMode::PerformanceOnly));
    assert_eq!(e.token_latency_scaling_factor, 0, "zeroed by the shim");
    assert_eq!((e.min_duration_ms, e.min_query_count), (10_000, 100), "LoadGen defaults");
    assert_eq!(e.accuracy_sample_count_override.is_some(), LINKED_VERSION != "5.1.2");

    s.set_scenario(Scenario::Server);
    s.set_mode(TestMode::AccuracyOnly);
    s.set_f64("server_target_qps", 123.5).unwrap();
    s.set_bool("use_token_latencies", true).unwrap();
    s.set_u64("server_target_latency_ns", 15_000_000).unwrap();
    let copy = s.clone();
    s.set_u64("min_query_count", 7).unwrap();

    let e = copy.effective();
    assert_eq!((e.scenario, e.mode), (Scenario::Server, TestMode::AccuracyOnly));
    assert_eq!((e.target_qps(), e.target_latency_ns(), e.samples_per_query()), (123.5, Some(15e6), Some(1)));
    assert!(e.use_token_latencies);
    assert_eq!(e.min_query_count, 100, "clones are independent");
    assert_eq!(s.get_u64("min_query_count").unwrap(), 7);

    assert!(matches!(s.set_u64("no_such_field", 1), Err(LoadgenError::UnknownField(_))));
    assert!(matches!(s.set_f64("min_duration_ms", 1.0), Err(LoadgenError::UnknownField(_))));
    assert!(matches!(s.set_u64("use_token_latencies", 2), Err(LoadgenError::InvalidValue(_))));
    assert!(matches!(s.set_u64("a\0b", 1), Err(LoadgenError::InteriorNul(_))));
}

#[test]
fn from_user_conf_once_per_process() {
    let _serial = serial();
    let dir = temp_dir("from-user-conf");
    let user_conf = dir.join("user.conf");
    fs::write(
        &user_conf,
        "resnet50.SingleStream.target_latency = 0.002\n\
         resnet50.SingleStream.min_duration = 200\n\
         resnet50.SingleStream.min_query_count = 100\n",
    )
    .unwrap();

    // Rejected before LoadGen is called: these do not use up the one call.
    let err = TestSettings::from_user_conf(&user_conf, "resnet", Scenario::SingleStream).unwrap_err();
    assert!(matches!(err, LoadgenError::UnknownModel { .. }) && err.to_string().contains("resnet50"), "{err}");
    let err = TestSettings::from_user_conf(dir.join("missing.conf"), "resnet50", Scenario::SingleStream).unwrap_err();
    assert!(matches!(err, LoadgenError::ConfigUnreadable { .. }), "{err}");

    let settings = TestSettings::from_user_conf(&user_conf, "resnet50", Scenario::SingleStream).unwrap();
    let err = TestSettings::from_user_conf(&user_conf, "resnet50", Scenario::SingleStream).unwrap_err();
    assert!(matches!(err, LoadgenError::ConfigAlreadyLoaded), "{err}");
    assert!(err.to_string().contains("once per process"), "{err}");

    let conf = mlperf_loadgen::mlperf_conf(LINKED_VERSION).unwrap();
    let seeds = ["qsl_rng_seed", "sample_index_rng_seed", "schedule_rng_seed"];
    let e = settings.effective();
    assert_eq!(e.scenario, Scenario::SingleStream);
    assert_eq!([e.qsl_rng_seed, e.sample_index_rng_seed, e.schedule_rng_seed], seeds.map(|k| conf_value(conf, &format!("*.*.{k}"))));
    assert_eq!((e.min_duration_ms, e.min_query_count), (200, 100), "user.conf overrides mlperf.conf");
    assert_eq!(e.performance_sample_count_override, 1024, "resnet50 value from mlperf.conf");
    assert_eq!(e.single_stream_expected_latency_ns, 2_000.0);
    assert_eq!(e.single_stream_target_latency_percentile, 0.9);

    let log_dir = dir.join("run");
    mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &LogSettings::in_dir(&log_dir), None).unwrap();
    let detail = read(log_dir.join("mlperf_log_detail.txt"));
    for k in seeds {
        assert_eq!(mllog_value(&detail, &format!("effective_{k}")).unwrap(), conf_value(conf, &format!("*.*.{k}")).to_string());
    }
    assert!(!detail.contains("error_invalid_config"), "no FromConfig error reached the log");
    assert_eq!(mllog_value(&detail, "effective_performance_sample_count").unwrap(), "1024");
    assert!(mllog_value(&detail, "result_validity").is_some());
}

#[test]
fn stale_audit_config_in_cwd_is_ignored() {
    let _serial = serial();
    let dir = temp_dir("audit");
    let audit = dir.join("audit.config");
    fs::write(&audit, "*.*.min_query_count = 4321\n").unwrap();
    let settings = short_settings(Scenario::SingleStream);

    let old_cwd = std::env::current_dir().unwrap();
    std::env::set_current_dir(&dir).unwrap();
    let normal = mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &LogSettings::in_dir(dir.join("normal")), None);
    let audited = mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &LogSettings::in_dir(dir.join("audit")), Some(&audit));
    std::env::set_current_dir(old_cwd).unwrap();
    normal.unwrap();
    audited.unwrap();

    let detail = read(dir.join("normal/mlperf_log_detail.txt"));
    assert!(!detail.contains("Found Audit Config"), "{detail}");
    assert_eq!(mllog_value(&detail, "effective_min_query_count").unwrap(), "100");
    let detail = read(dir.join("audit/mlperf_log_detail.txt"));
    assert!(detail.contains("Found Audit Config"));
    assert_eq!(mllog_value(&detail, "effective_min_query_count").unwrap(), "4321");

    let missing = dir.join("missing.config");
    let err = mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &LogSettings::in_dir(&dir), Some(&missing));
    assert!(matches!(err, Err(LoadgenError::AuditConfigMissing(_))));
}

/// Records response bytes so the accuracy log can be checked.
struct IndexEcho;

impl Sut for IndexEcho {
    fn name(&self) -> &str {
        "index echo"
    }
    fn issue_query(&self, samples: &[QuerySample]) {
        let data: Vec<[u8; 8]> = samples.iter().map(|s| (s.index as u64).to_le_bytes()).collect();
        let responses: Vec<Response<'_>> = samples.iter().zip(&data).map(|(s, d)| Response::new(s.id, d)).collect();
        mlperf_loadgen::query_samples_complete(&responses);
    }
}

struct SmallQsl;

impl Qsl for SmallQsl {
    fn name(&self) -> &str {
        "small"
    }
    fn total_sample_count(&self) -> usize {
        100
    }
    fn performance_sample_count(&self) -> usize {
        100
    }
    fn load_samples(&self, _: &[usize]) {}
    fn unload_samples(&self, _: &[usize]) {}
}

#[test]
fn accuracy_run_logs_response_bytes() {
    let _serial = serial();
    let dir = temp_dir("accuracy");
    let mut settings = short_settings(Scenario::Offline);
    settings.set_mode(TestMode::AccuracyOnly);
    mlperf_loadgen::start_test(&IndexEcho, &SmallQsl, &settings, &LogSettings::in_dir(&dir), None).unwrap();

    let accuracy = read(dir.join("mlperf_log_accuracy.json"));
    let entries: Vec<&str> = accuracy.lines().filter(|l| l.contains("\"qsl_idx\"")).collect();
    assert_eq!(entries.len(), 100);
    for entry in entries {
        let field = |name: &str| {
            let rest = &entry[entry.find(&format!("\"{name}\" : ")).unwrap() + name.len() + 5..];
            rest[..rest.find([',', ' ', '}']).unwrap()].trim_matches('"').to_string()
        };
        let index: u64 = field("qsl_idx").parse().unwrap();
        let hex: String = index.to_le_bytes().iter().map(|b| format!("{b:02X}")).collect();
        assert_eq!(field("data"), hex, "{entry}");
    }
}

#[test]
fn log_settings_are_applied() {
    assert!(!LogSettings::default().enable_trace);
    let _serial = serial();
    let dir = temp_dir("log-settings");
    let log = LogSettings { outdir: dir.join("nested/out"), prefix: "p_".into(), suffix: "_s".into(), enable_trace: true, ..LogSettings::default() };
    let mut settings = short_settings(Scenario::SingleStream);
    settings.set_u64("min_duration_ms", 50).unwrap();
    mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &log, None).unwrap();
    for file in ["p_summary_s.txt", "p_detail_s.txt", "p_accuracy_s.json", "p_trace_s.json"] {
        assert!(log.outdir.join(file).is_file(), "{file}");
    }

    assert!(fs::metadata(log.outdir.join("p_trace_s.json")).unwrap().len() > 0);

    // Files LoadGen could not open are reported before it runs (LoadGen
    // itself would return early and leave its logger thread running).
    for prefix_with_datetime in [false, true] {
        let unwritable = LogSettings { prefix: "no-such-dir/x_".into(), prefix_with_datetime, ..LogSettings::in_dir(&dir) };
        let err = mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &unwritable, None);
        assert!(matches!(err, Err(LoadgenError::LogOutput { .. })), "{err:?}");
    }
    let dated = LogSettings { prefix_with_datetime: true, ..LogSettings::in_dir(dir.join("dated")) };
    mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &dated, None).unwrap();
    let names: Vec<String> = fs::read_dir(&dated.outdir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    assert_eq!(names.len(), 4, "only LoadGen's files, no probes: {names:?}");
}

/// Blocks in its first `issue_query` until told to go on.
struct Gate {
    started: Mutex<Option<mpsc::Sender<()>>>,
    go: Mutex<mpsc::Receiver<()>>,
}

impl Sut for Gate {
    fn name(&self) -> &str {
        "gate"
    }
    fn issue_query(&self, samples: &[QuerySample]) {
        if let Some(started) = self.started.lock().unwrap().take() {
            started.send(()).unwrap();
            self.go.lock().unwrap().recv().unwrap();
        }
        let responses: Vec<_> = samples.iter().map(|s| Response::empty(s.id)).collect();
        mlperf_loadgen::query_samples_complete(&responses);
    }
}

#[test]
fn one_test_at_a_time() {
    let _serial = serial();
    let dir = temp_dir("one-at-a-time");
    let (started_tx, started_rx) = mpsc::channel();
    let (go_tx, go_rx) = mpsc::channel();
    let gate = Gate { started: Mutex::new(Some(started_tx)), go: Mutex::new(go_rx) };
    let settings = short_settings(Scenario::SingleStream);
    std::thread::scope(|scope| {
        let first = scope.spawn(|| mlperf_loadgen::start_test(&gate, &NullQsl, &settings, &LogSettings::in_dir(dir.join("first")), None));
        started_rx.recv().unwrap();
        let log = LogSettings::in_dir(dir.join("second"));
        let second = mlperf_loadgen::start_test(&SyncNullSut, &NullQsl, &settings, &log, None);
        assert!(matches!(second, Err(LoadgenError::TestAlreadyRunning)), "{second:?}");
        let cpp = bench::run_cpp_null_sut(NullSutKind::Synchronous, &settings, &log);
        assert!(matches!(cpp, Err(LoadgenError::TestAlreadyRunning)), "{cpp:?}");
        go_tx.send(()).unwrap();
        first.join().unwrap().unwrap();
    });
    // Completions outside a test are dropped rather than handed to LoadGen.
    mlperf_loadgen::query_samples_complete(&[Response::empty(0xdead_beef)]);
}

/// Reads `<key> : <number>` from a summary.
fn summary_number(summary: &str, key: &str) -> f64 {
    let line = summary.lines().find(|l| l.trim_start().starts_with(key)).unwrap_or_else(|| panic!("{key}:\n{summary}"));
    line.rsplit(':').next().unwrap().trim().parse().unwrap()
}

type RunNullSut = fn(NullSutKind, &TestSettings, &LogSettings) -> Result<(), LoadgenError>;

#[test]
fn cpp_comparator_and_rust_null_suts() {
    let _serial = serial();
    let dir = temp_dir("bench");
    let cases =
        [(NullSutKind::Synchronous, Scenario::SingleStream, "QPS w/ loadgen overhead"), (NullSutKind::WorkerPool { threads: 2 }, Scenario::Server, "Completed samples per second")];
    for (kind, scenario, metric) in cases {
        let settings = short_settings(scenario);
        let runs: [(&str, RunNullSut); 2] = [("cpp", bench::run_cpp_null_sut), ("rust", bench::run_rust_null_sut)];
        for (lang, run) in runs {
            let out = dir.join(format!("{scenario}-{lang}"));
            run(kind, &settings, &LogSettings::in_dir(&out)).unwrap();
            let summary = read(out.join("mlperf_log_summary.txt"));
            let sut_name = if lang == "cpp" { "Null SUT (C++" } else { "Null SUT (Rust" };
            assert!(summary.contains(sut_name), "{summary}");
            assert!(mllog_value(&read(out.join("mlperf_log_detail.txt")), "result_validity").is_some());
            println!("{scenario} {lang}: {metric} = {}", summary_number(&summary, metric));
        }
    }
    let settings = short_settings(Scenario::Server);
    let bad = NullSutKind::WorkerPool { threads: 0 };
    assert!(matches!(bench::run_cpp_null_sut(bad, &settings, &LogSettings::in_dir(&dir)), Err(LoadgenError::InvalidValue(_))));
}

/// Child half of `panic_in_callback_aborts_with_message`.
#[test]
#[ignore = "run as a child process by panic_in_callback_aborts_with_message"]
fn panic_child() {
    if std::env::var_os("MLPERF_LOADGEN_PANIC_CHILD").is_none() {
        return;
    }
    struct Panics;
    impl Sut for Panics {
        fn name(&self) -> &str {
            "panics"
        }
        fn issue_query(&self, _: &[QuerySample]) {
            panic!("deliberate test panic");
        }
    }
    let dir = temp_dir("panic-child");
    let _ = mlperf_loadgen::start_test(&Panics, &NullQsl, &short_settings(Scenario::SingleStream), &LogSettings::in_dir(&dir), None);
    unreachable!("the process aborts inside start_test");
}

#[test]
fn panic_in_callback_aborts_with_message() {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "panic_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env("MLPERF_LOADGEN_PANIC_CHILD", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success());
    assert!(stderr.contains("Sut::issue_query panicked: deliberate test panic"), "{stderr}");
    assert!(stderr.contains("aborting the process"), "{stderr}");
}
