// CUPTI record translation with hand-built activity records (no driver, no GPU), and the CUPTI error path.
#include <cstring>
#include <map>
#include <string>

#include "core/agent_internal.h"
#include "cupti/translate.h"
#include "profile_train/trace/native_reader.h"
#include "profile_train/agent/recorder.h"
#include "recorder_util.h"
#include "test_util.h"

namespace agent = profile_train::agent;
namespace cupti = profile_train::agent::cupti;
namespace fmtn = profile_train::agent::format;
using namespace pt_agent_test;

namespace {

std::map<std::string, uint32_t> g_names;
std::map<uint32_t, std::string> g_by_id;

uint32_t fake_intern(std::string_view s) {
  auto it = g_names.find(std::string(s));
  if (it != g_names.end()) return it->second;
  const uint32_t id = static_cast<uint32_t>(g_names.size() + 1);
  g_names.emplace(std::string(s), id);
  g_by_id[id] = std::string(s);
  return id;
}

std::string fake_api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cudaLaunchKernel_v7000#" : "cuLaunchKernel#") +
         std::to_string(cbid);
}

cupti::TranslateContext ctx() {
  cupti::TranslateContext c;
  c.intern = fake_intern;
  c.api_name = fake_api_name;
  return c;
}

template <typename T>
const CUpti_Activity* as_activity(const T& r) {
  return reinterpret_cast<const CUpti_Activity*>(&r);
}

}  // namespace

TEST(CuptiTranslate, KernelCopiesNameAndLaunchConfiguration) {
  CUpti_ActivityKernel10 k;
  std::memset(&k, 0, sizeof k);
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  char name[] = "ampere_sgemm_128x64_nn";
  k.name = name;
  k.start = 1000;
  k.end = 4500;
  k.deviceId = 1;
  k.contextId = 3;
  k.streamId = 13;
  k.correlationId = 77;
  k.gridX = 4;
  k.gridY = 2;
  k.gridZ = 1;
  k.blockX = 128;
  k.blockY = 2;
  k.blockZ = 1;
  k.registersPerThread = 90;
  k.staticSharedMemory = 1024;
  k.dynamicSharedMemory = 2048;
  auto c = ctx();
  auto t = cupti::translate(as_activity(k), c);
  ASSERT_EQ(t.what, cupti::Translated::What::kRecord);
  std::strcpy(name, "overwritten-buffer");  // CUPTI reuses its buffer: the name must have been copied
  EXPECT_EQ(g_by_id[t.rec.name], "ampere_sgemm_128x64_nn");
  EXPECT_EQ(t.rec.kind, static_cast<uint8_t>(fmtn::RecordKind::kKernel));
  EXPECT_EQ(t.rec.start_ns, 1000);
  EXPECT_EQ(t.rec.end_ns, 4500);
  EXPECT_EQ(t.rec.device, 1);
  EXPECT_EQ(t.rec.tid, 13u);
  EXPECT_EQ(t.rec.corr, 77);
  EXPECT_EQ(t.rec.value, 8);
  EXPECT_EQ(t.rec.x0, 256u);
  EXPECT_EQ(t.rec.x1, 90u);
  EXPECT_EQ(t.rec.x2, 3072u);
  EXPECT_EQ(c.context_device.at(3), 1);
}

TEST(CuptiTranslate, MemcpyKeepsDirectionMemoryKindsAndAsyncFlag) {
  struct Case {
    uint8_t copy, src, dst, flags;
    fmtn::CopyKind want_copy;
    fmtn::MemKind want_src, want_dst;
    uint32_t want_async;
  };
  const Case cases[] = {
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0,
       fmtn::CopyKind::kHtoD, fmtn::MemKind::kPageable, fmtn::MemKind::kDevice, 0},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
       CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC, fmtn::CopyKind::kHtoD, fmtn::MemKind::kPinned, fmtn::MemKind::kDevice, 1},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 0,
       fmtn::CopyKind::kDtoH, fmtn::MemKind::kDevice, fmtn::MemKind::kPageable, 0},
      {CUPTI_ACTIVITY_MEMCPY_KIND_DTOD, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, 0,
       fmtn::CopyKind::kDtoD, fmtn::MemKind::kDevice, fmtn::MemKind::kDevice, 0},
      {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_MANAGED, 0,
       fmtn::CopyKind::kHtoH, fmtn::MemKind::kPinned, fmtn::MemKind::kManaged, 0},
  };
  for (const Case& cs : cases) {
    CUpti_ActivityMemcpy6 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = cs.copy;
    m.srcKind = cs.src;
    m.dstKind = cs.dst;
    m.flags = cs.flags;
    m.bytes = 123456;
    m.start = 10;
    m.end = 20;
    m.deviceId = 0;
    m.streamId = 7;
    m.correlationId = 5;
    auto c = ctx();
    auto t = cupti::translate(as_activity(m), c);
    ASSERT_EQ(t.what, cupti::Translated::What::kRecord);
    EXPECT_EQ(t.rec.kind, static_cast<uint8_t>(fmtn::RecordKind::kMemcpy));
    EXPECT_EQ(t.rec.a, static_cast<uint8_t>(cs.want_copy));
    EXPECT_EQ(t.rec.b, static_cast<uint8_t>(cs.want_src));
    EXPECT_EQ(t.rec.c, static_cast<uint8_t>(cs.want_dst));
    EXPECT_EQ(t.rec.x1, cs.want_async);
    EXPECT_EQ(t.rec.value, 123456);
    EXPECT_EQ(t.rec.corr, 5);
  }
}

