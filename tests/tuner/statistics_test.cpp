// The tuner's statistics (issue 17 item 5): a steady-state metric per run, interleaved (ABAB) measurements, a
// head-to-head check of the winner with an interval, knobs that cannot act on the machine skipped, and no
// "partial results" after a normal stop. Synthetic surfaces and a fake runner (no process, no GPU).
#include <gtest/gtest.h>

#include <map>

#include <cmath>

#include "profile_train/tuner/statistics.h"
#include "profile_train/report/tune_html.h"
#include "profile_train/tuner/tune_report.h"
#include "profile_train/tuner/tuner.h"
#include "synthetic_surface.h"

namespace model = profile_train::model;
namespace pt = profile_train::tuner;
using nlohmann::json;
using pt_test::FakeRunner;
using pt_test::Surface;

namespace {

using pt_test::range;

struct Session {
  pt::TuneResult result;
  std::vector<pt::RunContext> contexts;
};

Session tune(const Surface& s, pt::KnobSpace space, const std::string& strategy, pt::TuneOptions opt = {}) {
  FakeRunner runner(s);
  opt.strategy = strategy;
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner(std::move(space), opt, runner);
  Session out;
  out.result = tuner.run();
  out.contexts = runner.contexts();
  return out;
}

// Compute-bound, 2% noise, a compile-like first step of ~5 s in every run.
Surface with_slow_first_step() {
  Surface s;
  s.load_us_per_sample = 20;
  s.compute_us_per_sample = 50;
  s.overhead_ms = 6;
  s.noise_rel_sd = 0.02;
  s.first_step_ms = 5000;
  return s;
}

json per_step_report(const std::vector<double>& ms, bool complete = true) {
  json per = json::array();
  double sum = 0;
  for (double d : ms) {
    per.push_back({{"duration_ms", d}});
    sum += d;
  }
  return {{"steps",
           {{"count", ms.size()}, {"mean_ms", sum / static_cast<double>(ms.size())}, {"per_step", per},
            {"per_step_complete", complete}}}};
}

}  // namespace

TEST(SteadyState, LeadingCompileStepsAreExcludedAndAnOrdinaryFirstStepIsKept) {
  const pt::SteadyState compile = pt::steady_state_of(pt_test::typed(per_step_report({8900, 3000, 56, 58, 55, 57, 56, 900, 55})));
  EXPECT_EQ(compile.warmup_excluded, 2);
  EXPECT_EQ(compile.excluded_ms, (std::vector<double>{8900, 3000}));
  // The later 900 ms step (a checkpoint) is trimmed with the shortest one: the mean of 56, 58, 57, 56, 55.
  EXPECT_NEAR(compile.step_ms, 56.4, 1e-9);
  EXPECT_EQ(compile.trimmed, 2);
  EXPECT_EQ(compile.method, "trimmed mean of post-warm-up steps");

  const pt::SteadyState ordinary = pt::steady_state_of(pt_test::typed(per_step_report({60, 56, 58, 55, 57})));
  EXPECT_EQ(ordinary.warmup_excluded, 0);
  EXPECT_DOUBLE_EQ(ordinary.step_ms, 57);

  // Alternating fast / slow steps (two DataLoader workers delivering): the time per step, not the median.
  const pt::SteadyState alternating =
      pt::steady_state_of(pt_test::typed(per_step_report({80, 3, 37, 3, 37, 3, 37, 3, 37, 3, 37, 3, 37, 3, 37, 3, 37, 3, 37, 3, 37})));
  EXPECT_EQ(alternating.warmup_excluded, 1);
  EXPECT_DOUBLE_EQ(alternating.step_ms, 20);

  // Bimodal steps (every other step waits): never more than half are called warm-up.
  const pt::SteadyState bimodal = pt::steady_state_of(pt_test::typed(per_step_report({2500, 2500, 2500, 2500, 209, 209, 209, 209})));
  EXPECT_LE(bimodal.warmup_excluded, 4);

  // A bounded per-step list: the report's median of all steps stands in; no per-step list: the mean.
  json bounded = per_step_report({5000, 50, 50}, false);
  bounded["steps"]["count"] = 400;
  bounded["steps"]["median_ms"] = 51.0;
  EXPECT_DOUBLE_EQ(pt::steady_state_of(pt_test::typed(bounded)).step_ms, 51.0);
  EXPECT_NE(pt::steady_state_of(pt_test::typed(bounded)).method.find("median_ms"), std::string::npos);
  const json mean_only = {{"steps", {{"count", 10}, {"mean_ms", 40.0}}}};
  EXPECT_DOUBLE_EQ(pt::steady_state_of(pt_test::typed(mean_only)).step_ms, 40.0);
  EXPECT_EQ(pt::steady_state_of(pt_test::typed(json::object())).step_ms, 0);
}

