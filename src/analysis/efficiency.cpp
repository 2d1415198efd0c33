// report.json's efficiency section: each (operator, input signature) group with GPU time and a FLOPs model
// placed on the device's roofline, the step's model FLOPs utilization, and the figures the roofline rules read
// (reports/REPORT_FORMAT.md, "Efficiency"). Cost: one op_cost() per distinct group, nothing per event.
#include <algorithm>
#include <cmath>
#include <map>

#include "profile_train/analysis/efficiency.h"
#include "report_context.h"  // r6: the report's rounding

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {


constexpr size_t kRows = 20;             // efficiency.operators
constexpr double kAtRoof = 0.7;          // leading matrix operators at >= 70% of their roof: "at the roof"
constexpr double kAtRoofMinShare = 0.3;  // ... when they carry >= 30% of GPU time
constexpr double kLeadCover = 0.5;       // the leading matrix rows: the first that cover half their time
constexpr size_t kLeadMax = 5;
// Fusing a chain of n memory-bound operators into one kernel leaves about 1/n of their traffic; the bound
// assumes chains of 4 (what torch.compile's inductor typically fuses in a transformer block's
// bias-add/activation/dropout/residual/norm sequence), i.e. at most 3/4 of their time removed.
constexpr double kFusionRemovable = 0.75;

struct Group {
  const RooflineGroup* op = nullptr;
  const OperatorShapeRow* shape = nullptr;
  OpCost cost;
  double flops = 0, bytes = 0;  // totals over the launching calls in the windows
  TimeNs ns = 0;
  double peak = 0;              // TFLOP/s
  std::string precision;        // what its kernels compute in: the dtype, or "tf32" for FP32 on TF32 tensor cores
  std::optional<double> share;  // of the roof
  bool compute_bound = false;
};

bool is_16bit(const std::string& d) { return d == "fp16" || d == "bf16"; }
bool is_bmm(const std::string& n) { return n == "aten::bmm" || n == "aten::baddbmm"; }
bool is_softmax(const std::string& n) {
  return n == "aten::_softmax" || n == "aten::softmax" || n == "aten::_softmax_backward_data";
}

}  // namespace

