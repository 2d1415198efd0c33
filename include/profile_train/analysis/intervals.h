// Interval algebra over half-open [start, end) nanosecond ranges.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <vector>

#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Interval algebra (half-open [start, end)) -------------------------------------------------------------
struct Interval {
  TimeNs start = 0;
  TimeNs end = 0;
};
using Intervals = std::vector<Interval>;

Intervals merge_intervals(Intervals v);                              // sorted, non-overlapping, non-empty
Intervals intersect_intervals(const Intervals& a, const Intervals& b);  // inputs merged
Intervals subtract_intervals(const Intervals& a, const Intervals& b);   // a \ b, inputs merged
Intervals clip_intervals(const Intervals& merged, TimeNs start, TimeNs end);
TimeNs total_length(const Intervals& v);

}  // namespace profile_train::analysis
