// The diff of two reports (before/after): step time, breakdown categories, verdict, and the kernels and copies
// that changed most, built over the typed reports into the diff document (model/diff.h); report/diff.h renders it.
// The diff of two jobs pairs their ranks and diffs each pair, the slowest ranks standing for the job.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "profile_train/model/diff.h"
#include "profile_train/model/job.h"
#include "profile_train/model/job_json.h"
#include "profile_train/model/report.h"

namespace profile_train::analysis {

// The diff of `a` and `b`. `label_a` / `label_b` name the inputs (usually their paths).
// Kernel times per step are top_kernels[].total_ms / steps.count (total_ms covers the analysis window);
// a kernel in only one report's top list is compared against null ("not in top list"), not against 0.
// The headline applies the neutral rule (model/diff.h: kNeutralFloor, kNeutralSpreads) to steps.mean_ms with
// each side's steps.stddev_ms; the comparability figures are each side's window and shared kernel time.
model::Diff diff_reports(const model::Report& a, const model::Report& b, const std::string& label_a,
                         const std::string& label_b, const model::DiffOptions& options = {});

// One pair of ranks: `rank` is the pairing key, a / b the indices into each side's ranks (null: only on the
// other side).
struct RankPair {
  int64_t rank = 0;
  std::optional<size_t> a, b;
};
struct RankPairs {
  model::RankPairing pairing = model::RankPairing::kByOrder;
  std::vector<RankPair> pairs;  // by key
};
// By source.distributed.rank when every report of both sides records one and no side records one twice; else
// by position (key = index).
RankPairs pair_ranks(const std::vector<model::RankReport>& a, const std::vector<model::RankReport>& b);

// The diff of two job folders (model::load_diff_input): each side's job summary (job.json's, else
// summarize_job of its ranks), the ranks paired (pair_ranks) and diffed, the ranks on one side only, and the
// diff of each side's slowest rank (longest mean step) as the job's. `label_*` name the job folders.
model::JobDiff diff_jobs(const model::JobFolder& a, const model::JobFolder& b, const std::string& label_a,
                         const std::string& label_b, const model::DiffOptions& options = {});

}  // namespace profile_train::analysis
