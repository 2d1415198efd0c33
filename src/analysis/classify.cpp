// Name-based classification of host events: runtime / driver calls and the training loop's annotations. What a
// GPU kernel computes is kernel_class.cpp's (one classification from the strongest evidence).
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/common/strings.h"

namespace profile_train::analysis {

std::string_view runtime_base_name(std::string_view name) {
  // CUPTI names some callbacks with the API version they appeared in: "cudaLaunchKernel_v7000".
  const auto pos = name.rfind("_v");
  if (pos == std::string_view::npos || pos + 2 >= name.size()) return name;
  for (size_t i = pos + 2; i < name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return name;
  return name.substr(0, pos);
}

bool is_launch_call(std::string_view n) {
  n = runtime_base_name(n);
  static constexpr std::array<std::string_view, 9> kLaunch = {
      "cudaLaunchKernel",  "cudaLaunchKernelExC", "cudaLaunchCooperativeKernel", "cuLaunchKernel",
      "cuLaunchKernelEx",  "hipLaunchKernel",     "hipExtModuleLaunchKernel",    "hipModuleLaunchKernel",
      "cudaGraphLaunch"};
  for (auto k : kLaunch)
    if (n == k) return true;
  return n.starts_with("cudaLaunch") || n.starts_with("cuLaunch") || n.starts_with("hipLaunch") ||
         n == "hipGraphLaunch";
}

bool is_sync_call(std::string_view n) {
  n = runtime_base_name(n);
  static constexpr std::array<std::string_view, 12> kSync = {
      "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaEventSynchronize", "cudaMemcpy",
      "cudaMemcpy2D",          "cuCtxSynchronize",      "cuStreamSynchronize",  "cuEventSynchronize",
      "hipDeviceSynchronize",  "hipStreamSynchronize",  "hipEventSynchronize",  "hipMemcpy"};
  for (auto k : kSync)
    if (n == k) return true;
  return false;
}

bool is_allocator_call(std::string_view n) {
  n = runtime_base_name(n);
  // Device and pinned-host allocation and release (CUDA runtime/driver, HIP). With the caching allocator on,
  // PyTorch calls these only when its pools grow; a steady stream of them means the cache is off or emptied.
  static constexpr std::array<std::string_view, 22> kAlloc = {
      "cudaMalloc",      "cudaFree",        "cudaMallocAsync", "cudaFreeAsync", "cudaMallocHost", "cudaFreeHost",
      "cudaHostAlloc",   "cudaMallocManaged", "cudaMallocPitch", "cuMemAlloc",  "cuMemFree",      "cuMemAllocAsync",
      "cuMemFreeAsync",  "cuMemAllocHost",  "cuMemFreeHost",   "hipMalloc",     "hipFree",        "hipMallocAsync",
      "hipFreeAsync",    "hipHostMalloc",   "hipHostFree",     "hipExtMallocWithFlags"};
  for (auto k : kAlloc)
    if (n == k) return true;
  // Driver versions carry a suffix: cuMemAlloc_v2, cuMemFree_v2.
  return n.starts_with("cuMemAlloc_") || n.starts_with("cuMemFree_");
}

bool is_memcpy_call(std::string_view n) {
  n = runtime_base_name(n);
  return n.starts_with("cudaMemcpy") || n.starts_with("cuMemcpy") || n.starts_with("hipMemcpy");
}

bool is_dataloader_annotation(std::string_view n) {
  return (n.starts_with("enumerate(DataLoader)#") && n.ends_with(".__next__")) ||
         n.starts_with("enumerate(DataPipe)#");
}

bool is_step_annotation(std::string_view n) { return n.starts_with("ProfilerStep#"); }

bool is_optimizer_step_annotation(std::string_view n) { return n.starts_with("Optimizer.step#"); }

bool is_cpu_matmul_conv_op(std::string_view op) {
  // Exact names, not substrings: "aten::upsample_bilinear2d" is no linear layer, "aten::_convert_indices..." no
  // convolution. Self time only, so the wrappers (aten::linear -> aten::addmm) do not count their callee twice.
  static constexpr std::array<std::string_view, 30> kOps = {
      "aten::mm", "aten::addmm", "aten::_addmm_activation", "aten::bmm", "aten::baddbmm", "aten::addbmm",
      "aten::matmul", "aten::linear", "aten::mv", "aten::addmv", "aten::dot", "aten::vdot", "aten::einsum",
      "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::convolution", "aten::_convolution",
      "aten::convolution_backward", "aten::mkldnn_convolution", "aten::_slow_conv2d_forward",
      "aten::_slow_conv2d_backward", "aten::slow_conv3d_forward", "aten::conv_transpose1d",
      "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::mkldnn_linear", "aten::_nnpack_spatial_convolution",
      "aten::_scaled_dot_product_flash_attention_for_cpu",
      "aten::_scaled_dot_product_flash_attention_for_cpu_backward"};
  for (auto k : kOps)
    if (op == k) return true;
  return false;
}

}  // namespace profile_train::analysis
