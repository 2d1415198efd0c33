// The efficiency layer's FLOPs and bytes (src/analysis/op_cost.cpp) against an independent count:
// torch.utils.flop_counter.FlopCounterMode on the same run of small CPU models (tests/analysis/flops_models.py
// records a torch.profiler trace with record_shapes=True and FlopCounterMode's count of every call), every call
// compared; bytes against hand computations. Needs PT_PYTHON with torch for the recorded part (skips otherwise).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/efficiency.h"
#include "profile_train/trace/importer.h"

namespace fs = std::filesystem;
using namespace profile_train;
using analysis::op_cost;
using analysis::OpKind;

namespace {

// ---- Hand computations ----------------------------------------------------------------------------------------

TEST(OpCost, AddmmCountsTheProductNotTheBiasAndMovesEveryOperandOnce) {
  const auto c = op_cost("aten::addmm", "[[10], [2, 144], [144, 10], [], []]", "[float, float, float, Scalar, Scalar]",
                         "[, , , 1, 1]");
  ASSERT_TRUE(c);
  EXPECT_EQ(c->kind, OpKind::kGemm);
  EXPECT_EQ(c->dtype, "fp32");
  EXPECT_DOUBLE_EQ(c->flops, 2.0 * 2 * 10 * 144);
  EXPECT_DOUBLE_EQ(c->bytes, (10 + 2 * 144 + 144 * 10 + 2 * 10) * 4.0);  // bias, A, B read; C written
  EXPECT_EQ(c->m, 2);
  EXPECT_EQ(c->n, 10);
  EXPECT_EQ(c->k, 144);
}

TEST(OpCost, BatchedAndBroadcastMatmulAndLinear) {
  const auto bmm = op_cost("aten::bmm", "[[6, 16, 32], [6, 32, 24]]", "[c10::BFloat16, c10::BFloat16]", "");
  ASSERT_TRUE(bmm);
  EXPECT_DOUBLE_EQ(bmm->flops, 2.0 * 6 * 16 * 24 * 32);
  EXPECT_DOUBLE_EQ(bmm->bytes, (6 * 16 * 32 + 6 * 32 * 24 + 6 * 16 * 24) * 2.0);
  EXPECT_EQ(bmm->dtype, "bf16");
  const auto mm = op_cost("aten::matmul", "[[4, 1, 16, 32], [3, 32, 8]]", "[float, float]", "");
  ASSERT_TRUE(mm);
  EXPECT_DOUBLE_EQ(mm->flops, 2.0 * 12 * 16 * 8 * 32);  // batch broadcast 4 x 3
  const auto lin = op_cost("aten::linear", "[[8, 5, 64], [128, 64], [128]]", "[float, float, float]", "");
  ASSERT_TRUE(lin);
  EXPECT_DOUBLE_EQ(lin->flops, 2.0 * 40 * 128 * 64);
  EXPECT_FALSE(op_cost("aten::mm", "[[4, 5], [6, 7]]", "[float, float]", ""));  // inner dims differ
}

TEST(OpCost, ConvolutionOutputSizeFromStridePaddingDilationInEachArgumentOrder) {
  // 16x16 input, 3x3 kernel, stride 2, padding 1 -> 8x8 output.
  const double flops = 2.0 * 2 * 8 * 8 * 9 * 8 * 3;
  const auto conv = op_cost("aten::convolution", "[[2, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], [], [], []]",
                            "[float, float, float, ScalarList, ScalarList, ScalarList, Scalar, ScalarList, Scalar]",
                            "[, , , [2, 2], [1, 1], [1, 1], False, [0, 0], 1]");
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->kind, OpKind::kConv);
  EXPECT_DOUBLE_EQ(conv->flops, flops);
  EXPECT_DOUBLE_EQ(conv->bytes, (2 * 3 * 16 * 16 + 8 * 3 * 9 + 8 + 2 * 8 * 8 * 8) * 4.0);
  // cudnn_convolution(input, weight, padding, stride, dilation, groups, ...): padding before stride.
  const auto cudnn = op_cost("aten::cudnn_convolution", "[[2, 3, 16, 16], [8, 3, 3, 3], [], [], [], [], [], [], []]",
                             "[c10::Half, c10::Half, ScalarList, ScalarList, ScalarList, Scalar, Scalar, Scalar, Scalar]",
                             "[, , [1, 1], [2, 2], [1, 1], 1, False, False, True]");
  ASSERT_TRUE(cudnn);
  EXPECT_DOUBLE_EQ(cudnn->flops, flops);
  EXPECT_EQ(cudnn->dtype, "fp16");
  // Without the recorded scalars the output size is unknown: no cost, rather than a guess.
  EXPECT_FALSE(op_cost("aten::convolution", "[[2, 3, 16, 16], [8, 3, 3, 3], [8], [], [], [], [], [], []]",
                       "[float, float, float, ScalarList, ScalarList, ScalarList, Scalar, ScalarList, Scalar]", ""));
}

