// The terminal summary (src/report/text_summary.cpp): verdict first, figures, colors only on request.
#include <gtest/gtest.h>

#include <sstream>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "profile_train/report/writers.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

TEST(TextSummary, VerdictFirstAndColorOnlyWhenAsked) {
  auto r = build_report(testing::TraceBuilder()
                            .device(0)
                            .annotation("ProfilerStep#1", 0, 100)
                            .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40)
                            .runtime("cudaLaunchKernel", 40, 1, 1)
                            .kernel("volta_sgemm_128x64_nn", 41, 59, 1)
                            .build());
  r["recommendations"] = nlohmann::json::array({{{"id", "dataloader-workers"}, {"title", "Use workers"}, {"tier", 1},
                                                 {"estimated_speedup_max", 1.67}, {"evidence", {"data loading 40%"}}}});
  std::ostringstream plain, color;
  report::write_text_summary(r, plain, {});
  report::write_text_summary(r, color, {.color = true});
  const std::string p = plain.str();
  EXPECT_EQ(p.rfind("VERDICT  input_pipeline", 0), 0u) << p;
  EXPECT_EQ(p.find('\033'), std::string::npos);
  EXPECT_NE(color.str().find("\033["), std::string::npos);
  EXPECT_NE(p.find("data_loading     40.0%"), std::string::npos) << p;
  EXPECT_NE(p.find("[dataloader-workers] Use workers  (up to 1.67x)"), std::string::npos) << p;
  EXPECT_NE(p.find("Missing: "), std::string::npos) << p;  // no occupancy / memory samples in this trace
}

// The plan comes right under the verdict; minor fixes fold into one line and notes follow; checks say so.
TEST(TextSummary, PlanFirstThenRecommendationsWithMinorFoldedAndNotesLast) {
  auto r = build_report(testing::TraceBuilder()
                            .device(0)
                            .annotation("ProfilerStep#1", 0, 100)
                            .runtime("cudaLaunchKernel", 1, 1, 1)
                            .kernel("volta_sgemm_128x64_nn", 2, 95, 1)
                            .build());
  using nlohmann::json;
  r["recommendations"] = json::array(
      {{{"id", "amp"}, {"title", "Use AMP"}, {"group", "primary"}, {"evidence_level", "measured"},
        {"estimated_speedup_max", 2.5}, {"evidence", {"FP32 GEMMs 95%"}}},
       {{"id", "cudnn-benchmark"}, {"title", "Benchmark"}, {"group", "primary"}, {"evidence_level", "check"},
        {"check_note", "flag not recorded"}, {"estimated_speedup_max", 1.1}, {"evidence", {"convs"}}},
       {{"id", "pin-memory"}, {"title", "Pin"}, {"group", "minor"}, {"evidence_level", "measured"},
        {"estimated_speedup_max", 1.01}, {"evidence", {"copies"}}},
       {{"id", "ddp"}, {"title", "DDP"}, {"group", "note"}, {"evidence_level", "note"},
        {"check_note", "GPUs in the device list"}, {"estimated_speedup_max", 4.0}, {"evidence", {"4 GPUs"}}}});
  r["plan"] = {{"bottleneck", "gpu_compute"},
               {"steps", json::array({{{"id", "amp"}, {"title", "Use AMP"}, {"speedup_max_alone", 2.5},
                                        {"cumulative_speedup_max", 2.5}}})},
               {"combined_speedup_max", 2.5},
               {"no_fix_reason", nullptr}};
  std::ostringstream out;
  report::write_text_summary(r, out, {});
  const std::string p = out.str();
  const auto plan = p.find("PLAN  1 step(s), together up to 2.50x faster step");
  ASSERT_NE(plan, std::string::npos) << p;
  EXPECT_LT(plan, p.find("Step      ")) << "the plan comes before the figures";
  EXPECT_GT(plan, p.find("VERDICT"));
  EXPECT_NE(p.find("1. [amp] Use AMP  (up to 2.50x)"), std::string::npos) << p;
  EXPECT_NE(p.find("2. [cudnn-benchmark] Benchmark  (up to 1.10x)  CHECK"), std::string::npos) << p;
  EXPECT_NE(p.find("check: flag not recorded"), std::string::npos) << p;
  EXPECT_NE(p.find("minor (each under 3% of the step): pin-memory 1.01x"), std::string::npos) << p;
  EXPECT_EQ(p.find("3. [pin-memory]"), std::string::npos) << "minor fixes are not numbered with the others";
  EXPECT_GT(p.find("note [ddp] GPUs in the device list"), p.find("minor (each")) << p;
  // No catalogued fix: the reason is printed instead of a plan.
  r["plan"]["steps"] = json::array();
  r["plan"]["no_fix_reason"] = "No catalogued fix addresses gpu_compute";
  std::ostringstream none;
  report::write_text_summary(r, none, {});
  EXPECT_NE(none.str().find("No fix for the bottleneck: No catalogued fix addresses gpu_compute"), std::string::npos)
      << none.str();
}

TEST(Classify, AllocatorAndMemcpyCallsCudaAndHip) {
  for (const char* n : {"cudaMalloc", "cudaFree_v3020", "cudaMallocAsync", "cuMemAlloc_v2", "cuMemFree_v2",
                        "hipMalloc", "hipFree", "hipMallocAsync", "hipHostMalloc", "cudaHostAlloc"})
    EXPECT_TRUE(is_allocator_call(n)) << n;
  for (const char* n : {"cudaLaunchKernel", "cudaMemcpyAsync", "hipMemset", "cudaMemsetAsync", "cudaMallocArrayX"})
    EXPECT_FALSE(is_allocator_call(n)) << n;
  for (const char* n : {"cudaMemcpy", "cudaMemcpyAsync_v3020", "cuMemcpyHtoDAsync_v2", "hipMemcpyAsync"})
    EXPECT_TRUE(is_memcpy_call(n)) << n;
  EXPECT_FALSE(is_memcpy_call("cudaMemsetAsync"));
  EXPECT_TRUE(is_tf32_kernel("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw"));
  EXPECT_TRUE(is_tf32_kernel("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"));
  EXPECT_FALSE(is_tf32_kernel("volta_sgemm_128x64_nn"));
  EXPECT_FALSE(is_tf32_kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn"));
  EXPECT_FALSE(is_tf32_kernel("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn"));
  EXPECT_TRUE(is_tf32_kernel("ampere_tf32_s1688gemm_tf32_128x128_ldg8_stages_32x3_nn"));
}

}  // namespace
}  // namespace profile_train::analysis