TEST(CuptiTranslate, PeerToPeerMemcpy) {
  CUpti_ActivityMemcpyPtoP4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY2;
  m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_PTOP;
  m.srcKind = m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 4096;
  m.srcDeviceId = 0;
  m.dstDeviceId = 1;
  m.deviceId = 0;
  m.start = 5;
  m.end = 9;
  auto c = ctx();
  auto t = cupti::translate(as_activity(m), c);
  ASSERT_EQ(t.what, cupti::Translated::What::kRecord);
  EXPECT_EQ(t.rec.a, static_cast<uint8_t>(fmtn::CopyKind::kPtoP));
  EXPECT_EQ(t.rec.x0, 0u);
  EXPECT_EQ(t.rec.x2, 1u);
  EXPECT_EQ(t.rec.value, 4096);
}

TEST(CuptiTranslate, MemsetAndSynchronization) {
  auto c = ctx();
  CUpti_ActivityMemset4 s;
  std::memset(&s, 0, sizeof s);
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.bytes = 999;
  s.start = 1;
  s.end = 2;
  s.deviceId = 2;
  s.contextId = 11;
  s.streamId = 4;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  auto t = cupti::translate(as_activity(s), c);
  ASSERT_EQ(t.what, cupti::Translated::What::kRecord);
  EXPECT_EQ(t.rec.kind, static_cast<uint8_t>(fmtn::RecordKind::kMemset));
  EXPECT_EQ(t.rec.value, 999);
  EXPECT_EQ(t.rec.c, static_cast<uint8_t>(fmtn::MemKind::kDevice));

  const std::pair<CUpti_ActivitySynchronizationType, fmtn::SyncKind> kinds[] = {
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE, fmtn::SyncKind::kEventSync},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT, fmtn::SyncKind::kStreamWaitEvent},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE, fmtn::SyncKind::kStreamSync},
      {CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE, fmtn::SyncKind::kContextSync},
  };
  for (auto [type, want] : kinds) {
    CUpti_ActivitySynchronization2 y;
    std::memset(&y, 0, sizeof y);
    y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    y.type = type;
    y.start = 100;
    y.end = 250;
    y.contextId = 11;  // learned from the memset above: device 2
    y.streamId = 4;
    y.correlationId = 8;
    auto r = cupti::translate(as_activity(y), c);
    ASSERT_EQ(r.what, cupti::Translated::What::kRecord);
    EXPECT_EQ(r.rec.kind, static_cast<uint8_t>(fmtn::RecordKind::kSync));
    EXPECT_EQ(r.rec.a, static_cast<uint8_t>(want));
    EXPECT_EQ(r.rec.device, 2);
    EXPECT_EQ(r.rec.end_ns - r.rec.start_ns, 150);
  }
}

TEST(CuptiTranslate, RuntimeAndDriverApiCalls) {
  auto c = ctx();
  for (auto kind : {CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER}) {
    CUpti_ActivityAPI a;
    std::memset(&a, 0, sizeof a);
    a.kind = kind;
    a.cbid = 211;
    a.start = 50;
    a.end = 60;
    a.processId = 1234;
    a.threadId = 5678;
    a.correlationId = 99;
    auto t = cupti::translate(as_activity(a), c);
    ASSERT_EQ(t.what, cupti::Translated::What::kRecord);
    const bool runtime = kind == CUPTI_ACTIVITY_KIND_RUNTIME;
    EXPECT_EQ(t.rec.kind, static_cast<uint8_t>(runtime ? fmtn::RecordKind::kRuntime : fmtn::RecordKind::kDriver));
    EXPECT_EQ(g_by_id[t.rec.name], runtime ? "cudaLaunchKernel_v7000#211" : "cuLaunchKernel#211");
    EXPECT_EQ(t.rec.tid, 5678u);
    EXPECT_EQ(t.rec.corr, 99);
    EXPECT_EQ(t.rec.x0, 211u);
  }
}

