// The whole GPU path below CUPTI, without a GPU: hand-built CUPTI activity records of a simulated CUDA training
// loop go through the agent's translation into the recorder (as buffer_completed does), the native file is
// read back, analyzed and judged by the built-in rules. What a real GPU run adds on top is only CUPTI itself
// (bench/gpu/check_capture.sh); everything after the activity buffer is exercised here.
#include <cupti.h>

#include <algorithm>
#include <cstring>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "core/agent_internal.h"
#include "cupti/translate.h"
#include "profile_train/trace/native_reader.h"
#include "profile_train/agent/recorder.h"
#include "profile_train/analysis/analyze.h"
#include "profile_train/rules/engine.h"
#include "report_view.h"
#include "recorder_util.h"
#include "test_util.h"

namespace agent = profile_train::agent;
namespace cupti = profile_train::agent::cupti;
namespace fmtn = profile_train::agent::format;
using nlohmann::json;
using namespace pt_agent_test;

namespace {

constexpr int64_t kUs = 1000, kMs = 1000 * kUs;
constexpr uint32_t kStream = 7, kContext = 1;

uint32_t intern_view(std::string_view s) { return agent::intern(s); }

// The production naming: CUPTI's own callback names ("cudaLaunchKernel_v7000"); libcupti answers without a driver.
std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* n = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &n) == CUPTI_SUCCESS && n) return n;
  return "cbid_" + std::to_string(cbid);
}

// Emits CPU ranges directly and GPU activity as CUPTI records through cupti::translate, on one timeline.
class SimulatedRun {
 public:
  SimulatedRun() : tid_(agent::current_tid()), t_(agent::now_ns()) {
    ctx_.intern = intern_view;
    ctx_.api_name = api_name;
  }
  int64_t at(int64_t offset) const { return t_ + offset; }
  void advance(int64_t d) { t_ += d; }

