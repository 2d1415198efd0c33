// End-to-end tests of `profile-train analyze` through the built binary: exit codes 0/2/3, one-line errors
// naming the file, output layout.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "profile_train/common/version.h"

namespace {

namespace fs = std::filesystem;

struct Result {
  int rc = -1;
  std::string out, err;
};

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class AnalyzeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pt_cli_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  Result run(const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = std::string("NO_COLOR=1 '") + PT_BINARY_DIR + "/profile-train' " + args + " >'" +
                            out.string() + "' 2>'" + err.string() + "'";
    const int status = std::system(cmd.c_str());
    Result r;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = slurp(out);
    r.err = slurp(err);
    return r;
  }

  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // A small valid Kineto trace: one 100 us step, 40 us in the DataLoader, then a 55 us kernel.
  fs::path data_bound_trace(const std::string& name = "small.json") {
    return write(name, R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 1000000,
      "computeMajor": 8, "computeMinor": 0, "numSms": 80, "maxThreadsPerMultiprocessor": 2048}],
      "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 1000, "dur": 40},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1040, "dur": 2, "args": {"correlation": 7, "External id": 3}},
      {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1043, "dur": 55,
       "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 3, "grid": [80, 1, 1], "block": [256, 1, 1]}}
      ]})");
  }

  fs::path dir_;
};

TEST_F(AnalyzeCli, WritesReportAndPrintsVerdictFirst) {
  const auto trace = data_bound_trace();
  const auto r = run("analyze '" + trace.string() + "' --out '" + (dir_ / "out").string() + "' --format text,json");
  ASSERT_EQ(r.rc, 0) << r.err;
  ASSERT_TRUE(fs::exists(dir_ / "out" / "report.json"));
  const auto report = nlohmann::json::parse(slurp(dir_ / "out" / "report.json"));
  EXPECT_EQ(report["verdict"]["bottleneck"], "input_pipeline");
  EXPECT_EQ(report["schema_version"], "1.5");
  EXPECT_EQ(r.out.rfind("VERDICT", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("input_pipeline"), std::string::npos);
  // Deterministic output: a second run writes the same bytes.
  const std::string first = slurp(dir_ / "out" / "report.json");
  ASSERT_EQ(run("analyze '" + trace.string() + "' --out '" + (dir_ / "out").string() + "' --format json").rc, 0);
  EXPECT_EQ(first, slurp(dir_ / "out" / "report.json"));
}

// One version string (CMake's project version): --version and report.json's tool.version.
TEST_F(AnalyzeCli, VersionIsTheProjectVersion) {
  const Result v = run("--version");
  EXPECT_EQ(v.rc, 0);
  EXPECT_EQ(v.out, std::string("profile-train ") + profile_train::kVersion + "\n");
  ASSERT_EQ(run("analyze '" + data_bound_trace().string() + "' --out '" + (dir_ / "out").string() + "'").rc, 0);
  const auto report = nlohmann::json::parse(slurp(dir_ / "out" / "report.json"));
  EXPECT_EQ(report["tool"]["version"], profile_train::kVersion);
}

TEST_F(AnalyzeCli, FailOnGate) {
  const auto trace = data_bound_trace();
  const std::string base = "analyze '" + trace.string() + "' --out '" + (dir_ / "o").string() + "' --format json ";
  EXPECT_EQ(run(base + "--fail-on input_pipeline,host_to_device").rc, 3);
  EXPECT_EQ(run(base + "--fail-on gpu_compute").rc, 0);
  const auto bad = run(base + "--fail-on slow");
  EXPECT_EQ(bad.rc, 2);
  EXPECT_NE(bad.err.find("slow"), std::string::npos);
}

TEST_F(AnalyzeCli, SeveralTracesGetSubfoldersAndSummary) {
  const auto a = data_bound_trace("a.pt.trace.json");
  const auto b = data_bound_trace("b.json");
  const auto r = run("analyze '" + a.string() + "' '" + b.string() + "' --out '" + (dir_ / "multi").string() +
                     "' --format text,json");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_TRUE(fs::exists(dir_ / "multi" / "a" / "report.json"));
  EXPECT_TRUE(fs::exists(dir_ / "multi" / "b" / "report.json"));
  EXPECT_NE(r.out.find("Summary (2 trace(s)"), std::string::npos) << r.out;
}

// Bad input: one line on stderr that names the file, exit code 2.
void expect_bad_input(const Result& r, const std::string& file) {
  EXPECT_EQ(r.rc, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("profile-train: "), 0u) << r.err;
  size_t lines = 0;
  for (char c : r.err) lines += c == '\n';
  EXPECT_EQ(lines, 1u) << r.err;
}

TEST_F(AnalyzeCli, BadInputsExitTwoWithOneLine) {
  const std::string out = " --out '" + (dir_ / "o").string() + "' --format json";
  const auto missing = (dir_ / "nope.json").string();
  expect_bad_input(run("analyze '" + missing + "'" + out), missing);
  const auto empty = write("empty.json", "").string();
  expect_bad_input(run("analyze '" + empty + "'" + out), empty);
  const auto text = write("text.json", "this is not json").string();
  expect_bad_input(run("analyze '" + text + "'" + out), text);
  const auto no_events = write("noevents.json", R"({"schemaVersion": 1})").string();
  expect_bad_input(run("analyze '" + no_events + "'" + out), no_events);
  const auto truncated = write("trunc.json.gz", std::string("\x1f\x8b\x08\x00\x00\x00\x00\x00", 8)).string();
  expect_bad_input(run("analyze '" + truncated + "'" + out), truncated);
}

TEST_F(AnalyzeCli, UnwritableOutputDirFailsBeforeWork) {
  const auto trace = data_bound_trace();
  const auto file_as_dir = write("not_a_dir", "x");
  const auto r = run("analyze '" + trace.string() + "' --out '" + (file_as_dir / "sub").string() + "' --format json");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("not_a_dir"), std::string::npos) << r.err;
}

