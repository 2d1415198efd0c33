// Loads rendered pages in headless Chromium (Debian package `chromium`) and checks the resulting DOM: the
// page's script ran without error (body data-render="ok", data-errors="0"), the verdict, the breakdown
// chart and the recommendations are there, and hostile names stayed text (no dialog was called, no extra
// <script> element exists). Skips with a reason when chromium is absent.
#include <gtest/gtest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <regex>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/diff.h"
#include "profile_train/report/diff.h"
#include "profile_train/report/writers.h"
#include "profile_train/rules/engine.h"
#include "profile_train/trace/importer.h"
#include "report_view.h"
#include "synthetic.h"
#include "test_util.h"

namespace profile_train::report {
namespace {

using namespace profile_train::report::testing;
using nlohmann::json;

std::string find_chromium() {
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    const std::string cmd = std::string("command -v ") + name + " 2>/dev/null";
    std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
    if (!p) continue;
    std::array<char, 512> buf{};
    if (fgets(buf.data(), buf.size(), p.get())) {
      std::string path(buf.data());
      while (!path.empty() && (path.back() == '\n' || path.back() == '\r')) path.pop_back();
      if (!path.empty()) return path;
    }
  }
  return "";
}

// The DOM after the page's scripts ran, or "" on failure.
std::string dump_dom(const std::filesystem::path& html) {
  static const std::string browser = find_chromium();
  const auto profile = temp_dir("chromium-profile");
  std::string cmd = "timeout 120 '" + browser + "' --headless " + (geteuid() == 0 ? "--no-sandbox " : "") +
                    "--disable-gpu --disable-background-networking --no-first-run --user-data-dir='" +
                    profile.string() + "' --dump-dom 'file://" + std::filesystem::absolute(html).string() +
                    "' 2>/dev/null";
  std::unique_ptr<FILE, int (*)(FILE*)> p(popen(cmd.c_str(), "r"), pclose);
  if (!p) return "";
  std::string out;
  std::array<char, 65536> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p.get())) > 0) out.append(buf.data(), n);
  std::error_code ec;
  std::filesystem::remove_all(profile, ec);
  return out;
}

std::string body_tag(const std::string& dom) {
  auto a = dom.find("<body", dom.find("</head>"));
  if (a == std::string::npos) return "";
  return dom.substr(a, dom.find('>', a) - a + 1);
}

#define SKIP_WITHOUT_CHROMIUM()                                                                   \
  if (find_chromium().empty()) GTEST_SKIP() << "chromium not installed (apt-get install chromium)"

// Checks shared by every report page.
void check_report_dom(const std::string& dom, const json& report, size_t expected_recs) {
  ASSERT_FALSE(dom.empty()) << "chromium produced no DOM";
  const std::string body = body_tag(dom);
  EXPECT_NE(body.find("data-render=\"ok\""), std::string::npos) << body;
  EXPECT_NE(body.find("data-errors=\"0\""), std::string::npos) << body;
  EXPECT_EQ(dom.find("data-dialog-called="), std::string::npos) << "a dialog (alert) was called";
  EXPECT_EQ(count_of(dom, "<script"), 3u) << "an injected <script> element exists";
  const std::string bottleneck = report["verdict"].value("bottleneck", "unknown");
  EXPECT_NE(dom.find("id=\"verdict-bottleneck\" data-bottleneck=\"" + bottleneck + "\""), std::string::npos);
  // Breakdown chart: an SVG with stacked rects.
  const auto chart = dom.find("id=\"breakdown-chart\"");
  ASSERT_NE(chart, std::string::npos);
  const std::string svg = dom.substr(chart, dom.find("</svg>", chart) - chart);
  EXPECT_GE(count_of(svg, "<rect"), 2u);
  if (expected_recs > 0) {
    EXPECT_NE(dom.find("id=\"recs-list\""), std::string::npos);
    EXPECT_EQ(count_of(dom, "<li class=\"rec rec-"), expected_recs);
  } else {
    EXPECT_NE(dom.find("id=\"no-recommendations\""), std::string::npos);
  }
}

