// The quality guard of `tune`: a faster step is no win if the model learns worse. The Python shim records the
// training loss (the scalar tensor backward() is called on) of every step (facts.loss); a trial's loss over its
// measured steps is compared with the baseline's, at the same number of samples seen, with the baseline's own
// run-to-run spread as the noise. Pure functions. Owner: tuner component.
//
// The comparison (compare_loss):
//  - x = samples seen at the end of a step (step index x batch size) when both batch sizes are known and differ,
//    else the step index. Each baseline run is a curve over x (linear interpolation between its steps); the
//    baseline's reference is the mean of its runs' curves over the range all of them cover.
//  - The trial's points: its measured steps (after the capture's warm-up) whose x lies in that range (all its
//    recorded steps in the range when none of the measured ones does). Its difference D = the mean over its
//    runs and points of (trial loss - baseline reference); positive = worse (a loss is minimized).
//  - Noise: the baseline runs' own D_r over the same points (each run against the mean of all), their sample
//    standard deviation s with n_b - 1 degrees of freedom; the bar is
//    max(k x t95(dof)/1.96 x s x sqrt(1/n_t + 1/n_b), floor x |reference mean|) with k = 3 (one-sided, few
//    false alarms) and floor = 5% (deterministic programs repeat their loss exactly: s = 0, while harmless
//    changes such as bf16 autocast move it by a fraction of a percent). With one baseline run s is unknown and
//    the floor alone is the bar; with two, t95(1) = 12.7 widens it.
//  - A non-finite loss (NaN, inf) in a trial whose baseline stayed finite changes the loss, whatever the bar.
#pragma once

#include <string>
#include <vector>

#include "profile_train/model/report.h"

namespace profile_train::tuner {

// The loss one run recorded (facts.loss).
struct LossCurve {
  bool recorded = false;          // the shim saw at least one scalar loss
  std::vector<long long> steps;   // 1-based step indices, ascending
  std::vector<double> values;     // the step's loss (the mean over its backward calls); NaN / inf kept
  long long warmup_steps = 0;     // facts.capture.warmup_steps: steps up to this one are warm-up
  double samples_per_step = 0;    // the batch size (0: unknown)
  bool finite() const;            // every value finite
};
// facts.loss of `report` (recorded false without it); `batch` = the run's batch size (0: unknown).
LossCurve loss_from_report(const model::Report& report, long long batch);

struct LossGuardOptions {
  double k = 3.0;                 // standard errors of the baseline's spread
  double floor_relative = 0.05;   // the smallest bar, as a fraction of the baseline's mean loss
};

struct LossComparison {
  // "not recorded" (no scalar loss: the guard does not block), "not compared" (see note), "same loss",
  // "changes the loss"
  std::string status = "not recorded";
  bool changes = false;           // status == "changes the loss"
  bool non_finite = false;        // the trial's loss went NaN / inf
  std::string compared_by;        // "samples seen" | "step"
  int points = 0;                 // trial steps compared
  int baseline_runs = 0, trial_runs = 0;
  double baseline_mean = 0;       // the baseline's reference at the trial's points, averaged
  double trial_mean = 0;          // the trial's loss at its points, averaged over its runs
  double difference = 0;          // trial_mean - baseline_mean (positive = worse)
  double tolerance = 0;           // the bar (see above)
  double spread = 0;              // sd of the baseline runs' own differences (0 with one run)
  int spread_dof = 0;
  std::string note;               // why not compared, the spread's source, the batch-size caveat
};
LossComparison compare_loss(const std::vector<LossCurve>& baseline, const std::vector<LossCurve>& trial,
                            const LossGuardOptions& options = {});

}  // namespace profile_train::tuner
