// The analyzers behind build_report(): small stateless functions over a trace::Trace, one concern each.
// Public so that tests (and other components, e.g. the tuner) can call one analyzer on its own.
//
// Units: times are integer nanoseconds (trace clock) unless a name says otherwise; fractions are 0..1.
// Nothing here owns the trace; every result is plain data, copied out.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/id_map.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

// ---- Interval algebra (half-open [start, end)) -------------------------------------------------------------
struct Interval {
  TimeNs start = 0;
  TimeNs end = 0;
};
using Intervals = std::vector<Interval>;

Intervals merge_intervals(Intervals v);                              // sorted, non-overlapping, non-empty
Intervals intersect_intervals(const Intervals& a, const Intervals& b);  // inputs merged
Intervals subtract_intervals(const Intervals& a, const Intervals& b);   // a \ b, inputs merged
Intervals clip_intervals(const Intervals& merged, TimeNs start, TimeNs end);
TimeNs total_length(const Intervals& v);

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

// ---- Steps ------------------------------------------------------------------------------------------------
// How the step windows were found (source.step_detection; reports/REPORT_FORMAT.md, "Steps").
enum class StepSource {
  kProfilerStep,          // ProfilerStep#N ranges of a Kineto trace (placed by the program's prof.step())
  kNvtxStep,              // NVTX ProfilerStep#N ranges of a native capture (the program's own, or the shim's)
  kOptimizerAnnotation,   // bounded by the Optimizer.step ranges: a step ends where its optimizer step ends
  kBackwardAnnotation,    // no optimizer step: one step per backward, from the forward / fetches before it
  kDataLoaderAnnotation,  // between consecutive DataLoader __next__ starts
  kRepeatingRange,        // between consecutive starts of the program's most time-covering repeated range
  kWholeTrace,
};
const char* to_string(StepSource s);

struct Step {
  std::string name;
  TimeNs host_start = 0, host_end = 0;  // the CPU-side annotation
  TimeNs start = 0, end = 0;            // the analysis window (host span extended to its GPU work)
  int64_t device_activities = 0;        // GPU activities launched from inside the host span
  TimeNs duration() const { return end - start; }
};

struct StepInfo {
  StepSource source = StepSource::kWholeTrace;
  std::vector<Step> steps;
  int64_t main_pid = -1, main_tid = -1;  // thread carrying the step annotations (-1 if none)
  int64_t dropped_tail_steps = 0;        // trailing steps dropped because their GPU work was not captured
  int64_t dropped_eval_steps = 0;        // steps with neither a backward nor an optimizer step (evaluation)
  std::string repeating_range;           // kRepeatingRange: the range's name
  std::vector<std::string> notes;
};

// Shared lookups built once per trace (indices into trace.events).
struct TraceIndex {
  std::vector<size_t> kernels, memcpys, memsets, syncs, runtimes, cpu_ops;  // runtimes include driver calls
  // One correlation id: its first runtime / driver call and what its GPU activities (kernel, memcpy, memset, on
  // any device) span, computed once here so that no analyzer walks the activities of an id again.
  struct Correlation {
    static constexpr size_t kNone = SIZE_MAX;
    size_t runtime = kNone;  // the first runtime call carrying the id, kNone if none
    TimeNs gpu_first = 0;    // earliest GPU activity start (valid when gpu_count > 0)
    TimeNs gpu_last = 0;     // latest GPU activity end (valid when gpu_count > 0)
    int64_t gpu_count = 0;   // GPU activities carrying the id
  };
  IdMap<uint32_t> correlation_slot;        // correlation id -> index into `correlations`
  std::vector<Correlation> correlations;
  IdMap<size_t> op_by_external_id;         // innermost cpu_op carrying an external id
  // The id's entry, or nullptr (negative ids, ids no runtime call or GPU activity carries).
  const Correlation* correlation(int64_t id) const {
    const uint32_t* s = correlation_slot.find(id);
    return s == nullptr ? nullptr : &correlations[*s];
  }
  // The runtime call of a correlation id (index into trace.events), or Correlation::kNone.
  size_t runtime_of(int64_t id) const {
    const Correlation* c = correlation(id);
    return c == nullptr ? Correlation::kNone : c->runtime;
  }
  int32_t main_device = -1;  // device with the most GPU busy time (-1 if no GPU activity)
  bool has_gpu_activity = false;
  bool has_cpu_ops = false;
  // Training-phase annotations (## forward ##, ## backward ##, Optimizer.step#...) on a CPU thread: the
  // structure native NVTX captures carry instead of framework operators.
  bool has_phase_ranges = false;
};
TraceIndex build_index(const trace::Trace& t);

