// The typed report model: every report this tool writes survives report_from_json -> to_json unchanged
// (equal JSON, and the same dump(2) bytes: integers stay integers, nulls null, absent keys absent). The
// inputs are the golden reports of the shared corpus (`analyze`) and reports written by `run` (a real PyTorch
// program; skipped without PT_PYTHON's torch), one of them of a crashed command.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/report_json.h"
#include "profile_train/common/utf8.h"
#include "profile_train/rules/engine.h"
#include "profile_train/rules/metric_paths.h"
#include "report_fields.h"

namespace {

namespace model = profile_train::model;
namespace fs = std::filesystem;
using nlohmann::json;
using profile_train::model::report_from_json;
using profile_train::model::to_json;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A readable pointer to the first difference (the JSON patch from `want` to `got`).
std::string first_differences(const json& want, const json& got) {
  const json patch = json::diff(want, got);
  std::string shown;
  for (size_t i = 0; i < patch.size() && i < 10; ++i) shown += "  " + patch[i].dump().substr(0, 300) + "\n";
  return shown;
}

void expect_round_trip(const std::string& text, const std::string& what) {
  const json in = json::parse(text);
  auto report = report_from_json(in);
  ASSERT_TRUE(report.ok()) << what << ": " << report.status().message();
  const json out = to_json(*report);
  EXPECT_EQ(out, in) << what << ":\n" << first_differences(in, out);
  EXPECT_EQ(out.dump(2), in.dump(2)) << what;
}

TEST(ReportModel, EveryGoldenReportRoundTrips) {
  const fs::path dir = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    expect_round_trip(slurp(entry.path()), entry.path().filename().string());
    ++n;
  }
  EXPECT_GE(n, 20) << "the golden reports are missing from " << dir;
}

bool have_torch(const std::string& python) {
  const std::string cmd = "'" + python + "' -c 'import torch' >/dev/null 2>&1";
  return fs::exists(python) && std::system(cmd.c_str()) == 0;
}

// `profile-train run` of the slow-loader program; returns the exit code and report.json's bytes.
std::pair<int, std::string> run_report(const std::string& name, const std::string& extra_args) {
  const fs::path out = fs::temp_directory_path() / ("pt_report_model_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "train_slow_loader.py";
  const std::string cmd = "'" + (fs::path(PT_BINARY_DIR) / "profile-train").string() + "' run --quiet --out '" +
                          out.string() + "' -- '" + std::string(PT_PYTHON) + "' '" + script.string() +
                          "' --workers 0 --steps 6 --sample-ms 0.2 --hidden 64 " + extra_args + " >'" +
                          out.string() + ".log' 2>&1";
  const int status = std::system(cmd.c_str());
  std::string text = slurp(out / "report.json");
  fs::remove_all(out);
  fs::remove(out.string() + ".log");
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, text};
}

// One run (about 10 s on a loaded 2-core machine: Python and torch start-up) of a command that crashes: the
// run-only keys of `source` with exit_code null, signal and crash set; the other shapes (exit_code an
// integer, no crash) are in RunKeysOfACleanExit.
TEST(ReportModel, ReportOfACrashedRunRoundTripsByteForByte) {
  if (!have_torch(PT_PYTHON)) GTEST_SKIP() << "no Python with torch at " << PT_PYTHON;
  const auto [crash_rc, crash_text] = run_report("crash", "--crash-after 3");
  ASSERT_EQ(crash_rc, 4);
  ASSERT_FALSE(crash_text.empty());
  expect_round_trip(crash_text, "report of a crashed run");
  auto crashed = report_from_json(json::parse(crash_text));
  ASSERT_TRUE(crashed.ok());
  ASSERT_TRUE(crashed->source.run.has_value());
  EXPECT_FALSE(crashed->source.run->exit_code.has_value());
  EXPECT_EQ(crashed->source.run->signal, "SIGSEGV");
  EXPECT_TRUE(crashed->source.run->crash.has_value());
  EXPECT_EQ(to_json(*crashed).dump(2) + "\n", crash_text) << "report.json is dump(2) of the report";
}

