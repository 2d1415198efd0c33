// The report's fixed vocabularies, defined once: the verdict's bottleneck classes, the breakdown roles and
// the training phases. Each is an enum plus its one name table (the JSON spelling); rules (addresses,
// gain.from), the plan, the analysis and the writers take their names from here.
#pragma once

#include <algorithm>
#include <array>
#include <cstddef>
#include <optional>
#include <string_view>

namespace profile_train {

// verdict.bottleneck values, in the order of reports/REPORT_FORMAT.md ("verdict").
enum class Bottleneck : unsigned char {
  kInputPipeline, kHostToDevice, kCpuOverhead, kSynchronization, kGpuCompute, kGpuMemory, kCommunication,
  kCpuOnly, kUnknown,
};
inline constexpr std::array<std::string_view, 9> kBottleneckNames = {
    "input_pipeline", "host_to_device", "cpu_overhead", "synchronization", "gpu_compute",
    "gpu_memory",     "communication",  "cpu_only",     "unknown"};

// breakdown.* keys in the TensorBoard plugin's carving priority; they partition the step. kOther is last:
// it is what no other role covers (no ranges of its own).
enum class Role : unsigned char { kKernel, kMemcpy, kMemset, kCommunication, kRuntime, kDataLoading, kCpu, kOther };
inline constexpr std::array<std::string_view, 8> kBreakdownRoleNames = {
    "kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu", "other"};

// phases.* / steps.per_step[].phases_ms keys: host time of the training thread by phase; kOther is the rest.
enum class Phase : unsigned char { kForward, kBackward, kOptimizer, kDataWait, kOther };
inline constexpr std::array<std::string_view, 5> kPhaseNames = {"forward", "backward", "optimizer", "data_wait",
                                                                "other"};

inline constexpr size_t kRoleCount = kBreakdownRoleNames.size();
inline constexpr size_t kPhaseCount = kPhaseNames.size();
inline constexpr size_t kBottleneckCount = kBottleneckNames.size();

inline constexpr std::string_view name_of(Bottleneck b) { return kBottleneckNames[static_cast<size_t>(b)]; }
inline constexpr std::string_view name_of(Role r) { return kBreakdownRoleNames[static_cast<size_t>(r)]; }
inline constexpr std::string_view name_of(Phase p) { return kPhaseNames[static_cast<size_t>(p)]; }

// Every value of each enum, in name-table order (for loops over the roles, phases, classes).
inline constexpr std::array<Role, kRoleCount> kAllRoles = {Role::kKernel,  Role::kMemcpy,      Role::kMemset,
                                                           Role::kCommunication, Role::kRuntime, Role::kDataLoading,
                                                           Role::kCpu,     Role::kOther};
inline constexpr std::array<Phase, kPhaseCount> kAllPhases = {Phase::kForward, Phase::kBackward, Phase::kOptimizer,
                                                              Phase::kDataWait, Phase::kOther};

namespace vocabulary_detail {
template <class E, size_t N>
constexpr std::optional<E> lookup(const std::array<std::string_view, N>& names, std::string_view s) {
  const auto it = std::find(names.begin(), names.end(), s);
  if (it == names.end()) return std::nullopt;
  return static_cast<E>(it - names.begin());
}
}  // namespace vocabulary_detail

inline constexpr std::optional<Bottleneck> bottleneck_from_name(std::string_view s) {
  return vocabulary_detail::lookup<Bottleneck>(kBottleneckNames, s);
}
inline constexpr std::optional<Role> role_from_name(std::string_view s) {
  return vocabulary_detail::lookup<Role>(kBreakdownRoleNames, s);
}
inline constexpr std::optional<Phase> phase_from_name(std::string_view s) {
  return vocabulary_detail::lookup<Phase>(kPhaseNames, s);
}

inline bool is_bottleneck_name(std::string_view s) { return bottleneck_from_name(s).has_value(); }
inline bool is_breakdown_role(std::string_view s) { return role_from_name(s).has_value(); }

}  // namespace profile_train
