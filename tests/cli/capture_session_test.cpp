// CaptureSession (include/profile_train/capture/capture_session.h): the injection environment, a real launch of /bin/sh, and the one
// function that merges the typed result into a report.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "profile_train/capture/capture_session.h"
#include "profile_train/format/protocol.h"
#include "profile_train/model/report_json.h"

namespace model = profile_train::model;
namespace fs = std::filesystem;
namespace protocol = profile_train::agent::protocol;
using profile_train::capture::CaptureOptions;
using profile_train::capture::CaptureResult;
using profile_train::capture::CaptureSession;

namespace {

std::string value_of(const std::vector<std::string>& env, const std::string& key) {
  std::string found = "<unset>";
  int count = 0;
  for (const auto& kv : env)
    if (kv.rfind(key + "=", 0) == 0) {
      found = kv.substr(key.size() + 1);
      ++count;
    }
  return count > 1 ? "<set " + std::to_string(count) + " times>" : found;
}

CaptureOptions options(const fs::path& dir) {
  CaptureOptions o;
  o.capture_dir = dir / "capture";
  o.agent = "/opt/pt/libprofile_train_agent.so";
  o.shim_dir = "/opt/pt/profile_train_python";
  o.warmup_steps = 2;
  o.steps = 5;
  return o;
}

TEST(CaptureSession, EnvironmentInjectsTheAgentAndReplacesAnotherToolsInjection) {
  const std::vector<std::string> inherited = {"HOME=/home/u", "CUDA_INJECTION64_PATH=/other/tool.so",
                                              "PYTHONPATH=/user/lib", std::string(protocol::kEnvSteps) + "=99"};
  CaptureOptions o = options("/tmp/x");
  o.stop_after_steps = true;
  const auto env = CaptureSession(o).environment(inherited);
  EXPECT_EQ(value_of(env, "HOME"), "/home/u");
  EXPECT_EQ(value_of(env, "CUDA_INJECTION64_PATH"), o.agent.string());
  EXPECT_EQ(value_of(env, "NVTX_INJECTION64_PATH"), o.agent.string());
  EXPECT_EQ(value_of(env, protocol::kEnvOut), o.capture_dir.string());
  EXPECT_EQ(value_of(env, protocol::kEnvWarmupSteps), "2");
  EXPECT_EQ(value_of(env, protocol::kEnvSteps), "5");
  EXPECT_EQ(value_of(env, protocol::kEnvStopAfterSteps), "1");
  EXPECT_EQ(value_of(env, "PYTHONPATH"), "/opt/pt/profile_train_python:/user/lib");

  o.no_cupti = true;
  o.stop_after_steps = false;
  o.shim_dir.clear();
  const auto kept = CaptureSession(o).environment(inherited);
  EXPECT_EQ(value_of(kept, "CUDA_INJECTION64_PATH"), "/other/tool.so") << "--no-cupti leaves CUDA injection alone";
  EXPECT_EQ(value_of(kept, protocol::kEnvStopAfterSteps), "<unset>");
  EXPECT_EQ(value_of(kept, "PYTHONPATH"), "/user/lib");
}

class CaptureSessionRun : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pt_capture_session_" + std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "capture");
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(CaptureSessionRun, RunsTheCommandWithTheEnvironmentAndClearsAPreviousRunsFiles) {
  const fs::path stale = dir_ / "capture" / "pt-1-2.ptrace";
  const fs::path stale_facts = dir_ / "capture" / "facts-1.json";
  const fs::path other = dir_ / "capture" / "notes.txt";
  for (const auto& p : {stale, stale_facts, other}) std::ofstream(p) << "old";
  CaptureOptions o = options(dir_);
  o.command = {"/bin/sh", "-c", "echo \"$PROFILE_TRAIN_OUT\" > \"$PROFILE_TRAIN_OUT/seen\"; exit 3"};
  auto r = CaptureSession(o).run();
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_TRUE(r->exit_code.has_value());
  EXPECT_EQ(*r->exit_code, 3);
  EXPECT_EQ(r->signal, 0);
  EXPECT_TRUE(r->failed());
  EXPECT_FALSE(r->interrupted());
  EXPECT_TRUE(r->ranks.empty()) << "no agent attached: no capture file";
  EXPECT_EQ(r->command, o.command);
  std::ifstream seen(dir_ / "capture" / "seen");
  std::string line;
  std::getline(seen, line);
  EXPECT_EQ(line, o.capture_dir.string());
  EXPECT_FALSE(fs::exists(stale));
  EXPECT_FALSE(fs::exists(stale_facts));
  EXPECT_TRUE(fs::exists(other)) << "only the agent's and the shim's files are removed";
}

TEST_F(CaptureSessionRun, ACrashIsTheSignalNotAnExitCode) {
  CaptureOptions o = options(dir_);
  o.command = {"/bin/sh", "-c", "kill -SEGV $$"};
  auto r = CaptureSession(o).run();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->exit_code.has_value());
  EXPECT_EQ(r->signal, SIGSEGV);
  EXPECT_TRUE(r->crashed());
  EXPECT_EQ(r->outcome(), "the command crashed (SIGSEGV)");
}

TEST_F(CaptureSessionRun, CommandNotFoundIsAStatus) {
  CaptureOptions o = options(dir_);
  o.command = {"/nonexistent/train"};
  auto r = CaptureSession(o).run();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), profile_train::StatusCode::kNotFound);
}

