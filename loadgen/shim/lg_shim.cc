// extern "C" shim over the MLCommons LoadGen C++ API. See lg_shim.h.
#include "lg_shim.h"

#include <cstring>
#include <string>

#include "loadgen.h"
#include "query_sample_library.h"
#include "system_under_test.h"
#include "version.h"

namespace {

thread_local std::string g_last_error;

// TestSettings fields reachable by name, spelled exactly as in
// test_settings.h. Booleans are read and written as 0/1 through the u64
// accessors. Scenario and mode have their own accessors.
struct U64Field {
  const char* name;
  uint64_t mlperf::TestSettings::*member;
};
struct F64Field {
  const char* name;
  double mlperf::TestSettings::*member;
};
struct BoolField {
  const char* name;
  bool mlperf::TestSettings::*member;
};

#define LG_FIELD(name) {#name, &mlperf::TestSettings::name}

const U64Field kU64Fields[] = {
    LG_FIELD(multi_stream_samples_per_query),
    LG_FIELD(server_target_latency_ns),
    LG_FIELD(server_max_async_queries),
    LG_FIELD(server_num_issue_query_threads),
    LG_FIELD(min_duration_ms),
    LG_FIELD(max_duration_ms),
    LG_FIELD(min_query_count),
    LG_FIELD(max_query_count),
    LG_FIELD(qsl_rng_seed),
    LG_FIELD(sample_index_rng_seed),
    LG_FIELD(schedule_rng_seed),
    LG_FIELD(accuracy_log_rng_seed),
    LG_FIELD(accuracy_log_sampling_target),
    LG_FIELD(test05_qsl_rng_seed),
    LG_FIELD(test05_sample_index_rng_seed),
    LG_FIELD(test05_schedule_rng_seed),
    LG_FIELD(performance_issue_same_index),
    LG_FIELD(performance_sample_count_override),
#ifdef LG_SHIM_HAS_ACCURACY_SAMPLE_COUNT_OVERRIDE
    LG_FIELD(accuracy_sample_count_override),
#endif
    LG_FIELD(server_ttft_latency),
    LG_FIELD(server_tpot_latency),
    LG_FIELD(token_latency_scaling_factor),
};

const F64Field kF64Fields[] = {
    LG_FIELD(single_stream_expected_latency_ns),
    LG_FIELD(single_stream_target_latency_percentile),
    LG_FIELD(multi_stream_expected_latency_ns),
    LG_FIELD(multi_stream_target_latency_percentile),
    LG_FIELD(server_target_qps),
    LG_FIELD(server_target_latency_percentile),
    LG_FIELD(server_find_peak_qps_boundary_step_size),
    LG_FIELD(offline_expected_qps),
    LG_FIELD(accuracy_log_probability),
};

const BoolField kBoolFields[] = {
    LG_FIELD(server_coalesce_queries),
    LG_FIELD(sample_concatenate_permutation),
    LG_FIELD(test05),
    LG_FIELD(print_timestamps),
    LG_FIELD(performance_issue_unique),
    LG_FIELD(performance_issue_same),
    LG_FIELD(use_token_latencies),
    LG_FIELD(infer_token_latencies),
};

#undef LG_FIELD

template <typename Field, size_t N>
const Field* FindField(const Field (&fields)[N], const char* name) {
  for (const Field& f : fields) {
    if (std::strcmp(f.name, name) == 0) return &f;
  }
  return nullptr;
}

}  // namespace

void lg_set_last_error(const char* message) noexcept {
  try {
    g_last_error = message;
  } catch (...) {
    g_last_error.clear();
  }
}

mlperf::LogSettings lg_to_log_settings(const lg_log_settings* log) {
  mlperf::LogSettings out;
  out.log_output.outdir = log->outdir;
  out.log_output.prefix = log->prefix;
  out.log_output.suffix = log->suffix;
  out.log_output.prefix_with_datetime = log->prefix_with_datetime;
  out.log_output.copy_detail_to_stdout = log->copy_detail_to_stdout;
  out.log_output.copy_summary_to_stdout = log->copy_summary_to_stdout;
  out.enable_trace = log->enable_trace;
  return out;
}