// The training-loop ranges of one thread, each list sorted by start with nested repeats dropped (a range
// inside another of the same list). Names: "enumerate(DataLoader)#...__next__" / DataPipe (fetch),
// "## forward ##", "## backward ##", "Optimizer.step#..." (optimizer), "Optimizer.zero_grad#..." (zero_grad).
// `autograd` is the merged union of Kineto's "autograd::engine::evaluate_function: ..." operators of the
// process (any thread): the backward pass of a Kineto trace without "## backward ##" ranges.
struct LoopRanges {
  int64_t pid = -1, tid = -1;
  Intervals fetch, forward, backward, optimizer, zero_grad, autograd;
  bool empty() const { return fetch.empty() && forward.empty() && backward.empty() && optimizer.empty() && zero_grad.empty(); }
};
// The loop ranges of the thread carrying most of them (`pid`/`tid` >= 0: of that thread).
LoopRanges loop_ranges(const trace::Trace& t, int64_t pid = -1, int64_t tid = -1);

// Training steps from the loop ranges (reports/REPORT_FORMAT.md, "Steps"). Optimizer-bounded: step k ends where
// optimizer step k ends and starts where step k-1 ended, unless forwards without a backward (evaluation) ran in
// between: then it starts at the fetches / forward before its first backward. Step 0 starts there too, and is
// left out when no forward or fetch says where it started. Both return host spans; empty when not applicable.
std::vector<Step> optimizer_bounded_steps(const LoopRanges& r);
// No optimizer step: one step per backward range, from the fetches / forward before it to where the next one
// starts (the update after the backward belongs to its step); evaluation between two steps and after the last
// one is left out: such a step ends at the first evaluation range, at most the median post-backward tail of
// the contiguous steps after its backward.
std::vector<Step> backward_bounded_steps(const LoopRanges& r);

// Step windows, in order: ProfilerStep#N ranges the program placed (Kineto, or NVTX of a native capture without
// the Python shim); optimizer-bounded steps; backward-bounded steps; the shim's ProfilerStep#N (one per fetch);
// DataLoader __next__ ranges; repeating top-level annotation ranges; the whole trace. ProfilerStep# steps
// holding neither a backward nor an optimizer step are dropped when others hold one (evaluation batches).
// GPU-using steps are extended to the end of the GPU work they launched and start where the previous one
// ended, as the TensorBoard plugin did (tb_plugin event_parser.py).
StepInfo detect_steps(const trace::Trace& t, const TraceIndex& idx);

// ---- Steady state -------------------------------------------------------------------------------------------
// Which steps the summary figures cover (reports/REPORT_FORMAT.md, "Steady state"). With m the median and
// s = 1.4826 x MAD of the step durations (a robust standard deviation), a step is slow when it lasts more than
// m + 5 s (any amount above m when MAD is 0) and at least R x m. Warm-up: the run of slow steps (R =
// kWarmupRatio) from step 0, each at least kWarmupGap x the slowest later step that is not an outlier.
// Outliers: the slowest k later slow steps (R = kSpikeRatio), k at most kMaxSpikeShare of the steps, the fastest
// of them lasting at least kSpikeGap x the slowest other step (a second, rare kind of step; the largest such k;
// a lesser spike stays in, and a long tail of slow steps with no such gap stays in). At most half the steps are warm-up; needs >= 3 steps.
inline constexpr double kWarmupRatio = 1.5;
inline constexpr double kWarmupGap = 1.25;
inline constexpr double kSpikeRatio = 3.0;
inline constexpr double kSpikeGap = 2.0;
inline constexpr double kMaxSpikeShare = 0.2;
struct Exclusion {
  size_t index = 0;
  const char* reason = "";  // "warm-up" | "outlier"
};
struct SteadyState {
  std::vector<size_t> kept;           // step indices, ascending
  std::vector<Exclusion> excluded;    // ascending by index
  double median_ms = 0, mad_ms = 0;   // over all steps
};
SteadyState steady_state(const std::vector<double>& dur_ms);

