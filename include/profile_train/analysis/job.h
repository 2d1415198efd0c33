// The job summary of a multi-rank run (the document: model/job.h): per-rank figures, the slowest rank and the
// straggler, from the ranks' typed reports.
#pragma once

#include <vector>

#include "profile_train/model/job.h"

namespace profile_train::analysis {

model::JobSummary summarize_job(const std::vector<model::RankReport>& ranks);

// True when the reports look like ranks of one job: at least two, each with a distinct source.distributed.rank
// and the same world size.
bool is_one_job(const std::vector<model::RankReport>& reports);

}  // namespace profile_train::analysis
