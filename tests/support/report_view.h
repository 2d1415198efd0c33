// Tests only: report.json's JSON of an analyzed trace (model::to_json of analysis::build_typed_report), the view
// the rules evaluate over. Kept out of pt_analysis so that the analysis room does not include the report
// model's JSON (src/ARCHITECTURE.md); linked through pt_test_support (tests/CMakeLists.txt).
#pragma once

#include <nlohmann/json.hpp>

#include "profile_train/analysis/analyze.h"
#include "profile_train/model/report_json.h"

namespace profile_train::analysis {

inline nlohmann::json build_report(const trace::Trace& trace, const AnalysisOptions& options = {}) {
  return model::to_json(build_typed_report(trace, options));
}

}  // namespace profile_train::analysis
