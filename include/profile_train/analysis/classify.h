// Event classification by name: runtime calls, kernels, operators.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <string_view>

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
bool is_communication_kernel(std::string_view kernel_name);  // NCCL / RCCL collective kernels
bool is_dataloader_annotation(std::string_view name);     // enumerate(DataLoader)#...__next__, DataPipe
bool is_step_annotation(std::string_view name);           // ProfilerStep#N
bool is_optimizer_step_annotation(std::string_view name); // Optimizer.step#X.step

// Kernel name heuristics (documented in reports/REPORT_FORMAT.md, "Kernel classes").
bool is_tensor_core_kernel(std::string_view kernel_name);
bool is_fp32_tc_eligible_kernel(std::string_view kernel_name);
bool is_fp64_kernel(std::string_view kernel_name);
bool is_tf32_kernel(std::string_view kernel_name);  // a tensor-core kernel on TF32 inputs (subset of the above)
bool is_tc_eligible_op(std::string_view op_name);  // operators whose math tensor cores run (conv, mm, linear, ...)
// ATen matrix-multiply, convolution and CPU flash-attention operators by exact name (aten::mm, aten::addmm,
// aten::convolution_backward, ...): the CPU operators whose time bf16 on AMX / AVX512-BF16 speeds up.
bool is_cpu_matmul_conv_op(std::string_view op_name);
bool is_conv_kernel(std::string_view kernel_name);
std::string kernel_category(std::string_view kernel_name);  // "communication", "conv", "gemm", ...

}  // namespace profile_train::analysis
