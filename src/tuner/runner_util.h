// Small helpers shared by the trial runners (process_runner.cpp, ray_runner.cpp). Internal to pt_tuner.
#pragma once

#include <chrono>
#include <string>

namespace profile_train::tuner::detail {

// Seconds on the steady clock (durations and deadlines of measurements).
inline double now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// n with leading zeros up to `width` digits: trial folders sort by name ("007-r1").
inline std::string zero_padded(int n, int width) {
  std::string s = std::to_string(n);
  while (static_cast<int>(s.size()) < width) s.insert(s.begin(), '0');
  return s;
}

}  // namespace profile_train::tuner::detail
