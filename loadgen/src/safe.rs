//! Safe API: owning settings, trait-based SUT/QSL, one test at a time.
//!
//! 1. Build [`TestSettings`]: [`TestSettings::from_user_conf`] once per
//!    process (applies mlperf.conf + user.conf), then [`TestSettings::set_mode`];
//!    or [`TestSettings::new`] plus setters for development runs.
//! 2. Implement [`Sut`] and [`Qsl`].
//! 3. Call [`start_test`] with [`LogSettings`]; it blocks until the run ends.
//! 4. From any thread, complete every issued sample exactly once with
//!    [`query_samples_complete`] (LLMs: report first tokens with
//!    [`first_token_complete`] before).

use std::ffi::{CStr, CString, c_void};
use std::fs;
use std::mem::MaybeUninit;
use std::os::unix::ffi::OsStrExt;
use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicPtr, Ordering};
use std::sync::{Mutex, MutexGuard, TryLockError};
use std::{fmt, slice};

pub use crate::result::{LoadgenError, Result, VersionInfo, version_info};
pub use crate::sys::QuerySample;
use crate::{result, sys};

/// Audit config path handed to LoadGen when none is requested: a path below a
/// character device, which cannot exist, so a stale `./audit.config` never
/// turns a normal run into a compliance run.
pub(crate) const NO_AUDIT_CONFIG: &CStr = c"/dev/null/no-audit.config";

// ---------------------------------------------------------------------------
// Scenario and mode
// ---------------------------------------------------------------------------

/// `mlperf::TestScenario`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Scenario {
    SingleStream,
    MultiStream,
    Server,
    Offline,
}

impl Scenario {
    /// All scenarios, in LoadGen's enum order.
    pub const ALL: [Scenario; 4] = [Self::SingleStream, Self::MultiStream, Self::Server, Self::Offline];

    /// Name used in mlperf.conf/user.conf keys and logs (e.g. `SingleStream`).
    pub fn loadgen_name(self) -> &'static str {
        match self {
            Self::SingleStream => "SingleStream",
            Self::MultiStream => "MultiStream",
            Self::Server => "Server",
            Self::Offline => "Offline",
        }
    }

    fn to_raw(self) -> i32 {
        self as i32
    }

    fn from_raw(raw: i32) -> Self {
        Self::ALL[raw as usize]
    }
}

impl fmt::Display for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.loadgen_name())
    }
}

/// `mlperf::TestMode`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TestMode {
    /// Accuracy run followed by a performance run.
    SubmissionRun,
    AccuracyOnly,
    PerformanceOnly,
    FindPeakPerformance,
}

impl TestMode {
    const ALL: [TestMode; 4] = [Self::SubmissionRun, Self::AccuracyOnly, Self::PerformanceOnly, Self::FindPeakPerformance];

    fn from_raw(raw: i32) -> Self {
        Self::ALL[raw as usize]
    }
}

// ---------------------------------------------------------------------------
// TestSettings
// ---------------------------------------------------------------------------

/// Set by the first [`TestSettings::from_user_conf`] call of the process.
static FROM_CONFIG_USED: AtomicBool = AtomicBool::new(false);

/// An owned `mlperf::TestSettings`.
///
/// Fields are reached by their C++ names (`test_settings.h`), e.g.
/// `min_duration_ms`, `server_target_qps`; [`TestSettings::effective`] reads
/// the ones a harness shows.
pub struct TestSettings {
    raw: NonNull<sys::lg_settings>,
}

// SAFETY: the handle owns a plain C++ struct with no thread affinity; `&self`
// methods only read it and `&mut self` methods are exclusive.
unsafe impl Send for TestSettings {}
// SAFETY: as above.
unsafe impl Sync for TestSettings {}

impl TestSettings {
    /// LoadGen's defaults (no mlperf.conf), `token_latency_scaling_factor = 0`.
    ///
    /// # Panics
    /// If the C++ allocation fails.
    pub fn new() -> Self {
        Self { raw: result::settings_new().expect("allocating mlperf::TestSettings") }
    }

