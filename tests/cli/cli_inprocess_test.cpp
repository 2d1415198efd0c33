// Commands run in this process with string streams (cli::Io, the pt_cli library): the same bytes and exit codes
// as the profile-train binary gives for the same arguments, and their errors as one line on their own stream.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
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

Outcome in_process(Runner (*add)(CLI::App&, Io), const std::vector<std::string>& args) {
  std::ostringstream out, err;
  CLI::App app{"profile-train"};
  app.require_subcommand(1);
  Runner runner = add(app, Io{&out, &err, false});
  std::vector<const char*> argv{"profile-train"};
  for (const auto& a : args) argv.push_back(a.c_str());
  app.parse(static_cast<int>(argv.size()), argv.data());
  Outcome o;
  o.rc = runner();
  o.out = out.str();
  o.err = err.str();
  return o;
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

}  // namespace
}  // namespace profile_train::cli
