// The diff of two reports (`profile-train diff`) as plain data, and diff.json: analysis::diff_reports builds
// it, to_json writes it (diff_json.cpp, the one declaration of its keys), report/diff.h renders it for people.
// Optional values are null in diff.json: a figure one report lacks is "not known", never 0.
// Owner: model room (namespace profile_train::model).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/vocabulary.h"

namespace profile_train::model {

// diff.json format version (major.minor; minor versions only add keys).
inline constexpr const char* kDiffVersion = "1.0";

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

// diff.json (format kDiffVersion).
nlohmann::json to_json(const Diff& diff);

}  // namespace profile_train::model