// ---- Phases (forward / backward / optimizer / data wait) ---------------------------------------------------
// Host time of a step on the training thread, carved in the order optimizer (Optimizer.step and zero_grad),
// backward, forward, data_wait (DataLoader fetches); `other` is the rest of the step window. Sums to the window.
// Phases and their names: profile_train::Phase, kPhaseNames (common/vocabulary.h).
struct PhaseSplit {
  TimeNs phase_ns[kPhaseCount] = {};
  TimeNs total_ns = 0;
  TimeNs& operator[](Phase p) { return phase_ns[static_cast<size_t>(p)]; }
  TimeNs operator[](Phase p) const { return phase_ns[static_cast<size_t>(p)]; }
};
// Whether `r` has the ranges a phase split needs (a forward, backward or optimizer range).
bool has_phases(const LoopRanges& r);
// The merged ranges of each phase but `other` (the backward is `autograd` when the trace has no
// "## backward ##" ranges), built once per trace.
struct PhaseIndex {
  Intervals ranges[kPhaseCount - 1];  // Phase order; Phase::kOther has none
  Intervals& operator[](Phase p) { return ranges[static_cast<size_t>(p)]; }
  const Intervals& operator[](Phase p) const { return ranges[static_cast<size_t>(p)]; }
};
PhaseIndex phase_index(const LoopRanges& r);
PhaseSplit phase_split(const PhaseIndex& x, TimeNs start, TimeNs end);

// Indices (ascending) of the steps that steps.per_step keeps: the first, the last and the slowest `keep`
// steps (durations `dur_ms`, in step order; equal durations favour the earlier step); every index when there
// are no more than 3 x keep steps.
std::vector<size_t> bounded_step_selection(const std::vector<double>& dur_ms, size_t keep);

// steps.histogram: {min_ms, max_ms, bin_width_ms, counts[bins]} of `dur_ms` in equal bins from min to max
// (the last bin includes max; everything in bin 0 when all durations are equal); nullopt when empty.
std::optional<StepHistogram> step_histogram(const std::vector<double>& dur_ms, size_t bins);

// ---- Breakdown (TensorBoard-plugin priority carving) ------------------------------------------------------
// Roles and their names, in carving priority: profile_train::Role, kBreakdownRoleNames (common/vocabulary.h).
struct StepBreakdown {
  TimeNs role_ns[kRoleCount] = {};  // carved time per role (Role order); sums to the step duration
  TimeNs total_ns = 0;
  TimeNs& operator[](Role r) { return role_ns[static_cast<size_t>(r)]; }
  TimeNs operator[](Role r) const { return role_ns[static_cast<size_t>(r)]; }
};
struct RoleRanges {
  Intervals role[kRoleCount - 1];  // merged intervals per role before carving (Role order; Role::kOther has none)
  Intervals& operator[](Role r) { return role[static_cast<size_t>(r)]; }
  const Intervals& operator[](Role r) const { return role[static_cast<size_t>(r)]; }
};
RoleRanges build_role_ranges(const trace::Trace& t, const TraceIndex& idx);
StepBreakdown carve_step(const RoleRanges& roles, TimeNs start, TimeNs end);

// ---- Idle time (HTA v0.5.0 definition) --------------------------------------------------------------------
struct IdleBreakdown {
  TimeNs host_wait = 0, kernel_wait = 0, other = 0;  // summed per-stream gaps
  TimeNs total() const { return host_wait + kernel_wait + other; }
};
// Gaps before each GPU activity on each stream of `device`, for activities starting inside the windows.
// host_wait: the activity's runtime call started after the previous activity ended; kernel_wait: gap shorter
// than `kernel_wait_ns`; other: the rest.
IdleBreakdown idle_breakdown(const trace::Trace& t, const TraceIndex& idx, int32_t device,
                             const std::vector<Step>& windows, TimeNs kernel_wait_ns = 30'000);

// ---- What the host does while the GPU idles ------------------------------------------------------------------
// The GPU-idle part of the step windows (no kernel, copy or memset on `device`), carved by host activity in
// this priority: allocator calls, memcpy API, synchronization, kernel launches, other runtime/driver calls,
// DataLoader wait, CPU operators and annotations, other. Times are summed over the windows; they add up to
// `idle_ns`.
struct HostIdleActivity {
  TimeNs idle_ns = 0;
  TimeNs allocator = 0, memcpy_api = 0, sync = 0, launch = 0, other_runtime = 0, dataloader = 0, operators = 0,
         other = 0;
};
// `busy`: merged GPU busy intervals of the device; `data_ranges` / `cpu_ranges`: the breakdown's data_loading
// and cpu role ranges (merged).
HostIdleActivity host_idle_activity(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows,
                                    const Intervals& busy, const Intervals& data_ranges, const Intervals& cpu_ranges);

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

// ---- Facts and verdict ------------------------------------------------------------------------------------
// Recorded facts (trace.facts) merged over inferred ones; `facts.inferred` lists inferred dotted paths.
nlohmann::json infer_facts(const trace::Trace& t, const TraceIndex& idx);

// Picks the bottleneck from an otherwise complete report (reads breakdown, gpu, host, communication,
// source, steps, data_quality and facts.gpu.used).
Verdict decide_verdict(const Report& report);

}  // namespace profile_train::analysis
