// report.json's steps, breakdown, breakdown_ms and phases sections (private to the analysis component).
#pragma once

#include <optional>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "profile_train/model/report.h"

namespace profile_train::analysis {

struct StepsSection {
  model::Steps steps;
  model::RoleValues breakdown, breakdown_ms;
  std::optional<model::Phases> phases;
  std::vector<Step> steady;  // the steady-state steps: the windows every other section is computed over
  // The main training thread's phase ranges (forward, backward, optimizer, data wait); null when the trace has
  // none. The memory section places its peak in them.
  std::optional<PhaseIndex> phase_ranges;
  // Backward ranges per optimizer-bounded step (median), when the steps are optimizer-bounded, hold backward
  // ranges and one optimizer step each; 0 otherwise.
  int64_t accumulation = 0;
};

// `kern_main`: merged kernel intervals of the main device (for the per-step GPU utilization).
StepsSection steps_section(const trace::Trace& t, const TraceIndex& idx, const StepInfo& si, const RoleRanges& roles,
                           const Intervals& kern_main, const AnalysisOptions& options);
// The same with the main thread's loop ranges given (loop_ranges(t, si.main_pid, si.main_tid), found beside the
// steps): the rest reads no event.
StepsSection steps_section(const TraceIndex& idx, const StepInfo& si, const LoopRanges& loop, const RoleRanges& roles,
                           const Intervals& kern_main, const AnalysisOptions& options);

}  // namespace profile_train::analysis
