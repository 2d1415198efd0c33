// The job summary of a multi-rank run: one report per rank in, per-rank step figures, the slowest rank and by
// how much, the phase that makes it slow (input, compute, communication wait) and a straggler verdict out.
//
// In synchronous data parallelism every rank's step lasts as long as the slowest one: the fast ranks wait in
// their collectives. So a rank's *work* is its step minus its exposed communication (the time it waited), and
// the straggler is the rank with the most work, when it exceeds the other ranks' median by kStragglerShare
// of the step. Its phase is the one (data loading, or compute = kernels, copies and host work) with the largest
// excess over the other ranks' median. Inputs are report.json objects (analysis::build_report); never throws.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace profile_train::analysis {

inline constexpr double kStragglerShare = 0.10;  // excess work over the median rank, as a share of the step

struct RankReport {
  std::string file;         // where it came from (shown)
  nlohmann::json report;    // its report.json
};

// {ranks: [...], slowest_rank, slowdown, step_skew, communication_skew_ms, straggler {...} | null,
//  verdict: "straggler" | "balanced" | "unknown", summary}; see reports/REPORT_FORMAT.md "job summary".
nlohmann::json summarize_job(const std::vector<RankReport>& ranks);

}  // namespace profile_train::analysis