  void range(const char* name, int64_t start, int64_t end, uint32_t depth) {
    fmtn::Record r;
    r.kind = static_cast<uint8_t>(fmtn::RecordKind::kRange);
    r.name = agent::intern(name);
    r.start_ns = start;
    r.end_ns = end;
    r.tid = tid_;
    r.x1 = depth;
    agent::record(r);
  }
  uint32_t api(CUpti_CallbackId cbid, int64_t start, int64_t end) {
    CUpti_ActivityAPI a;
    std::memset(&a, 0, sizeof a);
    a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
    a.cbid = cbid;
    a.start = static_cast<uint64_t>(start);
    a.end = static_cast<uint64_t>(end);
    a.processId = static_cast<uint32_t>(getpid());
    a.threadId = static_cast<uint32_t>(tid_);
    a.correlationId = ++corr_;
    feed(a);
    return corr_;
  }
  void kernel(const char* name, int64_t start, int64_t end, uint32_t corr) {
    CUpti_ActivityKernel10 k;
    std::memset(&k, 0, sizeof k);
    k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
    k.name = name;
    k.start = static_cast<uint64_t>(start);
    k.end = static_cast<uint64_t>(end);
    k.deviceId = 0;
    k.contextId = kContext;
    k.streamId = kStream;
    k.correlationId = corr;
    k.gridX = 264;
    k.gridY = k.gridZ = 1;
    k.blockX = 256;
    k.blockY = k.blockZ = 1;
    k.registersPerThread = 32;
    feed(k);
  }
  void memcpy_h2d(uint8_t src_kind, uint64_t bytes, int64_t start, int64_t end, uint32_t corr, bool async) {
    CUpti_ActivityMemcpy6 m;
    std::memset(&m, 0, sizeof m);
    m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    m.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
    m.srcKind = src_kind;
    m.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    m.flags = async ? CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC : 0;
    m.bytes = bytes;
    m.start = static_cast<uint64_t>(start);
    m.end = static_cast<uint64_t>(end);
    m.deviceId = 0;
    m.contextId = kContext;
    m.streamId = kStream;
    m.correlationId = corr;
    feed(m);
  }
  void stream_sync(int64_t start, int64_t end, uint32_t corr) {
    CUpti_ActivitySynchronization2 s;
    std::memset(&s, 0, sizeof s);
    s.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
    s.type = CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE;
    s.start = static_cast<uint64_t>(start);
    s.end = static_cast<uint64_t>(end);
    s.contextId = kContext;
    s.streamId = kStream;
    s.correlationId = corr;
    feed(s);
  }
  void device_h200() {
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
    d.maxThreadsPerBlock = 1024;
    d.maxRegistersPerMultiprocessor = 65536;
    d.maxSharedMemoryPerMultiprocessor = 233472;
    d.globalMemorySize = 150ull << 30;
    feed(d);
  }
  // `launches` kernel launches of `launch_ns` each on the host from `host_start`; the GPU runs each for
  // `kernel_ns`, back to back from `gpu_start` (or as soon as launched). Returns the GPU end time.
  int64_t launch_kernels(int launches, int64_t host_start, int64_t launch_ns, int64_t gpu_start, int64_t kernel_ns) {
    static const char* kNames[] = {
        "sm90_xmma_gemm_f32f32_tf32f32_f32_nn_n_tilesize128x128x32_warpgroupsize1x1x1_execute_segment_k_off_kernel",
        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, std::array<char*, 3ul> >",
        "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>"};
    int64_t gpu = gpu_start;
    for (int i = 0; i < launches; ++i) {
      const int64_t h = host_start + i * launch_ns;
      const uint32_t corr = api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, h, h + launch_ns - 500);
      const int64_t start = std::max(gpu, h + 2 * kUs);
      kernel(kNames[i % 3], start, start + kernel_ns, corr);
      gpu = start + kernel_ns;
    }
    return gpu;
  }

 private:
  template <typename T>
  void feed(const T& rec) {
    const auto t = cupti::translate(reinterpret_cast<const CUpti_Activity*>(&rec), ctx_);
    if (t.what == cupti::Translated::What::kRecord) agent::record(t.rec);
    if (t.what == cupti::Translated::What::kDevice) agent::add_json_chunk(fmtn::ChunkType::kDevice, t.device_json);
  }

  cupti::TranslateContext ctx_;
  uint64_t tid_;
  int64_t t_;
  uint32_t corr_ = 0;
};

agent::RecorderConfig config(const fs::path& dir) {
  agent::RecorderConfig c;
  c.out_dir = dir.string();
  return c;
}

// Records `steps` steps of `step_body(sim, step_start)` (which returns the step's length) in a forked child,
// then loads, analyzes and judges the capture.
// `facts`: what the run would record beside the capture (the built-in workload writes facts-PID.json).
json capture_and_report(const std::string& name, int steps,
                        const std::function<int64_t(SimulatedRun&, int64_t)>& step_body, const json& facts = json()) {
  const fs::path dir = fresh_dir(name);
  const int rc = in_child([&] {
    if (!start_recorder(config(dir))) return 2;
    agent::set_status("cupti", R"({"state":"enabled","kinds":["kernel","memcpy","memset","runtime"]})");
    SimulatedRun sim;
    sim.device_h200();
    sim.advance(1 * kMs);
    for (int s = 0; s < steps; ++s) {
      const int64_t start = sim.at(0);
      const int64_t len = step_body(sim, start);
      sim.range(("ProfilerStep#" + std::to_string(s)).c_str(), start, start + len, 0);
      sim.advance(len);
    }
    agent::recorder_stop();
    return 0;
  });
  EXPECT_EQ(rc, 0);
  auto trace = profile_train::trace::native::load_captures(capture_files(dir));
  EXPECT_TRUE(trace.ok()) << trace.status().message();
  if (!trace.ok()) return json();
  if (facts.is_object()) {
    if (!trace->facts.is_object()) trace->facts = json::object();
    trace->facts.merge_patch(facts);
  }
  json report = profile_train::analysis::build_report(*trace);
  auto rules = profile_train::rules::load_rules();
  EXPECT_TRUE(rules.ok()) << rules.status().message();
  if (rules.ok()) profile_train::rules::apply_rules(**rules, report);
  fs::remove_all(dir);
  return report;
}

