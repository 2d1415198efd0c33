// What the workload reports about the GPU (facts.gpu.*). Implemented with LibTorch's CUDA helpers when the
// LibTorch build has CUDA (device_info_cuda.cpp), else as "no GPU" (device_info_none.cpp). No torch types
// in this header.
#pragma once

#include <cstdint>
#include <string>

namespace profile_train::workload {

struct GpuInfo {
  bool available = false;
  int64_t count = 0;
  std::string name;                // device 0
  int64_t memory_total_bytes = 0;  // device 0
};

GpuInfo query_gpu();

// Peak bytes allocated by the CUDA caching allocator on device 0 since the last reset; 0 without CUDA.
int64_t gpu_peak_allocated_bytes();
void reset_gpu_peak();
// Bytes allocated by the CUDA caching allocator on device 0 now; 0 without CUDA.
int64_t gpu_allocated_bytes();

}  // namespace profile_train::workload
