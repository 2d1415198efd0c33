// The step breakdown: TensorBoard-plugin priority carving of each step into roles.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Breakdown (TensorBoard-plugin priority carving) ------------------------------------------------------
// Roles and their names, in carving priority: profile_train::Role, kBreakdownRoleNames (common/vocabulary.h).
struct StepBreakdown {
  TimeNs role_ns[kRoleCount] = {};  // carved time per role (Role order); sums to the step duration
  TimeNs total_ns = 0;
  TimeNs& operator[](Role r) { return role_ns[static_cast<size_t>(r)]; }
  TimeNs operator[](Role r) const { return role_ns[static_cast<size_t>(r)]; }
};
struct RoleRanges {
  Intervals role[kRoleCount - 1];  // merged intervals per role before carving (Role order; Role::kOther has none)
  Intervals& operator[](Role r) { return role[static_cast<size_t>(r)]; }
  const Intervals& operator[](Role r) const { return role[static_cast<size_t>(r)]; }
};
RoleRanges build_role_ranges(const trace::Trace& t, const TraceIndex& idx);
StepBreakdown carve_step(const RoleRanges& roles, TimeNs start, TimeNs end);

}  // namespace profile_train::analysis
