// The terminal summary (src/report/text_summary.cpp): verdict first, figures, colors only on request.
#include <gtest/gtest.h>

#include <sstream>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "profile_train/report/writers.h"
#include "trace_builder.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types
namespace {

Recommendation rec(const char* id, const char* title, const char* group, const char* level, double speedup,
                   const char* evidence, const char* check_note = nullptr) {
  Recommendation r;
  r.id = id;
  r.title = title;
  r.group = group;
  r.evidence_level = level;
  r.estimated_speedup_max = speedup;
  r.removable_share = 1.0 - 1.0 / speedup;  // a known bound (an unknown one prints "bound unknown")
  r.evidence = {evidence};
  if (check_note) r.check_note = check_note;
  return r;
}

TEST(TextSummary, VerdictFirstAndColorOnlyWhenAsked) {
  auto r = build_typed_report(testing::TraceBuilder()
                            .device(0)
                            .annotation("ProfilerStep#1", 0, 100)
                            .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 40)
                            .runtime("cudaLaunchKernel", 40, 1, 1)
                            .kernel("volta_sgemm_128x64_nn", 41, 59, 1)
                            .build());
  r.recommendations = {rec("dataloader-workers", "Use workers", "primary", "measured", 1.67, "data loading 40%")};
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
  auto r = build_typed_report(testing::TraceBuilder()
                            .device(0)
                            .annotation("ProfilerStep#1", 0, 100)
                            .runtime("cudaLaunchKernel", 1, 1, 1)
                            .kernel("volta_sgemm_128x64_nn", 2, 95, 1)
                            .build());
  r.recommendations = {rec("amp", "Use AMP", "primary", "measured", 2.5, "FP32 GEMMs 95%"),
                       rec("cudnn-benchmark", "Benchmark", "primary", "check", 1.1, "convs", "flag not recorded"),
                       rec("pin-memory", "Pin", "minor", "measured", 1.01, "copies"),
                       rec("ddp", "DDP", "note", "note", 4.0, "4 GPUs", "GPUs in the device list")};
  Plan& fixes = r.plan.emplace();
  fixes.bottleneck = Bottleneck::kGpuCompute;
  fixes.steps = {PlanStep{"amp", "Use AMP", 0.6, 0.6, 2.5, 2.5, "measured", std::nullopt, false}};
  fixes.combined_speedup_max = 2.5;
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
  // A gain that cannot be bounded says so, never "up to 1.00x".
  r.recommendations[1].removable_share.reset();
  r.recommendations[1].estimated_speedup_max = 1.0;
  std::ostringstream unknown;
  report::write_text_summary(r, unknown, {});
  EXPECT_NE(unknown.str().find("2. [cudnn-benchmark] Benchmark  (bound unknown)  CHECK"), std::string::npos) << unknown.str();
  EXPECT_EQ(unknown.str().find("(up to 1.00x)"), std::string::npos) << unknown.str();
  // No catalogued fix: the reason is printed instead of a plan.
  fixes.steps.clear();
  fixes.no_fix_reason = "No catalogued fix addresses gpu_compute";
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
  auto tf32 = [](const char* n) { return classify_kernel_name(n).precision == Precision::kTf32; };
  EXPECT_TRUE(tf32("sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nchw"));
  EXPECT_TRUE(tf32("cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4"));
  EXPECT_FALSE(tf32("volta_sgemm_128x64_nn"));
  EXPECT_FALSE(tf32("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn"));
  EXPECT_FALSE(tf32("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_tn"));
  EXPECT_TRUE(tf32("ampere_tf32_s1688gemm_tf32_128x128_ldg8_stages_32x3_nn"));
}

// `run`'s command and how it ended: named in the summary for a clean exit as for a failure; never for a
// report of `analyze`.
TEST(TextSummary, ARunNamesItsCommandAndHowItEnded) {
  Report r;
  RunInfo& run = r.source.run.emplace();
  run.command = {"python", "train.py", "--lr", "0.1 x"};
  run.exit_code = 0;
  std::ostringstream ok;
  report::write_text_summary(r, ok, {});
  EXPECT_NE(ok.str().find("Command   python train.py --lr '0.1 x'  (exited with code 0)"), std::string::npos)
      << ok.str();

  run.exit_code.reset();
  run.signal = "SIGSEGV";
  run.crash = "the command crashed (SIGSEGV); the report covers the capture up to the crash";
  std::ostringstream crashed;
  report::write_text_summary(r, crashed, {});
  EXPECT_NE(crashed.str().find("(crashed (SIGSEGV))"), std::string::npos) << crashed.str();

  run.signal.reset();
  run.crash.reset();
  run.exit_code = 1;
  run.interrupted = true;
  std::ostringstream stopped;
  report::write_text_summary(r, stopped, {});
  EXPECT_NE(stopped.str().find("(stopped by SIGINT/SIGTERM to profile-train; it exited with code 1)"),
            std::string::npos)
      << stopped.str();

  std::ostringstream none;
  report::write_text_summary(Report{}, none, {});
  EXPECT_EQ(none.str().find("Command"), std::string::npos) << none.str();
}

}  // namespace
}  // namespace profile_train::analysis
