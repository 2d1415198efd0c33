// Operator attribution (src/analysis/operators.cpp): GPU time joined to the launching CPU operator and the
// enclosing module range, operator self time, operators during GPU idle time; on synthetic traces and on the
// real corpus against an independent brute-force join written here.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "profile_train/trace/importer.h"
#include "report_view.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

using testing::TraceBuilder;

Intervals windows_of(const StepInfo& si) {
  Intervals w;
  for (const auto& s : si.steps) w.push_back({s.start, s.end});
  return merge_intervals(std::move(w));
}

Intervals busy_of(const trace::Trace& t, const TraceIndex& idx) {
  Intervals b;
  for (const auto* list : {&idx.kernels, &idx.memcpys, &idx.memsets})
    for (size_t i : *list)
      if ((t.events[i].device >= 0 ? t.events[i].device : t.events[i].pid) == idx.main_device)
        b.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  return merge_intervals(std::move(b));
}

const OperatorRow* row(const OperatorAttribution& a, const std::string& name) {
  for (const auto& r : a.operators)
    if (r.name == name) return &r;
  return nullptr;
}

TEST(Operators, KernelsJoinTheirLaunchingOperatorAndModuleAndUnattributedTimeIsReported) {
  // One step: "nn.Module: Linear_0" holds aten::linear -> aten::addmm, which launches an FP32 GEMM (joined by
  // correlation, no External id); aten::relu launches an elementwise kernel; one kernel has no runtime call.
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 1000)
                     .python("nn.Module: Linear_0", 10, 300)
                     .cpu_op("aten::linear", 20, 200)
                     .cpu_op("aten::addmm", 30, 150)
                     .runtime("cudaLaunchKernel", 40, 10, 1)
                     .kernel("volta_sgemm_128x64_nn", 60, 400, 1)
                     .cpu_op("aten::relu", 400, 50)
                     .runtime("cudaLaunchKernel", 410, 10, 2)
                     .kernel("void at::native::vectorized_elementwise_kernel<4, float>", 470, 30, 2)
                     .kernel("orphan_kernel", 600, 100)
                     .build();
  const TraceIndex idx = build_index(t);
  const StepInfo si = detect_steps(t, idx);
  const OperatorAttribution a = attribute_operators(t, idx, windows_of(si), idx.main_device, busy_of(t, idx));
  const auto us = [](double v) { return TraceBuilder::ns(v); };
  EXPECT_EQ(a.gpu_ns, us(530));
  EXPECT_EQ(a.gpu_attributed_ns, us(430));  // the orphan kernel stays unattributed
  EXPECT_EQ(a.gpu_in_module_ns, us(400));
  const OperatorRow* addmm = row(a, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  EXPECT_EQ(addmm->gpu_ns, us(400));
  EXPECT_EQ(addmm->fp32_ns, us(400));
  EXPECT_EQ(addmm->launching_calls, 1);
  EXPECT_EQ(addmm->host_self_ns, us(150));
  const OperatorRow* linear = row(a, "aten::linear");
  ASSERT_NE(linear, nullptr);
  EXPECT_EQ(linear->gpu_ns, 0);               // the innermost operator gets the kernel
  EXPECT_EQ(linear->host_self_ns, us(50));    // 200 minus the nested addmm
  ASSERT_NE(row(a, "aten::relu"), nullptr);
  EXPECT_EQ(row(a, "aten::relu")->gpu_ns, us(30));
  // Idle: the step has GPU work in [60, 460) U [470, 500) U [600, 700); aten::relu runs 400..450 (all busy)
  // while aten::linear (outermost) runs 20..220 of which 20..60 is idle.
  EXPECT_EQ(linear->idle_ns, us(40));
  ASSERT_EQ(a.modules.size(), 1u);
  EXPECT_EQ(a.modules[0].name, "nn.Module: Linear_0");
  EXPECT_EQ(a.modules[0].fp32_ns, us(400));
  TimeNs sum = 0;
  for (const auto& r : a.operators) sum += r.gpu_ns;
  EXPECT_EQ(sum, a.gpu_attributed_ns);

  // Through the report: the leaders the rules' evidence names, and the unattributed time per step.
  const auto r = build_report(t);
  EXPECT_EQ(r["operators"]["fp32"]["top_op"], "aten::addmm");
  EXPECT_EQ(r["operators"]["fp32"]["top_module"], "nn.Module: Linear_0");
  EXPECT_NEAR(r["operators"]["unattributed_ms_per_step"].get<double>(), 0.1, 1e-9);
  EXPECT_NEAR(r["operators"]["attributed_fraction"].get<double>(), 430.0 / 530.0, 1e-6);
  EXPECT_EQ(r["operators"]["top_by_gpu_time"][0]["name"], "aten::addmm");
}

