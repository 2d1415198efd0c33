// End-to-end: the tuner's knob overrides applied by the Python shim to unmodified programs written in the style of
// common training scripts (tests/agent/data/knob_*.py: a CNN with a DataLoader, a nanoGPT-like transformer LM
// without one, a Lightning-like Trainer loop), through `profile-train run` with PROFILE_TRAIN_OVERRIDES or
// `--apply FILE`. Each override is checked where torch reports it back (report.json facts: cpu.torch_threads, the
// model's memory format, the optimizer's foreach / fused, the compiled wrapper); an override that cannot act on the
// program is reported in facts.overrides_failed with the reason while the program itself runs to its end.
// Needs PT_PYTHON with torch (skips otherwise); CPU only. The programs run 12 short steps (a few seconds each);
// the compile case compiles a 3-layer MLP (30-80 s on the 2-core machine under load).
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
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
  const json& facts() const { return report["facts"]; }
};

// `profile-train run --out DIR [run_opts] -- python tests/agent/data/SCRIPT` with `env` added, waited for (at
// most 240 s).
ProgramRun run_program(const std::string& name, const std::string& script, const std::vector<std::string>& env,
                       const std::vector<std::string>& run_opts = {}) {
  const fs::path out = fresh_dir(name);
  std::vector<std::string> argv = {kBinary.string(), "run", "-q", "--out", (out / "run").string()};
  argv.insert(argv.end(), run_opts.begin(), run_opts.end());
  argv.insert(argv.end(), {"--", kPython.string(), (kData / script).string()});
  const fs::path log = out / "log.txt";
  const pid_t pid = fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    for (const auto& kv : env) putenv(strdup(kv.c_str()));
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    execv(cargv[0], cargv.data());
    _exit(127);
  }
  ProgramRun r;
  r.out = out;
  int status = 0;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(240);
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
  r.report = json::parse(slurp(out / "run" / "report.json"), nullptr, false);
  if (r.report.is_discarded()) r.report = json();
  return r;
}

#define REQUIRE_TORCH()                                                                 \
  do {                                                                                  \
    if (!have_torch()) GTEST_SKIP() << "no Python with torch at " << kPython.string(); \
  } while (0)

}  // namespace

// The CNN: threads, channels_last (model and its 4-D inputs), foreach, tf32 and cudnn_benchmark, all at once.
TEST(KnobOverrides, CnnWithADataLoaderGetsEveryOverride) {
  REQUIRE_TORCH();
  const ProgramRun r = run_program(
      "knob_cnn", "knob_cnn.py",
      {R"(PROFILE_TRAIN_OVERRIDES={"torch.threads": 1, "model.channels_last": true, "optimizer.impl": "foreach",
          "backends.tf32": true, "backends.cudnn_benchmark": true})"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& f = r.facts();
  ASSERT_TRUE(f.is_object()) << r.log;
  EXPECT_FALSE(f.contains("overrides_failed")) << f.dump(1);
  EXPECT_FALSE(f.contains("shim_errors")) << f.dump(1);
  EXPECT_EQ(f["cpu"]["torch_threads"], 1) << f["cpu"].dump();
  EXPECT_EQ(f["overrides_applied"]["torch.threads"]["torch_threads"], 1);
  EXPECT_EQ(f["model"]["memory_format"], "channels_last") << f["model"].dump();
  EXPECT_EQ(f["model"]["channels_last"], true);
  EXPECT_EQ(f["optimizer"]["class"], "SGD");
  EXPECT_EQ(f["optimizer"]["foreach"], true) << f["optimizer"].dump();
  EXPECT_EQ(f["tf32"]["matmul"], true);
  EXPECT_EQ(f["tf32"]["cudnn"], true);
  EXPECT_EQ(f["cudnn"]["benchmark"], true);
  EXPECT_EQ(f["overrides_applied"].size(), 5u) << f["overrides_applied"].dump();
  EXPECT_EQ(r.report["steps"]["count"], 12) << r.report["steps"].dump().substr(0, 300);
  EXPECT_NE(r.log.find("final loss"), std::string::npos) << r.log;
}