std::string first_recommendation(const json& r) {
  const auto& recs = r.value("recommendations", json::array());
  return recs.empty() ? std::string("(none)") : recs.at(0).value("id", std::string());
}

}  // namespace

// A 64 MiB pageable copy (synchronous, staged) per step, then a short GPU burst: host-to-device bound.
TEST(GpuPipeline, PageableCopiesAreDiagnosedHostToDeviceWithPinMemoryFirst) {
  const json r = capture_and_report("pageable", 12, [](SimulatedRun& sim, int64_t t) {
    sim.range("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t, t + 200 * kUs, 1);
    const uint32_t c = sim.api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, t + 250 * kUs, t + 6300 * kUs);
    sim.memcpy_h2d(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 64ull << 20, t + 300 * kUs, t + 6200 * kUs, c, false);
    sim.range("## forward ##", t + 6400 * kUs, t + 7400 * kUs, 1);
    sim.launch_kernels(20, t + 6400 * kUs, 50 * kUs, t + 6420 * kUs, 30 * kUs);
    sim.range("## backward ##", t + 7500 * kUs, t + 9500 * kUs, 1);
    sim.launch_kernels(40, t + 7500 * kUs, 50 * kUs, t + 7520 * kUs, 30 * kUs);
    return 10 * kMs;
  });
  ASSERT_TRUE(r.is_object());
  EXPECT_TRUE(r["source"]["has_gpu_activity"].get<bool>());
  EXPECT_EQ(r["steps"]["count"], 12) << r["steps"].dump();
  EXPECT_NEAR(r["steps"]["mean_ms"].get<double>(), 10.0, 0.01);
  EXPECT_EQ(r["device"]["name"], "NVIDIA H200") << r["device"].dump();
  const json& h2d = r["gpu"]["memcpy"]["h2d"];
  EXPECT_NEAR(h2d["count_per_step"].get<double>(), 1.0, 1e-9) << h2d.dump();
  EXPECT_NEAR(h2d["pageable_fraction"].get<double>(), 1.0, 1e-9) << h2d.dump();
  EXPECT_NEAR(h2d["bytes_per_step"].get<double>(), double(64ull << 20), 1.0);
  EXPECT_EQ(r["verdict"]["bottleneck"], "host_to_device") << r["verdict"].dump();
  EXPECT_EQ(first_recommendation(r), "pin-memory") << r["recommendations"].dump();
  // The launches were paired with their kernels through the correlation ids.
  EXPECT_NEAR(r["host"]["launches_per_step"].get<double>(), 60.0, 1e-9) << r["host"].dump();
}

// A stream sync every step blocks the host until the GPU drains; 4 ms of host work then leaves the GPU idle.
TEST(GpuPipeline, PerStepStreamSyncIsDiagnosedSynchronizationWithAvoidHostSyncFirst) {
  const json r = capture_and_report("sync", 12, [](SimulatedRun& sim, int64_t t) {
    sim.range("## forward ##", t, t + 1000 * kUs, 1);
    sim.launch_kernels(20, t, 50 * kUs, t + 20 * kUs, 100 * kUs);
    sim.range("## backward ##", t + 1000 * kUs, t + 2000 * kUs, 1);
    const int64_t gpu_end = sim.launch_kernels(20, t + 1000 * kUs, 50 * kUs, t + 2020 * kUs, 200 * kUs);
    // loss.item(): a 4-byte D2H copy and a stream sync that lasts until the GPU queue is empty.
    const uint32_t c = sim.api(CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, t + 2100 * kUs, gpu_end + 20 * kUs);
    sim.stream_sync(t + 2100 * kUs, gpu_end + 10 * kUs, c);
    return (gpu_end - t) + 20 * kUs + 4 * kMs;  // then 4 ms of host work with the GPU idle
  });
  ASSERT_TRUE(r.is_object());
  EXPECT_GT(r["host"]["sync"]["fraction"].get<double>(), 0.15) << r["host"].dump();
  EXPECT_NEAR(r["host"]["sync"]["count_per_step"].get<double>(), 1.0, 1e-9) << r["host"].dump();
  EXPECT_GT(r["gpu"]["idle"]["fraction"].get<double>(), 0.15) << r["gpu"]["idle"].dump();
  EXPECT_EQ(r["verdict"]["bottleneck"], "synchronization") << r["verdict"].dump();
  EXPECT_EQ(first_recommendation(r), "avoid-host-sync") << r["recommendations"].dump();
}