Efficiency efficiency_section(const EfficiencyInput& in) {
  Efficiency e;
  const double gpu = static_cast<double>(in.ops.gpu_ns);
  const double n = in.nsteps > 0 ? in.nsteps : 1;
  if (gpu > 0) {
    std::vector<KernelClassTime> classes;
    for (const auto& [name, ns] : in.kernel_classes)
      classes.push_back({name, r6(static_cast<double>(ns) / 1e6 / n), r6(static_cast<double>(ns) / gpu)});
    std::sort(classes.begin(), classes.end(), [](const KernelClassTime& a, const KernelClassTime& b) {
      return a.gpu_ms_per_step != b.gpu_ms_per_step ? a.gpu_ms_per_step > b.gpu_ms_per_step : a.name < b.name;
    });
    e.kernel_classes = std::move(classes);
  }
  if (in.spec) {
    e.gpu_spec = in.spec->name;
    e.gpu_spec_source = in.spec->source;
    if (in.spec->memory_tbps > 0) e.peak_tbps = in.spec->memory_tbps;
  }
  if (!in.has_gpu || gpu <= 0) {
    e.flops_note = "No GPU activity: the roofline needs GPU kernel time";
    return e;
  }
  if (!in.has_shapes) {
    e.flops_note = "The trace records no operator input shapes (profile with record_shapes=True): FLOPs are unknown; "
                   "GPU time by kernel-name class only";
    return e;
  }

  std::vector<Group> groups;
  bool any_attention = false;
  for (const auto& rg : in.ops.roofline) {
    {
      const auto& s = rg.shape;
      if (s.gpu_ns <= 0 || s.launching_calls <= 0) continue;
      auto cost = op_cost(rg.name, s.dims, s.types, s.concrete);
      if (!cost) continue;
      Group g;
      g.op = &rg;
      g.shape = &s;
      g.cost = *cost;
      g.flops = cost->flops * static_cast<double>(s.launching_calls);
      g.bytes = cost->bytes * static_cast<double>(s.launching_calls);
      g.ns = s.gpu_ns;
      if (cost->kind == OpKind::kAttention) any_attention = true;
      const bool matrix = is_matrix_kind(cost->kind);
      // FP32 inputs whose kernels run on TF32 tensor cores (the kernel classification: most of the group's time).
      bool tf32 = matrix && cost->dtype == "fp32" && 2 * s.tf32_ns > s.gpu_ns;
      if (in.spec && in.spec->memory_tbps > 0) {
        double peak = in.spec->peak(cost->dtype, matrix, tf32);
        const double achieved = g.flops / static_cast<double>(g.ns) / 1e3;  // FLOP/ns = GFLOP/s
        // FP32 matrix work faster than the FP32 peak runs on TF32 tensor cores, whatever its kernels' names say.
        if (matrix && cost->dtype == "fp32" && achieved > peak && in.spec->tf32 > 0) {
          peak = in.spec->peak("fp32", true, true);
          tf32 = true;
        }
        if (peak > 0) {
          const double t_math = g.flops / (peak * 1e3), t_mem = g.bytes / (in.spec->memory_tbps * 1e3);  // ns
          g.peak = peak;
          g.compute_bound = t_math >= t_mem;
          g.share = std::max(t_math, t_mem) / static_cast<double>(g.ns);
        }
      }
      g.precision = tf32 ? "tf32" : cost->dtype;
      groups.push_back(std::move(g));
    }
  }
  std::sort(groups.begin(), groups.end(), [](const Group& a, const Group& b) {
    if (a.ns != b.ns) return a.ns > b.ns;
    if (a.op->name != b.op->name) return a.op->name < b.op->name;
    return a.shape->dims != b.shape->dims ? a.shape->dims < b.shape->dims : a.shape->concrete < b.shape->concrete;
  });
  if (groups.empty()) {
    e.flops_note = "No operator with GPU time has a FLOPs model (GEMM, convolution, attention, elementwise, "
                   "reduction, normalization) with its inputs recorded: FLOPs are unknown";
    return e;
  }
  e.flops_known = true;

  TimeNs covered = 0, mem_ns = 0, misaligned_ns = 0, bmm_softmax_ns = 0, fp8_ns = 0, matrix16_ns = 0;
  double flops = 0, headroom = 0, misaligned_removable = 0;
  bool misaligned_unbounded = false;
  std::map<std::string, double> matrix_flops_by_dtype;
  std::vector<const Group*> matrix;
  TimeNs matrix_ns = 0;
  for (const auto& g : groups) {
    covered += g.ns;
    flops += g.flops;
    const double capped = g.share ? std::min(1.0, *g.share) : 0.0;
    if (g.share) headroom += static_cast<double>(g.ns) * (1 - capped);
    if (is_matrix_kind(g.cost.kind)) {
      matrix_flops_by_dtype[g.cost.dtype] += g.flops;
      matrix.push_back(&g);
      matrix_ns += g.ns;
      if (is_16bit(g.cost.dtype)) matrix16_ns += g.ns;
      if (is_16bit(g.cost.dtype) && in.spec && in.spec->fp8 > 0) fp8_ns += g.ns;
    } else if (!g.share || !g.compute_bound) {
      mem_ns += g.ns;
    }
    if (g.cost.kind == OpKind::kGemm && is_16bit(g.cost.dtype) &&
        (g.cost.m % 8 != 0 || g.cost.n % 8 != 0 || g.cost.k % 8 != 0)) {
      misaligned_ns += g.ns;
      if (g.share) misaligned_removable += static_cast<double>(g.ns) * (1 - capped);
      else misaligned_unbounded = true;
    }
    if (!any_attention && (is_bmm(g.op->name) || is_softmax(g.op->name))) bmm_softmax_ns += g.ns;
  }
  e.shape_coverage = r6(static_cast<double>(covered) / gpu);
  if (covered < in.ops.gpu_ns)
    e.flops_note = "FLOPs cover the operators with a FLOPs model and recorded inputs: " +
                   std::to_string(static_cast<int>(std::lround(100.0 * covered / gpu))) +
                   "% of GPU time (efficiency.shape_coverage); MFU counts only their FLOPs";
  e.model_tflop_per_step = r6(flops / n / 1e12);
  const double step_s = static_cast<double>(in.total_ns) / n / 1e9;
  if (step_s > 0) e.achieved_tflops = r6(flops / n / step_s / 1e12);
  std::string dtype;
  double best = -1;
  for (const auto& [d, f] : matrix_flops_by_dtype)
    if (f > best) best = f, dtype = d;
  if (dtype.empty()) dtype = groups.front().cost.dtype;
  e.dtype = dtype;
  e.precision = dtype;
  if (in.spec) {
    bool tf32 = false;
    for (const auto* g : matrix)
      if (g->cost.dtype == "fp32" && g->precision == "tf32") tf32 = true;
    const double peak = in.spec->peak(dtype, true, tf32);
    e.precision = dtype == "fp32" && tf32 && in.spec->tf32 > 0 ? "tf32" : dtype;
    if (peak > 0) {
      e.peak_tflops = peak;
      if (e.achieved_tflops) e.mfu = r6(*e.achieved_tflops / peak);
    }
  }
  e.memory_bound_share = r6(static_cast<double>(mem_ns) / gpu);
  e.fusion_removable_share = r6(kFusionRemovable * static_cast<double>(mem_ns) / gpu);
  if (in.spec) e.headroom_share = r6(headroom / gpu);
  e.misaligned_gemm_share = r6(static_cast<double>(misaligned_ns) / gpu);
  if (!misaligned_unbounded) e.misaligned_gemm_removable_share = r6(misaligned_removable / gpu);
  e.unfused_attention_share = r6(static_cast<double>(bmm_softmax_ns) / gpu);
  e.matrix16_share = r6(static_cast<double>(matrix16_ns) / gpu);
  if (in.spec) e.fp8_eligible_share = r6(static_cast<double>(fp8_ns) / gpu);

  // The leading matrix operators: are they at their roof?
  if (!matrix.empty() && in.spec) {
    TimeNs lead_ns = 0;
    double lead_roof = 0;
    std::map<std::string, TimeNs> lead_dtypes;
    bool all_known = true;
    for (size_t i = 0; i < matrix.size() && i < kLeadMax; ++i) {
      const Group& g = *matrix[i];
      if (!g.share) {
        all_known = false;
        break;
      }
      lead_ns += g.ns;
      lead_roof += static_cast<double>(g.ns) * std::min(1.0, *g.share);
      lead_dtypes[g.cost.dtype] += g.ns;
      if (lead_ns >= kLeadCover * static_cast<double>(matrix_ns)) break;
    }
    if (all_known && lead_ns > 0) {
      std::string lead_dtype;
      TimeNs most = -1;
      for (const auto& [d, t] : lead_dtypes)
        if (t > most) most = t, lead_dtype = d;
      const double roof = lead_roof / static_cast<double>(lead_ns), share = static_cast<double>(lead_ns) / gpu;
      e.top_roof_share = r6(roof);
      e.top_dtype = lead_dtype;
      e.top_share = r6(share);
      if (roof >= kAtRoof && share >= kAtRoofMinShare) {
        const std::string pct = std::to_string(static_cast<int>(std::lround(roof * 100)));
        e.at_roof = "The leading GEMM/convolution/attention operators (" +
                    std::to_string(static_cast<int>(std::lround(share * 100))) + "% of GPU time) run at " + pct +
                    "% of the " + lead_dtype + " roof of the " + in.spec->name +
                    ": only lower precision or fewer FLOPs can make them faster";
      }
    }
  }

  for (size_t i = 0; i < groups.size() && i < kRows; ++i) {
    const Group& g = groups[i];
    EfficiencyRow row;
    row.name = g.op->name;
    if (!g.shape->dims.empty()) row.shapes = g.shape->dims;
    if (!g.shape->types.empty()) row.types = g.shape->types;
    row.kind = to_string(g.cost.kind);
    row.dtype = g.cost.dtype;
    row.precision = g.precision;
    row.calls_per_step = r6(static_cast<double>(g.shape->launching_calls) / n);
    row.gpu_ms_per_step = r6(static_cast<double>(g.ns) / 1e6 / n);
    row.gflop_per_call = r6(g.cost.flops / 1e9);
    row.mbytes_per_call = r6(g.cost.bytes / 1e6);
    if (g.bytes > 0) row.intensity = r6(g.flops / g.bytes);
    row.tflops = r6(g.flops / static_cast<double>(g.ns) / 1e3);
    row.tbps = r6(g.bytes / static_cast<double>(g.ns) / 1e3);
    if (g.share) {
      row.bound = g.compute_bound ? "compute" : "memory";
      row.peak_tflops = g.peak;
      row.roof_share = r6(*g.share);
    }
    e.operators.push_back(std::move(row));
  }
  return e;
}

}  // namespace profile_train::analysis
