// The job summary of `analyze` and `run` over several ranks of one job (model/job.h): printed after the
// per-trace table and written as job.json and summary.html beside the per-rank folders.
#pragma once

#include <filesystem>
#include <vector>

#include "io.h"
#include "profile_train/model/job.h"

namespace profile_train::cli {

// Prints the job summary on io.out (unless quiet) and writes out_dir/job.json and out_dir/summary.html when
// asked. Returns 0, or the exit code of a failed write (one line on io.err).
// `missing`: the job's rank files that could not be analysed (job.json "missing", and a line each).
int report_job(const Io& io, const std::vector<model::RankFacts>& reports, const std::filesystem::path& out_dir,
               bool write_json, bool write_html, bool quiet, const std::vector<model::MissingRank>& missing = {});

}  // namespace profile_train::cli
