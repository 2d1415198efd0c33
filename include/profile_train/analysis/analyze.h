// Trace -> report.json (see reports/REPORT_FORMAT.md). Small stateless analyzers, one per concern, and
// this facade that assembles the report. Owner: analysis component.
#pragma once

#include <nlohmann/json.hpp>

#include "profile_train/trace/model.h"

namespace profile_train::analysis {

inline constexpr const char* kReportSchemaVersion = "1.1";

struct AnalysisOptions {
  int top_kernels = 15;
};

// Builds the report for one trace. `recommendations` is left an empty array (the rules engine fills it).
// Deterministic: the same trace gives byte-identical JSON.
nlohmann::json build_report(const trace::Trace& trace, const AnalysisOptions& options = {});

}  // namespace profile_train::analysis