// Independent join for the corpus check: for each GPU activity, the cpu_op with its External id that starts
// last (innermost), else a brute-force scan for the innermost cpu_op on the runtime call's thread.
// `key` names the group an operator event's time goes to.
template <class Key>
auto brute_force_join(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows, Key key) {
  std::map<int64_t, size_t> ext;
  std::vector<size_t> ops;
  std::map<int64_t, size_t> runtime_of;
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (e.is_gpu) continue;
    if (e.cat == trace::Category::kCpuOp) {
      ops.push_back(i);
      if (e.external_id >= 0) {
        auto it = ext.find(e.external_id);
        if (it == ext.end() || t.events[it->second].start_ns <= e.start_ns) ext[e.external_id] = i;
      }
    }
    if ((e.cat == trace::Category::kRuntime || e.cat == trace::Category::kDriver) && e.correlation >= 0)
      runtime_of[e.correlation] = i;
  }
  auto in_windows = [&](TimeNs ts) {
    for (const auto& w : windows)
      if (w.start <= ts && ts < w.end) return true;
    return false;
  };
  std::map<decltype(key(t.events[0])), TimeNs> out;
  for (const auto* list : {&idx.kernels, &idx.memcpys, &idx.memsets}) {
    for (size_t i : *list) {
      const auto& g = t.events[i];
      if ((g.device >= 0 ? g.device : g.pid) != idx.main_device || !in_windows(g.start_ns)) continue;
      size_t op = SIZE_MAX;
      if (auto it = ext.find(g.external_id); g.external_id >= 0 && it != ext.end()) op = it->second;
      if (op == SIZE_MAX && g.correlation >= 0 && runtime_of.count(g.correlation)) {
        const auto& rt = t.events[runtime_of[g.correlation]];
        for (size_t o : ops) {
          const auto& e = t.events[o];
          if (e.pid == rt.pid && e.tid == rt.tid && e.start_ns <= rt.start_ns && rt.start_ns < e.end_ns() &&
              (op == SIZE_MAX || e.start_ns >= t.events[op].start_ns))
            op = o;
        }
      }
      if (op != SIZE_MAX) out[key(t.events[op])] += g.dur_ns;
    }
  }
  return out;
}

std::map<std::string, TimeNs> brute_force(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows) {
  return brute_force_join(t, idx, windows, [&](const trace::Event& e) { return t.name(e); });
}

void check_corpus_trace(const char* rel) {
  const auto file = std::filesystem::path(PT_TRACES_DIR) / rel;
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "trace not found: " << file;
  auto t = trace::load_trace(file);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const TraceIndex idx = build_index(*t);
  const StepInfo si = detect_steps(*t, idx);
  const Intervals w = windows_of(si);
  const OperatorAttribution a = attribute_operators(*t, idx, w, idx.main_device, busy_of(*t, idx));
  TimeNs sum = 0;
  for (const auto& r : a.operators) sum += r.gpu_ns;
  EXPECT_EQ(sum, a.gpu_attributed_ns) << "per-operator GPU time must add up to the attributed time";
  EXPECT_GT(a.gpu_attributed_ns, 0);
  EXPECT_LE(a.gpu_attributed_ns, a.gpu_ns);
  const auto expected = brute_force(*t, idx, w);
  TimeNs expected_sum = 0;
  for (const auto& [name, ns] : expected) expected_sum += ns;
  EXPECT_EQ(expected_sum, a.gpu_attributed_ns);
  // The top 5 operators by GPU time agree, name and time.
  std::vector<std::pair<TimeNs, std::string>> mine, theirs;
  for (const auto& r : a.operators) mine.push_back({r.gpu_ns, r.name});
  for (const auto& [name, ns] : expected) theirs.push_back({ns, name});
  auto desc = [](const auto& x, const auto& y) { return x.first != y.first ? x.first > y.first : x.second < y.second; };
  std::sort(mine.begin(), mine.end(), desc);
  std::sort(theirs.begin(), theirs.end(), desc);
  ASSERT_GE(theirs.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(mine[i].second, theirs[i].second) << "rank " << i;
    EXPECT_EQ(mine[i].first, theirs[i].first) << "rank " << i;
  }
}

