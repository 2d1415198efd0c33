// reports/report.schema.json: the validator works, the schema is well-formed, and produced reports conform.
#include <gtest/gtest.h>

#include <fstream>

#include <filesystem>

#include "mini_schema.h"
#include "profile_train/analysis/analyze.h"
#include "report_view.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

using testing::MiniSchema;
using testing::TraceBuilder;

nlohmann::json load_schema() {
  std::ifstream in(std::string(PT_SOURCE_DIR) + "/reports/report.schema.json");
  return nlohmann::json::parse(in);
}

TEST(MiniSchema, CatchesViolations) {
  const MiniSchema s(nlohmann::json::parse(R"({
    "$defs": {"frac": {"type": ["number", "null"], "minimum": 0, "maximum": 1}},
    "type": "object", "required": ["a", "b"],
    "properties": {"a": {"$ref": "#/$defs/frac"}, "b": {"type": "array", "items": {"enum": ["x", "y"]}},
                   "c": {"type": "object", "additionalProperties": false, "properties": {"d": {"type": "integer"}}}}})"));
  EXPECT_TRUE(s.validate(nlohmann::json::parse(R"({"a": 0.5, "b": ["x"], "c": {"d": 3}})")).empty());
  EXPECT_TRUE(s.validate(nlohmann::json::parse(R"({"a": null, "b": []})")).empty());
  EXPECT_EQ(s.validate(nlohmann::json::parse(R"({"a": 1.5, "b": ["z"]})")).size(), 2u);
  EXPECT_EQ(s.validate(nlohmann::json::parse(R"({"b": "x"})")).size(), 2u);  // missing a, wrong type of b
  EXPECT_EQ(s.validate(nlohmann::json::parse(R"({"a": 0, "b": [], "c": {"d": 1.5, "e": 1}})")).size(), 2u);
}

TEST(Schema, SyntheticReportsConform) {
  const MiniSchema s(load_schema());
  const std::vector<trace::Trace> traces = [] {
    std::vector<trace::Trace> v;
    v.push_back(TraceBuilder()
                    .device(0)
                    .annotation("ProfilerStep#1", 0, 100)
                    .annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", 0, 20)
                    .runtime("cudaLaunchKernel", 20, 1, 1)
                    .kernel("volta_sgemm_128x64_nn", 21, 50, 1).launch_config(80, 256, 1.f, 25.f)
                    .runtime("cudaMemcpyAsync", 75, 1, 2)
                    .memcpy(trace::CopyKind::kHtoD, trace::MemoryKind::kPinned, trace::MemoryKind::kDevice, 76, 2, 1000, 2)
                    .memory_sample(1, 100, 100)
                    .build());
    v.push_back(TraceBuilder().annotation("ProfilerStep#1", 0, 100).cpu_op("aten::mm", 1, 50).build());
    v.push_back(TraceBuilder().build());
    return v;
  }();
  for (const auto& t : traces) {
    const auto r = build_report(t);
    const auto errors = s.validate(r);
    EXPECT_TRUE(errors.empty()) << errors.front() << "\n" << r.dump(2);
  }
  // A broken report is rejected.
  auto bad = build_report(traces[0]);
  bad["verdict"]["bottleneck"] = "slow";
  bad.erase("gpu");
  EXPECT_EQ(s.validate(bad).size(), 2u);
}

// The capture agent's internal-error count reaches data_quality for native captures only, and conforms.
TEST(Schema, AgentInternalErrorsOnlyForNativeCaptures) {
  const MiniSchema s(load_schema());
  trace::Trace t = TraceBuilder().annotation("ProfilerStep#1", 0, 100).cpu_op("aten::mm", 1, 50).build();
  EXPECT_FALSE(build_report(t)["data_quality"].contains("agent_internal_errors"));  // e.g. a Kineto trace
  t.quality.agent_internal_errors = 3;
  const auto r = build_report(t);
  EXPECT_EQ(r["data_quality"]["agent_internal_errors"], 3);
  const auto errors = s.validate(r);
  EXPECT_TRUE(errors.empty()) << errors.front();
  auto bad = r;
  bad["data_quality"]["agent_internal_errors"] = -1;
  EXPECT_EQ(s.validate(bad).size(), 1u);
}

// reports/diff.schema.json: the golden diffs (two reports, two jobs) conform; a broken one does not.
TEST(DiffSchema, GoldenDiffsConform) {
  std::ifstream in(std::string(PT_SOURCE_DIR) + "/reports/diff.schema.json");
  const MiniSchema s(nlohmann::json::parse(in));
  const std::filesystem::path dir = std::filesystem::path(PT_SOURCE_DIR) / "tests" / "golden" / "diffs";
  int checked = 0, jobs = 0;
  nlohmann::json any;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (!name.ends_with(".json")) continue;
    std::ifstream f(e.path());
    const nlohmann::json d = nlohmann::json::parse(f);
    const auto errors = s.validate(d);
    EXPECT_TRUE(errors.empty()) << name << ": " << errors.front();
    ++checked;
    jobs += d["kind"] == "job";
    any = d;
  }
  EXPECT_GE(checked, 5);
  EXPECT_GE(jobs, 1);
  any["headline"]["step_time"] = "same";
  any["comparability"]["a"]["shared_kernel_fraction"] = 1.5;
  EXPECT_EQ(s.validate(any).size(), 2u);
}

}  // namespace
}  // namespace profile_train::analysis