// nanoGPT-like: fused AdamW over two parameter groups applies; channels_last cannot (no convolution): reported,
// and the program still trains its 12 steps and exits 0.
TEST(KnobOverrides, TransformerLmFusedAppliesChannelsLastIsReportedNotCrashed) {
  REQUIRE_TORCH();
  const ProgramRun r = run_program(
      "knob_lm", "knob_lm.py",
      {R"(PROFILE_TRAIN_OVERRIDES={"optimizer.impl": "fused", "model.channels_last": true, "torch.threads": 2})"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& f = r.facts();
  ASSERT_TRUE(f.is_object()) << r.log;
  EXPECT_EQ(f["optimizer"]["class"], "AdamW");
  EXPECT_EQ(f["optimizer"]["fused"], true) << f["optimizer"].dump();
  EXPECT_EQ(f["optimizer"]["param_groups"], 2);
  EXPECT_EQ(f["cpu"]["torch_threads"], 2);
  ASSERT_TRUE(f["overrides_failed"].is_object()) << f.dump(1);
  const std::string why = f["overrides_failed"].value("model.channels_last", "");
  EXPECT_NE(why.find("no 2-D convolution"), std::string::npos) << why;
  EXPECT_FALSE(f["overrides_applied"].contains("model.channels_last"));
  EXPECT_EQ(f["model"]["has_conv"], false);
  EXPECT_FALSE(f["model"].contains("memory_format"));
  EXPECT_EQ(r.report["steps"]["count"], 12);
  EXPECT_NE(r.log.find("final loss"), std::string::npos) << r.log;
}

// Lightning-like: torch.compile of the LightningModule (its compiling step excluded as warm-up).
TEST(KnobOverrides, LightningLikeLoopCompiled) {
  REQUIRE_TORCH();
  const ProgramRun r = run_program("knob_lit", "knob_lightning_like.py",
                                   {R"(PROFILE_TRAIN_OVERRIDES={"model.compile": "default"})"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& f = r.facts();
  ASSERT_TRUE(f.is_object()) << r.log;
  EXPECT_FALSE(f.contains("overrides_failed")) << f.dump(1);
  EXPECT_EQ(f["model"]["class"], "LitRegressor");
  EXPECT_EQ(f["model"]["compiled"], "OptimizedModule") << f["model"].dump();
  EXPECT_EQ(f["overrides_applied"]["model.compile"]["mode"], "default");
  EXPECT_EQ(r.report["steps"]["count"], 12);
  // The first step compiles: it is the one left out of the steady state as warm-up.
  EXPECT_EQ(r.report["steps"]["per_step"][0]["excluded"], "warm-up") << r.report["steps"].dump().substr(0, 600);
}

// bf16 autocast through the amp override (which also serves CPUs with native bf16) on a program that computes its
// loss after the model returns: mse_loss of the bf16 prediction against the fp32 target failed in backward ("Found
// dtype Float but expected BFloat16") until the shim cast the model's half-precision outputs back to fp32.
TEST(KnobOverrides, Bf16AutocastOnALossComputedOutsideTheModel) {
  REQUIRE_TORCH();
  const ProgramRun r = run_program("knob_lit_amp", "knob_lightning_like.py",
                                   {R"(PROFILE_TRAIN_OVERRIDES={"amp.dtype": "bf16"})"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& f = r.facts();
  ASSERT_TRUE(f.is_object()) << r.log;
  EXPECT_EQ(f["amp"]["dtype"], "bfloat16") << f["amp"].dump();
  EXPECT_EQ(f["amp"]["autocast_enabled"], true);
  EXPECT_EQ(r.report["steps"]["count"], 12);
}

// An optimizer override on a program without torch.optim (manual SGD, pytorch/examples word_language_model
// style) is reported as not applied; the program is unaffected.
TEST(KnobOverrides, OptimizerOverrideWithoutAnOptimizerIsReported) {
  REQUIRE_TORCH();
  const ProgramRun r = run_program("knob_manual", "manual_sgd_lm.py",
                                   {R"(PROFILE_TRAIN_OVERRIDES={"optimizer.impl": "foreach"})"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& f = r.facts();
  ASSERT_TRUE(f.is_object()) << r.log;
  EXPECT_EQ(f["overrides_failed"].value("optimizer.impl", ""), "no torch.optim optimizer stepped") << f.dump(1);
}

// `run --apply FILE` (tune's apply.json) and PROFILE_TRAIN_APPLY=FILE for launchers that take no wrapper; a bad
// file is one line and exit 2, nothing launched.
TEST(KnobOverrides, RunApplyAndTheEnvironmentVariable) {
  REQUIRE_TORCH();
  const fs::path dir = fresh_dir("knob_apply_file");
  const fs::path file = dir / "apply.json";
  std::ofstream(file) << R"({"overrides": {"torch.threads": 1, "optimizer.impl": "foreach"},
                              "config": {"threads": "1", "optimizer_impl": "foreach"}})";
  ProgramRun r = run_program("knob_apply", "knob_lightning_like.py", {}, {"--apply", file.string()});
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_EQ(r.facts()["cpu"]["torch_threads"], 1) << r.facts().dump(1);
  EXPECT_EQ(r.facts()["optimizer"]["foreach"], true);
  EXPECT_EQ(r.facts()["overrides"]["optimizer.impl"], "foreach");
  EXPECT_EQ(r.facts()["overrides_applied"].size(), 2u) << r.facts().dump(1);
  // The environment variable, and --apply wins over an override the environment already carries.
  r = run_program("knob_apply_env", "knob_lightning_like.py", {"PROFILE_TRAIN_APPLY=" + file.string()});
  ASSERT_EQ(r.rc, 0) << r.log;
  EXPECT_EQ(r.facts()["cpu"]["torch_threads"], 1);
  EXPECT_EQ(r.facts()["optimizer"]["foreach"], true);
  // Bad files: unknown key, bad value, not JSON.
  for (const std::string& text : {std::string(R"({"overrides": {"torch.warp": 1}})"),
                                  std::string(R"({"model.compile": "turbo"})"), std::string("{nope")}) {
    std::ofstream(file) << text;
    r = run_program("knob_apply_bad", "knob_lightning_like.py", {}, {"--apply", file.string()});
    EXPECT_EQ(r.rc, 2) << text << "\n" << r.log;
    EXPECT_NE(r.log.find("--apply"), std::string::npos) << r.log;
    EXPECT_EQ(std::count(r.log.begin(), r.log.end(), '\n'), 1) << r.log;
    EXPECT_EQ(r.log.find("final loss"), std::string::npos) << "launched: " << r.log;
  }
}

// A compile that fails (no working C++ compiler for inductor; caches off so nothing compiled earlier is reused) is
// the override's failure, not the program's: reported with torch's reason, the model runs uncompiled to the end.
TEST(KnobOverrides, CompileThatFailsLeavesTheProgramRunning) {
  REQUIRE_TORCH();
  const ProgramRun r = run_program("knob_nocxx", "knob_lightning_like.py",
                                   {R"(PROFILE_TRAIN_OVERRIDES={"model.compile": "default"})", "CXX=/bin/false",
                                    "TORCHINDUCTOR_FORCE_DISABLE_CACHES=1"});
  ASSERT_EQ(r.rc, 0) << r.log;
  const json& f = r.facts();
  ASSERT_TRUE(f.is_object()) << r.log;
  const std::string why = f["overrides_failed"].value("model.compile", "");
  EXPECT_EQ(why.rfind("torch.compile failed: ", 0), 0u) << f.dump(1);
  EXPECT_TRUE(f["model"]["compiled"].is_null()) << f["model"].dump();
  EXPECT_EQ(r.report["steps"]["count"], 12);
  EXPECT_NE(r.log.find("final loss"), std::string::npos) << r.log;
}
