// What the host does while the GPU idles.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- What the host does while the GPU idles ------------------------------------------------------------------
// The GPU-idle part of the step windows (no kernel, copy or memset on `device`), carved by host activity in
// this priority: allocator calls, memcpy API, synchronization, kernel launches, other runtime/driver calls,
// DataLoader wait, CPU operators and annotations, other. Times are summed over the windows; they add up to
// `idle_ns`.
struct HostIdleActivity {
  TimeNs idle_ns = 0;
  TimeNs allocator = 0, memcpy_api = 0, sync = 0, launch = 0, other_runtime = 0, dataloader = 0, operators = 0,
         other = 0;
};
// `busy`: merged GPU busy intervals of the device; `data_ranges` / `cpu_ranges`: the breakdown's data_loading
// and cpu role ranges (merged).
HostIdleActivity host_idle_activity(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows,
                                    const Intervals& busy, const Intervals& data_ranges, const Intervals& cpu_ranges);

}  // namespace profile_train::analysis
