//! Checked calls into the shim: every status code becomes a
//! [`Result`]`<_, `[`LoadgenError`]`>`.
//!
//! Functions taking raw handles are `unsafe`; each documents what the caller
//! must guarantee. [`crate::safe`] upholds those contracts with owning types.

use std::ffi::{CStr, c_char, c_int};
use std::io;
use std::path::PathBuf;
use std::ptr::NonNull;

use crate::sys;

/// Errors reported by this crate.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoadgenError {
    /// `TestSettings::from_user_conf` was already called in this process.
    #[error(
        "TestSettings::from_user_conf may succeed only once per process: LoadGen applies \
         mlperf.conf only on its first FromConfig call (a second call leaves the seeds at 0 and \
         logs error_invalid_config); clone the settings of the first call, or run one test per \
         process"
    )]
    ConfigAlreadyLoaded,
    /// The user.conf could not be opened (checked before calling LoadGen).
    #[error("cannot read user.conf {}: {source}", path.display())]
    ConfigUnreadable { path: PathBuf, source: io::Error },
    /// LoadGen could not open the user.conf (`FromConfig` returned -2).
    #[error("LoadGen cannot open user.conf {}", path.display())]
    ConfigOpen { path: PathBuf },
    /// LoadGen rejected a line of the user.conf (`FromConfig` returned -22).
    #[error(
        "LoadGen rejected user.conf {} (syntax error; LoadGen also queued error_invalid_config \
         into the next run's detail log, so end this process)",
        path.display()
    )]
    ConfigInvalid { path: PathBuf },
    /// The model name has no entry in the linked LoadGen's mlperf.conf.
    #[error(
        "model {model:?} is not in the linked LoadGen's mlperf.conf, so its settings would \
         silently not apply; known models: {}",
        known.join(", ")
    )]
    UnknownModel { model: String, known: Vec<String> },
    /// No TestSettings field of this name (and type) exists in the linked LoadGen.
    #[error("no TestSettings field {0:?} of this type")]
    UnknownField(String),
    /// A value LoadGen cannot represent (e.g. a bool field set to 2).
    #[error("invalid value: {0}")]
    InvalidValue(String),
    /// A string argument contains a NUL byte.
    #[error("{0} contains a NUL byte")]
    InteriorNul(String),
    /// The audit config passed explicitly does not exist.
    #[error("audit config {} does not exist", .0.display())]
    AuditConfigMissing(PathBuf),
    /// The log directory could not be created, or a log file there not
    /// written (checked before LoadGen runs).
    #[error("cannot write LoadGen log output {}: {source}", path.display())]
    LogOutput { path: PathBuf, source: io::Error },
    /// Another LoadGen test is running in this process.
    #[error("another LoadGen test is running in this process")]
    TestAlreadyRunning,
    /// StartTest returned without loading any sample: LoadGen could not open
    /// its log files despite the pre-check (it then leaves its logger thread
    /// running, so end the process), or it rejected the settings.
    #[error(
        "LoadGen returned without running a test (it could not open its log files in {}, or \
         rejected the settings: see stderr and the detail log)",
        outdir.display()
    )]
    NotRun { outdir: PathBuf },
    /// A C++ exception was caught in the shim.
    #[error("C++ exception in LoadGen: {0}")]
    Cxx(String),
    /// A C++ allocation failed.
    #[error("C++ allocation failed")]
    OutOfMemory,
    /// An unexpected status code from the shim.
    #[error("{call} returned status {code}")]
    Status { call: &'static str, code: c_int },
}

/// `Result` with [`LoadgenError`].
pub type Result<T, E = LoadgenError> = std::result::Result<T, E>;

/// Maps a generic shim status to a `Result`.
fn check(call: &'static str, code: c_int) -> Result<()> {
    match code {
        sys::LG_OK => Ok(()),
        sys::LG_EEXCEPT => Err(LoadgenError::Cxx(last_cxx_error())),
        sys::LG_ENOMEM => Err(LoadgenError::OutOfMemory),
        code => Err(LoadgenError::Status { call, code }),
    }
}

/// Maps the status of a by-name field accessor.
fn check_field(field: &CStr, code: c_int) -> Result<()> {
    match code {
        sys::LG_ENOENT => Err(LoadgenError::UnknownField(field.to_string_lossy().into_owned())),
        sys::LG_EINVAL => Err(LoadgenError::InvalidValue(format!("{} (bool fields take 0 or 1)", field.to_string_lossy()))),
        code => check("lg_settings field accessor", code),
    }
}