TEST(OpCost, AttentionCausalHalvesAndFlashLayoutIsBshd) {
  const auto full = op_cost("aten::_scaled_dot_product_flash_attention",
                            "[[4, 12, 197, 64], [4, 12, 197, 64], [4, 12, 197, 64], [], [], [], []]",
                            "[c10::BFloat16, c10::BFloat16, c10::BFloat16, Scalar, Scalar, Scalar, Scalar]",
                            "[, , , 0., False, False, 0.125]");
  ASSERT_TRUE(full);
  EXPECT_DOUBLE_EQ(full->flops, 4.0 * 4 * 12 * 197 * 197 * 64);  // TraceLens' SDPA_fwd GFLOPS 0.476884992
  const auto causal = op_cost("aten::_scaled_dot_product_flash_attention",
                              "[[4, 12, 197, 64], [4, 12, 197, 64], [4, 12, 197, 64], [], [], [], []]",
                              "[c10::BFloat16, c10::BFloat16, c10::BFloat16, Scalar, Scalar, Scalar, Scalar]",
                              "[, , , 0., True, False, 0.125]");
  ASSERT_TRUE(causal);
  EXPECT_DOUBLE_EQ(causal->flops, full->flops / 2);
  const auto bshd = op_cost("aten::_flash_attention_forward",
                            "[[4, 197, 12, 64], [4, 197, 12, 64], [4, 197, 12, 64], [], [], [], [], [], [], [], []]",
                            "[c10::BFloat16, c10::BFloat16, c10::BFloat16, , , Scalar, Scalar, Scalar, Scalar, Scalar, Scalar]",
                            "[, , , , , 197, 197, 0., False, False, 0.125]");
  ASSERT_TRUE(bshd);
  EXPECT_DOUBLE_EQ(bshd->flops, full->flops);
}

TEST(OpCost, ElementwiseNormAndCutTexts) {
  const auto add = op_cost("aten::add", "[[4, 197, 768], [4, 197, 768], []]", "[c10::BFloat16, c10::BFloat16, Scalar]",
                           "[, , 1]");
  ASSERT_TRUE(add);
  EXPECT_EQ(add->kind, OpKind::kElementwise);
  EXPECT_DOUBLE_EQ(add->flops, 4.0 * 197 * 768);
  EXPECT_DOUBLE_EQ(add->bytes, 3.0 * 4 * 197 * 768 * 2);  // TraceLens: 3.462890625 MiB
  const auto bcast = op_cost("aten::add_", "[[4, 768, 14, 14], [1, 768, 1, 1], []]",
                             "[c10::BFloat16, c10::BFloat16, Scalar]", "");
  ASSERT_TRUE(bcast);
  EXPECT_DOUBLE_EQ(bcast->bytes, (2.0 * 4 * 768 * 196 + 768) * 2);
  const auto ln = op_cost("aten::native_layer_norm", "[[8, 16, 64], [], [64], [64], []]",
                          "[float, ScalarList, float, float, Scalar]", "[, [64], , , 1e-05]");
  ASSERT_TRUE(ln);
  EXPECT_EQ(ln->kind, OpKind::kNorm);
  EXPECT_DOUBLE_EQ(ln->flops, 7.0 * 8 * 16 * 64);
  EXPECT_DOUBLE_EQ(ln->bytes, (2.0 * 8 * 16 * 64 + 64 + 64) * 4);
  EXPECT_FALSE(op_cost("aten::mm", "[[4, 5], ...", "[float, float]", ""));
  EXPECT_FALSE(op_cost("aten::unknown_op", "[[4, 5]]", "[float]", ""));
}

// ---- Against FlopCounterMode on recorded runs -------------------------------------------------------------------

const fs::path& recorded_dir() {
  static const fs::path dir = [] {
    fs::path out = fs::temp_directory_path() / ("pt_flops_test_" + std::to_string(::getpid()));
    fs::create_directories(out);
    const std::string cmd = std::string("\"") + PT_PYTHON + "\" \"" + PT_SOURCE_DIR +
                            "/tests/analysis/flops_models.py\" \"" + out.string() + "\" > \"" +
                            (out / "log.txt").string() + "\" 2>&1";
    if (!fs::exists(PT_PYTHON) || std::system(cmd.c_str()) != 0) return fs::path();
    return out;
  }();
  return dir;
}

// The CPU operator events of a trace, one per call: under a Python dispatch mode (FlopCounterMode) the profiler
// records an operator twice, the mode's call nested in the dispatcher's; the inner one is left out.
std::vector<const trace::Event*> calls_of(const trace::Trace& t) {
  std::vector<const trace::Event*> ops;
  for (const auto& e : t.events)
    if (!e.is_gpu && e.cat == trace::Category::kCpuOp) ops.push_back(&e);
  std::sort(ops.begin(), ops.end(), [](const trace::Event* a, const trace::Event* b) {
    return a->start_ns != b->start_ns ? a->start_ns < b->start_ns : a->dur_ns > b->dur_ns;
  });
  std::vector<const trace::Event*> out;
  std::map<std::pair<int64_t, trace::StringId>, const trace::Event*> open;  // (tid, name) -> last kept call
  for (const trace::Event* e : ops) {
    const trace::Event*& last = open[{e->tid, e->name}];
    if (last && e->start_ns >= last->start_ns && e->end_ns() <= last->end_ns() && e->inputs == last->inputs) continue;
    last = e;
    out.push_back(e);
  }
  return out;
}