extern "C" {

const char* lg_last_error() noexcept { return g_last_error.c_str(); }

// ---- TestSettings -----------------------------------------------------------

lg_settings* lg_settings_new() noexcept {
  lg_settings* s = new (std::nothrow) lg_settings();
  // The only TestSettings field without a default member initializer.
  if (s != nullptr) s->settings.token_latency_scaling_factor = 0;
  return s;
}

lg_settings* lg_settings_clone(const lg_settings* s) noexcept {
  return new (std::nothrow) lg_settings(*s);
}

void lg_settings_free(lg_settings* s) noexcept { delete s; }

int lg_settings_set_scenario(lg_settings* s, int scenario) noexcept {
  if (scenario < 0 || scenario > 3) return LG_EINVAL;
  s->settings.scenario = static_cast<mlperf::TestScenario>(scenario);
  return LG_OK;
}

int lg_settings_get_scenario(const lg_settings* s) noexcept {
  return static_cast<int>(s->settings.scenario);
}

int lg_settings_set_mode(lg_settings* s, int mode) noexcept {
  if (mode < 0 || mode > 3) return LG_EINVAL;
  s->settings.mode = static_cast<mlperf::TestMode>(mode);
  return LG_OK;
}

int lg_settings_get_mode(const lg_settings* s) noexcept {
  return static_cast<int>(s->settings.mode);
}

int lg_settings_set_u64(lg_settings* s, const char* name,
                        uint64_t value) noexcept {
  if (const U64Field* f = FindField(kU64Fields, name)) {
    s->settings.*(f->member) = value;
    return LG_OK;
  }
  if (const BoolField* f = FindField(kBoolFields, name)) {
    if (value > 1) return LG_EINVAL;
    s->settings.*(f->member) = value == 1;
    return LG_OK;
  }
  return LG_ENOENT;
}

int lg_settings_get_u64(const lg_settings* s, const char* name,
                        uint64_t* out) noexcept {
  if (const U64Field* f = FindField(kU64Fields, name)) {
    *out = s->settings.*(f->member);
    return LG_OK;
  }
  if (const BoolField* f = FindField(kBoolFields, name)) {
    *out = (s->settings.*(f->member)) ? 1 : 0;
    return LG_OK;
  }
  return LG_ENOENT;
}

int lg_settings_set_f64(lg_settings* s, const char* name,
                        double value) noexcept {
  if (const F64Field* f = FindField(kF64Fields, name)) {
    s->settings.*(f->member) = value;
    return LG_OK;
  }
  return LG_ENOENT;
}

int lg_settings_get_f64(const lg_settings* s, const char* name,
                        double* out) noexcept {
  if (const F64Field* f = FindField(kF64Fields, name)) {
    *out = s->settings.*(f->member);
    return LG_OK;
  }
  return LG_ENOENT;
}

// TestSettings::FromConfig with conf_type 1 (user.conf; the first call in a
// process also applies the compiled-in mlperf.conf). Returns 0, -2 (file
// cannot be opened) or -22 (syntax error), as LoadGen does.
int lg_settings_from_config(lg_settings* s, const char* user_conf_path,
                            const char* model, const char* scenario) noexcept {
  return lg_guard([&] {
    return s->settings.FromConfig(user_conf_path, model, scenario, 1);
  });
}

// ---- Running a test ---------------------------------------------------------

// `sut` and `qsl` come from lg_construct_sut / lg_construct_qsl, i.e. from
// mlperf::c::ConstructSUT / ConstructQSL, whose trampoline classes derive
// from SystemUnderTest / QuerySampleLibrary as their only (primary, offset 0)
// base; mlperf::c::StartTest hands the same pointers to mlperf::StartTest.
int lg_start_test(void* sut, void* qsl, const lg_settings* s,
                  const lg_log_settings* log,
                  const char* audit_config_path) noexcept {
  return lg_guard([&] {
    mlperf::StartTest(static_cast<mlperf::SystemUnderTest*>(sut),
                      static_cast<mlperf::QuerySampleLibrary*>(qsl),
                      s->settings, lg_to_log_settings(log), audit_config_path);
    return LG_OK;
  });
}

void lg_abort_test() noexcept {
  lg_guard([] {
    mlperf::AbortTest();
    return LG_OK;
  });
}

// ---- mlperf::c entry points with C linkage -----------------------------------

void* lg_construct_sut(mlperf::c::ClientData client_data, const char* name,
                       size_t name_length,
                       mlperf::c::IssueQueryCallback issue_cb,
                       mlperf::c::FlushQueriesCallback flush_queries_cb) noexcept {
  void* sut = nullptr;
  lg_guard([&] {
    sut = mlperf::c::ConstructSUT(client_data, name, name_length, issue_cb,
                                  flush_queries_cb);
    return LG_OK;
  });
  return sut;
}

void lg_destroy_sut(void* sut) noexcept { mlperf::c::DestroySUT(sut); }

void* lg_construct_qsl(
    mlperf::c::ClientData client_data, const char* name, size_t name_length,
    size_t total_sample_count, size_t performance_sample_count,
    mlperf::c::LoadSamplesToRamCallback load_samples_to_ram_cb,
    mlperf::c::UnloadSamplesFromRamCallback unload_samples_from_ram_cb) noexcept {
  void* qsl = nullptr;
  lg_guard([&] {
    qsl = mlperf::c::ConstructQSL(client_data, name, name_length,
                                  total_sample_count, performance_sample_count,
                                  load_samples_to_ram_cb,
                                  unload_samples_from_ram_cb);
    return LG_OK;
  });
  return qsl;
}

void lg_destroy_qsl(void* qsl) noexcept { mlperf::c::DestroyQSL(qsl); }

void lg_query_samples_complete(mlperf::QuerySampleResponse* responses,
                               size_t count) noexcept {
  mlperf::c::QuerySamplesComplete(responses, count);
}

void lg_query_samples_complete_response_cb(
    mlperf::QuerySampleResponse* responses, size_t count,
    mlperf::c::ResponseCallback response_cb,
    mlperf::c::ClientData client_data) noexcept {
  mlperf::c::QuerySamplesCompleteResponseCb(responses, count, response_cb,
                                            client_data);
}

void lg_first_token_complete(mlperf::QuerySampleResponse* responses,
                             size_t count) noexcept {
  mlperf::c::FirstTokenComplete(responses, count);
}

void lg_first_token_complete_response_cb(
    mlperf::QuerySampleResponse* responses, size_t count,
    mlperf::c::ResponseCallback response_cb,
    mlperf::c::ClientData client_data) noexcept {
  mlperf::c::FirstTokenCompleteResponseCb(responses, count, response_cb,
                                          client_data);
}

void lg_register_issue_query_thread() noexcept {
  mlperf::c::RegisterIssueQueryThread();
}

// ---- Version strings (static storage, valid for the life of the process) ----

const char* lg_loadgen_version() noexcept {
  return mlperf::LoadgenVersion().c_str();
}
const char* lg_loadgen_git_revision() noexcept {
  return mlperf::LoadgenGitRevision().c_str();
}
const char* lg_loadgen_git_commit_date() noexcept {
  return mlperf::LoadgenGitCommitDate().c_str();
}
const char* lg_loadgen_git_status() noexcept {
  return mlperf::LoadgenGitStatus().c_str();
}
const char* lg_loadgen_git_log() noexcept {
  return mlperf::LoadgenGitLog().c_str();
}
const char* lg_loadgen_build_date_utc() noexcept {
  return mlperf::LoadgenBuildDateUtc().c_str();
}
const char* lg_loadgen_sha1_of_files() noexcept {
  return mlperf::LoadgenSha1OfFiles().c_str();
}

}  // extern "C"
