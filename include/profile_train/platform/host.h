// What this host has (Linux): the one probe of cores, memory and load that `analyze`, `run` and `tune` use.
#pragma once

#include <cstdint>
#include <optional>

namespace profile_train::platform {

// The CPUs online (sysconf), at least 1.
unsigned online_cpus();

// MemAvailable of /proc/meminfo in bytes; nullopt when it cannot be read.
std::optional<uint64_t> memory_available_bytes();

// The 1-minute load average of /proc/loadavg; nullopt when it cannot be read.
std::optional<double> load_average_1m();

}  // namespace profile_train::platform
