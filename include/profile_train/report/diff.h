// Comparison of two reports (before/after): step time, breakdown categories, verdict, and the kernels and
// copies that changed most. Pure functions over typed reports (analysis/report.h) plus sinks. Owner: report component.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/report.h"
#include "profile_train/common/status.h"
#include "profile_train/report/writers.h"

namespace profile_train::report {

// diff.json format version (major.minor; minor versions only add keys).
inline constexpr const char* kDiffVersion = "1.0";

// Loads a report.json given the file itself or a run output folder that contains one, as a typed report
// (report_from_json). Rejects an unknown major schema_version and a document that is not a report (a key of
// the wrong type: BadInput naming the file and the key). Errors name the path (BadInput / NotFound /
// Unsupported).
StatusOr<analysis::Report> load_report(const std::filesystem::path& file_or_dir);

struct DiffOptions {
  int top = 10;  // kernels listed (largest absolute change in time per step first)
};

// The diff document (diff.json). `label_a` / `label_b` name the inputs (usually their paths).
// Kernel times per step are top_kernels[].total_ms / steps.count (total_ms covers the analysis window);
// a kernel in only one report's top list is compared against null ("not in top list"), not against 0.
nlohmann::json diff_reports(const analysis::Report& a, const analysis::Report& b, const std::string& label_a,
                            const std::string& label_b, const DiffOptions& options = {});

// Terminal rendering of a diff document: headline first, then tables.
void write_diff_text(const nlohmann::json& diff, std::ostream& out, const TextOptions& options = {});

// Self-contained HTML rendering of a diff document.
std::string render_diff_html(const nlohmann::json& diff);
Status write_diff_html(const nlohmann::json& diff, const std::filesystem::path& path);

}  // namespace profile_train::report
