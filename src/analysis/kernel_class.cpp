// One classification per kernel (kernel_class.h): the kernel-name table and the evidence order.
#include "profile_train/analysis/kernel_class.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <nlohmann/json.hpp>

#include "profile_train/common/strings.h"

namespace profile_train::analysis {

namespace detail {
extern const char* const kEmbeddedKernelNames;
}

const char* to_string(KernelKind k) {
  switch (k) {
    case KernelKind::kOther: return "other";
    case KernelKind::kGemm: return "gemm";
    case KernelKind::kConv: return "conv";
    case KernelKind::kAttention: return "attention";
    case KernelKind::kCommunication: return "communication";
    case KernelKind::kElementwise: return "elementwise";
    case KernelKind::kReduction: return "reduction";
    case KernelKind::kNorm: return "normalization";
    case KernelKind::kOptimizer: return "optimizer";
    case KernelKind::kMemory: return "memory";
  }
  return "other";
}

const char* to_string(Precision p) {
  switch (p) {
    case Precision::kUnknown: return "unknown";
    case Precision::kFp64: return "fp64";
    case Precision::kFp32: return "fp32";
    case Precision::kTf32: return "tf32";
    case Precision::kFp16: return "fp16";
    case Precision::kBf16: return "bf16";
    case Precision::kFp8: return "fp8";
    case Precision::kFp4: return "fp4";
    case Precision::kInt8: return "int8";
    case Precision::kInt: return "int";
  }
  return "unknown";
}

const char* to_string(Evidence e) {
  switch (e) {
    case Evidence::kNone: return "none";
    case Evidence::kCollectiveArgs: return "collective_args";
    case Evidence::kOperator: return "operator";
    case Evidence::kOperatorInputs: return "operator_inputs";
    case Evidence::kKernelName: return "kernel_name";
  }
  return "none";
}

Precision precision_of_dtype(std::string_view t) {
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
  if (t.rfind("c10::", 0) == 0) t.remove_prefix(5);
  if (t == "float") return Precision::kFp32;
  if (t == "BFloat16") return Precision::kBf16;
  if (t == "Half") return Precision::kFp16;
  if (t == "double") return Precision::kFp64;
  if (t.rfind("Float8", 0) == 0) return Precision::kFp8;   // Float8_e4m3fn, Float8_e5m2, ..._fnuz, e8m0fnu
  if (t.rfind("Float4", 0) == 0) return Precision::kFp4;   // Float4_e2m1fn_x2
  if (t == "signed char" || t == "unsigned char" || t == "int8_t" || t == "uint8_t") return Precision::kInt8;
  if (t == "long int" || t == "long" || t == "int64_t" || t == "int" || t == "int32_t" || t == "short" ||
      t == "bool" || t == "long long")
    return Precision::kInt;
  return Precision::kUnknown;
}

namespace {

bool contains(std::string_view hay, std::string_view needle) { return hay.find(needle) != std::string_view::npos; }
bool is_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// `word` occurs in `lower` where no ASCII letter precedes it ("f16" in "f16f16" and "_f16", not in "bf16").
bool has_word(std::string_view lower, std::string_view word) {
  for (size_t at = lower.find(word); at != std::string_view::npos; at = lower.find(word, at + 1))
    if (at == 0 || !is_letter(lower[at - 1])) return true;
  return false;
}

std::optional<KernelKind> kind_from_name(std::string_view s) {
  static constexpr std::array<std::pair<std::string_view, KernelKind>, 10> kKinds = {{
      {"other", KernelKind::kOther},          {"gemm", KernelKind::kGemm},
      {"conv", KernelKind::kConv},            {"attention", KernelKind::kAttention},
      {"communication", KernelKind::kCommunication}, {"elementwise", KernelKind::kElementwise},
      {"reduction", KernelKind::kReduction},  {"normalization", KernelKind::kNorm},
      {"optimizer", KernelKind::kOptimizer},  {"memory", KernelKind::kMemory},
  }};
  for (auto [n, k] : kKinds)
    if (n == s) return k;
  return std::nullopt;
}

std::optional<Precision> precision_from_name(std::string_view s) {
  for (int i = 0; i < kPrecisions; ++i)
    if (s == to_string(static_cast<Precision>(i))) return static_cast<Precision>(i);
  return std::nullopt;
}

// The type letters of cuBLAS's nvjet kernels ("nvjet_tst_...", "nvjet_sm90_qqtst_...", "nvjet_sm100_ootst_..."):
// after "nvjet_" and an optional "smNN_", a block of type letters whose first is the input's (data/kernel_names.json,
// family cublas-nvjet): s fp32 (TF32 math when the name also says tf32), h fp16, t bf16, q fp8 e4m3, o fp4 e2m1.
// "tss" is BF16 in, FP32 out; "qqtst" FP8 A and B, BF16 out.
Precision decode_nvjet(std::string_view lower) {
  const size_t at = lower.find("nvjet_");
  if (at == std::string_view::npos) return Precision::kUnknown;
  std::string_view rest = lower.substr(at + 6);
  if (rest.rfind("sm", 0) == 0) {
    size_t i = 2;
    while (i < rest.size() && std::isdigit(static_cast<unsigned char>(rest[i]))) ++i;
    if (i > 2 && i < rest.size() && rest[i] == '_') rest.remove_prefix(i + 1);
  }
  size_t n = 0;
  while (n < rest.size() && is_letter(rest[n])) ++n;
  if (n < 3 || n > 6 || (n < rest.size() && rest[n] != '_')) return Precision::kUnknown;
  switch (rest[0]) {
    case 's': return has_word(lower, "tf32") ? Precision::kTf32 : Precision::kFp32;
    case 'h': return Precision::kFp16;
    case 't': return Precision::kBf16;
    case 'q': return Precision::kFp8;
    case 'o': return Precision::kFp4;
    case 'd': return Precision::kFp64;
    default: return Precision::kUnknown;
  }
}

// The data-type block of a Tensile / hipBLASLt kernel name ("Cijk_Ailk_Bljk_BBS_BH_...", "..._HHS_BH_...",
// "..._SB_...", "Cijk_Alik_Bljk_B_BS_BH_Bias_...", "Custom_Cijk_Alik_Bljk_F8B8BS_..."): the first block after the
// A and B layouts. Its letters are Tensile's data types (ROCm/Tensile precision-support: S single, D double, H half,
// B bfloat16, F8 fp8 e4m3, B8 fp8 e5m2, X xfloat32, I int32, I8 int8); the first is the input type.
Precision decode_tensile(std::string_view name) {
  const size_t at = name.find("Cijk_");
  if (at == std::string_view::npos) return Precision::kUnknown;
  name.remove_prefix(at + 5);
  std::vector<std::string_view> blocks;
  size_t start = 0;
  for (size_t i = 0; i <= name.size() && blocks.size() < 4; ++i) {
    if (i == name.size() || name[i] == '_') {
      if (i > start) blocks.push_back(name.substr(start, i - start));
      start = i + 1;
    }
  }
  for (std::string_view blk : blocks) {
    if ((blk[0] == 'A' || blk[0] == 'B') && blk.size() > 1 && std::islower(static_cast<unsigned char>(blk[1])))
      continue;  // Ailk, Alik, Bljk, Bjlk: the layouts
    if (blk.rfind("F8", 0) == 0 || blk.rfind("B8", 0) == 0) return Precision::kFp8;
    if (blk.rfind("I8", 0) == 0) return Precision::kInt8;
    switch (blk[0]) {
      case 'B': return Precision::kBf16;
      case 'H': return Precision::kFp16;
      case 'S': return Precision::kFp32;
      case 'D': return Precision::kFp64;
      case 'X': return Precision::kTf32;
      case 'I': return Precision::kInt;
      default: return Precision::kUnknown;
    }
  }
  return Precision::kUnknown;
}

// Tensile / hipBLASLt names carry the matrix instruction: "_MI16x16x16x1_" / "_MI32x32x8_" (MFMA); without it
// the kernel runs on the vector ALUs (MAC / FMA).
int8_t tensile_matrix_units(std::string_view name) {
  for (size_t at = name.find("_MI"); at != std::string_view::npos; at = name.find("_MI", at + 1))
    if (at + 3 < name.size() && std::isdigit(static_cast<unsigned char>(name[at + 3]))) return 1;
  return 0;
}

bool family_matches(const KernelFamily& f, std::string_view name, std::string_view lower) {
  const std::string_view s = f.case_sensitive ? name : lower;
  if (f.prefix.empty() && f.any.empty()) return false;
  if (!f.prefix.empty() &&
      std::none_of(f.prefix.begin(), f.prefix.end(), [&](const std::string& p) { return s.rfind(p, 0) == 0; }))
    return false;
  if (!f.any.empty() && std::none_of(f.any.begin(), f.any.end(), [&](const std::string& p) { return contains(s, p); }))
    return false;
  return std::none_of(f.exclude.begin(), f.exclude.end(), [&](const std::string& p) { return contains(s, p); });
}

std::vector<std::string> string_list(const nlohmann::json& j, const char* key, bool lower) {
  std::vector<std::string> out;
  auto it = j.find(key);
  if (it == j.end()) return out;
  if (!it->is_array()) throw std::runtime_error(std::string("\"") + key + "\" is not an array of strings");
  for (const auto& v : *it) {
    if (!v.is_string() || v.get<std::string>().empty())
      throw std::runtime_error(std::string("\"") + key + "\" holds a value that is not a non-empty string");
    out.push_back(lower ? ascii_lower(v.get<std::string>()) : v.get<std::string>());
  }
  return out;
}

}  // namespace

StatusOr<KernelNameTable> KernelNameTable::parse(std::string_view json_text, std::string_view origin) {
  const std::string where(origin);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(json_text);
  } catch (const std::exception& e) {
    return BadInput(where + ": not valid JSON (" + e.what() + ")");
  }
  KernelNameTable t;
  try {
    if (!j.is_object() || !j.contains("format_version") || !j["format_version"].is_string())
      return BadInput(where + ": no \"format_version\"");
    t.version_ = j["format_version"].get<std::string>();
    if (t.version_.rfind("1.", 0) != 0)
      return BadInput(where + ": format_version " + t.version_ + " is not supported (expected 1.x)");
    if (!j.contains("families") || !j["families"].is_array()) return BadInput(where + ": no \"families\" array");
    for (const auto& f : j["families"]) {
      KernelFamily fam;
      fam.id = f.value("id", "");
      if (fam.id.empty()) return BadInput(where + ": a family without an \"id\"");
      const std::string at = where + ": family \"" + fam.id + "\"";
      fam.library = f.value("library", "");
      fam.source = f.value("source", "");
      if (fam.source.empty()) return BadInput(at + " has no \"source\"");
      auto kind = kind_from_name(f.value("kind", ""));
      if (!kind) return BadInput(at + ": unknown \"kind\" \"" + f.value("kind", "") + "\"");
      fam.kind = *kind;
      fam.case_sensitive = f.value("case", "insensitive") == "sensitive";
      fam.prefix = string_list(f, "prefix", !fam.case_sensitive);
      fam.any = string_list(f, "any", !fam.case_sensitive);
      fam.exclude = string_list(f, "exclude", !fam.case_sensitive);
      if (fam.prefix.empty() && fam.any.empty()) return BadInput(at + " matches nothing (no \"prefix\" or \"any\")");
      if (f.contains("precision") && !f["precision"].is_null()) {
        auto p = precision_from_name(f["precision"].is_string() ? f["precision"].get<std::string>() : "");
        if (!p) return BadInput(at + ": unknown \"precision\"");
        fam.precision = *p;
      }
      fam.decode = f.value("decode", "");
      fam.name_precision = f.value("name_precision", true);
      if (!fam.decode.empty() && fam.decode != "nvjet" && fam.decode != "tensile")
        return BadInput(at + ": unknown \"decode\" \"" + fam.decode + "\" (expected nvjet or tensile)");
      if (f.contains("matrix_units") && !f["matrix_units"].is_null()) {
        if (!f["matrix_units"].is_boolean()) return BadInput(at + ": \"matrix_units\" is not true, false or null");
        fam.matrix_units = f["matrix_units"].get<bool>() ? 1 : 0;
      }
      if (t.families_.size() >= 32000) return BadInput(where + ": more than 32000 families");
      t.families_.push_back(std::move(fam));
    }
    if (j.contains("precision_words")) {
      if (!j["precision_words"].is_array()) return BadInput(where + ": \"precision_words\" is not an array");
      for (const auto& g : j["precision_words"]) {
        PrecisionWords w;
        auto p = precision_from_name(g.value("precision", ""));
        if (!p || *p == Precision::kUnknown) return BadInput(where + ": precision_words entry with an unknown \"precision\"");
        w.precision = *p;
        w.words = string_list(g, "words", true);
        w.fallback = g.value("fallback", false);
        if (g.value("source", "").empty()) return BadInput(where + ": precision_words \"" + g.value("precision", "") + "\" has no \"source\"");
        t.precision_.push_back(std::move(w));
      }
    }
    if (j.contains("matrix_unit_words")) {
      const auto& m = j["matrix_unit_words"];
      if (!m.is_object() || m.value("source", "").empty())
        return BadInput(where + ": \"matrix_unit_words\" is not an object with a \"source\"");
      t.matrix_words_ = string_list(m, "yes", true);
      t.no_matrix_words_ = string_list(m, "no", true);
    }
  } catch (const std::exception& e) {
    return BadInput(where + ": " + e.what());
  }
  return t;
}

