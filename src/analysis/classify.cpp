// Name-based classification of events. Heuristics, documented in reports/REPORT_FORMAT.md ("Kernel classes"):
// kernel names are the only portable signal in a Kineto trace (no SASS, no dtype), so the patterns below
// follow the naming of cuBLAS/cuDNN/CUTLASS/NCCL kernels.
#include <algorithm>
#include <array>
#include <cctype>
#include <string>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/common/strings.h"

namespace profile_train::analysis {
namespace {

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }

template <size_t N>
bool contains_any(std::string_view hay, const std::array<std::string_view, N>& needles) {
  for (auto n : needles)
    if (contains(hay, n)) return true;
  return false;
}

}  // namespace

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

// Collective kernels across vendors and library generations (reports/REPORT_FORMAT.md "Kernel classes"):
//   NCCL <= 2.18 "ncclKernel_AllReduce_RING_LL_Sum_float", NCCL >= 2.19 "ncclDevKernel_AllGather_RING_LL(...)",
//   RCCL (ROCm keeps NCCL's names: "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", older
//   "rcclKernel..."), MSCCL/MSCCL++ ("mscclKernel_...", "mscclpp::..."), PyTorch symmetric memory
//   ("multimem_all_reduce_kernel", "one_shot_all_reduce_kernel", "two_shot_all_reduce_kernel"), vLLM's
//   custom all-reduce ("vllm::cross_device_reduce_1stage<...>"), ROCm quick all-reduce
//   ("quickreduce::allreduce_prototype_twoshot<...>") and TensorRT-LLM/FlashInfer fused all-reduce
//   ("allreduce_fusion_kernel_oneshot_lamport<...>"). Kineto's "Collective name" kernel argument marks the
//   rest (trace::Event::collective), whatever the name.
bool is_communication_kernel(std::string_view name) {
  const std::string n = ascii_lower(name);
  static constexpr std::array<std::string_view, 11> kComm = {
      "nccl",        "rccl",          "msccl",           "multimem_all_reduce", "multimem_all_gather",
      "multimem_reduce_scatter",      "one_shot_all_reduce", "two_shot_all_reduce", "cross_device_reduce",
      "quickreduce", "allreduce_fusion_kernel"};
  return contains_any(n, kComm);
}

bool is_dataloader_annotation(std::string_view n) {
  return (n.starts_with("enumerate(DataLoader)#") && n.ends_with(".__next__")) ||
         n.starts_with("enumerate(DataPipe)#");
}

bool is_step_annotation(std::string_view n) { return n.starts_with("ProfilerStep#"); }

bool is_optimizer_step_annotation(std::string_view n) { return n.starts_with("Optimizer.step#"); }

// Tensor-core kernels: cuBLAS/cuDNN HMMA/IMMA kernel tiles ("h884", "s1688", "16816"), CUTLASS tensorop,
// Hopper wgmma, xmma (cuDNN/cuBLASLt on Ampere+ only emits xmma for tensor-core math), TF32/BF16/FP16 GEMMs.
bool is_tensor_core_kernel(std::string_view name) {
  const std::string n = ascii_lower(name);
  static constexpr std::array<std::string_view, 22> kTc = {
      "hmma",   "wgmma",  "xmma",   "imma",    "tensorop", "wmma",   "h884",   "s884",
      "i884",   "h1688",  "s1688",  "i1688",   "16816",    "884gemm", "1688gemm", "_tf32",
      "tf32f32", "bf16gemm", "f16gemm", "fp16_s", "bf16_s", "tensorcore"};
  if (contains_any(n, kTc)) return true;
  // "ampere_fp16_..." / "sm90_..._bf16..." style GEMMs.
  if ((contains(n, "gemm") || contains(n, "conv")) && (contains(n, "bf16") || contains(n, "fp16") || contains(n, "f16f16")))
    return true;
  return false;
}

