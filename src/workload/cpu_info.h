// What the workload reports about the host CPU (facts.cpu.*), the same fields the Python shim writes for a
// user's script: the cores this process may run on, torch's thread pools, the ATen kernel level and whether the
// CPU computes bf16 natively. No torch types in this header.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace profile_train::workload {

struct CpuInfo {
  int64_t cores = 1;              // sched_getaffinity: the cores this process may use, not the machine's count
  int64_t torch_threads = 1;      // intra-op pool (at::get_num_threads after the workload set it)
  int64_t interop_threads = 1;
  std::string capability;         // at::get_cpu_capability(): "AVX2", "AVX512", ...; empty when unknown
  std::optional<bool> amx_bf16;   // /proc/cpuinfo flags; nullopt when the flags cannot be read
  std::optional<bool> avx512_bf16;
  std::optional<int64_t> omp_num_threads;  // OMP_NUM_THREADS as the environment set it; nullopt when unset
  int64_t local_ranks = 1;                  // processes of the job on this host (the workload is one process)
};

// Cores this process may run on (sched_getaffinity), at least 1.
int64_t affinity_cores();

// The flags line of /proc/cpuinfo parsed into amx_bf16 / avx512_bf16 (the torch fields are left as they are).
void read_cpu_flags(CpuInfo& info);

// OMP_NUM_THREADS when it is a positive integer.
std::optional<int64_t> omp_num_threads_env();

}  // namespace profile_train::workload