const KernelNameTable& KernelNameTable::builtin() {
  static const KernelNameTable table = [] {
    auto t = parse(detail::kEmbeddedKernelNames, "data/kernel_names.json (built in)");
    // The embedded table is checked by the tests; a broken one must not take the analysis down.
    return t.ok() ? std::move(*t) : KernelNameTable();
  }();
  return table;
}

Precision KernelNameTable::precision_words(std::string_view lower) const {
  Precision fallback = Precision::kUnknown;
  for (const auto& g : precision_) {
    const bool hit = std::any_of(g.words.begin(), g.words.end(), [&](const std::string& w) { return has_word(lower, w); });
    if (!hit) continue;
    if (!g.fallback) return g.precision;
    if (fallback == Precision::kUnknown) fallback = g.precision;
  }
  return fallback;
}

KernelNameTable::NameClass KernelNameTable::classify_name_detail(std::string_view name) const {
  NameClass out;
  KernelClass& c = out.cls;
  const std::string lower = ascii_lower(name);
  const KernelFamily* fam = nullptr;
  for (size_t i = 0; i < families_.size(); ++i) {
    if (!family_matches(families_[i], name, lower)) continue;
    fam = &families_[i];
    c.family = static_cast<int16_t>(i);
    c.kind = fam->kind;
    if (fam->kind != KernelKind::kOther) c.kind_from = Evidence::kKernelName;
    if (fam->precision != Precision::kUnknown) c.precision = fam->precision;
    else if (fam->decode == "nvjet") c.precision = decode_nvjet(lower);
    else if (fam->decode == "tensile") c.precision = decode_tensile(name);
    out.units = fam->matrix_units;
    if (fam->decode == "tensile" && out.units < 0) out.units = tensile_matrix_units(name);
    break;
  }
  if (c.precision == Precision::kUnknown && (fam == nullptr || fam->name_precision)) c.precision = precision_words(lower);
  if (c.precision != Precision::kUnknown) c.precision_from = Evidence::kKernelName;
  if (out.units < 0) {
    auto any = [&](const std::vector<std::string>& words) {
      return std::any_of(words.begin(), words.end(), [&](const std::string& w) { return contains(lower, w); });
    };
    if (any(no_matrix_words_)) out.units = 0;
    else if (any(matrix_words_)) out.units = 1;
  }
  return out;
}

