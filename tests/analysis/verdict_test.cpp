// Verdict per class on synthetic traces (one 100 us step each unless stated).
#include <gtest/gtest.h>

#include <cmath>
#include <utility>

#include "profile_train/analysis/analyze.h"
#include "report_view.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

using testing::TraceBuilder;
using trace::CopyKind;
using trace::MemoryKind;

std::string verdict(const trace::Trace& t) { return build_report(t)["verdict"]["bottleneck"].get<std::string>(); }

TEST(Verdict, InputPipelineWithGpu) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40)
                     .runtime("cudaLaunchKernel", 40, 1, 1)
                     .kernel("volta_sgemm_128x64_nn", 41, 59, 1)
                     .build();
  const auto r = build_report(t);
  EXPECT_EQ(r["verdict"]["bottleneck"], "input_pipeline");
  EXPECT_GT(r["verdict"]["confidence"].get<double>(), 0.5);
  ASSERT_FALSE(r["verdict"]["evidence"].empty());
  EXPECT_NE(r["verdict"]["evidence"][0].get<std::string>().find("40.0%"), std::string::npos)
      << r["verdict"].dump();
}

TEST(Verdict, InputPipelineWithoutGpu) {
  const auto t = TraceBuilder()
                     .annotation("ProfilerStep#1", 0, 100)
                     .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 70)
                     .cpu_op("aten::mm", 70, 20)
                     .build();
  EXPECT_EQ(verdict(t), "input_pipeline");
}

TEST(Verdict, CpuOnly) {
  const auto t = TraceBuilder()
                     .annotation("ProfilerStep#1", 0, 100)
                     .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 5)
                     .cpu_op("aten::mm", 5, 90)
                     .build();
  EXPECT_EQ(verdict(t), "cpu_only");
}

// Issue 17 item 7: the same CPU-only script at 48.9% and 56.1% data wait got cpu_only and input_pipeline.
// A data wait within the close-call margin of CPU compute is input_pipeline on both sides of 50/50, and the
// verdict names the runner-up.
trace::Trace cpu_run(int64_t wait_us, int64_t compute_us) {
  return TraceBuilder()
      .annotation("ProfilerStep#1", 0, 1000)
      .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, wait_us)
      .cpu_op("aten::mm", wait_us, compute_us)
      .build();
}

TEST(Verdict, CloseCallEitherSideOfTheLineGetsOneVerdictAndNamesTheRunnerUp) {
  for (const auto& [wait, compute] : {std::pair<int64_t, int64_t>{489, 500}, {561, 430}}) {
    const auto v = build_report(cpu_run(wait, compute))["verdict"];
    EXPECT_EQ(v["bottleneck"], "input_pipeline") << v.dump();
    ASSERT_TRUE(v["runner_up"].is_object()) << v.dump();
    EXPECT_EQ(v["runner_up"]["bottleneck"], "cpu_only");
    const bool close = std::abs(wait - compute) < 100;
    EXPECT_EQ(v["close"].get<bool>(), close) << v.dump();
    const std::string summary = v["summary"];
    EXPECT_EQ(summary.find("Close call: input pipeline") != std::string::npos, close) << summary;
  }
  // Well apart: CPU compute wins, no close call, but the runner-up is still named.
  const auto v = build_report(cpu_run(100, 850))["verdict"];
  EXPECT_EQ(v["bottleneck"], "cpu_only");
  EXPECT_FALSE(v["close"].get<bool>());
  EXPECT_EQ(v["runner_up"]["bottleneck"], "input_pipeline");
}

TEST(Verdict, CloseGpuStallsNameTheRunnerUpWithLowerConfidence) {
  // Data wait 30% and exposed H2D copies 25% of the step, on a GPU: a close call between two stalls.
  auto trace = [](double copy_us) {
    return TraceBuilder()
        .device(0)
        .annotation("ProfilerStep#1", 0, 100)
        .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 30)
        .runtime("cudaMemcpyAsync", 30, 1, 1)
        .memcpy(CopyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 31, copy_us, 1 << 20, 1)
        .runtime("cudaLaunchKernel", 31 + copy_us, 1, 2)
        .kernel("volta_sgemm_128x64_nn", 32 + copy_us, 100 - 32 - copy_us, 2)
        .build();
  };
  const auto v = build_report(trace(25))["verdict"];
  EXPECT_EQ(v["bottleneck"], "input_pipeline") << v.dump();
  EXPECT_EQ(v["runner_up"]["bottleneck"], "host_to_device") << v.dump();
  EXPECT_TRUE(v["close"].get<bool>());
  // Copies under their threshold: no close call, and the verdict is surer.
  const auto apart = build_report(trace(14))["verdict"];
  EXPECT_EQ(apart["bottleneck"], "input_pipeline") << apart.dump();
  EXPECT_FALSE(apart["close"].get<bool>()) << apart.dump();
  EXPECT_GT(apart["confidence"].get<double>(), v["confidence"].get<double>());
}

