// What the section builders of the report share (private to the analysis component): the per-trace working
// state and the report's number conventions.
#pragma once

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/model/report.h"

namespace profile_train::analysis {

// Fixed precision keeps reports byte-stable and readable (fractions to 1e-6, milliseconds to 1 ns).
inline double r6(double x) { return std::isfinite(x) ? std::round(x * 1e6) / 1e6 : 0.0; }
// num / den rounded, or null when there is nothing to divide by.
inline std::optional<double> frac_or_null(double num, double den) {
  return den > 0 ? std::optional<double>(r6(num / den)) : std::nullopt;
}
inline double ms(TimeNs ns) { return static_cast<double>(ns) / 1e6; }

inline double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline int32_t device_of(const trace::Event& e) { return e.device >= 0 ? e.device : static_cast<int32_t>(e.pid); }

// Per-trace working state shared by the section builders.
struct Ctx {
  const trace::Trace& t;
  const TraceIndex& idx;
  const StepInfo& si;  // the steady-state steps
  Intervals windows;   // merged step windows
  Intervals busy;      // merged kernel | copy | memset intervals of the main device (whole trace)
  Intervals optimizer; // merged Optimizer.step host ranges (Kineto annotations or the shim's NVTX ranges)
  TimeNs total_ns = 0; // sum of step durations
  double nsteps = 0;
  bool in_window(TimeNs ts) const {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts, [](TimeNs v, const Interval& w) { return v < w.end; });
    return it != windows.end() && it->start <= ts;
  }
  TimeNs clipped(const Intervals& merged) const { return total_length(intersect_intervals(merged, windows)); }
};

// The sections (each in its own file). `missing` collects source.missing entries.
model::Gpu gpu_section(const Ctx& c, std::set<std::string>& missing);
model::Host host_section(const Ctx& c, const RoleRanges& roles);
model::Communication communication_section(const Ctx& c, const RoleRanges& roles);
model::Operators operators_section(const Ctx& c, const OperatorAttribution& a);

}  // namespace profile_train::analysis
