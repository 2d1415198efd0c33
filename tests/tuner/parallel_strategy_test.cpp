// The strategies with a runner that runs several measurements at once (the Ray executor's shape): the
// independent measurements go out in batches (the baseline's repeats, the grid's next points, the candidate
// values of the knob guided explores), and the decisions, hence the best configuration, stay those of the
// sequential search.
#include <gtest/gtest.h>

#include "profile_train/tuner/tuner.h"
#include "synthetic_surface.h"

namespace model = profile_train::model;
namespace pt = profile_train::tuner;
using pt_test::FakeRunner;
using pt_test::Surface;

namespace {

class ParallelFake : public FakeRunner {
 public:
  ParallelFake(Surface s, int parallel) : FakeRunner(std::move(s)), parallel_(parallel) {}
  std::vector<pt::Measurement> run_batch(const std::vector<std::pair<model::Config, pt::RunContext>>& items) override {
    batches.push_back(static_cast<int>(items.size()));
    return TrialRunner::run_batch(items);
  }
  int parallelism() const override { return parallel_; }
  std::vector<int> batches;

 private:
  int parallel_;
};

using pt_test::range;

pt::KnobSpace space() { return {range("num_workers=0,1,2"), range("amp=off,bf16"), range("batch_size=16,32,64,128")}; }

Surface input_bound(unsigned seed) {
  Surface s;
  s.cores = 2;
  s.load_us_per_sample = 900;
  s.compute_us_per_sample = 300;
  s.overhead_ms = 3;
  s.amp_bf16_speed = 0.8;
  s.noise_rel_sd = 0.01;
  s.seed = seed;
  return s;
}

Surface compute_bound(unsigned seed) {
  Surface s = input_bound(seed);
  s.load_us_per_sample = 20;
  s.compute_us_per_sample = 50;
  s.overhead_ms = 6;
  s.amp_bf16_speed = 1.8;
  return s;
}

struct Sweep {
  pt::TuneResult result;
  std::vector<int> batches;
  model::Config best() const { return result.trials.at(result.best).config; }
};

Sweep tune(const Surface& s, const std::string& strategy, int parallel) {
  ParallelFake runner(s, parallel);
  pt::TuneOptions opt;
  opt.strategy = strategy;
  opt.now_s = [&runner] { return runner.now(); };
  pt::Tuner tuner(space(), opt, runner);
  Sweep r;
  r.result = tuner.run();
  r.batches = runner.batches;
  return r;
}

}  // namespace

TEST(ParallelStrategies, OneAtATimeRunnerNeverBatches) {
  const Sweep r = tune(input_bound(1), "guided", 1);
  EXPECT_TRUE(r.batches.empty());
}

TEST(ParallelStrategies, GuidedBatchesButKeepsTheSequentialBest) {
  for (unsigned seed : {1u, 2u, 3u}) {
    for (bool input : {true, false}) {
      const Surface s = input ? input_bound(seed) : compute_bound(seed);
      const Sweep seq = tune(s, "guided", 1);
      const Sweep par = tune(s, "guided", 2);
      ASSERT_GE(par.result.best, 0);
      EXPECT_EQ(pt::config_key(par.best()), pt::config_key(seq.best())) << "seed " << seed << " input " << input;
      ASSERT_FALSE(par.batches.empty());
      EXPECT_EQ(par.batches.front(), 3) << "the baseline's 3 repeats go out together";
      // Candidate values of the explored knob with their repeats: 2 values x 2 repeats at --parallel 2.
      EXPECT_NE(std::find(par.batches.begin(), par.batches.end(), 4), par.batches.end());
      EXPECT_TRUE(par.result.complete);
    }
  }
}

TEST(ParallelStrategies, GridBatchesUpToParallelPointsAndFindsTheSameBest) {
  // Without noise: a batch measures repeats an early stop would skip, so noisy draws come in another order.
  Surface s = input_bound(1);
  s.noise_rel_sd = 0;
  const Sweep seq = tune(s, "grid", 1);
  const Sweep par = tune(s, "grid", 3);
  ASSERT_EQ(par.result.trials.size(), seq.result.trials.size());
  EXPECT_EQ(pt::config_key(par.best()), pt::config_key(seq.best()));
  // The baseline's 3 repeats at once, then 3 points at a time, each of their 2 runs paired with a run of the
  // baseline (ABAB: the pair runs side by side): 3 x (2 + 2) measurements per batch; 23 points left: 8 batches.
  ASSERT_GE(par.batches.size(), 2u);
  EXPECT_EQ(par.batches[0], 3);
  EXPECT_EQ(par.batches[1], 3 * (2 + 2));
  EXPECT_LE(par.batches.size(), 9u);
  for (size_t i = 0; i < par.result.trials.size(); ++i) {
    EXPECT_EQ(par.result.trials[i].index, static_cast<int>(i) + 1);
    EXPECT_EQ(pt::config_key(par.result.trials[i].config), pt::config_key(seq.result.trials[i].config)) << i;
  }
}
