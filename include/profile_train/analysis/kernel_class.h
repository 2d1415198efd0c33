// What a GPU kernel computes, in what precision and on which units: one classification per kernel, from the
// strongest evidence the trace holds (reports/REPORT_FORMAT.md, "Kernel classes"):
//   1. Kineto's collective args on the kernel ("Collective name": trace::Event::collective) -> communication;
//   2. the operator that launched it (its External id): a communication operator (c10d::*, record_param_comms,
//      nccl:*, _c10d_functional::*) makes a kernel its name does not classify communication; a matrix operator
//      (aten::mm, convolution, scaled_dot_product_attention, ...) one a GEMM / convolution / attention; its
//      recorded input dtypes (Kineto "Input type") decide the precision;
//   3. the kernel name, matched against the sourced table data/kernel_names.json (embedded; the family names
//      the library, what it computes, the precision or how the name spells it, and the matrix units);
//   4. the table's generic words (gemm, conv, softmax, ...) and dtype words (bf16, float, c10::Half, ...).
// Matrix units (tensor cores, AMD matrix cores): what the name says, else what the precision runs on for a
// matrix kind on the device (16-bit, 8-bit and TF32 GEMMs run on tensor cores where the device has them).
// Every consumer (the GPU section, the breakdown, the operators, the roofline, the rules through the report)
// reads the one classification in TraceIndex: the report cannot say bf16 in one section and FP32 in another.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/common/status.h"

namespace profile_train::analysis {

enum class KernelKind : uint8_t {
  kOther,
  kGemm,
  kConv,
  kAttention,
  kCommunication,
  kElementwise,
  kReduction,
  kNorm,
  kOptimizer,
  kMemory,
};
inline constexpr int kKernelKinds = 10;
// "other", "gemm", "conv", "attention", "communication", "elementwise", "reduction", "normalization",
// "optimizer", "memory" (the names gpu.top_kernels[].category has always used, plus "attention").
const char* to_string(KernelKind k);

enum class Precision : uint8_t { kUnknown, kFp64, kFp32, kTf32, kFp16, kBf16, kFp8, kFp4, kInt8, kInt };
inline constexpr int kPrecisions = 10;
// "unknown", "fp64", "fp32", "tf32", "fp16", "bf16", "fp8", "fp4", "int8", "int".
const char* to_string(Precision p);
inline bool is_low_precision(Precision p) {
  return p == Precision::kFp16 || p == Precision::kBf16 || p == Precision::kFp8 || p == Precision::kFp4 ||
         p == Precision::kInt8;
}
// The precision of a c10 scalar type as Kineto renders it in "Input type" ("c10::BFloat16", "float", "c10::Half",
// "double", "c10::Float8_e4m3fn", "long int", "signed char", ...); kUnknown for anything else ("Scalar", "").
Precision precision_of_dtype(std::string_view c10_type);

// Which evidence decided a kind or a precision.
enum class Evidence : uint8_t { kNone, kCollectiveArgs, kOperator, kOperatorInputs, kKernelName };
inline constexpr int kEvidences = 5;
// "none", "collective_args", "operator", "operator_inputs", "kernel_name".
const char* to_string(Evidence e);

struct KernelClass {
  KernelKind kind = KernelKind::kOther;
  Precision precision = Precision::kUnknown;
  bool matrix_units = false;  // tensor cores / matrix cores (MFMA, WMMA)
  Evidence kind_from = Evidence::kNone, precision_from = Evidence::kNone;
  bool conv_operator = false;  // launched by a convolution operator (whatever the kernel computes)
  int16_t family = -1;         // index into KernelNameTable::families(); -1: no family matched
  bool matrix() const { return kind == KernelKind::kGemm || kind == KernelKind::kConv || kind == KernelKind::kAttention; }
  // GEMM / convolution / attention in FP32 (not TF32): the work tensor cores could run in lower precision.
  bool fp32_matrix() const { return matrix() && precision == Precision::kFp32; }
  bool operator==(const KernelClass&) const = default;
};

// The kernel-name table (data/kernel_names.json): families of kernels by library, matched in table order (the
// first family that matches wins), and the dtype words of kernel names.
struct KernelFamily {
  std::string id, library, source;
  KernelKind kind = KernelKind::kOther;
  bool case_sensitive = false;
  std::vector<std::string> prefix, any, exclude;  // lowercase unless case_sensitive
  Precision precision = Precision::kUnknown;      // fixed by the family (kUnknown: read from the name)
  std::string decode;                             // "" (dtype words), "nvjet", "tensile"
  bool name_precision = true;                     // false: the name's dtype words do not tell the precision
  int8_t matrix_units = -1;                       // 1 yes, 0 no, -1 by precision and device
};
struct PrecisionWords {
  Precision precision = Precision::kUnknown;
  std::vector<std::string> words;  // lowercase; a word matches where no ASCII letter precedes it
  bool fallback = false;           // only when no other group's word matched ("s1688" tiles: TF32)
};
class KernelNameTable {
 public:
  static StatusOr<KernelNameTable> parse(std::string_view json_text, std::string_view origin);
  static const KernelNameTable& builtin();  // the embedded data/kernel_names.json
  const std::vector<KernelFamily>& families() const { return families_; }
  const std::string& format_version() const { return version_; }
  // The class the name alone says (kind_from / precision_from kKernelName where it says them), on an unknown
  // device.
  KernelClass classify_name(std::string_view kernel_name) const;
  // The precision the name's dtype words say (kUnknown when none).
  Precision precision_words(std::string_view lowercase_name) const;
  // The name's answer and whether it decides the matrix units (1 yes, 0 no, -1 by precision and device).
  struct NameClass {
    KernelClass cls;
    int8_t units = -1;
  };
  NameClass classify_name_detail(std::string_view kernel_name) const;

