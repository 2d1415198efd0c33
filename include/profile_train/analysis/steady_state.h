// The steady state: slow first steps and outliers set apart (median/MAD).
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <cstddef>
#include <vector>

#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Steady state -------------------------------------------------------------------------------------------
// Which steps the summary figures cover (reports/REPORT_FORMAT.md, "Steady state"). With m the median and
// s = 1.4826 x MAD of the step durations (a robust standard deviation), a step is slow when it lasts more than
// m + 5 s (any amount above m when MAD is 0) and at least R x m. Warm-up: the run of slow steps (R =
// kWarmupRatio) from step 0, each less than kSpikeGap x the one before it, each at least kWarmupGap x the
// slowest later step that is not an outlier.
// Outliers: the slowest k later slow steps (R = kSpikeRatio), k at most kMaxSpikeShare of the steps, the fastest
// of them lasting at least kSpikeGap x the slowest other step (a second, rare kind of step; the largest such k;
// a lesser spike stays in, and a long tail of slow steps with no such gap stays in). At most half the steps are warm-up; needs >= 3 steps.
inline constexpr double kWarmupRatio = 1.5;
inline constexpr double kWarmupGap = 1.25;
inline constexpr double kSpikeRatio = 3.0;
inline constexpr double kSpikeGap = 2.0;
inline constexpr double kMaxSpikeShare = 0.2;
struct Exclusion {
  size_t index = 0;
  const char* reason = "";  // "warm-up" | "outlier"
};
struct SteadyState {
  std::vector<size_t> kept;           // step indices, ascending
  std::vector<Exclusion> excluded;    // ascending by index
  double median_ms = 0, mad_ms = 0;   // over all steps
};
SteadyState steady_state(const std::vector<double>& dur_ms);

}  // namespace profile_train::analysis
