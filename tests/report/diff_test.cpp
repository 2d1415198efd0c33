// diff of two reports: figures, verdict change, kernels/copies that changed most, the headline (the neutral rule)
// and the comparability figures, text and loading.
#include <gtest/gtest.h>

#include <cmath>

#include <sstream>

#include "profile_train/analysis/diff.h"
#include "profile_train/model/report_json.h"
#include "profile_train/report/diff.h"
#include "test_util.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types
namespace {

using namespace profile_train::report::testing;
using nlohmann::json;

// B: the same run after a fix: data loading gone, faster steps, the conv kernel a bit faster, a new kernel,
// pinned H2D copies.
json improved(json b) {
  b["steps"]["mean_ms"] = 62.5;
  b["breakdown_ms"]["data_loading"] = 4.5;
  b["breakdown"]["data_loading"] = 0.072;
  b["verdict"]["bottleneck"] = "gpu_compute";
  auto& k = b["gpu"]["top_kernels"];
  k[0]["total_ms"] = 80.0;  // 98.4 -> 80.0 over 4 steps: 24.6 -> 20.0 ms/step
  k.erase(2);               // the clamp kernel is no longer in B's top list
  k.push_back({{"name", "new_fused_kernel"}, {"total_ms", 8.0}, {"count", 4}});
  b["gpu"]["memcpy"]["h2d"]["time_ms_per_step"] = 1.2;
  b["gpu"]["memcpy"]["h2d"]["pageable_fraction"] = 0.0;
  b["recommendations"] = json::array({b["recommendations"][1]});
  return b;
}

TEST(Diff, FiguresVerdictKernelsAndCopies) {
  const json a = fixture("report_input_pipeline.json");
  const json b = improved(a);
  const json d = to_json(analysis::diff_reports(typed_report(a), typed_report(b), "A", "B"));
  EXPECT_EQ(d["diff_version"], kDiffVersion);
  EXPECT_DOUBLE_EQ(d["step_time"]["a_ms"].get<double>(), 100.0);
  EXPECT_DOUBLE_EQ(d["step_time"]["b_ms"].get<double>(), 62.5);
  EXPECT_DOUBLE_EQ(d["step_time"]["ratio"].get<double>(), 0.625);
  EXPECT_DOUBLE_EQ(d["step_time"]["speedup"].get<double>(), 1.6);
  EXPECT_TRUE(d["verdict"]["changed"].get<bool>());
  EXPECT_EQ(d["verdict"]["b"], "gpu_compute");
  ASSERT_EQ(d["breakdown"].size(), 8u);
  for (const auto& c : d["breakdown"]) {
    if (c["category"] == "data_loading") {
      EXPECT_DOUBLE_EQ(c["delta_ms"].get<double>(), 4.5 - 42.0);
    }
  }
  // Kernels ordered by magnitude of change per step: conv (-4.6), clamp (only in A, 3.025), new (2.0), ...
  const auto& ks = d["kernels"];
  ASSERT_GE(ks.size(), 3u);
  EXPECT_EQ(ks[0]["name"], "volta_scudnn_128x64_relu_interior_nn_v1");
  EXPECT_NEAR(ks[0]["delta_ms_per_step"].get<double>(), 20.0 - 24.6, 1e-9);
  EXPECT_EQ(ks[1]["status"], "only_in_a_top");
  EXPECT_TRUE(ks[1]["b_ms_per_step"].is_null());
  EXPECT_EQ(ks[2]["name"], "new_fused_kernel");
  EXPECT_EQ(ks[2]["status"], "only_in_b_top");
  // Copies: h2d changed most.
  ASSERT_FALSE(d["copies"].empty());
  EXPECT_EQ(d["copies"][0]["direction"], "h2d");
  EXPECT_NEAR(d["copies"][0]["delta_ms_per_step"].get<double>(), 1.2 - 4.8, 1e-9);
  EXPECT_EQ(d["recommendations"]["resolved"], json::array({"dataloader-workers"}));
  EXPECT_TRUE(d["recommendations"]["new"].empty());
}

TEST(Diff, KernelTimePerStepIsOverTheSteadyStateSteps) {
  // B had 5 steps, one a warm-up left out: its top_kernels cover the 4 steady-state steps.
  const json a = fixture("report_input_pipeline.json");
  json b = a;
  b["steps"]["count"] = 5;
  b["steps"]["steady_state"] = {{"count", 4}};
  const json d = to_json(analysis::diff_reports(typed_report(a), typed_report(b), "A", "B"));
  for (const auto& k : d["kernels"]) EXPECT_NEAR(k["delta_ms_per_step"].get<double>(), 0.0, 1e-9) << k.dump();
}

TEST(Diff, TextShowsHeadlineFirstAndNoColorWhenOff) {
  const json a = fixture("report_input_pipeline.json");
  const Diff d = analysis::diff_reports(typed_report(a), typed_report(improved(a)), "before.json", "after.json");
  std::ostringstream out;
  write_diff_text(d, out, {});
  const std::string s = out.str();
  EXPECT_EQ(s.find('\x1b'), std::string::npos);
  EXPECT_LT(s.find("Step time"), s.find("Breakdown"));
  EXPECT_NE(s.find("100 ms -> 62.5 ms"), std::string::npos) << s;
  EXPECT_NE(s.find("1.60x faster"), std::string::npos) << s;
  EXPECT_NE(s.find("input_pipeline -> gpu_compute  (changed)"), std::string::npos) << s;
  EXPECT_NE(s.find("[not in B's top kernels]"), std::string::npos);
}

TEST(Diff, SameReportHasZeroDeltasAndUnchangedVerdict) {
  const json a = fixture("report_input_pipeline.json");
  const json d = to_json(analysis::diff_reports(typed_report(a), typed_report(a), "A", "A"));
  EXPECT_FALSE(d["verdict"]["changed"].get<bool>());
  EXPECT_DOUBLE_EQ(d["step_time"]["ratio"].get<double>(), 1.0);
  for (const auto& k : d["kernels"]) EXPECT_DOUBLE_EQ(k["delta_ms_per_step"].get<double>(), 0.0);
}

TEST(Diff, MissingValuesStayNull) {
  const Diff diff = analysis::diff_reports(typed_report(json::object()),
                                           typed_report(fixture("report_input_pipeline.json")), "empty", "B");
  const json d = to_json(diff);
  EXPECT_TRUE(d["step_time"]["ratio"].is_null());
  EXPECT_TRUE(d["breakdown"][0]["delta_ms"].is_null());
  std::ostringstream out;
  EXPECT_NO_THROW(write_diff_text(diff, out));
  EXPECT_NO_THROW(render_diff_html(diff));
}

TEST(Diff, LoadReportFromFileOrFolderAndRejectsBadInput) {
  const auto dir = temp_dir("diff-load");
  {
    std::ofstream(dir / "report.json") << fixture("report_input_pipeline.json").dump();
  }
  auto from_dir = load_report(dir);
  ASSERT_TRUE(from_dir.ok()) << from_dir.status().message();
  EXPECT_EQ(from_dir->verdict.bottleneck, Bottleneck::kInputPipeline);
  EXPECT_TRUE(load_report(dir / "report.json").ok());
  const auto empty = temp_dir("diff-empty");
  EXPECT_EQ(load_report(empty).status().code(), StatusCode::kNotFound);
  std::ofstream(empty / "bad.json") << "{\"schema_version\": \"2.0\"}";
  EXPECT_EQ(load_report(empty / "bad.json").status().code(), StatusCode::kUnsupported);
  std::ofstream(empty / "trunc.json") << "{\"schema_version\": ";
  auto t = load_report(empty / "trunc.json");
  EXPECT_EQ(t.status().code(), StatusCode::kBadInput);
  EXPECT_NE(t.status().message().find("trunc.json"), std::string::npos);
}

// A report.json that is JSON with a 1.x schema_version but whose keys have the wrong types is not a report:
// one BadInput naming the file and the key, not a diff of defaults.
TEST(Diff, LoadReportRejectsAReportOfTheWrongShape) {
  const auto dir = temp_dir("diff-shape");
  json bad = fixture("report_input_pipeline.json");
  bad["steps"]["count"] = "many";
  std::ofstream(dir / "report.json") << bad.dump();
  auto r = load_report(dir);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
  EXPECT_NE(r.status().message().find("report.json"), std::string::npos) << r.status().message();
  EXPECT_NE(r.status().message().find("steps.count"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find('\n'), std::string::npos) << r.status().message();
}

TEST(Diff, HtmlEscapesLabelsAndKernelNames) {
  const json a = fixture("report_input_pipeline.json");
  const std::string html =
      render_diff_html(analysis::diff_reports(typed_report(a), typed_report(improved(a)), "<i>A</i>", "B"));
  EXPECT_EQ(html.find("<script>alert(1)"), std::string::npos);
  EXPECT_NE(html.find("&lt;i&gt;A&lt;/i&gt;"), std::string::npos);
  EXPECT_EQ(count_of(html, "<script"), 2u);  // head hook + render marker
}

// The fixture (mean step 100 ms) with its step time and spread set.
json with_steps(double mean_ms, double stddev_ms) {
  json r = fixture("report_input_pipeline.json");
  r["steps"]["mean_ms"] = mean_ms;
  r["steps"]["stddev_ms"] = stddev_ms;
  return r;
}

std::string text_of(const Diff& d) {
  std::ostringstream out;
  write_diff_text(d, out, {});
  return out.str();
}

// ---- the neutral rule --------------------------------------------------------------------------------------

TEST(DiffHeadline, AStepTimeWithinTheFloorIsNeutralEvenWhenKernelTimeChanged) {
  const json a = with_steps(100.0, 0.5);  // spread 0.5%: the 3% floor decides
  json b = with_steps(102.0, 0.5);
  b["gpu"]["top_kernels"][0]["total_ms"] = 60.0;  // the conv kernel 24.6 -> 15 ms per step
  b["breakdown_ms"]["kernel"] = 32.5;             // kernel time -10 ms per step
  b["breakdown_ms"]["cpu"] = 15.25;               // CPU +12 ms per step
  const Diff d = analysis::diff_reports(typed_report(a), typed_report(b), "A", "B");
  EXPECT_EQ(d.headline.step_time, StepChange::kNeutral);
  ASSERT_TRUE(d.headline.threshold && d.headline.relative_change);
  EXPECT_DOUBLE_EQ(*d.headline.threshold, kNeutralFloor);
  EXPECT_NEAR(*d.headline.relative_change, 0.02, 1e-12);
  // What did change: the categories that moved by >= 3% of A's step, largest first.
  EXPECT_EQ(d.headline.changed_categories, (std::vector<Role>{Role::kCpu, Role::kKernel}));
  const std::string s = text_of(d);
  EXPECT_NE(s.find("Step time   100 ms -> 102 ms  (+2.00 ms, B/A = 1.020): no change in step time beyond its spread "
                   "(\xC2\xB1" "3.0%)\n"),
            std::string::npos)
      << s;
  EXPECT_EQ(s.find("faster"), std::string::npos) << s;
  EXPECT_EQ(s.find("slower"), std::string::npos) << s;
  EXPECT_NE(s.find("Changed     CPU compute +12.0 ms, GPU kernels \xE2\x88\x92" "10.0 ms per step\n"), std::string::npos) << s;
  const std::string html = render_diff_html(d);
  EXPECT_NE(html.find("<h1>No change in step time beyond its spread</h1>"), std::string::npos);
  EXPECT_NE(html.find("Changed: CPU compute +12.0 ms, GPU kernels"), std::string::npos);
  const json j = to_json(d);
  EXPECT_EQ(j["headline"]["step_time"], "neutral");
  EXPECT_EQ(j["headline"]["changed_categories"], json::array({"cpu", "kernel"}));
  EXPECT_EQ(j["kind"], "reports");
  EXPECT_TRUE(j["job"].is_null());
}

TEST(DiffHeadline, AStepTimeBeyondTheThresholdIsAChangeAndKeepsTheSpeedupLine) {
  const Diff slower =
      analysis::diff_reports(typed_report(with_steps(100.0, 0.5)), typed_report(with_steps(104.0, 0.5)), "A", "B");
  EXPECT_EQ(slower.headline.step_time, StepChange::kSlower);
  const std::string s = text_of(slower);
  EXPECT_NE(s.find("Step time   100 ms -> 104 ms  (+4.00 ms, B/A = 1.040, 1.04x slower)\n"), std::string::npos) << s;
  EXPECT_EQ(s.find("Changed "), std::string::npos) << s;
  EXPECT_NE(render_diff_html(slower).find("<h1>1.04\xC3\x97 slower</h1>"), std::string::npos);
  const Diff faster =
      analysis::diff_reports(typed_report(with_steps(100.0, 0.5)), typed_report(with_steps(95.0, 0.5)), "A", "B");
  EXPECT_EQ(faster.headline.step_time, StepChange::kFaster);
}

TEST(DiffHeadline, TheStandardErrorOfTheDifferenceSetsTheThreshold) {
  // 4 steps a side (the fixture's count; no steady-state summary): A's stddev 1 ms, B's 22 ms:
  // 2 x sqrt(1/4 + 484/4) / 100 = 22.0%, so +10% is within it.
  const Diff d = analysis::diff_reports(typed_report(with_steps(100.0, 1.0)), typed_report(with_steps(110.0, 22.0)), "A", "B");
  ASSERT_TRUE(d.headline.threshold);
  EXPECT_NEAR(*d.headline.threshold, 2 * std::sqrt(1.0 / 4 + 484.0 / 4) / 100, 1e-6);
  EXPECT_EQ(d.headline.step_time, StepChange::kNeutral);
  // The same move with both spreads small is a change.
  const Diff tight =
      analysis::diff_reports(typed_report(with_steps(100.0, 1.0)), typed_report(with_steps(110.0, 1.1)), "A", "B");
  EXPECT_NEAR(*tight.headline.threshold, kNeutralFloor, 1e-12);
  EXPECT_EQ(tight.headline.step_time, StepChange::kSlower);
  // More steps shrink the standard error: the 22 ms spread over 100 steps a side no longer hides +10%.
  json many_a = with_steps(100.0, 1.0), many_b = with_steps(110.0, 22.0);
  many_a["steps"]["count"] = many_b["steps"]["count"] = 100;
  const Diff many = analysis::diff_reports(typed_report(many_a), typed_report(many_b), "A", "B");
  EXPECT_EQ(many.headline.step_time, StepChange::kSlower);
  // Just past the threshold: +23% against 22.0% is slower.
  const Diff past =
      analysis::diff_reports(typed_report(with_steps(100.0, 1.0)), typed_report(with_steps(123.0, 22.0)), "A", "B");
  EXPECT_EQ(past.headline.step_time, StepChange::kSlower);
}

TEST(DiffHeadline, WithoutStepTimesTheHeadlineIsUnknown) {
  const Diff d = analysis::diff_reports(typed_report(json::object()), typed_report(fixture("report_input_pipeline.json")),
                                        "empty", "B");
  EXPECT_EQ(d.headline.step_time, StepChange::kUnknown);
  EXPECT_FALSE(d.headline.threshold);
  const json j = to_json(d);
  EXPECT_TRUE(j["headline"]["threshold"].is_null());
  EXPECT_EQ(j["headline"]["step_time"], "unknown");
  EXPECT_NE(text_of(d).find("Comparable  window n/a -> 4 steps x 100 ms = 400 ms"), std::string::npos) << text_of(d);
}

// ---- comparability -----------------------------------------------------------------------------------------

TEST(DiffComparability, WindowsStepCountsAndSharedKernelTime) {
  json a = fixture("report_input_pipeline.json");
  json b = a;
  b["steps"]["count"] = 5;
  b["steps"]["steady_state"] = {{"count", 4}};
  b["gpu"]["top_kernels"].erase(2);  // the clamp kernel is in A's top list only
  const Diff d = analysis::diff_reports(typed_report(a), typed_report(b), "A", "B");
  const DiffWindow& wa = d.comparability.a;
  const DiffWindow& wb = d.comparability.b;
  EXPECT_EQ(wa.steps, 4);
  EXPECT_EQ(wa.steady_steps, 4);
  EXPECT_EQ(wb.steps, 5);
  EXPECT_EQ(wb.steady_steps, 4);
  ASSERT_TRUE(wa.window_ms && wb.window_ms);
  EXPECT_DOUBLE_EQ(*wa.window_ms, 400.0);
  EXPECT_NEAR(*wa.relative_stddev, 0.091, 1e-12);
  // Kernel time: the top list's total over its share of all kernel time.
  const double a_kernels = (98.4 + 3.2 + 12.1) / (0.231 + 0.0075 + 0.028);
  ASSERT_TRUE(wa.kernel_ms && wa.shared_kernel_fraction);
  EXPECT_NEAR(*wa.kernel_ms, a_kernels, 1e-6);  // figures are rounded to 6 decimals
  EXPECT_NEAR(*wa.shared_kernel_fraction, (98.4 + 3.2) / a_kernels, 1e-6);
  const double b_kernels = (98.4 + 3.2) / (0.231 + 0.0075);
  EXPECT_NEAR(*wb.shared_kernel_fraction, (98.4 + 3.2) / b_kernels, 1e-6);  // all of B's top list is shared
  const std::string s = text_of(d);
  EXPECT_NE(s.find("Comparable  window 4 steps x 100 ms = 400 ms -> 4 steps (of 5) x 100 ms = 400 ms; step spread "
                   "\xC2\xB1" "9.1% -> \xC2\xB1" "9.1%, threshold \xC2\xB1" "12.9%; kernels in both top lists: 23.8% of "
                   "A's kernel time, "),  // B's 23.85% rounds either way
            std::string::npos)
      << s;
  const json j = to_json(d);
  EXPECT_EQ(j["diff_version"], "1.1");
  EXPECT_EQ(j["comparability"]["b"]["steps"], 5);
  EXPECT_EQ(j["comparability"]["b"]["steady_steps"], 4);
  EXPECT_DOUBLE_EQ(j["comparability"]["a"]["window_ms"].get<double>(), 400.0);
  EXPECT_NE(render_diff_html(d).find("<section id=\"diff-comparability\">"), std::string::npos);
}

TEST(DiffComparability, ASideWithoutKernelsHasNoSharedKernelTime) {
  json b = fixture("report_input_pipeline.json");
  b["gpu"]["top_kernels"] = json::array();
  const Diff d = analysis::diff_reports(typed_report(fixture("report_input_pipeline.json")), typed_report(b), "A", "B");
  EXPECT_FALSE(d.comparability.b.kernel_ms);
  EXPECT_FALSE(d.comparability.b.shared_kernel_fraction);
  EXPECT_DOUBLE_EQ(*d.comparability.a.shared_kernel_fraction, 0.0);
  EXPECT_NE(text_of(d).find("; no GPU kernels in B\n"), std::string::npos) << text_of(d);
}

}  // namespace
}  // namespace profile_train::report