// The GPU busy back to back with TF32-eligible FP32 GEMMs: GPU compute bound, and with TF32 off (no facts say
// otherwise) the tf32 rule leads.
TEST(GpuPipeline, BusyGpuWithFp32GemmsIsGpuComputeWithTf32First) {
  const json r = capture_and_report("compute", 8, [](SimulatedRun& sim, int64_t t) {
    sim.range("## forward ##", t, t + 1500 * kUs, 1);
    int64_t gpu = t + 20 * kUs;
    for (int i = 0; i < 30; ++i) {
      const int64_t h = t + i * 50 * kUs;
      const uint32_t corr = sim.api(CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, h, h + 10 * kUs);
      sim.kernel("cutlass_80_simt_sgemm_128x128_8x4_nn_align1", gpu, gpu + 300 * kUs, corr);
      gpu += 300 * kUs;
    }
    return gpu - t + 20 * kUs;
  });
  ASSERT_TRUE(r.is_object());
  EXPECT_GT(r["gpu"]["utilization"].get<double>(), 0.9) << r["gpu"].dump();
  EXPECT_GT(r["gpu"]["fp32_eligible_kernel_share"].get<double>(), 0.9);
  EXPECT_EQ(r["verdict"]["bottleneck"], "gpu_compute") << r["verdict"].dump();
  EXPECT_EQ(first_recommendation(r), "tf32") << r["recommendations"].dump();
}

// Launch bound: 150 tiny kernels per step, each launched in 15 us of host time while the GPU runs it in 3 us
// (the `tiny` scenario's shape). The GPU idles most of the step: CPU overhead, and with the batch of 4 and the
// memory headroom the workload records, the batch is the cheapest lever (CUDA graphs come after it).
TEST(GpuPipeline, LaunchBoundStepIsCpuOverheadWithBatchSizeFirst) {
  const json facts = {{"dataloader", {{"batch_size", 4}}},
                      {"gpu", {{"memory_peak_bytes", int64_t{2} << 30}, {"memory_total_bytes", int64_t{141} << 30}}}};
  const json r = capture_and_report("launch", 10, [](SimulatedRun& sim, int64_t t) {
    sim.range("## forward ##", t, t + 750 * kUs, 1);
    sim.launch_kernels(50, t, 15 * kUs, t + 5 * kUs, 3 * kUs);
    sim.range("## backward ##", t + 750 * kUs, t + 2250 * kUs, 1);
    sim.launch_kernels(100, t + 750 * kUs, 15 * kUs, t + 755 * kUs, 3 * kUs);
    return 2300 * kUs;
  }, facts);
  ASSERT_TRUE(r.is_object());
  EXPECT_LT(r["gpu"]["utilization"].get<double>(), 0.3) << r["gpu"].dump();
  EXPECT_EQ(r["verdict"]["bottleneck"], "cpu_overhead") << r["verdict"].dump() << r["breakdown"].dump();
  EXPECT_EQ(first_recommendation(r), "batch-size") << r["recommendations"].dump();
}

