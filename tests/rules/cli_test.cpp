// `profile-train rules ...` exit codes and output, and the end-to-end targets on the real tb_plugin traces.
#include <gtest/gtest.h>

#include <cstdio>
#include <sys/wait.h>

#include "test_util.h"

namespace profile_train::rules {
namespace {

using testing::rule_text;
using testing::TempDir;

const std::filesystem::path kBinary = std::filesystem::path(PT_BINARY_DIR) / "profile-train";

struct CliRun {
  int code = -1;
  std::string out;  // stdout + stderr
};

CliRun run(const std::string& args) {
  TempDir tmp;
  const auto out = tmp.path() / "out.txt";
  const std::string cmd = "'" + kBinary.string() + "' " + args + " > '" + out.string() + "' 2>&1";
  const int status = std::system(cmd.c_str());
  CliRun r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = testing::read_file(out);
  return r;
}

class RulesCli : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::exists(kBinary)) GTEST_SKIP() << kBinary << " is not built";
  }
};

TEST_F(RulesCli, ListShowsTheCatalog) {
  CliRun r = run("rules list");
  EXPECT_EQ(r.code, 0) << r.out;
  for (const char* id : {"use-gpu", "dataloader-workers", "amp", "cuda-graphs", "comm-overlap"})
    EXPECT_NE(r.out.find(id), std::string::npos) << id;
  EXPECT_NE(r.out.find("37 rules"), std::string::npos) << r.out;
  CliRun j = run("rules list --json");
  ASSERT_EQ(j.code, 0) << j.out;
  EXPECT_EQ(nlohmann::json::parse(j.out).size(), 37u);
}

TEST_F(RulesCli, ShowPrintsOneRuleOrFailsWithTwo) {
  CliRun r = run("rules show pin-memory");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("non_blocking=True"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pin_memory()"), std::string::npos) << r.out;
  CliRun bad = run("rules show no-such-rule");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("no rule with id 'no-such-rule'"), std::string::npos) << bad.out;
}

TEST_F(RulesCli, CheckExitCodes) {
  TempDir good;
  good.write("mine.json", rule_text("my-rule"));
  good.write("amp.json", rule_text("amp"));
  CliRun ok = run("rules check '" + good.path().string() + "'");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("OK: 2 rule(s)"), std::string::npos) << ok.out;
  EXPECT_NE(ok.out.find("amp (tier 1) replaces the built-in rule"), std::string::npos) << ok.out;

  TempDir bad;
  const auto f = bad.write("bad.json", rule_text("x", "breakdown.data_loading >"));
  CliRun ko = run("rules check '" + bad.path().string() + "'");
  EXPECT_EQ(ko.code, 2) << ko.out;
  EXPECT_NE(ko.out.find(f.string() + ":6: rule 'x': in \"when\""), std::string::npos) << ko.out;

  TempDir version;
  version.write("v.json", rule_text("x", "true", "3.1"));
  CliRun kv = run("rules check '" + version.path().string() + "'");
  EXPECT_EQ(kv.code, 2) << kv.out;
  EXPECT_NE(kv.out.find("unsupported rule format_version \"3.1\""), std::string::npos) << kv.out;

  CliRun none = run("rules check /nonexistent/rules/dir");
  EXPECT_EQ(none.code, 2) << none.out;

  CliRun builtin = run("rules check '" + (std::filesystem::path(PT_SOURCE_DIR) / "rules").string() + "'");
  EXPECT_EQ(builtin.code, 0) << builtin.out;
  EXPECT_NE(builtin.out.find("OK: 37 rule(s)"), std::string::npos) << builtin.out;
}

TEST_F(RulesCli, ListWithBadUserFolderFailsWithTwo) {
  TempDir bad;
  bad.write("a.json", rule_text("dup"));
  bad.write("b.json", rule_text("dup"));
  CliRun r = run("rules list --rules '" + bad.path().string() + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("duplicate rule id 'dup'"), std::string::npos) << r.out;
}

