// The tuner's statistics: the steady-state step time of one run, and paired (interleaved) comparisons of two
// configurations with an interval. Pure functions. Owner: tuner component.
//
// Steady state of one run (steady_state_of): the 10%-trimmed mean of the per-step times after the warm-up.
// Warm-up = the leading steps (at most half of them) longer than median + max(3 x 1.4826 x MAD, 25% of the
// median), or than twice the 90th percentile if that is lower (steps that alternate fast / slow make the MAD
// as large as the gap), all taken over all steps: a compile / lazy-initialization / worker start-up step is
// several times the median and is dropped; an ordinary first step is kept. Of the remaining steps the
// shortest and the longest 10% (rounded up, at least one each from 3 steps on) are left out and the rest
// averaged: an odd slow step (a checkpoint, a loaded moment) does not count, while steps that are regularly
// slow do, because they cost throughput. Not the median: with DataLoader workers the steps often alternate
// fast / slow (2.6, 36.8, 9.2, 26.8 ms ... as two workers deliver), where the median (25.7 ms) is far from
// the time per step (20.6 ms) and would understate the workers' gain (x1.55 instead of x2.0). When the
// report lists only part of its steps (more than 150 of them), steps.median_ms stands in (the list keeps
// the slowest steps, a biased sample); without a per-step list, steps.mean_ms.
//
// Paired comparison (paired_ratio): run i of the candidate immediately follows run i of its reference (ABAB),
// so a slow period of the machine hits both. d_i = ln(candidate_i / reference_i); the ratio is exp(mean d),
// its 95% interval exp(mean d +- t(dof) x s / sqrt(n)), s pooling the pairs' own spread with the session's
// paired noise (the spread of other paired comparisons and of consecutive repeats of one configuration).
#pragma once

#include <string>
#include <vector>

#include "profile_train/model/report.h"

namespace profile_train::tuner {

struct SteadyState {
  double step_ms = 0;               // the steady-state step time; 0 when the report has none
  std::string method;               // "trimmed mean of post-warm-up steps" | "steps.median_ms ..." | "steps.mean_ms ..."
  int steps = 0;                    // steps the figure is taken over
  int warmup_excluded = 0;          // leading steps left out as warm-up
  std::vector<double> excluded_ms;  // their durations
  double warmup_threshold_ms = 0;   // a leading step above this counts as warm-up (0 when not computed)
  int trimmed = 0;                  // post-warm-up steps left out of the trimmed mean (both ends together)
};
SteadyState steady_state_of(const model::Report& report);

// Two-sided 95% Student-t quantile (1.96 for dof > 120; 0 when dof <= 0).
double t95(int dof);

// Noise of paired comparisons accumulated over a session: sum of squared residuals of d and its degrees of
// freedom.
struct PairedNoise {
  double sum_sq = 0;
  int dof = 0;
  void add_group(const std::vector<double>& d);   // residuals around the group's mean: n - 1 dof
  void add_null(double d) { sum_sq += d * d; ++dof; }  // a difference whose true mean is 0 (same config twice)
  double sd() const;                               // 0 when dof == 0
};

struct PairedEstimate {
  int pairs = 0;
  double ratio = 0;      // exp(mean d): candidate / reference
  double low = 0, high = 0;  // 95% interval of the ratio (low == high == ratio when dof == 0)
  double sd = 0;         // pooled sd of d used for the interval
  int dof = 0;           // its degrees of freedom
  bool interval_known() const { return dof > 0; }
};
// `d` = ln(candidate / reference) of each pair; `session` = the session's paired noise, not including d.
PairedEstimate paired_ratio(const std::vector<double>& d, const PairedNoise& session);

}  // namespace profile_train::tuner