TEST(Operators, TbPluginResNet50MatchesAnIndependentJoin) {
  check_corpus_trace("kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz");
}

TEST(Operators, HtaDdpTraceWithAnnotationsMatchesAnIndependentJoin) {
  check_corpus_trace("hta/nccl_parser_config/nccl_data.json.gz");
}

// ---- Input shapes ------------------------------------------------------------------------------------------
// A trace builder cpu_op with recorded inputs (as the Kineto importer keeps them).
void set_inputs(trace::Trace& t, size_t event, const std::string& dims, const std::string& types) {
  const trace::OpInputs in{t.strings.intern(dims), t.strings.intern(types)};
  auto it = std::find(t.op_inputs.begin(), t.op_inputs.end(), in);
  t.events[event].inputs = static_cast<uint32_t>(it - t.op_inputs.begin());
  if (it == t.op_inputs.end()) t.op_inputs.push_back(in);
}

const OperatorShapeRow* shape(const OperatorRow& r, const std::string& dims) {
  for (const auto& s : r.shapes)
    if (s.dims == dims) return &s;
  return nullptr;
}

TEST(Operators, InputShapeGroupsSplitAnOperatorsTimeByWhatItWasCalledWith) {
  // Two steps; aten::addmm is called with two shapes (the big one twice), aten::relu once without recorded
  // inputs in a trace that records them for other operators.
  TraceBuilder b;
  b.device(0);
  for (int s = 0; s < 2; ++s) {
    const double o = 1000.0 * s;
    b.annotation("ProfilerStep#" + std::to_string(s + 1), o, 1000)
        .cpu_op("aten::addmm", o + 10, 100)
        .runtime("cudaLaunchKernel", o + 20, 5, 10 * s + 1)
        .kernel("volta_sgemm_128x64_nn", o + 30, 300, 10 * s + 1)
        .cpu_op("aten::addmm", o + 200, 100)
        .runtime("cudaLaunchKernel", o + 210, 5, 10 * s + 2)
        .kernel("volta_sgemm_128x64_nn", o + 340, 200, 10 * s + 2)
        .cpu_op("aten::addmm", o + 400, 50)
        .runtime("cudaLaunchKernel", o + 410, 5, 10 * s + 3)
        .kernel("volta_sgemm_64x64_nn", o + 550, 40, 10 * s + 3)
        .cpu_op("aten::relu", o + 600, 20)
        .runtime("cudaLaunchKernel", o + 605, 5, 10 * s + 4)
        .kernel("elementwise_kernel", o + 610, 10, 10 * s + 4);
  }
  trace::Trace& raw = b.raw();
  const std::string big = "[[4096], [256, 1024], [1024, 4096]]", small = "[[64], [256, 32], [32, 64]]";
  for (size_t i = 0; i < raw.events.size(); ++i) {
    if (raw.name(raw.events[i]) != "aten::addmm") continue;
    set_inputs(raw, i, raw.events[i].start_ns % 1000000 >= 400000 ? small : big, "[float, float, float]");
  }
  const auto t = b.build();
  ASSERT_TRUE(t.has_input_shapes());
  const TraceIndex idx = build_index(t);
  const StepInfo si = detect_steps(t, idx);
  const OperatorAttribution a = attribute_operators(t, idx, windows_of(si), idx.main_device, busy_of(t, idx));
  const OperatorRow* addmm = row(a, "aten::addmm");
  ASSERT_NE(addmm, nullptr);
  ASSERT_EQ(addmm->shapes.size(), 2u);
  const auto us = [](double v) { return TraceBuilder::ns(v); };
  const OperatorShapeRow* g = shape(*addmm, big);
  ASSERT_NE(g, nullptr);
  EXPECT_EQ(g->types, "[float, float, float]");
  EXPECT_EQ(g->gpu_ns, us(2 * 500));
  EXPECT_EQ(g->calls, 4);
  EXPECT_EQ(g->launching_calls, 4);
  EXPECT_EQ(g->gpu_activities, 4);
  EXPECT_EQ(g->host_self_ns, us(4 * 100));
  ASSERT_NE(shape(*addmm, small), nullptr);
  EXPECT_EQ(shape(*addmm, small)->gpu_ns, us(2 * 40));
  const OperatorRow* relu = row(a, "aten::relu");
  ASSERT_NE(relu, nullptr);
  ASSERT_EQ(relu->shapes.size(), 1u);  // the calls without recorded inputs still add up
  EXPECT_EQ(relu->shapes[0].dims, "");
  EXPECT_EQ(relu->shapes[0].gpu_ns, relu->gpu_ns);

  // In the report: the groups of each top row, leading first, per step; absent keys where not recorded.
  const auto r = build_report(t);
  const auto& top = r["operators"]["top_by_gpu_time"][0];
  ASSERT_EQ(top["name"], "aten::addmm");
  ASSERT_TRUE(top.contains("input_shapes")) << top.dump();
  ASSERT_EQ(top["input_shapes"].size(), 2u);
  EXPECT_EQ(top["input_shape_groups"], 2);
  EXPECT_EQ(top["input_shapes"][0]["shapes"], big);
  EXPECT_EQ(top["input_shapes"][0]["types"], "[float, float, float]");
  EXPECT_NEAR(top["input_shapes"][0]["gpu_ms_per_step"].get<double>(), 0.5, 1e-9);
  EXPECT_NEAR(top["input_shapes"][0]["calls_per_step"].get<double>(), 2.0, 1e-9);
  EXPECT_NEAR(top["input_shapes"][0]["host_self_ms_per_step"].get<double>(), 0.2, 1e-9);
  EXPECT_NEAR(top["input_shapes"][1]["gpu_ms_per_step"].get<double>(), 0.04, 1e-9);
  const auto& relu_row = r["operators"]["top_by_gpu_time"][1];
  ASSERT_EQ(relu_row["name"], "aten::relu");
  EXPECT_TRUE(relu_row["input_shapes"][0]["shapes"].is_null());
  EXPECT_TRUE(r["operators"]["top_by_host_time"][0].contains("input_shapes"));
}

