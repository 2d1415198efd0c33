// Commands run in this process with string streams (cli::Io, the pt_cli library): the same bytes and exit codes
// as the profile-train binary gives for the same arguments, and their errors as one line on their own stream.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <zlib.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "commands.h"

namespace profile_train::cli {
namespace {

namespace fs = std::filesystem;

struct Outcome {
  int rc = -1;
  std::string out, err;
};

// `args` as main() would run them, with the command after `--` split off for run and tune (main.cpp).
Outcome in_process(const std::function<Runner(CLI::App&, Io)>& add, const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CLI::App app{"profile-train"};
  app.require_subcommand(1);
  Runner runner = add(app, Io{&out, &err, false, false});
  std::vector<const char*> argv{"profile-train"};
  for (const auto& a : args) {
    if (a == "--") break;
    argv.push_back(a.c_str());
  }
  app.parse(static_cast<int>(argv.size()), argv.data());
  Outcome o;
  o.rc = runner();
  o.out = out.str();
  o.err = err.str();
  return o;
}

// run and tune take the command after `--` when they are added.
std::function<Runner(CLI::App&, Io)> with_command(Runner (*add)(CLI::App&, std::vector<std::string>, Io),
                                                  const std::vector<std::string>& args) {
  std::vector<std::string> command;
  if (auto dashes = std::find(args.begin(), args.end(), "--"); dashes != args.end()) command.assign(dashes + 1, args.end());
  return [add, command](CLI::App& app, Io io) { return add(app, command, io); };
}

std::string quoted(const std::string& s) { return "'" + s + "'"; }

// The binary with the same arguments: its stdout and exit code (stderr to a file, returned as err).
Outcome binary(const std::vector<std::string>& args) {
  const fs::path err_file = fs::temp_directory_path() / ("pt_inprocess_err_" + std::to_string(::getpid()));
  std::string cmd = "NO_COLOR=1 " + quoted(std::string(PT_BINARY_DIR) + "/profile-train");
  for (const auto& a : args) cmd += " " + quoted(a);
  cmd += " 2>" + quoted(err_file.string());
  Outcome o;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (p == nullptr) return o;
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) o.out.append(buf, n);
  const int status = ::pclose(p);
  o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ostringstream e;
  if (FILE* f = std::fopen(err_file.c_str(), "rb")) {
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) o.err.append(buf, n);
    std::fclose(f);
  }
  fs::remove(err_file);
  return o;
}

const fs::path kReports = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";

TEST(InProcess, DiffPrintsWhatTheBinaryPrints) {
  const std::vector<std::string> args = {
      "diff", (kReports / "hta_cpu_only_rank-34.Jul_15_10_52_41.1074.pt.trace.json").string(),
      (kReports / "hta_amd_trace_mi250_minitoy_train_ROCm6_2_kineto.json").string()};
  const Outcome mine = in_process(&add_diff, args);
  const Outcome theirs = binary(args);
  EXPECT_EQ(mine.rc, 0) << mine.err;
  EXPECT_EQ(mine.rc, theirs.rc);
  EXPECT_EQ(mine.err, "");
  EXPECT_EQ(mine.out, theirs.out);
  EXPECT_NE(mine.out.find("Verdict     communication -> unknown  (changed)"), std::string::npos) << mine.out;
}

TEST(InProcess, ADiffErrorIsOneLineOnTheErrorStream) {
  const Outcome bad_format = in_process(&add_diff, {"diff", "a.json", "b.json", "--format", "xml"});
  EXPECT_EQ(bad_format.rc, 2);
  EXPECT_EQ(bad_format.out, "");
  EXPECT_EQ(bad_format.err, "profile-train diff: --format: unknown format 'xml' (expected text, json, html)\n");
  const Outcome missing = in_process(&add_diff, {"diff", "/nonexistent/a.json", "/nonexistent/b.json"});
  const Outcome theirs = binary({"diff", "/nonexistent/a.json", "/nonexistent/b.json"});
  EXPECT_EQ(missing.rc, theirs.rc);
  EXPECT_NE(missing.rc, 0);
  EXPECT_EQ(missing.err, theirs.err);
  EXPECT_EQ(missing.err, "profile-train diff: /nonexistent/a.json: no such file\n");
}

