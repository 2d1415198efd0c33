// Helpers shared by the tuner's session and its strategies (internal to src/tuner).
#pragma once

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner::detail {

inline bool memory_failure(const Trial& t) {
  return t.status == RunStatus::kOom || t.status == RunStatus::kOverMemory;
}

// Values of an integer knob, ascending, including `current` when it is not in the list.
inline std::vector<long long> ladder(const KnobRange& r, long long current) {
  std::vector<long long> v;
  for (const auto& s : r.values) v.push_back(std::stoll(s));
  if (current >= 0 && std::find(v.begin(), v.end(), current) == v.end()) v.push_back(current);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// One line: "loss 2.31 vs 1.12 (+1.19, bar 0.06, per sample seen)" (tuner.cpp).
std::string loss_summary(const LossComparison& l);
// The arithmetic mean (0 for none), tuner.cpp.
double mean_of(const std::vector<double>& v);

std::unique_ptr<Strategy> make_grid_strategy();
std::unique_ptr<Strategy> make_guided_strategy();

}  // namespace profile_train::tuner::detail
