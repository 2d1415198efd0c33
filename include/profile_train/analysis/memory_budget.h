// The memory budget: the shim's (or the workload's) exact static bytes (facts.memory: parameters, gradients, optimizer state),
// activations as the rest of the peak, per sample, and the batch that fits. reports/REPORT_FORMAT.md,
// "memory_budget", says what each figure means; this header says how they are computed.
//
//  - GPU (facts.memory.device "cuda..."): peak = the largest per-step torch.cuda.max_memory_allocated
//    (facts.memory.steps.peak_allocated_bytes; else facts.gpu.memory_peak_bytes); activations = peak - static;
//    capacity = facts.gpu.memory_total_bytes (else device.total_memory_bytes); free = capacity - peak.
//  - CPU: no allocator peak is recorded (torch's CPU allocator keeps none). activations = the bytes the loss's
//    autograd graph holds for backward when backward starts (facts.memory.activation_saved_bytes, the Python
//    shim), else the C heap's growth over the forward pass (facts.memory.activation_heap_bytes, the LibTorch
//    workload, which cannot walk the graph's saved tensors from C++); peak =
//    static + activations, a lower bound (the backward's temporaries are not in it); capacity = the RAM the
//    process may use (facts.memory.ram_total_bytes: MemTotal, or the cgroup's memory.max when lower); free =
//    min(capacity - the process's peak RSS, MemAvailable at the last facts write).
//  - Fit: samples_fit = batch + floor(free / activations per sample): activations grow linearly with the
//    batch, static memory does not. An estimate: the allocator rounds and caches blocks (reserved - allocated
//    on a GPU), a GPU's CUDA context is outside these counters.
//  - Growth: the median step-to-step change of a per-step series taken at each step's start (GPU: allocated bytes; CPU:
//    the C heap's bytes in use, else RSS), named when it rises between at least two thirds of the consecutive
//    steps and by at least kMemoryGrowthFloor per step (a Python loop's own objects add a few kB a step).
// Units: bytes.
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"

namespace profile_train::analysis {

inline constexpr int64_t kMemoryGrowthFloor = 64 * 1024;  // bytes per step

// nullopt when facts.memory has no parameter bytes (no shim, or no model seen).
std::optional<model::MemoryBudget> memory_budget_section(const nlohmann::json& facts,
                                                         const std::optional<model::Device>& device);

// The slope (bytes per step) of a per-step series when it grows as above; 0 when it does not; nullopt with
// fewer than 3 values.
std::optional<int64_t> memory_growth_per_step(const std::vector<int64_t>& series);

}  // namespace profile_train::analysis
