// C++ null SUTs driven directly against the same LoadGen library, so that the
// overhead of the Rust binding can be measured against native C++ in one
// process (Rust counterparts: src/bench.rs). Our own code.
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lg_shim.h"
#include "loadgen.h"
#include "query_sample.h"
#include "query_sample_library.h"
#include "system_under_test.h"

namespace {

// Completes samples with empty responses, in chunks built on the stack (the
// same strategy as the Rust `query_samples_complete`).
void CompleteEmpty(const mlperf::QuerySample* samples, size_t count) {
  constexpr size_t kChunk = 64;
  mlperf::QuerySampleResponse responses[kChunk];
  while (count > 0) {
    const size_t n = count < kChunk ? count : kChunk;
    for (size_t i = 0; i < n; i++) {
      responses[i] = mlperf::QuerySampleResponse(samples[i].id, 0, 0);
    }
    mlperf::QuerySamplesComplete(responses, n);
    samples += n;
    count -= n;
  }
}

class NullQsl : public mlperf::QuerySampleLibrary {
 public:
  NullQsl(size_t total, size_t performance)
      : total_(total), performance_(performance) {}
  const std::string& Name() override { return name_; }
  size_t TotalSampleCount() override { return total_; }
  size_t PerformanceSampleCount() override { return performance_; }
  void LoadSamplesToRam(const std::vector<mlperf::QuerySampleIndex>&) override {}
  void UnloadSamplesFromRam(
      const std::vector<mlperf::QuerySampleIndex>&) override {}

 private:
  const std::string name_ = "Null QSL (C++)";
  size_t total_;
  size_t performance_;
};

// Completes every sample synchronously inside IssueQuery.
class SyncNullSut : public mlperf::SystemUnderTest {
 public:
  const std::string& Name() override { return name_; }
  void IssueQuery(const std::vector<mlperf::QuerySample>& samples) override {
    CompleteEmpty(samples.data(), samples.size());
  }
  void FlushQueries() override {}

 private:
  const std::string name_ = "Null SUT (C++, synchronous)";
};

// IssueQuery appends to a shared queue; N workers each take everything queued
// and complete it.
class PoolNullSut : public mlperf::SystemUnderTest {
 public:
  explicit PoolNullSut(size_t threads) {
    for (size_t i = 0; i < threads; i++) {
      workers_.emplace_back([this] { Work(); });
    }
  }
  ~PoolNullSut() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    ready_.notify_all();
    for (std::thread& t : workers_) t.join();
  }
  const std::string& Name() override { return name_; }
  void IssueQuery(const std::vector<mlperf::QuerySample>& samples) override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      queue_.insert(queue_.end(), samples.begin(), samples.end());
    }
    ready_.notify_one();
  }
  void FlushQueries() override {}

 private:
  void Work() {
    std::vector<mlperf::QuerySample> batch;
    for (;;) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        ready_.wait(lock, [this] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        batch.swap(queue_);
      }
      CompleteEmpty(batch.data(), batch.size());
      batch.clear();
    }
  }

  const std::string name_ = "Null SUT (C++, worker pool)";
  std::mutex mutex_;
  std::condition_variable ready_;
  std::vector<mlperf::QuerySample> queue_;
  bool stop_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace

extern "C" {

// kind 0: SyncNullSut; kind 1: PoolNullSut with `threads` workers (>= 1).
int lg_bench_run_null_sut(int kind, size_t threads, size_t total_sample_count,
                          size_t performance_sample_count,
                          const lg_settings* s, const lg_log_settings* log,
                          const char* audit_config_path) noexcept {
  if (kind < 0 || kind > 1 || (kind == 1 && threads == 0)) return LG_EINVAL;
  return lg_guard([&] {
    NullQsl qsl(total_sample_count, performance_sample_count);
    const mlperf::LogSettings log_settings = lg_to_log_settings(log);
    if (kind == 0) {
      SyncNullSut sut;
      mlperf::StartTest(&sut, &qsl, s->settings, log_settings,
                        audit_config_path);
    } else {
      PoolNullSut sut(threads);
      mlperf::StartTest(&sut, &qsl, s->settings, log_settings,
                        audit_config_path);
    }
    return LG_OK;
  });
}

}  // extern "C"