    /// Applies the linked LoadGen's mlperf.conf and then `user_conf` for
    /// `loadgen_model` (the mlperf.conf name, e.g. `resnet50`, `llama3_1-8b`)
    /// in `scenario`, and sets the scenario (`TestSettings::FromConfig`).
    ///
    /// LoadGen applies mlperf.conf only on the first `FromConfig` of a process,
    /// so this succeeds once per process; later calls return
    /// [`LoadgenError::ConfigAlreadyLoaded`]. Clone the result to reuse it.
    /// An unreadable file or a model missing from mlperf.conf is reported
    /// before LoadGen is called and does not use up the one call.
    pub fn from_user_conf(user_conf: impl AsRef<Path>, loadgen_model: &str, scenario: Scenario) -> Result<Self> {
        let path = user_conf.as_ref();
        fs::File::open(path).map_err(|source| LoadgenError::ConfigUnreadable { path: path.into(), source })?;
        check_model(loadgen_model)?;
        let c_path = path_cstring(path)?;
        let c_model = cstring(loadgen_model, "model name")?;
        let c_scenario = cstring(scenario.loadgen_name(), "scenario")?;
        if FROM_CONFIG_USED.swap(true, Ordering::SeqCst) {
            return Err(LoadgenError::ConfigAlreadyLoaded);
        }
        let mut settings = Self::new();
        // SAFETY: `settings.raw` is live and exclusively ours.
        unsafe { result::settings_from_config(settings.raw, &c_path, &c_model, &c_scenario) }?;
        settings.set_scenario(scenario);
        Ok(settings)
    }

    pub fn set_scenario(&mut self, scenario: Scenario) {
        // SAFETY: live handle, exclusive access; the value is in range.
        unsafe { result::settings_set_scenario(self.raw, scenario.to_raw()) }.expect("scenario in range");
    }

    pub fn scenario(&self) -> Scenario {
        // SAFETY: live handle; the shim only stores valid values.
        Scenario::from_raw(unsafe { result::settings_scenario(self.raw) })
    }

    pub fn set_mode(&mut self, mode: TestMode) {
        // SAFETY: live handle, exclusive access; the value is in range.
        unsafe { result::settings_set_mode(self.raw, mode as i32) }.expect("mode in range");
    }

    pub fn mode(&self) -> TestMode {
        // SAFETY: live handle; the shim only stores valid values.
        TestMode::from_raw(unsafe { result::settings_mode(self.raw) })
    }

    /// Sets an integer field, e.g. `min_duration_ms`, `min_query_count`.
    pub fn set_u64(&mut self, field: &str, value: u64) -> Result<()> {
        let name = cstring(field, "field name")?;
        // SAFETY: live handle, exclusive access.
        unsafe { result::settings_set_u64(self.raw, &name, value) }
    }

    /// Sets a bool field, e.g. `use_token_latencies`.
    pub fn set_bool(&mut self, field: &str, value: bool) -> Result<()> {
        self.set_u64(field, value.into())
    }

    /// Sets a floating-point field, e.g. `server_target_qps`.
    pub fn set_f64(&mut self, field: &str, value: f64) -> Result<()> {
        let name = cstring(field, "field name")?;
        // SAFETY: live handle, exclusive access.
        unsafe { result::settings_set_f64(self.raw, &name, value) }
    }

    /// Reads an integer field (bool fields read as 0/1).
    pub fn get_u64(&self, field: &str) -> Result<u64> {
        let name = cstring(field, "field name")?;
        // SAFETY: live handle, shared access is read-only.
        unsafe { result::settings_u64(self.raw, &name) }
    }

    /// Reads a bool field.
    pub fn get_bool(&self, field: &str) -> Result<bool> {
        Ok(self.get_u64(field)? != 0)
    }

    /// Reads a floating-point field.
    pub fn get_f64(&self, field: &str) -> Result<f64> {
        let name = cstring(field, "field name")?;
        // SAFETY: live handle, shared access is read-only.
        unsafe { result::settings_f64(self.raw, &name) }
    }

    pub(crate) fn raw(&self) -> NonNull<sys::lg_settings> {
        self.raw
    }

