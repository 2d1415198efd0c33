#include "device_info.h"

#include <ATen/cuda/CUDAContextLight.h>
#include <c10/cuda/CUDACachingAllocator.h>
#include <c10/cuda/CUDAFunctions.h>

namespace profile_train::workload {

GpuInfo query_gpu() {
  GpuInfo info;
  info.count = c10::cuda::device_count();  // 0 (not an error) without a driver or a GPU
  info.available = info.count > 0;
  if (info.available) {
    const cudaDeviceProp* prop = at::cuda::getDeviceProperties(0);
    info.name = prop->name;
    info.memory_total_bytes = static_cast<int64_t>(prop->totalGlobalMem);
  }
  return info;
}

int64_t gpu_peak_allocated_bytes() {
  if (c10::cuda::device_count() == 0) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].peak;
}

int64_t gpu_allocated_bytes() {
  if (c10::cuda::device_count() == 0) return 0;
  const auto stats = c10::cuda::CUDACachingAllocator::getDeviceStats(0);
  return stats.allocated_bytes[static_cast<size_t>(c10::CachingAllocator::StatType::AGGREGATE)].current;
}

void reset_gpu_peak() {
  if (c10::cuda::device_count() > 0) c10::cuda::CUDACachingAllocator::resetPeakStats(0);
}

}  // namespace profile_train::workload