KernelClass KernelNameTable::classify_name(std::string_view name) const {
  return classify_kernel(name, false, LaunchingOperator{}, DeviceCaps{}, *this);
}

bool has_matrix_units(const DeviceCaps& d, Precision p) {
  if (p == Precision::kUnknown || p == Precision::kFp64 || p == Precision::kInt) return false;
  if (d.vendor == "amd") return d.amd_matrix_cores && p != Precision::kFp32 && p != Precision::kFp4;
  if (p == Precision::kFp32) return false;
  if (d.compute_major < 0) return true;  // unknown device: 16-bit, 8-bit and TF32 GEMMs use them where they exist
  const int cc = d.compute_major * 10 + std::max(0, d.compute_minor);
  switch (p) {
    case Precision::kFp16: return cc >= 70;
    case Precision::kInt8: return cc >= 72;
    case Precision::kBf16:
    case Precision::kTf32: return cc >= 80;
    case Precision::kFp8: return cc >= 89;
    case Precision::kFp4: return cc >= 100;
    default: return false;
  }
}

bool is_communication_operator(std::string_view op) {
  return op.rfind("c10d::", 0) == 0 || op == "record_param_comms" || op.rfind("nccl:", 0) == 0 ||
         op.rfind("gloo:", 0) == 0 || op.rfind("_c10d_functional::", 0) == 0 ||
         op.rfind("c10d_functional::", 0) == 0 || op.rfind("_dtensor::", 0) == 0 ||
         op.rfind("symm_mem::", 0) == 0;
}

