// Commands run in this process with string streams (cli::Io, the pt_cli library): the same bytes and exit codes
// as the profile-train binary gives for the same arguments, and their errors as one line on their own stream.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <functional>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

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
  EXPECT_NE(mine.out.find("Verdict     communication -> cpu_overhead  (changed)"), std::string::npos) << mine.out;
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

}  // namespace
}  // namespace profile_train::cli