    /// Snapshot of the settings LoadGen will receive (after mlperf.conf,
    /// user.conf and setters). LoadGen still derives its logged `effective_*`
    /// values from these (e.g. a zero `performance_sample_count_override`
    /// falls back to the QSL's count).
    pub fn effective(&self) -> EffectiveSettings {
        let u = |f: &str| self.get_u64(f).expect("field known to every LoadGen version");
        let d = |f: &str| self.get_f64(f).expect("field known to every LoadGen version");
        EffectiveSettings {
            scenario: self.scenario(),
            mode: self.mode(),
            single_stream_expected_latency_ns: d("single_stream_expected_latency_ns"),
            single_stream_target_latency_percentile: d("single_stream_target_latency_percentile"),
            multi_stream_expected_latency_ns: d("multi_stream_expected_latency_ns"),
            multi_stream_target_latency_percentile: d("multi_stream_target_latency_percentile"),
            multi_stream_samples_per_query: u("multi_stream_samples_per_query"),
            server_target_qps: d("server_target_qps"),
            server_target_latency_ns: u("server_target_latency_ns"),
            server_target_latency_percentile: d("server_target_latency_percentile"),
            server_coalesce_queries: u("server_coalesce_queries") != 0,
            server_max_async_queries: u("server_max_async_queries"),
            server_num_issue_query_threads: u("server_num_issue_query_threads"),
            offline_expected_qps: d("offline_expected_qps"),
            sample_concatenate_permutation: u("sample_concatenate_permutation") != 0,
            min_duration_ms: u("min_duration_ms"),
            max_duration_ms: u("max_duration_ms"),
            min_query_count: u("min_query_count"),
            max_query_count: u("max_query_count"),
            qsl_rng_seed: u("qsl_rng_seed"),
            sample_index_rng_seed: u("sample_index_rng_seed"),
            schedule_rng_seed: u("schedule_rng_seed"),
            accuracy_log_rng_seed: u("accuracy_log_rng_seed"),
            accuracy_log_probability: d("accuracy_log_probability"),
            accuracy_log_sampling_target: u("accuracy_log_sampling_target"),
            performance_sample_count_override: u("performance_sample_count_override"),
            accuracy_sample_count_override: self.get_u64("accuracy_sample_count_override").ok(),
            use_token_latencies: u("use_token_latencies") != 0,
            server_ttft_latency_ns: u("server_ttft_latency"),
            server_tpot_latency_ns: u("server_tpot_latency"),
            infer_token_latencies: u("infer_token_latencies") != 0,
            token_latency_scaling_factor: u("token_latency_scaling_factor"),
        }
    }
}

impl Default for TestSettings {
    fn default() -> Self {
        Self::new()
    }
}

impl Clone for TestSettings {
    fn clone(&self) -> Self {
        // SAFETY: live handle, shared access is read-only.
        Self { raw: unsafe { result::settings_clone(self.raw) }.expect("allocating mlperf::TestSettings") }
    }
}

impl Drop for TestSettings {
    fn drop(&mut self) {
        // SAFETY: owned handle, freed exactly once here.
        unsafe { result::settings_free(self.raw) }
    }
}

impl fmt::Debug for TestSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.effective().fmt(f)
    }
}

/// Values of a [`TestSettings`], named as the C++ fields (times in ns or ms
/// as the name says; percentiles as fractions, e.g. 0.9).
#[derive(Clone, Debug, PartialEq)]
pub struct EffectiveSettings {
    pub scenario: Scenario,
    pub mode: TestMode,
    pub single_stream_expected_latency_ns: f64,
    pub single_stream_target_latency_percentile: f64,
    pub multi_stream_expected_latency_ns: f64,
    pub multi_stream_target_latency_percentile: f64,
    pub multi_stream_samples_per_query: u64,
    pub server_target_qps: f64,
    pub server_target_latency_ns: u64,
    pub server_target_latency_percentile: f64,
    pub server_coalesce_queries: bool,
    pub server_max_async_queries: u64,
    pub server_num_issue_query_threads: u64,
    pub offline_expected_qps: f64,
    pub sample_concatenate_permutation: bool,
    pub min_duration_ms: u64,
    pub max_duration_ms: u64,
    pub min_query_count: u64,
    pub max_query_count: u64,
    pub qsl_rng_seed: u64,
    pub sample_index_rng_seed: u64,
    pub schedule_rng_seed: u64,
    pub accuracy_log_rng_seed: u64,
    pub accuracy_log_probability: f64,
    pub accuracy_log_sampling_target: u64,
    pub performance_sample_count_override: u64,
    /// `None` when the linked LoadGen has no such field (5.1.2).
    pub accuracy_sample_count_override: Option<u64>,
    pub use_token_latencies: bool,
    pub server_ttft_latency_ns: u64,
    pub server_tpot_latency_ns: u64,
    pub infer_token_latencies: bool,
    pub token_latency_scaling_factor: u64,
}