 private:
  std::string version_;
  std::vector<KernelFamily> families_;
  std::vector<PrecisionWords> precision_;  // in priority order: the first group with a match wins
  std::vector<std::string> matrix_words_, no_matrix_words_;  // lowercase substrings: the name says the units
};

// The device the kernels ran on, for what a precision runs on when no name says.
struct DeviceCaps {
  std::string vendor;           // "nvidia", "amd", "" unknown
  int compute_major = -1, compute_minor = -1;  // NVIDIA compute capability; -1 unknown
  bool amd_matrix_cores = true;  // AMD: a CDNA part (MI100 and newer) or unknown
};
// Whether the device runs matrix math of precision `p` on matrix units (unknown devices: yes for 16-bit,
// 8-bit and TF32).
bool has_matrix_units(const DeviceCaps& d, Precision p);

// The launching operator's evidence (empty views: none recorded).
struct LaunchingOperator {
  std::string_view name;   // "aten::mm"
  std::string_view types;  // Kineto "Input type" rendering "[c10::BFloat16, c10::BFloat16]"
};
// Whether `op` is a communication operator (c10d::*, record_param_comms, nccl:*, gloo:*, _c10d_functional::*).
bool is_communication_operator(std::string_view op);
// Whether an operator's recorded inputs are what its kernels read: an operator that computes (aten::*, a library's
// op such as flash_attn::*), not a wrapper of compiled code or autograd (CompiledFunction, "autograd::engine::
// evaluate_function: ...", "Torch-Compiled Region", "## Call CompiledFxGraph ##") or a collective.
bool operator_inputs_are_kernel_inputs(std::string_view op);
// The kind a matrix operator's kernels compute (kGemm / kConv / kAttention), kOther for other operators.
KernelKind matrix_kind_of_operator(std::string_view op);

// The classification of one kernel from all the evidence (see the top of this file).
KernelClass classify_kernel(std::string_view kernel_name, bool collective_arg, const LaunchingOperator& op,
                            const DeviceCaps& device, const KernelNameTable& table = KernelNameTable::builtin());

// Name-only shorthands (the table's answer for a name), for the host-side checks that have no operator.
inline KernelClass classify_kernel_name(std::string_view name) { return KernelNameTable::builtin().classify_name(name); }
inline bool is_communication_kernel(std::string_view name) {
  return classify_kernel_name(name).kind == KernelKind::kCommunication;
}

}  // namespace profile_train::analysis