TEST(SteadyState, TheTrialMetricIgnoresTheCompileStep) {
  // The mean of this run is 298 ms (a 5 s first step in 20); its steady state is 50 ms.
  json r = per_step_report(std::vector<double>(19, 50.0));
  r["steps"]["per_step"].insert(r["steps"]["per_step"].begin(), json{{"duration_ms", 5000.0}});
  r["steps"]["count"] = 20;
  r["steps"]["mean_ms"] = (5000.0 + 19 * 50) / 20;
  pt::Measurement m;
  ASSERT_TRUE(pt::metric_from_report(pt_test::typed(r), {{"batch_size", "10"}}, 0, &m).ok());
  EXPECT_DOUBLE_EQ(m.step_ms, 50);
  EXPECT_DOUBLE_EQ(m.throughput, 200);
  EXPECT_EQ(m.steady.warmup_excluded, 1);
}

TEST(PairedRatio, IntervalFromPairsPooledWithTheSession) {
  EXPECT_DOUBLE_EQ(pt::t95(1), 12.706);
  EXPECT_DOUBLE_EQ(pt::t95(1000), 1.96);
  const std::vector<double> d = {std::log(1.50), std::log(1.45), std::log(1.55)};
  const pt::PairedEstimate alone = pt::paired_ratio(d, {});
  EXPECT_NEAR(alone.ratio, 1.4992, 1e-3);
  EXPECT_EQ(alone.dof, 2);
  EXPECT_LT(alone.low, 1.50);
  EXPECT_GT(alone.low, 1.3);
  pt::PairedNoise session;
  for (int i = 0; i < 20; ++i) session.add_null(i % 2 ? 0.01 : -0.01);
  const pt::PairedEstimate pooled = pt::paired_ratio(d, session);
  EXPECT_EQ(pooled.dof, 22);
  EXPECT_GT(pooled.low, alone.low);  // more degrees of freedom, a smaller t: a narrower interval
  EXPECT_FALSE(pt::paired_ratio({std::log(1.2)}, {}).interval_known());
}

TEST(Interleaving, EveryCandidateRunFollowsARunOfItsReference) {
  Surface s = with_slow_first_step();
  s.pin_gain = 1.4;
  const Session o = tune(s, {range("pin_memory=0,1")}, "guided");
  // The trial numbers in the order the runs happened: the baseline alone, then (1, 2) pairs, the search's and
  // the head-to-head check's.
  std::vector<int> order;
  for (const auto& c : o.contexts) order.push_back(c.trial_index);
  EXPECT_EQ(order, (std::vector<int>{1, 1, 1, 1, 2, 1, 2, 1, 2, 1, 2, 1, 2})) << ::testing::PrintToString(order);
  // The same order in the session's run log, with phases and roles.
  const auto& runs = o.result.runs;
  ASSERT_EQ(runs.size(), order.size());
  for (size_t i = 0; i < runs.size(); ++i) {
    if (runs[i].role == "candidate") {
      ASSERT_GT(i, 0u);
      EXPECT_EQ(runs[i - 1].role, "reference");
      EXPECT_EQ(runs[i - 1].phase, runs[i].phase);
    }
  }
  EXPECT_EQ(runs.back().phase, "confirm");
  EXPECT_EQ(runs[0].phase, "baseline");
  // Every run's metric left the compile-like first step out.
  for (const auto& r : runs) EXPECT_EQ(r.steady.warmup_excluded, 1);
}

