#include "device_info.h"

// LibTorch without CUDA: the workload runs on the CPU only.
namespace profile_train::workload {

GpuInfo query_gpu() { return {}; }
int64_t gpu_peak_allocated_bytes() { return 0; }
void reset_gpu_peak() {}
int64_t gpu_allocated_bytes() { return 0; }

}  // namespace profile_train::workload
