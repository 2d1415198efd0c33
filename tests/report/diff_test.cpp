// diff of two reports: figures, verdict change, kernels/copies that changed most, text and loading.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace profile_train::report