TEST(NoiseOnly, ALoadedBaselineAndASlowFirstStepAreNotAGain) {
  // channels_last does nothing on this surface (an identical candidate). The machine is loaded (x1.6 slower)
  // while the baseline's repeats run, and every run has a ~5 s first step of random length. Measured alone
  // and by the mean, the candidate looked 1.6x faster; interleaved, on the steady state and checked head to
  // head, it is no gain. Both strategies, 10 seeds.
  int claimed = 0, kept = 0;
  for (const char* strategy : {"guided", "grid"}) {
    for (unsigned seed = 1; seed <= 10; ++seed) {
      Surface s = with_slow_first_step();
      s.seed = seed;
      s.load = [](int run) { return run <= 3 ? 1.6 : 1.0; };
      const Session o = tune(s, {range("channels_last=0,1")}, strategy);
      ASSERT_GE(o.result.best, 0);
      kept += o.result.trials[o.result.best].config.at("channels_last") == "1";
      claimed += o.result.confirmation.claimed;
    }
  }
  EXPECT_EQ(kept, 0);
  EXPECT_EQ(claimed, 0);
}

TEST(NoiseOnly, ARealGainUnderTheSameConditionsIsConfirmedWithItsInterval) {
  int covered = 0;
  for (unsigned seed = 1; seed <= 10; ++seed) {
    Surface s = with_slow_first_step();
    s.seed = seed;
    s.load = [](int run) { return run <= 3 ? 1.6 : 1.0; };
    s.pin_gain = 1.3;
    const Session o = tune(s, {range("pin_memory=0,1")}, "guided");
    ASSERT_GE(o.result.best, 0);
    EXPECT_EQ(o.result.trials[o.result.best].config.at("pin_memory"), "1") << "seed " << seed;
    const pt::Confirmation& c = o.result.confirmation;
    EXPECT_TRUE(c.claimed) << "seed " << seed << " " << c.status;
    EXPECT_EQ(c.estimate.pairs, 3);
    EXPECT_GT(c.estimate.low, 1.0);
    Surface exact = s;
    exact.noise_rel_sd = 0;
    const double truth = exact.true_throughput({{"pin_memory", "1"}}) / exact.true_throughput({{"pin_memory", "0"}});
    covered += c.estimate.low <= truth && truth <= c.estimate.high;
  }
  EXPECT_GE(covered, 8);  // a 95% interval
}

TEST(NoiseOnly, AnUnconfirmedWinnerIsNotReported) {
  // The search's lucky draw is checked head to head and dropped: the result is the baseline, tune.json says
  // why and claims nothing.
  Surface s = with_slow_first_step();
  s.noise_rel_sd = 0;
  FakeRunner runner(s);
  // A runner wrapper: the candidate's search pair is fast (a lucky draw), its head-to-head pairs are not.
  class Lucky : public pt::TrialRunner {
   public:
    explicit Lucky(FakeRunner& inner) : inner_(inner) {}
    pt::Measurement run(const model::Config& c, const pt::RunContext& ctx) override {
      pt::Measurement m = inner_.run(c, ctx);
      if (ctx.trial_index == 2 && ctx.repeat < 2) m.throughput *= 1.5;
      return m;
    }
   private:
    FakeRunner& inner_;
  } lucky(runner);
  pt::TuneOptions opt;
  opt.now_s = [&runner] { return runner.now(); };
  pt::KnobSpace space = {range("channels_last=0,1")};
  pt::Tuner tuner(space, opt, lucky);
  const pt::TuneResult r = tuner.run();
  ASSERT_GE(r.baseline, 0);
  EXPECT_TRUE(r.trials[1].accepted);  // the search kept it ...
  EXPECT_EQ(r.best, r.baseline);      // ... the check did not
  EXPECT_EQ(r.confirmation.status, "not confirmed");
  EXPECT_FALSE(r.confirmation.claimed);
  pt::TuneReportContext ctx;
  ctx.strategy = "guided";
  const json doc = pt::tune_json(r, space, ctx);
  EXPECT_FALSE(doc["speedup"]["claimed"].get<bool>());
  EXPECT_DOUBLE_EQ(doc["speedup"]["value"].get<double>(), 1.0);
  EXPECT_NE(doc["change"]["summary"].get<std::string>().find("did not confirm"), std::string::npos);
  EXPECT_EQ(doc["confirmation"]["status"], "not confirmed");
}