TEST(Browser, FixtureReportRendersCleanlyAndHostileNamesStayText) {
  SKIP_WITHOUT_CHROMIUM();
  const json report = fixture("report_input_pipeline.json");
  const auto trace = make_training_trace(4, 60, 100'000'000);
  const auto dir = temp_dir("browser-fixture");
  ASSERT_TRUE(write_html(typed_report(report), &trace, dir / "report.html").ok());
  const std::string dom = dump_dom(dir / "report.html");
  check_report_dom(dom, report, 2);
  // The hostile kernel name is present as escaped text in the kernels table.
  EXPECT_NE(dom.find("<code>&lt;script&gt;alert(1)&lt;/script&gt;</code>"), std::string::npos);
  // The timeline drew events.
  std::smatch m;
  const std::string body = body_tag(dom);
  ASSERT_TRUE(std::regex_search(body, m, std::regex("data-timeline-events=\"([0-9]+)\"")));
  EXPECT_GT(std::stoi(m[1]), 100);
  EXPECT_NE(dom.find("id=\"timeline\" class=\"timeline\" data-drawn=\"" + m[1].str() + "\" data-render=\"ok\""),
            std::string::npos);
}

TEST(Browser, HostileNameInEveryProgramSuppliedFieldRunsNoScript) {
  SKIP_WITHOUT_CHROMIUM();
  const std::string evil = "</script><script>alert(7)</script><img src=x onerror=alert(8)>\xE2\x80\xA8";
  json report = fixture("report_input_pipeline.json");
  report["verdict"]["summary"] = evil;
  // verdict.bottleneck is one of the Bottleneck names: a hostile one stops at report_from_json.
  report["recommendations"][0]["fix"]["python"] = evil;
  report["recommendations"][0]["title"] = evil;
  report["source"]["files"] = json::array({evil});
  report["steps"]["per_step"][1]["name"] = evil;
  auto trace = make_training_trace(4, 10, 100'000'000, evil);
  trace.meta.thread_names[{100, 101}] = evil;
  const auto dir = temp_dir("browser-evil");
  ASSERT_TRUE(write_html(typed_report(report), &trace, dir / "report.html").ok());
  const std::string dom = dump_dom(dir / "report.html");
  ASSERT_FALSE(dom.empty());
  const std::string body = body_tag(dom);
  EXPECT_NE(body.find("data-render=\"ok\""), std::string::npos) << body;
  EXPECT_EQ(dom.find("data-dialog-called="), std::string::npos);
  EXPECT_EQ(count_of(dom, "<script"), 3u);
  EXPECT_EQ(count_of(dom, "<img"), 0u);
}

// Full path on the real tb_plugin traces: loader -> analysis -> rules -> HTML -> Chromium.
void check_real_trace(const char* rel) {
  const std::filesystem::path file = std::filesystem::path(PT_TRACES_DIR) / rel;
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "trace corpus not present: " << file;
  auto loaded = trace::load_trace(file);
  if (!loaded.ok()) GTEST_SKIP() << "importer cannot load the tb trace yet: " << loaded.status().message();
  json report = analysis::build_report(*loaded);
  if (!report.is_object() || !report.contains("verdict"))
    GTEST_SKIP() << "analysis does not produce a report with a verdict yet";
  if (auto rules = rules::load_rules(); rules.ok()) rules::apply_rules(**rules, report);
  const size_t recs = report.contains("recommendations") && report["recommendations"].is_array()
                          ? report["recommendations"].size() : 0;
  const auto dir = temp_dir("browser-tb");
  ASSERT_TRUE(write_html(typed_report(report), &*loaded, dir / "report.html").ok());
  EXPECT_LT(std::filesystem::file_size(dir / "report.html"), size_t{10} << 20);
  const std::string dom = dump_dom(dir / "report.html");
  check_report_dom(dom, report, recs);
  if (loaded->events.size() > 0) {
    EXPECT_NE(dom.find("id=\"tl-canvas\""), std::string::npos);
  }
  // The plan comes first, with one item per plan step and the combined bound; minor fixes and notes are folded
  // (closed <details>) below the material ones; the host-idle section shows its bar.
  const auto plan = dom.find("<section id=\"plan\"");
  ASSERT_NE(plan, std::string::npos);
  EXPECT_LT(plan, dom.find("<section id=\"breakdown\""));
  const std::string plan_html = dom.substr(plan, dom.find("</section>", plan) - plan);
  EXPECT_EQ(count_of(plan_html, "<li data-rule="), report["plan"]["steps"].size());
  const std::string first = report["plan"]["steps"][0]["id"];
  EXPECT_NE(plan_html.find("<li data-rule=\"" + first + "\""), std::string::npos);
  char combined[32];
  std::snprintf(combined, sizeof combined, "up to %.2f", report["plan"]["combined_speedup_max"].get<double>());
  EXPECT_NE(plan_html.find(combined), std::string::npos) << plan_html;
  size_t minor = 0;
  for (const auto& r : report["recommendations"]) minor += r["group"] == "minor";
  if (minor > 0) {
    const auto m = dom.find("<details class=\"folded\" id=\"minor-recs\">");
    ASSERT_NE(m, std::string::npos) << "minor fixes are not folded";
    EXPECT_GT(m, dom.find("id=\"recs-list\""));
    EXPECT_EQ(count_of(dom, "<li class=\"rec rec-minor\""), minor);
  }
  EXPECT_NE(dom.find("id=\"host-idle-bar\""), std::string::npos);
  // Where the time goes: the top-10 chart and the sortable tables, wired up by the page's script.
  EXPECT_NE(dom.find("id=\"operators-chart\""), std::string::npos);
  EXPECT_EQ(count_of(dom, "<div class=\"opbar\">"), report["operators"]["top_by_gpu_time"].size());
  std::smatch m;
  const std::string b = body_tag(dom);
  ASSERT_TRUE(std::regex_search(b, m, std::regex("data-sortable-tables=\"([0-9]+)\""))) << b;
  EXPECT_GE(std::stoi(m[1]), 3);
}

