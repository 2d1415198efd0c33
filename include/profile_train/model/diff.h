// The diff of two reports (`profile-train diff`) as plain data, and diff.json: analysis::diff_reports builds
// it, to_json writes it (diff_json.cpp, the one declaration of its keys), report/diff.h renders it for people.
// Optional values are null in diff.json: a figure one report lacks is "not known", never 0.
// Owner: model room (namespace profile_train::model).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/vocabulary.h"

namespace profile_train::model {

// diff.json format version (major.minor; minor versions only add keys).
// 1.1 added kind, headline, comparability and job (null: reserved for the diff of two job folders).
inline constexpr const char* kDiffVersion = "1.1";

// The neutral rule: the mean step moved beyond noise when |B/A - 1| > max(kNeutralFloor, kNeutralSpreads x the
// larger of the two sides' relative step-time spreads, steps.stddev_ms / steps.mean_ms of the steady state).
inline constexpr double kNeutralFloor = 0.03;
inline constexpr double kNeutralSpreads = 2.0;
// A breakdown category changed (the neutral headline names it) when it moved by at least this share of A's step.
inline constexpr double kMaterialShare = 0.03;

// diff.json headline.step_time: whether the mean step moved beyond the neutral rule's threshold.
enum class StepChange : unsigned char { kFaster, kSlower, kNeutral, kUnknown };
inline constexpr std::array<std::string_view, 4> kStepChangeNames = {"faster", "slower", "neutral", "unknown"};
inline constexpr std::string_view name_of(StepChange c) { return kStepChangeNames[static_cast<size_t>(c)]; }

struct DiffOptions {
  int top = 10;  // kernels listed (largest absolute change in time per step first)
};

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
// What one side measured, to judge whether the two are comparable.
struct DiffWindow {
  int64_t steps = 0;         // steps.count
  int64_t steady_steps = 0;  // the steps the mean is over: steady_state.count, else steps.count
  std::optional<double> mean_ms, stddev_ms;  // steps.mean_ms / stddev_ms (of the steady-state steps)
  std::optional<double> relative_stddev;     // stddev / mean
  std::optional<double> window_ms;           // steady_steps x mean_ms
  // Kernel time in the window (top_kernels' total_ms over their share of all kernel time; null without kernels)
  // and the share of it in kernels present in both sides' top-kernel lists.
  std::optional<double> kernel_ms, shared_kernel_fraction;
};
struct DiffComparability {
  DiffWindow a, b;
};
// The diff's headline: did the step time move beyond its spread (the neutral rule), and what did change.
struct DiffHeadline {
  StepChange step_time = StepChange::kUnknown;
  std::optional<double> relative_change;  // B/A - 1 of the mean step; null when either is missing or 0
  std::optional<double> threshold;        // max(kNeutralFloor, kNeutralSpreads x the larger relative stddev)
  std::vector<Role> changed_categories;   // moved by >= kMaterialShare of A's step, largest change first
  bool neutral() const { return step_time == StepChange::kNeutral; }
};
struct Diff {
  DiffSide a, b;
  DiffStepTime step_time;
  DiffHeadline headline;
  DiffComparability comparability;
  DiffPair gpu_utilization;
  std::vector<DiffCategory> breakdown;  // every role, in the breakdown's order
  std::vector<DiffKernel> kernels;      // largest |change per step| first, at most DiffOptions::top
  std::vector<DiffCopy> copies;         // largest |change per step| first
  DiffRecommendations recommendations;
  bool verdict_changed() const { return a.bottleneck != b.bottleneck; }
};

// diff.json (format kDiffVersion): kind "reports", job null.
nlohmann::json to_json(const Diff& diff);

}  // namespace profile_train::model
