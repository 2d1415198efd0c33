// The diff of two reports (`profile-train diff`) as plain data, and diff.json: analysis::diff_reports builds
// it, to_json writes it (diff_json.cpp, the one declaration of its keys), report/diff.h renders it for people.
// The diff of two job folders (one report per rank, job.json) is a JobDiff: analysis::diff_jobs.
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
#include "profile_train/model/job.h"

namespace profile_train::model {

// diff.json format version (major.minor; minor versions only add keys).
// 1.1 added kind, headline, comparability and job (the diff of two job folders).
inline constexpr const char* kDiffVersion = "1.1";

// The neutral rule: the mean step moved beyond noise when |B/A - 1| > max(kNeutralFloor, kNeutralSpreads x the
// standard error of the difference of the two mean steps relative to A's: sqrt(sA^2/nA + sB^2/nB) / meanA, s the
// steady-state steps' stddev (steps.stddev_ms), n their count).
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
  std::optional<double> threshold;        // max(kNeutralFloor, kNeutralSpreads x the standard error of the difference)
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

// ---- job diffs ----------------------------------------------------------------------------------------

// How the ranks of two jobs were paired: by source.distributed.rank when every report of both sides records a
// distinct one, else by position (job.json's order of the ranks, else the rank folders' names in natural order).
enum class RankPairing : unsigned char { kByRank, kByOrder };
inline constexpr std::array<std::string_view, 2> kRankPairingNames = {"rank", "order"};
inline constexpr std::string_view name_of(RankPairing p) { return kRankPairingNames[static_cast<size_t>(p)]; }

struct JobDiffSide {
  std::string label;           // the job folder as given
  int64_t ranks = 0;           // rank reports compared
  bool from_job_json = false;  // summary read from job.json (else summarized from the rank reports)
  JobSummary summary;
  // The job's step time: every rank of a synchronous job waits for the slowest, so the longest mean step.
  std::optional<int64_t> slowest_rank;  // its pairing key (rank number, or position)
  std::string slowest_label;            // its rank folder
  std::optional<double> step_ms;
};
struct RankDiff {
  int64_t rank = 0;  // the pairing key: the rank number (kByRank) or the position (kByOrder)
  Diff diff;         // labels: the two rank folders
};
struct RankOnOneSide {
  int64_t rank = 0;  // the pairing key
  std::string label;  // its rank folder
};
struct JobDiff {
  RankPairing pairing = RankPairing::kByOrder;
  JobDiffSide a, b;
  // The diff of each side's slowest rank (the job's step time): diff.json's top-level keys (labels: the job
  // folders), its headline and comparability are the job's.
  Diff slowest;
  std::vector<RankDiff> ranks;  // the paired ranks, by pairing key
  std::vector<RankOnOneSide> only_in_a, only_in_b;
  bool verdict_changed() const { return a.summary.verdict != b.summary.verdict; }
  bool straggler_changed() const {
    const auto& x = a.summary.straggler;
    const auto& y = b.summary.straggler;
    if (!x || !y) return x.has_value() != y.has_value();
    return x->rank != y->rank || x->phase != y->phase;
  }
};

// diff.json (format kDiffVersion): kind "reports", job null.
nlohmann::json to_json(const Diff& diff);
// diff.json of two jobs: the slowest ranks' diff as the top-level keys, kind "job" and the job object.
nlohmann::json to_json(const JobDiff& diff);

}  // namespace profile_train::model