TEST(InProcess, RulesListAndShowPrintWhatTheBinaryPrints) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"rules", "list"}, {"rules", "list", "--json"}, {"rules", "show", "amp"}, {"rules", "show", "no-such-rule"}}) {
    const Outcome mine = in_process(&add_rules, args);
    const Outcome theirs = binary(args);
    EXPECT_EQ(mine.rc, theirs.rc) << args.back();
    EXPECT_EQ(mine.out, theirs.out) << args.back();
    EXPECT_EQ(mine.err, theirs.err) << args.back();
  }
  const Outcome list = in_process(&add_rules, {"rules", "list"});
  EXPECT_NE(list.out.find(" rules (tier 1 = cheapest"), std::string::npos) << list.out;
  const Outcome unknown = in_process(&add_rules, {"rules", "show", "no-such-rule"});
  EXPECT_EQ(unknown.rc, 2);
  EXPECT_EQ(unknown.out, "");
  EXPECT_EQ(unknown.err.find("profile-train rules: "), 0u) << unknown.err;
  EXPECT_EQ(unknown.err.find('\n'), unknown.err.size() - 1) << unknown.err;
}

const fs::path kTraces = fs::path(PT_TRACES_DIR);

// A scratch folder under the system's temporary folder, removed at the end of the test.
struct Scratch {
  fs::path dir = fs::temp_directory_path() / ("pt_inprocess_" + std::to_string(::getpid()) + "_" +
                                              ::testing::UnitTest::GetInstance()->current_test_info()->name());
  Scratch() { fs::remove_all(dir); }
  ~Scratch() { fs::remove_all(dir); }
};

TEST(InProcess, AnalyzePrintsAndWritesWhatTheBinaryDoes) {
  const fs::path trace = kTraces / "hta" / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
  if (!fs::exists(trace)) GTEST_SKIP() << "no shared traces";
  Scratch scratch;
  const std::string mine_dir = (scratch.dir / "out").string();
  const std::vector<std::string> args = {"analyze", trace.string(), "--out", mine_dir, "--explain", "amp"};
  const Outcome mine = in_process(&add_analyze, args);
  ASSERT_EQ(mine.rc, 0) << mine.err;
  const std::string report = [&] {
    std::ifstream in(fs::path(mine_dir) / "report.json");
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  }();
  const Outcome theirs = binary(args);  // the same folder: the same "Wrote" lines
  EXPECT_EQ(mine.rc, theirs.rc);
  EXPECT_EQ(mine.out, theirs.out);
  EXPECT_EQ(mine.err, theirs.err);
  EXPECT_EQ(mine.err, "");
  EXPECT_NE(mine.out.find("Wrote " + mine_dir + "/report.json\n"), std::string::npos) << mine.out;
  EXPECT_NE(mine.out.find("rule amp"), std::string::npos) << mine.out;  // --explain's text, on `out`
  std::ifstream in(fs::path(mine_dir) / "report.json");
  std::ostringstream again;
  again << in.rdbuf();
  EXPECT_EQ(report, again.str());  // the binary's report.json has the same bytes
  EXPECT_GT(report.size(), 1000u);
}

TEST(InProcess, AnalyzeOfSeveralTracesPrintsTheTableTheBinaryPrints) {
  const fs::path a = kTraces / "hta" / "cpu_only" / "rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz";
  const fs::path b = kTraces / "hta" / "amd_trace" / "mi250_minitoy_train_ROCm6_2_kineto.json.gz";
  if (!fs::exists(a) || !fs::exists(b)) GTEST_SKIP() << "no shared traces";
  Scratch scratch;
  const std::vector<std::string> args = {"analyze", a.string(), b.string(), "--out", (scratch.dir / "out").string(),
                                         "--format", "text", "--fail-on", "communication"};
  const Outcome mine = in_process(&add_analyze, args);
  const Outcome theirs = binary(args);
  EXPECT_EQ(mine.rc, 3);  // the ROCm trace's verdict is communication
  EXPECT_EQ(mine.rc, theirs.rc);
  EXPECT_EQ(mine.out, theirs.out);
  EXPECT_EQ(mine.err, theirs.err);
  EXPECT_EQ(mine.err, "profile-train: --fail-on: verdict in {communication}\n");
  EXPECT_NE(mine.out.find("== " + b.string() + " =="), std::string::npos) << mine.out;
}

