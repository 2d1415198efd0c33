// Issue 39: the compiled program (report.compilation) and the advice that reads it, on synthetic traces whose
// nesting is the one torch 2.11 records (a graph break's resume function is a Torch-Compiled Region inside its
// caller's), on stripped variants (no region ranges: breaks not told, compiled still seen) and on the shared
// corpus (Inductor kernels, CUDA-graph replays, compiled and eager traces). Every expectation fails with its
// mechanism removed: the nesting count, the launch-inside-a-graph join, the replay join, the rules' conditions.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/compilation.h"
#include "profile_train/rules/engine.h"
#include "profile_train/trace/importer.h"
#include "report_view.h"
#include "test_util.h"
#include "trace_builder.h"

namespace profile_train::rules {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using profile_train::testing::TraceBuilder;

json analyzed(const trace::Trace& t) {
  json r = analysis::build_report(t);
  apply_rules(*testing::builtin_catalog(), r);
  return r;
}

json analyzed_file(const std::string& rel) {
  auto t = trace::load_trace(fs::path(PT_TRACES_DIR) / rel);
  if (!t.ok()) return json();
  return analyzed(*t);
}

const json* find_rec(const json& r, const std::string& id) {
  for (const auto& rec : r["recommendations"])
    if (rec["id"] == id) return &rec;
  return nullptr;
}

TEST(InductorNames, KindAndFusedOpsFromTheName) {
  using analysis::parse_inductor_kernel;
  auto k = parse_inductor_kernel("triton_poi_fused_add_cos_sin_0");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "pointwise");
  EXPECT_EQ(k->fused_ops.value_or(""), "add_cos_sin");
  k = parse_inductor_kernel("triton_red_fused__log_softmax_12");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "reduction");
  EXPECT_EQ(k->fused_ops.value_or(""), "_log_softmax");
  k = parse_inductor_kernel("triton_per_fused_native_layer_norm_3");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "persistent_reduction");
  EXPECT_EQ(k->fused_ops.value_or(""), "native_layer_norm");
  k = parse_inductor_kernel("triton_tem_fused_mm_0");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "template");
  EXPECT_EQ(k->fused_ops.value_or(""), "mm");
  k = parse_inductor_kernel("cpp_fused_add_relu_5");
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "cpp");
  EXPECT_EQ(k->fused_ops.value_or(""), "add_relu");
  k = parse_inductor_kernel("triton__0d1d2d3d");  // torch 2.0: no descriptive names
  ASSERT_TRUE(k);
  EXPECT_EQ(k->kind, "other");
  EXPECT_FALSE(k->fused_ops);
  k = parse_inductor_kernel("triton_poi_0");
  ASSERT_TRUE(k);
  EXPECT_FALSE(k->fused_ops);
  EXPECT_FALSE(parse_inductor_kernel("void at::native::vectorized_elementwise_kernel<4>"));
  EXPECT_FALSE(parse_inductor_kernel("ampere_sgemm_128x64_tn"));
  EXPECT_FALSE(parse_inductor_kernel("tritonish_kernel"));
}

TEST(CompiledRanges, NamesTorchRecords) {
  using analysis::CompiledRange;
  using analysis::compiled_range_of;
  EXPECT_EQ(compiled_range_of("Torch-Compiled Region: 0/0"), CompiledRange::kFrame);
  EXPECT_EQ(compiled_range_of("CompiledFunction"), CompiledRange::kForwardGraph);
  EXPECT_EQ(compiled_range_of("CompiledFunctionBackward"), CompiledRange::kBackwardGraph);
  EXPECT_EQ(compiled_range_of("## Call CompiledFxGraph fo6tmlcrs ##"), CompiledRange::kInductorGraph);
  EXPECT_EQ(compiled_range_of("autograd::engine::evaluate_function: CompiledFunctionBackward"), CompiledRange::kNone);
  EXPECT_EQ(compiled_range_of("aten::mm"), CompiledRange::kNone);
  EXPECT_TRUE(analysis::is_compile_range("_compile.compile_inner (dynamo_timed)"));
  EXPECT_TRUE(analysis::is_compile_range("torch.compile 1/2 (dynamo_timed)"));  // the shim's NVTX range
  EXPECT_FALSE(analysis::is_compile_range("CompiledFunction"));
}

