#include "memory_facts.h"

#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>

namespace profile_train::workload {
namespace {

// A positive integer from the first line of a file ("max" and unreadable files: -1).
int64_t read_int_file(const char* path) {
  std::ifstream in(path);
  std::string s;
  if (!in || !std::getline(in, s) || s.empty()) return -1;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  return end != s.c_str() && v > 0 ? static_cast<int64_t>(v) : -1;
}

// "MemTotal:  24540844 kB" -> bytes, for the named keys of /proc/meminfo.
std::map<std::string, int64_t> meminfo() {
  std::map<std::string, int64_t> out;
  std::ifstream in("/proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::istringstream rest(line.substr(colon + 1));
    long long kib = -1;
    if (rest >> kib && kib >= 0) out[line.substr(0, colon)] = static_cast<int64_t>(kib) * 1024;
  }
  return out;
}

}  // namespace

int64_t heap_in_use_bytes() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
  static const bool other_allocator = [] {
    const char* pre = std::getenv("LD_PRELOAD");
    if (pre == nullptr) return false;
    const std::string_view p(pre);
    return p.find("jemalloc") != p.npos || p.find("tcmalloc") != p.npos || p.find("mimalloc") != p.npos;
  }();
  if (other_allocator) return -1;
  const struct mallinfo2 m = mallinfo2();
  const int64_t used = static_cast<int64_t>(m.uordblks) + static_cast<int64_t>(m.hblkhd);
  return used > 0 ? used : -1;
#else
  return -1;
#endif
}

void read_host_memory(MemoryFacts& m) {
  struct rusage ru {};
  if (getrusage(RUSAGE_SELF, &ru) == 0 && ru.ru_maxrss > 0) m.rss_peak_bytes = static_cast<int64_t>(ru.ru_maxrss) * 1024;
  const auto info = meminfo();
  int64_t limit = read_int_file("/sys/fs/cgroup/memory.max");
  if (limit <= 0) limit = read_int_file("/sys/fs/cgroup/memory/memory.limit_in_bytes");
  if (auto it = info.find("MemTotal"); it != info.end() && it->second > 0) {
    const bool cgroup = limit > 0 && limit < it->second;
    m.ram_total_bytes = cgroup ? limit : it->second;
    m.ram_total_source = cgroup ? "cgroup memory.max" : "MemTotal";
  }
  if (auto it = info.find("MemAvailable"); it != info.end()) m.ram_available_bytes = it->second;
}

int64_t median_bytes(std::vector<int64_t> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

nlohmann::json memory_facts_json(const MemoryFacts& m) {
  using nlohmann::json;
  json f = json::object();
  if (!m.device.empty()) f["device"] = m.device;
  if (m.batch_size > 0) f["batch_size"] = m.batch_size;
  if (m.parameter_bytes >= 0) {
    f["parameter_bytes"] = m.parameter_bytes;
    f["parameter_bytes_by_dtype"] = m.parameter_bytes_by_dtype;
  }
  if (m.gradient_bytes >= 0) f["gradient_bytes"] = m.gradient_bytes;
  if (m.optimizer_state_bytes >= 0) {
    f["optimizer_state_bytes"] = m.optimizer_state_bytes;
    f["optimizer_state_bytes_by_class"] = {{m.optimizer_class, m.optimizer_state_bytes}};
  }
  if (m.activation_heap_bytes >= 0) f["activation_heap_bytes"] = m.activation_heap_bytes;
  json steps = {{"first", m.step_first}};
  if (!m.peak_allocated_bytes.empty()) {
    steps["peak_allocated_bytes"] = m.peak_allocated_bytes;
    steps["allocated_at_start_bytes"] = m.allocated_at_start_bytes;
  } else if (!m.heap_in_use_at_start_bytes.empty()) {
    steps["heap_in_use_at_start_bytes"] = m.heap_in_use_at_start_bytes;
  }
  if (steps.size() > 1) f["steps"] = steps;
  if (m.rss_peak_bytes > 0) f["rss_peak_bytes"] = m.rss_peak_bytes;
  if (m.ram_total_bytes > 0) {
    f["ram_total_bytes"] = m.ram_total_bytes;
    f["ram_total_source"] = m.ram_total_source;
  }
  if (m.ram_available_bytes >= 0) f["ram_available_bytes"] = m.ram_available_bytes;
  return f;
}

}  // namespace profile_train::workload