// Clicking a header of an operators table sorts its rows by that column (numbers, descending first).
TEST(Browser, OperatorTablesSortByTheClickedColumn) {
  SKIP_WITHOUT_CHROMIUM();
  const std::filesystem::path file =
      std::filesystem::path(PT_TRACES_DIR) / "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "trace corpus not present: " << file;
  auto loaded = trace::load_trace(file);
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  const json report = analysis::build_report(*loaded);
  std::string html = render_html(typed_report(report), nullptr);
  const std::string probe = R"JS(<script>
(function () {
  var t = document.getElementById('operators-gpu-table');
  var th = t.querySelectorAll('thead th')[3];  // Calls / step
  th.click();
  var vals = Array.prototype.map.call(t.tBodies[0].rows, function (r) { return parseFloat(r.cells[3].getAttribute('data-v')); });
  var sorted = vals.every(function (v, i) { return i === 0 || vals[i - 1] >= v; });
  document.body.setAttribute('data-probe-sort', sorted && vals.length > 1 ? 'ok' : 'fail:' + vals.join(','));
})();
</script>)JS";
  html.insert(html.rfind("</body>"), probe);
  const auto dir = temp_dir("browser-sort");
  std::ofstream(dir / "sort.html", std::ios::binary) << html;
  const std::string body = body_tag(dump_dom(dir / "sort.html"));
  EXPECT_NE(body.find("data-probe-sort=\"ok\""), std::string::npos) << body;
}

TEST(Browser, TbTraceNumWorkers0) {
  SKIP_WITHOUT_CHROMIUM();
  check_real_trace("kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz");
}

TEST(Browser, TbTraceNumWorkers4) {
  SKIP_WITHOUT_CHROMIUM();
  check_real_trace("kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz");
}