impl EffectiveSettings {
    /// Target/expected QPS of the scenario (Server: `server_target_qps`,
    /// Offline: `offline_expected_qps`, SS/MS: derived from the expected latency).
    pub fn target_qps(&self) -> f64 {
        match self.scenario {
            Scenario::SingleStream => 1e9 / self.single_stream_expected_latency_ns,
            Scenario::MultiStream => 1e9 / self.multi_stream_expected_latency_ns,
            Scenario::Server => self.server_target_qps,
            Scenario::Offline => self.offline_expected_qps,
        }
    }

    /// Target latency of the scenario in ns (Server: the latency bound;
    /// SS/MS: the expected latency; Offline: none).
    pub fn target_latency_ns(&self) -> Option<f64> {
        match self.scenario {
            Scenario::SingleStream => Some(self.single_stream_expected_latency_ns),
            Scenario::MultiStream => Some(self.multi_stream_expected_latency_ns),
            Scenario::Server => Some(self.server_target_latency_ns as f64),
            Scenario::Offline => None,
        }
    }

    /// Samples per query: MultiStream's `multi_stream_samples_per_query`, 1 for
    /// SingleStream and Server, `None` for Offline (LoadGen sizes its single query).
    pub fn samples_per_query(&self) -> Option<u64> {
        match self.scenario {
            Scenario::MultiStream => Some(self.multi_stream_samples_per_query),
            Scenario::SingleStream | Scenario::Server => Some(1),
            Scenario::Offline => None,
        }
    }
}

/// Fails unless the linked mlperf.conf has keys for `model`.
fn check_model(model: &str) -> Result<()> {
    let conf = crate::mlperf_conf(crate::LINKED_VERSION).expect("the linked version's mlperf.conf is embedded");
    let mut known: Vec<String> = conf
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|key| !key.starts_with('#'))
        .filter_map(|key| key.rsplitn(3, '.').nth(2))
        .filter(|m| *m != "*")
        .map(str::to_owned)
        .collect();
    known.sort();
    known.dedup();
    if known.iter().any(|m| m == model) { Ok(()) } else { Err(LoadgenError::UnknownModel { model: model.into(), known }) }
}

fn cstring(s: &str, what: &str) -> Result<CString> {
    CString::new(s).map_err(|_| LoadgenError::InteriorNul(format!("{what} {s:?}")))
}

fn path_cstring(path: &Path) -> Result<CString> {
    CString::new(path.as_os_str().as_bytes()).map_err(|_| LoadgenError::InteriorNul(format!("path {}", path.display())))
}

// ---------------------------------------------------------------------------
// LogSettings
// ---------------------------------------------------------------------------

/// Where and how LoadGen writes its logs (`mlperf::LogSettings`).
///
/// Files: `<outdir>/<prefix>[<datetime>_]{summary,detail}<suffix>.txt` and
/// `...{accuracy,trace}<suffix>.json` (the trace stays empty unless
/// `enable_trace`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LogSettings {
    /// Created if missing. Default `.`.
    pub outdir: PathBuf,
    /// Default `mlperf_log_`.
    pub prefix: String,
    /// Default empty.
    pub suffix: String,
    pub prefix_with_datetime: bool,
    pub copy_detail_to_stdout: bool,
    pub copy_summary_to_stdout: bool,
    /// Chrome trace of every sample: hundreds of MB for a 10-minute run and
    /// not part of a submission. Default off (LoadGen's own default is on).
    pub enable_trace: bool,
}

impl Default for LogSettings {
    fn default() -> Self {
        Self {
            outdir: PathBuf::from("."),
            prefix: "mlperf_log_".into(),
            suffix: String::new(),
            prefix_with_datetime: false,
            copy_detail_to_stdout: false,
            copy_summary_to_stdout: false,
            enable_trace: false,
        }
    }
}

