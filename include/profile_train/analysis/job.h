// The job summary of a multi-rank run (the document: model/job.h): per-rank figures, the slowest rank and the
// straggler, from the ranks' typed reports.
#pragma once

#include <vector>

#include "profile_train/model/job.h"

namespace profile_train::analysis {

// What the summary reads of a report (move the collectives out of it when the report is not needed after).
model::RankFacts rank_facts(const model::RankReport& rank);
model::RankFacts rank_facts(std::string file, model::Report&& report);

model::JobSummary summarize_job(const std::vector<model::RankFacts>& ranks);
model::JobSummary summarize_job(const std::vector<model::RankReport>& ranks);

// True when the reports look like ranks of one job: at least two, each with a distinct source.distributed.rank
// and the same world size.
bool is_one_job(const std::vector<model::RankFacts>& ranks);
bool is_one_job(const std::vector<model::RankReport>& reports);

}  // namespace profile_train::analysis