TEST(Verdict, CpuOnlyFromPhaseRangesOfANativeCapture) {
  // An NVTX-only capture of CPU training: phase ranges, no framework operators.
  const auto t = TraceBuilder()
                     .annotation("ProfilerStep#1", 0, 100)
                     .annotation("enumerate(DataLoader)#WorkloadDataLoader.__next__", 0, 5)
                     .annotation("## forward ##", 5, 40)
                     .annotation("## backward ##", 45, 45)
                     .annotation("Optimizer.step#SGD.step", 90, 8)
                     .build();
  const auto r = build_report(t);
  EXPECT_TRUE(r["source"]["has_phase_ranges"].get<bool>());
  EXPECT_FALSE(r["source"]["has_cpu_ops"].get<bool>());
  EXPECT_EQ(r["verdict"]["bottleneck"], "cpu_only") << r["verdict"].dump() << r["source"].dump() << r["breakdown"].dump();
}

TEST(Verdict, UnknownWithoutOpsOrPhaseRanges) {
  const auto t = TraceBuilder().annotation("ProfilerStep#1", 0, 100).build();
  EXPECT_EQ(verdict(t), "unknown");
}

TEST(Verdict, UnknownWhenGpuJobHasNoGpuEvents) {
  // Runtime calls but no GPU activity: a trimmed trace of a GPU job.
  const auto t = TraceBuilder()
                     .annotation("ProfilerStep#1", 0, 100)
                     .cpu_op("aten::mm", 0, 90)
                     .runtime("cudaLaunchKernel", 10, 5, 1)
                     .build();
  const auto r = build_report(t);
  EXPECT_EQ(r["verdict"]["bottleneck"], "unknown");
  EXPECT_NE(r["verdict"]["summary"].get<std::string>().find("no GPU activity"), std::string::npos);
}

TEST(Verdict, GpuCompute) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 2, 1)
                     .kernel("volta_sgemm_128x64_nn", 3, 95, 1)
                     .build();
  EXPECT_EQ(verdict(t), "gpu_compute");
}

TEST(Verdict, GpuMemory) {
  const auto t = TraceBuilder()
                     .device(0, "Test GPU", 80, 1000)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 2, 1)
                     .kernel("volta_sgemm_128x64_nn", 3, 95, 1)
                     .memory_sample(1, 960, 960)
                     .build();
  EXPECT_EQ(verdict(t), "gpu_memory");
}

// The allocator's counters (the shim's facts.gpu.alloc_retries / ooms) are gpu_memory evidence on their own.
TEST(Verdict, GpuMemoryFromAllocatorRetriesAndOoms) {
  auto busy = [] {
    return TraceBuilder()
        .device(0, "Test GPU", 80, 1000)
        .annotation("ProfilerStep#1", 0, 100)
        .runtime("cudaLaunchKernel", 0, 2, 1)
        .kernel("volta_sgemm_128x64_nn", 3, 95, 1)
        .memory_sample(1, 500, 500)
        .build();
  };
  auto t = busy();
  t.facts["gpu"] = {{"alloc_retries", 3}, {"ooms", 0}};
  auto r = build_report(t);
  EXPECT_EQ(r["verdict"]["bottleneck"], "gpu_memory") << r["verdict"].dump();
  EXPECT_EQ(r["gpu"]["memory"]["alloc_retries"], 3);
  t = busy();
  t.facts["gpu"] = {{"alloc_retries", 0}, {"ooms", 1}};
  EXPECT_EQ(verdict(t), "gpu_memory");
  t = busy();
  t.facts["gpu"] = {{"alloc_retries", 0}, {"ooms", 0}};
  EXPECT_EQ(verdict(t), "gpu_compute");
}

TEST(Verdict, CpuOverhead) {
  TraceBuilder b;
  b.device(0).annotation("ProfilerStep#1", 0, 100);
  for (int i = 0; i < 10; ++i)  // 10 x (8 us of CPU op, then a 1 us launch of a 1 us kernel)
    b.cpu_op("aten::add", i * 10, 8).runtime("cudaLaunchKernel", i * 10 + 8, 1, i + 1).kernel("k", i * 10 + 9, 1, i + 1);
  EXPECT_EQ(verdict(b.build()), "cpu_overhead");
}

TEST(Verdict, HostToDevice) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaMemcpyAsync", 0, 41, 1)
                     .memcpy(CopyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 1, 40, 400000, 1)
                     .runtime("cudaLaunchKernel", 41, 1, 2)
                     .kernel("volta_sgemm_128x64_nn", 42, 58, 2)
                     .build();
  EXPECT_EQ(verdict(t), "host_to_device");
}

TEST(Verdict, Communication) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 1, 1)
                     .kernel("volta_sgemm_128x64_nn", 1, 50, 1)
                     .runtime("cudaLaunchKernel", 1, 1, 2)
                     .kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 51, 45, 2, 20)
                     .build();
  EXPECT_EQ(verdict(t), "communication");
}

TEST(Verdict, Synchronization) {
  // The host blocks 50 us in cudaStreamSynchronize; the GPU is idle 60% of the step.
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 1, 1)
                     .kernel("volta_sgemm_128x64_nn", 10, 40, 1)
                     .runtime("cudaStreamSynchronize", 10, 50)
                     .build();
  EXPECT_EQ(verdict(t), "synchronization");
}

TEST(Verdict, UnknownWhenEmpty) { EXPECT_EQ(verdict(TraceBuilder().build()), "unknown"); }

}  // namespace
}  // namespace profile_train::analysis