struct Recorded {
  std::map<std::string, std::vector<double>> ours, torch;  // op -> per-call FLOPs, sorted
  trace::Trace trace;
};

Recorded recorded(const std::string& model) {
  Recorded r;
  const fs::path dir = recorded_dir();
  std::ifstream in(dir / (model + ".flops.json"));
  const auto j = nlohmann::json::parse(in);
  for (const auto& c : j["calls"]) r.torch[c[0].get<std::string>()].push_back(c[1].get<double>());
  auto t = trace::load_trace(dir / (model + ".json"));
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return r;
  r.trace = std::move(t).value();
  for (const trace::Event* ev : calls_of(r.trace)) {
    const trace::Event& e = *ev;
    const std::string& name = r.trace.name(e);
    if (!r.torch.count(name)) continue;
    const trace::OpInputs in = r.trace.op_inputs.at(e.inputs);
    const auto c = op_cost(name, r.trace.strings.get(in.dims), r.trace.strings.get(in.types),
                           r.trace.strings.get(in.concrete));
    r.ours[name].push_back(c ? c->flops : -1);
  }
  for (auto* m : {&r.ours, &r.torch})
    for (auto& [k, v] : *m) std::sort(v.begin(), v.end());
  return r;
}

#define SKIP_WITHOUT_TORCH()                                                   \
  if (recorded_dir().empty()) GTEST_SKIP() << "PT_PYTHON with torch not available: " << PT_PYTHON

void expect_every_call_equal(const std::string& model, double causal_factor = 1.0) {
  const Recorded r = recorded(model);
  ASSERT_FALSE(r.torch.empty()) << model << ": FlopCounterMode counted nothing";
  for (auto [op, calls] : r.torch) {
    for (double& f : calls) f *= causal_factor;
    ASSERT_TRUE(r.ours.count(op)) << model << ": the trace has no " << op;
    EXPECT_EQ(r.ours.at(op), calls) << model << ": " << op;
  }
}

TEST(FlopsAgainstFlopCounterMode, Mlp) {
  SKIP_WITHOUT_TORCH();
  expect_every_call_equal("mlp");
}

TEST(FlopsAgainstFlopCounterMode, ConvNetForwardAndBackward) {
  SKIP_WITHOUT_TORCH();
  expect_every_call_equal("convnet");
}

TEST(FlopsAgainstFlopCounterMode, AttentionThroughSdpa) {
  SKIP_WITHOUT_TORCH();
  expect_every_call_equal("sdpa");
  // FlopCounterMode counts causal attention as the full square; we count the half that runs.
  expect_every_call_equal("sdpa_causal", 0.5);
}

TEST(FlopsAgainstFlopCounterMode, AttentionThroughBmmAndSoftmax) {
  SKIP_WITHOUT_TORCH();
  expect_every_call_equal("bmm_softmax");
  // The softmax between the two products: a reduction over its input, bytes by hand.
  const Recorded r = recorded("bmm_softmax");
  int softmax = 0;
  for (const trace::Event* ev : calls_of(r.trace)) {
    const trace::Event& e = *ev;
    if (r.trace.name(e) != "aten::_softmax") continue;
    const trace::OpInputs in = r.trace.op_inputs.at(e.inputs);
    const auto c = op_cost("aten::_softmax", r.trace.strings.get(in.dims), r.trace.strings.get(in.types),
                           r.trace.strings.get(in.concrete));
    ASSERT_TRUE(c);
    EXPECT_EQ(c->kind, OpKind::kReduction);
    EXPECT_DOUBLE_EQ(c->bytes, 2.0 * 6 * 16 * 24 * 4);  // [6, 16, 24] fp32 read and written
    ++softmax;
  }
  EXPECT_EQ(softmax, 1);
}

TEST(FlopsAgainstFlopCounterMode, LayerNormBytesByHand) {
  SKIP_WITHOUT_TORCH();
  const fs::path dir = recorded_dir();
  auto t = trace::load_trace(dir / "layer_norm.json");
  ASSERT_TRUE(t.ok()) << t.status().message();
  int seen = 0;
  for (const trace::Event* ev : calls_of(*t)) {
    const trace::Event& e = *ev;
    if (t->name(e) != "aten::native_layer_norm") continue;
    const trace::OpInputs in = t->op_inputs.at(e.inputs);
    const auto c = op_cost("aten::native_layer_norm", t->strings.get(in.dims), t->strings.get(in.types),
                           t->strings.get(in.concrete));
    ASSERT_TRUE(c) << t->strings.get(in.dims);
    // x [8, 16, 64] fp32 read, y written, weight and bias [64] read.
    EXPECT_DOUBLE_EQ(c->bytes, (2.0 * 8 * 16 * 64 + 2 * 64) * 4);
    EXPECT_DOUBLE_EQ(c->flops, 7.0 * 8 * 16 * 64);
    ++seen;
  }
  EXPECT_EQ(seen, 1);
}

}  // namespace
