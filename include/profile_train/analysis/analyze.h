// Trace -> report.json (see reports/REPORT_FORMAT.md). Small stateless analyzers, one per concern, and
// this facade that assembles the report. Owner: analysis component.
#pragma once

#include <vector>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

inline constexpr const char* kReportSchemaVersion = "1.5";

// steps.per_step keeps the first, the last and the slowest kPerStepKept steps each (at most 3x that many
// entries) unless all_steps: the report stays bounded for any number of steps (a million steps would give
// a report of hundreds of MB). The summary figures and steps.histogram always cover every step.
inline constexpr size_t kPerStepKept = 50;
inline constexpr size_t kStepHistogramBins = 32;
// gpu.top_kernels lists the kTopKernels kernels with the most time in the steps.
inline constexpr size_t kTopKernels = 15;

struct GpuSpec;  // analysis/efficiency.h

struct AnalysisOptions {
  bool all_steps = false;  // every step in steps.per_step (`--all-steps`)
  // `--gpu-spec FILE`: peak-table entries matched before the built-in ones (not owned; may be null).
  const std::vector<GpuSpec>* gpu_specs = nullptr;
  // `--device NAME`: device.name when the trace does not record it (noted in source.notes).
  std::optional<std::string> device_name;
};

// Builds the report for one trace: every section but `recommendations` (empty) and `plan` (unset), which the
// rules engine fills. Deterministic: the same trace gives the same report.
model::Report build_typed_report(const trace::Trace& trace, const AnalysisOptions& options = {});

}  // namespace profile_train::analysis