// One CPU training step as torch 2.11 records a compiled model with two graph breaks (the nesting of
// /tmp profiles of a real program, issue 39): frame 0 runs graph 0, eager code, then the resume function
// (frame 1, nested) runs graph 1, eager code, then frame 2 (nested in 1) runs graph 2. `regions`: whether the
// Torch-Compiled Region ranges are there (a stripped variant has only the graphs).
void compiled_step(TraceBuilder& b, double t0, bool regions) {
  b.annotation("ProfilerStep#" + std::to_string(static_cast<int>(t0 / 1000)), t0, 1000);
  if (regions) b.cpu_op("Torch-Compiled Region: 0/0", t0 + 10, 400);
  b.cpu_op("CompiledFunction", t0 + 20, 100);   // graph 0
  b.cpu_op("aten::item", t0 + 130, 20);           // the break's eager code
  if (regions) b.cpu_op("Torch-Compiled Region: 1/0", t0 + 160, 240);
  b.cpu_op("CompiledFunction", t0 + 170, 50);    // graph 1
  if (regions) b.cpu_op("Torch-Compiled Region: 2/0", t0 + 240, 150);
  b.cpu_op("CompiledFunction", t0 + 250, 100);   // graph 2
  b.cpu_op("autograd::engine::evaluate_function: CompiledFunctionBackward", t0 + 500, 300);
  b.cpu_op("CompiledFunctionBackward", t0 + 505, 290);
  b.annotation("Optimizer.step#AdamW.step", t0 + 850, 100);
}

