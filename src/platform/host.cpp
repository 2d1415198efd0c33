#include "profile_train/platform/host.h"

#include <unistd.h>

#include <fstream>
#include <string>

namespace profile_train::platform {

unsigned online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<unsigned>(n) : 1u;
}

std::optional<uint64_t> memory_available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  for (std::string key; meminfo >> key;) {
    if (key == "MemAvailable:") {
      uint64_t kb = 0;
      if (meminfo >> kb) return kb * 1024;
      return std::nullopt;
    }
    meminfo.ignore(1 << 10, '\n');
  }
  return std::nullopt;
}

std::optional<double> load_average_1m() {
  std::ifstream in("/proc/loadavg");
  double v = 0;
  if (in >> v && v >= 0) return v;
  return std::nullopt;
}

}  // namespace profile_train::platform
