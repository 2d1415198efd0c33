// job.json <- JobSummary (reports/REPORT_FORMAT.md "job.json"). Owner: model room.
#pragma once

#include <filesystem>

#include <nlohmann/json.hpp>

#include "profile_train/model/job.h"
#include "profile_train/common/status.h"

namespace profile_train::model {

nlohmann::json to_json(const JobSummary& job);

// Writes to_json(job) as job.json at `path` (temporary file + rename); file names that are not UTF-8 are
// written with U+FFFD, never thrown.
Status write_job_json(const std::filesystem::path& path, const JobSummary& job);

}  // namespace profile_train::model