// Every error of analyze, run and tune is one line on the error stream, nothing on `out`, and the binary's.
TEST(InProcess, AnalyzeRunAndTuneErrorsAreTheBinarysOneLine) {
  Scratch scratch;
  const std::string out = (scratch.dir / "out").string();
  struct Case {
    std::vector<std::string> args;
    int rc;
    std::string err_start;
  };
  const std::vector<Case> cases = {
      {{"analyze", "/nonexistent/t.json", "--out", out}, 2, "profile-train: /nonexistent/t.json"},
      {{"analyze", "/nonexistent/t.json", "--fail-on", "slowness"}, 2, "profile-train: --fail-on: unknown bottleneck 'slowness'"},
      {{"analyze", "/nonexistent/t.json", "--format", "pdf"}, 2, "profile-train: --format: unknown format 'pdf'"},
      {{"analyze", "/nonexistent/t.json", "--out", out, "--explain", "no-such-rule"}, 2, "profile-train: --explain: "},
      {{"run", "--out", out}, 2, "profile-train run: no command given"},
      {{"run", "--out", out, "--stop-after-steps", "--", "true"}, 2, "profile-train run: --stop-after-steps needs --steps N"},
      {{"run", "--out", out, "x", "--", "true"}, 2, "profile-train run: unexpected argument 'x' before --"},
      {{"tune", "--out", out, "--strategy", "bogus", "--", "true"}, 2, "profile-train tune: "},
      {{"tune", "--out", out, "--knob", "nonsense=1,2", "--", "true"}, 2, "profile-train tune: "},
      {{"tune", "--out", out, "--run-arg=--kill-after=3", "--", "true"}, 2,
       "profile-train tune: --run-arg --kill-after=3: tune sets this for every trial itself"},
      {{"tune", "--out", out, "--run-arg", "--out=/tmp/elsewhere", "--", "true"}, 2,
       "profile-train tune: --run-arg --out=/tmp/elsewhere: tune sets this for every trial itself"},
  };
  for (const Case& c : cases) {
    const std::string& cmd = c.args[0];
    const Outcome mine = cmd == "analyze" ? in_process(&add_analyze, c.args)
                         : cmd == "run"   ? in_process(with_command(&add_run, c.args), c.args)
                                          : in_process(with_command(&add_tune, c.args), c.args);
    const Outcome theirs = binary(c.args);
    const std::string what = c.args[0] + " " + c.args[1] + " ... " + c.args.back();
    EXPECT_EQ(mine.rc, c.rc) << what << ": " << mine.err;
    EXPECT_EQ(mine.rc, theirs.rc) << what;
    EXPECT_EQ(mine.out, "") << what;
    EXPECT_EQ(mine.err, theirs.err) << what;
    EXPECT_EQ(mine.err.rfind(c.err_start, 0), 0u) << what << ": " << mine.err;
    EXPECT_EQ(std::count(mine.err.begin(), mine.err.end(), '\n'), 1) << what << ": " << mine.err;
  }
}

// ---- diff of two jobs ---------------------------------------------------------------------------------------

