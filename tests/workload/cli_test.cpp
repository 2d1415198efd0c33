// Runs the profile-train-workload binary: bad flags exit 2 with one clear line; a short CPU run writes the
// result JSON and, under PROFILE_TRAIN_OUT, the facts file that `profile-train run` merges into the report.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;

struct ProcessRun {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

ProcessRun run(const std::string& args, const std::string& env = "") {
  const std::string cmd = env + " " PT_BINARY_DIR "/profile-train-workload " + args + " 2>&1";
  ProcessRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  const int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

fs::path fresh_dir(const std::string& name) {
  auto d = fs::temp_directory_path() / ("pt_workload_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(WorkloadCli, BadFlagsExitTwoWithOneLine) {
  for (const std::string args : {"--model resnet", "--pin-memory 3", "--frobnicate", "--amp fp8"}) {
    const ProcessRun r = run(args);
    EXPECT_EQ(r.exit_code, 2) << args << ": " << r.output;
    EXPECT_EQ(r.output.find("profile-train-workload: "), 0u) << r.output;
    // Exactly one line: the error, nothing before it.
    EXPECT_EQ(r.output.find('\n'), r.output.size() - 1) << r.output;
  }
}

TEST(WorkloadCli, ShortCpuRunWritesResultAndFacts) {
  const auto dir = fresh_dir("cli");
  const auto result = dir / "result.json";
  const ProcessRun r = run("--model mlp --batch-size 8 --steps 4 --warmup 1 --device cpu --threads 1 --host-sync"
                    " --float64 --result " + result.string(),
                    "PROFILE_TRAIN_OUT=" + dir.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("samples/s"), std::string::npos) << r.output;

  std::ifstream in(result);
  ASSERT_TRUE(in.good());
  const auto j = nlohmann::json::parse(in);
  EXPECT_GT(j.at("samples_per_s").get<double>(), 0.0);
  EXPECT_EQ(j.at("steps_measured").get<int>(), 4);
  EXPECT_GT(j.at("step_ms").at("median").get<double>(), 0.0);
  EXPECT_TRUE(j.at("loss_first").is_number());
  EXPECT_TRUE(j.at("loss_last").is_number());
  EXPECT_EQ(j.at("device"), "cpu");
  EXPECT_TRUE(j.at("peak_memory_bytes").is_null());
  EXPECT_EQ(j.at("config").at("model"), "mlp");

  int facts_files = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    const auto name = e.path().filename().string();
    if (name.rfind("facts-", 0) != 0) continue;
    ++facts_files;
    std::ifstream f(e.path());
    const auto facts = nlohmann::json::parse(f);
    EXPECT_EQ(facts.at("dataloader").at("num_workers"), 0);
    EXPECT_EQ(facts.at("dataloader").at("batch_size"), 8);
    EXPECT_EQ(facts.at("optimizer").at("class"), "AdamW");
    EXPECT_EQ(facts.at("params").at("dtypes"), nlohmann::json::array({"float64"}));
    EXPECT_EQ(facts.at("params").at("device"), "cpu");
    EXPECT_GT(facts.at("params").at("count").get<int64_t>(), 0);
    EXPECT_EQ(facts.at("amp").at("autocast_enabled"), false);
    EXPECT_EQ(facts.at("workload").at("name"), "mlp");
    EXPECT_EQ(facts.at("workload").at("planted"), nlohmann::json::array({"host-sync", "float64"}));
    EXPECT_FALSE(facts.at("model").at("has_conv").get<bool>());
  }
  EXPECT_EQ(facts_files, 1);
  fs::remove_all(dir);
}

}  // namespace
