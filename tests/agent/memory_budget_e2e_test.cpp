// End-to-end: `profile-train run` on a known model (tests/agent/data/memory_mlp.py, an MLP with AdamW on the CPU)
// and the report's memory_budget. Parameter, gradient and optimizer state bytes are compared with the figures the
// model's shapes give; the activations with what torch.profiler(profile_memory=True) counts for a forward of the
// same run (the program writes that figure to a side file: the bytes the profiled forward allocated and still
// holds at its end, i.e. what it keeps for backward); a planted leak (every step's loss kept with its graph) is
// named as growth across steps, and no growth is named without it.
// Needs PT_PYTHON with torch (skips otherwise); CPU only.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "test_util.h"

using namespace pt_agent_test;
using nlohmann::json;

namespace {

const fs::path kBinary = fs::path(PT_BINARY_DIR) / "profile-train";
const fs::path kPython = PT_PYTHON;
const fs::path kScript = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "memory_mlp.py";

bool have_torch() {
  const std::string cmd = "'" + kPython.string() + "' -c 'import torch' >/dev/null 2>&1";
  return fs::exists(kPython) && std::system(cmd.c_str()) == 0;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct MlpRun {
  fs::path out;
  int rc = -1;
  std::string log;
  json report, reference;
};

// `profile-train run --out DIR -- python memory_mlp.py --reference DIR/reference.json ARGS` (at most 120 s).
MlpRun run_mlp(const std::string& name, const std::vector<std::string>& args) {
  MlpRun r;
  r.out = fresh_dir(name);
  const fs::path ref = r.out / "reference.json";
  std::vector<std::string> argv = {kBinary.string(), "run", "--out", (r.out / "run").string(), "--",
                                   kPython.string(), kScript.string(), "--reference", ref.string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const fs::path log = r.out / "log.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.log = slurp(log);
  r.report = json::parse(slurp(r.out / "run" / "report.json"), nullptr, false);
  r.reference = json::parse(slurp(ref), nullptr, false);
  return r;
}

int64_t i64(const json& j) { return j.is_number_integer() ? j.get<int64_t>() : -1; }

// The MLP of memory_mlp.py: Linear(inputs, hidden), (layers - 1) x Linear(hidden, hidden), Linear(hidden, 10),
// float32. Returns (parameter count, number of parameter tensors).
std::pair<int64_t, int64_t> mlp_params(int64_t inputs, int64_t hidden, int64_t layers) {
  int64_t count = inputs * hidden + hidden;
  for (int64_t l = 1; l < layers; ++l) count += hidden * hidden + hidden;
  count += hidden * 10 + 10;
  return {count, 2 * (layers + 1)};
}

}  // namespace

// Exact static bytes, activations within 15 % of the profiler's, the fit line, no growth named.
TEST(MemoryBudget, KnownMlpWithAdamW) {
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string();
  MlpRun r = run_mlp("membudget_adamw", {"--steps", "12", "--batch", "64", "--inputs", "128", "--hidden", "1024",
                                      "--layers", "3"});
  ASSERT_EQ(r.rc, 0) << r.log;
  ASSERT_TRUE(r.report.is_object()) << r.log;
  const json& b = r.report["memory_budget"];
  ASSERT_TRUE(b.is_object()) << r.report["facts"].dump();
  const auto [count, tensors] = mlp_params(128, 1024, 3);
  EXPECT_EQ(b["device"], "CPU");
  EXPECT_EQ(i64(b["batch_size"]), 64);
  EXPECT_EQ(i64(b["parameter_bytes"]), 4 * count);
  EXPECT_EQ(i64(b["gradient_bytes"]), 4 * count);
  // AdamW: exp_avg and exp_avg_sq per parameter (float32) and a 0-dim float32 `step` tensor per parameter.
  EXPECT_EQ(i64(b["optimizer_state_bytes"]), 2 * 4 * count + 4 * tensors);
  EXPECT_EQ(i64(b["static_bytes"]), 4 * 4 * count + 4 * tensors);
  EXPECT_EQ(r.report["facts"]["memory"]["optimizer_state_bytes_by_class"]["AdamW"], 2 * 4 * count + 4 * tensors);

  ASSERT_TRUE(r.reference.is_object()) << r.log;
  const double ref = static_cast<double>(i64(r.reference["forward_held_bytes"]));
  ASSERT_GT(ref, 0) << r.reference.dump();
  const double act = static_cast<double>(i64(b["activation_bytes"]));
  EXPECT_NEAR(act, ref, 0.15 * ref) << "activations " << act << " B vs the profiler's " << ref << " B";
  EXPECT_EQ(i64(b["activation_per_sample_bytes"]), i64(b["activation_bytes"]) / 64);
  EXPECT_EQ(i64(b["peak_bytes"]), i64(b["static_bytes"]) + i64(b["activation_bytes"]));

  // The fit: capacity is the RAM the process may use, free at most MemAvailable; samples follow from them.
  ASSERT_TRUE(b["capacity_bytes"].is_number_integer()) << b.dump();
  EXPECT_NE(b["capacity_source"].get<std::string>().find("RAM the process may use"), std::string::npos);
  const int64_t free = i64(b["free_bytes"]);
  ASSERT_GE(free, 0) << b.dump();
  EXPECT_LE(free, i64(b["capacity_bytes"]));
  EXPECT_EQ(i64(b["samples_fit"]), 64 + free / i64(b["activation_per_sample_bytes"]));
  ASSERT_TRUE(b["fit"].is_string()) << b.dump();
  EXPECT_EQ(b["fit"].get<std::string>().rfind("batch 64 fits with ", 0), 0u) << b["fit"];
  EXPECT_NE(r.log.find("memory budget (CPU)"), std::string::npos) << r.log;
  // report.html shows the split and the fit line.
  const std::string html = slurp(r.out / "run" / "report.html");
  EXPECT_NE(html.find("<section id=\"memory-budget\"><h2>Memory budget (CPU)</h2>"), std::string::npos);
  EXPECT_NE(html.find("<a href=\"#memory-budget\">Memory budget</a>"), std::string::npos);  // in the navigation
  EXPECT_NE(html.find(b["fit"].get<std::string>()), std::string::npos);

  // No leak: no growth named.
  EXPECT_EQ(i64(b["growth_per_step_bytes"]), 0) << r.report["facts"]["memory"]["steps"].dump();
  EXPECT_EQ(r.log.find("across steps (a leak?)"), std::string::npos) << r.log;
}

// amsgrad adds a third moment per parameter: the state count follows the optimizer's own state.
TEST(MemoryBudget, AmsgradCountsTheThirdMoment) {
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string();
  MlpRun r = run_mlp("membudget_amsgrad", {"--steps", "4", "--batch", "32", "--inputs", "64", "--hidden", "256",
                                        "--layers", "2", "--amsgrad"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& b = r.report["memory_budget"];
  ASSERT_TRUE(b.is_object()) << r.log;
  const auto [count, tensors] = mlp_params(64, 256, 2);
  EXPECT_EQ(i64(b["parameter_bytes"]), 4 * count);
  EXPECT_EQ(i64(b["optimizer_state_bytes"]), 3 * 4 * count + 4 * tensors);
  EXPECT_EQ(i64(b["batch_size"]), 32);
}

// The planted leak: every step's loss kept with its graph (retain_graph) keeps that step's activations; the
// report names growth across steps of about one step's activations.
TEST(MemoryBudget, PlantedLeakIsNamedAsGrowth) {
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string();
  MlpRun r = run_mlp("membudget_leak", {"--steps", "12", "--batch", "64", "--inputs", "128", "--hidden", "1024",
                                     "--layers", "3", "--leak"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& b = r.report["memory_budget"];
  ASSERT_TRUE(b.is_object()) << r.log;
  const int64_t growth = i64(b["growth_per_step_bytes"]);
  const int64_t act = i64(b["activation_bytes"]);
  EXPECT_GT(growth, act / 2) << r.report["facts"]["memory"]["steps"].dump();
  EXPECT_LT(growth, act * 2) << r.report["facts"]["memory"]["steps"].dump();
  EXPECT_TRUE(b["growth_source"].is_string()) << b.dump();
  EXPECT_NE(r.log.find("across steps (a leak?)"), std::string::npos) << r.log;
}

// The shim's GPU branch without a GPU (tests/agent/data/memory_facts_gpu_path.py: torch.cuda's counters scripted):
// one peak per step with a reset at each step's start, the allocated series, and the run's peak kept for
// facts.gpu.memory_peak_bytes.
TEST(MemoryBudget, ShimGpuBranchWithScriptedCounters) {
  if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string();
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "memory_facts_gpu_path.py";
  const fs::path shim = fs::path(PT_SOURCE_DIR) / "src" / "agent" / "python";
  const fs::path out = fresh_dir("membudget_gpu_branch") / "out.txt";
  const std::string cmd = "'" + kPython.string() + "' '" + script.string() + "' '" + shim.string() + "' > '" +
                          out.string() + "' 2>&1";
  const int rc = std::system(cmd.c_str());
  EXPECT_EQ(rc, 0) << slurp(out);
  EXPECT_EQ(slurp(out), "ok\n");
}
