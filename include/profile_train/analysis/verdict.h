// Facts (recorded and inferred) and the verdict over a complete report.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <nlohmann/json.hpp>

#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Facts and verdict ------------------------------------------------------------------------------------
// Recorded facts (trace.facts) merged over inferred ones; `facts.inferred` lists inferred dotted paths.
nlohmann::json infer_facts(const trace::Trace& t, const TraceIndex& idx);

// Picks the bottleneck from an otherwise complete report (reads breakdown, gpu, host, communication,
// source, steps, data_quality and facts.gpu.used).
model::Verdict decide_verdict(const model::Report& report);

}  // namespace profile_train::analysis
