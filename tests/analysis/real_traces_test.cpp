// Goldens on the real traces in PT_TRACES_DIR (../shared/traces): the figures the TensorBoard plugin asserted
// for the ResNet-50 num_workers 0/4 captures, verdicts for all four captures, and a report without a crash for
// every trace. Skips visibly when the folder or the Kineto importer is not available.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <iostream>

#include "mini_schema.h"
#include "profile_train/analysis/analyze.h"
#include "profile_train/trace/importer.h"
#include "report_view.h"

namespace profile_train::analysis {
namespace {

namespace fs = std::filesystem;

fs::path traces_dir() { return fs::path(PT_TRACES_DIR); }

// Loads a trace or skips the test with the reason.
#define LOAD_OR_SKIP(var, rel)                                                                  \
  const fs::path var##_path = traces_dir() / (rel);                                             \
  if (!fs::exists(var##_path)) GTEST_SKIP() << "trace not found: " << var##_path;               \
  auto var##_or = trace::load_trace(var##_path);                                                \
  if (!var##_or.ok() && var##_or.status().code() == StatusCode::kUnsupported)                   \
    GTEST_SKIP() << "importer unavailable: " << var##_or.status().message();                    \
  ASSERT_TRUE(var##_or.ok()) << var##_or.status().message();                                    \
  const trace::Trace& var = var##_or.value()

constexpr const char* kW0a = "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
constexpr const char* kW0b = "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143566756.pt.trace.json.gz";
constexpr const char* kW4a = "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz";
constexpr const char* kW4b = "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623213129365.pt.trace.json.gz";

TEST(RealTraces, TbPluginNumWorkers0Figures) {
  LOAD_OR_SKIP(t, kW0a);
  const auto r = build_report(t);
  // The TensorBoard profiler plugin's own expected figures for this file (its result_check_file.txt).
  EXPECT_NEAR(r["breakdown"]["data_loading"].get<double>(), 0.3337, 0.005);
  EXPECT_NEAR(r["breakdown"]["kernel"].get<double>(), 0.5551, 0.005);
  EXPECT_NEAR(r["gpu"]["utilization"].get<double>(), 0.5551, 0.005);
  EXPECT_NEAR(r["steps"]["mean_ms"].get<double>(), 177.592, 177.592 * 0.01);
  EXPECT_NEAR(r["breakdown"]["memcpy"].get<double>(), 0.0108, 0.003);
  EXPECT_NEAR(r["breakdown"]["runtime"].get<double>(), 0.0164, 0.005);
  EXPECT_NEAR(r["breakdown"]["cpu"].get<double>(), 0.077, 0.01);
  EXPECT_NEAR(r["gpu"]["sm_efficiency"].get<double>(), 0.5468, 0.01);
  EXPECT_NEAR(r["gpu"]["achieved_occupancy"].get<double>(), 0.4913, 0.01);
  EXPECT_EQ(r["steps"]["count"], 6);
  EXPECT_EQ(r["source"]["step_detection"], "profiler_step");
  EXPECT_EQ(r["verdict"]["bottleneck"], "input_pipeline") << r["verdict"].dump(2);
  EXPECT_EQ(r["facts"]["dataloader"]["num_workers"], 0);
  EXPECT_EQ(r["facts"]["optimizer"]["class"], "SGD");
  EXPECT_DOUBLE_EQ(r["gpu"]["tensor_core_kernel_share"].get<double>(), 0.0);
  // HTA v0.5.0 reference (_derived/hta_v0.5.0_reference): host_wait 97% / kernel_wait 3% of stream-7 idle time
  // over steps 5-9 (HTA drops the last step; we keep all six).
  EXPECT_NEAR(r["gpu"]["idle"]["host_wait"].get<double>(), 0.97, 0.03);
  std::cout << "[tb w0a] breakdown " << r["breakdown"].dump() << " mean_ms " << r["steps"]["mean_ms"]
            << " idle " << r["gpu"]["idle"].dump() << "\n";
}

TEST(RealTraces, TbPluginNumWorkers4Figures) {
  LOAD_OR_SKIP(t, kW4a);
  const auto r = build_report(t);
  EXPECT_NEAR(r["breakdown"]["data_loading"].get<double>(), 0.0084, 0.005);
  EXPECT_NEAR(r["breakdown"]["kernel"].get<double>(), 0.7028, 0.005);
  EXPECT_NEAR(r["gpu"]["utilization"].get<double>(), 0.7027, 0.005);
  EXPECT_NEAR(r["steps"]["mean_ms"].get<double>(), 141.068, 141.068 * 0.01);
  EXPECT_NE(r["verdict"]["bottleneck"], "input_pipeline") << r["verdict"].dump(2);
  EXPECT_EQ(r["facts"]["dataloader"]["multiprocess"], true);
  std::cout << "[tb w4a] breakdown " << r["breakdown"].dump() << " verdict " << r["verdict"]["bottleneck"] << "\n";
}

TEST(RealTraces, TbPluginSecondCapturesSameVerdicts) {
  {
    LOAD_OR_SKIP(t, kW0b);
    const auto r = build_report(t);
    EXPECT_EQ(r["verdict"]["bottleneck"], "input_pipeline") << r["verdict"].dump(2);
  }
  {
    LOAD_OR_SKIP(u, kW4b);
    const auto r = build_report(u);
    EXPECT_NE(r["verdict"]["bottleneck"], "input_pipeline") << r["verdict"].dump(2);
  }
}

// Per-step figures (us) the TensorBoard plugin produced for the same files (its result_check_file.txt, parsed
// into the corpus's _derived/tb_plugin_expected_overview.json).
void expect_tb_per_step(const char* rel, const char* key_part) {
  const fs::path expected_path = traces_dir() / "_derived/tb_plugin_expected_overview.json";
  if (!fs::exists(expected_path)) GTEST_SKIP() << "not found: " << expected_path;
  LOAD_OR_SKIP(t, rel);
  std::ifstream in(expected_path);
  const auto all = nlohmann::json::parse(in);
  const nlohmann::json* exp = nullptr;
  for (const auto& [k, v] : all.items())
    if (k.find(key_part) != std::string::npos) exp = &v;
  ASSERT_NE(exp, nullptr);
  const auto r = build_report(t);
  const auto& ours = r["steps"]["per_step"];
  ASSERT_EQ(ours.size(), (*exp)["per_step"].size());
  const char* roles[] = {"kernel", "memcpy", "memset", "runtime", "data_loading", "cpu", "other"};
  for (size_t i = 0; i < ours.size(); ++i) {
    const auto& row = (*exp)["per_step"][i];
    EXPECT_EQ(ours[i]["name"].get<std::string>(), "ProfilerStep#" + row[0].get<std::string>());
    const double dur_us = ours[i]["duration_ms"].get<double>() * 1000.0;
    for (size_t k = 0; k < 7; ++k)
      EXPECT_NEAR(ours[i]["breakdown"][roles[k]].get<double>() * dur_us, row[k + 1].get<double>(), 2.0)
          << rel << " step " << row[0] << " " << roles[k];
  }
}

TEST(RealTraces, TbPluginPerStepNumWorkers0) { expect_tb_per_step(kW0a, "num_workers_0"); }
TEST(RealTraces, TbPluginPerStepNumWorkers4) { expect_tb_per_step(kW4a, "num_workers_4"); }

bool is_trace_file(const fs::path& p) {
  const std::string s = p.filename().string();
  if (p.string().find("/_derived/") != std::string::npos || p.string().find("/expected/") != std::string::npos)
    return false;
  if (s == "gpu_metrics_expected.json" || s == "manifest.json") return false;
  return s.ends_with(".json") || s.ends_with(".json.gz");
}

TEST(RealTraces, EveryTraceGivesAReport) {
  if (!fs::exists(traces_dir())) GTEST_SKIP() << "PT_TRACES_DIR not found: " << traces_dir();
  std::vector<fs::path> files;
  for (const auto& de : fs::recursive_directory_iterator(traces_dir()))
    if (de.is_regular_file() && is_trace_file(de.path())) files.push_back(de.path());
  std::sort(files.begin(), files.end());
  ASSERT_FALSE(files.empty());
  std::ifstream schema_in(std::string(PT_SOURCE_DIR) + "/reports/report.schema.json");
  const testing::MiniSchema schema(nlohmann::json::parse(schema_in));
  int loaded = 0;
  for (const auto& f : files) {
    auto t = trace::load_trace(f);
    if (!t.ok()) {
      if (t.status().code() == StatusCode::kUnsupported && loaded == 0) GTEST_SKIP() << t.status().message();
      ADD_FAILURE() << f << ": " << t.status().message();
      continue;
    }
    ++loaded;
    const auto r = build_report(*t);
    ASSERT_TRUE(r.contains("verdict")) << f;
    const auto errors = schema.validate(r);
    EXPECT_TRUE(errors.empty()) << f << ": " << errors.front();
    EXPECT_EQ(r.dump(), build_report(*t).dump()) << f << ": not deterministic";
    const auto& missing = r["source"]["missing"];
    if (!r["source"]["has_gpu_activity"].get<bool>()) {
      EXPECT_NE(std::find(missing.begin(), missing.end(), "gpu_activity"), missing.end()) << f;
      EXPECT_NE(r["verdict"]["bottleneck"], "gpu_compute") << f;
    }
    std::cout << "[report] " << fs::relative(f, traces_dir()).string() << ": steps=" << r["steps"]["count"]
              << " (" << r["source"]["step_detection"].get<std::string>() << ") mean_ms=" << r["steps"]["mean_ms"]
              << " util=" << r["gpu"]["utilization"] << " verdict=" << r["verdict"]["bottleneck"].get<std::string>()
              << " conf=" << r["verdict"]["confidence"] << " idle=" << r["gpu"]["idle"].dump()
              << " missing=" << missing.dump() << "\n";
  }
  EXPECT_GT(loaded, 20);
}

}  // namespace
}  // namespace profile_train::analysis