TEST(Operators, TraceWithoutRecordedInputsHasNoShapeFields) {
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 1000)
                     .cpu_op("aten::addmm", 30, 150)
                     .runtime("cudaLaunchKernel", 40, 10, 1)
                     .kernel("volta_sgemm_128x64_nn", 60, 400, 1)
                     .build();
  const TraceIndex idx = build_index(t);
  const StepInfo si = detect_steps(t, idx);
  const OperatorAttribution a = attribute_operators(t, idx, windows_of(si), idx.main_device, busy_of(t, idx));
  ASSERT_NE(row(a, "aten::addmm"), nullptr);
  EXPECT_TRUE(row(a, "aten::addmm")->shapes.empty());
  const auto r = build_report(t);
  for (const char* list : {"top_by_gpu_time", "top_by_host_time"}) {
    ASSERT_FALSE(r["operators"][list].empty()) << list;
    for (const auto& x : r["operators"][list]) {
      EXPECT_FALSE(x.contains("input_shapes")) << x.dump();
      EXPECT_FALSE(x.contains("input_shape_groups")) << x.dump();
    }
  }
}

// The corpus: per-shape GPU time (and calls) of every operator add up to the operator's, and agree with an
// independent per-(operator, inputs) join.
std::map<std::pair<std::string, std::string>, TimeNs> brute_force_by_shape(const trace::Trace& t, const TraceIndex& idx,
                                                                           const Intervals& windows);