// A for-loop AdamW: 240 small elementwise kernels launched inside Optimizer.step#AdamW.step every step (the
// `optimizer_loop` scenario's shape): the optimizer's launches dominate, and fused AdamW leads.
TEST(GpuPipeline, ForLoopOptimizerIsCpuOverheadWithFusedAdamwFirst) {
  const json r = capture_and_report("optimizer", 10, [](SimulatedRun& sim, int64_t t) {
    sim.range("## forward ##", t, t + 400 * kUs, 1);
    sim.launch_kernels(20, t, 20 * kUs, t + 5 * kUs, 15 * kUs);
    sim.range("## backward ##", t + 400 * kUs, t + 1200 * kUs, 1);
    sim.launch_kernels(40, t + 400 * kUs, 20 * kUs, t + 405 * kUs, 15 * kUs);
    sim.range("Optimizer.step#AdamW.step", t + 1200 * kUs, t + 4800 * kUs, 1);
    sim.launch_kernels(240, t + 1200 * kUs, 15 * kUs, t + 1205 * kUs, 3 * kUs);
    return 4850 * kUs;
  });
  ASSERT_TRUE(r.is_object());
  EXPECT_NEAR(r["gpu"]["optimizer_kernels_per_step"].get<double>(), 240.0, 1e-9) << r["gpu"].dump();
  EXPECT_EQ(r["verdict"]["bottleneck"], "cpu_overhead") << r["verdict"].dump() << r["breakdown"].dump();
  EXPECT_EQ(first_recommendation(r), "fused-adamw") << r["recommendations"].dump();
}

// Seven small tensors made on the CPU and copied each step beside the two pinned batch copies (the
// `cpu_tensors` scenario's shape), in a launch-bound step: create-on-device leads.
TEST(GpuPipeline, SmallPerStepCopiesPutCreateOnDeviceFirst) {
  const json r = capture_and_report("cpu_tensors", 10, [](SimulatedRun& sim, int64_t t) {
    for (int i = 0; i < 2; ++i) {
      const int64_t h = t + i * 20 * kUs;
      const uint32_t c = sim.api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, h, h + 10 * kUs);
      sim.memcpy_h2d(CUPTI_ACTIVITY_MEMORY_KIND_PINNED, 400 << 10, h + 5 * kUs, h + 20 * kUs, c, true);
    }
    sim.range("## forward ##", t + 50 * kUs, t + 1200 * kUs, 1);
    for (int i = 0; i < 7; ++i) {  // torch.ones(...).to(device) and friends: pageable, synchronous
      const int64_t h = t + 60 * kUs + i * 40 * kUs;
      const uint32_t c = sim.api(CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, h, h + 30 * kUs);
      sim.memcpy_h2d(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, 4096, h + 10 * kUs, h + 14 * kUs, c, false);
    }
    sim.launch_kernels(60, t + 400 * kUs, 13 * kUs, t + 405 * kUs, 4 * kUs);
    sim.range("## backward ##", t + 1200 * kUs, t + 2500 * kUs, 1);
    sim.launch_kernels(100, t + 1200 * kUs, 13 * kUs, t + 1205 * kUs, 4 * kUs);
    return 2550 * kUs;
  });
  ASSERT_TRUE(r.is_object());
  EXPECT_NEAR(r["gpu"]["memcpy"]["h2d"]["count_per_step"].get<double>(), 9.0, 1e-9);
  EXPECT_EQ(r["verdict"]["bottleneck"], "cpu_overhead") << r["verdict"].dump() << r["breakdown"].dump();
  EXPECT_EQ(first_recommendation(r), "create-on-device") << r["recommendations"].dump();
  // pin-memory weighs pageable copies by bytes: 28 KiB of 828 KiB per step is not worth pinning.
  EXPECT_LT(r["gpu"]["memcpy"]["h2d"]["pageable_fraction"].get<double>(), 0.1);
  for (const auto& rec : r["recommendations"]) EXPECT_NE(rec["id"], "pin-memory");
}