// Drives the timeline like a user: a wheel event must change the visible range, hovering must show a
// tooltip with an event's name, double-click must reset. The probe script is appended after the page's own.
TEST(Browser, TimelineZoomsAndShowsTooltips) {
  SKIP_WITHOUT_CHROMIUM();
  const auto trace = make_training_trace(4, 30, 100'000'000);
  std::string html = render_html(typed_report(fixture("report_input_pipeline.json")), &trace);
  const std::string probe = R"JS(<script>
(function () {
  var c = document.getElementById('tl-canvas'), r = c.getBoundingClientRect();
  var range = document.getElementById('tl-range'), before = range.textContent;
  c.dispatchEvent(new WheelEvent('wheel', {deltaY: -400, clientX: r.left + r.width * 0.6, clientY: r.top + 40,
                                            bubbles: true, cancelable: true}));
  var zoomed = range.textContent;
  c.dispatchEvent(new MouseEvent('dblclick', {bubbles: true}));
  document.body.setAttribute('data-probe-zoom', zoomed !== before && range.textContent === before ? 'ok' : 'fail');
  var tip = document.getElementById('tl-tip'), found = '';
  for (var y = 30; y < r.height && !found; y += 4)
    for (var x = 210; x < r.width && !found; x += 7) {
      c.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + x, clientY: r.top + y, bubbles: true}));
      if (!tip.hidden) found = tip.textContent;
    }
  document.body.setAttribute('data-probe-tip', found ? 'ok' : 'none');
  document.body.setAttribute('data-probe-tip-text', found.slice(0, 200));
})();
</script>)JS";
  html.insert(html.rfind("</body>"), probe);
  const auto dir = temp_dir("browser-probe");
  std::ofstream(dir / "probe.html", std::ios::binary) << html;
  const std::string dom = dump_dom(dir / "probe.html");
  const std::string body = body_tag(dom);
  EXPECT_NE(body.find("data-render=\"ok\""), std::string::npos) << body;
  EXPECT_NE(body.find("data-probe-zoom=\"ok\""), std::string::npos) << body;
  EXPECT_NE(body.find("data-probe-tip=\"ok\""), std::string::npos) << body;
  // A tooltip shows a duration (the page formats it with a unit).
  EXPECT_TRUE(std::regex_search(body, std::regex("data-probe-tip-text=\"[^\"]*(ns|µs|ms)"))) << body;
}

TEST(Browser, DiffPageRendersCleanly) {
  SKIP_WITHOUT_CHROMIUM();
  json a = fixture("report_input_pipeline.json");
  json b = a;
  b["steps"]["mean_ms"] = 60.0;
  b["verdict"]["bottleneck"] = "gpu_compute";
  const Diff d = analysis::diff_reports(typed_report(a), typed_report(b), "before/<b>x</b>", "after");
  const auto dir = temp_dir("browser-diff");
  ASSERT_TRUE(write_diff_html(d, dir / "diff.html").ok());
  const std::string dom = dump_dom(dir / "diff.html");
  ASSERT_FALSE(dom.empty());
  EXPECT_NE(body_tag(dom).find("data-render=\"ok\""), std::string::npos);
  EXPECT_NE(dom.find("1.67× faster"), std::string::npos);
  EXPECT_NE(dom.find("before/&lt;b&gt;x&lt;/b&gt;"), std::string::npos);
  EXPECT_EQ(dom.find("data-dialog-called="), std::string::npos);
}

TEST(Browser, JobSummaryPageShowsTheStragglerAndEveryRank) {
  SKIP_WITHOUT_CHROMIUM();
  model::JobSummary job;
  job.verdict = model::JobVerdict::kStraggler;
  job.summary = "Straggler: rank 2 <b>holds</b> the others back";
  job.straggler = model::Straggler{2, "rank2.json", model::StragglerPhase::kInput, 35, 35, 35};
  for (int r = 0; r < 4; ++r)
    job.ranks.push_back({r, "rank" + std::to_string(r) + ".json", Bottleneck::kGpuCompute, 100.0, r == 2 ? 40.0 : 5.0,
                         50.0, r == 2 ? 10.0 : 45.0, r == 2 ? 90.0 : 55.0});
  const auto dir = temp_dir("browser-job");
  ASSERT_TRUE(write_job_html(job, dir / "summary.html").ok());
  const std::string dom = dump_dom(dir / "summary.html");
  const std::string body = body_tag(dom);
  EXPECT_NE(body.find("data-render=\"ok\""), std::string::npos) << body;
  EXPECT_NE(dom.find("data-verdict=\"straggler\""), std::string::npos);
  EXPECT_EQ(count_of(dom, "<div class=\"opbar\" data-rank="), 3u);
  EXPECT_EQ(count_of(dom, "<div class=\"opbar straggler\" data-rank=\"2\""), 1u);
  EXPECT_NE(dom.find("&lt;b&gt;holds&lt;/b&gt;"), std::string::npos);  // escaped
  EXPECT_EQ(count_of(dom, "<script"), 2u);
}

}  // namespace
}  // namespace profile_train::report
