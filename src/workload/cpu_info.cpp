#include "cpu_info.h"

#include <sched.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

namespace profile_train::workload {

int64_t affinity_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  return std::max<int64_t>(1, std::thread::hardware_concurrency());
}

void read_cpu_flags(CpuInfo& info) {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream words(line.substr(colon + 1));
    bool amx = false, avx512 = false;
    for (std::string w; words >> w;) {
      amx = amx || w == "amx_bf16";
      avx512 = avx512 || w == "avx512_bf16";
    }
    info.amx_bf16 = amx;
    info.avx512_bf16 = avx512;
    return;
  }
}

std::optional<int64_t> omp_num_threads_env() {
  const char* v = std::getenv("OMP_NUM_THREADS");
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const long long n = std::strtoll(v, &end, 10);
  if (*end != '\0' || n <= 0) return std::nullopt;
  return static_cast<int64_t>(n);
}

}  // namespace profile_train::workload
