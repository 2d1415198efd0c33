// Outputs under hostile and careless use, end to end through the binary (issue 16): names that are not
// UTF-8, failed and partial writes, a full disk, two commands sharing one --out, escape sequences in names,
// --perfetto over an input or the report, degenerate reports (0 ms steps, nothing but malformed events, a
// million steps). Each test failed before its fix.
#include <algorithm>
#include <set>

#include <nlohmann/json.hpp>

#include "outputs_util.h"

namespace pt_outputs_test {
namespace {

using nlohmann::json;

const fs::path kPython = PT_PYTHON;

bool have_torch() {
  static int cached = -1;
  if (cached < 0) {
    const std::string cmd = "'" + kPython.string() + "' -c 'import torch' >/dev/null 2>&1";
    cached = fs::exists(kPython) && std::system(cmd.c_str()) == 0 ? 1 : 0;
  }
  return cached == 1;
}

// nlohmann rejects invalid UTF-8 while parsing: a document that parses is valid JSON and valid UTF-8.
json parse_valid(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << "not valid JSON / UTF-8: " << text.substr(0, 200);
  return j;
}

bool has_note(const json& report, const std::string& word) {
  for (const auto& n : report["data_quality"]["notes"])
    if (n.is_string() && n.get<std::string>().find(word) != std::string::npos) return true;
  return false;
}

// No byte that a terminal interprets (ESC, BEL, CR, NUL, backspace, C1 CSI) in `s`.
void expect_inert(const std::string& s) {
  for (char c : std::string("\x1b\x07\r\b", 4)) EXPECT_EQ(s.find(c), std::string::npos) << "control byte " << int(c) << " in: " << s;
  EXPECT_EQ(s.find('\0'), std::string::npos) << "NUL in output";
  EXPECT_EQ(s.find("\xC2\x9B"), std::string::npos) << "C1 CSI in output";
}

// One error line on stderr, starting with "profile-train", containing every one of `words`.
void expect_one_error_line(const Result& r, const std::vector<std::string>& words) {
  EXPECT_EQ(count_lines(r.err), 1u) << r.err;
  EXPECT_EQ(r.err.rfind("profile-train", 0), 0u) << r.err;
  for (const auto& w : words) EXPECT_NE(r.err.find(w), std::string::npos) << "'" << w << "' not in: " << r.err;
}

std::string minimal_report(double mean_ms, const std::string& kernel, double kernel_ms) {
  return json{{"schema_version", "1.0"},
              {"steps", {{"count", 4}, {"mean_ms", mean_ms}}},
              {"verdict", {{"bottleneck", "gpu_compute"}, {"confidence", 0.8}, {"summary", "s"}}},
              {"gpu", {{"utilization", 0.5}, {"top_kernels", json::array({{{"name", kernel}, {"total_ms", kernel_ms}, {"count", 4}}})}}},
              {"recommendations", json::array()}}
      .dump();
}

// ---- non-UTF-8 names (item 3) --------------------------------------------------------------------------

TEST_F(OutputsTest, NonUtf8FileNameAndOutFolderGiveAValidReport) {
  const fs::path trace = small_trace("trace-\xff\xfe.json");
  const fs::path out = dir_ / "out-\xff";
  const Result r = run({"analyze", trace.string(), "--out", out.string(), "--format", "text,json,html"});
  EXPECT_EQ(r.rc, 0) << r.err;
  const std::string text = slurp(out / "report.json");
  ASSERT_FALSE(text.empty()) << "report.json is empty";
  const json report = parse_valid(text);
  EXPECT_NE(text.find("\xEF\xBF\xBD"), std::string::npos) << "the bad bytes were not replaced with U+FFFD";
  EXPECT_TRUE(has_note(report, "UTF-8")) << report["data_quality"].dump();
  EXPECT_GT(fs::file_size(out / "report.html"), 0u);
  expect_inert(r.out);
}

TEST_F(OutputsTest, NonUtf8CommandArgumentOfRunGivesAValidReport) {
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython;
  const fs::path out = dir_ / "run";
  const Result r = run({"run", "--out", out.string(), "--", kPython.string(), "-c",
                        "import torch, sys; torch.cuda.nvtx.range_push('x'); torch.cuda.nvtx.range_pop()", "arg-\xff"});
  EXPECT_EQ(r.rc, 0) << r.err;
  const json report = parse_valid(slurp(out / "report.json"));
  ASSERT_TRUE(report["source"]["command"].is_array()) << report["source"].dump();
  EXPECT_EQ(report["source"]["command"].back(), "arg-\xEF\xBF\xBD");
  EXPECT_TRUE(has_note(report, "UTF-8"));
}

TEST_F(OutputsTest, NonUtf8CommandArgumentOfTuneGivesAValidTuneJson) {
  const fs::path out = dir_ / "tune";
  const fs::path script = write("train.sh", "exit 3\n");
  const Result r = run({"tune", "--max-trials", "1", "--repeats", "1", "--baseline-repeats", "1", "--out", out.string(),
                        "--knob", "batch_size=4", "--", "sh", script.string(), "{batch_size}", "arg-\xff"});
  EXPECT_NE(r.rc, 1) << "internal error: " << r.err;
  const json tune = parse_valid(slurp(out / "tune.json"));
  EXPECT_NE(tune.dump().find("arg-\xEF\xBF\xBD"), std::string::npos);
}

// ---- a failed write never damages the previous report (items 3 and 9) ----------------------------------

TEST_F(OutputsTest, FailedWriteKeepsThePreviousReport) {
  const fs::path out = dir_ / "out";
  ASSERT_EQ(run({"analyze", small_trace("a.json").string(), "--out", out.string()}).rc, 0);
  const std::string json_before = slurp(out / "report.json"), html_before = slurp(out / "report.html");
  ASSERT_GT(html_before.size(), 8192u);
  // A second analysis of another trace under an 8 KiB file-size limit: the HTML cannot be written.
  const Result r = run({"analyze", small_trace("b.json", "Other GPU").string(), "--out", out.string()},
                       Limits{8192});
  EXPECT_EQ(r.rc, 2);
  expect_one_error_line(r, {(out / "report.").string(), "File too large"});
  EXPECT_NE(r.out.find("VERDICT"), std::string::npos) << "the summary was lost: " << r.out;
  EXPECT_EQ(slurp(out / "report.html"), html_before) << "the previous report.html was damaged";
  const std::string json_after = slurp(out / "report.json");
  EXPECT_TRUE(json_after == json_before || json_after.find("Other GPU") != std::string::npos)
      << "report.json is neither the previous nor the new report";
  parse_valid(json_after);
  EXPECT_TRUE(temp_files(out).empty()) << temp_files(out).front();
}

TEST_F(OutputsTest, FullDiskNamesTheErrorAndStillPrintsTheSummary) {
  // Room for report.json (a few KB) but not for report.html (> 30 KB): the HTML write hits ENOSPC.
  const fs::path disk = small_disk("disk", 24 * 1024);
  if (disk.empty()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  const fs::path out = disk / "out";
  const Result r = run({"analyze", small_trace("t.json").string(), "--out", out.string()});
  EXPECT_EQ(r.rc, 2);
  expect_one_error_line(r, {(out / "report.html").string(), "No space left on device"});
  EXPECT_NE(r.out.find("VERDICT"), std::string::npos) << "the summary was lost: " << r.out;
  EXPECT_FALSE(fs::exists(out / "report.html")) << "a truncated report.html was left behind";
  parse_valid(slurp(out / "report.json"));
  EXPECT_TRUE(temp_files(out).empty());
}

TEST_F(OutputsTest, CaptureThatFillsTheDiskIsReportedAndStaysAnalyzable) {
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython;
  const fs::path disk = small_disk("disk", 256 * 1024);
  if (disk.empty()) GTEST_SKIP() << "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)";
  const fs::path out = disk / "run";
  // Enough NVTX ranges to fill 256 KB of capture.
  const Result r = run({"run", "--out", out.string(), "--", kPython.string(), "-c",
                        "import torch\nfor i in range(100000):\n  torch.cuda.nvtx.range_push('step')\n"
                        "  torch.cuda.nvtx.range_pop()\n"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_NE(r.err.find("No space left on device"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("not writable"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("VERDICT"), std::string::npos) << "the summary was lost: " << r.out;
  // What was captured is still analyzable (into another folder).
  std::vector<std::string> args{"analyze"};
  for (const auto& e : fs::directory_iterator(out / "capture"))
    if (e.path().extension() == ".ptrace") args.push_back(e.path().string());
  ASSERT_GT(args.size(), 1u) << "no capture file";
  args.insert(args.end(), {"--out", (dir_ / "again").string(), "--format", "json"});
  const Result again = run(args);
  EXPECT_EQ(again.rc, 0) << again.err;
  EXPECT_GT(parse_valid(slurp(dir_ / "again" / "report.json"))["steps"]["count"].get<int>(), 0);
}

// ---- one command per output folder (item 4) ------------------------------------------------------------

TEST_F(OutputsTest, SecondCommandIntoABusyOutFolderIsRefused) {
  const fs::path out = dir_ / "busy";
  const Proc holder = start({"run", "--out", out.string(), "--", "sleep", "4"}, dir_ / "holder");
  const fs::path lock = out / ".profile-train.lock";
  for (int i = 0; i < 500 && slurp(lock).empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_FALSE(slurp(lock).empty()) << "the first run did not lock its output folder";
  const std::string pid = "pid " + std::to_string(holder.pid);

  const Result second = run({"run", "--out", out.string(), "--", "true"});
  EXPECT_EQ(second.rc, 2);
  expect_one_error_line(second, {out.string(), "in use", pid});
  const Result analyze = run({"analyze", small_trace("t.json").string(), "--out", out.string()});
  EXPECT_EQ(analyze.rc, 2);
  expect_one_error_line(analyze, {out.string(), "in use", pid});
  const fs::path a = write("a.json", minimal_report(10, "k", 4)), b = write("b.json", minimal_report(8, "k", 3));
  const Result diff = run({"diff", a.string(), b.string(), "--out", out.string()});
  EXPECT_EQ(diff.rc, 2);
  expect_one_error_line(diff, {out.string(), "in use"});
  const Result tune = run({"tune", "--max-trials", "1", "--out", out.string(), "--knob", "batch_size=4", "--", "true",
                           "{batch_size}"});
  EXPECT_EQ(tune.rc, 2);
  expect_one_error_line(tune, {out.string(), "in use"});

  wait(holder, 30);
  // Released when the holder exits: the folder is usable again.
  const Result after = run({"analyze", small_trace("t2.json").string(), "--out", out.string(), "--format", "json"});
  EXPECT_EQ(after.rc, 0) << after.err;
}

// ---- escape sequences in names never reach the terminal (item 7) ---------------------------------------

TEST_F(OutputsTest, DiffPrintsNoEscapeSequences) {
  const std::string evil = "k\x1b[31mred\x07\rover\x1b]0;title\x07" + std::string(1, '\0') + "end\xC2\x9B" "2J";
  const fs::path a = write("a\x1b[5m.json", minimal_report(10, evil, 8));
  const fs::path b = write("b.json", minimal_report(5, evil, 2));
  const Result r = run({"diff", a.string(), b.string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  expect_inert(r.out);
  EXPECT_NE(r.out.find("k\\x1b[31mred"), std::string::npos) << "the name is not shown visibly: " << r.out;
}

// A report.json that is JSON but not a report (a key of the wrong type): one error line naming the file and
// the key, exit 2 (bad input), no diff of defaults.
TEST_F(OutputsTest, DiffOfAReportOfTheWrongShapeIsOneErrorLine) {
  json bad = json::parse(minimal_report(10, "k", 1));
  bad["steps"]["count"] = "many";
  const fs::path a = write("a.json", bad.dump());
  const fs::path b = write("b.json", minimal_report(5, "k", 1));
  const Result r = run({"diff", a.string(), b.string()});
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("a.json"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("steps.count"), std::string::npos) << r.err;
}

TEST_F(OutputsTest, RulesExplainAndAnalyzeSummaryPrintNoEscapeSequences) {
  json report = json::parse(minimal_report(10, "k", 1));
  report["device"] = {{"name", "GPU\x1b[2J"}};
  report["facts"] = {{"gpu", {{"available", true}, {"used", false}, {"name", "\x1b]0;owned\x07"}}},
                     {"params", {{"device", "cpu\x1b[8m"}}}};
  report["source"]["capture"]["cpu_training"] = "the model's parameters are on the CPU (facts.params.device cpu\x1b[8m)";
  const fs::path file = write("report.json", report.dump());
  const Result explain = run({"rules", "explain", "use-gpu", file.string()});
  ASSERT_EQ(explain.rc, 0) << explain.err;
  expect_inert(explain.out);
  EXPECT_NE(explain.out.find("cpu\\x1b[8m"), std::string::npos) << explain.out;

  const Result analyze = run({"analyze", small_trace("t.json", "GPU\\u001b[2J\\u0007", "kern\\u001b[31m").string(),
                              "--out", (dir_ / "o").string(), "--format", "text"});
  ASSERT_EQ(analyze.rc, 0) << analyze.err;
  expect_inert(analyze.out);
}

TEST_F(OutputsTest, TuneTerminalLinesPrintNoEscapeSequences) {
  // The folder name reaches tune's progress lines and the failed trial's message.
  const fs::path out = dir_ / "tune\x1b[31m\x07";
  const fs::path script = write("train.sh", "exit 3\n");
  const Result r = run({"tune", "--max-trials", "1", "--repeats", "1", "--baseline-repeats", "1", "--out", out.string(),
                        "--knob", "batch_size=4", "--", "sh", script.string(), "{batch_size}"});
  EXPECT_NE(r.rc, 1) << r.err;
  EXPECT_NE(r.err.find("tune\\x1b[31m"), std::string::npos) << r.err;
  expect_inert(r.err);
}

// ---- --perfetto never overwrites an input or the report (item 12) --------------------------------------

TEST_F(OutputsTest, PerfettoOverAnInputOrTheReportIsRefused) {
  const fs::path trace = small_trace("t.json");
  const std::string original = slurp(trace);
  const fs::path out = dir_ / "out";
  const fs::path link = dir_ / "link.json";
  fs::create_symlink(trace, link);
  for (const fs::path& target : {trace, link, dir_ / "." / "out" / ".." / "t.json"}) {
    const Result r = run({"analyze", trace.string(), "--out", out.string(), "--perfetto", target.string()});
    EXPECT_EQ(r.rc, 2) << target;
    expect_one_error_line(r, {"--perfetto", target.string()});
    EXPECT_EQ(slurp(trace), original) << "the input trace was overwritten through " << target;
  }
  ASSERT_EQ(run({"analyze", trace.string(), "--out", out.string()}).rc, 0);
  const std::string report = slurp(out / "report.json"), html = slurp(out / "report.html");
  for (const fs::path& target : {out / "report.json", dir_ / "out" / ".." / "out" / "report.html"}) {
    const Result r = run({"analyze", trace.string(), "--out", out.string(), "--perfetto", target.string()});
    EXPECT_EQ(r.rc, 2) << target;
    expect_one_error_line(r, {"--perfetto"});
  }
  EXPECT_EQ(slurp(out / "report.json"), report);
  EXPECT_EQ(slurp(out / "report.html"), html);
  // `run` refuses before launching anything.
  const Result run_r = run({"run", "--out", out.string(), "--perfetto", (out / "report.html").string(), "--", "true"});
  EXPECT_EQ(run_r.rc, 2);
  expect_one_error_line(run_r, {"--perfetto", "nothing was launched"});
  EXPECT_EQ(slurp(out / "report.html"), html);
}

// ---- degenerate reports (item 13) ----------------------------------------------------------------------

TEST_F(OutputsTest, DiffOfAReportWithAZeroMeanStepSaysNotAvailable) {
  const fs::path a = write("a.json", minimal_report(0, "k", 0)), b = write("b.json", minimal_report(10, "k", 4));
  const Result r = run({"diff", a.string(), b.string(), "--out", (dir_ / "d").string()});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("B/A = n/a"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("inf"), std::string::npos) << r.out;
  const json d = parse_valid(slurp(dir_ / "d" / "diff.json"));
  EXPECT_TRUE(d["step_time"]["ratio"].is_null());
  EXPECT_TRUE(d["step_time"]["speedup"].is_null());
  const Result reverse = run({"diff", b.string(), a.string()});
  ASSERT_EQ(reverse.rc, 0) << reverse.err;
  EXPECT_NE(reverse.out.find("n/a"), std::string::npos) << reverse.out;
}

TEST_F(OutputsTest, TraceOfOnlyMalformedEventsIsUnknownWithoutRecommendation) {
  const fs::path trace = write("bad.json", R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "NVIDIA A100",
      "totalGlobalMem": 40000000000, "computeMajor": 8, "computeMinor": 0, "numSms": 108}],
      "traceEvents": [{"ph": "X", "name": "a", "ts": "x"}, {"ph": "X", "dur": 5}, {"name": 7, "ph": "X", "ts": 1, "dur": 2}]})");
  const Result r = run({"analyze", trace.string(), "--out", (dir_ / "o").string(), "--format", "text,json"});
  EXPECT_EQ(r.rc, 0) << r.err;
  const json report = parse_valid(slurp(dir_ / "o" / "report.json"));
  EXPECT_EQ(report["verdict"]["bottleneck"], "unknown");
  EXPECT_NE(report["verdict"]["summary"].get<std::string>().find("malformed"), std::string::npos)
      << report["verdict"].dump();
  EXPECT_TRUE(report["recommendations"].empty()) << report["recommendations"].dump();
  EXPECT_EQ(r.out.find("Recommendations"), std::string::npos) << r.out;
}

TEST_F(OutputsTest, PerStepDetailIsBoundedUnlessAllSteps) {
  const int steps = 1000, slow = 500;
  const fs::path trace = many_steps_trace("steps.json", steps, slow);
  ASSERT_EQ(run({"analyze", trace.string(), "--out", (dir_ / "o").string(), "--format", "json"}).rc, 0);
  const json s = parse_valid(slurp(dir_ / "o" / "report.json"))["steps"];
  EXPECT_EQ(s["count"], steps);
  ASSERT_TRUE(s["per_step"].is_array());
  // First 50, last 50 and slowest 50: the slowest overlap the first ones when all other steps are equal.
  EXPECT_LE(s["per_step"].size(), 150u);
  EXPECT_GE(s["per_step"].size(), 101u);
  EXPECT_EQ(s["per_step_complete"], false);
  std::set<int> kept;
  for (const auto& row : s["per_step"]) kept.insert(row["index"].get<int>());
  for (int i : {0, 49, steps - 50, steps - 1, slow}) EXPECT_TRUE(kept.count(i)) << "step " << i << " not kept";
  int64_t total = 0;
  for (const auto& c : s["histogram"]["counts"]) total += c.get<int64_t>();
  EXPECT_EQ(total, steps);
  EXPECT_EQ(s["histogram"]["counts"].back(), 1) << "the slow step belongs in the last bin";

  ASSERT_EQ(run({"analyze", trace.string(), "--out", (dir_ / "all").string(), "--format", "json", "--all-steps"}).rc, 0);
  const json all = parse_valid(slurp(dir_ / "all" / "report.json"))["steps"];
  EXPECT_EQ(all["per_step"].size(), static_cast<size_t>(steps));
  EXPECT_EQ(all["per_step_complete"], true);
}

}  // namespace
}  // namespace pt_outputs_test