/// Message of the last C++ exception caught by the shim on this thread.
pub fn last_cxx_error() -> String {
    // SAFETY: returns a NUL-terminated thread-local string, valid until the
    // next shim call on this thread; we copy it at once.
    unsafe { static_str(sys::lg_last_error()) }.to_owned()
}

/// Reads a NUL-terminated string.
///
/// # Safety
/// `p` must be non-null and point to a NUL-terminated string that stays valid
/// and unchanged for `'a`.
unsafe fn static_str<'a>(p: *const c_char) -> &'a str {
    // SAFETY: guaranteed by the caller.
    let s = unsafe { CStr::from_ptr(p) };
    s.to_str().unwrap_or("<non-UTF-8>")
}

/// Allocates a `TestSettings` with LoadGen's defaults (and
/// `token_latency_scaling_factor` zeroed).
pub fn settings_new() -> Result<NonNull<sys::lg_settings>> {
    // SAFETY: no preconditions.
    NonNull::new(unsafe { sys::lg_settings_new() }).ok_or(LoadgenError::OutOfMemory)
}

/// Copies a `TestSettings`.
///
/// # Safety
/// `s` must come from [`settings_new`]/[`settings_clone`], not yet freed, and
/// not be mutated concurrently.
pub unsafe fn settings_clone(s: NonNull<sys::lg_settings>) -> Result<NonNull<sys::lg_settings>> {
    // SAFETY: guaranteed by the caller.
    NonNull::new(unsafe { sys::lg_settings_clone(s.as_ptr()) }).ok_or(LoadgenError::OutOfMemory)
}

/// Frees a `TestSettings`.
///
/// # Safety
/// `s` must come from [`settings_new`]/[`settings_clone`], be freed once, and
/// not be used afterwards.
pub unsafe fn settings_free(s: NonNull<sys::lg_settings>) {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_settings_free(s.as_ptr()) }
}

/// Sets `TestSettings::scenario` (0 SingleStream, 1 MultiStream, 2 Server, 3 Offline).
///
/// # Safety
/// `s` must be a live settings handle not accessed concurrently.
pub unsafe fn settings_set_scenario(s: NonNull<sys::lg_settings>, scenario: c_int) -> Result<()> {
    // SAFETY: guaranteed by the caller.
    match unsafe { sys::lg_settings_set_scenario(s.as_ptr(), scenario) } {
        sys::LG_EINVAL => Err(LoadgenError::InvalidValue(format!("scenario {scenario}"))),
        code => check("lg_settings_set_scenario", code),
    }
}

/// Reads `TestSettings::scenario`.
///
/// # Safety
/// `s` must be a live settings handle not mutated concurrently.
pub unsafe fn settings_scenario(s: NonNull<sys::lg_settings>) -> c_int {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_settings_get_scenario(s.as_ptr()) }
}

/// Sets `TestSettings::mode` (0 SubmissionRun, 1 AccuracyOnly, 2 PerformanceOnly,
/// 3 FindPeakPerformance).
///
/// # Safety
/// `s` must be a live settings handle not accessed concurrently.
pub unsafe fn settings_set_mode(s: NonNull<sys::lg_settings>, mode: c_int) -> Result<()> {
    // SAFETY: guaranteed by the caller.
    match unsafe { sys::lg_settings_set_mode(s.as_ptr(), mode) } {
        sys::LG_EINVAL => Err(LoadgenError::InvalidValue(format!("test mode {mode}"))),
        code => check("lg_settings_set_mode", code),
    }
}

/// Reads `TestSettings::mode`.
///
/// # Safety
/// `s` must be a live settings handle not mutated concurrently.
pub unsafe fn settings_mode(s: NonNull<sys::lg_settings>) -> c_int {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_settings_get_mode(s.as_ptr()) }
}

/// Sets an integer or bool (0/1) `TestSettings` field by its C++ name.
///
/// # Safety
/// `s` must be a live settings handle not accessed concurrently.
pub unsafe fn settings_set_u64(s: NonNull<sys::lg_settings>, field: &CStr, value: u64) -> Result<()> {
    // SAFETY: guaranteed by the caller; `field` is NUL-terminated.
    check_field(field, unsafe { sys::lg_settings_set_u64(s.as_ptr(), field.as_ptr(), value) })
}

/// Reads an integer or bool (0/1) `TestSettings` field by its C++ name.
///
/// # Safety
/// `s` must be a live settings handle not mutated concurrently.
pub unsafe fn settings_u64(s: NonNull<sys::lg_settings>, field: &CStr) -> Result<u64> {
    let mut value = 0;
    // SAFETY: guaranteed by the caller; `value` is a valid out pointer.
    check_field(field, unsafe { sys::lg_settings_get_u64(s.as_ptr(), field.as_ptr(), &mut value) })?;
    Ok(value)
}