TEST(CuptiTranslate, MemoryAllocationAndRelease) {
  auto c = ctx();
  CUpti_ActivityMemory4 m;
  std::memset(&m, 0, sizeof m);
  m.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  m.bytes = 1 << 20;
  m.timestamp = 777;
  m.deviceId = 0;
  auto t = cupti::translate(as_activity(m), c);
  ASSERT_EQ(t.what, cupti::Translated::What::kRecord);
  EXPECT_EQ(t.rec.value, 1 << 20);
  EXPECT_EQ(t.rec.start_ns, 777);
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  t = cupti::translate(as_activity(m), c);
  EXPECT_EQ(t.rec.value, -(1 << 20));
  m.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_INVALID;
  EXPECT_EQ(cupti::translate(as_activity(m), c).what, cupti::Translated::What::kNone);
}

TEST(CuptiTranslate, DeviceRecordBecomesDeviceProperties) {
  auto c = ctx();
  CUpti_ActivityDevice5 d;
  std::memset(&d, 0, sizeof d);
  d.kind = CUPTI_ACTIVITY_KIND_DEVICE;
  d.id = 0;
  d.name = "NVIDIA H200";
  d.computeCapabilityMajor = 9;
  d.computeCapabilityMinor = 0;
  d.numMultiprocessors = 132;
  d.maxWarpsPerMultiprocessor = 64;
  d.numThreadsPerWarp = 32;
  d.globalMemorySize = 150ull << 30;
  auto t = cupti::translate(as_activity(d), c);
  ASSERT_EQ(t.what, cupti::Translated::What::kDevice);
  auto j = nlohmann::json::parse(t.device_json);
  EXPECT_EQ(j["name"], "NVIDIA H200");
  EXPECT_EQ(j["num_sms"], 132);
  EXPECT_EQ(j["max_threads_per_sm"], 2048);
  EXPECT_EQ(j["compute_major"], 9);
  EXPECT_EQ(j["total_memory_bytes"], 150ull << 30);
}

TEST(CuptiTranslate, IgnoredKindsAndNull) {
  auto c = ctx();
  EXPECT_EQ(cupti::translate(nullptr, c).what, cupti::Translated::What::kNone);
  CUpti_ActivityAPI a;
  std::memset(&a, 0, sizeof a);
  a.kind = CUPTI_ACTIVITY_KIND_OVERHEAD;
  EXPECT_EQ(cupti::translate(as_activity(a), c).what, cupti::Translated::What::kNone);
}

// Without a driver, InitializeInjection must leave CUPTI disabled with a reason, keep NVTX, and not crash.
TEST(CuptiInjection, NoDriverDisablesCuptiWithAReason) {
  const fs::path dir = fresh_dir("cupti_error");
  int status = in_child([&] {
    setenv("PROFILE_TRAIN_OUT", dir.c_str(), 1);
    const int enabled = agent::cupti_initialize();
    agent::install_process_hooks(kTestHooks);  // the final flush at exit
    if (enabled == 1) return 10;  // a real driver: CUPTI works here, nothing to test
    const std::string s = agent::cupti_status_json();
    if (s.find("\"disabled\"") == std::string::npos) return 3;
    if (s.find("reason") == std::string::npos) return 4;
    if (agent::cupti_initialize() != 0) return 5;  // idempotent
    agent::range_push(agent::intern("still-recording"), 0);
    agent::range_pop(0);
    return 0;
  });
  if (status == 10) GTEST_SKIP() << "a CUDA driver is present: CUPTI was enabled";
  ASSERT_EQ(status, 0);
  auto t = profile_train::trace::native::load_captures(capture_files(dir));
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_FALSE(t->meta.gpu_capture_attempted);
  EXPECT_NE(t->meta.gpu_capture_status.find("CUPTI disabled"), std::string::npos) << t->meta.gpu_capture_status;
  int kept = 0;
  for (const auto& e : t->events) kept += t->name(e) == "still-recording";
  EXPECT_EQ(kept, 1);
}
