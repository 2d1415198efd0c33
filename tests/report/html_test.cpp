// HTML report rendering: structure, escaping of program-supplied names, bounded timeline size.
#include <gtest/gtest.h>

#include <set>

#include "assets.h"
#include "html_common.h"
#include "profile_train/report/escape.h"
#include "profile_train/report/writers.h"
#include "synthetic.h"
#include "test_util.h"
#include "timeline.h"

namespace profile_train::report {
namespace {

using namespace profile_train::report::testing;
using nlohmann::json;

TEST(Escape, JsonStringIsScriptSafeAndValid) {
  std::string out;
  detail::append_json_string(out, std::string("a</script><b>&\xE2\x80\xA8\x01\"\\") + "\xFF" + "z");
  EXPECT_EQ(out.find('<'), std::string::npos);
  EXPECT_EQ(out.find('>'), std::string::npos);
  EXPECT_EQ(out.find("\xE2\x80\xA8"), std::string::npos);
  const json parsed = json::parse(out);  // valid JSON
  EXPECT_EQ(parsed.get<std::string>(), std::string("a</script><b>&\xE2\x80\xA8\x01\"\\") + "\xEF\xBF\xBD" + "z");
}

TEST(Escape, ScriptSafeJsonRoundTrips) {
  json j = {{"k", "<script>alert(1)</script> & \xE2\x80\xA9"}, {"bad", std::string("\xC3")}};
  const std::string s = detail::script_safe_json(j);
  EXPECT_EQ(s.find("<"), std::string::npos);
  EXPECT_EQ(s.find("\xE2\x80\xA9"), std::string::npos);
  const json back = json::parse(s);
  EXPECT_EQ(back["k"], j["k"]);
  EXPECT_EQ(back["bad"].get<std::string>(), "\xEF\xBF\xBD");
}

TEST(Escape, HtmlEscapesMarkupAndTruncatesOnCharBoundary) {
  EXPECT_EQ(detail::html_escape("<a href='x'>&\"</a>"), "&lt;a href=&#39;x&#39;&gt;&amp;&quot;&lt;/a&gt;");
  const std::string cut = detail::truncate_utf8("ab\xC3\xA9" "cd", 3);  // would split U+00E9
  EXPECT_EQ(cut, "ab\xE2\x80\xA6");
}

TEST(Html, FixtureRendersAllSectionsWithEscapedNames) {
  const json report = fixture("report_input_pipeline.json");
  const auto trace = make_training_trace(4, 40, 100'000'000);
  const std::string html = render_html(typed_report(report), &trace);
  // Sections the page promises.
  for (const char* id : {"id=\"verdict\"", "id=\"breakdown-chart\"", "id=\"recs-list\"", "id=\"timeline\"",
                         "id=\"kernels-table\"", "id=\"copies-table\"", "id=\"memory\"", "id=\"data-quality\""})
    EXPECT_NE(html.find(id), std::string::npos) << id;
  EXPECT_NE(html.find("data-bottleneck=\"input_pipeline\""), std::string::npos);
  EXPECT_NE(html.find("Input pipeline"), std::string::npos);
  // Per-step bars (4) + the mean bar.
  EXPECT_NE(html.find("data-bars=\"5\""), std::string::npos);
  EXPECT_EQ(count_of(html, "<li class=\"rec rec-"), 2u);
  EXPECT_EQ(count_of(html, "class=\"copy\""), 4u);  // python + C++ for both recommendations
  // Hostile names render as text: only our own three <script> elements exist.
  EXPECT_EQ(count_of(html, "<script"), 3u);
  EXPECT_EQ(html.find("<script>alert"), std::string::npos);
  EXPECT_EQ(html.find("<img src=x"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;alert(1)&lt;/script&gt;"), std::string::npos);
  EXPECT_NE(html.find("SGD&lt;/td&gt;&lt;script&gt;alert(3)"), std::string::npos);
  // javascript: references stay text, https ones become links.
  EXPECT_EQ(html.find("href=\"javascript:"), std::string::npos);
  EXPECT_NE(html.find("href=\"https://pytorch.org/docs/stable/data.html"), std::string::npos);
  // No network: no external URL is loaded by any element.
  EXPECT_EQ(html.find("src=\"http"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_NE(html.find("default-src 'none'"), std::string::npos);
}

TEST(Html, EmbeddedTimelineDataIsValidJsonWithTheHostileNameAsData) {
  const json report = fixture("report_input_pipeline.json");
  const auto trace = make_training_trace(4, 40, 100'000'000);
  const std::string html = render_html(typed_report(report), &trace);
  auto text = embedded_data(html);
  ASSERT_TRUE(text.has_value());
  EXPECT_EQ(text->find('<'), std::string::npos);
  const json data = json::parse(*text);
  const json& tl = data["timeline"];
  ASSERT_TRUE(tl.is_object());
  bool found = false;
  for (const auto& n : tl["names"]) found |= n == "<script>alert(1)</script>";
  EXPECT_TRUE(found);
  // The fixture's median is 98 ms: the first step with that duration is ProfilerStep#2 at 1.114 s.
  EXPECT_EQ(tl["window"]["label"], "ProfilerStep#2 (median step of 4)");
  EXPECT_EQ(tl["window"]["start_ns"], 1114000000);
  // Events: stride 8, drawn == ev/stride, GPU and CPU tracks present.
  EXPECT_EQ(tl["ev"].size(), tl["drawn"].get<size_t>() * 8);
  bool cpu = false, gpu = false;
  for (const auto& t : tl["tracks"]) cpu |= t["kind"] == "cpu", gpu |= t["kind"] == "gpu";
  EXPECT_TRUE(cpu && gpu);
}

TEST(Timeline, CountsAddUpWhenNothingIsMerged) {
  const auto trace = make_training_trace(3, 20, 50'000'000);
  json report = {{"steps", {{"median_ms", 50.0},
                            {"per_step", json::array({{{"name", "s0"}, {"start_ns", 1000000000}, {"duration_ms", 50.0}}})}}}};
  const json tl = detail::build_timeline(typed_report(report), trace);
  ASSERT_TRUE(tl.is_object());
  // Independently: events of drawable categories overlapping [1.00 s, 1.05 s].
  int64_t expected = 0;
  for (const auto& e : trace.events)
    if (e.cat != trace::Category::kGpuAnnotation && e.end_ns() >= 1000000000 && e.start_ns <= 1050000000) ++expected;
  EXPECT_EQ(tl["total"].get<int64_t>(), expected);
  EXPECT_EQ(tl["drawn"].get<int64_t>(), expected);
  EXPECT_EQ(tl["merged_blocks"].get<int64_t>(), 0);
}

// Kineto traces carry epoch timestamps in ns (~1.7e18, past the 2^53 a double holds exactly): the window is
// the step's own start, to the nanosecond, not the nearest double.
TEST(Timeline, WindowStartsExactlyAtAStepWithAnEpochTimestamp) {
  auto trace = make_training_trace(1, 5, 50'000'000);
  const int64_t offset = 1'700'000'000'000'000'001;  // odd: no double near 1.7e18 is
  for (auto& e : trace.events) e.start_ns += offset;
  trace.finalize();
  const int64_t start = 1'000'000'000 + offset;
  json report = {{"steps", {{"per_step", json::array({{{"name", "s0"}, {"start_ns", start}, {"duration_ms", 50.0}}})}}}};
  const json tl = detail::build_timeline(typed_report(report), trace);
  ASSERT_TRUE(tl.is_object());
  EXPECT_EQ(tl["window"]["start_ns"].get<int64_t>(), start);
  EXPECT_EQ(tl["window"]["end_ns"].get<int64_t>(), start + 50'000'000);
}

TEST(Timeline, HugeStepIsMergedUnderTheBudgetAndEveryEventIsAccountedFor) {
  // One step with 150k kernels (300k+ events): must be summarized.
  const auto trace = make_training_trace(1, 150000, 2'000'000'000);
  json report = {{"steps", {{"per_step", json::array({{{"name", "big"}, {"start_ns", 1000000000}, {"duration_ms", 2000.0}}})}}}};
  detail::TimelineLimits limits;
  const json tl = detail::build_timeline(typed_report(report), trace, limits);
  ASSERT_TRUE(tl.is_object());
  const auto total = tl["total"].get<int64_t>();
  EXPECT_GT(total, 300000);
  EXPECT_LE(tl["drawn"].get<size_t>(), limits.max_events);
  EXPECT_GT(tl["merged_blocks"].get<int64_t>(), 0);
  // Sum of per-block counts + everything dropped == total.
  int64_t counted = 0;
  const auto& ev = tl["ev"];
  for (size_t i = 0; i < ev.size(); i += 8) counted += ev[i + 6].get<int64_t>();
  counted += tl["dropped_depth"].get<int64_t>() + tl["dropped_track_events"].get<int64_t>() +
             tl["dropped_budget"].get<int64_t>();
  EXPECT_EQ(counted, total);
  const std::string html = render_html(typed_report(report), &trace);
  EXPECT_LT(html.size(), size_t{10} << 20);
}

TEST(Html, StepsSectionShowsTheExcludedStepsAndThePhases) {
  json report = fixture("report_input_pipeline.json");
  report["steps"]["count"] = 10;
  report["steps"]["steady_state"] = {
      {"count", 9}, {"excluded_count", 1}, {"excluded_ms", 8900.0}, {"mean_all_ms", 940.0}, {"median_all_ms", 56.0},
      {"mad_all_ms", 1.0},
      {"excluded", json::array({{{"index", 0}, {"name", "iteration#0<b>"}, {"reason", "warm-up"}, {"duration_ms", 8900.0}}})}};
  report["phases"] = {{"ms_per_step", {{"forward", 20.0}, {"backward", 30.0}, {"optimizer", nullptr}, {"data_wait", 5.0}, {"other", 1.0}}},
                      {"fraction", {{"forward", 0.357}, {"backward", 0.536}, {"optimizer", nullptr}, {"data_wait", 0.089}, {"other", 0.018}}},
                      {"backward_from", "## backward ##"}};
  const std::string html = render_html(typed_report(report), nullptr);
  const size_t at = html.find("id=\"steps-excluded\"");
  ASSERT_NE(at, std::string::npos);
  const std::string table = html.substr(at, html.find("</table>", at) - at);
  EXPECT_NE(table.find("warm-up"), std::string::npos);
  EXPECT_NE(table.find("iteration#0&lt;b&gt;"), std::string::npos);
  EXPECT_NE(html.find("9 steady-state of 10 steps"), std::string::npos);
  // In the per-step chart the excluded step's bar is marked (the fixture's first step stands for it here).
  json marked = report;
  marked["steps"]["per_step"][0]["excluded"] = "warm-up";
  EXPECT_EQ(count_of(render_html(typed_report(marked), nullptr), "bar-excluded"), 1u);
  EXPECT_NE(html.find("data-phase=\"backward\""), std::string::npos);
  const size_t opt = html.find("data-phase=\"optimizer\"");
  ASSERT_NE(opt, std::string::npos);
  EXPECT_NE(html.substr(opt, html.find("</tr>", opt) - opt).find("\xE2\x80\x94"), std::string::npos);  // unknown: a dash
  // Without steady-state exclusions or phases: the section says so and has neither table.
  const std::string plain = render_html(typed_report(fixture("report_input_pipeline.json")), nullptr);
  EXPECT_EQ(plain.find("id=\"steps-excluded\""), std::string::npos);
  EXPECT_EQ(plain.find("id=\"phases\""), std::string::npos);
}

// Module rows with the shim's backward ranges show the forward / backward split; without them the table keeps its
// two columns (the split is unknown there, not zero).
TEST(Html, ModulesTableSplitsForwardAndBackwardWhenTheTraceHasModuleBackwardRanges) {
  json report = fixture("report_input_pipeline.json");
  report["operators"]["modules"] = json::array(
      {{{"name", "nn.Module: enc"}, {"gpu_ms_per_step", 3.5}, {"gpu_share", 0.7}, {"backward_gpu_ms_per_step", 2.5}},
       {{"name", "## forward ##"}, {"gpu_ms_per_step", 1.0}, {"gpu_share", 0.2}, {"backward_gpu_ms_per_step", 0.0}}});
  const auto table_of = [](const std::string& html) {
    const size_t at = html.find("id=\"operators-module-table\"");
    return at == std::string::npos ? std::string() : html.substr(at, html.find("</table>", at) - at);
  };
  const std::string split = table_of(render_html(typed_report(report), nullptr));
  ASSERT_FALSE(split.empty());
  EXPECT_NE(split.find("Forward / step"), std::string::npos);
  EXPECT_NE(split.find("Backward / step"), std::string::npos);
  const size_t enc = split.find("nn.Module: enc");
  ASSERT_NE(enc, std::string::npos);
  const std::string row = split.substr(enc, split.find("</tr>", enc) - enc);
  EXPECT_NE(row.find("data-v=\"1.000000\""), std::string::npos) << row;  // forward = 3.5 - 2.5 ms
  EXPECT_NE(row.find("data-v=\"2.500000\""), std::string::npos) << row;
  for (auto& m : report["operators"]["modules"]) m.erase("backward_gpu_ms_per_step");
  const std::string plain = table_of(render_html(typed_report(report), nullptr));
  ASSERT_FALSE(plain.empty());
  EXPECT_EQ(plain.find("Backward / step"), std::string::npos);
  EXPECT_EQ(plain.find("Forward / step"), std::string::npos);
}

// The display tables keyed by the vocabularies cover every value (a missing initializer would leave a null
// label), and no two values look alike.
TEST(Html, EveryRoleAndBottleneckHasItsOwnLabel) {
  std::set<std::string> role_labels, colours;
  for (Role role : kAllRoles) {
    const auto& style = detail::style_of(role);
    ASSERT_NE(style.label, nullptr) << name_of(role);
    ASSERT_NE(style.color, nullptr) << name_of(role);
    role_labels.insert(style.label);
    colours.insert(style.color);
  }
  EXPECT_EQ(role_labels.size(), kRoleCount);
  EXPECT_EQ(colours.size(), kRoleCount);
  std::set<std::string> labels;
  for (size_t i = 0; i < kBottleneckCount; ++i) {
    const auto b = static_cast<Bottleneck>(i);
    const std::string label = detail::bottleneck_label(b);
    EXPECT_FALSE(label.empty()) << name_of(b);
    labels.insert(label);
  }
  EXPECT_EQ(labels.size(), kBottleneckCount);
}

TEST(Html, RendersWithoutTraceAndWithAnEmptyReport) {
  const std::string a = render_html(typed_report(fixture("report_input_pipeline.json")), nullptr);
  EXPECT_NE(a.find("no timeline"), std::string::npos);
  const std::string b = render_html(typed_report(json::object()), nullptr);
  EXPECT_NE(b.find("data-bottleneck=\"unknown\""), std::string::npos);
  EXPECT_NE(b.find("No step breakdown"), std::string::npos);
  // Mistyped values stop at the typed report (one BadInput naming the key), never reach the writer.
  json odd = {{"steps", {{"mean_ms", "fast"}, {"per_step", 3}}}, {"gpu", {{"top_kernels", {{"a", 1}}}}},
              {"recommendations", json::array({1, "x", json::object()})}};
  const auto parsed = report_from_json(odd);
  ASSERT_FALSE(parsed.ok());
  EXPECT_EQ(parsed.status().code(), StatusCode::kBadInput);
}

// Issue 17 item 11: a Python program's report shows the Python fix, the C++ one folded; a LibTorch program's
// (the built-in workload, a native capture without the shim) the other way round.
TEST(Html, FixSnippetInTheProgramsOwnLanguageFirst) {
  json report = fixture("report_input_pipeline.json");
  ASSERT_FALSE(report["recommendations"].empty());
  auto first_of = [](const std::string& html) {
    const auto at = html.find("data-first=\"");
    return at == std::string::npos ? std::string() : html.substr(at + 12, html.find('"', at + 12) - at - 12);
  };
  report["source"]["format"] = "native";
  report["facts"]["capture"]["shim"] = true;
  const std::string py = render_html(typed_report(report), nullptr);
  EXPECT_EQ(first_of(py), "python");
  EXPECT_NE(py.find("LibTorch (C++) version</summary>"), std::string::npos);
  report["facts"].erase("capture");
  report["facts"].erase("versions");
  report["facts"]["workload"]["name"] = "mlp";
  const std::string cpp = render_html(typed_report(report), nullptr);
  EXPECT_EQ(first_of(cpp), "cpp");
  EXPECT_NE(cpp.find("PyTorch (Python) version</summary>"), std::string::npos);
}

TEST(Html, DeviceCardSaysCpuWhenTheRunHadNoGpuAndUnknownWhenTheTraceIsSilent) {
  const std::string cpu = render_html(typed_report(json{{"source", {{"has_gpu_activity", false}}}}), nullptr);
  EXPECT_NE(cpu.find("CPU (no GPU activity)"), std::string::npos);
  const std::string silent = render_html(typed_report(json{{"source", {{"has_gpu_activity", true}}}}), nullptr);
  EXPECT_EQ(silent.find("CPU (no GPU activity)"), std::string::npos);
}

// A run that used no GPU (issue 29, item 22): no GPU panels of dashes and zeros, the GPU inputs not listed as
// missing, the command in the banner styled for the dark banner, and the machine's load in the metrics. A
// Kineto trace without GPU activity and without the shim's facts keeps its panels and its missing inputs.
TEST(Html, ARunWithoutAGpuHasNoGpuPanelsAndNoMissingGpuInputs) {
  json j = fixture("report_input_pipeline.json");
  j["source"]["has_gpu_activity"] = false;
  j["source"]["missing"] = json::array({"gpu_activity", "deviceProperties"});
  j["device"] = nullptr;
  j["gpu"]["top_kernels"] = json::array();
  j["facts"]["gpu"] = {{"available", false}};
  model::Report r = typed_report(j);
  model::RunInfo& run = r.source.run.emplace();
  run.command = {"python", "train.py"};
  run.exit_code = 0;
  model::HostLoad load;
  load.cpus = 2;
  load.load_1m_start = 11.8;
  load.load_1m_end = 12.4;
  load.wall_s = 8.8;
  load.cpu_time_s = 9.7;
  load.cpus_used = 9.7 / 8.8;
  load.oversubscribed = true;
  run.host_load = load;
  const std::string cpu = render_html(r, nullptr);
  for (const char* gone : {"id=\"kernels\"", "id=\"copies\"", "id=\"memory\"", "href=\"#kernels\"", "href=\"#memory\"",
                           "kpi-gpu-util", "GPU busy", "SM efficiency", "Missing from the input: gpu_activity",
                           "Missing from the input: deviceProperties", "<dt>missing_device_properties</dt>"})
    EXPECT_EQ(cpu.find(gone), std::string::npos) << gone;
  for (const char* kept : {"id=\"run-command\"", "kpi-cpu-use", "CPUs busy with the command", "11.80 \xE2\x86\x92 12.40",
                           "id=\"breakdown\"", "id=\"data-quality\""})
    EXPECT_NE(cpu.find(kept), std::string::npos) << kept;
  EXPECT_NE(cpu.find(".banner .run-command code"), std::string::npos) << "no light style for the banner's command";
  // The breakdown table has no GPU rows of zeros.
  EXPECT_EQ(cpu.find("<td>Kernel</td>"), std::string::npos);

  json kineto = j;
  kineto["facts"].erase("gpu");
  const std::string silent = render_html(typed_report(kineto), nullptr);
  EXPECT_NE(silent.find("id=\"kernels\""), std::string::npos);
  EXPECT_NE(silent.find("Missing from the input: gpu_activity"), std::string::npos);
}

// `run`'s command and how it ended are in the banner, a clean exit too (not only a failure's note); a report
// of `analyze` has none. The command is escaped like every program-supplied string.
TEST(Html, ARunNamesItsCommandAndHowItEnded) {
  model::Report r;
  model::RunInfo& run = r.source.run.emplace();
  run.command = {"python", "train.py", "--tag", "<b>x y</b>"};
  run.exit_code = 0;
  const std::string ok = render_html(r, nullptr);
  const size_t at = ok.find("id=\"run-command\"");
  ASSERT_NE(at, std::string::npos);
  const std::string line = ok.substr(at, ok.find("</p>", at) - at);
  EXPECT_NE(line.find("python train.py --tag &#39;&lt;b&gt;x y&lt;/b&gt;&#39;"), std::string::npos) << line;
  EXPECT_NE(line.find("exited with code 0"), std::string::npos) << line;
  EXPECT_EQ(ok.find("<b>x y</b>"), std::string::npos) << "unescaped";

  run.exit_code.reset();
  run.signal = "SIGSEGV";
  run.crash = "the command crashed (SIGSEGV); the report covers the capture up to the crash";
  EXPECT_NE(render_html(r, nullptr).find("crashed (SIGSEGV)"), std::string::npos);
  // (The element, not the stylesheet's rule for it.)
  EXPECT_EQ(render_html(model::Report{}, nullptr).find("id=\"run-command\""), std::string::npos);
}

TEST(Html, WriteHtmlWritesTheFileAndReportsIoErrors) {
  const auto dir = temp_dir("html");
  const auto trace = make_training_trace(2, 10, 10'000'000);
  ASSERT_TRUE(write_html(typed_report(fixture("report_input_pipeline.json")), &trace, dir / "report.html").ok());
  EXPECT_GT(std::filesystem::file_size(dir / "report.html"), 1000u);
  const Status bad = write_html(typed_report(json::object()), nullptr, dir / "no-such-dir" / "report.html");
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("no-such-dir"), std::string::npos);
}

}  // namespace
}  // namespace profile_train::report

namespace profile_train::report {
namespace {
TEST(Html, EmbeddedAssetsCannotCloseTheirOwnBlocks) {
  auto lower = [](std::string_view s) {
    std::string out(s);
    for (auto& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return out;
  };
  for (auto asset : {detail::asset_report_js(), detail::asset_head_js()}) {
    EXPECT_EQ(lower(asset).find("</script"), std::string::npos);
    EXPECT_EQ(lower(asset).find("<script"), std::string::npos);
    EXPECT_EQ(lower(asset).find("<body"), std::string::npos);  // tests look for the real body tag
  }
  EXPECT_EQ(lower(detail::asset_report_css()).find("</style"), std::string::npos);
}
}  // namespace
}  // namespace profile_train::report

namespace profile_train::report {
namespace {

using nlohmann::json;

// Issue 14 item 1: the operator tables show each row's leading input shapes (escaped, bounded), and have no
// shapes column when the trace recorded none.
TEST(Html, OperatorTablesShowTheLeadingInputShapes) {
  const std::string hostile = "[[1, 2]]</code><script>x()</script>";
  json group = {{"shapes", "[[256, 1024], [1024, 4096]]"}, {"types", "[float, float]"}, {"calls_per_step", 2.0},
                {"gpu_ms_per_step", 1.5}, {"host_self_ms_per_step", 0.25}};
  json other = {{"shapes", hostile + std::string(3000, 'x')}, {"types", nullptr}, {"calls_per_step", 1.0},
                {"gpu_ms_per_step", 0.5}, {"host_self_ms_per_step", 0.1}};
  json unrecorded = {{"shapes", nullptr}, {"types", nullptr}, {"calls_per_step", 1.0}, {"gpu_ms_per_step", 0.1},
                     {"host_self_ms_per_step", 0.0}};
  json ops = {{"top_by_gpu_time",
               {{{"name", "aten::addmm"}, {"gpu_ms_per_step", 2.1}, {"gpu_share", 0.5}, {"calls_per_step", 4.0},
                 {"host_self_ms_per_step", 0.35}, {"input_shapes", {group, other, unrecorded}},
                 {"input_shape_groups", 5}}}},
              {"top_by_host_time",
               {{{"name", "aten::addmm"}, {"host_self_ms_per_step", 0.35}, {"host_share", 0.1}, {"calls_per_step", 4.0},
                 {"gpu_ms_per_step", 2.1}, {"input_shapes", {group}}, {"input_shape_groups", 1}}}}};
  const std::string html = render_html(testing::typed_report(json{{"operators", ops}}), nullptr);
  const auto gpu_table = html.substr(html.find("id=\"operators-gpu-table\""));
  EXPECT_NE(gpu_table.find("<th>Leading input shapes</th>"), std::string::npos);
  EXPECT_NE(gpu_table.find(">[[256, 1024], [1024, 4096]]</code>"), std::string::npos);
  EXPECT_NE(gpu_table.find("[float, float]"), std::string::npos);
  EXPECT_NE(gpu_table.find("not recorded"), std::string::npos);
  EXPECT_NE(gpu_table.find("2 more signatures"), std::string::npos);
  EXPECT_EQ(html.find("<script>x()"), std::string::npos);
  EXPECT_NE(html.find("&lt;script&gt;x()"), std::string::npos);
  EXPECT_EQ(html.find(std::string(1000, 'x')), std::string::npos) << "long shapes are cut for display";
  const auto host_table = html.substr(html.find("id=\"operators-host-table\""));
  EXPECT_NE(host_table.find("<th>Leading input shapes</th>"), std::string::npos);

  // Without recorded inputs: the tables as before, no shapes column.
  ops["top_by_gpu_time"][0].erase("input_shapes");
  ops["top_by_gpu_time"][0].erase("input_shape_groups");
  ops["top_by_host_time"][0].erase("input_shapes");
  ops["top_by_host_time"][0].erase("input_shape_groups");
  const std::string plain = render_html(testing::typed_report(json{{"operators", ops}}), nullptr);
  EXPECT_NE(plain.find("id=\"operators-gpu-table\""), std::string::npos);
  EXPECT_EQ(plain.find("Leading input shapes"), std::string::npos);
}

}  // namespace
}  // namespace profile_train::report