TEST(SkippedKnobs, PinMemoryAmpAndGpuKnobsAreNotTriedWithoutAGpu) {
  Surface s = with_slow_first_step();
  s.no_gpu = true;
  s.bf16_native = 0;
  const pt::KnobSpace space = {range("num_workers=0,2"), range("pin_memory=0,1"), range("amp=off,bf16,fp16"),
                               range("tf32=0,1"), range("cudnn_benchmark=0,1")};
  for (const char* strategy : {"guided", "grid"}) {
    const Session o = tune(s, space, strategy);
    for (const auto& t : o.result.trials) {
      EXPECT_EQ(t.config.at("pin_memory"), "0") << strategy;
      EXPECT_EQ(t.config.at("amp"), "off") << strategy;
      EXPECT_EQ(t.config.at("tf32"), "0") << strategy;
      EXPECT_EQ(t.config.at("cudnn_benchmark"), "0") << strategy;
    }
    std::map<std::string, model::SkippedKnob> skipped;
    for (const auto& k : o.result.skipped) skipped[k.knob] = k;
    ASSERT_EQ(skipped.size(), 4u) << strategy;
    EXPECT_EQ(skipped["pin_memory"].values, std::vector<std::string>{"1"});
    EXPECT_EQ(skipped["amp"].values, (std::vector<std::string>{"bf16", "fp16"}));
    EXPECT_NE(skipped["pin_memory"].reason.find("without a GPU"), std::string::npos);
    EXPECT_NE(skipped["amp"].reason.find("AVX512-BF16"), std::string::npos);
    pt::TuneReportContext ctx;
    const json doc = pt::tune_json(o.result, space, ctx);
    EXPECT_EQ(doc["skipped_knobs"].size(), 4u);
  }
}

