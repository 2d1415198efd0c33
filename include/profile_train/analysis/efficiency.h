// The efficiency layer (roofline): FLOPs and bytes of an operator call from its recorded input shapes, dtypes
// and scalar arguments; the GPU peak table; and report.json's `efficiency` section built from the operators
// analysis (attribute_operators), which already gives the GPU time of each (operator, input signature) group.
//
// Units: FLOPs and bytes per call are plain counts; rates are TFLOP/s (1e12 FLOP/s) and TB/s (1e12 bytes/s).
// Formulas (reports/REPORT_FORMAT.md, "Efficiency") follow torch.utils.flop_counter's conventions where it has
// one (a multiply-add is 2 FLOPs; bias adds are not counted), so the two agree per call; causal attention
// counts half the score and value products (FlopCounterMode counts the full square).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/model/report.h"
#include "profile_train/common/status.h"

namespace profile_train::analysis {

// What an operator call does, as the roofline sees it.
enum class OpKind { kGemm, kConv, kAttention, kElementwise, kReduction, kNorm };
const char* to_string(OpKind k);
inline bool is_matrix_kind(OpKind k) { return k == OpKind::kGemm || k == OpKind::kConv || k == OpKind::kAttention; }

struct OpCost {
  OpKind kind = OpKind::kElementwise;
  double flops = 0;           // per call
  double bytes = 0;           // per call: every tensor input read once and the output(s) written once
  std::string dtype;          // "fp64" | "fp32" | "fp16" | "bf16" | "fp8" | "int" (of the first tensor input)
  // GEMM only: the (M, N, K) of one product (the batch left out), for the tensor-core alignment check.
  int64_t m = 0, n = 0, k = 0;
};

// The cost of one call of operator `op` ("aten::addmm") with inputs rendered as trace::OpInputs does (dims,
// types, concrete); nullopt when the operator is not modelled or its inputs do not say enough (a convolution
// forward without recorded strides and paddings, a text cut at kMaxInputsText).
std::optional<OpCost> op_cost(std::string_view op, std::string_view dims, std::string_view types,
                              std::string_view concrete);

// Whether the roofline groups GPU time under `op` (analyzers.h, RooflineGroup): it has a FLOPs model and is not
// a composite that only dispatches to one (aten::linear, matmul, conv1d/2d/3d, scaled_dot_product_attention,
// layer_norm, batch_norm, group_norm, softmax, log_softmax).
bool is_roofline_operator(std::string_view op);

// ---- GPU peak table (data/gpu_specs.json, embedded; `--gpu-spec FILE` adds entries) --------------------------
struct GpuSpec {
  std::string name, vendor, compute_capability, source;
  std::vector<std::string> match;  // lowercase, matched on word boundaries of the device name
  double memory_gb = 0, memory_tbps = 0;
  double fp64 = 0, fp32 = 0, tf32 = 0, fp16 = 0, bf16 = 0, fp8 = 0;  // dense TFLOP/s; 0: no such path
  // The peer interconnect ("link": NVLink 4, xGMI, PCIe Gen5 x16): GB/s per direction per GPU; 0: not in the table.
  std::string link_name, link_source;
  double link_gbps = 0;
  // Peak TFLOP/s for operator kind and dtype: matrix kinds use the tensor/matrix rate of the dtype (fp32 uses
  // the FP32 rate, `tf32` asks for TF32), the others the FP32 (fp64: FP64) vector rate. 0 when unknown.
  double peak(std::string_view dtype, bool matrix, bool tf32 = false) const;
};
// The built-in table.
const std::vector<GpuSpec>& builtin_gpu_specs();
// Parses a table in data/gpu_specs.json's format; `origin` names it in errors.
StatusOr<std::vector<GpuSpec>> parse_gpu_specs(std::string_view json_text, std::string_view origin);
// Loads a user's table (`--gpu-spec FILE`); one clear error line on failure.
StatusOr<std::vector<GpuSpec>> load_gpu_spec_file(const std::string& path);
// The spec whose longest `match` text occurs in `device_name` (user entries first, then built-in ones; a
// longer match wins); nullptr when none.
const GpuSpec* match_gpu_spec(std::string_view device_name, const std::vector<GpuSpec>& user);

// ---- The section -----------------------------------------------------------------------------------------------
struct EfficiencyInput {
  const OperatorAttribution& ops;
  double nsteps = 0;
  TimeNs total_ns = 0;          // summed step time
  const GpuSpec* spec = nullptr;  // matched device, or null
  bool has_shapes = false;      // the trace records operator inputs
  bool has_gpu = false;
  std::vector<std::pair<std::string, TimeNs>> kernel_classes;  // kernel kind (kernel_class.h) -> kernel time
};
model::Efficiency efficiency_section(const EfficiencyInput& in);

}  // namespace profile_train::analysis