std::string slurp(const fs::path& p) {
  gzFile f = gzopen(p.c_str(), "rb");  // plain files pass through
  std::string out;
  if (f == nullptr) return out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

// A variant of a real rank trace, written as plain JSON under `dir`: its rank renumbered and/or its timeline
// stretched by `stretch` from its first event (every step and phase that much longer). Built at test time: the
// shared traces stay where they are.
fs::path rank_variant(const fs::path& trace, const fs::path& out, std::optional<int> rank, double stretch) {
  nlohmann::json t = nlohmann::json::parse(slurp(trace));
  if (rank) t["distributedInfo"]["rank"] = *rank;
  if (stretch != 1.0) {
    std::optional<double> t0;
    for (const auto& e : t["traceEvents"])
      if (e.contains("ts") && e["ts"].is_number()) t0 = std::min(t0.value_or(e["ts"].get<double>()), e["ts"].get<double>());
    for (auto& e : t["traceEvents"]) {
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = *t0 + (e["ts"].get<double>() - *t0) * stretch;
      if (e.contains("dur") && e["dur"].is_number()) e["dur"] = e["dur"].get<double>() * stretch;
    }
  }
  fs::create_directories(out.parent_path());
  std::ofstream(out) << t.dump();
  return out;
}

const fs::path kRank0 = kTraces / "hta" / "timeline_analysis" / "sampled_rank-0.json.gz";
const fs::path kRank1 = kTraces / "hta" / "trace_filter" / "sampled_rank-1.json.gz";

// `analyze` of the rank files into `out` (a job folder: a report per rank and job.json), in this process.
void analyze_job(const std::vector<fs::path>& traces, const fs::path& out) {
  std::vector<std::string> args = {"analyze"};
  for (const auto& t : traces) args.push_back(t.string());
  args.insert(args.end(), {"--out", out.string(), "--quiet"});
  const Outcome o = in_process(&add_analyze, args);
  ASSERT_EQ(o.rc, 0) << o.err;
  ASSERT_TRUE(fs::exists(out / "job.json")) << out;
}

// Two HTA ranks of one job (world 128) against the same job whose rank 1 got 30% slower (its timeline stretched),
// analyzed with the files in the other order: the ranks pair by rank number, rank 1 is the job's step time and
// becomes its straggler, rank 0 did not change beyond its spread.
TEST(InProcess, DiffOfTwoJobFoldersPairsRanksByNumber) {
  if (!fs::exists(kRank0) || !fs::exists(kRank1)) GTEST_SKIP() << "no shared traces";
  Scratch scratch;
  const fs::path a = scratch.dir / "a", b = scratch.dir / "b", out = scratch.dir / "d";
  analyze_job({kRank0, kRank1}, a);
  analyze_job({rank_variant(kRank1, scratch.dir / "variants" / "slow_rank-1.json", std::nullopt, 1.3), kRank0}, b);
  const std::vector<std::string> args = {"diff", a.string(), b.string(), "--out", out.string()};
  const Outcome mine = in_process(&add_diff, args);
  const nlohmann::json d = nlohmann::json::parse(slurp(out / "diff.json"));
  const Outcome theirs = binary(args);
  ASSERT_EQ(mine.rc, 0) << mine.err;
  EXPECT_EQ(mine.rc, theirs.rc);
  EXPECT_EQ(mine.out, theirs.out);
  EXPECT_EQ(mine.err, "");
  const std::string& s = mine.out;
  EXPECT_EQ(s.rfind("profile-train diff (jobs)  A: " + a.string() + " (2 ranks)  B: " + b.string() + " (2 ranks)\n", 0), 0u) << s;
  EXPECT_NE(s.find("Job step    619 ms -> 805 ms  (+186 ms, B/A = 1.300, 1.30x slower)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("the slowest rank's mean step: A rank 1 (" + (a / "sampled_rank-1").string() + "), B rank 1 (" +
                   (b / "slow_rank-1").string() + ")\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("Job verdict balanced -> straggler  (changed)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Straggler   none -> rank 1 (compute, "), std::string::npos) << s;
  EXPECT_NE(s.find("Ranks       2 paired by rank number (source.distributed.rank); only in A: none; only in B: none\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("Comparable  slowest ranks: window 2 steps x 619 ms = 1239 ms -> 2 steps x 805 ms = 1610 ms; "),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("\nrank 0          615 ms      615 ms   +0.00 ms    1.000  neutral    cpu_overhead -> cpu_overhead\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("written to " + out.string() + "/ diff.json diff.html\n"), std::string::npos) << s;
  EXPECT_EQ(d["diff_version"], "1.1");
  EXPECT_EQ(d["kind"], "job");
  EXPECT_EQ(d["job"]["pairing"], "rank");
  ASSERT_EQ(d["job"]["ranks"].size(), 2u);
  EXPECT_EQ(d["job"]["ranks"][0]["rank"], 0);
  EXPECT_EQ(d["job"]["ranks"][0]["b"], (b / "sampled_rank-0").string());
  EXPECT_EQ(d["job"]["ranks"][0]["headline"]["step_time"], "neutral");
  EXPECT_EQ(d["job"]["ranks"][1]["headline"]["step_time"], "slower");
  EXPECT_EQ(d["job"]["verdict"], nlohmann::json({{"a", "balanced"}, {"b", "straggler"}, {"changed", true}}));
  EXPECT_EQ(d["job"]["straggler"]["changed"], true);
  EXPECT_EQ(d["job"]["a"]["from_job_json"], true);
  EXPECT_EQ(d["headline"]["step_time"], "slower");
  EXPECT_NEAR(d["step_time"]["ratio"].get<double>(), 1.3, 1e-3);
  EXPECT_NEAR(d["comparability"]["a"]["shared_kernel_fraction"].get<double>(), 1.0, 0.2);
  const std::string html = slurp(out / "diff.html");
  EXPECT_NE(html.find("<h1>1.30\xC3\x97 slower</h1>"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"diff-ranks\">"), std::string::npos);
}

// The same job against itself is neutral; against a job whose second rank is rank 2, ranks 1 and 2 are each on one
// side only.
TEST(InProcess, DiffOfTwoJobFoldersNamesRanksOnOneSideOnly) {
  if (!fs::exists(kRank0) || !fs::exists(kRank1)) GTEST_SKIP() << "no shared traces";
  Scratch scratch;
  const fs::path a = scratch.dir / "a", c = scratch.dir / "c";
  analyze_job({kRank0, kRank1}, a);
  analyze_job({kRank0, rank_variant(kRank1, scratch.dir / "variants" / "other_rank-2.json", 2, 1.0)}, c);
  const Outcome same = in_process(&add_diff, {"diff", a.string(), a.string()});
  ASSERT_EQ(same.rc, 0) << same.err;
  EXPECT_NE(same.out.find("Job step    619 ms -> 619 ms  (+0.00 ms, B/A = 1.000): no change in step time beyond its spread"),
            std::string::npos)
      << same.out;
  const Outcome d = in_process(&add_diff, {"diff", a.string(), c.string()});
  ASSERT_EQ(d.rc, 0) << d.err;
  EXPECT_NE(d.out.find("Ranks       1 paired by rank number (source.distributed.rank); only in A: rank 1 (" +
                       (a / "sampled_rank-1").string() + "); only in B: rank 2 (" + (c / "other_rank-2").string() + ")\n"),
            std::string::npos)
      << d.out;
}

// A report against a job folder, an empty folder, a job.json whose rank has no report: one line, exit 2, as the
// binary says it. A job folder of one rank compares as that rank's report.
TEST(InProcess, DiffOfAJobFolderErrors) {
  if (!fs::exists(kRank0) || !fs::exists(kRank1)) GTEST_SKIP() << "no shared traces";
  Scratch scratch;
  const fs::path job = scratch.dir / "job", empty = scratch.dir / "empty", broken = scratch.dir / "broken",
                 one = scratch.dir / "one";
  analyze_job({kRank0, kRank1}, job);
  const fs::path report = job / "sampled_rank-0" / "report.json";
  fs::create_directories(empty);
  fs::create_directories(broken / "sampled_rank-0");
  fs::copy_file(job / "job.json", broken / "job.json");
  fs::copy_file(report, broken / "sampled_rank-0" / "report.json");
  fs::create_directories(one / "rank0");
  fs::copy_file(report, one / "rank0" / "report.json");
  struct Case {
    std::vector<std::string> args;
    std::string err;
  };
  const std::vector<Case> cases = {
      {{"diff", report.string(), job.string()},
       "profile-train diff: A (" + report.string() + ") is a report and B (" + job.string() +
           ") is a job folder of 2 ranks: compare two reports or two job folders\n"},
      {{"diff", job.string(), report.string()},
       "profile-train diff: A (" + job.string() + ") is a job folder of 2 ranks and B (" + report.string() +
           ") is a report: compare two reports or two job folders\n"},
      {{"diff", empty.string(), job.string()},
       "profile-train diff: " + empty.string() + ": no report.json, job.json or sub-folder with a report.json in this folder\n"},
      {{"diff", job.string(), broken.string()},
       "profile-train diff: " + broken.string() + ": job.json lists rank 1 (" + kRank1.string() +
           ") but no sub-folder holds its report.json\n"},
  };
  for (const Case& c : cases) {
    const Outcome mine = in_process(&add_diff, c.args);
    const Outcome theirs = binary(c.args);
    EXPECT_EQ(mine.rc, 2) << c.args[1] << " " << c.args[2];
    EXPECT_EQ(theirs.rc, 2) << c.args[1] << " " << c.args[2];
    EXPECT_EQ(mine.out, "");
    EXPECT_EQ(mine.err, c.err);
    EXPECT_EQ(theirs.err, c.err);
  }
  const Outcome single = in_process(&add_diff, {"diff", one.string(), report.string()});
  EXPECT_EQ(single.rc, 0) << single.err;
  EXPECT_EQ(single.out.rfind("profile-train diff  A: " + (one / "rank0").string() + "  B: " + report.string() + "\n", 0), 0u)
      << single.out;
}

}  // namespace
}  // namespace profile_train::cli