// issue 24: batch sizes whose predicted peak (static + batch x activations per sample, from the baseline's
// memory_budget) is above the limit (--max-memory, or the device's capacity, the smaller) are skipped with the
// prediction as the reason; the baseline's own value always runs; no budget or no limit skips nothing.
TEST(SkippedKnobs, BatchSizesPredictedNotToFitAreSkippedWithThePrediction) {
  const pt::KnobSpace space = {range("batch_size=32,64,512,2048")};
  const double mib = 1048576.0;
  const json budget = {{"memory_budget",
                        {{"device", "GPU"}, {"batch_size", 32}, {"parameter_bytes", 50 * 1048576},
                         {"static_bytes", 100 * 1048576}, {"activation_per_sample_bytes", 1048576},
                         {"capacity_bytes", 1024 * 1048576}, {"capacity_source", "facts.gpu.memory_total_bytes"}}}};
  auto fit = pt::memory_fit(pt_test::typed(budget), std::nullopt);
  ASSERT_TRUE(fit);
  EXPECT_DOUBLE_EQ(fit->limit_bytes, 1024 * mib);
  EXPECT_DOUBLE_EQ(fit->predicted_bytes(512), 612 * mib);
  auto skip = pt::batch_values_that_do_not_fit(space, *fit);
  ASSERT_TRUE(skip);
  EXPECT_EQ(skip->knob, "batch_size");
  EXPECT_EQ(skip->values, std::vector<std::string>{"2048"});
  EXPECT_NE(skip->reason.find("predicted not to fit in 1024.0 MiB"), std::string::npos) << skip->reason;
  EXPECT_NE(skip->reason.find("2048: 2148.0 MiB"), std::string::npos) << skip->reason;
  // A planted cap below the capacity: the cap decides, and 512 goes too; the baseline's 32 stays even when
  // predicted over (it is what was measured).
  fit = pt::memory_fit(pt_test::typed(budget), 500 * mib);
  ASSERT_TRUE(fit);
  EXPECT_EQ(pt::batch_values_that_do_not_fit(space, *fit)->values, (std::vector<std::string>{"512", "2048"}));
  fit = pt::memory_fit(pt_test::typed(budget), 110 * mib);
  EXPECT_EQ(pt::batch_values_that_do_not_fit(space, *fit)->values, (std::vector<std::string>{"64", "512", "2048"}));
  // A cap above the capacity: the capacity decides.
  EXPECT_DOUBLE_EQ(pt::memory_fit(pt_test::typed(budget), 4096 * mib)->limit_bytes, 1024 * mib);
  // No activations per sample, or no limit: no prediction.
  json no_act = budget;
  no_act["memory_budget"].erase("activation_per_sample_bytes");
  EXPECT_FALSE(pt::memory_fit(pt_test::typed(no_act), 500 * mib));
  json no_cap = budget;
  no_cap["memory_budget"].erase("capacity_bytes");
  EXPECT_FALSE(pt::memory_fit(pt_test::typed(no_cap), std::nullopt));
  EXPECT_FALSE(pt::memory_fit(pt_test::typed({{"facts", json::object()}}), 500 * mib));
  // Everything fits: nothing to skip.
  json big = budget;
  big["memory_budget"]["capacity_bytes"] = 4096LL * 1048576;
  EXPECT_FALSE(pt::batch_values_that_do_not_fit(space, *pt::memory_fit(pt_test::typed(big), std::nullopt)));
}

TEST(SkippedKnobs, Bf16StaysWhereTheCpuHasItAndNothingIsSkippedWhenTheFactsAreUnknown) {
  const pt::KnobSpace space = {range("pin_memory=0,1"), range("amp=off,bf16,fp16")};
  const json no_gpu_bf16 = {{"facts", {{"gpu", {{"available", false}}}, {"cpu", {{"bf16_native", true}}}}}};
  auto k = pt::skipped_values(space, pt_test::typed(no_gpu_bf16), false);  // the report's facts win over the host's flag
  ASSERT_EQ(k.size(), 2u);
  EXPECT_EQ(k[1].values, std::vector<std::string>{"fp16"});
  // No facts.cpu (the built-in workload): the host's flag decides bf16.
  const json no_cpu = {{"facts", {{"gpu", {{"available", false}}}, {"cpu", nullptr}}}};
  EXPECT_EQ(pt::skipped_values(space, pt_test::typed(no_cpu), false)[1].values, (std::vector<std::string>{"bf16", "fp16"}));
  EXPECT_EQ(pt::skipped_values(space, pt_test::typed(no_cpu), std::nullopt)[1].values, std::vector<std::string>{"fp16"});
  // A GPU, or nothing known about one: nothing is skipped.
  EXPECT_TRUE(pt::skipped_values(space, pt_test::typed({{"facts", {{"gpu", {{"available", true}}}}}}), false).empty());
  EXPECT_TRUE(pt::skipped_values(space, pt_test::typed({{"device", {{"name", "H100"}}}, {"facts", {{"gpu", {{"available", false}}}}}}),
                                 false).empty());
  EXPECT_TRUE(pt::skipped_values(space, pt_test::typed(json::object()), false).empty());
}