impl LogSettings {
    /// Defaults with logs in `outdir`.
    pub fn in_dir(outdir: impl Into<PathBuf>) -> Self {
        Self { outdir: outdir.into(), ..Self::default() }
    }
}

/// NUL-terminated copies of a [`LogSettings`], kept alive across a test.
pub(crate) struct RawLogSettings {
    outdir: CString,
    prefix: CString,
    suffix: CString,
    flags: [bool; 4],
}

impl RawLogSettings {
    /// Creates the output directory, checks that LoadGen will be able to
    /// create its four log files there, and converts the strings.
    ///
    /// The check matters: when LoadGen cannot open a log file, StartTest
    /// returns early with its logger thread still running, and the next
    /// StartTest of the process then terminates it.
    pub(crate) fn new(log: &LogSettings) -> Result<Self> {
        fs::create_dir_all(&log.outdir).map_err(|source| LoadgenError::LogOutput { path: log.outdir.clone(), source })?;
        // Same path construction as LoadGen (outdir + "/" + prefix ...); with
        // prefix_with_datetime, probe with a placeholder timestamp.
        let mut stem = log.outdir.as_os_str().to_owned();
        stem.push("/");
        stem.push(&log.prefix);
        if log.prefix_with_datetime {
            stem.push("1970-01-01T00:00:00Z_");
        }
        for file in ["summary", "detail", "accuracy", "trace"] {
            let ext = if matches!(file, "summary" | "detail") { "txt" } else { "json" };
            let mut path = stem.clone();
            path.push(format!("{file}{}.{ext}", log.suffix));
            let path = PathBuf::from(path);
            fs::File::create(&path).map_err(|source| LoadgenError::LogOutput { path: path.clone(), source })?;
            if log.prefix_with_datetime {
                // Best effort: the probe is empty and harmless if it stays.
                let _ = fs::remove_file(&path);
            }
        }
        Ok(Self {
            outdir: path_cstring(&log.outdir)?,
            prefix: cstring(&log.prefix, "log prefix")?,
            suffix: cstring(&log.suffix, "log suffix")?,
            flags: [log.prefix_with_datetime, log.copy_detail_to_stdout, log.copy_summary_to_stdout, log.enable_trace],
        })
    }

    /// Borrowed view; valid while `self` lives.
    pub(crate) fn view(&self) -> sys::lg_log_settings {
        let [prefix_with_datetime, copy_detail_to_stdout, copy_summary_to_stdout, enable_trace] = self.flags;
        sys::lg_log_settings {
            outdir: self.outdir.as_ptr(),
            prefix: self.prefix.as_ptr(),
            suffix: self.suffix.as_ptr(),
            prefix_with_datetime,
            copy_detail_to_stdout,
            copy_summary_to_stdout,
            enable_trace,
        }
    }
}

// ---------------------------------------------------------------------------
// SUT and QSL
// ---------------------------------------------------------------------------

/// A system under test.
///
/// `issue_query` runs on LoadGen's issue thread (the thread in [`start_test`],
/// or threads that called [`register_issue_query_thread`]): copy what you need
/// and return quickly, since time spent there delays LoadGen's schedule.
/// Complete every sample exactly once, from any thread, with
/// [`query_samples_complete`], passing back its `id` unchanged.
pub trait Sut: Send + Sync {
    /// Logged as `sut_name` (network division requires `Network SUT` in it).
    fn name(&self) -> &str;
    /// A query: 1 sample (SingleStream, Server), `samples_per_query`
    /// (MultiStream) or all samples (Offline). The slice is valid only
    /// during the call.
    fn issue_query(&self, samples: &[QuerySample]);
    /// LoadGen has issued its last query; finish any batching now.
    fn flush_queries(&self) {}
}