// The merge fills the typed report; report.json gets the keys `run` always wrote (source.command, ...).
nlohmann::json merged(const CaptureResult& r, size_t files, model::Report report = {}) {
  profile_train::capture::merge_capture_result(r, files, report);
  return model::to_json(report);
}

TEST(MergeCaptureResult, ACrashFillsSourceAndNamesTheCommandInANote) {
  CaptureResult r;
  r.command = {"python", "train.py", "--lr", "0.1 x"};
  r.signal = SIGSEGV;
  r.leftover_processes = 2;
  model::Report before;
  before.source.format = "native";
  before.data_quality.notes = {"earlier note"};
  const nlohmann::json report = merged(r, 3, before);
  const auto& src = report["source"];
  EXPECT_EQ(src["format"], "native") << "other source fields stay";
  EXPECT_EQ(src["command"], nlohmann::json(r.command));
  EXPECT_TRUE(src["exit_code"].is_null());
  EXPECT_EQ(src["signal"], "SIGSEGV");
  EXPECT_EQ(src["interrupted"], false);
  EXPECT_EQ(src["capture_files"], 3);
  EXPECT_EQ(src["leftover_processes"], 2);
  ASSERT_TRUE(src.contains("crash"));
  EXPECT_NE(src["crash"].get<std::string>().find("SIGSEGV"), std::string::npos);
  const auto& notes = report["data_quality"]["notes"];
  ASSERT_EQ(notes.size(), 2u);
  EXPECT_EQ(notes[0], "earlier note");
  const std::string note = notes[1];
  EXPECT_NE(note.find("the command crashed (SIGSEGV)"), std::string::npos) << note;
  EXPECT_NE(note.find("python train.py --lr '0.1 x'"), std::string::npos) << note;
}

TEST(MergeCaptureResult, ANormalEndAddsNoNote) {
  CaptureResult r;
  r.command = {"python", "train.py"};
  r.exit_code = 0;
  const nlohmann::json report = merged(r, 1);
  EXPECT_EQ(report["source"]["exit_code"], 0);
  EXPECT_TRUE(report["source"]["signal"].is_null());
  EXPECT_FALSE(report["source"].contains("crash"));
  EXPECT_TRUE(report["data_quality"]["notes"].empty());
}

TEST(MergeCaptureResult, AStopNamesTheSignalThatStoppedUs) {
  CaptureResult r;
  r.command = {"python", "train.py"};
  r.stop_signal = SIGINT;
  r.exit_code = 1;
  const nlohmann::json report = merged(r, 1);
  EXPECT_EQ(report["source"]["interrupted"], true);
  const std::string note = report["data_quality"]["notes"][0];
  EXPECT_NE(note.find("stopped by SIGINT"), std::string::npos) << note;
  EXPECT_NE(note.find("exited with code 1"), std::string::npos) << note;
}

// The machine's load against the command's CPU time (issue 29, item 22): a run on a machine that other processes
// kept oversubscribed says so in data quality; a quiet one, or a command that itself keeps every CPU busy, not.
TEST(MergeCaptureResult, AnOversubscribedMachineIsNamedInDataQuality) {
  using model::HostLoad;
  HostLoad busy;
  busy.cpus = 2;
  busy.load_1m_start = 11.8;
  busy.load_1m_end = 12.4;
  busy.wall_s = 8.8;
  busy.cpu_time_s = 9.7;
  CaptureResult r;
  r.command = {"python", "train.py"};
  r.exit_code = 0;
  r.host_load = profile_train::capture::judge_host_load(busy);
  const nlohmann::json report = merged(r, 1);
  const auto& load = report["source"]["host_load"];
  EXPECT_EQ(load["oversubscribed"], true) << load.dump();
  EXPECT_NEAR(load["cpus_used"].get<double>(), 9.7 / 8.8, 1e-9);
  ASSERT_EQ(report["data_quality"]["notes"].size(), 1u);
  const std::string note = report["data_quality"]["notes"][0];
  EXPECT_NE(note.find("busy with other processes"), std::string::npos) << note;
  EXPECT_NE(note.find("11.8 at the start and 12.4 at the end on 2 CPUs"), std::string::npos) << note;

  HostLoad quiet = busy;
  quiet.load_1m_start = 1.1;
  quiet.load_1m_end = 1.3;
  EXPECT_FALSE(profile_train::capture::judge_host_load(quiet).oversubscribed);
  HostLoad own = busy;  // 16 CPUs, the command itself keeps them busy: load 16.5 is its own
  own.cpus = 16;
  own.load_1m_start = 16.2;
  own.load_1m_end = 16.5;
  own.cpu_time_s = 15.6 * own.wall_s;
  EXPECT_FALSE(profile_train::capture::judge_host_load(own).oversubscribed);
  r.host_load = profile_train::capture::judge_host_load(quiet);
  EXPECT_TRUE(merged(r, 1)["data_quality"]["notes"].empty());
}

// What `analyze` writes has no run keys: they come only with a merged capture result.
TEST(MergeCaptureResult, WithoutItTheSourceHasNoRunKeys) {
  const nlohmann::json src = model::to_json(model::Report{})["source"];
  for (const char* key : {"command", "exit_code", "signal", "interrupted", "capture_files", "leftover_processes", "crash"})
    EXPECT_FALSE(src.contains(key)) << key;
}

}  // namespace
