// Phases of a step (forward / backward / optimizer / data wait), per-step selection and histogram.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <cstddef>
#include <optional>
#include <vector>

#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Phases (forward / backward / optimizer / data wait) ---------------------------------------------------
// Host time of a step on the training thread, carved in the order optimizer (Optimizer.step and zero_grad),
// backward, forward, data_wait (DataLoader fetches); `other` is the rest of the step window. Sums to the window.
// Phases and their names: profile_train::Phase, kPhaseNames (common/vocabulary.h).
struct PhaseSplit {
  TimeNs phase_ns[kPhaseCount] = {};
  TimeNs total_ns = 0;
  TimeNs& operator[](Phase p) { return phase_ns[static_cast<size_t>(p)]; }
  TimeNs operator[](Phase p) const { return phase_ns[static_cast<size_t>(p)]; }
};
// Whether `r` has the ranges a phase split needs (a forward, backward or optimizer range).
bool has_phases(const LoopRanges& r);
// The merged ranges of each phase but `other` (the backward is `autograd` when the trace has no
// "## backward ##" ranges), built once per trace.
struct PhaseIndex {
  Intervals ranges[kPhaseCount - 1];  // Phase order; Phase::kOther has none
  Intervals& operator[](Phase p) { return ranges[static_cast<size_t>(p)]; }
  const Intervals& operator[](Phase p) const { return ranges[static_cast<size_t>(p)]; }
};
PhaseIndex phase_index(const LoopRanges& r);
PhaseSplit phase_split(const PhaseIndex& x, TimeNs start, TimeNs end);

// Indices (ascending) of the steps that steps.per_step keeps: the first, the last and the slowest `keep`
// steps (durations `dur_ms`, in step order; equal durations favour the earlier step); every index when there
// are no more than 3 x keep steps.
std::vector<size_t> bounded_step_selection(const std::vector<double>& dur_ms, size_t keep);

// steps.histogram: {min_ms, max_ms, bin_width_ms, counts[bins]} of `dur_ms` in equal bins from min to max
// (the last bin includes max; everything in bin 0 when all durations are equal); nullopt when empty.
std::optional<model::StepHistogram> step_histogram(const std::vector<double>& dur_ms, size_t bins);

}  // namespace profile_train::analysis