/// Sets a floating-point `TestSettings` field by its C++ name.
///
/// # Safety
/// `s` must be a live settings handle not accessed concurrently.
pub unsafe fn settings_set_f64(s: NonNull<sys::lg_settings>, field: &CStr, value: f64) -> Result<()> {
    // SAFETY: guaranteed by the caller; `field` is NUL-terminated.
    check_field(field, unsafe { sys::lg_settings_set_f64(s.as_ptr(), field.as_ptr(), value) })
}

/// Reads a floating-point `TestSettings` field by its C++ name.
///
/// # Safety
/// `s` must be a live settings handle not mutated concurrently.
pub unsafe fn settings_f64(s: NonNull<sys::lg_settings>, field: &CStr) -> Result<f64> {
    let mut value = 0.0;
    // SAFETY: guaranteed by the caller; `value` is a valid out pointer.
    check_field(field, unsafe { sys::lg_settings_get_f64(s.as_ptr(), field.as_ptr(), &mut value) })?;
    Ok(value)
}

/// `TestSettings::FromConfig(user_conf, model, scenario, 1)`.
///
/// # Safety
/// `s` must be a live settings handle not accessed concurrently. LoadGen
/// applies its embedded mlperf.conf only on the first call per process; a
/// second call yields zero seeds and logs an error into the next run.
pub unsafe fn settings_from_config(s: NonNull<sys::lg_settings>, user_conf: &CStr, model: &CStr, scenario: &CStr) -> Result<()> {
    let path = || PathBuf::from(user_conf.to_string_lossy().into_owned());
    // SAFETY: guaranteed by the caller; all strings are NUL-terminated.
    let code = unsafe { sys::lg_settings_from_config(s.as_ptr(), user_conf.as_ptr(), model.as_ptr(), scenario.as_ptr()) };
    match code {
        sys::LG_ENOENT => Err(LoadgenError::ConfigOpen { path: path() }),
        sys::LG_EINVAL => Err(LoadgenError::ConfigInvalid { path: path() }),
        code => check("lg_settings_from_config", code),
    }
}

/// Builds LoadGen's SUT trampoline (`mlperf::c::ConstructSUT`).
///
/// # Safety
/// The callbacks must be sound to call with `client_data` from any thread for
/// as long as the SUT is used by a test.
pub unsafe fn construct_sut(client_data: sys::ClientData, name: &str, issue_cb: sys::IssueQueryCallback, flush_cb: sys::FlushQueriesCallback) -> Result<NonNull<sys::lg_sut>> {
    // SAFETY: `name` is valid for `name.len()` bytes and copied by LoadGen.
    let sut = unsafe { sys::lg_construct_sut(client_data, name.as_ptr().cast(), name.len(), issue_cb, flush_cb) };
    NonNull::new(sut).ok_or_else(|| LoadgenError::Cxx(last_cxx_error()))
}

/// Destroys a SUT trampoline.
///
/// # Safety
/// `sut` must come from [`construct_sut`], be destroyed once, and not be in use by a test.
pub unsafe fn destroy_sut(sut: NonNull<sys::lg_sut>) {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_destroy_sut(sut.as_ptr()) }
}

/// Builds LoadGen's QSL trampoline (`mlperf::c::ConstructQSL`).
///
/// # Safety
/// The callbacks must be sound to call with `client_data` for as long as the
/// QSL is used by a test.
pub unsafe fn construct_qsl(
    client_data: sys::ClientData,
    name: &str,
    total_sample_count: usize,
    performance_sample_count: usize,
    load_cb: sys::SampleIndicesCallback,
    unload_cb: sys::SampleIndicesCallback,
) -> Result<NonNull<sys::lg_qsl>> {
    // SAFETY: `name` is valid for `name.len()` bytes and copied by LoadGen.
    let qsl = unsafe { sys::lg_construct_qsl(client_data, name.as_ptr().cast(), name.len(), total_sample_count, performance_sample_count, load_cb, unload_cb) };
    NonNull::new(qsl).ok_or_else(|| LoadgenError::Cxx(last_cxx_error()))
}

/// Destroys a QSL trampoline.
///
/// # Safety
/// `qsl` must come from [`construct_qsl`], be destroyed once, and not be in use by a test.
pub unsafe fn destroy_qsl(qsl: NonNull<sys::lg_qsl>) {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_destroy_qsl(qsl.as_ptr()) }
}

