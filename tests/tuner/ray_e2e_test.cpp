// End to end on a real local Ray head (the `ray` wheel of PT_PYTHON's venv, installed by .ci/setup): started
// once for this binary on loopback with free ports and a private temp folder (tests/tuner/data/ray_head.sh),
// stopped at the end even when a test fails (and by a watcher if this process dies). Skipped with the reason
// when ray or the built-in workload is missing. The whole binary is one ctest (~1-2 min: one head start,
// a local and two Ray sweeps, two fault runs).
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "profile_train/platform/process.h"
#include "profile_train/tuner/process_runner.h"
#include "profile_train/tuner/ray_client.h"
#include "profile_train/tuner/ray_runner.h"

namespace model = profile_train::model;
namespace fs = std::filesystem;
namespace pt = profile_train::tuner;

namespace {

std::string g_address;      // the head's dashboard ("" when it could not be started)
std::string g_skip_reason;
fs::path g_dir;

const fs::path kHeadScript = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data" / "ray_head.sh";

class RayHead : public ::testing::Environment {
 public:
  void SetUp() override {
    const fs::path ray = fs::path(PT_PYTHON).parent_path() / "ray";
    if (!fs::exists(ray)) {
      g_skip_reason = "ray is not installed next to " + std::string(PT_PYTHON) + " (bash .ci/setup installs ray[default])";
      return;
    }
    if (!fs::exists(fs::path(PT_BINARY_DIR) / "profile-train-workload")) {
      g_skip_reason = "the built-in workload (LibTorch) is not built";
      return;
    }
    g_dir = "/tmp/ptray-" + std::to_string(::getpid());  // short: Ray's unix socket paths must stay < 108 bytes
    fs::remove_all(g_dir);
    fs::create_directories(g_dir);
    const auto r = pt::run_child({"/bin/bash", kHeadScript.string(), "start", g_dir.string(), ray.string(),
                                  std::to_string(::getpid())},
                                 {}, g_dir / "head.log", 120, nullptr, 2);
    const std::string log = pt::read_tail(g_dir / "head.log", 4096);
    if (!r.started || r.exit_code != 0) {
      g_skip_reason = "the local Ray head did not start: " + log;
      return;
    }
    std::ifstream in(g_dir / "address");
    std::getline(in, g_address);
  }
  void TearDown() override {
    if (g_dir.empty()) return;
    pt::run_child({"/bin/bash", kHeadScript.string(), "stop", g_dir.string()}, {}, g_dir.string() + ".stop.log", 60,
                  nullptr, 2);
    std::error_code ec;
    fs::remove_all(g_dir, ec);
    fs::remove(g_dir.string() + ".stop.log", ec);
  }
};
const auto* const kEnv = ::testing::AddGlobalTestEnvironment(new RayHead);

#define REQUIRE_HEAD() \
  if (g_address.empty()) GTEST_SKIP() << g_skip_reason

fs::path out_dir(const std::string& name) {
  const fs::path d = g_dir / name;
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// The input-bound scenario (per-sample preprocessing on the main thread) with a per-step host cost that a
// larger batch amortizes: batch_size=32 beats 4 by ~x2 whatever the cores. (A knob whose gain is CPU
// parallelism, num_workers, cannot be judged by two trials sharing this machine's two cores: on a cluster
// each trial has its own node or GPU, here they compete.)
const std::vector<std::string> kWorkload = {"--workload", "cnn",  "--slow-preprocess-us", "1000", "--host-work-us",
                                            "40000",      "--steps", "6",                 "--warmup", "1",
                                            "--device",   "cpu",  "--threads",            "1",      "--seed", "0"};

struct TuneRun {
  int exit_code = -1;
  std::string log;
  nlohmann::json doc;
};

TuneRun tune(const fs::path& out, const std::string& strategy, std::vector<std::string> executor) {
  std::vector<std::string> argv = {(fs::path(PT_BINARY_DIR) / "profile-train").string(), "tune", "--strategy", strategy,
                                   "--knob", "batch_size=4,32", "--repeats", "2", "--baseline-repeats", "3",
                                   "--trial-timeout", "120", "--out", (out / "tune").string()};
  argv.insert(argv.end(), executor.begin(), executor.end());
  argv.insert(argv.end(), kWorkload.begin(), kWorkload.end());
  TuneRun r;
  const auto c = pt::run_child(argv, {}, out / "tune.log", 400, nullptr, 2);
  r.exit_code = c.exit_code;
  r.log = pt::read_tail(out / "tune.log", 16384);
  std::ifstream in(out / "tune" / "tune.json");
  if (in) r.doc = nlohmann::json::parse(in, nullptr, false);
  return r;
}

std::string best_of(const nlohmann::json& doc) {
  if (!doc.is_object() || !doc["best"].is_object()) return "(none)";
  return doc["best"]["config"].dump();
}

// Jobs of this test binary's sweeps that Ray still lists as PENDING / RUNNING.
std::vector<std::string> live_jobs(pt::RayClient& client, const std::string& prefix) {
  std::vector<std::string> out;
  auto jobs = client.list();
  EXPECT_TRUE(jobs.ok()) << jobs.status().message();
  if (!jobs.ok()) return out;
  for (const auto& j : *jobs) {
    if (j.submission_id.rfind(prefix, 0) == 0 && !j.terminal()) out.push_back(j.submission_id + " " + j.state);
  }
  return out;
}

}  // namespace

TEST(RayEndToEnd, GuidedAndGridOnRayFindTheLocalBestAndCollectEveryReport) {
  REQUIRE_HEAD();
  TuneRun local = tune(out_dir("local"), "guided", {});
  ASSERT_EQ(local.exit_code, 0) << local.log;
  if (best_of(local.doc).find("\"batch_size\":\"32\"") == std::string::npos &&
      local.log.find("left out as unreliable") != std::string::npos) {
    // The search itself said the machine's load changed under its pairs (seen once on the 2-core VM with the
    // suite's other tests just finished): one more local search, as a user would run it again.
    local = tune(out_dir("local-again"), "guided", {});
    ASSERT_EQ(local.exit_code, 0) << local.log;
  }
  const std::string expected = best_of(local.doc);
  ASSERT_NE(expected.find("\"batch_size\":\"32\""), std::string::npos) << local.log;
  for (const std::string strategy : {"guided", "grid"}) {
    const fs::path out = out_dir("ray-" + strategy);
    const TuneRun ray = tune(out, strategy, {"--executor", "ray", "--ray-address", g_address, "--parallel", "2"});
    ASSERT_EQ(ray.exit_code, 0) << strategy << "\n" << ray.log;
    EXPECT_EQ(best_of(ray.doc), expected) << strategy << "\n" << ray.log;
    const nlohmann::json& e = ray.doc["execution"];
    EXPECT_EQ(e["executor"], "ray");
    EXPECT_EQ(e["parallel"], 2);
    EXPECT_EQ(e["trial_gpus"], 0.0) << "--device cpu: no GPU per trial by default";
    EXPECT_EQ(e["nodes"].size(), 1u);
    int measurements = 0;
    for (const auto& t : ray.doc["trials"]) {
      ASSERT_EQ(t["status"], "ok") << t.dump(2);
      ASSERT_EQ(t["placements"].size(), t["measurements"].get<size_t>()) << t.dump(2);
      for (const auto& p : t["placements"]) {
        EXPECT_EQ(p["final_state"], "SUCCEEDED");
        EXPECT_FALSE(p["node_id"].get<std::string>().empty());
        EXPECT_TRUE(fs::exists(fs::path(p["dir"].get<std::string>()) / "report.json")) << p.dump();
        nlohmann::json report = nlohmann::json::parse(std::ifstream(fs::path(p["dir"].get<std::string>()) / "report.json"),
                                                      nullptr, false);
        EXPECT_TRUE(report.is_object() && report.contains("steps")) << p.dump();
        ++measurements;
      }
    }
    EXPECT_GE(measurements, 5) << strategy;
    EXPECT_NE(ray.log.find("parallelism:"), std::string::npos) << ray.log;
    std::ifstream html(out / "tune" / "tune.html");
    const std::string text((std::istreambuf_iterator<char>(html)), std::istreambuf_iterator<char>());
    EXPECT_NE(text.find("Where the trials ran"), std::string::npos);
  }
}

TEST(RayEndToEnd, AJobStoppedFromOutsideIsACrashedTrialAndTheOtherOneFinishes) {
  REQUIRE_HEAD();
  const fs::path out = out_dir("outside");
  pt::RayRunnerOptions o;
  o.process.self_exe = fs::path(PT_BINARY_DIR) / "profile-train";
  o.process.out_dir = out;
  o.process.target.kind = pt::TuneTarget::Kind::kWorkload;
  o.process.target.model = "cnn";
  o.process.target.workload_binary = fs::path(PT_BINARY_DIR) / "profile-train-workload";
  o.process.target.args = {"--steps", "6", "--warmup", "1", "--device", "cpu", "--threads", "1"};
  o.parallel = 2;
  o.worker_tmp = out.string();
  o.session = "pt-e2e-outside-" + std::to_string(::getpid());
  auto runner = pt::RayTrialRunner::create(o, g_address);
  ASSERT_TRUE(runner.ok()) << runner.status().message();
  auto other = pt::RayClient::connect(g_address);
  ASSERT_TRUE(other.ok());
  // From outside (another client, as `ray job stop` would): stop the first trial's job once it runs.
  std::thread stopper([&] {
    const std::string victim = o.session + "-001-r1-1";
    for (int i = 0; i < 600; ++i) {
      auto info = (*other)->status(victim);
      if (info.ok() && info->state == "RUNNING") {
        (void)(*other)->stop(victim);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  std::vector<std::pair<model::Config, pt::RunContext>> items(2);
  for (int i = 0; i < 2; ++i) {
    items[i].first = {{"num_workers", "0"}};
    items[i].second.trial_index = i + 1;
    items[i].second.timeout_s = 120;
  }
  items[0].first["batch_size"] = "16";
  items[1].first["batch_size"] = "8";
  const auto done = (*runner)->run_batch(items);
  stopper.join();
  EXPECT_EQ(done[0].status, pt::RunStatus::kCrashed) << done[0].message;
  EXPECT_NE(done[0].message.find("was stopped outside tune"), std::string::npos) << done[0].message;
  EXPECT_EQ(done[1].status, pt::RunStatus::kOk) << done[1].message;
  EXPECT_TRUE(live_jobs(**other, o.session).empty());
}

TEST(RayEndToEnd, SigintToTuneStopsEverySubmittedJob) {
  REQUIRE_HEAD();
  const fs::path out = out_dir("sigint");
  profile_train::platform::SpawnOptions spawn;
  spawn.argv = {(fs::path(PT_BINARY_DIR) / "profile-train").string(), "tune", "--executor", "ray", "--ray-address",
                g_address, "--parallel", "2", "--knob", "num_workers=0,2", "--out", (out / "tune").string(),
                "--workload", "cnn", "--steps", "100000", "--device", "cpu", "--threads", "1"};
  for (char** e = environ; *e != nullptr; ++e) spawn.env.push_back(*e);
  const int log_fd = ::open((out / "tune.log").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  spawn.stdout_fd = log_fd;
  spawn.stderr_fd = log_fd;
  auto pid = profile_train::platform::spawn_process(spawn);
  ::close(log_fd);
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  auto client = pt::RayClient::connect(g_address);
  ASSERT_TRUE(client.ok());
  // Wait until two of its jobs run (the baseline's repeats), then Ctrl-C.
  const std::string prefix = "pt-tune-" + std::to_string(*pid) + "-";
  int running = 0;
  for (int i = 0; i < 1200 && running < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    running = 0;
    auto jobs = (*client)->list();
    if (!jobs.ok()) continue;
    for (const auto& j : *jobs) running += j.submission_id.rfind(prefix, 0) == 0 && j.state == "RUNNING";
  }
  EXPECT_EQ(running, 2) << pt::read_tail(out / "tune.log", 4096);
  ::kill(*pid, SIGINT);
  int status = 0;
  pid_t w = 0;
  for (int i = 0; i < 1200 && w == 0; ++i) {
    w = ::waitpid(*pid, &status, WNOHANG);
    if (w == 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  if (w == 0) {
    ::kill(*pid, SIGKILL);
    ::waitpid(*pid, &status, 0);
    FAIL() << "tune did not exit within 60 s of SIGINT";
  }
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 130) << pt::read_tail(out / "tune.log", 4096);
  EXPECT_TRUE(live_jobs(**client, prefix).empty()) << pt::read_tail(out / "tune.log", 4096);
  auto jobs = (*client)->list();
  ASSERT_TRUE(jobs.ok());
  int stopped = 0;
  for (const auto& j : *jobs) stopped += j.submission_id.rfind(prefix, 0) == 0 && j.state == "STOPPED";
  EXPECT_EQ(stopped, 2);
}