TEST_F(AnalyzeCli, BadUsage) {
  EXPECT_EQ(run("analyze").rc, 2);
  const auto trace = data_bound_trace();
  const auto r = run("analyze '" + trace.string() + "' --format pdf --out '" + (dir_ / "o").string() + "'");
  EXPECT_EQ(r.rc, 2);
  EXPECT_NE(r.err.find("pdf"), std::string::npos);
}

TEST_F(AnalyzeCli, RealTbTraceIsInputBound) {
  const fs::path t = fs::path(PT_TRACES_DIR) / "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
  if (!fs::exists(t)) GTEST_SKIP() << "trace not found (PT_TRACES_DIR): " << t;
  const auto r = run("analyze '" + t.string() + "' --out '" + (dir_ / "tb").string() + "' --format text,json,html");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto report = nlohmann::json::parse(slurp(dir_ / "tb" / "report.json"));
  EXPECT_EQ(report["verdict"]["bottleneck"], "input_pipeline");
  EXPECT_NEAR(report["breakdown"]["data_loading"].get<double>(), 0.3337, 0.005);
}

// Several rank files of one job: a report per rank and the job summary (terminal and job.json).
TEST_F(AnalyzeCli, RanksOfOneJobGetAJobSummary) {
  const fs::path dir = fs::path(PT_TRACES_DIR) / "hta";
  const fs::path r0 = dir / "timeline_analysis/sampled_rank-0.json.gz", r1 = dir / "trace_filter/sampled_rank-1.json.gz";
  if (!fs::exists(r0) || !fs::exists(r1)) GTEST_SKIP() << "HTA traces not found under " << dir;
  const Result r = run("analyze '" + r0.string() + "' '" + r1.string() + "' --out '" + (dir_ / "job").string() + "'");
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_NE(r.out.find("Job (2 ranks): "), std::string::npos) << r.out;
  const auto job = nlohmann::json::parse(slurp(dir_ / "job" / "job.json"));
  ASSERT_EQ(job["ranks"].size(), 2u);
  EXPECT_EQ(job["ranks"][0]["rank"], 0);
  EXPECT_EQ(job["ranks"][1]["rank"], 1);
  const auto rep0 = nlohmann::json::parse(slurp(dir_ / "job" / "sampled_rank-0" / "report.json"));
  EXPECT_EQ(job["ranks"][0]["mean_step_ms"], rep0["steps"]["mean_ms"]);
  EXPECT_TRUE(job["verdict"] == "balanced" || job["verdict"] == "straggler");
  // Unrelated traces (no ranks of one job) get no job summary.
  const Result u = run("analyze '" + data_bound_trace("a.json").string() + "' '" + data_bound_trace("b.json").string() +
                       "' --out '" + (dir_ / "two").string() + "'");
  ASSERT_EQ(u.rc, 0) << u.err;
  EXPECT_EQ(u.out.find("Job ("), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "two" / "job.json"));
}

// Issue 14: the files of a job load in parallel (--jobs), and the outputs are the same as one at a time: the
// same terminal text in the same order, the same reports, the same job summary; a bad file among them is
// reported in its place and the others still are.
TEST_F(AnalyzeCli, ParallelLoadingGivesTheSameOutputsAsOneAtATime) {
  const fs::path dir = fs::path(PT_TRACES_DIR) / "hta";
  const fs::path r0 = dir / "timeline_analysis/sampled_rank-0.json.gz", r1 = dir / "trace_filter/sampled_rank-1.json.gz";
  const fs::path other = dir / "critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz";
  if (!fs::exists(r0) || !fs::exists(r1) || !fs::exists(other)) GTEST_SKIP() << "HTA traces not found under " << dir;
  const fs::path bad = write("bad.json.gz", "not gzip at all");
  const std::string files = "'" + r0.string() + "' '" + bad.string() + "' '" + r1.string() + "' '" + other.string() + "'";
  const Result one = run("analyze " + files + " --jobs 1 --out '" + (dir_ / "one").string() + "'");
  const Result four = run("analyze " + files + " --jobs 4 --out '" + (dir_ / "four").string() + "'");
  EXPECT_EQ(one.rc, 2) << one.err;  // the bad file
  EXPECT_EQ(four.rc, one.rc) << four.err;
  std::string a = one.out, b = four.out;
  for (auto* t : {&a, &b})
    for (const std::string& d : {(dir_ / "one").string(), (dir_ / "four").string()})
      for (size_t at = t->find(d); at != std::string::npos; at = t->find(d)) t->replace(at, d.size(), "OUT");
  EXPECT_EQ(a, b);
  EXPECT_NE(one.err.find("bad.json.gz"), std::string::npos) << one.err;
  EXPECT_NE(four.err.find("bad.json.gz"), std::string::npos) << four.err;
  for (const char* sub : {"sampled_rank-0", "sampled_rank-1", "benchmark_result_2869224_1695835535_trace"}) {
    SCOPED_TRACE(sub);
    const auto x = nlohmann::json::parse(slurp(dir_ / "one" / sub / "report.json"));
    const auto y = nlohmann::json::parse(slurp(dir_ / "four" / sub / "report.json"));
    EXPECT_EQ(x, y);
  }
}

}  // namespace