bool operator_inputs_are_kernel_inputs(std::string_view op) {
  if (op.find("::") == std::string_view::npos) return false;  // CompiledFunction, Optimizer.step#..., annotations
  return op.rfind("autograd::", 0) != 0 && op.rfind("profiler::", 0) != 0 && op.find("Compiled") == std::string_view::npos &&
         !is_communication_operator(op);
}

KernelKind matrix_kind_of_operator(std::string_view op) {
  static constexpr std::array<std::string_view, 16> kGemm = {
      "aten::mm",          "aten::addmm",        "aten::bmm",          "aten::baddbmm",
      "aten::matmul",      "aten::linear",       "aten::_scaled_mm",   "aten::_int_mm",
      "aten::_grouped_mm", "aten::_scaled_grouped_mm", "aten::addbmm", "aten::_addmm_activation",
      "aten::mv",          "aten::addmv",        "aten::einsum",       "aten::_weight_int4pack_mm"};
  for (auto g : kGemm)
    if (op == g) return KernelKind::kGemm;
  if (op.rfind("aten::", 0) == 0 &&
      (contains(op, "convolution") || contains(op, "conv1d") || contains(op, "conv2d") || contains(op, "conv3d") ||
       contains(op, "conv_transpose") || contains(op, "conv_depthwise")))
    return KernelKind::kConv;
  if (op.rfind("aten::", 0) == 0 &&
      (contains(op, "scaled_dot_product") || contains(op, "flash_attention") || contains(op, "efficient_attention") ||
       contains(op, "_cudnn_attention") || contains(op, "_fused_attention")))
    return KernelKind::kAttention;
  if (op.rfind("flash_attn::", 0) == 0 || op.rfind("flash_attn_3::", 0) == 0) return KernelKind::kAttention;
  return KernelKind::kOther;
}

