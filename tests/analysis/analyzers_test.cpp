// Analyzers on small inline synthetic traces with exact expected values.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "report_view.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

using testing::TraceBuilder;
using trace::CopyKind;
using trace::MemoryKind;
constexpr auto ns = TraceBuilder::ns;

TEST(Intervals, MergeIntersectSubtract) {
  const Intervals m = merge_intervals({{10, 20}, {0, 5}, {15, 30}, {30, 35}, {40, 40}});
  ASSERT_EQ(m.size(), 2u);
  EXPECT_EQ(m[0].start, 0);
  EXPECT_EQ(m[0].end, 5);
  EXPECT_EQ(m[1].start, 10);
  EXPECT_EQ(m[1].end, 35);
  const Intervals i = intersect_intervals(m, {{3, 12}, {20, 50}});
  ASSERT_EQ(i.size(), 3u);
  EXPECT_EQ(total_length(i), 2 + 2 + 15);
  const Intervals s = subtract_intervals({{0, 100}}, {{10, 20}, {30, 40}, {90, 120}});
  ASSERT_EQ(s.size(), 3u);
  EXPECT_EQ(total_length(s), 10 + 10 + 50);
  EXPECT_EQ(total_length(clip_intervals(m, 4, 12)), 1 + 2);
}

// The flat id map behind TraceIndex's lookups, in both layouts: hashed (ids spread wide) and packed into
// pages (ids in runs), and an insert after packing.
TEST(IdMap, HashedPackedAndInsertAfterPack) {
  IdMap<size_t> dense, sparse;
  for (int64_t k = 100; k < 1100; ++k) EXPECT_TRUE(dense.try_emplace(k, static_cast<size_t>(k * 3)).second);
  for (int64_t k = 0; k < 1000; ++k) sparse.try_emplace(k * 1'000'003, static_cast<size_t>(k));
  EXPECT_FALSE(dense.try_emplace(500, 7).second);  // present: the first value stays
  for (IdMap<size_t>* m : {&dense, &sparse}) {
    for (int pass = 0; pass < 2; ++pass) {  // before and after pack()
      EXPECT_EQ(m->size(), 1000u);
      EXPECT_EQ(m->find(-1), nullptr);
      EXPECT_EQ(m->find(99), nullptr);
      EXPECT_EQ(m->find(std::numeric_limits<int64_t>::max()), nullptr);
      m->pack();
    }
  }
  for (int64_t k = 100; k < 1100; ++k) {
    ASSERT_NE(dense.find(k), nullptr);
    EXPECT_EQ(*dense.find(k), size_t(k * 3));
  }
  EXPECT_EQ(dense.find(1100), nullptr);
  for (int64_t k = 0; k < 1000; ++k) {
    ASSERT_NE(sparse.find(k * 1'000'003), nullptr);
    EXPECT_EQ(*sparse.find(k * 1'000'003), size_t(k));
  }
  EXPECT_EQ(sparse.find(1), nullptr);
  EXPECT_TRUE(dense.try_emplace(5'000'000'000, 1).second);  // back to a hash table
  EXPECT_EQ(dense.size(), 1001u);
  EXPECT_EQ(*dense.find(5'000'000'000), 1u);
  EXPECT_EQ(*dense.find(777), 777u * 3);
  EXPECT_EQ(dense.find(99), nullptr);
}

// Ids in runs far apart, each run with gaps (CUPTI correlation ids of a trace joined from several captures): the
// packed pages answer exactly as the hash table did, for every id in and between the runs; ids one per page
// over a wide range stay hashed and answer the same.
TEST(IdMap, RunsWithGapsPackIntoPagesSameAnswers) {
  for (const int64_t gap : {int64_t{1}, int64_t{6}, int64_t{15}, int64_t{4096}}) {
    IdMap<uint32_t> m;
    std::vector<std::pair<int64_t, uint32_t>> stored;
    for (int64_t run = 0; run < 10; ++run)
      for (int64_t j = 0; j < 700; ++j) {
        const int64_t id = 34'417 + run * 10'000'000 + j * gap;
        const auto v = static_cast<uint32_t>(stored.size());
        if (m.try_emplace(id, v).second) stored.push_back({id, v});
      }
    m.pack();
    ASSERT_EQ(m.size(), stored.size()) << gap;
    for (const auto& [id, v] : stored) {
      ASSERT_NE(m.find(id), nullptr) << gap << " " << id;
      EXPECT_EQ(*m.find(id), v);
    }
    for (const auto& [id, v] : stored) {  // neighbours that were not stored
      if (gap > 1) {
        EXPECT_EQ(m.find(id + 1), nullptr) << gap << " " << id;
      }
    }
    EXPECT_EQ(m.find(34'416), nullptr);
    EXPECT_EQ(m.find(34'417 + 10 * 10'000'000), nullptr);
    EXPECT_EQ(m.find(std::numeric_limits<int64_t>::max()), nullptr);
    EXPECT_TRUE(m.try_emplace(1, 99).second);  // an insert after pack() goes back to the hash table
    EXPECT_EQ(*m.find(1), 99u);
    for (const auto& [id, v] : stored) ASSERT_EQ(*m.find(id), v) << gap;
  }
}

// The map against std::unordered_map on ids drawn as traces give them and as hostile ones could: counting up,
// in runs with gaps, descending, shuffled runs, spread over the whole range, a mix: every insert answers alike
// (the value kept, new or not), every id and its neighbours are found alike, before and after pack(), whichever
// layout the map ends in.
TEST(IdMap, SameAnswersAsAHashMapForEveryIdShape) {
  std::mt19937_64 rng(42);
  const std::vector<std::string> shapes = {"ascending", "runs", "descending", "shuffled_runs", "spread", "mixed"};
  for (const std::string& shape : shapes) {
    std::vector<int64_t> ids;
    for (int i = 0; i < 20000; ++i) {
      int64_t id = 0;
      if (shape == "ascending") id = 1000 + i;
      else if (shape == "runs") id = (i / 2000) * int64_t{10'000'000} + (i % 2000) * 6;
      else if (shape == "descending") id = 5'000'000 - int64_t{i} * 3;
      else if (shape == "shuffled_runs") id = static_cast<int64_t>(rng() % 8) * 1'000'000 + static_cast<int64_t>(rng() % 30000);
      else if (shape == "spread") id = static_cast<int64_t>(rng() >> 2);
      else id = (i % 3 == 0) ? static_cast<int64_t>(rng() >> 2) : 77 + i;
      ids.push_back(id);
      if (i % 7 == 0) ids.push_back(id);  // repeated ids: the first value stays
    }
    IdMap<uint32_t> m;
    std::unordered_map<int64_t, uint32_t> ref;
    for (size_t i = 0; i < ids.size(); ++i) {
      const auto [v, added] = m.try_emplace(ids[i], static_cast<uint32_t>(i));
      const auto [it, ref_added] = ref.try_emplace(ids[i], static_cast<uint32_t>(i));
      ASSERT_EQ(added, ref_added) << shape << " " << ids[i];
      ASSERT_EQ(*v, it->second) << shape << " " << ids[i];
    }
    for (int pass = 0; pass < 2; ++pass) {
      ASSERT_EQ(m.size(), ref.size()) << shape;
      for (const int64_t id : ids) {
        for (const int64_t probe : {id - 1, id, id + 1}) {
          const auto it = ref.find(probe);
          const uint32_t* got = m.find(probe);
          if (it == ref.end()) {
            EXPECT_EQ(got, nullptr) << shape << " " << probe;
          } else {
            ASSERT_NE(got, nullptr) << shape << " " << probe;
            EXPECT_EQ(*got, it->second) << shape << " " << probe;
          }
        }
      }
      EXPECT_EQ(m.find(-1), nullptr);
      EXPECT_EQ(m.find(std::numeric_limits<int64_t>::max()), nullptr);
      m.pack();
    }
  }
}

TEST(Classify, RuntimeNamesAndKernels) {
  EXPECT_EQ(runtime_base_name("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(runtime_base_name("cudaStreamSynchronize_v3020"), "cudaStreamSynchronize");
  EXPECT_EQ(runtime_base_name("cudaMemcpy_vX"), "cudaMemcpy_vX");
  EXPECT_TRUE(is_launch_call("cudaLaunchKernel_v7000"));
  EXPECT_TRUE(is_launch_call("hipExtModuleLaunchKernel"));
  EXPECT_FALSE(is_launch_call("cudaMemcpyAsync"));
  EXPECT_TRUE(is_sync_call("cudaDeviceSynchronize"));
  EXPECT_TRUE(is_sync_call("cudaMemcpy"));
  EXPECT_FALSE(is_sync_call("cudaMemcpyAsync"));
  EXPECT_TRUE(is_communication_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"));
  EXPECT_TRUE(is_communication_kernel("ncclDevKernel_Generic"));
  EXPECT_FALSE(is_communication_kernel("volta_sgemm_128x64_nn"));
  auto tc = [](const char* n) { return classify_kernel_name(n).matrix_units; };
  auto fp32 = [](const char* n) { return classify_kernel_name(n).fp32_matrix(); };
  auto precision = [](const char* n) { return classify_kernel_name(n).precision; };
  auto kind = [](const char* n) { return classify_kernel_name(n).kind; };
  EXPECT_TRUE(tc("volta_h884gemm_64x64_ldg8_nn"));
  EXPECT_TRUE(tc("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn"));
  EXPECT_TRUE(tc("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1"));
  EXPECT_TRUE(tc("void cutlass::Kernel<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>"));
  EXPECT_FALSE(tc("volta_sgemm_128x64_nn"));
  EXPECT_TRUE(fp32("volta_sgemm_128x64_nn"));
  EXPECT_TRUE(fp32("void cudnn::detail::dgrad_engine<float, 512, 6, 5, 3, 3, 3, false>(int)"));
  EXPECT_TRUE(fp32("void implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, false>()"));
  EXPECT_FALSE(fp32("volta_h884gemm_64x64_ldg8_nn"));
  EXPECT_FALSE(fp32("void at::native::vectorized_elementwise_kernel<4, float>"));
  EXPECT_EQ(precision("volta_dgemm_128x64_nn"), Precision::kFp64);
  EXPECT_EQ(precision("void at::native::elementwise_kernel<double>"), Precision::kFp64);
  EXPECT_FALSE(fp32("volta_dgemm_128x64_nn"));
  EXPECT_EQ(kind("void cudnn::detail::wgrad_alg0_engine<float, 128, 6, 7, 3, 3, 5, false, 512>"), KernelKind::kConv);
  EXPECT_EQ(kind("ncclKernel_AllReduce"), KernelKind::kCommunication);
  EXPECT_EQ(kind("volta_sgemm_128x64_nn"), KernelKind::kGemm);
}

// One 100 us step with one of each role; expected carving worked out by hand:
//   kernel [10,40) = 30; memcpy [30,50) -> only [40,50) = 10; runtime [0,20) -> [0,10) = 10;
//   data loading [50,80) = 30; cpu op [85,95) = 10; other = [80,85) + [95,100) = 10.
trace::Trace carving_trace() {
  return TraceBuilder()
      .device(0)
      .annotation("ProfilerStep#1", 0, 100)
      .runtime("cudaLaunchKernel", 0, 20, 1)
      .kernel("volta_sgemm_128x64_nn", 10, 30, 1)
      .runtime("cudaMemcpyAsync", 5, 5, 2)
      .memcpy(CopyKind::kHtoD, MemoryKind::kPageable, MemoryKind::kDevice, 30, 20, 2000, 2)
      .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 50, 30)
      .cpu_op("aten::add", 85, 10)
      .python("train.py(10): step", 80, 20)  // python frames are not CPU Exec in tb_plugin
      .gpu_annotation("ProfilerStep#1", 0, 100)  // must not become a step
      .build();
}

TEST(Breakdown, PriorityCarvingExact) {
  const auto t = carving_trace();
  const auto idx = build_index(t);
  const auto si = detect_steps(t, idx);
  ASSERT_EQ(si.source, StepSource::kProfilerStep);
  ASSERT_EQ(si.steps.size(), 1u);
  EXPECT_EQ(si.main_tid, TraceBuilder::kTid);
  const auto roles = build_role_ranges(t, idx);
  const auto b = carve_step(roles, si.steps[0].start, si.steps[0].end);
  EXPECT_EQ(b.total_ns, ns(100));
  EXPECT_EQ(b[Role::kKernel], ns(30));
  EXPECT_EQ(b[Role::kMemcpy], ns(10));
  EXPECT_EQ(b[Role::kMemset], 0);
  EXPECT_EQ(b[Role::kCommunication], 0);
  EXPECT_EQ(b[Role::kRuntime], ns(10));
  EXPECT_EQ(b[Role::kDataLoading], ns(30));
  EXPECT_EQ(b[Role::kCpu], ns(10));
  EXPECT_EQ(b[Role::kOther], ns(10));

  const auto r = build_report(t);
  EXPECT_DOUBLE_EQ(r["breakdown"]["kernel"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(r["breakdown"]["data_loading"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(r["breakdown"]["other"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(r["breakdown_ms"]["kernel"].get<double>(), 0.03);
  EXPECT_DOUBLE_EQ(r["gpu"]["utilization"].get<double>(), 0.3);
  EXPECT_DOUBLE_EQ(r["gpu"]["busy_fraction"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(r["steps"]["mean_ms"].get<double>(), 0.1);
  EXPECT_EQ(r["source"]["step_detection"], "profiler_step");
  // H2D: 2000 bytes in 20 us = 0.1 GB/s, all pageable.
  const auto& h2d = r["gpu"]["memcpy"]["h2d"];
  EXPECT_DOUBLE_EQ(h2d["count_per_step"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(h2d["bytes_per_step"].get<double>(), 2000.0);
  EXPECT_DOUBLE_EQ(h2d["bandwidth_gbps"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(h2d["pageable_fraction"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(h2d["time_ms_per_step"].get<double>(), 0.02);
  EXPECT_TRUE(r["gpu"]["memcpy"]["d2h"]["bandwidth_gbps"].is_null());
  // Launch statistics: one launch of 20 us, kernel starts 10 us after the call.
  EXPECT_DOUBLE_EQ(r["host"]["launches_per_step"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r["host"]["launch_mean_us"].get<double>(), 20.0);
  EXPECT_DOUBLE_EQ(r["host"]["launch_delay_median_us"].get<double>(), 10.0);
  // All FP32 GEMM, no tensor cores.
  EXPECT_DOUBLE_EQ(r["gpu"]["fp32_eligible_kernel_share"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(r["gpu"]["tensor_core_kernel_share"].get<double>(), 0.0);
}

TEST(Breakdown, CommunicationSplitFromKernelAndExposed) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 1, 1)
                     .kernel("volta_sgemm_128x64_nn", 10, 40, 1)
                     .runtime("cudaLaunchKernel", 1, 1, 2)
                     .kernel("ncclKernel_AllReduce_RING_LL_Sum_float", 30, 40, 2, 20)
                     .build();
  const auto r = build_report(t);
  EXPECT_DOUBLE_EQ(r["breakdown"]["kernel"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(r["breakdown"]["communication"].get<double>(), 0.2);  // [50,70) only
  EXPECT_DOUBLE_EQ(r["communication"]["kernel_fraction"].get<double>(), 0.4);
  EXPECT_DOUBLE_EQ(r["communication"]["exposed_fraction"].get<double>(), 0.2);
  EXPECT_DOUBLE_EQ(r["gpu"]["utilization"].get<double>(), 0.6);  // union of all kernels on the device
}

TEST(Steps, ExtendedToDeviceWorkAndChained) {
  // Step 1's last kernel runs past the host span: the step ends at 150 and step 2 starts there.
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 90, 5, 1)
                     .kernel("k", 95, 55, 1)
                     .annotation("ProfilerStep#2", 100, 100)
                     .runtime("cudaLaunchKernel", 160, 5, 2)
                     .kernel("k", 170, 10, 2)
                     .build();
  const auto idx = build_index(t);
  const auto si = detect_steps(t, idx);
  ASSERT_EQ(si.steps.size(), 2u);
  EXPECT_EQ(si.steps[0].start, 0);
  EXPECT_EQ(si.steps[0].end, ns(150));
  EXPECT_EQ(si.steps[1].start, ns(150));
  EXPECT_EQ(si.steps[1].end, ns(200));
  EXPECT_EQ(si.steps[0].device_activities, 1);
}

TEST(Steps, TailStepWithoutGpuWorkDropped) {
  TraceBuilder b;
  b.device(0);
  for (int i = 0; i < 3; ++i) {
    b.annotation("ProfilerStep#" + std::to_string(i), i * 100, 100);
    if (i < 2) b.runtime("cudaLaunchKernel", i * 100 + 10, 2, i + 1).kernel("k", i * 100 + 20, 10, i + 1);
  }
  const auto t = b.build();
  const auto si = detect_steps(t, build_index(t));
  EXPECT_EQ(si.steps.size(), 2u);
  EXPECT_EQ(si.dropped_tail_steps, 1);
}

TEST(Steps, FallbackOptimizer) {
  TraceBuilder b;
  for (int i = 0; i < 4; ++i) b.annotation("Optimizer.step#SGD.step", i * 100 + 80, 10).cpu_op("aten::mm", i * 100, 70);
  const auto t = b.build();
  const auto si = detect_steps(t, build_index(t));
  EXPECT_EQ(si.source, StepSource::kOptimizerAnnotation);
  ASSERT_EQ(si.steps.size(), 3u);
  EXPECT_EQ(si.steps[0].start, ns(90));
  EXPECT_EQ(si.steps[0].end, ns(190));
}

TEST(Steps, FallbackDataLoaderThenWholeTrace) {
  TraceBuilder b;
  for (int i = 0; i < 3; ++i)
    b.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", i * 50, 5).cpu_op("aten::mm", i * 50 + 10, 30);
  const auto t = b.build();
  const auto si = detect_steps(t, build_index(t));
  EXPECT_EQ(si.source, StepSource::kDataLoaderAnnotation);
  ASSERT_EQ(si.steps.size(), 2u);
  EXPECT_EQ(si.steps[1].start, ns(50));
  EXPECT_EQ(si.steps[1].end, ns(100));

  const auto w = TraceBuilder().cpu_op("aten::mm", 10, 30).cpu_op("aten::add", 50, 20).gpu_annotation("ProfilerStep#3", 0, 5).build();
  const auto sw = detect_steps(w, build_index(w));
  EXPECT_EQ(sw.source, StepSource::kWholeTrace);
  ASSERT_EQ(sw.steps.size(), 1u);
  EXPECT_EQ(sw.steps[0].start, ns(10));
  EXPECT_EQ(sw.steps[0].end, ns(70));
}

TEST(Steps, NativeCaptureUsesNvtxSource) {
  const auto t = TraceBuilder().format("native").annotation("ProfilerStep#0", 0, 10).cpu_op("aten::mm", 1, 5).build();
  EXPECT_EQ(detect_steps(t, build_index(t)).source, StepSource::kNvtxStep);
}

TEST(Idle, HtaClasses) {
  // k1 [0,10); k2 launched at 5 (before k1 ended), gap 5 us -> kernel_wait;
  // k3 launched at 50 (after k2 ended at 20) -> host_wait 80; k4 launched at 60, gap 90 >= 30 -> other.
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 300)
                     .runtime("cudaLaunchKernel", 0, 1, 1).kernel("k1", 0, 10, 1)
                     .runtime("cudaLaunchKernel", 5, 1, 2).kernel("k2", 15, 5, 2)
                     .runtime("cudaLaunchKernel", 50, 1, 3).kernel("k3", 100, 10, 3)
                     .runtime("cudaLaunchKernel", 60, 1, 4).kernel("k4", 200, 10, 4)
                     .build();
  const auto idx = build_index(t);
  const auto si = detect_steps(t, idx);
  const auto idle = idle_breakdown(t, idx, 0, si.steps);
  EXPECT_EQ(idle.kernel_wait, ns(5));
  EXPECT_EQ(idle.host_wait, ns(80));
  EXPECT_EQ(idle.other, ns(90));
  const auto r = build_report(t);
  EXPECT_NEAR(r["gpu"]["idle"]["host_wait"].get<double>(), 80.0 / 175.0, 1e-6);
  EXPECT_NEAR(r["gpu"]["idle"]["other"].get<double>(), 90.0 / 175.0, 1e-6);
}

TEST(GpuMetrics, SmEfficiencyOccupancyMemory) {
  // Two kernels in a 100 us step: 40 us at 0.5 blocks/SM and 20 us with 160 blocks on 80 SMs (2 -> capped at 1).
  const auto t = TraceBuilder()
                     .device(0, "Test GPU", 80, 1000)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 1, 1).kernel("a", 10, 40, 1).launch_config(40, 256, 0.5f, 50.f)
                     .runtime("cudaLaunchKernel", 1, 1, 2).kernel("b", 60, 20, 2).launch_config(160, 256, -1.f, 20.f)
                     .memory_sample(5, 400, 400).memory_sample(6, 500, 900).memory_sample(7, -500, 400)
                     .build();
  const auto r = build_report(t);
  EXPECT_DOUBLE_EQ(r["gpu"]["sm_efficiency"].get<double>(), (40 * 0.5 + 20 * 1.0) / 100.0);
  EXPECT_DOUBLE_EQ(r["gpu"]["achieved_occupancy"].get<double>(), (40 * 0.5 + 20 * 0.2) / 60.0);
  EXPECT_EQ(r["gpu"]["memory"]["peak_allocated_bytes"].get<int64_t>(), 900);
  EXPECT_DOUBLE_EQ(r["gpu"]["memory"]["peak_fraction"].get<double>(), 0.9);
  EXPECT_EQ(r["device"]["compute_capability"], "8.0");
}

TEST(GpuMetrics, OptimizerKernelsAndTopKernels) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 1, 1, 1).kernel("volta_h884gemm_64x64_ldg8_nn", 5, 30, 1)
                     .annotation("Optimizer.step#AdamW.step", 50, 40)
                     .runtime("cudaLaunchKernel", 55, 1, 2).kernel("multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata<4>, FusedAdamMathFunctor<float, 4>>", 60, 5, 2)
                     .runtime("cudaLaunchKernel", 57, 1, 3).kernel("multi_tensor_apply_kernel<FusedOptimizerTensorListMetadata<4>, FusedAdamMathFunctor<float, 4>>", 66, 5, 3)
                     .runtime("cudaMemsetAsync", 80, 1, 4).memset(82, 1, 64, 4)
                     .build();
  const auto r = build_report(t);
  EXPECT_DOUBLE_EQ(r["gpu"]["optimizer_kernels_per_step"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["gpu"]["optimizer_kernel_share"].get<double>(), 0.25);
  EXPECT_DOUBLE_EQ(r["gpu"]["tensor_core_kernel_share"].get<double>(), 0.75);
  EXPECT_DOUBLE_EQ(r["gpu"]["memset_per_step"].get<double>(), 1.0);
  ASSERT_EQ(r["gpu"]["top_kernels"].size(), 2u);
  EXPECT_EQ(r["gpu"]["top_kernels"][0]["name"], "volta_h884gemm_64x64_ldg8_nn");
  EXPECT_EQ(r["gpu"]["top_kernels"][0]["tensor_core"], true);
  EXPECT_EQ(r["gpu"]["top_kernels"][1]["count"], 2);
  EXPECT_EQ(r["gpu"]["top_kernels"][1]["category"], "optimizer");
  EXPECT_EQ(r["facts"]["optimizer"]["class"], "AdamW");
}

TEST(Host, SyncCallsAndOutliers) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 200)
                     .runtime("cudaLaunchKernel", 0, 1, 1).kernel("k", 2, 50, 1)
                     .runtime("cudaStreamSynchronize_v3020", 2, 60)
                     .runtime("cudaDeviceSynchronize", 100, 10)
                     .build();
  const auto r = build_report(t);
  EXPECT_DOUBLE_EQ(r["host"]["sync"]["count_per_step"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(r["host"]["sync"]["time_ms_per_step"].get<double>(), 0.07);
  EXPECT_DOUBLE_EQ(r["host"]["sync"]["fraction"].get<double>(), 0.35);
  EXPECT_DOUBLE_EQ(r["host"]["runtime_outliers"].get<double>(), 1.0);
}

TEST(Facts, InferredAndRecordedWins) {
  const auto t = TraceBuilder()
                     .annotation("ProfilerStep#1", 0, 100)
                     .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 10)
                     .annotation("Optimizer.step#SGD.step", 80, 10)
                     .cpu_op("aten::cudnn_convolution", 20, 10)
                     .fact("optimizer", "class", "Adam")
                     .build();
  const auto r = build_report(t);
  EXPECT_EQ(r["facts"]["dataloader"]["num_workers"], 0);
  EXPECT_EQ(r["facts"]["optimizer"]["class"], "Adam");  // recorded wins
  EXPECT_EQ(r["facts"]["model"]["has_conv"], true);
  const auto& inf = r["facts"]["inferred"];
  EXPECT_NE(std::find(inf.begin(), inf.end(), "dataloader.num_workers"), inf.end());
  EXPECT_EQ(std::find(inf.begin(), inf.end(), "optimizer.class"), inf.end());

  const auto m = TraceBuilder().annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", 0, 10).build();
  const auto rm = build_report(m);
  EXPECT_TRUE(rm["facts"]["dataloader"]["num_workers"].is_null());
  EXPECT_EQ(rm["facts"]["dataloader"]["multiprocess"], true);
}

TEST(Report, AllContractKeysAndDeterministic) {
  const auto t = carving_trace();
  const auto a = build_report(t).dump(2);
  const auto b = build_report(t).dump(2);
  EXPECT_EQ(a, b);
  const auto r = build_report(t);
  for (const char* k : {"schema_version", "tool", "source", "device", "steps", "breakdown", "breakdown_ms", "gpu",
                        "host", "communication", "verdict", "recommendations", "facts", "data_quality"})
    EXPECT_TRUE(r.contains(k)) << k;
  for (const char* k : {"utilization", "sm_efficiency", "achieved_occupancy", "busy_fraction", "kernels_per_step",
                        "kernel_median_us", "short_kernel_fraction", "tensor_core_kernel_share",
                        "fp32_eligible_kernel_share", "fp64_kernel_share", "conv_kernel_share",
                        "optimizer_kernel_share", "optimizer_kernels_per_step", "memset_per_step", "idle", "memcpy",
                        "memory", "top_kernels"})
    EXPECT_TRUE(r["gpu"].contains(k)) << k;
  double sum = 0;
  for (const auto& [k, v] : r["breakdown"].items()) sum += v.get<double>();
  EXPECT_NEAR(sum, 1.0, 1e-9);
}

TEST(Report, UnmatchedCorrelationsCounted) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 100)
                     .runtime("cudaLaunchKernel", 0, 1, 1).kernel("k", 2, 5, 1)
                     .kernel("orphan", 20, 5, 99)                // no runtime call
                     .runtime("cudaLaunchKernel", 30, 1, 42)     // no GPU activity
                     .build();
  const auto r = build_report(t);
  EXPECT_EQ(r["data_quality"]["unmatched_correlations"], 2);
}

TEST(Report, CpuOnlyAndEmptySayWhatIsMissing) {
  const auto t = TraceBuilder().annotation("ProfilerStep#1", 0, 100).cpu_op("aten::mm", 0, 90).build();
  const auto r = build_report(t);
  const auto& miss = r["source"]["missing"];
  EXPECT_NE(std::find(miss.begin(), miss.end(), "gpu_activity"), miss.end());
  EXPECT_NE(std::find(miss.begin(), miss.end(), "deviceProperties"), miss.end());
  EXPECT_TRUE(r["gpu"]["utilization"].is_null());
  EXPECT_TRUE(r["device"].is_null());

  const auto e = build_report(TraceBuilder().build());
  EXPECT_EQ(e["steps"]["count"], 0);
  EXPECT_EQ(e["verdict"]["bottleneck"], "unknown");
  EXPECT_TRUE(e["breakdown"]["kernel"].is_null());
}

TEST(Steps, BoundedSelectionKeepsFirstLastAndSlowest) {
  std::vector<double> d(1000);
  for (size_t i = 0; i < d.size(); ++i) d[i] = 1.0 + 0.001 * double(i % 10);
  d[500] = 9.0;
  d[700] = 8.0;
  const auto kept = bounded_step_selection(d, 2);
  EXPECT_EQ(kept, (std::vector<size_t>{0, 1, 500, 700, 998, 999}));
  EXPECT_EQ(bounded_step_selection(std::vector<double>(6, 1.0), 2).size(), 6u);  // <= 3 x keep: every step
  const auto h = step_histogram(d, 4);
  ASSERT_TRUE(h.has_value());
  EXPECT_EQ(h->counts, (std::vector<int64_t>{998, 0, 0, 2}));
  EXPECT_DOUBLE_EQ(h->min_ms, 1.0);
  EXPECT_DOUBLE_EQ(h->max_ms, 9.0);
  EXPECT_EQ(step_histogram(std::vector<double>(3, 2.0), 4)->counts, (std::vector<int64_t>{3, 0, 0, 0}));
  EXPECT_FALSE(step_histogram({}, 4).has_value());
}

TEST(GpuMetrics, MemoryDeltasThatOverflowGiveAnUnknownPeakNotUndefinedBehaviour) {
  // Deltas near INT64_MAX (a damaged trace) without "Total Allocated": the running sum would overflow.
  const int64_t huge = std::numeric_limits<int64_t>::max() - 10;
  const auto t = TraceBuilder()
                     .device(0, "Test GPU", 80, 1000)
                     .annotation("ProfilerStep#1", 0, 100)
                     .memory_sample(5, huge, -1).memory_sample(6, huge, -1).memory_sample(7, -5, -1)
                     .build();
  const auto r = build_report(t);
  EXPECT_TRUE(r["gpu"]["memory"]["peak_allocated_bytes"].is_null()) << r["gpu"]["memory"].dump();
  const auto& missing = r["source"]["missing"];
  EXPECT_NE(std::find(missing.begin(), missing.end(), "memory_sum_overflow"), missing.end()) << missing.dump();
}

}  // namespace
}  // namespace profile_train::analysis