// The reasons tune.json's skipped_knobs gives, word for word: they come from the knob catalog's needs.
TEST(SkippedKnobs, ReasonsNameWhatEachValueNeeds) {
  const pt::KnobSpace space = {range("pin_memory=0,1"), range("amp=off,fp16,bf16"), range("tf32=0,1"),
                               range("cudnn_benchmark=0,1"), range("channels_last=0,1")};
  const json no_gpu = {{"facts", {{"gpu", {{"available", false}}}, {"cpu", {{"bf16_native", false}}}}}};
  const auto k = pt::skipped_values(space, pt_test::typed(no_gpu), std::nullopt);
  ASSERT_EQ(k.size(), 4u);
  const std::string why = "the baseline ran without a GPU (facts.gpu.available = false)";
  EXPECT_EQ(k[0].knob, "pin_memory");
  EXPECT_EQ(k[0].reason, "pinned host memory only speeds up copies to a GPU; " + why);
  EXPECT_EQ(k[1].knob, "amp");
  EXPECT_EQ(k[1].values, (std::vector<std::string>{"fp16", "bf16"}));
  EXPECT_EQ(k[1].reason, "fp16 autocast needs a GPU (" + why +
                             "); bf16 autocast is emulated on a CPU without AMX or AVX512-BF16 "
                             "(facts.cpu.bf16_native = false), slower than fp32");
  EXPECT_EQ(k[2].reason, "TF32 acts on the GPU only; " + why);
  EXPECT_EQ(k[3].reason, "the cuDNN autotuner acts on the GPU only; " + why);
  const json no_cpu_facts = {{"facts", {{"gpu", {{"available", false}}}}}};
  EXPECT_EQ(pt::skipped_values({range("amp=off,bf16")}, pt_test::typed(no_cpu_facts), false)[0].reason,
            "bf16 autocast is emulated on a CPU without AMX or AVX512-BF16 (this host's /proc/cpuinfo = false), "
            "slower than fp32");
}

// What the program lacks, from the shim's facts (issue 26): a nanoGPT-like program (no DataLoader, no convolution)
// gets no DataLoader knob and no channels_last; an optimizer without a fused implementation loses only `fused`;
// a {placeholder} knob and facts not written by the shim (the built-in workload) are never skipped this way.
TEST(SkippedKnobs, OverridesThatCannotActOnThisProgram) {
  const pt::KnobSpace space = {range("num_workers=0,2"), range("prefetch_factor=2,4"), range("channels_last=0,1"),
                               range("optimizer_impl=default,foreach,fused"), range("threads=0,1"),
                               range("compile=off,default")};
  const json lm = {{"facts",
                    {{"capture", {{"shim", true}}},
                     {"gpu", {{"available", true}}},
                     {"model", {{"class", "GPT"}, {"has_conv", false}}},
                     {"optimizer", {{"class", "RMSprop"}, {"takes_foreach", true}, {"takes_fused", false}}}}}};
  auto k = pt::skipped_values(space, pt_test::typed(lm), std::nullopt);
  std::map<std::string, model::SkippedKnob> by;
  for (const auto& s : k) by[s.knob] = s;
  ASSERT_EQ(k.size(), 4u) << k.size();
  EXPECT_EQ(by["num_workers"].values, std::vector<std::string>{"2"});
  EXPECT_EQ(by["num_workers"].reason, "the program iterates no torch DataLoader (facts.dataloader absent)");
  EXPECT_EQ(by["prefetch_factor"].values, std::vector<std::string>{"4"});
  EXPECT_EQ(by["channels_last"].reason, "the model has no convolution (facts.model.has_conv = false)");
  EXPECT_EQ(by["optimizer_impl"].values, std::vector<std::string>{"fused"});
  EXPECT_EQ(by["optimizer_impl"].reason, "RMSprop has no fused implementation (facts.optimizer.takes_fused = false)");
  EXPECT_EQ(by.count("threads"), 0u);
  EXPECT_EQ(by.count("compile"), 0u);
  // A placeholder is the program's own argument: kept.
  k = pt::skipped_values(space, pt_test::typed(lm), std::nullopt, {"num_workers"});
  for (const auto& s : k) EXPECT_NE(s.knob, "num_workers");
  // Facts without the shim (the built-in workload writes none of these): nothing skipped for the program.
  json workload = lm;
  workload["facts"]["capture"]["shim"] = false;
  EXPECT_TRUE(pt::skipped_values(space, pt_test::typed(workload), std::nullopt).empty());
  // Without a GPU, a knob the program already ruled out is listed once, and tf32 for the GPU.
  json cpu = lm;
  cpu["facts"]["gpu"]["available"] = false;
  k = pt::skipped_values({range("num_workers=0,2"), range("pin_memory=0,1"), range("tf32=0,1")}, pt_test::typed(cpu),
                         std::nullopt);
  ASSERT_EQ(k.size(), 3u);
  EXPECT_EQ(k[1].knob, "pin_memory");
  EXPECT_EQ(k[1].reason, "the program iterates no torch DataLoader (facts.dataloader absent)");
  EXPECT_EQ(k[2].knob, "tf32");
}

