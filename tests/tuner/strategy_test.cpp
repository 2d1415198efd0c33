// Strategy tests on synthetic response surfaces with a fake trial runner (no process, no GPU).
#include <gtest/gtest.h>

#include <atomic>
#include <iostream>

#include "profile_train/tuner/tuner.h"
#include "synthetic_surface.h"

namespace model = profile_train::model;
namespace pt = profile_train::tuner;
using pt_test::FakeRunner;
using pt_test::Surface;

namespace {

using pt_test::range;

// The issue's benchmark grid: batch {16,32,64,128} x workers {0,1,2} x amp {off,bf16}.
pt::KnobSpace issue_space() {
  return {range("num_workers=0,1,2"), range("amp=off,bf16"), range("batch_size=16,32,64,128")};
}

struct Outcome {
  pt::TuneResult result;
  int runs = 0;
  double best() const { return result.best >= 0 ? result.trials[result.best].mean : 0; }
};

Outcome tune(const Surface& s, pt::KnobSpace space, const std::string& strategy, pt::TuneOptions opt = {}) {
  FakeRunner runner(s);
  opt.strategy = strategy;
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner(std::move(space), opt, runner);
  Outcome o;
  o.result = tuner.run();
  o.runs = runner.runs();
  return o;
}

// Input-bound CPU-like surface: loading dominates; workers help up to the 2 cores, batch barely matters, bf16
// is slightly slower (CPU autocast).
Surface input_bound() {
  Surface s;
  s.cores = 2;
  s.load_us_per_sample = 900;
  s.compute_us_per_sample = 300;
  s.overhead_ms = 3;
  s.amp_bf16_speed = 0.8;
  return s;
}

// Compute-bound surface: data is cheap, bf16 gives 1.8x, the per-step overhead rewards bigger batches.
Surface compute_bound() {
  Surface s;
  s.load_us_per_sample = 20;
  s.compute_us_per_sample = 50;
  s.overhead_ms = 6;
  s.amp_bf16_speed = 1.8;
  return s;
}

}  // namespace

TEST(GuidedVsGrid, InputBoundReachesGridBestWithAThirdOfTheTrials) {
  const Outcome grid = tune(input_bound(), issue_space(), "grid");
  const Outcome guided = tune(input_bound(), issue_space(), "guided");
  ASSERT_EQ(grid.result.trials.size(), 24u);
  ASSERT_GE(guided.result.best, 0);
  EXPECT_GE(guided.best(), 0.95 * grid.best()) << "guided " << guided.best() << " grid " << grid.best();
  EXPECT_LE(guided.result.trials.size() * 3, grid.result.trials.size());
  // The diagnosis (input_pipeline + dataloader-workers) makes workers the first knob tried.
  ASSERT_GE(guided.result.trials.size(), 2u);
  EXPECT_NE(guided.result.trials[1].config.at("num_workers"), "0");
  EXPECT_NE(guided.result.trials[1].reason.find("dataloader-workers"), std::string::npos);
  EXPECT_TRUE(guided.result.complete);
  EXPECT_EQ(guided.result.trials[guided.result.best].config.at("num_workers"), "2");
}

TEST(GuidedVsGrid, ComputeBoundFindsAmpAndBatch) {
  const Outcome grid = tune(compute_bound(), issue_space(), "grid");
  const Outcome guided = tune(compute_bound(), issue_space(), "guided");
  EXPECT_GE(guided.best(), 0.95 * grid.best());
  EXPECT_LE(guided.result.trials.size() * 3, grid.result.trials.size());
  const auto& best = guided.result.trials[guided.result.best].config;
  EXPECT_EQ(best.at("amp"), "bf16");
  EXPECT_EQ(best.at("batch_size"), "128");
}