TEST(Operators, TbPluginResNet50ShapeGroupsAddUpAndMatchAnIndependentJoin) {
  const auto file = std::filesystem::path(PT_TRACES_DIR) /
                    "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "trace not found: " << file;
  auto t = trace::load_trace(file);
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_TRUE(t->has_input_shapes());
  const TraceIndex idx = build_index(*t);
  const Intervals w = windows_of(detect_steps(*t, idx));
  const OperatorAttribution a = attribute_operators(*t, idx, w, idx.main_device, busy_of(*t, idx));
  std::map<std::pair<std::string, std::string>, TimeNs> mine;
  size_t multi = 0;
  for (const auto& r : a.operators) {
    TimeNs gpu = 0, host = 0;
    int64_t calls = 0, launching = 0;
    for (const auto& s : r.shapes) {
      gpu += s.gpu_ns;
      host += s.host_self_ns;
      calls += s.calls;
      launching += s.launching_calls;
      if (s.gpu_ns > 0) mine[{r.name, s.dims}] += s.gpu_ns;
    }
    EXPECT_EQ(gpu, r.gpu_ns) << r.name;
    EXPECT_EQ(host, r.host_self_ns) << r.name;
    EXPECT_EQ(calls, r.calls) << r.name;
    EXPECT_EQ(launching, r.launching_calls) << r.name;
    if (r.gpu_ns > 0 && r.shapes.size() > 1) ++multi;
  }
  EXPECT_GT(multi, 3u) << "ResNet-50 calls its convolutions with several shapes";
  auto theirs = brute_force_by_shape(*t, idx, w);
  std::erase_if(theirs, [](const auto& kv) { return kv.second == 0; });  // zero-length copies / memsets
  EXPECT_EQ(mine.size(), theirs.size());
  for (const auto& [key, ns] : theirs) {
    auto it = mine.find(key);
    EXPECT_EQ(it == mine.end() ? TimeNs{-1} : it->second, ns) << key.first << " " << key.second;
  }
}

std::map<std::pair<std::string, std::string>, TimeNs> brute_force_by_shape(const trace::Trace& t, const TraceIndex& idx,
                                                                           const Intervals& windows) {
  return brute_force_join(t, idx, windows, [&](const trace::Event& e) {
    return std::make_pair(t.name(e), t.strings.get(t.op_inputs.at(e.inputs).dims));
  });
}

TEST(Operators, NativeCaptureWithoutOperatorsHasNoAttributionButModules) {
  // NVTX phase ranges (as the shim records) and kernels joined by correlation: modules, no operators.
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 1000)
                     .annotation("## forward ##", 0, 400)
                     .runtime("cudaLaunchKernel", 10, 5, 1)
                     .kernel("volta_sgemm_128x64_nn", 20, 300, 1)
                     .build();
  const auto r = build_report(t);
  EXPECT_TRUE(r["operators"]["attributed_fraction"].is_null());
  EXPECT_EQ(r["operators"]["modules"][0]["name"], "## forward ##");
  EXPECT_NEAR(r["operators"]["in_module_fraction"].get<double>(), 1.0, 1e-9);
}

// The shim's module ranges with ",backward": "nn.Module: enc" around the forward on the training thread and
// "nn.Module backward: enc" on the autograd engine's thread (as with CUDA tensors). The module has one row
// summing both, with the backward part apart; a kernel of the backward outside any module range is in no row.
trace::Trace forward_and_backward_module_ranges() {
  constexpr int64_t kEngine = 2;  // the autograd engine's device thread
  return TraceBuilder()
      .device(0)
      .annotation("ProfilerStep#1", 0, 1000)
      .annotation("## forward ##", 0, 300)
      .annotation("nn.Module: enc", 10, 200)
      .runtime("cudaLaunchKernel", 20, 5, 1)
      .kernel("volta_sgemm_128x64_nn", 30, 100, 1)
      .annotation("nn.Module: head", 220, 50)
      .runtime("cudaLaunchKernel", 230, 5, 2)
      .kernel("void at::native::vectorized_elementwise_kernel<4, float>", 240, 20, 2)
      .annotation("## backward ##", 300, 500)
      .annotation("nn.Module backward: head", 310, 40, kEngine)
      .runtime("cudaLaunchKernel", 320, 5, 3, kEngine)
      .kernel("void at::native::vectorized_elementwise_kernel<4, float>", 330, 30, 3)
      .annotation("nn.Module backward: enc", 360, 300, kEngine)
      .runtime("cudaLaunchKernel", 370, 5, 4, kEngine)
      .kernel("volta_sgemm_128x64_nt", 380, 150, 4)
      .runtime("cudaLaunchKernel", 540, 5, 5, kEngine)
      .kernel("volta_sgemm_128x64_tn", 550, 100, 5)
      .runtime("cudaLaunchKernel", 700, 5, 6, kEngine)  // after the module ranges: no module
      .kernel("void at::native::vectorized_elementwise_kernel<4, float>", 710, 40, 6)
      .build();
}