TEST(PartialResults, OnlyAfterAnInterruptNotAfterMaxTrials) {
  Surface s = with_slow_first_step();
  pt::TuneOptions opt;
  opt.max_trials = 2;
  const pt::KnobSpace space = {range("num_workers=0,1,2"), range("pin_memory=0,1")};
  const Session stopped = tune(s, space, "grid", opt);
  EXPECT_EQ(stopped.result.stop_reason, "max trials reached");
  EXPECT_FALSE(stopped.result.partial);
  pt::TuneReportContext ctx;
  const model::TuneReport doc = pt::tune_report(stopped.result, space, ctx);
  EXPECT_FALSE(model::to_json(doc)["status"]["partial"].get<bool>());
  EXPECT_EQ(profile_train::report::tune_html(doc).find("partial results"), std::string::npos);

  std::atomic<bool> stop{false};
  FakeRunner runner(s);
  runner.set_after_run([&](int n) {
    if (n == 5) stop = true;
  });
  opt = {};
  opt.interrupted = &stop;
  pt::Tuner tuner(space, opt, runner);
  const pt::TuneResult cut = tuner.run();
  EXPECT_TRUE(cut.partial);
  EXPECT_NE(profile_train::report::tune_html(pt::tune_report(cut, space, ctx)).find("partial results"), std::string::npos);
}

TEST(Inconclusive, AClearGainIsNotLostToANoiseEstimateFromOneDegreeOfFreedom) {
  // The flaky end-to-end case: --baseline-repeats 2 --repeats 1, the baseline's two runs 11% apart, a real
  // x2 gain. With one degree of freedom (t = 12.7) the bar was above x2; two more pairs settle it.
  Surface s = with_slow_first_step();
  s.noise_rel_sd = 0;
  s.load = [](int run) { return run == 2 ? 1.11 : 1.0; };  // a relative sd of 7.8%, as measured
  s.pin_gain = 2.2;
  pt::TuneOptions opt;
  opt.baseline_repeats = 2;
  opt.repeats = 1;
  const Session o = tune(s, {range("pin_memory=0,1")}, "guided", opt);
  ASSERT_GE(o.result.best, 0);
  EXPECT_EQ(o.result.trials[o.result.best].config.at("pin_memory"), "1");
  EXPECT_TRUE(o.result.confirmation.claimed) << o.result.confirmation.status;
  EXPECT_EQ(o.result.trials[1].pairs.size(), 3u + 3u);  // 1 + 2 in the search, 3 in the check
}