TEST_F(RulesCli, ExplainOnAReportFile) {
  TempDir tmp;
  nlohmann::json report = testing::read_json(std::filesystem::path(PT_RULES_FIXTURES) / "catalog_cases.json").at("base");
  report["breakdown"]["data_loading"] = 0.25;
  report["gpu"]["idle"]["fraction"] = 0.33;  // the GPU idles while the step waits for data
  report["facts"]["dataloader"]["num_workers"] = 0;
  const auto f = tmp.write("report.json", report.dump());
  CliRun r = run("rules explain dataloader-workers '" + f.string() + "'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("FIRES"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("1.33x"), std::string::npos) << r.out;
}

// ---- end-to-end targets on the real tb_plugin ResNet-50 traces (need the importer and the analysis) ----

struct TraceRun {
  bool ok = false;
  std::string why;
  nlohmann::json report;
};

TraceRun analyze(const std::string& relative) {
  TraceRun t;
  const auto trace = std::filesystem::path(PT_TRACES_DIR) / relative;
  if (!std::filesystem::exists(trace)) {
    t.why = trace.string() + " not found (PT_TRACES_DIR)";
    return t;
  }
  TempDir out;
  CliRun r = run("analyze '" + trace.string() + "' --out '" + out.path().string() + "'");
  if (r.code != 0 && r.out.find("not implemented") != std::string::npos) {
    t.why = "analyze is not implemented yet";
    return t;
  }
  EXPECT_EQ(r.code, 0) << r.out;
  const auto report = out.path() / "report.json";
  if (!std::filesystem::exists(report)) {
    ADD_FAILURE() << "no report.json written: " << r.out;
    return t;
  }
  t.report = testing::read_json(report);
  t.ok = true;
  return t;
}

std::vector<std::string> rec_ids(const nlohmann::json& report) {
  std::vector<std::string> ids;
  for (const auto& r : report.at("recommendations")) ids.push_back(r.at("id"));
  return ids;
}

TEST_F(RulesCli, TbPluginNumWorkers0PutsDataloaderWorkersFirst) {
  TraceRun t = analyze("kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz");
  if (!t.ok && !t.why.empty()) GTEST_SKIP() << t.why;
  ASSERT_TRUE(t.ok);
  const double share = t.report.at("breakdown").at("data_loading").get<double>();
  EXPECT_NEAR(share, 0.334, 0.01);
  const auto& recs = t.report.at("recommendations");
  ASSERT_FALSE(recs.empty());
  EXPECT_EQ(recs[0].at("id"), "dataloader-workers") << ::testing::PrintToString(rec_ids(t.report));
  EXPECT_NEAR(recs[0].at("estimated_speedup_max").get<double>(), 1.0 / (1.0 - share), 0.002);
  EXPECT_NEAR(recs[0].at("estimated_speedup_max").get<double>(), 1.0 / (1.0 - 0.334), 0.03);
  char pct[16];
  std::snprintf(pct, sizeof pct, "%.1f%%", share * 100.0);
  EXPECT_NE(recs[0].at("evidence")[0].get<std::string>().find(pct), std::string::npos) << recs[0].dump(1);
  const auto ids = rec_ids(t.report);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "amp"), ids.end()) << ::testing::PrintToString(ids);
}

TEST_F(RulesCli, TbPluginNumWorkers4HasNoWorkersAdviceButAmp) {
  TraceRun t = analyze("kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz");
  if (!t.ok && !t.why.empty()) GTEST_SKIP() << t.why;
  ASSERT_TRUE(t.ok);
  EXPECT_LT(t.report.at("breakdown").at("data_loading").get<double>(), 0.05);
  const auto ids = rec_ids(t.report);
  EXPECT_EQ(std::find(ids.begin(), ids.end(), "dataloader-workers"), ids.end()) << ::testing::PrintToString(ids);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "amp"), ids.end()) << ::testing::PrintToString(ids);
}

}  // namespace
}  // namespace profile_train::rules
