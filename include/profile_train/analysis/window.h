// What the profiled window is, before any diagnosis is read from it (reports/REPORT_FORMAT.md "Absent is not zero",
// "Cold windows", "Training or inference"):
//   - what the capture traced: a machine with a GPU whose steps hold no GPU activity is a capture that lacks it,
//     unless something in the trace positively shows training on the CPU;
//   - training or inference: backward and optimizer evidence;
//   - a cold window: one step or none with first-call signs (module loading, context and allocator set-up,
//     compilation, launch calls far above their steady cost).
// One analyzer of build_typed_report; pure functions of the trace and what the report holds so far.
#pragma once

#include <optional>

#include "profile_train/analysis/intervals.h"
#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

// The capture section (model::Capture). `report` must hold facts, device and operators (cpu_matmul_conv_fraction).
model::Capture capture_section(const trace::Trace& t, const TraceIndex& idx, const model::Report& report);

// Training when the trace shows a backward pass or an optimizer step (annotations, autograd operators, backward
// kernels); inference when it shows a forward pass (at least kForwardEvidence forward compute operators, or as
// many matrix kernels in an operator-less trace of 50+ kernels) and none of those; unknown otherwise (a trace of
// collectives or allocations alone says nothing).
inline constexpr int64_t kForwardEvidence = 3;
model::Workload detect_workload(const trace::Trace& t, const TraceIndex& idx);

// Launch calls above this are far from their steady cost (HTA's runtime-call outlier line is 50 us; a launch
// costs 3-7 us, PRODUCT.md): their time above the median launch is first-call work (lazy module loading).
inline constexpr double kColdLaunchUs = 50.0;
// A window of one step or none is warm-up when first-call work takes at least this share of it.
inline constexpr double kColdShare = 0.10;
// The cold-window finding, or nullopt for a warm one. `steps` are all the steps found (not only the steady ones);
// `busy` the merged kernel | copy | memset intervals of the main device: a slow launch while the GPU is busy is
// back-pressure from a full launch queue, not first-call work.
std::optional<model::ColdWindow> cold_window(const trace::Trace& t, const TraceIndex& idx, const StepInfo& steps,
                                             const Intervals& busy);

}  // namespace profile_train::analysis
