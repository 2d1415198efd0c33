// The diff of two reports, or of two jobs, for people: terminal text (headline first, then tables) and
// self-contained HTML.
// The document and diff.json: model/diff.h; built by analysis::diff_reports (analysis/diff.h).
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include "profile_train/common/status.h"
#include "profile_train/model/diff.h"
#include "profile_train/report/writers.h"

namespace profile_train::report {

// Terminal rendering: headline first, then tables.
void write_diff_text(const model::Diff& diff, std::ostream& out, const TextOptions& options = {});

// Self-contained HTML rendering.
std::string render_diff_html(const model::Diff& diff);
Status write_diff_html(const model::Diff& diff, const std::filesystem::path& path);

// Two jobs: the job's step time (its slowest rank's), verdict and straggler, then each paired rank's step time,
// verdict and breakdown, the ranks on one side only, and the slowest ranks' kernels, copies and recommendations.
void write_job_diff_text(const model::JobDiff& diff, std::ostream& out, const TextOptions& options = {});
std::string render_job_diff_html(const model::JobDiff& diff);
Status write_job_diff_html(const model::JobDiff& diff, const std::filesystem::path& path);

}  // namespace profile_train::report
