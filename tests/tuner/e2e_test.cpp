// End-to-end: `profile-train tune` on an unmodified PyTorch script (num_workers=0, slow Dataset) finds
// num_workers > 0 through the Python shim's overrides, measured interleaved with the baseline and confirmed
// head to head, skipping pin_memory on this CPU-only machine and stopping at --max-trials without "partial
// results". Needs the built profile-train binary, a Python with torch, and a working `profile-train run`
// (skipped with the reason otherwise). It runs 9 Python processes (13 when the search needs two more pairs),
// 4-12 s each on the 2-core machine: 69-160 s measured under load. It is the one test of the whole loop
// through real processes; the statistics themselves are covered by statistics_test.cpp in milliseconds.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>

#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <iostream>
#include <iterator>
#include <map>

#include <nlohmann/json.hpp>

#include "profile_train/tuner/process_runner.h"
#include "profile_train/tuner/tune_report.h"
#include "profile_train/tuner/tuner.h"

namespace model = profile_train::model;
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
  const auto r = pt::run_child({exe.string(), "tune", "--knob", "num_workers=0,2", "--knob", "pin_memory=0,1",
                                "--repeats", "1", "--baseline-repeats", "3", "--confirm-repeats", "2",
                                "--max-trials", "2", "--trial-timeout", "120", "--out", (out / "tune").string(), "--",
                                python.string(), script.string()},
                               {"SLOW_TRAIN_STEPS=20"}, out / "tune.log", 450, nullptr, 2);
  const std::string log = pt::read_tail(out / "tune.log", 16384);
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
  EXPECT_EQ(doc["best"]["config"]["num_workers"], "2") << log << doc["log"].dump(2);
  // Confirmed head to head, with an interval above 1.
  ASSERT_TRUE(doc["speedup"]["low"].is_number()) << doc["confirmation"].dump(2) << log;
  EXPECT_TRUE(doc["speedup"]["claimed"].get<bool>()) << doc["confirmation"].dump(2) << log;
  EXPECT_GT(doc["speedup"]["low"].get<double>(), 1.0) << doc["confirmation"].dump(2);
  EXPECT_GT(doc["speedup"]["value"].get<double>(), 1.2) << doc["confirmation"].dump(2);
  EXPECT_EQ(doc["confirmation"]["pairs"], 2);
  // ABAB: after the baseline's 3 runs alone, every run of trial 2 right after a run of the baseline; the
  // head-to-head check's pairs last.
  const auto& runs = doc["runs"];
  ASSERT_GE(runs.size(), 3u + 2 + 4) << runs.dump(1);
  ASSERT_EQ((runs.size() - 3) % 2, 0u) << runs.dump(1);
  for (size_t i = 0; i < runs.size(); ++i) {
    const int expected_trial = i < 3 ? 1 : (i % 2 == 1 ? 1 : 2);
    EXPECT_EQ(runs[i]["trial"], expected_trial) << i << " " << runs.dump(1);
    EXPECT_EQ(runs[i]["role"], i < 3 ? "alone" : (i % 2 == 1 ? "reference" : "candidate")) << i;
    EXPECT_EQ(runs[i]["metric"], "trimmed mean of post-warm-up steps");
  }
  EXPECT_EQ(runs[runs.size() - 1]["phase"], "confirm");
  EXPECT_EQ(runs[runs.size() - 4]["phase"], "confirm");
  EXPECT_EQ(runs[3]["phase"], "search");
  // No GPU here: pin_memory=1 is not tried, and both outputs say why.
  ASSERT_EQ(doc["skipped_knobs"].size(), 1u) << doc["skipped_knobs"].dump();
  EXPECT_EQ(doc["skipped_knobs"][0]["knob"], "pin_memory");
  for (const auto& t : doc["trials"]) EXPECT_EQ(t["config"]["pin_memory"], "0");
  EXPECT_NE(log.find("skipped pin_memory=1"), std::string::npos) << log;
  // A normal stop at --max-trials: not "partial results".
  EXPECT_EQ(doc["status"]["stop_reason"], "max trials reached");
  EXPECT_EQ(log.find("partial results"), std::string::npos) << log;
  std::ifstream html_in(out / "tune" / "tune.html");
  const std::string html((std::istreambuf_iterator<char>(html_in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(html.find("partial results"), std::string::npos);
  // The script itself was never edited: the change to make permanent is spelled out instead.
  ASSERT_TRUE(doc["change"]["python"].is_array() && !doc["change"]["python"].empty()) << doc.dump(2);
  EXPECT_NE(doc["change"]["python"][0]["code"].get<std::string>().find("num_workers=2"), std::string::npos);
  // The quality guard does not flag a harmless knob: more workers deliver the same (seeded) batches.
  EXPECT_EQ(doc["trials"][1]["loss"]["status"], "same loss") << doc["trials"][1]["loss"].dump(2);
  EXPECT_EQ(doc["quality"]["loss"]["status"], "same loss") << doc["quality"].dump(2);
  EXPECT_TRUE(fs::exists(out / "tune" / "tune.html"));

  // issue 26 item 4: the winner's overrides in apply.json, and `run --apply` reproduces its speed in fresh runs of
  // the unmodified script: 2 plain runs and 2 with --apply, interleaved; the ratio of their mean step times falls
  // in the confirmed interval (widened by 10% each side: two fresh runs a side carry their own noise).
  std::ifstream apply_in(out / "tune" / "apply.json");
  ASSERT_TRUE(apply_in) << log;
  const nlohmann::json apply = nlohmann::json::parse(apply_in);
  EXPECT_EQ(apply["overrides"]["dataloader.num_workers"], 2) << apply.dump(2);
  EXPECT_EQ(apply["config"], doc["best"]["config"]) << apply.dump(2);
  EXPECT_EQ(apply["speedup"]["low"], doc["speedup"]["low"]) << apply.dump(2);
  EXPECT_NE(log.find("profile-train run --apply " + (out / "tune" / "apply.json").string()), std::string::npos) << log;
  auto step_ms = [&](const std::string& name, bool with_apply) {
    std::vector<std::string> argv = {exe.string(), "run", "--quiet", "--out", (out / name).string()};
    if (with_apply) argv.insert(argv.end(), {"--apply", (out / "tune" / "apply.json").string()});
    argv.insert(argv.end(), {"--", python.string(), script.string()});
    const auto rr = pt::run_child(argv, {"SLOW_TRAIN_STEPS=20"}, out / (name + ".log"), 120, nullptr, 1);
    EXPECT_EQ(rr.exit_code, 0) << pt::read_tail(out / (name + ".log"), 4096);
    std::ifstream rin(out / name / "report.json");
    const nlohmann::json rep = nlohmann::json::parse(rin, nullptr, false);
    if (with_apply) {
      EXPECT_EQ(rep["facts"]["dataloader"]["num_workers"], 2) << rep["facts"].dump();  // the override took effect
    }
    return rep.is_object() && rep["steps"]["mean_ms"].is_number() ? rep["steps"]["mean_ms"].get<double>() : NAN;
  };
  double plain = 0, applied = 0;
  for (int i = 0; i < 2; ++i) {
    plain += step_ms("plain" + std::to_string(i), false);
    applied += step_ms("apply" + std::to_string(i), true);
  }
  const double fresh_ratio = plain / applied;
  EXPECT_GE(fresh_ratio, 0.9 * doc["speedup"]["low"].get<double>()) << doc["speedup"].dump();
  EXPECT_LE(fresh_ratio, 1.1 * doc["speedup"]["high"].get<double>()) << doc["speedup"].dump();
  std::cout << "fresh re-run with --apply: x" << fresh_ratio << " (confirmed " << doc["speedup"]["low"] << "-"
            << doc["speedup"]["high"] << ")\n";
  fs::remove_all(out);
}

// The planted fake improvement through real processes and report files (a stand-in for `profile-train run`
// and a training script that no knob changes, with a compile-like first step and a loaded machine during the
// baseline's repeats): tune must not report a gain. Runs 13 short shell processes.
TEST(TuneEndToEnd, NoiseOnlyCandidateThroughRealProcessesIsNotAGain) {
  const fs::path data = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data";
  const fs::path out = fs::temp_directory_path() / ("pt_tune_noise_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  ::setenv("PT_FAKE_STATE", (out / "runs").c_str(), 1);
  pt::ProcessRunnerOptions o;
  o.self_exe = data / "fake_profile_train.sh";
  o.out_dir = out;
  o.target.kind = pt::TuneTarget::Kind::kCommand;
  o.target.args = {"/bin/sh", (data / "fake_noisy_train.sh").string()};
  pt::ProcessTrialRunner runner(o);
  pt::TuneOptions opt;
  opt.trial_timeout_s = 30;
  pt::Tuner tuner({*pt::parse_knob_arg("pin_memory=0,1")}, opt, runner);
  const pt::TuneResult r = tuner.run();
  ::unsetenv("PT_FAKE_STATE");
  ASSERT_GE(r.baseline, 0);
  ASSERT_EQ(r.trials.size(), 2u);
  // The plant is there: measured alone in the loaded period, the baseline looked ~1.7x slower ...
  EXPECT_GT(r.trials[1].values.front() / r.trials[0].values.front(), 1.5);
  // ... and the steady state left each run's 3-7 s first step out ...
  for (const auto& run : r.runs) EXPECT_EQ(run.steady.warmup_excluded, 1);
  // ... but side by side there is no gain: not kept, or not confirmed head to head.
  EXPECT_EQ(r.best, r.baseline);
  EXPECT_FALSE(r.confirmation.claimed);
  pt::TuneReportContext ctx;
  const nlohmann::json doc = pt::tune_json(r, {*pt::parse_knob_arg("pin_memory=0,1")}, ctx);
  EXPECT_FALSE(doc["speedup"]["claimed"].get<bool>());
  EXPECT_NE(doc["change"]["summary"].get<std::string>().find("keep the baseline"), std::string::npos);
  fs::remove_all(out);
}

namespace {

// `profile-train tune ARGS` run for real (skipped when the binary, Python with torch or `run` are missing);
// returns tune.json (null on failure, with the log in *log).
nlohmann::json tune_for_real(const std::string& name, const std::vector<std::string>& args,
                             const std::vector<std::string>& env, std::string* log, int timeout_s = 400) {
  const fs::path exe = fs::path(PT_BINARY_DIR) / "profile-train";
  const fs::path out = fs::temp_directory_path() / ("pt_tune_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  std::vector<std::string> argv = {exe.string(), "tune", "--out", (out / "tune").string()};
  argv.insert(argv.end(), args.begin(), args.end());
  const auto r = pt::run_child(argv, env, out / "tune.log", timeout_s, nullptr, 2);
  *log = pt::read_tail(out / "tune.log", 16384);
  std::ifstream in(out / "tune" / "tune.json");
  if (!r.started || r.exit_code != 0 || !in) return nullptr;
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, false);
  return doc.is_discarded() ? nlohmann::json() : doc;
}

bool torch_available() {
  const std::string cmd = std::string("'") + PT_PYTHON + "' -c 'import torch' >/dev/null 2>&1";
  return fs::exists(fs::path(PT_BINARY_DIR) / "profile-train") && std::system(cmd.c_str()) == 0;
}

// The memory-fit sweeps' shared checks: batch 4096 skipped before any run with the prediction against the
// --max-memory cap as the reason, never run, and the largest batch that ran is `largest` with its measured peak
// under the cap.
void expect_4096_skipped_and_largest_fits(const nlohmann::json& doc, const std::string& log, const std::string& cap_text,
                                          int cap_mib, long long expected_largest) {
  bool skipped = false;
  for (const auto& k : doc["skipped_knobs"]) {
    if (k["knob"] != "batch_size") continue;
    skipped = true;
    EXPECT_EQ(k["values"], nlohmann::json::array({"4096"})) << k.dump();
    EXPECT_NE(k["reason"].get<std::string>().find("predicted not to fit in " + cap_text + " (--max-memory)"),
              std::string::npos)
        << k.dump();
  }
  EXPECT_TRUE(skipped) << doc["skipped_knobs"].dump(1) << log;
  long long largest = 0;
  double largest_peak = -1;
  for (const auto& t : doc["trials"]) {
    const long long batch = std::stoll(t["config"]["batch_size"].get<std::string>());
    EXPECT_NE(batch, 4096) << t.dump();
    if (t["status"] != "ok" || batch <= largest) continue;
    largest = batch;
    largest_peak = t["peak_memory_bytes"].is_number() ? t["peak_memory_bytes"].get<double>() : -1;
  }
  EXPECT_EQ(largest, expected_largest) << doc["trials"].dump(1);
  ASSERT_GT(largest_peak, 0) << doc["trials"].dump(1);
  EXPECT_LE(largest_peak, cap_mib * 1048576.0) << doc["trials"].dump(1);
}

}  // namespace

// issue 26 (b): on a nanoGPT-like program without a DataLoader, the guided search's default space loses its
// DataLoader knobs from the baseline's facts (skipped, listed with the reason, never tried), and channels_last (no
// convolution); what it tries are knobs that can act (threads, optimizer_impl). 2 trials, 1 run each + baseline.
TEST(TuneEndToEnd, NanoGptLikeProgramSkipsTheDataLoaderKnobs) {
  if (!torch_available()) GTEST_SKIP() << "needs the profile-train binary and " << PT_PYTHON << " with torch";
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "knob_lm.py";
  std::string log;
  const nlohmann::json doc =
      tune_for_real("nanogpt", {"--repeats", "1", "--baseline-repeats", "1", "--confirm-repeats", "0",
                                "--max-trials", "2", "--trial-timeout", "120", "--", PT_PYTHON, script.string()},
                    {"KNOB_STEPS=8"}, &log);
  ASSERT_TRUE(doc.is_object()) << log;
  if (doc["trials"][0]["status"] != "ok") GTEST_SKIP() << "baseline did not measure: " << doc["trials"][0].dump();
  std::map<std::string, std::string> skipped;
  for (const auto& k : doc["skipped_knobs"]) skipped[k["knob"]] = k["reason"];
  EXPECT_EQ(skipped["num_workers"], "the program iterates no torch DataLoader (facts.dataloader absent)")
      << doc["skipped_knobs"].dump(1);
  EXPECT_EQ(skipped["channels_last"], "the model has no convolution (facts.model.has_conv = false)");
  EXPECT_TRUE(skipped.count("pin_memory"));
  for (const auto& t : doc["trials"]) {
    EXPECT_EQ(t["config"].value("num_workers", "0"), "0") << t.dump();
    EXPECT_EQ(t["config"].value("channels_last", "0"), "0") << t.dump();
  }
  ASSERT_GE(doc["trials"].size(), 2u) << log;
  EXPECT_TRUE(doc["space"].contains("threads")) << doc["space"].dump();
  EXPECT_TRUE(doc["space"].contains("optimizer_impl")) << doc["space"].dump();
}

// An override that cannot apply at run time (torch.compile without a working C++ compiler) fails only its own
// trial, with the reason; the sweep goes on and the baseline stays the best.
TEST(TuneEndToEnd, AnOverrideThatCannotApplyFailsOnlyItsTrial) {
  if (!torch_available()) GTEST_SKIP() << "needs the profile-train binary and " << PT_PYTHON << " with torch";
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "knob_lightning_like.py";
  std::string log;
  const nlohmann::json doc = tune_for_real(
      "nocxx", {"--knob", "compile=off,default", "--knob", "threads=0,1", "--strategy", "grid", "--repeats", "1",
                "--baseline-repeats", "1", "--confirm-repeats", "0", "--trial-timeout", "120", "--", PT_PYTHON,
                script.string()},
      {"KNOB_STEPS=8", "CXX=/bin/false", "TORCHINDUCTOR_FORCE_DISABLE_CACHES=1"}, &log);
  ASSERT_TRUE(doc.is_object()) << log;
  if (doc["trials"][0]["status"] != "ok") GTEST_SKIP() << "baseline did not measure: " << doc["trials"][0].dump();
  int failed = 0, ok = 0;
  for (const auto& t : doc["trials"]) {
    if (t["config"]["compile"] == "default") {
      EXPECT_EQ(t["status"], "override_failed") << t.dump();
      EXPECT_NE(t["message"].get<std::string>().find("override model.compile could not apply: torch.compile failed"),
                std::string::npos)
          << t.dump();
      ++failed;
    } else {
      EXPECT_EQ(t["status"], "ok") << t.dump();
      ++ok;
    }
  }
  EXPECT_EQ(failed, 2) << doc["trials"].dump(1);
  EXPECT_EQ(ok, 2);
  EXPECT_EQ(doc["best"]["config"]["compile"], "off");
}

// issue 24: a planted memory cap on the CPU. memory_mlp.py (an MLP with AdamW: about 36 MB static, about 13 KB of
// activations per sample) under --max-memory 60M: batch 4096 is predicted at about 88 MB and skipped before any
// run, saying why; 64 and 128 run, and the largest one run fits under the cap by its own measured peak.
TEST(TuneEndToEnd, BatchSizesPredictedNotToFitAreSkippedAndTheLargestRunFits) {
  if (!torch_available()) GTEST_SKIP() << "needs the profile-train binary and " << PT_PYTHON << " with torch";
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "memory_mlp.py";
  std::string log;
  const nlohmann::json doc = tune_for_real(
      "memfit", {"--knob", "batch_size=64,128,4096", "--strategy", "grid", "--repeats", "1", "--baseline-repeats", "1",
                 "--confirm-repeats", "0", "--max-memory", "60M", "--trial-timeout", "120", "--", PT_PYTHON,
                 script.string(), "--steps", "12"},
      {}, &log);
  ASSERT_TRUE(doc.is_object()) << log;
  if (doc["trials"][0]["status"] != "ok") GTEST_SKIP() << "baseline did not measure: " << doc["trials"][0].dump();
  expect_4096_skipped_and_largest_fits(doc, log, "60.0 MiB", 60, 128);
  EXPECT_NE(doc["log"].dump().find("skip batch_size=4096: predicted not to fit"), std::string::npos) << doc["log"].dump(1);
}

// issue 24 on the built-in LibTorch workload (its own facts.memory: parameters, gradients and AdamW state counted
// from the tensors, activations from the C heap's growth over the forward): the default MLP holds about 10 MiB
// of static memory and about 13 KiB of activations per sample, so under --max-memory 40M batch 4096 is predicted
// at about 63 MiB and skipped before any run, saying why; 64 and 256 run, and the largest fits by its own peak.
TEST(TuneEndToEnd, TheBuiltInWorkloadSkipsBatchSizesPredictedNotToFit) {
  const fs::path workload = fs::path(PT_BINARY_DIR) / "profile-train-workload";
  if (!fs::exists(fs::path(PT_BINARY_DIR) / "profile-train") || !fs::exists(workload))
    GTEST_SKIP() << "needs profile-train and profile-train-workload (LibTorch) in " << PT_BINARY_DIR;
  std::string log;
  const nlohmann::json doc = tune_for_real(
      "wlmemfit", {"--knob", "batch_size=64,256,4096", "--strategy", "grid", "--repeats", "1", "--baseline-repeats",
                   "1", "--confirm-repeats", "0", "--max-memory", "40M", "--trial-timeout", "120",
                   "--workload-binary", workload.string(), "--workload", "mlp", "--steps", "4", "--warmup", "1",
                   "--device", "cpu", "--threads", "1"},
      {}, &log);
  ASSERT_TRUE(doc.is_object()) << log;
  if (doc["trials"][0]["status"] != "ok") GTEST_SKIP() << "baseline did not measure: " << doc["trials"][0].dump();
  expect_4096_skipped_and_largest_fits(doc, log, "40.0 MiB", 40, 256);
}

// The quality guard through real processes: a script that scales its learning rate with the batch size (the
// linear scaling rule) diverges at batch_size=64, which is also 4x faster per sample (a fixed cost per batch).
// Without the guard that trial wins; with it, it is marked "changes the loss" and the baseline is kept; with
// --allow-quality-change the faster, diverging batch is the winner again (the guard, not the speed, decided).
// 4 + 8 Python processes of about 3-5 s each.
TEST(TuneEndToEnd, ABatchSizeThatMakesTheLossDivergeIsNeverTheWinner) {
  const fs::path exe = fs::path(PT_BINARY_DIR) / "profile-train";
  const fs::path python = PT_PYTHON;
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data" / "lr_scaling_train.py";
  if (!fs::exists(exe)) GTEST_SKIP() << "profile-train binary not built at " << exe;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (PT_PYTHON)";
  const fs::path out = fs::temp_directory_path() / ("pt_tune_guard_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  auto tune = [&](const std::string& name, bool allow) {
    std::vector<std::string> argv = {exe.string(), "tune", "--knob", "batch_size=16,64", "--repeats", "1",
                                     "--baseline-repeats", "2", "--confirm-repeats", "2", "--max-trials", "2",
                                     "--trial-timeout", "120", "--out", (out / name).string()};
    if (allow) argv.push_back("--allow-quality-change");
    for (const std::string& a : {std::string("--"), python.string(), script.string()}) argv.push_back(a);
    const auto r = pt::run_child(argv, {"LR_TRAIN_STEPS=24"}, out / (name + ".log"), 300, nullptr, 2);
    const std::string log = pt::read_tail(out / (name + ".log"), 16384);
    EXPECT_TRUE(r.started);
    EXPECT_EQ(r.exit_code, 0) << log;
    std::ifstream in(out / name / "tune.json");
    EXPECT_TRUE(in) << log;
    return std::make_pair(in ? nlohmann::json::parse(in) : nlohmann::json(), log);
  };
  const auto [doc, log] = tune("guarded", false);
  ASSERT_TRUE(doc.is_object() && doc["trials"].size() == 2u) << log;
  if (doc["trials"][0]["status"] != "ok") GTEST_SKIP() << "the baseline did not measure: " << doc["trials"][0].dump();
  const auto& diverging = doc["trials"][1];
  ASSERT_EQ(diverging["config"]["batch_size"], "64");
  // The plant: the diverging batch looks faster (when its pair was measured: under a load that changed between
  // the two runs of every pair, the load rule leaves them out and the speed is unknown).
  if (diverging["vs_baseline"].is_number()) EXPECT_GT(diverging["vs_baseline"].get<double>(), 1.5) << log;
  EXPECT_EQ(diverging["loss"]["status"], "changes the loss") << diverging["loss"].dump(2);
  EXPECT_EQ(diverging["loss"]["compared_by"], "samples seen");
  EXPECT_EQ(doc["trials"][0]["loss"]["status"], "baseline");
  EXPECT_EQ(doc["best"]["trial"], 1) << doc["log"].dump(2);
  EXPECT_EQ(doc["quality"]["allow_quality_change"], false);
  EXPECT_EQ(doc["quality"]["winner"], 1);
  EXPECT_NE(log.find("trial #2 changes the loss"), std::string::npos) << log;

  const auto [allowed, allowed_log] = tune("allowed", true);
  ASSERT_TRUE(allowed.is_object() && allowed["trials"].size() == 2u) << allowed_log;
  EXPECT_EQ(allowed["trials"][1]["loss"]["status"], "changes the loss");
  // Allowed, the faster batch wins again, unless the load rule left its pairs out (then nothing was measured).
  if (allowed["trials"][1]["status"] == "ok") EXPECT_EQ(allowed["best"]["trial"], 2) << allowed["log"].dump(2);
  if (allowed["best"]["trial"] == 2) EXPECT_EQ(allowed["quality"]["loss"]["status"], "changes the loss");
  fs::remove_all(out);
}

namespace {

// Starts `n` busy-looping child processes (a CPU hog); stop_hog kills and reaps them.
std::vector<pid_t> start_hog(int n) {
  std::vector<pid_t> pids;
  for (int i = 0; i < n; ++i) {
    const pid_t p = ::fork();
    if (p == 0) {
      for (volatile unsigned long k = 0;; k = k + 1) {
      }
    }
    if (p > 0) pids.push_back(p);
  }
  return pids;
}
void stop_hog(const std::vector<pid_t>& pids) {
  for (pid_t p : pids) ::kill(p, SIGKILL);
  for (pid_t p : pids) ::waitpid(p, nullptr, 0);
}

// The real runner, with a CPU hog during every run of the baseline's configuration after its first runs alone:
// the load changes between the two runs of each pair.
class HoggedRunner : public pt::TrialRunner {
 public:
  HoggedRunner(pt::TrialRunner& inner, int quiet_runs) : inner_(inner), quiet_(quiet_runs) {}
  pt::Measurement run(const model::Config& config, const pt::RunContext& ctx) override {
    const bool hog = config.at("num_workers") == "0" && ++baseline_runs_ > quiet_;
    const std::vector<pid_t> pids = hog ? start_hog(4) : std::vector<pid_t>{};
    pt::Measurement m = inner_.run(config, ctx);
    stop_hog(pids);
    return m;
  }

 private:
  pt::TrialRunner& inner_;
  int quiet_;
  int baseline_runs_ = 0;
};

}  // namespace

// Claims that survive a changing machine: a knob that changes nothing, measured in pairs whose reference run
// has 4 busy-looping processes competing with it (started and killed by this test) and whose candidate run is
// quiet. Averaged, the pairs would show a gain of the candidate; the load rule sees each pair's runs disagree
// (the reference kept fewer CPUs busy than its configuration's quiet runs), re-runs them and then leaves them
// out as unreliable: no gain is kept or claimed, as on a quiet machine. 6-8 Python processes of 4-15 s (the hogged
// ones are slow on 2 cores). With the load rule off (tolerances of 1e9) the same plant is kept and claimed.
TEST(TuneLoad, APlantedLoadChangeWithinPairsClaimsNoGain) {
  const fs::path exe = fs::path(PT_BINARY_DIR) / "profile-train";
  const fs::path python = PT_PYTHON;
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "tuner" / "data" / "cpu_bound_train.py";
  if (!fs::exists(exe)) GTEST_SKIP() << "profile-train binary not built at " << exe;
  if (!fs::exists(python)) GTEST_SKIP() << "no Python at " << python << " (PT_PYTHON)";
  const fs::path out = fs::temp_directory_path() / ("pt_tune_load_" + std::to_string(::getpid()));
  fs::remove_all(out);
  fs::create_directories(out);
  pt::ProcessRunnerOptions o;
  o.self_exe = exe;
  o.out_dir = out;
  o.target.kind = pt::TuneTarget::Kind::kCommand;
  o.target.args = {python.string(), script.string(), "{num_workers}"};
  pt::ProcessTrialRunner real(o);
  HoggedRunner runner(real, 2);
  pt::TuneOptions opt;
  opt.repeats = 1;
  opt.baseline_repeats = 2;
  opt.confirm_repeats = 2;
  opt.trial_timeout_s = 120;
  opt.max_pair_reruns = 1;
  opt.placeholders = {"num_workers"};  // the program's own argument: never skipped from the shim's facts
  ::setenv("CPU_TRAIN_STEPS", "15", 1);
  pt::Tuner tuner({*pt::parse_knob_arg("num_workers=0,1")}, opt, runner);
  const pt::TuneResult r = tuner.run();
  ::unsetenv("CPU_TRAIN_STEPS");
  ASSERT_GE(r.baseline, 0);
  if (!r.trials[0].ok()) GTEST_SKIP() << "the baseline did not measure: " << r.trials[0].message;
  bool host_known = false;
  for (const auto& run : r.runs) host_known = host_known || run.host_known;
  ASSERT_TRUE(host_known) << "run's reports carry no source.host_load";
  // The plant worked: in the pairs left out, the hogged reference ran slower than the quiet candidate.
  double ref = 0, cand = 0;
  for (const auto& run : r.runs) {
    if (run.excluded.empty() || run.throughput <= 0) continue;
    (run.role == "reference" ? ref : cand) += std::log(run.throughput);
  }
  ASSERT_GT(r.rerun_pairs + r.unreliable_pairs, 0) << "no pair was seen to disagree";
  EXPECT_GT(cand, ref) << "the hog did not slow the reference runs";
  // No gain kept or claimed.
  EXPECT_EQ(r.best, r.baseline);
  EXPECT_FALSE(r.confirmation.claimed);
  fs::remove_all(out);
}