TEST(Compilation, BreaksAreGraphsInOneFrameMinusOneAndEagerTimeIsFramesLessGraphs) {
  TraceBuilder b;
  for (int s = 1; s <= 4; ++s) compiled_step(b, 1000.0 * s, true);
  const json r = analyzed(b.build());
  ASSERT_TRUE(r.contains("compilation")) << r.dump(1).substr(0, 400);
  const json& c = r["compilation"];
  EXPECT_TRUE(c["compiled"].get<bool>());
  EXPECT_DOUBLE_EQ(c["frames_per_step"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(c["forward_graphs_per_step"].get<double>(), 3.0);
  EXPECT_DOUBLE_EQ(c["backward_graphs_per_step"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(c["graph_breaks_per_step"].get<double>(), 2.0);
  // Graphs: 100 + 50 + 100 + 290 us of each 1000 us step; frames 10..410 less the forward graphs: 400 - 250.
  EXPECT_NEAR(c["host_compiled_share"].get<double>(), 0.54, 1e-6);
  EXPECT_NEAR(c["eager_in_frames_share"].get<double>(), 0.15, 1e-6);
  EXPECT_TRUE(c["gpu_compiled_share"].is_null()) << "no GPU: no GPU share";
  // The advice: torch.compile is applied, so fuse-memory-bound's torch.compile is not offered; the breaks are,
  // bounded by the eager time between the graphs (CPU step: no GPU-idle cap).
  const json* rec = find_rec(r, "remove-graph-breaks");
  ASSERT_NE(rec, nullptr) << r["recommendations"].dump(1);
  ASSERT_TRUE((*rec)["removable_share"].is_number());
  EXPECT_LE((*rec)["removable_share"].get<double>(), 0.15 + 1e-9);
  EXPECT_GT((*rec)["removable_share"].get<double>(), 0.0);
  EXPECT_EQ(find_rec(r, "fuse-memory-bound"), nullptr);
}

TEST(Compilation, OneGraphPerFrameCalledTwiceIsNoBreak) {
  // Two micro-batches per step through a model compiled without breaks: two outermost frames, one graph each.
  TraceBuilder b;
  for (int s = 1; s <= 3; ++s) {
    const double t0 = 1000.0 * s;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 1000);
    for (double m : {0.0, 400.0}) {
      b.cpu_op("Torch-Compiled Region: 0/0", t0 + m + 10, 150);
      b.cpu_op("CompiledFunction", t0 + m + 20, 130);
      b.cpu_op("CompiledFunctionBackward", t0 + m + 200, 150);
    }
  }
  const json r = analyzed(b.build());
  const json& c = r["compilation"];
  EXPECT_DOUBLE_EQ(c["graph_breaks_per_step"].get<double>(), 0.0);
  EXPECT_DOUBLE_EQ(c["forward_graphs_per_step"].get<double>(), 2.0);
  EXPECT_EQ(find_rec(r, "remove-graph-breaks"), nullptr);
}

TEST(Compilation, WithoutRegionRangesBreaksAreNotToldButTheProgramIsCompiled) {
  TraceBuilder b;
  for (int s = 1; s <= 4; ++s) compiled_step(b, 1000.0 * s, false);
  const json r = analyzed(b.build());
  const json& c = r["compilation"];
  EXPECT_TRUE(c["compiled"].get<bool>());
  EXPECT_TRUE(c["graph_breaks_per_step"].is_null()) << "absent is not zero";
  EXPECT_TRUE(c["frames_per_step"].is_null());
  EXPECT_TRUE(c["eager_in_frames_share"].is_null());
  EXPECT_DOUBLE_EQ(c["forward_graphs_per_step"].get<double>(), 3.0);
  EXPECT_EQ(find_rec(r, "remove-graph-breaks"), nullptr);
}

TEST(Compilation, AnEagerTraceHasNoSection) {
  TraceBuilder b;
  for (int s = 1; s <= 3; ++s) {
    b.annotation("ProfilerStep#" + std::to_string(s), 1000.0 * s, 1000);
    b.cpu_op("aten::mm", 1000.0 * s + 10, 500);
  }
  EXPECT_FALSE(analyzed(b.build()).contains("compilation"));
}

TEST(Compilation, GpuKernelsLaunchedFromGraphsReplaysAndInductorKernels) {
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132);
  for (int s = 1; s <= 3; ++s) {
    const double t0 = 1000.0 * s;
    const int64_t c0 = 100 * s;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 1000);
    b.cpu_op("CompiledFunction", t0 + 10, 100);
    b.runtime("cuLaunchKernel", t0 + 20, 5, c0 + 1);
    b.kernel("triton_poi_fused_add_mul_0", t0 + 30, 100, c0 + 1);
    b.runtime("cudaGraphLaunch", t0 + 40, 5, c0 + 2);  // a replay inside the graph call: both shares
    b.kernel("triton_red_fused_sum_1", t0 + 140, 100, c0 + 2);
    b.kernel("ampere_sgemm_128x64_tn", t0 + 240, 100, c0 + 2);
    b.runtime("cudaLaunchKernel", t0 + 500, 5, c0 + 3);  // eager, after the graph
    b.kernel("void at::native::vectorized_elementwise_kernel<4>", t0 + 510, 100, c0 + 3);
  }
  const json r = analyzed(b.build());
  const json& c = r["compilation"];
  ASSERT_TRUE(c.is_object());
  EXPECT_NEAR(c["gpu_compiled_share"].get<double>(), 0.75, 1e-6);
  EXPECT_NEAR(c["cuda_graph_share"].get<double>(), 0.5, 1e-6);
  EXPECT_DOUBLE_EQ(c["cuda_graph_launches_per_step"].get<double>(), 1.0);
  EXPECT_NEAR(c["inductor_kernel_share"].get<double>(), 0.5, 1e-6);
  ASSERT_EQ(c["inductor_kernels"].size(), 2u);
  for (const auto& k : c["inductor_kernels"]) {
    EXPECT_EQ(k["on"], "gpu");
    EXPECT_NEAR(k["share"].get<double>(), 0.25, 1e-6);
    EXPECT_NEAR(k["ms_per_step"].get<double>(), 0.1, 1e-9);
  }
}

TEST(Compilation, ShimFactsGiveBreaksWithLinesAndRecompiles) {
  TraceBuilder b;
  for (int s = 1; s <= 3; ++s) compiled_step(b, 1000.0 * s, true);
  b.fact("compile", "unique_graphs", 7);
  b.fact("compile", "graph_breaks", 7);
  b.fact("compile", "recompiles", 1);
  b.fact("compile", "compile_time_s", 9.8);
  b.fact("compile", "breaks", json::array({{{"where", "train.py:12"}, {"reason", "Unsupported Tensor.item() call"}, {"count", 4}},
                                           {{"where", "train.py:14"}, {"reason", "Failed to trace builtin operator (print)"}, {"count", 3}},
                                           {{"reason", 5}}}));  // not a reason: left out
  b.fact("compile", "recompile_reasons", json::array({{{"where", "train.py:6 (forward)"}, {"reason", "0/0: tensor 'x' size mismatch at index 0. expected 32, actual 16"}}}));
  const json r = analyzed(b.build());
  const json& c = r["compilation"];
  EXPECT_EQ(c["unique_graphs"], 7);
  EXPECT_EQ(c["graph_breaks"], 7);
  EXPECT_EQ(c["recompiles"], 1);
  ASSERT_EQ(c["breaks"].size(), 2u);
  EXPECT_EQ(c["breaks"][0]["where"], "train.py:12");
  EXPECT_EQ(c["breaks_summary"], "train.py:12: Unsupported Tensor.item() call; train.py:14: Failed to trace builtin operator (print)");
  const json* rec = find_rec(r, "remove-graph-breaks");
  ASSERT_NE(rec, nullptr);
  bool named = false;
  for (const auto& e : (*rec)["evidence"]) named |= e.get<std::string>().find("train.py:14") != std::string::npos;
  EXPECT_TRUE(named) << (*rec)["evidence"].dump(1);
}

TEST(Compilation, ShimFactsWithoutTorchRangesAreANoteWithoutABound) {
  // A native capture (`run`) records the shim's ranges, not torch's: compiled, breaks counted, no bound.
  TraceBuilder b;
  for (int s = 1; s <= 3; ++s) {
    b.annotation("ProfilerStep#" + std::to_string(s), 1000.0 * s, 1000);
    b.annotation("## forward ##", 1000.0 * s + 10, 400);
  }
  b.fact("compile", "unique_graphs", 3);
  b.fact("compile", "graph_breaks", 2);
  const json r = analyzed(b.build());
  const json& c = r["compilation"];
  EXPECT_TRUE(c["compiled"].get<bool>());
  EXPECT_TRUE(c["host_compiled_share"].is_null());
  const json* rec = find_rec(r, "remove-graph-breaks");
  ASSERT_NE(rec, nullptr);
  EXPECT_TRUE((*rec)["removable_share"].is_null());
  EXPECT_EQ((*rec)["evidence_level"], "note");
}

TEST(Compilation, RecompilesInsideTheSteadyStepsAreBoundedByTheirCompileTime) {
  // A new input shape in step 3: dynamo recompiles there (a dynamo_timed range of 200 us in a 1000 us step).
  TraceBuilder b;
  for (int s = 1; s <= 4; ++s) compiled_step(b, 1000.0 * s, true);
  b.cpu_op("torch.compile 0/1 (dynamo_timed)", 3000.0 + 400, 200);
  b.fact("compile", "unique_graphs", 4);
  b.fact("compile", "recompiles", 1);
  b.fact("compile", "compile_time_s", 3.5);
  b.fact("compile", "recompile_reasons", json::array({{{"where", "train.py:6 (forward)"}, {"reason", "0/0: tensor 'x' size mismatch at index 0. expected 32, actual 16"}, {"count", 1}}}));
  const json r = analyzed(b.build());
  const json& c = r["compilation"];
  EXPECT_NEAR(c["compile_in_window_ms"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(c["compile_in_window_share"].get<double>(), 0.05, 1e-6);
  EXPECT_EQ(c["recompiles_summary"], "train.py:6 (forward): 0/0: tensor 'x' size mismatch at index 0. expected 32, actual 16");
  const json* rec = find_rec(r, "avoid-recompiles");
  ASSERT_NE(rec, nullptr) << r["recommendations"].dump(1);
  EXPECT_NE((*rec)["evidence_level"], "note");
  ASSERT_TRUE((*rec)["removable_share"].is_number());
  EXPECT_NEAR((*rec)["removable_share"].get<double>(), 0.05, 1e-6);
  bool named = false;
  for (const auto& e : (*rec)["evidence"]) named |= e.get<std::string>().find("size mismatch at index 0") != std::string::npos;
  EXPECT_TRUE(named) << (*rec)["evidence"].dump(1);
}

TEST(Compilation, RecompilesOutsideTheWindowAreANoteAndNoneAreSilent) {
  TraceBuilder b;
  for (int s = 1; s <= 4; ++s) compiled_step(b, 1000.0 * s, true);
  b.fact("compile", "unique_graphs", 4);
  b.fact("compile", "recompiles", 2);
  const json r = analyzed(b.build());
  const json* rec = find_rec(r, "avoid-recompiles");
  ASSERT_NE(rec, nullptr);
  EXPECT_EQ((*rec)["evidence_level"], "note");
  EXPECT_EQ(r["compilation"]["compile_in_window_share"], 0.0);

  TraceBuilder quiet;
  for (int s = 1; s <= 4; ++s) compiled_step(quiet, 1000.0 * s, true);
  quiet.fact("compile", "unique_graphs", 3);
  quiet.fact("compile", "recompiles", 0);
  EXPECT_EQ(find_rec(analyzed(quiet.build()), "avoid-recompiles"), nullptr);
}

// ---- the shared corpus ---------------------------------------------------------------------------------------

TEST(CompilationCorpus, TritonExampleNamesWhatItsKernelFuses) {
  const json r = analyzed_file("hta/triton_example/triton_example.json.gz");
  ASSERT_TRUE(r.contains("compilation"));
  const json& c = r["compilation"];
  ASSERT_EQ(c["inductor_kernels"].size(), 1u);
  EXPECT_EQ(c["inductor_kernels"][0]["name"], "triton_poi_fused_add_cos_sin_0");
  EXPECT_EQ(c["inductor_kernels"][0]["kind"], "pointwise");
  EXPECT_EQ(c["inductor_kernels"][0]["fused_ops"], "add_cos_sin");
  EXPECT_DOUBLE_EQ(c["inductor_kernel_share"].get<double>(), 1.0);
  EXPECT_DOUBLE_EQ(c["frames_per_step"].get<double>(), 1.0);
}

TEST(CompilationCorpus, CudaGraphReplaysOfACompiledRecommender) {
  const json r = analyzed_file("hta/negative_queue_length_values_check/rank0.json.gz");
  ASSERT_TRUE(r.contains("compilation"));
  const json& c = r["compilation"];
  EXPECT_TRUE(c["compiled"].get<bool>());
  EXPECT_GT(c["cuda_graph_share"].get<double>(), 0.1);
  EXPECT_LT(c["cuda_graph_share"].get<double>(), 1.0);
  EXPECT_GT(c["cuda_graph_launches_per_step"].get<double>(), 1.0);
  EXPECT_TRUE(c["graph_breaks_per_step"].is_null()) << "a 2023 trace has no Torch-Compiled Region ranges";
  // The 2023 Triton kernels carry no op names.
  for (const auto& k : c["inductor_kernels"]) EXPECT_TRUE(k["fused_ops"].is_null());
}

TEST(CompilationCorpus, TheCompiledSideOfTraceDiffGetsNoTorchCompileAdvice) {
  // Same recommender, eager (control) and compiled with CUDA graphs (test): fuse-memory-bound's torch.compile
  // is offered to the first only.
  const json control = analyzed_file("hta/trace_diff/control/control.json.gz");
  const json test = analyzed_file("hta/trace_diff/test/test.json.gz");
  EXPECT_FALSE(control.contains("compilation"));
  EXPECT_NE(find_rec(control, "fuse-memory-bound"), nullptr);
  ASSERT_TRUE(test.contains("compilation"));
  EXPECT_TRUE(test["compilation"]["compiled"].get<bool>());
  EXPECT_EQ(find_rec(test, "fuse-memory-bound"), nullptr);
}

TEST(CompilationCorpus, CudaGraphsAdviceStaysSilentWhenReplaysRunMostOfTheGpuTime) {
  // df_index_resolver is compiled without CUDA graphs and launch-bound: cuda-graphs fires; the same trace with
  // its compiled graphs' kernels replayed (every launch renamed cudaGraphLaunch) does not.
  auto t = trace::load_trace(fs::path(PT_TRACES_DIR) / "hta/df_index_resolver/df_index_resolver.json.gz");
  ASSERT_TRUE(t.ok());
  const json before = analyzed(*t);
  ASSERT_NE(find_rec(before, "cuda-graphs"), nullptr);
  const trace::StringId graph_launch = t->strings.intern("cudaGraphLaunch");
  for (auto& e : t->events)
    if (e.cat == trace::Category::kRuntime && t->name(e).find("LaunchKernel") != std::string_view::npos)
      e.name = graph_launch;
  const json after = analyzed(*t);
  ASSERT_TRUE(after.contains("compilation"));
  EXPECT_GE(after["compilation"]["cuda_graph_share"].get<double>(), 0.5);
  EXPECT_EQ(find_rec(after, "cuda-graphs"), nullptr);
}

}  // namespace
}  // namespace profile_train::rules