/// Runs a test (`mlperf::StartTest`); blocks until it ends.
///
/// # Safety
/// `sut`, `qsl` and `s` must be live handles that outlive the call, with
/// callbacks sound for the whole test; the strings in `log` and
/// `audit_config` must be NUL-terminated; no other test may run concurrently
/// in the process.
pub unsafe fn start_test(sut: NonNull<sys::lg_sut>, qsl: NonNull<sys::lg_qsl>, s: NonNull<sys::lg_settings>, log: &sys::lg_log_settings, audit_config: &CStr) -> Result<()> {
    // SAFETY: guaranteed by the caller.
    let code = unsafe { sys::lg_start_test(sut.as_ptr(), qsl.as_ptr(), s.as_ptr(), log, audit_config.as_ptr()) };
    check("lg_start_test", code)
}

/// `mlperf::AbortTest`: ends LoadGen's issue threads, logging and trace.
pub fn abort_test() {
    // SAFETY: no preconditions (LoadGen's own semantics are documented on
    // `crate::safe::abort_test`).
    unsafe { sys::lg_abort_test() }
}

/// Completes samples (`mlperf::QuerySamplesComplete`).
///
/// # Safety
/// Every `id` must come from a sample issued by the running test and not be
/// completed before; `data`/`size` must describe readable memory for the call.
pub unsafe fn query_samples_complete(responses: &mut [sys::QuerySampleResponse]) {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_query_samples_complete(responses.as_mut_ptr(), responses.len()) }
}

/// Reports first tokens (`mlperf::FirstTokenComplete`).
///
/// # Safety
/// As for [`query_samples_complete`], except that each sample's first token
/// is reported at most once (before its completion).
pub unsafe fn first_token_complete(responses: &mut [sys::QuerySampleResponse]) {
    // SAFETY: guaranteed by the caller.
    unsafe { sys::lg_first_token_complete(responses.as_mut_ptr(), responses.len()) }
}

/// `mlperf::RegisterIssueQueryThread`: registers this thread as a Server
/// issue thread and blocks, issuing queries, until LoadGen ends its issue
/// threads at the end of the test.
pub fn register_issue_query_thread() {
    // SAFETY: no memory-safety preconditions (it only touches LoadGen's
    // process-wide issue controller).
    unsafe { sys::lg_register_issue_query_thread() }
}

/// Version strings compiled into the linked LoadGen (`version.h`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VersionInfo {
    /// e.g. `6.0.17`.
    pub version: &'static str,
    /// Abbreviated git revision LoadGen was packaged from, e.g. `d6147c7eb7`.
    pub git_revision: &'static str,
    pub git_commit_date: &'static str,
    /// `git log` line of that revision.
    pub git_log: &'static str,
    /// `git status` at packaging time (empty when clean).
    pub git_status: &'static str,
    pub build_date_utc: &'static str,
    /// sha1 of every LoadGen source file, as logged in `loadgen_file_sha1`.
    pub sha1_of_files: &'static str,
}

/// Reads the version strings of the linked LoadGen.
pub fn version_info() -> VersionInfo {
    // SAFETY: each getter returns a NUL-terminated string owned by a
    // function-local static in LoadGen, alive and unchanged until exit.
    unsafe {
        VersionInfo {
            version: static_str(sys::lg_loadgen_version()),
            git_revision: static_str(sys::lg_loadgen_git_revision()),
            git_commit_date: static_str(sys::lg_loadgen_git_commit_date()),
            git_log: static_str(sys::lg_loadgen_git_log()),
            git_status: static_str(sys::lg_loadgen_git_status()),
            build_date_utc: static_str(sys::lg_loadgen_build_date_utc()),
            sha1_of_files: static_str(sys::lg_loadgen_sha1_of_files()),
        }
    }
}

/// Runs the C++ null SUT (`kind` 0 synchronous, 1 worker pool of `threads`).
///
/// # Safety
/// As for [`start_test`] regarding `s`, `log`, `audit_config` and concurrency.
pub unsafe fn bench_run_null_sut(
    kind: c_int,
    threads: usize,
    total_sample_count: usize,
    performance_sample_count: usize,
    s: NonNull<sys::lg_settings>,
    log: &sys::lg_log_settings,
    audit_config: &CStr,
) -> Result<()> {
    // SAFETY: guaranteed by the caller.
    let code = unsafe { sys::lg_bench_run_null_sut(kind, threads, total_sample_count, performance_sample_count, s.as_ptr(), log, audit_config.as_ptr()) };
    match code {
        sys::LG_EINVAL => Err(LoadgenError::InvalidValue(format!("null SUT kind {kind} with {threads} threads"))),
        code => check("lg_bench_run_null_sut", code),
    }
}
