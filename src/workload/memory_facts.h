// What the workload records about memory (facts.memory, the same keys as the Python shim's
// profile_train_memory.py, read by analysis/memory_budget.cpp): where a step's bytes go, counted exactly from
// the tensors, and per-step figures from the allocator (CUDA) or the C heap (CPU). No torch types here; the
// loop (train.cpp) fills it, results.cpp writes it.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace profile_train::workload {

struct MemoryFacts {
  std::string device;                                   // "cpu" | "cuda:0"
  int64_t batch_size = 0;
  int64_t parameter_bytes = -1;                         // -1: not counted
  std::map<std::string, int64_t> parameter_bytes_by_dtype;  // "float32" -> bytes (the shim's keys)
  int64_t gradient_bytes = -1;                          // the .grad tensors after the first measured update
  int64_t optimizer_state_bytes = -1;                   // every state tensor of the optimizer
  std::string optimizer_class;
  // CPU: the C heap's growth over the forward pass (bytes in use when backward starts less when the forward
  // starts, mallinfo2), the median over the measured steps: what the forward holds for backward, its outputs
  // included. The heap is the process's: with --workers > 0 the loader threads' batches made during a forward
  // count too (the median over the steps damps them). -1 when the heap cannot be read (another libc, or a
  // preloaded allocator).
  int64_t activation_heap_bytes = -1;
  int64_t step_first = 0;                               // the step index of the first per-step sample
  std::vector<int64_t> peak_allocated_bytes;            // CUDA: each step's max_memory_allocated (reset per step)
  std::vector<int64_t> allocated_at_start_bytes;        // CUDA: memory_allocated at each step's start
  std::vector<int64_t> heap_in_use_at_start_bytes;      // CPU: the C heap in use at each step's start
  int64_t rss_peak_bytes = -1;                          // the process's peak resident set (ru_maxrss)
  int64_t ram_total_bytes = -1;                         // MemTotal, or the cgroup's memory.max when lower
  std::string ram_total_source;
  int64_t ram_available_bytes = -1;                     // MemAvailable
};

// The bytes glibc's heap has handed out and not taken back (mallinfo2: uordblks + hblkhd, every arena), or -1
// when they cannot be read: not glibc, or jemalloc/tcmalloc/mimalloc preloaded (their blocks are not counted).
int64_t heap_in_use_bytes();

// Peak RSS, RAM total (with its source) and MemAvailable of this process and machine, into `m`.
void read_host_memory(MemoryFacts& m);

// facts.memory; absent figures (-1, empty) are left out, as the shim does.
nlohmann::json memory_facts_json(const MemoryFacts& m);

// The median of `v` (0 when empty).
int64_t median_bytes(std::vector<int64_t> v);

}  // namespace profile_train::workload
