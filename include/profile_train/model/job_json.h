// job.json <-> JobSummary (reports/REPORT_FORMAT.md "job.json"), and the job folders `diff` reads. Owner: model room.
#pragma once

#include <filesystem>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/job.h"
#include "profile_train/common/status.h"

namespace profile_train::model {

nlohmann::json to_json(const JobSummary& job);

// Writes to_json(job) as job.json at `path` (temporary file + rename); file names that are not UTF-8 are
// written with U+FFFD, never thrown.
Status write_job_json(const std::filesystem::path& path, const JobSummary& job);

// job.json -> JobSummary. BadInput naming the key when one has the wrong type ("ranks[1].rank is not an
// integer"); keys that are absent keep their defaults (null figures, verdict unknown).
StatusOr<JobSummary> job_summary_from_json(const nlohmann::json& json);

// RankFacts as JSON (`analyze --executor ray`'s shards carry them back): every number round-trips exactly, so
// the job summary of facts read back is the one of the facts written. The collectives are rows of
// [kind, process_group, seq, ordinal, step, step_index, start_ns, dur_ns, exposed_ns, bytes|null, group_size].
nlohmann::json to_json(const RankFacts& facts);
StatusOr<RankFacts> rank_facts_from_json(const nlohmann::json& json);

// A job folder as `analyze TRACE... --out DIR` (DIR/<trace name>/report.json) and `run` of several ranks
// (DIR/rankN/report.json) write it, with DIR/job.json when the reports are the ranks of one job.
struct JobFolder {
  // One per rank; RankReport::file is the rank's folder (DIR/NAME). Order: job.json's ranks when the folder has
  // one (the command's order of the files or ranks), else the folders' names in natural order (rank2 < rank10).
  std::vector<RankReport> ranks;
  std::optional<JobSummary> summary;  // job.json's, when the folder has one
};

// What `diff` compares: a report (a report.json, or a folder holding one) or a job folder (no report.json;
// job.json and/or sub-folders holding report.json). Exactly one of the two is set.
struct DiffInput {
  std::optional<Report> report;
  std::optional<JobFolder> job;
};

// Loads `path` as a DiffInput. Errors name the path (exit 2): a missing file ("no such file"); a folder with
// neither report.json nor rank reports nor job.json (NotFound); a job.json that is not JSON or not a job
// summary (BadInput naming the key); a rank job.json lists whose report.json no sub-folder holds (NotFound);
// a rank report that cannot be read (load_report's error, naming it). With job.json, sub-folders whose
// report is not one of its ranks are left out (stale outputs); without, every sub-folder's report.json counts.
StatusOr<DiffInput> load_diff_input(const std::filesystem::path& path);

}  // namespace profile_train::model
