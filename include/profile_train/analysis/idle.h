// GPU idle time per stream (the HTA v0.5.0 definition).
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <cstdint>
#include <vector>

#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Idle time (HTA v0.5.0 definition) --------------------------------------------------------------------
struct IdleBreakdown {
  TimeNs host_wait = 0, kernel_wait = 0, other = 0;  // summed per-stream gaps
  TimeNs total() const { return host_wait + kernel_wait + other; }
};
// Gaps before each GPU activity on each stream of `device`, for activities starting inside the windows.
// host_wait: the activity's runtime call started after the previous activity ended; kernel_wait: gap shorter
// than `kernel_wait_ns`; other: the rest.
IdleBreakdown idle_breakdown(const trace::Trace& t, const TraceIndex& idx, int32_t device,
                             const std::vector<Step>& windows, TimeNs kernel_wait_ns = 30'000);

}  // namespace profile_train::analysis