const nlohmann::json* module_row(const nlohmann::json& report, const std::string& name) {
  for (const auto& m : report["operators"]["modules"])
    if (m["name"] == name) return &m;
  return nullptr;
}

TEST(Operators, ModuleBackwardRangesCountIntoTheModulesRowWithTheBackwardApart) {
  const auto t = forward_and_backward_module_ranges();
  const auto r = build_report(t);
  ASSERT_EQ(r["steps"]["count"], 1) << r["steps"].dump();
  for (const auto& m : r["operators"]["modules"])
    EXPECT_NE(m["name"].get<std::string>().rfind("nn.Module backward:", 0), 0u) << "a row of its own: " << m.dump();
  const auto* enc = module_row(r, "nn.Module: enc");
  const auto* head = module_row(r, "nn.Module: head");
  ASSERT_NE(enc, nullptr) << r["operators"].dump();
  ASSERT_NE(head, nullptr) << r["operators"].dump();
  // enc: 100 us forward + 150 + 100 us backward; head: 20 us forward + 30 us backward (one step).
  EXPECT_NEAR((*enc)["gpu_ms_per_step"].get<double>(), 0.350, 1e-9);
  EXPECT_NEAR((*enc)["backward_gpu_ms_per_step"].get<double>(), 0.250, 1e-9);
  EXPECT_NEAR((*head)["gpu_ms_per_step"].get<double>(), 0.050, 1e-9);
  EXPECT_NEAR((*head)["backward_gpu_ms_per_step"].get<double>(), 0.030, 1e-9);
  EXPECT_EQ(r["operators"]["modules"][0]["name"], "nn.Module: enc");  // ranked by the sum
  // The backward kernel outside every module range (40 us of 440) is not in a module.
  EXPECT_NEAR(r["operators"]["in_module_fraction"].get<double>(), 400.0 / 440.0, 1e-6);
  // The typed rows agree: the backward part is in gpu_ns, by module.
  const TraceIndex idx = build_index(t);
  const OperatorAttribution a =
      attribute_operators(t, idx, windows_of(detect_steps(t, idx)), idx.main_device, busy_of(t, idx));
  EXPECT_TRUE(a.has_backward_modules);
  TimeNs backward = 0;
  for (const auto& m : a.modules) {
    EXPECT_LE(m.backward_ns, m.gpu_ns) << m.name;
    backward += m.backward_ns;
  }
  EXPECT_EQ(backward, TraceBuilder::ns(280));
}

TEST(Operators, WithoutModuleBackwardRangesTheModuleRowsHaveNoBackwardSplit) {
  // Forward ranges only (PROFILE_TRAIN_MODULE_RANGES=DEPTH, or a Kineto trace's nn.Module frames): the split is
  // unknown, so the key is absent rather than a misleading 0.
  const auto t = TraceBuilder()
                     .device(0)
                     .annotation("ProfilerStep#1", 0, 1000)
                     .annotation("## forward ##", 0, 300)
                     .annotation("nn.Module: enc", 10, 200)
                     .runtime("cudaLaunchKernel", 20, 5, 1)
                     .kernel("volta_sgemm_128x64_nn", 30, 100, 1)
                     .annotation("## backward ##", 300, 500)
                     .runtime("cudaLaunchKernel", 320, 5, 2)
                     .kernel("volta_sgemm_128x64_nt", 330, 100, 2)
                     .build();
  const auto r = build_report(t);
  const auto* enc = module_row(r, "nn.Module: enc");
  ASSERT_NE(enc, nullptr) << r["operators"].dump();
  EXPECT_NEAR((*enc)["gpu_ms_per_step"].get<double>(), 0.100, 1e-9);
  for (const auto& m : r["operators"]["modules"]) EXPECT_FALSE(m.contains("backward_gpu_ms_per_step")) << m.dump();
}

}  // namespace
}  // namespace profile_train::analysis
