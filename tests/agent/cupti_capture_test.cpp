// The CUPTI capture driven through a fake CuptiApi table (no driver, no GPU): the buffer path, a second
// subscriber, an activity kind that fails, CUPTI's dropped records and an exception inside a callback.
#include <cstring>
#include <string>

#include <nlohmann/json.hpp>

#include "core/agent_internal.h"
#include "cupti/cupti_injection.h"
#include "fake_cupti.h"
#include "profile_train/trace/native_reader.h"
#include "profile_train/agent/recorder.h"
#include "recorder_util.h"
#include "test_util.h"

namespace agent = profile_train::agent;
namespace cupti = profile_train::agent::cupti;
using profile_train::trace::Category;
using profile_train::trace::Trace;
using namespace pt_agent_test;

namespace {

agent::RecorderConfig config(const fs::path& dir) {
  agent::RecorderConfig c;
  c.out_dir = dir.string();
  return c;
}

Trace load_all(const fs::path& dir) {
  auto t = profile_train::trace::native::load_captures(capture_files(dir));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(*t) : Trace{};
}

nlohmann::json status() { return nlohmann::json::parse(agent::cupti_status_json()); }

struct Records {
  CUpti_ActivityKernel10 kernel;
  CUpti_ActivityAPI runtime;
  CUpti_ActivityDevice5 device;
  CUpti_ActivityAPI overhead;  // kind OVERHEAD: not consumed by the capture
  char kernel_name[32] = "fake_gemm_kernel";
  Records() {
    std::memset(&kernel, 0, sizeof kernel);
    kernel.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    kernel.name = kernel_name;
    kernel.start = 2000;
    kernel.end = 5000;
    kernel.streamId = 7;
    kernel.correlationId = 41;
    kernel.gridX = kernel.gridY = kernel.gridZ = 1;
    kernel.blockX = kernel.blockY = kernel.blockZ = 1;
    std::memset(&runtime, 0, sizeof runtime);
    runtime.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    runtime.cbid = 211;
    runtime.start = 1000;
    runtime.end = 1500;
    runtime.threadId = 99;
    runtime.correlationId = 41;
    std::memset(&device, 0, sizeof device);
    device.kind = CUPTI_ACTIVITY_KIND_DEVICE;
    device.name = "Fake GPU";
    device.computeCapabilityMajor = 9;
    device.numMultiprocessors = 4;
    std::memset(&overhead, 0, sizeof overhead);
    overhead.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  }
};

// What CUPTI does with a buffer: asks for one, fills it, hands it back. Returns 0 when the capture gave a
// usable buffer.
int run_one_buffer() {
  FakeCupti& f = fake_cupti();
  if (!f.buffer_requested || !f.buffer_completed) return 20;
  uint8_t* buffer = nullptr;
  size_t size = 0, max_records = 1;
  f.buffer_requested(&buffer, &size, &max_records);
  if (!buffer || size < (1u << 20)) return 21;
  if (reinterpret_cast<uintptr_t>(buffer) % 8 != 0) return 22;
  if (max_records != 0) return 23;  // 0: as many records as fit
  Records r;
  const size_t valid = pack_records(buffer, size, {{&r.runtime, sizeof r.runtime}, {&r.kernel, sizeof r.kernel},
                                                   {&r.device, sizeof r.device}, {&r.overhead, sizeof r.overhead}});
  f.buffer_completed(nullptr, 0, buffer, size, valid);
  std::strcpy(r.kernel_name, "reused-by-cupti");  // CUPTI's memory: the name must have been copied already
  return 0;
}

int count_named(const Trace& t, Category cat, const std::string& name) {
  int n = 0;
  for (const auto& e : t.events) n += e.cat == cat && t.name(e) == name;
  return n;
}

}  // namespace

