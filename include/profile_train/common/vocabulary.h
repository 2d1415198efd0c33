// The report's fixed vocabularies, defined once: the verdict's bottleneck classes and the breakdown roles.
// Rules (addresses, gain.from), the plan and the writers take their names from here.
#pragma once

#include <algorithm>
#include <array>
#include <string_view>

namespace profile_train {

// verdict.bottleneck values, in the order of reports/REPORT_FORMAT.md ("verdict").
inline constexpr std::array<std::string_view, 9> kBottleneckNames = {
    "input_pipeline", "host_to_device", "cpu_overhead", "synchronization", "gpu_compute",
    "gpu_memory",     "communication",  "cpu_only",     "unknown"};

// breakdown.* keys in the TensorBoard plugin's carving priority; they partition the step.
inline constexpr std::array<std::string_view, 8> kBreakdownRoleNames = {
    "kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu", "other"};

inline bool is_bottleneck_name(std::string_view s) {
  return std::find(kBottleneckNames.begin(), kBottleneckNames.end(), s) != kBottleneckNames.end();
}
inline bool is_breakdown_role(std::string_view s) {
  return std::find(kBreakdownRoleNames.begin(), kBreakdownRoleNames.end(), s) != kBreakdownRoleNames.end();
}

}  // namespace profile_train