/// A query sample library: the data set LoadGen draws sample indices from.
pub trait Qsl: Send + Sync {
    /// Logged as `qsl_name`.
    fn name(&self) -> &str;
    /// Logged as `qsl_reported_total_count`; the accuracy run covers this many samples.
    fn total_sample_count(&self) -> usize;
    /// Samples that fit in memory at once (mlperf.conf's
    /// `performance_sample_count_override` takes precedence when non-zero).
    fn performance_sample_count(&self) -> usize;
    /// Make these samples ready before they are issued.
    fn load_samples(&self, indices: &[usize]);
    fn unload_samples(&self, indices: &[usize]);
}

/// One LoadGen test at a time per process (LoadGen's logger and issue
/// controller are process-wide).
static TEST_LOCK: Mutex<()> = Mutex::new(());
/// `*const &dyn Sut` of the running test, for the flush callback (which gets
/// no client data); null when no test runs.
static FLUSH_SUT: AtomicPtr<c_void> = AtomicPtr::new(ptr::null_mut());
/// True while a test started by [`start_test`] runs; completions arriving
/// outside one are dropped instead of touching freed LoadGen state.
static TEST_RUNNING: AtomicBool = AtomicBool::new(false);
/// True once the running test's LoadGen logger thread is up: LoadGen starts it
/// before it first asks the QSL to load samples, and `mlperf::AbortTest`
/// joins it (joining a thread that was never started terminates the process).
static LOGGING_STARTED: AtomicBool = AtomicBool::new(false);

/// Takes the process-wide test lock.
pub(crate) fn lock_test() -> Result<MutexGuard<'static, ()>> {
    match TEST_LOCK.try_lock() {
        Ok(guard) => Ok(guard),
        // A panic cannot happen while the lock is held (callbacks abort), but
        // the guarded unit holds no data that could be inconsistent anyway.
        Err(TryLockError::Poisoned(poisoned)) => Ok(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => Err(LoadgenError::TestAlreadyRunning),
    }
}

/// Client data of the QSL callbacks.
struct QslContext<'a> {
    qsl: &'a dyn Qsl,
    /// Whether LoadGen called `load_samples` (i.e. actually ran a test).
    loaded: AtomicBool,
}

/// Runs a LoadGen test and blocks until it ends.
///
/// `audit_config`: `None` for a normal run (LoadGen gets a path that cannot
/// exist, so a stale `./audit.config` is never applied); `Some(path)` for a
/// compliance run with that audit.config (it must exist).
///
/// Only one test runs at a time: a concurrent call returns
/// [`LoadgenError::TestAlreadyRunning`]. A panic in a [`Sut`]/[`Qsl`] callback
/// is caught before it reaches C++; LoadGen cannot stop a running test, so
/// the process then aborts with the panic message.
pub fn start_test(sut: &dyn Sut, qsl: &dyn Qsl, settings: &TestSettings, log: &LogSettings, audit_config: Option<&Path>) -> Result<()> {
    let raw_log = RawLogSettings::new(log)?;
    let audit = match audit_config {
        None => NO_AUDIT_CONFIG.to_owned(),
        Some(path) if path.is_file() => path_cstring(path)?,
        Some(path) => return Err(LoadgenError::AuditConfigMissing(path.into())),
    };
    let _lock = lock_test()?;

    let sut_ref: &dyn Sut = sut;
    let sut_data: *const &dyn Sut = &sut_ref;
    let qsl_ctx = QslContext { qsl, loaded: AtomicBool::new(false) };
    let qsl_data: *const QslContext<'_> = &qsl_ctx;

    // SAFETY: `sut_data` points to `sut_ref`, which outlives the SUT handle
    // (destroyed at the end of this function); the callbacks only form shared
    // references to a `Sync` object.
    let sut_handle = SutHandle(unsafe { result::construct_sut(sut_data as usize, sut.name(), issue_query_cb, flush_queries_cb) }?);
    // SAFETY: as above for `qsl_ctx`.
    let qsl_handle =
        QslHandle(unsafe { result::construct_qsl(qsl_data as usize, qsl.name(), qsl.total_sample_count(), qsl.performance_sample_count(), load_samples_cb, unload_samples_cb) }?);

    FLUSH_SUT.store(sut_data as *mut c_void, Ordering::Release);
    TEST_RUNNING.store(true, Ordering::Release);
    // SAFETY: all handles are live for the call, the strings in `raw_log` and
    // `audit` outlive it, and `_lock` excludes other tests.
    let status = unsafe { result::start_test(sut_handle.0, qsl_handle.0, settings.raw, &raw_log.view(), &audit) };
    TEST_RUNNING.store(false, Ordering::Release);
    LOGGING_STARTED.store(false, Ordering::Release);
    FLUSH_SUT.store(ptr::null_mut(), Ordering::Release);
    status?;
    if !qsl_ctx.loaded.load(Ordering::Acquire) {
        return Err(LoadgenError::NotRun { outdir: log.outdir.clone() });
    }
    Ok(())
}