TEST(CuptiCapture, CompletedBufferIsTranslatedAndReturned) {
  const fs::path dir = fresh_dir("cupti_buffer");
  const int rc = in_child([&] {
    if (!start_recorder(config(dir))) return 2;
    if (cupti::start_capture(fake_cupti_api()) != 1) return 3;
    if (status()["state"] != "enabled") return 4;
    if (int b = run_one_buffer()) return b;
    const cupti::CaptureStats s = cupti::capture_stats();
    if (s.buffers_requested != 1 || s.buffers_returned != 1) return 5;
    if (s.records_translated != 3 || s.records_ignored != 1) return 6;
    agent::recorder_stop();
    if (fake_cupti().flushes != 1) return 7;  // CUPTI hands over what it holds before the final flush
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const Trace t = load_all(dir);
  EXPECT_TRUE(t.meta.gpu_capture_attempted) << t.meta.gpu_capture_status;
  EXPECT_EQ(count_named(t, Category::kKernel, "fake_gemm_kernel"), 1);
  EXPECT_EQ(count_named(t, Category::kRuntime, "cudaLaunchKernel"), 1);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "Fake GPU");
  EXPECT_EQ(t.quality.dropped_records, 0);
  EXPECT_EQ(t.quality.agent_internal_errors, 0);
}

TEST(CuptiCapture, SecondSubscriberDisablesTheCaptureAndSaysWhy) {
  const fs::path dir = fresh_dir("cupti_subscriber");
  const int rc = in_child([&] {
    fake_cupti().subscribe_result = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    if (!start_recorder(config(dir))) return 2;
    if (cupti::start_capture(fake_cupti_api()) != 0) return 3;
    if (cupti::start_capture(fake_cupti_api()) != 0) return 4;  // once per process
    const nlohmann::json s = status();
    if (s["state"] != "disabled") return 5;
    if (s["reason"].get<std::string>().find("another profiler") == std::string::npos) return 6;
    if (fake_cupti().buffer_requested || !fake_cupti().enabled.empty()) return 7;  // nothing was set up
    agent::range_push(agent::intern("still-recording"), 0);
    agent::range_pop(0);
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const Trace t = load_all(dir);
  EXPECT_FALSE(t.meta.gpu_capture_attempted);
  EXPECT_NE(t.meta.gpu_capture_status.find("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"), std::string::npos)
      << t.meta.gpu_capture_status;
  EXPECT_NE(t.meta.gpu_capture_status.find("another profiler"), std::string::npos) << t.meta.gpu_capture_status;
  EXPECT_EQ(count_named(t, Category::kUserAnnotation, "still-recording"), 1);
}

TEST(CuptiCapture, AFailingOptionalKindIsNamedAndTheOthersStillRecord) {
  const fs::path dir = fresh_dir("cupti_kind");
  const int rc = in_child([&] {
    fake_cupti().failing_kinds = {CUPTI_ACTIVITY_KIND_DRIVER};
    if (!start_recorder(config(dir))) return 2;
    if (cupti::start_capture(fake_cupti_api()) != 1) return 3;
    const nlohmann::json s = status();
    if (s["state"] != "enabled") return 4;
    if (!s["kinds_failed"].contains("driver") || s["kinds_failed"].size() != 1) return 5;
    const auto& kinds = s["kinds"];
    if (std::find(kinds.begin(), kinds.end(), "driver") != kinds.end()) return 6;
    if (std::find(kinds.begin(), kinds.end(), "kernel") == kinds.end()) return 7;
    return run_one_buffer();
  });
  ASSERT_EQ(rc, 0);
  const Trace t = load_all(dir);
  EXPECT_TRUE(t.meta.gpu_capture_attempted);
  EXPECT_EQ(count_named(t, Category::kKernel, "fake_gemm_kernel"), 1);
}

TEST(CuptiCapture, AFailingRequiredKindDisablesTheCaptureAndUndoesTheRest) {
  const fs::path dir = fresh_dir("cupti_required");
  const int rc = in_child([&] {
    fake_cupti().failing_kinds = {CUPTI_ACTIVITY_KIND_MEMCPY};
    if (!start_recorder(config(dir))) return 2;
    if (cupti::start_capture(fake_cupti_api()) != 0) return 3;
    const nlohmann::json s = status();
    if (s["state"] != "disabled") return 4;
    if (s["reason"].get<std::string>().find("cuptiActivityEnable(memcpy)") == std::string::npos) return 5;
    if (!fake_cupti().enabled.empty()) return 6;  // the kinds enabled before it are disabled again
    if (fake_cupti().unsubscribes != 1) return 7;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const Trace t = load_all(dir);
  EXPECT_FALSE(t.meta.gpu_capture_attempted);
  EXPECT_NE(t.meta.gpu_capture_status.find("cuptiActivityEnable(memcpy)"), std::string::npos)
      << t.meta.gpu_capture_status;
}

TEST(CuptiCapture, DroppedRecordsAreCountedInTheCaptureStatus) {
  const fs::path dir = fresh_dir("cupti_dropped");
  const int rc = in_child([&] {
    fake_cupti().dropped_per_buffer = 7;
    if (!start_recorder(config(dir))) return 2;
    if (cupti::start_capture(fake_cupti_api()) != 1) return 3;
    if (int b = run_one_buffer()) return b;
    if (cupti::capture_stats().records_dropped != 7) return 4;
    if (status()["records_dropped"] != 7) return 5;
    if (agent::recorder_stats().dropped != 7) return 6;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const Trace t = load_all(dir);
  EXPECT_EQ(t.quality.dropped_records, 7);
  bool noted = false;
  for (const auto& n : t.quality.notes) noted |= n.find("dropped 7 records") != std::string::npos;
  EXPECT_TRUE(noted);
  EXPECT_EQ(count_named(t, Category::kKernel, "fake_gemm_kernel"), 1);  // the records CUPTI kept are there
}

TEST(CuptiCapture, AnExceptionInTheBufferPathIsCountedAndTheBufferStillReturned) {
  const fs::path dir = fresh_dir("cupti_internal");
  const int rc = in_child([&] {
    fake_cupti().throw_in_next_record = true;
    if (!start_recorder(config(dir))) return 2;
    if (cupti::start_capture(fake_cupti_api()) != 1) return 3;
    if (int b = run_one_buffer()) return b;
    if (cupti::capture_stats().buffers_returned != 1) return 4;
    if (agent::recorder_stats().internal_errors != 1) return 5;
    return 0;
  });
  ASSERT_EQ(rc, 0);
  const Trace t = load_all(dir);
  EXPECT_EQ(t.quality.agent_internal_errors, 1);
  bool noted = false;
  for (const auto& n : t.quality.notes) noted |= n.find("1 internal error") != std::string::npos;
  EXPECT_TRUE(noted);
}
