// Where the time goes: GPU activity joined to operators and modules, with their roofline groups.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "profile_train/analysis/steps.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Where the time goes: operators and modules ---------------------------------------------------------------
// Each GPU activity (kernel, copy, memset) on `device` that starts in the windows is joined to the CPU operator
// that launched it (its External id, else the innermost cpu_op enclosing its runtime call on the same thread)
// and to the innermost annotation / module range enclosing that call (user annotations other than ProfilerStep#
// and DataLoader ranges, "nn.Module: ..." Python frames). Host time is operator self time (duration minus
// nested operators) of operators starting in the windows; idle time is the part of outermost operators that
// overlaps GPU idle time in the windows (the host side of "why is the GPU idle").
// One operator's calls with one recorded input signature (trace::OpInputs; dims/types "" when not recorded).
struct OperatorShapeRow {
  std::string dims, types;
  std::string concrete;  // trace::OpInputs::concrete ("" when not recorded); rows differ in it too
  TimeNs gpu_ns = 0;
  TimeNs tf32_ns = 0;  // roofline groups: of gpu_ns, kernels that compute in TF32 (the kernel classification)
  int64_t gpu_activities = 0;
  int64_t launching_calls = 0;
  TimeNs host_self_ns = 0;
  int64_t calls = 0;
};
struct OperatorRow {
  std::string name;
  TimeNs gpu_ns = 0;          // GPU activity time launched by it
  TimeNs fp32_ns = 0;         // of which FP32 tensor-core-eligible GEMM/conv kernels
  TimeNs conv_ns = 0;         // of which convolution kernels
  TimeNs h2d_ns = 0;          // host-to-device copies it issued
  int64_t gpu_activities = 0;
  int64_t launching_calls = 0;  // operator instances that launched GPU work
  TimeNs host_self_ns = 0;    // self time on the host
  int64_t calls = 0;          // operator instances (in the windows)
  TimeNs idle_ns = 0;         // outermost instances' overlap with GPU idle time
  // By input signature when the trace records inputs (else empty): their gpu_ns, gpu_activities,
  // launching_calls, host_self_ns and calls add up to the row's. Unordered.
  std::vector<OperatorShapeRow> shapes;
};
// A module's row sums its forward and backward ranges: the shim's "nn.Module backward: X" counts into the row
// of "nn.Module: X" (backward_ns).
struct ModuleRow {
  std::string name;
  TimeNs gpu_ns = 0, fp32_ns = 0;
  TimeNs backward_ns = 0;  // of gpu_ns, launched inside the module's backward range
};
// The roofline's grouping (efficiency.h): GPU activity goes to the outermost enclosing operator that has a
// FLOPs model and is not a composite wrapper (is_roofline_operator: aten::convolution over cudnn_convolution and
// the bias add it runs, _scaled_dot_product_flash_attention over _flash_attention_forward, addmm under
// linear), grouped by that operator's inputs; launching_calls counts its instances whose subtree launched work.
struct RooflineGroup {
  std::string name;
  OperatorShapeRow shape;  // gpu_ns, gpu_activities, launching_calls (host time and calls are not counted)
};
struct OperatorAttribution {
  TimeNs gpu_ns = 0;             // all GPU activity time in the windows on the device
  TimeNs gpu_attributed_ns = 0;  // of which joined to an operator
  TimeNs gpu_in_module_ns = 0;   // of which inside an annotation / module range
  TimeNs idle_ns = 0;            // GPU idle time in the windows
  bool has_operators = false;    // the trace has cpu_op events
  bool has_backward_modules = false;  // the trace has module backward ranges (else backward_ns is unknown, not 0)
  std::vector<OperatorRow> operators;  // unordered
  std::vector<ModuleRow> modules;      // unordered
  std::vector<RooflineGroup> roofline; // unordered; only when the trace records inputs
};
OperatorAttribution attribute_operators(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows,
                                        int32_t device, const Intervals& busy);

// The same in two halves: build_operator_tree() reads only the trace (every runtime call's innermost operator and
// module range, every operator's self time: the costly half), so that it can run while the steps are still being
// found; attribute_operators(tree, ...) is the rest. The result is the one above.
struct OperatorTree;
struct OperatorTreeDeleter {
  void operator()(OperatorTree* p) const;
};
using OperatorTreePtr = std::unique_ptr<OperatorTree, OperatorTreeDeleter>;
OperatorTreePtr build_operator_tree(const trace::Trace& t);
OperatorAttribution attribute_operators(const trace::Trace& t, const TraceIndex& idx, OperatorTreePtr tree,
                                        const Intervals& windows, int32_t device, const Intervals& busy);

}  // namespace profile_train::analysis