/// Owner of a LoadGen SUT trampoline.
struct SutHandle(NonNull<sys::lg_sut>);

impl Drop for SutHandle {
    fn drop(&mut self) {
        // SAFETY: owned, destroyed once, no test uses it any more.
        unsafe { result::destroy_sut(self.0) }
    }
}

/// Owner of a LoadGen QSL trampoline.
struct QslHandle(NonNull<sys::lg_qsl>);

impl Drop for QslHandle {
    fn drop(&mut self) {
        // SAFETY: owned, destroyed once, no test uses it any more.
        unsafe { result::destroy_qsl(self.0) }
    }
}

/// Runs a callback body; a panic is reported and aborts the process instead
/// of unwinding into LoadGen.
fn no_unwind(callback: &str, body: impl FnOnce()) {
    if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(body)) {
        let message = payload.downcast_ref::<&str>().copied().or_else(|| payload.downcast_ref::<String>().map(String::as_str)).unwrap_or("<non-string panic payload>");
        eprintln!(
            "mlperf-loadgen: {callback} panicked: {message}\n\
             mlperf-loadgen: LoadGen cannot abort a running test safely; aborting the process"
        );
        std::process::abort();
    }
}

/// # Safety
/// `data` is the `*const &dyn Sut` from [`start_test`]; `samples` points to
/// `count` samples valid for the call.
unsafe extern "C" fn issue_query_cb(data: sys::ClientData, samples: *const QuerySample, count: usize) {
    // SAFETY: see the function contract; LoadGen calls this only during StartTest.
    let sut = unsafe { *(data as *const &dyn Sut) };
    // SAFETY: LoadGen passes a vector's data and size.
    let samples = unsafe { raw_slice(samples, count) };
    no_unwind("Sut::issue_query", || sut.issue_query(samples));
}

/// # Safety
/// Called by LoadGen during a test started by [`start_test`].
unsafe extern "C" fn flush_queries_cb() {
    let data = FLUSH_SUT.load(Ordering::Acquire) as *const &dyn Sut;
    if !data.is_null() {
        // SAFETY: non-null only while `start_test` keeps the pointee alive.
        let sut = unsafe { *data };
        no_unwind("Sut::flush_queries", || sut.flush_queries());
    }
}

