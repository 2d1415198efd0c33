// End-to-end: `profile-train run` on look-alikes of real training programs (tests/agent/data/), written by us in
// the style of the originals: a Hugging Face Trainer-like loop (accelerate-style prefetch, gradient
// accumulation, max_steps), pytorch/examples word_language_model (manual SGD, no torch.optim, no DataLoader,
// evaluation and a checkpoint after each epoch), mnist (train + test each epoch) and dcgan (two optimizers per
// batch, a periodic slow image dump), and a loop whose first step is compile-like slow. Lightning and transformers are not installed here: their loops' step structure
// (prefetch, accumulation, max_steps, evaluation) is what these look-alikes reproduce.
// Each case asserts the exact step count, how the steps were found, the phase split and the facts.
// Needs PT_PYTHON with torch (skips otherwise); CPU only.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/analyzers.h"
#include "test_util.h"

using namespace pt_agent_test;
using nlohmann::json;

namespace {

const fs::path kBinary = fs::path(PT_BINARY_DIR) / "profile-train";
const fs::path kPython = PT_PYTHON;
const fs::path kData = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data";

bool have_torch() {
  static int cached = -1;
  if (cached < 0) {
    const std::string cmd = "'" + kPython.string() + "' -c 'import torch' >/dev/null 2>&1";
    cached = fs::exists(kPython) && std::system(cmd.c_str()) == 0 ? 1 : 0;
  }
  return cached == 1;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct ProgramRun {
  fs::path out;
  int rc = -1;
  std::string log;
  json report;
};

// `profile-train run --out DIR [run_opts] -- python tests/agent/data/SCRIPT ARGS`, waited for (at most 120 s).
ProgramRun run_program(const std::string& name, const std::string& script, const std::vector<std::string>& args,
                const std::vector<std::string>& run_opts = {}) {
  const fs::path out = fresh_dir(name);
  std::vector<std::string> argv = {kBinary.string(), "run", "--out", out.string()};
  argv.insert(argv.end(), run_opts.begin(), run_opts.end());
  argv.insert(argv.end(), {"--", kPython.string(), (kData / script).string()});
  argv.insert(argv.end(), args.begin(), args.end());
  const fs::path log = out / "log.txt";
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
  ProgramRun r;
  r.out = out;
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
  const std::string text = slurp(out / "report.json");
  r.report = json::parse(text, nullptr, false);
  if (r.report.is_discarded()) r.report = json();
  return r;
}

double num(const json& j) { return j.is_number() ? j.get<double>() : -1.0; }

// The phase split is there, every phase the program has is measured, and the phases add up to the mean step.
void expect_phase_split(const json& r, bool has_optimizer, bool has_loader) {
  ASSERT_TRUE(r["phases"].is_object()) << r["phases"].dump();
  const json& ms = r["phases"]["ms_per_step"];
  EXPECT_GT(num(ms["forward"]), 0) << ms.dump();
  EXPECT_GT(num(ms["backward"]), 0) << ms.dump();
  EXPECT_EQ(ms["optimizer"].is_number(), has_optimizer) << ms.dump();
  EXPECT_EQ(ms["data_wait"].is_number(), has_loader) << ms.dump();
  double sum = 0;
  for (const auto& [k, v] : ms.items()) sum += v.is_number() ? v.get<double>() : 0.0;
  EXPECT_NEAR(sum, num(r["steps"]["mean_ms"]), 1e-3 + 1e-6 * sum) << ms.dump();
  EXPECT_GE(num(ms["other"]), 0) << ms.dump();
}

#define REQUIRE_TORCH()                                                                 \
  do {                                                                                  \
    if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string(); \
  } while (0)

}  // namespace

// HF Trainer style, 12 optimizer steps of 4 micro-batches, the loader one batch ahead: 12 steps, accumulation 4
// (not 15 steps and accumulation 5, as when fetches delimited the steps).
TEST(RealPrograms, TrainerLikePrefetchWithAccumulation) {
  REQUIRE_TORCH();
  const ProgramRun run = run_program("rp_trainer_acc", "trainer_like.py", {"--max-steps", "12", "--accumulation", "4"});
  ASSERT_EQ(run.rc, 0) << run.log;
  const json& r = run.report;
  EXPECT_EQ(r["source"]["step_detection"], "optimizer_annotation");
  EXPECT_EQ(r["steps"]["count"], 12) << r["steps"]["per_step"].dump();
  EXPECT_EQ(r["facts"]["training"]["gradient_accumulation_steps"], 4) << r["facts"].dump();
  expect_phase_split(r, true, true);
}

// The same loop without accumulation: 12 steps, accumulation 1, and no short fetch-only step 0.
TEST(RealPrograms, TrainerLikePrefetchWithoutAccumulation) {
  REQUIRE_TORCH();
  const ProgramRun run = run_program("rp_trainer", "trainer_like.py", {"--max-steps", "12"});
  ASSERT_EQ(run.rc, 0) << run.log;
  const json& r = run.report;
  EXPECT_EQ(r["steps"]["count"], 12);
  EXPECT_EQ(r["facts"]["training"]["gradient_accumulation_steps"], 1) << r["facts"].dump();
  const json& steps = r["steps"]["per_step"];
  ASSERT_EQ(steps.size(), 12u);
  // Step 0 holds a whole iteration: it is not a fraction of the median step (a lone fetch was ~5% of it).
  EXPECT_GT(num(steps[0]["duration_ms"]), 0.5 * num(r["steps"]["median_ms"])) << steps.dump();
  expect_phase_split(r, true, true);
}

// `--warmup-steps 2 --steps 5` on the prefetching loop: the window holds exactly 5 steps.
TEST(RealPrograms, TrainerLikeCaptureWindowCountsOptimizerSteps) {
  REQUIRE_TORCH();
  const ProgramRun run = run_program("rp_trainer_window", "trainer_like.py", {"--max-steps", "12"},
                              {"--warmup-steps", "2", "--steps", "5"});
  ASSERT_EQ(run.rc, 0) << run.log;
  EXPECT_EQ(run.report["steps"]["count"], 5) << run.report["steps"]["per_step"].dump();
}

// word_language_model style: 2 epochs x 10 batches of manual SGD, each epoch followed by an evaluation pass and a
// 0.3 s checkpoint save. Steps at backward boundaries: 20 steps, none holding the evaluation or the save.
TEST(RealPrograms, ManualSgdWithoutOptimizerOrDataLoader) {
  REQUIRE_TORCH();
  const ProgramRun run = run_program("rp_lm", "manual_sgd_lm.py", {"--epochs", "2", "--batches", "10", "--save-s", "0.3"});
  ASSERT_EQ(run.rc, 0) << run.log;
  const json& r = run.report;
  EXPECT_EQ(r["source"]["step_detection"], "backward_annotation");
  EXPECT_EQ(r["steps"]["count"], 20);
  double longest = 0;
  for (const auto& s : r["steps"]["per_step"]) longest = std::max(longest, num(s["duration_ms"]));
  // A step holding the save lasts at least its 300 ms; under a loaded machine normal steps reach ~255 ms.
  EXPECT_LT(longest, 300) << "a step holds the evaluation or the 300 ms checkpoint save\n" << r["steps"].dump();
  EXPECT_FALSE(r["facts"].contains("training")) << "no optimizer: no accumulation to report";
  expect_phase_split(r, false, false);
}

// mnist style: 2 epochs x 8 training batches, a 5-batch test pass after each: 16 steps, the test batches are not
// steps and no step holds them.
TEST(RealPrograms, TrainAndTestEachEpoch) {
  REQUIRE_TORCH();
  // Each test pass sleeps 5 x 80 ms on top of its forwards: at least 400 ms, whatever the machine's load.
  const ProgramRun run = run_program("rp_mnist", "mnist_like.py", {"--epochs", "2", "--train-batches", "8", "--test-batches", "5",
                                                                    "--test-sleep-ms", "80"});
  ASSERT_EQ(run.rc, 0) << run.log;
  const json& r = run.report;
  EXPECT_EQ(r["source"]["step_detection"], "optimizer_annotation");
  EXPECT_EQ(r["steps"]["count"], 16) << r["steps"]["per_step"].dump();
  // No step may contain a test pass (>= 400 ms); a training step is ~10 ms (tens of ms on a loaded machine).
  for (const auto& s : r["steps"]["per_step"]) EXPECT_LT(num(s["duration_ms"]), 300) << s.dump();
  EXPECT_EQ(r["facts"]["training"]["gradient_accumulation_steps"], 1);
  expect_phase_split(r, true, true);
}

// dcgan style: the discriminator's and the generator's optimizer step on each batch, and a slow image dump after
// iterations 5 and 15: 20 steps (not 40), the two dump steps left out as outliers, no accumulation claimed.
TEST(RealPrograms, GanTwoOptimizersPerBatchAndRareSlowSteps) {
  REQUIRE_TORCH();
  const ProgramRun run = run_program("rp_dcgan", "dcgan_like.py", {"--iters", "20", "--save-every", "10", "--save-s", "0.4"});
  ASSERT_EQ(run.rc, 0) << run.log;
  const json& r = run.report;
  EXPECT_EQ(r["source"]["step_detection"], "optimizer_annotation");
  EXPECT_EQ(r["steps"]["count"], 20) << r["steps"]["per_step"].dump();
  // The two dump steps must be left out. On a loaded machine a training step can stall too (CI once saw a 30 ms
  // step among 9 ms ones): such a step may be left out as well, but only when it really is a spike by the
  // documented rule (>= kSpikeRatio x the median); a normal step may not be.
  const json& ss = r["steps"]["steady_state"];
  std::set<int> outliers;
  const double median = num(ss["median_all_ms"]);
  for (const auto& x : ss["excluded"]) {
    if (x["reason"] != "outlier") continue;
    const int i = x["index"].get<int>();
    outliers.insert(i);
    if (i != 6 && i != 16) {
      EXPECT_GE(num(x["duration_ms"]), profile_train::analysis::kSpikeRatio * median) << "a normal step left out\n" << ss.dump();
    }
  }
  EXPECT_TRUE(outliers.count(6) && outliers.count(16)) << "an image-dump step kept\n" << ss.dump();
  EXPECT_LE(outliers.size(), 4u) << ss.dump();
  EXPECT_LT(num(r["steps"]["mean_ms"]), 200) << "the mean includes the image dumps";
  EXPECT_FALSE(r["facts"].contains("training")) << r["facts"].dump();
  expect_phase_split(r, true, true);
}

// A 1 s compile-like first step among ~10 ms steps: reported as warm-up and left out of the steady-state figures,
// which the terminal summary and report.html say.
TEST(RealPrograms, CompileLikeFirstStepIsWarmUp) {
  REQUIRE_TORCH();
  const ProgramRun run = run_program("rp_compile", "compile_like.py", {"--steps", "10", "--compile-s", "1.0"});
  ASSERT_EQ(run.rc, 0) << run.log;
  const json& r = run.report;
  EXPECT_EQ(r["steps"]["count"], 10);
  const json& ss = r["steps"]["steady_state"];
  ASSERT_GE(ss["excluded"].size(), 1u) << ss.dump();
  EXPECT_EQ(ss["excluded"][0]["index"], 0);
  EXPECT_EQ(ss["excluded"][0]["reason"], "warm-up");
  EXPECT_GT(num(ss["excluded"][0]["duration_ms"]), 1000);
  EXPECT_LT(num(r["steps"]["mean_ms"]), 200) << "the mean includes the compile step";
  EXPECT_GT(num(ss["mean_all_ms"]), 100);
  EXPECT_NE(run.log.find("step 0 warm-up"), std::string::npos) << run.log;
  const std::string html = slurp(run.out / "report.html");
  EXPECT_NE(html.find("warm-up"), std::string::npos);
  expect_phase_split(r, true, false);
}
