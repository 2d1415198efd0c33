// Comparison of two reports (before/after): step time, breakdown categories, verdict, and the kernels and
// copies that changed most. Pure functions over typed reports (model/report.h) plus sinks. Owner: report component.
#pragma once

#include <filesystem>
#include <ostream>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
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

// The diff of two reports, typed; to_json() writes it as diff.json (one declaration of its keys there).
// Optional values are null in diff.json: a figure one report lacks is "not known", never 0.
struct DiffSide {
  std::string label;  // the input's name as given (usually its path; not necessarily UTF-8)
  Bottleneck bottleneck = Bottleneck::kUnknown;
  double confidence = 0;
  std::string summary;
  int64_t steps = 0;
  std::string device;  // "" without a device section
};
struct DiffStepTime {
  std::optional<double> a_ms, b_ms, delta_ms;
  std::optional<double> ratio, speedup;  // B/A and A/B; null when either mean is missing or 0
};
struct DiffPair {
  std::optional<double> a, b, delta;
};
struct DiffCategory {  // one breakdown role, ms per step and share of the step
  Role role = Role::kOther;
  std::optional<double> a_ms, b_ms, delta_ms, a_fraction, b_fraction;
};
enum class KernelPresence : unsigned char { kInBoth, kOnlyInATop, kOnlyInBTop };
struct DiffKernel {
  std::string name;
  std::optional<double> a_ms_per_step, b_ms_per_step, delta_ms_per_step, a_count_per_step, b_count_per_step;
  KernelPresence presence = KernelPresence::kInBoth;
};
struct DiffCopy {  // one copy direction; a side without a memcpy section is null throughout
  std::string direction;  // h2d, d2h, d2d
  std::optional<double> a_ms_per_step, b_ms_per_step, delta_ms_per_step, a_bytes_per_step, b_bytes_per_step,
      a_count_per_step, b_count_per_step, a_bandwidth_gbps, b_bandwidth_gbps, a_pageable_fraction,
      b_pageable_fraction;
};
struct DiffRecommendations {
  std::vector<std::string> a, b, resolved, added;  // ids; resolved: in A not in B; added: in B not in A
};
struct Diff {
  DiffSide a, b;
  DiffStepTime step_time;
  DiffPair gpu_utilization;
  std::vector<DiffCategory> breakdown;  // every role, in the breakdown's order
  std::vector<DiffKernel> kernels;      // largest |change per step| first, at most DiffOptions::top
  std::vector<DiffCopy> copies;         // largest |change per step| first
  DiffRecommendations recommendations;
  bool verdict_changed() const { return a.bottleneck != b.bottleneck; }
};

// The diff of `a` and `b`. `label_a` / `label_b` name the inputs (usually their paths).
// Kernel times per step are top_kernels[].total_ms / steps.count (total_ms covers the analysis window);
// a kernel in only one report's top list is compared against null ("not in top list"), not against 0.
Diff diff_reports(const analysis::Report& a, const analysis::Report& b, const std::string& label_a,
                  const std::string& label_b, const DiffOptions& options = {});

// diff.json (format kDiffVersion).
nlohmann::json to_json(const Diff& diff);

// Terminal rendering: headline first, then tables.
void write_diff_text(const Diff& diff, std::ostream& out, const TextOptions& options = {});

// Self-contained HTML rendering.
std::string render_diff_html(const Diff& diff);
Status write_diff_html(const Diff& diff, const std::filesystem::path& path);

}  // namespace profile_train::report
