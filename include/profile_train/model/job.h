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

// What the job summary needs of one rank's report: a few figures and its collectives. The ranks of a large job
// are summarized from these without holding their reports (analysis::rank_facts); `analyze --executor ray`
// carries them back from its workers as JSON (job_json.h: to_json, rank_facts_from_json).
struct RankFacts {
  std::string file;
  std::optional<int64_t> rank, world_size;  // source.distributed
  Bottleneck verdict = Bottleneck::kUnknown;
  std::optional<double> mean_step_ms;       // steps.mean_ms
  double input_ms = 0;                      // breakdown_ms.data_loading
  double communication_ms = 0;              // breakdown_ms.communication
  bool communication_measured = false;      // communication.measured
  std::optional<double> exposed_fraction;   // communication.exposed_fraction
  std::vector<CollectiveInstance> collectives;  // collectives.instances (in memory only in a report)
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

// One row of job.json "collectives": the collectives of one kind, process group and size bucket, matched across
// the ranks. A matched collective's transfer time is the shortest duration among its ranks (the last rank to
// arrive waits for nobody: TraceLens's comm_latency); each rank's wait is its duration minus that. No clock is
// compared across ranks, so hosts whose clocks differ still match.
struct JobCollectiveRow {
  std::string kind;
  std::optional<std::string> process_group;
  std::optional<int64_t> bytes;         // nccl-tests' S per call (the mean)
  std::string size_bucket;
  int64_t matched = 0;                  // collectives matched on at least two ranks
  int64_t ranks = 0;                    // ranks that ran them
  double calls_per_step = 0;
  double transfer_ms = 0;               // mean per call
  double wait_ms = 0;                   // mean per call and rank
  double wait_share = 0;                // wait / (wait + transfer) over the ranks and calls
  std::optional<double> busbw_gbps;     // from the transfer time, nccl-tests' factor
  int64_t last_rank = -1;               // the rank that arrives last most often (-1: they arrive together)
  double last_rank_share = 0;           // of the matched calls
  std::optional<StragglerPhase> last_rank_phase;  // where that rank is slower than the others' median
  std::vector<double> wait_ms_by_rank;  // mean wait per call, in the order of job.ranks (0 where it did not run them)
};

struct JobCollectives {
  std::string matched_by;               // "process group and sequence number" | "process group and order in each step"
  int64_t matched = 0, unmatched = 0;   // collectives matched across ranks / seen on one rank only
  double wait_ms_per_step = 0;          // mean over the ranks: waiting in collectives for the last rank, per step
  double transfer_ms_per_step = 0;
  std::optional<int64_t> last_rank;     // the rank the others wait for most (waits summed)
  std::optional<StragglerPhase> last_rank_phase;
  std::vector<JobCollectiveRow> rows;   // by wait time, descending (at most 20)
  std::string summary;
};

// A rank file of the job that could not be analysed (it failed to load, its Ray task or node was lost), and why.
// The job summary is made of the others.
struct MissingRank {
  std::string file;
  std::string reason;
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
  std::optional<JobCollectives> collectives;   // absent when fewer than two ranks have collectives to match
  std::vector<MissingRank> missing;            // absent from job.json when empty
};

}  // namespace profile_train::model