TEST(ReportModel, RunKeysOfACleanExit) {
  const fs::path any = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports" / "param_linear_kineto.json";
  json in = json::parse(slurp(any));
  in["source"].update({{"command", {"python", "train.py"}}, {"exit_code", 0}, {"signal", nullptr},
                       {"interrupted", false}, {"capture_files", 2}, {"leftover_processes", 0}});
  auto report = report_from_json(in);
  ASSERT_TRUE(report.ok()) << report.status().message();
  ASSERT_TRUE(report->source.run.has_value());
  EXPECT_EQ(report->source.run->exit_code, 0);
  EXPECT_FALSE(report->source.run->crash.has_value());
  const json out = to_json(*report);
  EXPECT_EQ(out, in) << first_differences(in, out);
  EXPECT_FALSE(out["source"].contains("crash"));
  EXPECT_TRUE(out["source"]["exit_code"].is_number_integer());
  report->source.run.reset();
  EXPECT_FALSE(to_json(*report)["source"].contains("command")) << "analyze's reports have no run keys";
}

TEST(ReportModel, NullAndAbsentStayApart) {
  const fs::path any = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports" / "param_linear_kineto.json";
  json in = json::parse(slurp(any));
  in["data_quality"]["agent_internal_errors"] = 3;  // absent in Kineto reports, set in native ones
  in["steps"]["per_step"][0].erase("phases_ms");
  in["gpu"]["idle"] = nullptr;
  auto report = report_from_json(in);
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->data_quality.agent_internal_errors, 3);
  EXPECT_FALSE(report->steps.per_step[0].phases_ms.has_value());
  const json out = to_json(*report);
  EXPECT_EQ(out["data_quality"]["agent_internal_errors"], 3);
  EXPECT_FALSE(out["steps"]["per_step"][0].contains("phases_ms"));
  ASSERT_TRUE(out["gpu"].contains("idle"));
  EXPECT_TRUE(out["gpu"]["idle"].is_null());
  report->data_quality.agent_internal_errors.reset();
  EXPECT_FALSE(to_json(*report)["data_quality"].contains("agent_internal_errors"));
}

TEST(ReportModel, IntegersStayIntegersAndFloatsFloats) {
  auto report = report_from_json(json::parse(R"({"schema_version": "1.1", "steps": {"count": 3, "mean_ms": 2.0}})"));
  ASSERT_TRUE(report.ok()) << report.status().message();
  const json out = to_json(*report);
  EXPECT_TRUE(out["steps"]["count"].is_number_integer());
  EXPECT_TRUE(out["steps"]["mean_ms"].is_number_float());
  EXPECT_EQ(out["steps"]["mean_ms"].dump(), "2.0");
}

TEST(ReportModel, WrongTypesAreOneClearError) {
  auto bad = report_from_json(json::parse(R"({"steps": {"count": "three"}})"));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().exit_code(), 2);
  EXPECT_NE(bad.status().message().find("steps.count"), std::string::npos) << bad.status().message();
  EXPECT_NE(bad.status().message().find("integer"), std::string::npos) << bad.status().message();

  auto role = report_from_json(json::parse(R"({"recommendations": [{"id": "x", "gain_from": ["kernels"]}]})"));
  ASSERT_FALSE(role.ok());
  EXPECT_NE(role.status().message().find("recommendations[0].gain_from[0]"), std::string::npos)
      << role.status().message();

  auto verdict = report_from_json(json::parse(R"({"verdict": {"bottleneck": "disk"}})"));
  ASSERT_FALSE(verdict.ok());
  EXPECT_NE(verdict.status().message().find("verdict.bottleneck"), std::string::npos);

  EXPECT_FALSE(report_from_json(json::array()).ok());
  auto future = report_from_json(json::parse(R"({"schema_version": "2.0"})"));
  ASSERT_FALSE(future.ok());
  EXPECT_NE(future.status().message().find("2.0"), std::string::npos);
}

TEST(ReportModel, HandMadeFixtureWithMissingKeysReads) {
  const fs::path fixture = fs::path(PT_SOURCE_DIR) / "tests" / "report" / "fixtures" / "report_input_pipeline.json";
  auto report = report_from_json(json::parse(slurp(fixture)));
  ASSERT_TRUE(report.ok()) << report.status().message();
  EXPECT_EQ(report->verdict.bottleneck, profile_train::Bottleneck::kInputPipeline);
  EXPECT_GT(report->steps.count, 0);
}

