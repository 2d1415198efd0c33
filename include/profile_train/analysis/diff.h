// The diff of two reports (before/after): step time, breakdown categories, verdict, and the kernels and copies
// that changed most, built over the typed reports into the diff document (model/diff.h); report/diff.h renders it.
#pragma once

#include <string>

#include "profile_train/model/diff.h"
#include "profile_train/model/report.h"

namespace profile_train::analysis {

// The diff of `a` and `b`. `label_a` / `label_b` name the inputs (usually their paths).
// Kernel times per step are top_kernels[].total_ms / steps.count (total_ms covers the analysis window);
// a kernel in only one report's top list is compared against null ("not in top list"), not against 0.
// The headline applies the neutral rule (model/diff.h: kNeutralFloor, kNeutralSpreads) to steps.mean_ms with
// each side's steps.stddev_ms; the comparability figures are each side's window and shared kernel time.
model::Diff diff_reports(const model::Report& a, const model::Report& b, const std::string& label_a,
                         const std::string& label_b, const model::DiffOptions& options = {});

}  // namespace profile_train::analysis