namespace {

// The first entry of a rendered type list "[c10::BFloat16, c10::BFloat16, Scalar]" that is a tensor dtype.
Precision first_tensor_precision(std::string_view types) {
  if (types.size() < 2 || types.front() != '[') return Precision::kUnknown;
  types.remove_prefix(1);
  size_t start = 0;
  int depth = 0;
  for (size_t i = 0; i <= types.size(); ++i) {
    const bool end = i == types.size() || ((types[i] == ',' || types[i] == ']') && depth == 0);
    if (i < types.size() && types[i] == '[') ++depth;
    if (i < types.size() && types[i] == ']' && depth > 0) { --depth; continue; }
    if (!end) continue;
    const Precision p = precision_of_dtype(types.substr(start, i - start));
    if (p != Precision::kUnknown) return p;
    if (i < types.size() && types[i] == ']') break;
    start = i + 1;
  }
  return Precision::kUnknown;
}

bool is_conv_operator(std::string_view op) {
  const std::string l = ascii_lower(op);
  return contains(l, "conv");
}

}  // namespace

KernelClass classify_kernel(std::string_view kernel_name, bool collective_arg, const LaunchingOperator& op,
                            const DeviceCaps& device, const KernelNameTable& table) {
  const KernelNameTable::NameClass named = table.classify_name_detail(kernel_name);
  KernelClass c = named.cls;
  if (collective_arg) {
    c.kind = KernelKind::kCommunication;
    c.kind_from = Evidence::kCollectiveArgs;
  } else if (c.kind == KernelKind::kOther && !op.name.empty()) {
    if (is_communication_operator(op.name)) {
      c.kind = KernelKind::kCommunication;
      c.kind_from = Evidence::kOperator;
    } else if (const KernelKind k = matrix_kind_of_operator(op.name); k != KernelKind::kOther) {
      c.kind = k;
      c.kind_from = Evidence::kOperator;
    }
  }
  c.conv_operator = !op.name.empty() && is_conv_operator(op.name);
  if (c.kind != KernelKind::kCommunication) {
    if (const Precision p = first_tensor_precision(op.types); p != Precision::kUnknown) {
      // The inputs' dtype; TF32 refines FP32 below when the kernel runs on tensor cores.
      c.precision = c.precision == Precision::kTf32 && p == Precision::kFp32 ? Precision::kTf32 : p;
      c.precision_from = Evidence::kOperatorInputs;
    }
  }
  c.matrix_units = named.units >= 0 ? named.units == 1 : c.matrix() && has_matrix_units(device, c.precision);
  // FP32 math on NVIDIA tensor cores is TF32 (AMD's matrix cores run FP32 itself).
  if (c.matrix_units && c.precision == Precision::kFp32 && device.vendor != "amd") c.precision = Precision::kTf32;
  return c;
}

}  // namespace profile_train::analysis