// The rules evaluate over to_json of the typed report and what they write comes back into it: the same as
// the rules over the JSON, for every golden report.
TEST(ReportModel, TypedRulesGiveWhatTheRulesWriteIntoTheJson) {
  auto rules = profile_train::rules::load_rules();
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  const fs::path dir = fs::path(PT_SOURCE_DIR) / "tests" / "golden" / "reports";
  int n = 0;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.path().extension() != ".json") continue;
    json in = json::parse(slurp(entry.path()));
    in["recommendations"] = json::array();
    in["plan"] = nullptr;
    auto typed = report_from_json(in);
    ASSERT_TRUE(typed.ok()) << typed.status().message();
    profile_train::rules::apply_rules(**rules, in);
    ASSERT_TRUE(profile_train::rules::apply_rules(**rules, *typed).ok());
    const json out = to_json(*typed);
    EXPECT_EQ(out, in) << entry.path().filename() << ":\n" << first_differences(in, out);
    n += in["recommendations"].empty() ? 0 : 1;
  }
  EXPECT_GE(n, 10) << "reports with recommendations";
}

// Invalid UTF-8 anywhere in the typed report (file names, the command, facts keys) is repaired before the
// writers get it, counted as the JSON repair counts, and said in data_quality.notes.
TEST(ReportModel, Utf8RepairOfTheTypedReportCountsAndNotes) {
  model::Report r;
  r.source.files = {"ok.json", "bad\xff.json"};
  r.source.run.emplace().command = {"python", "tr\xc3" "ain.py"};
  r.facts = {{"k\xfe", "v"}, {"fine", "a\x80"}};
  r.recommendations.emplace_back().evidence = {"\xed\xa0\x80 surrogate"};
  json as_json = to_json(r);
  const size_t json_count = profile_train::repair_utf8(as_json);
  const size_t n = model::repair_report_utf8(r);
  EXPECT_EQ(n, 5u);
  EXPECT_EQ(n, json_count);
  ASSERT_EQ(r.data_quality.notes.size(), 1u);
  EXPECT_NE(r.data_quality.notes[0].find("5 string(s)"), std::string::npos) << r.data_quality.notes[0];
  EXPECT_NO_THROW(to_json(r).dump());
  EXPECT_EQ(r.source.files[0], "ok.json");
  EXPECT_EQ(r.source.files[1], "bad\xEF\xBF\xBD.json");
  EXPECT_EQ(model::repair_report_utf8(r), 0u) << "nothing left to repair";
  EXPECT_EQ(r.data_quality.notes.size(), 1u) << "no note when nothing was repaired";
}

// Every dotted key path the serializer can write, from the key declaration itself (report_fields.h).
struct PathLister {
  std::string prefix;
  std::set<std::string>* out;
  template <class T>
  void operator()(const char* key, const T& value) { add(prefix + key, value); }
  template <class T>
  void absent_if_unset(const char* key, const std::optional<T>&) { add(prefix + key, T{}); }
  template <class T>
  void inline_group(const std::optional<T>&) { T group{}; model::detail::fields(*this, group); }

  template <class T>
  void add(const std::string& path, const T&) {
    out->insert(path);
    using namespace profile_train;
    if constexpr (std::is_same_v<T, model::RoleValues>) {
      for (auto name : kBreakdownRoleNames) out->insert(path + "." + std::string(name));
    } else if constexpr (std::is_same_v<T, model::PhaseValues>) {
      for (auto name : kPhaseNames) out->insert(path + "." + std::string(name));
    } else if constexpr (model::detail::ReportStruct<T>) {
      PathLister inner{path + ".", out};
      T value{};
      model::detail::fields(inner, value);
    }
  }
  template <class T>
  void add(const std::string& path, const std::optional<T>&) { add(path, T{}); }
};

// The rules' metric table (rules/metric_paths.cpp) names only keys that to_json writes: a path there that
// the model cannot produce would be a rule condition that is never known. facts.* stays open JSON.
TEST(ReportModel, EveryMetricPathTheRulesMayNameIsWrittenByToJson) {
  std::set<std::string> written;
  PathLister root{"", &written};
  const model::Report report;
  model::detail::fields(root, report);
  ASSERT_TRUE(written.count("gpu.memcpy.h2d.pageable_fraction"));
  ASSERT_TRUE(written.count("source.exit_code")) << "run's keys";
  std::vector<std::string> unknown;
  for (const auto& m : profile_train::rules::metric_paths()) {
    const std::string path(m.path);
    if (path == "facts" || path.rfind("facts.", 0) == 0) continue;
    if (!written.count(path)) unknown.push_back(path);
  }
  EXPECT_TRUE(unknown.empty()) << "metric paths to_json never writes: " << ::testing::PrintToString(unknown);
}

}  // namespace
