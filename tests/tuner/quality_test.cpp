// The quality guard's comparison (quality.h): pure functions over loss curves.
#include <cmath>
#include <vector>

#include <gtest/gtest.h>

#include "profile_train/tuner/quality.h"

namespace pt = profile_train::tuner;

namespace {

// A curve of `n` steps, loss(step) = f(samples seen), batch `batch`, the first `warmup` steps warm-up.
template <typename F>
pt::LossCurve curve(int n, double batch, F f, long long warmup = 0) {
  pt::LossCurve c;
  c.recorded = true;
  c.samples_per_step = batch;
  c.warmup_steps = warmup;
  for (int k = 1; k <= n; ++k) {
    c.steps.push_back(k);
    c.values.push_back(f(k * batch));
  }
  return c;
}

double decay(double samples) { return 2.0 * std::exp(-samples / 200.0) + 0.5; }

}  // namespace

TEST(LossGuard, AnIdenticalDeterministicLossIsTheSame) {
  const auto b = curve(20, 16, decay);
  const pt::LossComparison l = pt::compare_loss({b, b, b}, {b});
  EXPECT_EQ(l.status, "same loss");
  EXPECT_FALSE(l.changes);
  EXPECT_EQ(l.compared_by, "step");
  EXPECT_NEAR(l.spread, 0.0, 1e-12);
  EXPECT_EQ(l.spread_dof, 2);
  EXPECT_NEAR(l.difference, 0.0, 1e-12);
  EXPECT_GT(l.tolerance, 0.0);  // the 5% floor
  EXPECT_EQ(l.points, 20);
}

TEST(LossGuard, ASmallChangeBelowTheFloorIsNotFlaggedALargeOneIs) {
  const auto b = curve(20, 16, decay);
  const auto near = curve(20, 16, [](double s) { return decay(s) * 1.01; });  // bf16-like: +1%
  const auto worse = curve(20, 16, [](double s) { return decay(s) * 1.3; });
  EXPECT_FALSE(pt::compare_loss({b, b, b}, {near}).changes);
  const pt::LossComparison l = pt::compare_loss({b, b, b}, {worse});
  EXPECT_TRUE(l.changes);
  EXPECT_EQ(l.status, "changes the loss");
  EXPECT_GT(l.difference, l.tolerance);
  // A lower loss is not "worse": not flagged.
  EXPECT_FALSE(pt::compare_loss({b, b}, {curve(20, 16, [](double s) { return decay(s) * 0.5; })}).changes);
}

TEST(LossGuard, TheBaselinesOwnSpreadIsTheNoise) {
  // Baseline runs that differ by +-10% run to run: a trial 12% above their mean is within the spread.
  std::vector<pt::LossCurve> base;
  for (double m : {0.9, 1.0, 1.1, 0.95, 1.05}) base.push_back(curve(20, 16, [m](double s) { return decay(s) * m; }));
  const auto trial = curve(20, 16, [](double s) { return decay(s) * 1.12; });
  const pt::LossComparison l = pt::compare_loss(base, {trial});
  EXPECT_EQ(l.spread_dof, 4);
  EXPECT_GT(l.spread, 0.0);
  EXPECT_FALSE(l.changes) << l.difference << " bar " << l.tolerance;
  // Far outside it: flagged.
  EXPECT_TRUE(pt::compare_loss(base, {curve(20, 16, [](double s) { return decay(s) * 2.0; })}).changes);
}

TEST(LossGuard, NonFiniteLossChangesTheLossUnlessTheBaselinesDidToo) {
  const auto b = curve(10, 16, decay);
  auto nan = b;
  nan.values[7] = NAN;
  const pt::LossComparison l = pt::compare_loss({b, b}, {nan});
  EXPECT_TRUE(l.changes);
  EXPECT_TRUE(l.non_finite);
  EXPECT_EQ(pt::compare_loss({nan}, {nan}).status, "not compared");
  EXPECT_FALSE(pt::compare_loss({nan}, {nan}).changes);
}

TEST(LossGuard, NoScalarLossDoesNotBlock) {
  const pt::LossComparison l = pt::compare_loss({curve(10, 16, decay)}, {pt::LossCurve{}});
  EXPECT_EQ(l.status, "not recorded");
  EXPECT_FALSE(l.changes);
  EXPECT_FALSE(pt::compare_loss({pt::LossCurve{}}, {curve(10, 16, decay)}).changes);
}

TEST(LossGuard, ABatchSizeChangeIsComparedPerSampleSeenWithTheLearningRateCaveat) {
  // The same loss per sample seen at twice the batch: the same loss (per step it would look much better).
  const auto b = curve(24, 16, decay);
  const auto big = curve(24, 32, decay, 2);
  const pt::LossComparison same = pt::compare_loss({b, b}, {big});
  EXPECT_EQ(same.compared_by, "samples seen");
  EXPECT_FALSE(same.changes);
  EXPECT_NEAR(same.difference, 0.0, 1e-9);
  EXPECT_EQ(same.points, 10);  // measured steps 3..12 of the trial lie within the baseline's 16..384 samples
  EXPECT_NE(same.note.find("learning rate"), std::string::npos);
  // Slower per sample seen (fewer updates per sample at the same rate): changes the loss.
  const auto slower = curve(24, 32, [](double s) { return decay(s / 2); });
  EXPECT_TRUE(pt::compare_loss({b, b}, {slower}).changes);
}

TEST(LossGuard, OneBaselineRunUsesTheFloorAndSaysSo) {
  const auto b = curve(10, 16, decay);
  const pt::LossComparison l = pt::compare_loss({b}, {curve(10, 16, [](double s) { return decay(s) * 1.04; })});
  EXPECT_EQ(l.spread_dof, 0);
  EXPECT_FALSE(l.changes);
  EXPECT_NE(l.note.find("one baseline run"), std::string::npos);
}
