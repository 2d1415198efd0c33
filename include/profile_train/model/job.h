// The job summary of a multi-rank run: one report per rank in, per-rank step figures, the slowest rank and by
// how much, the phase that makes it slow (input, compute, communication wait) and a straggler verdict out.
//
// In synchronous data parallelism every rank's step lasts as long as the slowest one: the fast ranks wait in
// their collectives. So a rank's *work* is its step minus its exposed communication (the time it waited), and
// the straggler is the rank with the most work, when it exceeds the other ranks' median by kStragglerShare
// of the step. Its phase is the one (data loading, or compute = kernels, copies and host work) with the largest
// excess over the other ranks' median. Inputs are typed reports (analysis::build_typed_report, after the rules);
// analysis/job.h summarizes them; job.json is model::to_json(JobSummary) (reports/REPORT_FORMAT.md "job summary").
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/model/report.h"

namespace profile_train::model {

inline constexpr double kStragglerShare = 0.10;  // excess work over the median rank, as a share of the step

// job.json "verdict" and straggler "phase" values, each with its one name table.
enum class JobVerdict : unsigned char { kStraggler, kBalanced, kUnknown };
inline constexpr std::array<std::string_view, 3> kJobVerdictNames = {"straggler", "balanced", "unknown"};
inline constexpr std::string_view name_of(JobVerdict v) { return kJobVerdictNames[static_cast<size_t>(v)]; }

enum class StragglerPhase : unsigned char { kInput, kCompute };
inline constexpr std::array<std::string_view, 2> kStragglerPhaseNames = {"input", "compute"};
inline constexpr std::string_view name_of(StragglerPhase p) { return kStragglerPhaseNames[static_cast<size_t>(p)]; }

struct RankReport {
  std::string file;  // where it came from (shown)
  Report report;
};

// One row of job.json "ranks"; the figures are null when the rank has no step time, communication_wait_ms also
// when communication was not measured.
struct JobRank {
  int64_t rank = -1;  // source.distributed.rank, else the report's position
  std::string file;
  Bottleneck verdict = Bottleneck::kUnknown;
  std::optional<double> mean_step_ms, input_ms, compute_ms, communication_wait_ms, work_ms;
};

struct Straggler {
  int64_t rank = -1;
  std::string file;
  StragglerPhase phase = StragglerPhase::kInput;
  double excess_ms = 0, phase_excess_ms = 0;
  std::optional<double> others_wait_ms;  // null when communication was not measured
};

struct JobSummary {
  std::vector<JobRank> ranks;
  std::optional<int64_t> slowest_rank;
  std::optional<double> slowdown, step_skew, communication_skew_ms;
  std::optional<Straggler> straggler;
  JobVerdict verdict = JobVerdict::kUnknown;
  double straggler_threshold = kStragglerShare;
  std::optional<bool> communication_measured;  // absent when unset (fewer than two ranks with a step time)
  std::string summary;
};

}  // namespace profile_train::model
