// End-to-end: `profile-train tune` on an unmodified PyTorch script (num_workers=0, slow Dataset) finds
// num_workers > 0 through the Python shim's overrides. Needs the built profile-train binary, a Python with
// torch, and a working `profile-train run` (skipped with the reason otherwise).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "profile_train/tuner/process_runner.h"

namespace fs = std::filesystem;
namespace pt = profile_train::tuner;

TEST(TuneEndToEnd, FindsWorkersForAnUnmodifiedScriptThroughTheShim) {
  const fs::path exe = fs::path(PT_BINARY_DIR) / "profile-train";
  const fs::path python = PT_PYTHON;
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data" / "slow_dataset_train.py";
  if (!fs::exists(exe)) GTEST_SKIP() << "profile-train binary not built at " << exe;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (PT_PYTHON)";
  const fs::path out = fs::temp_directory_path() / ("pt_tune_e2e_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  // Is `run` implemented? (A stub exits non-zero and says so.)
  const auto probe = pt::run_child({exe.string(), "run", "--out", (out / "probe").string(), "--", "/bin/true"}, {},
                                   out / "probe.log", 60, nullptr, 1);
  const std::string probe_log = pt::read_tail(out / "probe.log", 4096);
  if (!probe.started || probe_log.find("not implemented") != std::string::npos) {
    GTEST_SKIP() << "`profile-train run` is not available yet: " << probe_log;
  }
  const auto r = pt::run_child({exe.string(), "tune", "--knob", "num_workers=0,2", "--repeats", "1",
                                "--baseline-repeats", "2", "--trial-timeout", "120", "--out", (out / "tune").string(),
                                "--", python.string(), script.string()},
                               {}, out / "tune.log", 280, nullptr, 2);
  const std::string log = pt::read_tail(out / "tune.log", 8192);
  ASSERT_TRUE(r.started);
  ASSERT_EQ(r.exit_code, 0) << log;
  std::ifstream in(out / "tune" / "tune.json");
  ASSERT_TRUE(in) << log;
  const nlohmann::json doc = nlohmann::json::parse(in);
  ASSERT_TRUE(doc["best"].is_object()) << doc.dump(2);
  const std::string base_status = doc["trials"][0]["status"];
  if (base_status != "ok") {
    GTEST_SKIP() << "the baseline trial did not measure (is the Python shim installed?): " << doc["trials"][0].dump();
  }
  EXPECT_EQ(doc["target"]["applied_through"], "shim overrides (PROFILE_TRAIN_OVERRIDES)");
  EXPECT_EQ(doc["best"]["config"]["num_workers"], "2") << doc.dump(2);
  EXPECT_GT(doc["speedup"]["value"].get<double>(), 1.2) << doc.dump(2);
  // The script itself was never edited: the change to make permanent is spelled out instead.
  ASSERT_TRUE(doc["change"]["python"].is_array() && !doc["change"]["python"].empty()) << doc.dump(2);
  EXPECT_NE(doc["change"]["python"][0]["code"].get<std::string>().find("num_workers=2"), std::string::npos);
  EXPECT_TRUE(fs::exists(out / "tune" / "tune.html"));
  fs::remove_all(out);
}
