// C-linkage shim over the MLCommons LoadGen C++ API (our own code; LoadGen
// itself is compiled unmodified from its verified source package).
//
// Every function is `noexcept`: C++ exceptions never cross into Rust. The ones
// that can fail return 0 on success or a negative errno-style code, and leave a
// message for `lg_last_error()` when a C++ exception was caught.
//
// The Rust mirror of this header is `src/sys.rs`; keep the two in sync.
#ifndef MLPERF_LOADGEN_RS_SHIM_H
#define MLPERF_LOADGEN_RS_SHIM_H

#include <cstddef>
#include <cstdint>
#include <exception>
#include <new>

#include "bindings/c_api.h"
#include "test_settings.h"

// Owned TestSettings handle.
struct lg_settings {
  mlperf::TestSettings settings;
};

// Borrowed view of mlperf::LogSettings (strings are NUL-terminated and only
// read during the call that receives this struct).
struct lg_log_settings {
  const char* outdir;
  const char* prefix;
  const char* suffix;
  bool prefix_with_datetime;
  bool copy_detail_to_stdout;
  bool copy_summary_to_stdout;
  bool enable_trace;
};

// Error codes (negated errno values).
enum : int {
  LG_OK = 0,
  LG_ENOENT = -2,   // file cannot be opened / unknown field name
  LG_ENOMEM = -12,  // allocation failed
  LG_EINVAL = -22,  // invalid argument or config syntax
  LG_EEXCEPT = -1,  // a C++ exception was caught, see lg_last_error()
};

// Shared by lg_shim.cc and lg_null_sut.cc (C++ linkage, not exported to Rust).
mlperf::LogSettings lg_to_log_settings(const lg_log_settings* log);
void lg_set_last_error(const char* message) noexcept;

// Runs `body` (returning an int status), turning any C++ exception into an
// error code plus a message for lg_last_error().
template <typename F>
int lg_guard(F&& body) noexcept {
  try {
    return body();
  } catch (const std::bad_alloc&) {
    lg_set_last_error("out of memory");
    return LG_ENOMEM;
  } catch (const std::exception& e) {
    lg_set_last_error(e.what());
    return LG_EEXCEPT;
  } catch (...) {
    lg_set_last_error("unknown C++ exception");
    return LG_EEXCEPT;
  }
}

#endif  // MLPERF_LOADGEN_RS_SHIM_H