TEST(GuidedVsGrid, ManySeedsAndShapes) {
  // A family of surfaces (varying the balance of loading / compute / overhead / amp) and noise seeds:
  // guided stays within 95% of the grid's best (measured by the surface's true throughput) with <= 1/3 of
  // the trials on every one.
  int cases = 0;
  for (double load : {50.0, 300.0, 900.0}) {
    for (double amp : {0.8, 1.5}) {
      for (unsigned seed : {1u, 2u, 3u}) {
        Surface s = input_bound();
        s.load_us_per_sample = load;
        s.amp_bf16_speed = amp;
        s.noise_rel_sd = 0.01;
        s.seed = seed;
        const Outcome grid = tune(s, issue_space(), "grid");
        const Outcome guided = tune(s, issue_space(), "guided");
        Surface exact = s;
        exact.noise_rel_sd = 0;
        const double g = exact.true_throughput(guided.result.trials[guided.result.best].config);
        const double r = exact.true_throughput(grid.result.trials[grid.result.best].config);
        EXPECT_GE(g, 0.95 * r) << "load " << load << " amp " << amp << " seed " << seed;
        EXPECT_LE(guided.result.trials.size() * 3, grid.result.trials.size()) << "load " << load << " amp " << amp;
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 18);
}

TEST(GuidedVsGrid, LooksOneStepAheadWhileTheDiagnosisStillPointsToTheKnob) {
  // One worker is no faster than none (its loading is slow and serial), two are: the diagnosis still says
  // input_pipeline + dataloader-workers after workers=1, so the search looks one step further.
  Surface s = input_bound();
  s.cores = 4;
  s.one_worker_eff = 0.35;
  const Outcome o = tune(s, {range("num_workers=0,1,2,4")}, "guided");
  ASSERT_GE(o.result.trials.size(), 3u);
  EXPECT_NE(o.result.trials[2].config.at("num_workers"), "1");
  EXPECT_NE(o.result.trials[o.result.best].config.at("num_workers"), "0");
  EXPECT_NE(o.result.trials[o.result.best].config.at("num_workers"), "1");
}

TEST(Oom, GuidedStopsDoublingAtOomAndRefines) {
  Surface s = compute_bound();
  s.oom_batch = 100;  // 128 fails, 96 fits
  pt::KnobSpace space = {range("batch_size=auto")};
  space[0].values = pt::auto_values_for(*space[0].def, 2);
  const Outcome o = tune(s, space, "guided");
  int ooms = 0;
  for (const auto& t : o.result.trials) {
    if (t.status == pt::RunStatus::kOom) {
      ++ooms;
      EXPECT_EQ(t.config.at("batch_size"), "128");
    }
    EXPECT_LE(pt::config_int(t.config, "batch_size", 0), 128) << "tried a batch above the one that ran out of memory";
  }
  EXPECT_EQ(ooms, 1);
  EXPECT_EQ(o.result.oom_trials, 1);
  EXPECT_EQ(o.result.trials[o.result.best].config.at("batch_size"), "96");  // refined between 64 and 128
}

TEST(Oom, GridSkipsLargerBatchesAfterOom) {
  Surface s = compute_bound();
  s.oom_batch = 64;
  const Outcome o = tune(s, issue_space(), "grid");
  // 64 runs out of memory once per (workers, amp) pair; 128 is never run.
  int ooms = 0;
  for (const auto& t : o.result.trials) {
    ASSERT_NE(t.config.at("batch_size"), "128");
    if (t.status == pt::RunStatus::kOom) ++ooms;
  }
  EXPECT_EQ(ooms, 6);
  EXPECT_EQ(o.result.trials.size(), 18u);
  EXPECT_NE(o.result.trials[o.result.best].config.at("batch_size"), "64");
}

TEST(Oom, BaselineOutOfMemoryHalvesTheBatch) {
  Surface s = compute_bound();
  s.oom_batch = 40;
  pt::KnobSpace space = {range("batch_size=128,64,32,16")};
  const Outcome o = tune(s, space, "guided");
  ASSERT_GE(o.result.baseline, 0);
  EXPECT_EQ(o.result.trials[o.result.baseline].config.at("batch_size"), "32");
  EXPECT_EQ(o.result.trials[0].status, pt::RunStatus::kOom);
  EXPECT_EQ(o.result.trials[1].status, pt::RunStatus::kOom);
}

TEST(Oom, MaxMemoryCapCountsAsOverMemory) {
  // A runner that reports peak memory proportional to the batch: 1 MiB per sample.
  class MemRunner : public pt::TrialRunner {
   public:
    pt::Measurement run(const model::Config& c, const pt::RunContext&) override {
      pt::Measurement m;
      m.status = pt::RunStatus::kOk;
      const double b = static_cast<double>(pt::config_int(c, "batch_size", 1));
      m.throughput = b * 10;  // bigger is always faster
      m.per_sample = true;
      m.peak_memory_bytes = b * 1048576.0;
      return m;
    }
  } runner;
  pt::TuneOptions opt;
  opt.max_memory_bytes = 100 * 1048576.0;
  opt.repeats = 1;
  opt.baseline_repeats = 1;
  pt::Tuner tuner({range("batch_size=16,32,64,128,256")}, opt, runner);
  const pt::TuneResult r = tuner.run();
  EXPECT_EQ(r.trials[r.best].config.at("batch_size"), "64");
  EXPECT_EQ(r.oom_trials, 1);
  EXPECT_EQ(r.trials.back().status, pt::RunStatus::kOverMemory);
}

TEST(Failures, CrashingTrialsNeverEndTheSweep) {
  Surface s = input_bound();
  s.crashes = [](const model::Config& c) { return c.at("num_workers") == "1"; };
  const Outcome grid = tune(s, issue_space(), "grid");
  int crashed = 0;
  for (const auto& t : grid.result.trials) crashed += t.status == pt::RunStatus::kCrashed;
  EXPECT_EQ(crashed, 8);
  EXPECT_EQ(grid.result.trials.size(), 24u);
  EXPECT_EQ(grid.result.failed_trials, 8);
  EXPECT_EQ(grid.result.trials[grid.result.best].config.at("num_workers"), "2");

  const Outcome guided = tune(s, issue_space(), "guided");
  EXPECT_TRUE(guided.result.complete);
  EXPECT_GE(guided.result.failed_trials, 1);
  EXPECT_EQ(guided.result.trials[guided.result.best].status, pt::RunStatus::kOk);
}

TEST(Failures, BaselineCrashStopsWithReason) {
  Surface s = input_bound();
  s.crashes = [](const model::Config&) { return true; };
  const Outcome o = tune(s, issue_space(), "guided");
  EXPECT_EQ(o.result.baseline, -1);
  EXPECT_EQ(o.result.best, -1);
  EXPECT_EQ(o.result.trials.size(), 1u);
  ASSERT_FALSE(o.result.log.empty());
  EXPECT_NE(o.result.log.back().find("baseline failed"), std::string::npos);
}

TEST(Noise, SmallGainBelowNoiseIsNotKept) {
  // With 3% measurement noise: pin_memory with no effect must (almost) never be kept (a ~5% false-keep rate
  // is what a 2-sigma rule allows), one with a true 1.5% gain (below min_gain and the noise) rarely, and a
  // true 40% gain always. 20 noise seeds each.
  int kept_none = 0, kept_small = 0, kept_big = 0;
  for (unsigned seed = 1; seed <= 20; ++seed) {
    Surface s = compute_bound();
    s.noise_rel_sd = 0.03;
    s.seed = seed;
    s.pin_gain = 1.0;
    const Outcome none = tune(s, {range("pin_memory=0,1")}, "guided");
    kept_none += none.result.trials[none.result.best].config.at("pin_memory") == "1";
    s.pin_gain = 1.015;
    const Outcome small = tune(s, {range("pin_memory=0,1")}, "guided");
    kept_small += small.result.trials[small.result.best].config.at("pin_memory") == "1";
    EXPECT_GT(small.result.pooled_relative_sd, 0.0);
    EXPECT_LT(small.result.pooled_relative_sd, 0.1);
    s.pin_gain = 1.4;
    const Outcome big = tune(s, {range("pin_memory=0,1")}, "guided");
    kept_big += big.result.trials[big.result.best].config.at("pin_memory") == "1";
  }
  EXPECT_LE(kept_none, 1);
  EXPECT_LE(kept_small, 3);
  EXPECT_EQ(kept_big, 20);
  std::cout << "kept with no gain: " << kept_none << "/20, 1.5% gain: " << kept_small << "/20, 40% gain: " << kept_big
            << "/20\n";
}

TEST(Noise, PooledNoiseTracksTheTrueNoise) {
  Surface s = compute_bound();
  s.noise_rel_sd = 0.05;
  s.seed = 11;
  pt::TuneOptions opt;
  opt.repeats = 6;
  opt.baseline_repeats = 6;
  opt.early_stop_fraction = 1.0;  // keep every repeat
  const Outcome o = tune(s, issue_space(), "grid", opt);
  EXPECT_GT(o.result.noise_samples, 100);
  EXPECT_NEAR(o.result.pooled_relative_sd, 0.05, 0.015);
}

TEST(Budget, MaxTrialsStopsAndSaysWhy) {
  pt::TuneOptions opt;
  opt.max_trials = 5;
  const Outcome o = tune(input_bound(), issue_space(), "grid", opt);
  EXPECT_EQ(o.result.trials.size(), 5u);
  EXPECT_FALSE(o.result.complete);
  EXPECT_EQ(o.result.stop_reason, "max trials reached");
  const Outcome g = tune(input_bound(), issue_space(), "guided", opt);
  EXPECT_LE(g.result.trials.size(), 5u);
}

TEST(Budget, TimeBudgetStopsAndLimitsTimeouts) {
  pt::TuneOptions opt;
  opt.time_budget_s = 95;  // each fake measurement takes 10 simulated seconds
  opt.trial_timeout_s = 600;
  FakeRunner runner(input_bound());
  opt.strategy = "grid";
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner(issue_space(), opt, runner);
  const pt::TuneResult r = tuner.run();
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stop_reason, "time budget spent");
  EXPECT_LE(runner.now(), 95 + 2 * 10);  // the last pair (reference + candidate) may start just before the end
  // The per-measurement timeout never exceeds what is left of the budget.
  for (const auto& c : runner.contexts()) EXPECT_LE(c.timeout_s, 95.0);
  EXPECT_LT(runner.contexts().back().timeout_s, runner.contexts().front().timeout_s);
}

TEST(EarlyStop, ClearlySlowerTrialSkipsItsRepeats) {
  Surface s = input_bound();  // bf16 is 20% slower in compute
  s.load_us_per_sample = 20;  // compute-bound so amp matters
  pt::TuneOptions opt;
  opt.repeats = 3;
  const Outcome o = tune(s, {range("amp=off,bf16")}, "guided", opt);
  ASSERT_EQ(o.result.trials.size(), 2u);
  EXPECT_EQ(o.result.trials[0].values.size(), 4u);  // 3 alone + the run right before bf16's
  EXPECT_TRUE(o.result.trials[1].early_stopped);
  EXPECT_EQ(o.result.trials[1].values.size(), 1u);
  EXPECT_EQ(o.runs, 5);
}

TEST(EarlyStop, SlowTrialsGetATighterTimeoutScaledByBatch) {
  pt::TuneOptions opt;
  opt.trial_timeout_s = 1000;
  opt.slow_kill_factor = 4;
  FakeRunner runner(input_bound());
  opt.strategy = "grid";
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner({range("batch_size=16,64")}, opt, runner);
  tuner.run();
  const auto& ctx = runner.contexts();
  ASSERT_GE(ctx.size(), 4u);
  EXPECT_DOUBLE_EQ(ctx[0].timeout_s, 1000);           // no best yet: the user's timeout
  auto first_of_trial_2 = std::find_if(ctx.begin(), ctx.end(), [](const pt::RunContext& c) { return c.trial_index == 2; });
  ASSERT_NE(first_of_trial_2, ctx.end());
  EXPECT_DOUBLE_EQ(first_of_trial_2->timeout_s, 4 * 10 * 4 + 5);  // 4x best's 10 s, x4 for batch 64 vs 16, + slack
}

TEST(EarlyStop, ACompileModeTheBestDidNotRunKeepsTheUsersTimeout) {
  // Its first run compiles (seconds to minutes) before any step: its wall time says nothing about its rate.
  pt::TuneOptions opt;
  opt.trial_timeout_s = 1000;
  opt.slow_kill_factor = 4;
  FakeRunner runner(input_bound());
  opt.strategy = "grid";
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner({range("compile=off,default"), range("batch_size=16,64")}, opt, runner);
  tuner.run();
  bool saw_compiled = false, saw_tightened = false;
  for (const auto& c : runner.contexts()) {
    if (c.trial_index < 2) continue;
    const auto& cfg = tuner.result().trials.at(c.trial_index - 1).config;
    const bool compiled_while_best_is_not = cfg.at("compile") == "default" &&
        tuner.result().trials.at(0).config.at("compile") == "off" && c.repeat == 0;
    if (compiled_while_best_is_not && c.timeout_s == 1000) saw_compiled = true;
    if (cfg.at("compile") == "off" && c.timeout_s < 1000) saw_tightened = true;
  }
  EXPECT_TRUE(saw_compiled);
  EXPECT_TRUE(saw_tightened);  // the other knob's trials are still stopped early
}

TEST(Interrupt, KeepsPartialResults) {
  std::atomic<bool> stop{false};
  FakeRunner runner(input_bound());
  runner.set_after_run([&](int n) {
    if (n == 13) stop = true;
  });
  pt::TuneOptions opt;
  opt.strategy = "grid";
  opt.interrupted = &stop;
  int updates = 0;
  opt.on_update = [&](const pt::Tuner&) { ++updates; };
  pt::Tuner tuner(issue_space(), opt, runner);
  const pt::TuneResult r = tuner.run();
  EXPECT_FALSE(r.complete);
  EXPECT_EQ(r.stop_reason, "interrupted");
  EXPECT_GE(r.trials.size(), 3u);
  EXPECT_LT(r.trials.size(), 24u);
  EXPECT_GE(r.best, 0);
  EXPECT_GE(updates, static_cast<int>(r.trials.size()));  // tune.json would be rewritten after every trial
}

TEST(Diagnosis, RecommendationAndVerdictMapToKnobs) {
  using nlohmann::json;
  // The knobs come from the recommendation's `knobs` (the rule's data), in their one spelling: the
  // canonical names. The id alone maps to nothing, and other spellings are not knobs.
  model::Recommendation rec;
  rec.id = "x";
  rec.knobs = {"pin_memory", "amp", "pin_memory"};
  EXPECT_EQ(pt::knobs_for_recommendation(rec), (std::vector<std::string>{"pin_memory", "amp"}));
  rec.knobs.clear();
  rec.id = "amp";
  EXPECT_TRUE(pt::knobs_for_recommendation(rec).empty());
  rec.id = "something-new";
  rec.knobs = {"dataloader.pin_memory", "AMP", "prefetch", "tf32"};
  EXPECT_EQ(pt::knobs_for_recommendation(rec), std::vector<std::string>{"tf32"});
  EXPECT_EQ(pt::unknown_knobs(rec), (std::vector<std::string>{"dataloader.pin_memory", "AMP", "prefetch"}));
  const auto report = pt_test::typed({{"verdict", {{"bottleneck", "input_pipeline"}}},
                                      {"recommendations", json::array({json{{"id", "amp"}, {"knobs", {"amp"}}}})}});
  const auto order = pt::diagnosed_knobs(report);
  ASSERT_EQ(order.size(), 5u);
  EXPECT_EQ(order[0].knob, "amp");
  EXPECT_EQ(order[0].source, "recommendation amp");
  EXPECT_EQ(order[1].knob, "num_workers");
  EXPECT_EQ(order[1].source, "verdict input_pipeline");
  const auto recs_only = pt::diagnosed_knobs(report, pt::DiagnosisScope::kRecommendations);
  ASSERT_EQ(recs_only.size(), 1u);
  EXPECT_EQ(recs_only[0].knob, "amp");
}

TEST(Diagnosis, AReportNamingAnUnknownKnobIsNotedAndTheKnownOnesAreUsed) {
  Surface s = input_bound();
  s.edit_report = [](nlohmann::json& report) {
    report["recommendations"] = nlohmann::json::array(
        {{{"id", "dataloader-workers"}, {"title", "more workers"}, {"knobs", {"prefetch", "num_workers"}}}});
  };
  const Outcome o = tune(s, {range("num_workers=0,1,2")}, "guided");
  ASSERT_GE(o.result.trials.size(), 2u);
  EXPECT_NE(o.result.trials[1].reason.find("recommendation dataloader-workers"), std::string::npos);
  bool noted = false;
  for (const auto& line : o.result.log) {
    noted = noted || line.find("recommendation dataloader-workers names 'prefetch', not a knob") != std::string::npos;
  }
  EXPECT_TRUE(noted);
}

TEST(Diagnosis, GuidedTriesTheTopRecommendationFirst) {
  // A runner whose report always recommends amp first: the first trial after the baseline changes amp.
  Surface s = compute_bound();
  const Outcome o = tune(s, issue_space(), "guided");
  ASSERT_GE(o.result.trials.size(), 2u);
  EXPECT_EQ(o.result.trials[1].config.at("amp"), "bf16");
  EXPECT_NE(o.result.trials[1].reason.find("recommendation amp"), std::string::npos);
}
