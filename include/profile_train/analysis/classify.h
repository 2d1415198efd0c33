// Event classification by name: runtime calls, annotations, CPU operators (kernels: kernel_class.h).
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <string_view>

#include "profile_train/analysis/kernel_class.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Event classification --------------------------------------------------------------------------------
// Runtime / driver API name without a CUPTI version suffix ("cudaLaunchKernel_v7000" -> "cudaLaunchKernel").
std::string_view runtime_base_name(std::string_view name);
bool is_launch_call(std::string_view runtime_name);       // kernel launch (cuda/hip/driver/graph)
bool is_sync_call(std::string_view runtime_name);         // host-blocking synchronization
bool is_allocator_call(std::string_view runtime_name);    // device / pinned-host malloc and free (CUDA, HIP)
bool is_memcpy_call(std::string_view runtime_name);       // cudaMemcpy*, cuMemcpy*, hipMemcpy*
bool is_dataloader_annotation(std::string_view name);     // enumerate(DataLoader)#...__next__, DataPipe
bool is_step_annotation(std::string_view name);           // ProfilerStep#N
bool is_optimizer_step_annotation(std::string_view name); // Optimizer.step#X.step

// ATen matrix-multiply, convolution and CPU flash-attention operators by exact name (aten::mm, aten::addmm,
// aten::convolution_backward, ...): the CPU operators whose time bf16 on AMX / AVX512-BF16 speeds up.
bool is_cpu_matmul_conv_op(std::string_view op_name);

}  // namespace profile_train::analysis