// FP32 GEMM / convolution kernels that tensor cores could run (TF32 or AMP): SGEMM, cuDNN FP32 convolution
// engines, implicit-GEMM convolutions on float. Tensor-core and FP64 kernels are excluded.
bool is_fp32_tc_eligible_kernel(std::string_view name) {
  if (is_tensor_core_kernel(name) || is_fp64_kernel(name)) return false;
  const std::string n = ascii_lower(name);
  static constexpr std::array<std::string_view, 12> kFp32 = {
      "sgemm",        "scudnn",          "implicit_convolve_sgemm", "convolve_sgemm",
      "dgrad_engine<float", "wgrad_alg0_engine<float", "wgrad_alg1_engine<float", "fprop_engine<float",
      "gemmsn_",      "gemmk1_kernel<float", "cutlass_80_simt_sgemm", "winograd"};
  if (contains_any(n, kFp32)) return true;
  if (contains(n, "cudnn") && contains(n, "conv") && contains(n, "float")) return true;
  if (contains(n, "gemm") && contains(n, "float") && !contains(n, "half") && !contains(n, "bfloat")) return true;
  return false;
}

// TF32 tensor-core kernels (Ampere and newer run FP32 GEMM/convolutions this way when TF32 is allowed): names
// that say "tf32" (cuDNN "..._tf32f32_...", cuBLAS "ampere_tf32_s1688gemm_tf32_..."), and "s1688" tiles with no
// 16-bit input type (m16n8k8 is the TF32 MMA shape; f16/bf16 kernels say so, or use m16n8k16 "16816").
bool is_tf32_kernel(std::string_view name) {
  const std::string n = ascii_lower(name);
  if (contains(n, "tf32")) return true;
  static constexpr std::array<std::string_view, 4> k16 = {"f16", "bf16", "fp16", "half"};
  return contains(n, "s1688") && !contains_any(n, k16);
}

bool is_tc_eligible_op(std::string_view op) {
  const std::string n = ascii_lower(op);
  static constexpr std::array<std::string_view, 9> kOps = {"conv", "addmm", "bmm", "matmul", "linear", "aten::mm",
                                                           "mmbackward", "gemm", "einsum"};
  return contains_any(n, kOps);
}

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

bool is_fp64_kernel(std::string_view name) {
  const std::string n = ascii_lower(name);
  static constexpr std::array<std::string_view, 5> kFp64 = {"dgemm", "<double", "double>", "double,", "fp64"};
  return contains_any(n, kFp64) || contains(n, "(double") || contains(n, " double");
}

bool is_conv_kernel(std::string_view name) {
  const std::string n = ascii_lower(name);
  static constexpr std::array<std::string_view, 9> kConv = {"conv",  "dgrad", "wgrad",    "fprop_", "_fprop",
                                                            "winograd", "cudnn::detail::implicit", "fft2d", "im2col"};
  return contains_any(n, kConv);
}

std::string kernel_category(std::string_view name) {
  if (is_communication_kernel(name)) return "communication";
  if (is_conv_kernel(name)) return "conv";
  const std::string n = ascii_lower(name);
  if (contains(n, "gemm") || contains(n, "gemv") || contains(n, "matmul")) return "gemm";
  if (contains(n, "multi_tensor_apply") || contains(n, "adam") || contains(n, "sgd")) return "optimizer";
  if (contains(n, "norm")) return "normalization";
  if (contains(n, "softmax") || contains(n, "reduce") || contains(n, "nll") || contains(n, "loss")) return "reduction";
  if (contains(n, "elementwise") || contains(n, "unrolled") || contains(n, "vectorized") || contains(n, "pointwise") ||
      contains(n, "triton_poi"))
    return "elementwise";
  if (contains(n, "memcpy") || contains(n, "memset") || contains(n, "copy") || contains(n, "fill")) return "memory";
  return "other";
}

}  // namespace profile_train::analysis