/// # Safety
/// `data` is the `*const QslContext` from [`start_test`]; `indices` points to
/// `count` indices valid for the call.
unsafe extern "C" fn load_samples_cb(data: sys::ClientData, indices: *const usize, count: usize) {
    // SAFETY: see the function contract.
    let ctx = unsafe { &*(data as *const QslContext<'_>) };
    // SAFETY: LoadGen passes a vector's data and size.
    let indices = unsafe { raw_slice(indices, count) };
    ctx.loaded.store(true, Ordering::Release);
    LOGGING_STARTED.store(true, Ordering::Release);
    no_unwind("Qsl::load_samples", || ctx.qsl.load_samples(indices));
}

/// # Safety
/// As for [`load_samples_cb`].
unsafe extern "C" fn unload_samples_cb(data: sys::ClientData, indices: *const usize, count: usize) {
    // SAFETY: see the function contract.
    let ctx = unsafe { &*(data as *const QslContext<'_>) };
    // SAFETY: LoadGen passes a vector's data and size.
    let indices = unsafe { raw_slice(indices, count) };
    no_unwind("Qsl::unload_samples", || ctx.qsl.unload_samples(indices));
}

/// A slice from a (possibly null when empty) C++ vector.
///
/// # Safety
/// When `count > 0`, `data` must point to `count` valid elements for `'a`.
unsafe fn raw_slice<'a, T>(data: *const T, count: usize) -> &'a [T] {
    if count == 0 {
        &[]
    } else {
        // SAFETY: guaranteed by the caller.
        unsafe { slice::from_raw_parts(data, count) }
    }
}

// ---------------------------------------------------------------------------
// Completion
// ---------------------------------------------------------------------------

/// The response to one issued sample.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Response<'a> {
    /// [`QuerySample::id`] of the sample, unchanged.
    pub id: usize,
    /// Output bytes. LoadGen copies them during the completion call (only when
    /// it logs them: accuracy mode or accuracy-log sampling).
    pub data: &'a [u8],
    /// Generated tokens (LLMs), else 0.
    pub n_tokens: i64,
}

impl<'a> Response<'a> {
    pub fn new(id: usize, data: &'a [u8]) -> Self {
        Self { id, data, n_tokens: 0 }
    }

    /// A response without output bytes.
    pub fn empty(id: usize) -> Response<'static> {
        Response { id, data: &[], n_tokens: 0 }
    }

    fn raw(&self) -> sys::QuerySampleResponse {
        sys::QuerySampleResponse { id: self.id, data: self.data.as_ptr() as usize, size: self.data.len(), n_tokens: self.n_tokens }
    }
}

/// Completes samples of the running test; callable from any thread.
///
/// Each issued sample must be completed exactly once with its original id
/// (LoadGen trusts ids: an id not issued by the running test, or completed
/// twice, corrupts LoadGen's state). Calls made while no test runs are
/// ignored.
pub fn query_samples_complete(responses: &[Response<'_>]) {
    forward(responses, |raw| {
        // SAFETY: ids come from the running test per this function's contract;
        // the bytes are borrowed for the duration of the call.
        unsafe { result::query_samples_complete(raw) }
    });
}

/// Reports the first token of samples (LLM benchmarks with
/// `use_token_latencies`), before their [`query_samples_complete`]; callable
/// from any thread. Same id rules as [`query_samples_complete`].
pub fn first_token_complete(responses: &[Response<'_>]) {
    forward(responses, |raw| {
        // SAFETY: as in `query_samples_complete`.
        unsafe { result::first_token_complete(raw) }
    });
}

/// Converts responses in stack-sized chunks and hands them to LoadGen.
fn forward(responses: &[Response<'_>], mut call: impl FnMut(&mut [sys::QuerySampleResponse])) {
    const CHUNK: usize = 64;
    if !TEST_RUNNING.load(Ordering::Acquire) {
        return;
    }
    let mut buf = [const { MaybeUninit::<sys::QuerySampleResponse>::uninit() }; CHUNK];
    for chunk in responses.chunks(CHUNK) {
        for (slot, response) in buf.iter_mut().zip(chunk) {
            slot.write(response.raw());
        }
        // SAFETY: the first `chunk.len()` slots were just initialized.
        let raw = unsafe { slice::from_raw_parts_mut(buf.as_mut_ptr().cast(), chunk.len()) };
        call(raw);
    }
}

// ---------------------------------------------------------------------------
// Process-wide controls
// ---------------------------------------------------------------------------

/// Registers the calling thread as a Server issue thread and blocks, issuing
/// queries, until the test ends. Use with `server_num_issue_query_threads = N`:
/// spawn exactly N threads that call this before or during [`start_test`].
pub fn register_issue_query_thread() {
    result::register_issue_query_thread();
}

/// `mlperf::AbortTest`: stops LoadGen's issue threads and its logging, after
/// flushing the logs written so far to their files. Returns false, doing
/// nothing, when no test has its logging running yet (before LoadGen first
/// loads samples there is nothing to flush, and aborting would crash).
///
/// Upstream LoadGen keeps running its scenario loop afterwards and
/// [`start_test`] may never return; call this only to shut down (e.g. on
/// SIGINT, from another thread) and then end the process without running
/// exit handlers (`_exit`): other threads may still be inside LoadGen.
pub fn abort_test() -> bool {
    if !LOGGING_STARTED.load(Ordering::Acquire) {
        return false;
    }
    result::abort_test();
    true
}

/// Version of the linked LoadGen, e.g. `6.0.17`.
pub fn loadgen_version() -> String {
    version_info().version.to_owned()
}
