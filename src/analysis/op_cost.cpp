// FLOPs and bytes of one operator call from its recorded inputs (efficiency.h). The input texts are the
// importer's renderings: dims "[[4, 197, 768], [768], []]", types "[c10::BFloat16, float, Scalar]", concrete
// "[, , [2, 2], 1, True]" (one entry per input). Formulas: reports/REPORT_FORMAT.md, "Efficiency".
#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <unordered_map>

#include "profile_train/analysis/efficiency.h"

namespace profile_train::analysis {

const char* to_string(OpKind k) {
  switch (k) {
    case OpKind::kGemm: return "gemm";
    case OpKind::kConv: return "conv";
    case OpKind::kAttention: return "attention";
    case OpKind::kElementwise: return "elementwise";
    case OpKind::kReduction: return "reduction";
    case OpKind::kNorm: return "norm";
  }
  return "elementwise";
}

namespace {

using Shape = std::vector<int64_t>;

// The top-level entries of a rendered list "[a, [b, c], d]" (brackets inside an entry kept); nullopt when the
// text was cut ("...") or is not a list.
std::optional<std::vector<std::string_view>> entries(std::string_view s) {
  if (s.size() < 2 || s.front() != '[' || s.back() != ']') return std::nullopt;
  std::vector<std::string_view> out;
  s = s.substr(1, s.size() - 2);
  if (s.empty()) return out;
  int depth = 0;
  size_t start = 0;
  for (size_t i = 0; i <= s.size(); ++i) {
    if (i == s.size() || (s[i] == ',' && depth == 0)) {
      std::string_view e = s.substr(start, i - start);
      while (!e.empty() && e.front() == ' ') e.remove_prefix(1);
      while (!e.empty() && e.back() == ' ') e.remove_suffix(1);
      out.push_back(e);
      start = i + 1;
    } else if (s[i] == '[') {
      ++depth;
    } else if (s[i] == ']') {
      --depth;
    }
  }
  return out;
}

// "[4, 197, 768]" -> {4, 197, 768}; nullopt for anything else (a TensorList "[[..], [..]]", "?", "").
std::optional<Shape> shape_of(std::string_view e) {
  if (e.size() < 2 || e.front() != '[' || e.back() != ']') return std::nullopt;
  Shape out;
  e = e.substr(1, e.size() - 2);
  size_t i = 0;
  while (i < e.size()) {
    while (i < e.size() && e[i] == ' ') ++i;
    if (i == e.size()) break;
    if (!std::isdigit(static_cast<unsigned char>(e[i]))) return std::nullopt;
    int64_t v = 0;
    while (i < e.size() && std::isdigit(static_cast<unsigned char>(e[i]))) v = v * 10 + (e[i++] - '0');
    out.push_back(v);
    while (i < e.size() && e[i] == ' ') ++i;
    if (i < e.size() && e[i] != ',') return std::nullopt;
    ++i;
  }
  return out;
}

// A concrete int list "[2, 2]" or an int "1".
std::optional<Shape> ints_of(std::string_view e) {
  if (!e.empty() && e.front() == '[') return shape_of(e);
  if (e.empty()) return std::nullopt;
  Shape out{0};
  bool neg = e.front() == '-';
  if (neg) e.remove_prefix(1);
  for (char c : e) {
    if (!std::isdigit(static_cast<unsigned char>(c))) return std::nullopt;
    out[0] = out[0] * 10 + (c - '0');
  }
  if (neg) out[0] = -out[0];
  return out;
}

double numel(const Shape& s) {
  double n = 1;
  for (int64_t d : s) n *= static_cast<double>(d);
  return n;
}

// Element size in bytes and the roofline dtype of a c10 type name.
struct DtypeInfo {
  double size = 0;
  const char* cls = "";
};
DtypeInfo dtype_info(std::string_view t) {
  if (t.rfind("c10::", 0) == 0) t.remove_prefix(5);
  if (t == "float") return {4, "fp32"};
  if (t == "BFloat16") return {2, "bf16"};
  if (t == "Half") return {2, "fp16"};
  if (t == "double") return {8, "fp64"};
  if (t.rfind("Float8", 0) == 0) return {1, "fp8"};
  if (t == "long int" || t == "long" || t == "int64_t") return {8, "int"};
  if (t == "int") return {4, "int"};
  if (t == "short") return {2, "int"};
  if (t == "bool" || t == "unsigned char" || t == "signed char" || t == "char") return {1, "int"};
  return {};
}

struct Args {
  std::vector<std::optional<Shape>> shapes;  // per input: a tensor's shape, or nullopt
  std::vector<DtypeInfo> types;              // per input (size 0: not a tensor / unknown)
  std::vector<std::string_view> concrete;    // per input ("" when not recorded)
  const Shape* t(size_t i) const {
    // A tensor input: a shape and a tensor dtype (Scalar / ScalarList inputs render "[]" dims too).
    return i < shapes.size() && shapes[i] && i < types.size() && types[i].size > 0 ? &*shapes[i] : nullptr;
  }
  double esize(size_t i) const { return i < types.size() ? types[i].size : 0; }
  std::string_view c(size_t i) const { return i < concrete.size() ? concrete[i] : std::string_view(); }
  // Bytes of tensor input i (0 when it is not one).
  double bytes(size_t i) const { return t(i) ? numel(*t(i)) * esize(i) : 0; }
  double all_tensor_bytes() const {
    double b = 0;
    for (size_t i = 0; i < shapes.size(); ++i) b += bytes(i);
    return b;
  }
};

std::optional<Args> parse_args(std::string_view dims, std::string_view types, std::string_view concrete) {
  const auto d = entries(dims), ty = entries(types);
  if (!d || !ty) return std::nullopt;
  Args a;
  for (auto e : *d) a.shapes.push_back(shape_of(e));
  for (auto e : *ty) a.types.push_back(dtype_info(e));
  if (auto c = entries(concrete)) a.concrete = std::move(*c);
  return a;
}

std::optional<bool> bool_of(std::string_view e) {
  if (e == "True" || e == "true" || e == "1") return true;
  if (e == "False" || e == "false" || e == "0") return false;
  return std::nullopt;
}

OpCost base(OpKind kind, const Args& a, size_t first) {
  OpCost c;
  c.kind = kind;
  if (first < a.types.size()) c.dtype = a.types[first].cls;
  return c;
}

// ---- GEMM ----
std::optional<OpCost> gemm(const Args& a, size_t ia, size_t ib, std::optional<size_t> bias) {
  const Shape *x = a.t(ia), *y = a.t(ib);
  if (!x || !y || x->size() < 2 || y->size() < 2 || x->size() != y->size() || x->size() > 3) return std::nullopt;
  const bool batched = x->size() == 3;
  const double b = batched ? static_cast<double>((*x)[0]) : 1;
  const int64_t m = (*x)[x->size() - 2], k = (*x)[x->size() - 1], n = (*y)[y->size() - 1];
  if ((*y)[y->size() - 2] != k) return std::nullopt;
  OpCost c = base(OpKind::kGemm, a, ia);
  c.m = m, c.n = n, c.k = k;
  c.flops = 2.0 * b * m * n * k;
  c.bytes = a.bytes(ia) + a.bytes(ib) + b * m * n * a.esize(ia) + (bias ? a.bytes(*bias) : 0);
  return c;
}

// aten::matmul / aten::linear: broadcast batch dims, 1-D operands as a row / column.
std::optional<OpCost> matmul(const Args& a, bool linear) {
  const Shape *x = a.t(0), *y = a.t(1);
  if (!x || !y || x->empty() || y->empty()) return std::nullopt;
  int64_t m, k, n;
  double batch = 1;
  if (linear) {  // y: weight [N, K] (or [K])
    k = x->back();
    m = 1;
    for (size_t i = 0; i + 1 < x->size(); ++i) m *= (*x)[i];
    n = y->size() == 2 ? (*y)[0] : 1;
    if (y->back() != k) return std::nullopt;
  } else {
    k = x->back();
    m = x->size() >= 2 ? (*x)[x->size() - 2] : 1;
    n = y->size() >= 2 ? y->back() : 1;
    if ((y->size() >= 2 ? (*y)[y->size() - 2] : (*y)[0]) != k) return std::nullopt;
    const size_t bx = x->size() > 2 ? x->size() - 2 : 0, by = y->size() > 2 ? y->size() - 2 : 0;
    for (size_t i = 0; i < std::max(bx, by); ++i) {
      const int64_t dx = i < bx ? (*x)[bx - 1 - i] : 1, dy = i < by ? (*y)[by - 1 - i] : 1;
      batch *= static_cast<double>(std::max(dx, dy));
    }
  }
  OpCost c = base(OpKind::kGemm, a, 0);
  c.m = m, c.n = n, c.k = k;
  c.flops = 2.0 * batch * m * n * k;
  c.bytes = a.bytes(0) + a.bytes(1) + batch * m * n * a.esize(0) + (linear ? a.bytes(2) : 0);
  return c;
}

// ---- Convolution ----
// Forward FLOPs 2 x N x prod(out spatial) x prod(kernel) x Cout x Cin/groups (the weight's first two dims;
// transposed: the input's spatial dims), as FlopCounterMode counts them.
struct ConvArgs {
  size_t stride, padding, dilation;
  std::optional<size_t> transposed, output_padding;
};
std::optional<OpCost> conv_forward(const Args& a, const ConvArgs& at) {
  const Shape *x = a.t(0), *w = a.t(1);
  if (!x || !w || x->size() < 3 || x->size() != w->size()) return std::nullopt;
  const size_t sp = x->size() - 2;
  bool transposed = false;
  if (at.transposed) {
    const auto tr = bool_of(a.c(*at.transposed));
    if (!tr) return std::nullopt;
    transposed = *tr;
  }
  Shape out_sp(sp);
  const auto stride = ints_of(a.c(at.stride)), dilation = ints_of(a.c(at.dilation));
  const auto padding = ints_of(a.c(at.padding));
  if (!stride || !dilation || !padding) return std::nullopt;  // "same"/"valid" padding or nothing recorded
  auto pick = [&](const Shape& v, size_t i) { return v.size() == 1 ? v[0] : i < v.size() ? v[i] : -1; };
  Shape op(sp, 0);
  if (at.output_padding) {
    if (auto o = ints_of(a.c(*at.output_padding))) op = *o;
  }
  for (size_t i = 0; i < sp; ++i) {
    const int64_t in = (*x)[2 + i], kk = (*w)[2 + i], s = pick(*stride, i), d = pick(*dilation, i), p = pick(*padding, i);
    if (s <= 0 || d <= 0 || p < 0) return std::nullopt;
    out_sp[i] = transposed ? (in - 1) * s - 2 * p + d * (kk - 1) + pick(op, i) + 1 : (in + 2 * p - d * (kk - 1) - 1) / s + 1;
    if (out_sp[i] <= 0) return std::nullopt;
  }
  double kernel = 1;
  for (size_t i = 2; i < w->size(); ++i) kernel *= static_cast<double>((*w)[i]);
  const double spatial = transposed ? numel(Shape(x->begin() + 2, x->end())) : numel(out_sp);
  OpCost c = base(OpKind::kConv, a, 0);
  c.flops = 2.0 * (*x)[0] * spatial * kernel * (*w)[0] * (*w)[1];
  const double cout = transposed ? static_cast<double>((*w)[1]) * 1 : static_cast<double>((*w)[0]);
  // The output's channels: Cout = weight dim 0 (transposed: dim 1 x groups; groups unknown here counts 1).
  c.bytes = a.bytes(0) + a.bytes(1) + a.bytes(2) + (*x)[0] * cout * numel(out_sp) * a.esize(0);  // (+ bias)
  return c;
}

// aten::convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation, transposed,
// output_padding, groups, output_mask): grad_input and grad_weight each cost the forward's FLOPs.
std::optional<OpCost> conv_backward(const Args& a) {
  const Shape *go = a.t(0), *x = a.t(1), *w = a.t(2);
  if (!go || !x || !w || x->size() < 3 || go->size() != x->size() || w->size() != x->size()) return std::nullopt;
  const bool transposed = bool_of(a.c(7)).value_or(false);
  bool gi = true, gw = true;  // output_mask; both when not recorded
  if (auto mask = entries(a.c(10)); mask && mask->size() >= 2) {
    gi = bool_of((*mask)[0]).value_or(true);
    gw = bool_of((*mask)[1]).value_or(true);
  }
  double kernel = 1;
  for (size_t i = 2; i < w->size(); ++i) kernel *= static_cast<double>((*w)[i]);
  const Shape& conv_shape = transposed ? *x : *go;
  const double fwd = 2.0 * (*x)[0] * numel(Shape(conv_shape.begin() + 2, conv_shape.end())) * kernel * (*w)[0] * (*w)[1];
  OpCost c = base(OpKind::kConv, a, 1);
  c.flops = (gi ? fwd : 0) + (gw ? fwd : 0);
  c.bytes = a.bytes(0) + a.bytes(1) + a.bytes(2) + (gi ? a.bytes(1) : 0) + (gw ? a.bytes(2) : 0);
  return c;
}

// ---- Attention ----
// q [B, H, Sq, D], k [B, Hkv, Sk, D], v [B, Hkv, Sk, Dv] (bshd: [B, S, H, D], the flash / mem-efficient
// kernels' layout). Forward 2·B·H·Sq·Sk·(D + Dv); backward 2·B·H·Sq·Sk·(3·D + 2·Dv) (FlopCounterMode's five
// products); causal halves both.
std::optional<OpCost> attention(const Args& a, size_t q_at, bool bshd, bool backward, std::optional<bool> causal) {
  const Shape *q = a.t(q_at), *k = a.t(q_at + 1), *v = a.t(q_at + 2);
  if (!q || !k || !v || q->size() != 4 || k->size() != 4 || v->size() != 4) return std::nullopt;
  const int hx = bshd ? 2 : 1, sx = bshd ? 1 : 2;
  const double b = (*q)[0], h = (*q)[hx], sq = (*q)[sx], d = (*q)[3], sk = (*k)[sx], dv = (*v)[3];
  OpCost c = base(OpKind::kAttention, a, q_at);
  c.flops = 2.0 * b * h * sq * sk * (backward ? 3 * d + 2 * dv : d + dv);
  if (causal.value_or(false)) c.flops *= 0.5;
  const double out = b * h * sq * dv * a.esize(q_at);
  c.bytes = a.bytes(q_at) + a.bytes(q_at + 1) + a.bytes(q_at + 2) + out;
  if (backward) c.bytes = 2 * c.bytes + out;  // reads grad_out, out, q, k, v; writes dq, dk, dv
  return c;
}

// ---- Memory-bound classes ----
// Elementwise: FLOPs per output element `per`, bytes: every tensor input read once + the output written once
// (the output shape: the broadcast of the inputs, or the first input's for in-place ops).
std::optional<OpCost> elementwise(const Args& a, double per, OpKind kind = OpKind::kElementwise, bool writes = true) {
  Shape out;
  size_t first = SIZE_MAX;
  for (size_t i = 0; i < a.shapes.size(); ++i) {
    const Shape* s = a.t(i);
    if (!s) continue;
    if (first == SIZE_MAX) first = i;
    if (s->size() > out.size()) out.insert(out.begin(), s->size() - out.size(), 1);
    for (size_t j = 0; j < s->size(); ++j) {
      int64_t& o = out[out.size() - s->size() + j];
      o = std::max(o, (*s)[j]);
    }
  }
  if (first == SIZE_MAX) return std::nullopt;
  OpCost c = base(kind, a, first);
  const double n = numel(out);
  c.flops = per * n;
  c.bytes = a.all_tensor_bytes() + (writes ? n * a.esize(first) : 0);
  return c;
}

// Reductions and softmax: the first input read, an output of the reduced (or same) size written.
std::optional<OpCost> reduction(const Args& a, double per, bool same_size_out) {
  const Shape* x = a.t(0);
  if (!x) return std::nullopt;
  OpCost c = base(OpKind::kReduction, a, 0);
  const double n = numel(*x);
  c.flops = per * n;
  c.bytes = a.all_tensor_bytes() + (same_size_out ? n * a.esize(0) : 0);
  return c;
}

// Normalizations: `per` FLOPs per element (mean, variance, normalize, affine), the input read and the output
// written, parameters read.
std::optional<OpCost> norm(const Args& a, double per, size_t x_at = 0) {
  const Shape* x = a.t(x_at);
  if (!x) return std::nullopt;
  OpCost c = base(OpKind::kNorm, a, x_at);
  const double n = numel(*x);
  c.flops = per * n;
  c.bytes = a.all_tensor_bytes() + n * a.esize(x_at);
  return c;
}

enum class Rule : uint8_t {
  kMm, kAddmm, kBmm, kBaddbmm, kMatmul, kLinear, kScaledMm,
  kConvolution, kConvNd, kCudnnConv, kMiopenConv, kMkldnnConv, kConvBackward,
  kSdpaFlash, kSdpaEfficient, kSdpaCudnn, kSdpaCpu, kSdpa, kFlashFwd, kEffFwd,
  kSdpaFlashBwd, kSdpaEfficientBwd, kSdpaCudnnBwd, kSdpaCpuBwd, kFlashBwd, kEffBwd,
  kUnary, kUnaryHeavy, kBinary, kTernary, kCopy, kFill,
  kSum, kSoftmax, kSoftmaxBwd,
  kLayerNorm, kNativeLayerNorm, kLayerNormBwd, kBatchNorm, kGroupNorm, kRmsNorm,
};

const std::unordered_map<std::string_view, Rule>& rules() {
  static const std::unordered_map<std::string_view, Rule> m = {
      {"aten::mm", Rule::kMm}, {"aten::addmm", Rule::kAddmm}, {"aten::bmm", Rule::kBmm},
      {"aten::baddbmm", Rule::kBaddbmm}, {"aten::matmul", Rule::kMatmul}, {"aten::linear", Rule::kLinear},
      {"aten::_scaled_mm", Rule::kScaledMm},
      {"aten::convolution", Rule::kConvolution}, {"aten::_convolution", Rule::kConvolution},
      {"aten::conv1d", Rule::kConvNd}, {"aten::conv2d", Rule::kConvNd}, {"aten::conv3d", Rule::kConvNd},
      {"aten::cudnn_convolution", Rule::kCudnnConv}, {"aten::miopen_convolution", Rule::kMiopenConv},
      {"aten::mkldnn_convolution", Rule::kMkldnnConv}, {"aten::convolution_backward", Rule::kConvBackward},
      {"aten::_scaled_dot_product_flash_attention", Rule::kSdpaFlash},
      {"aten::_scaled_dot_product_efficient_attention", Rule::kSdpaEfficient},
      {"aten::_scaled_dot_product_cudnn_attention", Rule::kSdpaCudnn},
      {"aten::_scaled_dot_product_flash_attention_for_cpu", Rule::kSdpaCpu},
      {"aten::scaled_dot_product_attention", Rule::kSdpa},
      {"aten::_flash_attention_forward", Rule::kFlashFwd}, {"aten::_efficient_attention_forward", Rule::kEffFwd},
      {"aten::_scaled_dot_product_flash_attention_backward", Rule::kSdpaFlashBwd},
      {"aten::_scaled_dot_product_efficient_attention_backward", Rule::kSdpaEfficientBwd},
      {"aten::_scaled_dot_product_cudnn_attention_backward", Rule::kSdpaCudnnBwd},
      {"aten::_scaled_dot_product_flash_attention_for_cpu_backward", Rule::kSdpaCpuBwd},
      {"aten::_flash_attention_backward", Rule::kFlashBwd}, {"aten::_efficient_attention_backward", Rule::kEffBwd},
      {"aten::relu", Rule::kUnary}, {"aten::relu_", Rule::kUnary}, {"aten::neg", Rule::kUnary},
      {"aten::abs", Rule::kUnary}, {"aten::clamp", Rule::kUnary}, {"aten::clamp_", Rule::kUnary},
      {"aten::clamp_min", Rule::kUnary}, {"aten::clamp_min_", Rule::kUnary}, {"aten::threshold_backward", Rule::kBinary},
      {"aten::gelu", Rule::kUnaryHeavy}, {"aten::gelu_backward", Rule::kUnaryHeavy}, {"aten::silu", Rule::kUnaryHeavy},
      {"aten::silu_", Rule::kUnaryHeavy}, {"aten::silu_backward", Rule::kUnaryHeavy},
      {"aten::sigmoid", Rule::kUnaryHeavy}, {"aten::tanh", Rule::kUnaryHeavy}, {"aten::exp", Rule::kUnary},
      {"aten::sqrt", Rule::kUnary}, {"aten::rsqrt", Rule::kUnary}, {"aten::reciprocal", Rule::kUnary},
      {"aten::pow", Rule::kUnary}, {"aten::log", Rule::kUnary}, {"aten::erf", Rule::kUnary},
      {"aten::add", Rule::kBinary}, {"aten::add_", Rule::kBinary}, {"aten::sub", Rule::kBinary},
      {"aten::sub_", Rule::kBinary}, {"aten::mul", Rule::kBinary}, {"aten::mul_", Rule::kBinary},
      {"aten::div", Rule::kBinary}, {"aten::div_", Rule::kBinary}, {"aten::maximum", Rule::kBinary},
      {"aten::minimum", Rule::kBinary}, {"aten::where", Rule::kBinary}, {"aten::masked_fill", Rule::kBinary},
      {"aten::masked_fill_", Rule::kBinary}, {"aten::addcmul_", Rule::kTernary}, {"aten::addcdiv_", Rule::kTernary},
      {"aten::lerp_", Rule::kTernary},
      {"aten::copy_", Rule::kCopy}, {"aten::clone", Rule::kCopy}, {"aten::_to_copy", Rule::kCopy},
      {"aten::contiguous", Rule::kCopy},
      {"aten::fill_", Rule::kFill}, {"aten::zero_", Rule::kFill},
      {"aten::sum", Rule::kSum}, {"aten::mean", Rule::kSum}, {"aten::amax", Rule::kSum}, {"aten::max", Rule::kSum},
      {"aten::_softmax", Rule::kSoftmax}, {"aten::softmax", Rule::kSoftmax}, {"aten::_log_softmax", Rule::kSoftmax},
      {"aten::log_softmax", Rule::kSoftmax}, {"aten::_softmax_backward_data", Rule::kSoftmaxBwd},
      {"aten::_log_softmax_backward_data", Rule::kSoftmaxBwd},
      {"aten::layer_norm", Rule::kLayerNorm}, {"aten::native_layer_norm", Rule::kNativeLayerNorm},
      {"aten::native_layer_norm_backward", Rule::kLayerNormBwd},
      {"aten::batch_norm", Rule::kBatchNorm}, {"aten::_batch_norm_impl_index", Rule::kBatchNorm},
      {"aten::native_batch_norm", Rule::kBatchNorm}, {"aten::cudnn_batch_norm", Rule::kBatchNorm},
      {"aten::miopen_batch_norm", Rule::kBatchNorm}, {"aten::_native_batch_norm_legit", Rule::kBatchNorm},
      {"aten::group_norm", Rule::kGroupNorm}, {"aten::native_group_norm", Rule::kGroupNorm},
      {"aten::rms_norm", Rule::kRmsNorm}, {"aten::_fused_rms_norm", Rule::kRmsNorm},
  };
  return m;
}

}  // namespace

bool is_roofline_operator(std::string_view op) {
  static const std::unordered_map<std::string_view, bool> composite = {
      {"aten::linear", true}, {"aten::matmul", true}, {"aten::conv1d", true}, {"aten::conv2d", true},
      {"aten::conv3d", true}, {"aten::scaled_dot_product_attention", true}, {"aten::layer_norm", true},
      {"aten::batch_norm", true}, {"aten::_batch_norm_impl_index", true}, {"aten::group_norm", true},
      {"aten::softmax", true}, {"aten::log_softmax", true}, {"aten::rms_norm", true}};
  return rules().count(op) && !composite.count(op);
}

std::optional<OpCost> op_cost(std::string_view op, std::string_view dims, std::string_view types,
                              std::string_view concrete) {
  const auto& m = rules();
  const auto it = m.find(op);
  if (it == m.end()) return std::nullopt;
  const auto parsed = parse_args(dims, types, concrete);
  if (!parsed) return std::nullopt;
  const Args& a = *parsed;
  auto flag = [&](size_t i) { return bool_of(a.c(i)); };
  auto mask_type = [&](size_t i) -> std::optional<bool> {  // mem-efficient kernels: custom_mask_type 0 = none
    const auto v = ints_of(a.c(i));
    return v && v->size() == 1 ? std::optional<bool>((*v)[0] != 0) : std::nullopt;
  };
  switch (it->second) {
    case Rule::kMm: return gemm(a, 0, 1, std::nullopt);
    case Rule::kAddmm: return gemm(a, 1, 2, 0);
    case Rule::kBmm: return gemm(a, 0, 1, std::nullopt);
    case Rule::kBaddbmm: return gemm(a, 1, 2, 0);
    case Rule::kMatmul: return matmul(a, false);
    case Rule::kLinear: return matmul(a, true);
    case Rule::kScaledMm: return gemm(a, 0, 1, std::nullopt);
    // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    case Rule::kConvolution: return conv_forward(a, {3, 4, 5, 6, 7});
    // conv2d(input, weight, bias, stride, padding, dilation, groups)
    case Rule::kConvNd: return conv_forward(a, {3, 4, 5, std::nullopt, std::nullopt});
    // cudnn_convolution(input, weight, padding, stride, dilation, groups, ...)
    case Rule::kCudnnConv: return conv_forward(a, {3, 2, 4, std::nullopt, std::nullopt});
    // miopen_convolution / mkldnn_convolution(input, weight, bias, padding, stride, dilation, groups, ...)
    case Rule::kMiopenConv:
    case Rule::kMkldnnConv: return conv_forward(a, {4, 3, 5, std::nullopt, std::nullopt});
    case Rule::kConvBackward: return conv_backward(a);
    // (q, k, v, dropout_p, is_causal, ...)
    case Rule::kSdpaFlash: return attention(a, 0, false, false, flag(4));
    case Rule::kSdpaCpu: return attention(a, 0, false, false, flag(4));
    // (q, k, v, attn_bias, compute_log_sumexp, dropout_p, is_causal, ...)
    case Rule::kSdpaEfficient:
    case Rule::kSdpaCudnn: return attention(a, 0, false, false, flag(6));
    // (q, k, v, attn_mask, dropout_p, is_causal, ...)
    case Rule::kSdpa: return attention(a, 0, false, false, flag(5));
    // _flash_attention_forward(q, k, v, cum_seq_q, cum_seq_k, max_q, max_k, dropout_p, is_causal, ...)
    case Rule::kFlashFwd: return attention(a, 0, true, false, flag(8));
    // _efficient_attention_forward(q, k, v, bias, cu_q, cu_k, max_q, max_k, dropout_p, custom_mask_type, ...)
    case Rule::kEffFwd: return attention(a, 0, true, false, mask_type(9));
    // (grad_out, q, k, v, out, logsumexp, cum_q, cum_k, max_q, max_k, dropout_p, is_causal, ...)
    case Rule::kSdpaFlashBwd: return attention(a, 1, false, true, flag(11));
    // (grad_out, q, k, v, attn_bias, out, logsumexp, seed, offset, dropout_p, grad_input_mask, is_causal, ...)
    case Rule::kSdpaEfficientBwd: return attention(a, 1, false, true, flag(11));
    // (grad_out, q, k, v, out, logsumexp, seed, offset, attn_bias, cum_q, cum_k, max_q, max_k, dropout_p, is_causal)
    case Rule::kSdpaCudnnBwd: return attention(a, 1, false, true, flag(14));
    // (grad_out, q, k, v, out, logsumexp, dropout_p, is_causal, ...)
    case Rule::kSdpaCpuBwd: return attention(a, 1, false, true, flag(7));
    case Rule::kFlashBwd: return attention(a, 1, true, true, flag(11));
    // (grad_out, q, k, v, bias, out, cu_q, cu_k, max_q, max_k, logsumexp, dropout_p, seed, offset, custom_mask_type)
    case Rule::kEffBwd: return attention(a, 1, true, true, mask_type(14));
    case Rule::kUnary: return elementwise(a, 1);
    case Rule::kUnaryHeavy: return elementwise(a, 4);  // erf/tanh/exp-based activations: a few FLOPs each
    case Rule::kBinary: return elementwise(a, 1);
    case Rule::kTernary: return elementwise(a, 2);
    case Rule::kCopy: return elementwise(a, 0);
    case Rule::kFill: {
      auto c = elementwise(a, 0, OpKind::kElementwise, false);
      if (c) c->bytes = a.bytes(0);  // writes its tensor, reads nothing
      return c;
    }
    case Rule::kSum: return reduction(a, 1, false);
    case Rule::kSoftmax: return reduction(a, 5, true);     // max, subtract, exp, sum, divide
    case Rule::kSoftmaxBwd: return elementwise(a, 3, OpKind::kReduction);
    case Rule::kLayerNorm:  // (input, normalized_shape, weight, bias, eps, ...): affine adds 2
      return norm(a, a.t(2) ? 7 : 5);
    case Rule::kNativeLayerNorm: return norm(a, a.t(2) ? 7 : 5);
    case Rule::kLayerNormBwd: {  // (grad_out, input, normalized_shape, mean, rstd, weight, bias, mask)
      auto c = norm(a, 10, 1);
      return c;
    }
    case Rule::kBatchNorm: return norm(a, a.t(1) ? 7 : 5);
    case Rule::kGroupNorm: return norm(a, a.t(1) ? 7 : 5);
    case Rule::kRmsNorm: return norm(a, a.t(2) || a.t(1) ? 5 : 3);
  }
  return std::nullopt;
}

}  // namespace profile_train::analysis
