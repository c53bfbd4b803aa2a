//! Raw declarations of our `extern "C"` shim (`shim/lg_shim.h`) over the
//! LoadGen C++ API, and `#[repr(C)]` mirrors of LoadGen's plain structs.
//!
//! Nothing here is checked: use [`crate::result`] or [`crate::safe`].
#![allow(non_camel_case_types)]

use std::ffi::{c_char, c_int};
use std::marker::{PhantomData, PhantomPinned};

/// `mlperf::QuerySample` (query_sample.h): one sample of an issued query.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QuerySample {
    /// Response id: hand it back unchanged when completing the sample.
    pub id: usize,
    /// Index of the sample in the query sample library.
    pub index: usize,
}

/// `mlperf::QuerySampleResponse` (query_sample.h).
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct QuerySampleResponse {
    /// The [`QuerySample::id`] being completed.
    pub id: usize,
    /// Address of the response bytes.
    pub data: usize,
    /// Number of response bytes.
    pub size: usize,
    /// Number of generated tokens (LLM benchmarks), else 0.
    pub n_tokens: i64,
}

const _: () = assert!(size_of::<QuerySample>() == 16);
const _: () = assert!(size_of::<QuerySampleResponse>() == 32);

/// `mlperf::c::ClientData`: opaque user pointer handed back to callbacks.
pub type ClientData = usize;
/// `mlperf::c::IssueQueryCallback`.
pub type IssueQueryCallback = unsafe extern "C" fn(ClientData, *const QuerySample, usize);
/// `mlperf::c::FlushQueriesCallback` (note: no `ClientData`).
pub type FlushQueriesCallback = unsafe extern "C" fn();
/// `mlperf::c::LoadSamplesToRamCallback` / `UnloadSamplesFromRamCallback`.
pub type SampleIndicesCallback = unsafe extern "C" fn(ClientData, *const usize, usize);
/// `mlperf::c::ResponseCallback`: runs just before LoadGen copies a response.
pub type ResponseCallback = unsafe extern "C" fn(ClientData, *mut QuerySampleResponse);

/// Opaque owned `mlperf::TestSettings` (`struct lg_settings` in the shim).
#[repr(C)]
pub struct lg_settings {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Opaque `mlperf::SystemUnderTest` built by [`lg_construct_sut`].
#[repr(C)]
pub struct lg_sut {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Opaque `mlperf::QuerySampleLibrary` built by [`lg_construct_qsl`].
#[repr(C)]
pub struct lg_qsl {
    _opaque: [u8; 0],
    _marker: PhantomData<(*mut u8, PhantomPinned)>,
}

/// Borrowed view of `mlperf::LogSettings`; all strings NUL-terminated.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct lg_log_settings {
    pub outdir: *const c_char,
    pub prefix: *const c_char,
    pub suffix: *const c_char,
    pub prefix_with_datetime: bool,
    pub copy_detail_to_stdout: bool,
    pub copy_summary_to_stdout: bool,
    pub enable_trace: bool,
}

/// Status codes returned by the shim (negated errno values).
pub const LG_OK: c_int = 0;
/// A C++ exception was caught; see [`lg_last_error`].
pub const LG_EEXCEPT: c_int = -1;
/// File cannot be opened, or unknown field name.
pub const LG_ENOENT: c_int = -2;
/// Allocation failed.
pub const LG_ENOMEM: c_int = -12;
/// Invalid argument or config syntax error.
pub const LG_EINVAL: c_int = -22;

unsafe extern "C" {
    /// Message of the last C++ exception caught on this thread.
    pub fn lg_last_error() -> *const c_char;

    /// New settings with LoadGen's defaults (and `token_latency_scaling_factor = 0`); null on OOM.
    pub fn lg_settings_new() -> *mut lg_settings;
    pub fn lg_settings_clone(s: *const lg_settings) -> *mut lg_settings;
    pub fn lg_settings_free(s: *mut lg_settings);
    pub fn lg_settings_set_scenario(s: *mut lg_settings, scenario: c_int) -> c_int;
    pub fn lg_settings_get_scenario(s: *const lg_settings) -> c_int;
    pub fn lg_settings_set_mode(s: *mut lg_settings, mode: c_int) -> c_int;
    pub fn lg_settings_get_mode(s: *const lg_settings) -> c_int;
    pub fn lg_settings_set_u64(s: *mut lg_settings, name: *const c_char, value: u64) -> c_int;
    pub fn lg_settings_get_u64(s: *const lg_settings, name: *const c_char, out: *mut u64) -> c_int;
    pub fn lg_settings_set_f64(s: *mut lg_settings, name: *const c_char, value: f64) -> c_int;
    pub fn lg_settings_get_f64(s: *const lg_settings, name: *const c_char, out: *mut f64) -> c_int;
    /// `TestSettings::FromConfig(user_conf, model, scenario, 1)`: 0, -2 or -22.
    pub fn lg_settings_from_config(s: *mut lg_settings, user_conf_path: *const c_char, model: *const c_char, scenario: *const c_char) -> c_int;

    /// `mlperf::StartTest` with explicit log settings and audit config path.
    pub fn lg_start_test(sut: *mut lg_sut, qsl: *mut lg_qsl, s: *const lg_settings, log: *const lg_log_settings, audit_config_path: *const c_char) -> c_int;
    pub fn lg_abort_test();

    pub fn lg_construct_sut(client_data: ClientData, name: *const c_char, name_length: usize, issue_cb: IssueQueryCallback, flush_queries_cb: FlushQueriesCallback) -> *mut lg_sut;
    pub fn lg_destroy_sut(sut: *mut lg_sut);
    pub fn lg_construct_qsl(
        client_data: ClientData,
        name: *const c_char,
        name_length: usize,
        total_sample_count: usize,
        performance_sample_count: usize,
        load_samples_to_ram_cb: SampleIndicesCallback,
        unload_samples_from_ram_cb: SampleIndicesCallback,
    ) -> *mut lg_qsl;
    pub fn lg_destroy_qsl(qsl: *mut lg_qsl);

    pub fn lg_query_samples_complete(responses: *mut QuerySampleResponse, count: usize);
    pub fn lg_query_samples_complete_response_cb(responses: *mut QuerySampleResponse, count: usize, response_cb: ResponseCallback, client_data: ClientData);
    pub fn lg_first_token_complete(responses: *mut QuerySampleResponse, count: usize);
    pub fn lg_first_token_complete_response_cb(responses: *mut QuerySampleResponse, count: usize, response_cb: ResponseCallback, client_data: ClientData);
    pub fn lg_register_issue_query_thread();

    pub fn lg_loadgen_version() -> *const c_char;
    pub fn lg_loadgen_git_revision() -> *const c_char;
    pub fn lg_loadgen_git_commit_date() -> *const c_char;
    pub fn lg_loadgen_git_status() -> *const c_char;
    pub fn lg_loadgen_git_log() -> *const c_char;
    pub fn lg_loadgen_build_date_utc() -> *const c_char;
    pub fn lg_loadgen_sha1_of_files() -> *const c_char;

    /// C++ null SUT benchmark: kind 0 synchronous, 1 worker pool of `threads`.
    pub fn lg_bench_run_null_sut(
        kind: c_int,
        threads: usize,
        total_sample_count: usize,
        performance_sample_count: usize,
        s: *const lg_settings,
        log: *const lg_log_settings,
        audit_config_path: *const c_char,
    ) -> c_int;
}
