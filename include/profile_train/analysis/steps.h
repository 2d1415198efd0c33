// The step windows: the trace index (kernels, runtime calls, correlation), the training-loop ranges and step detection.
// One analyzer of build_typed_report (analysis/analyzers.h includes them all).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/id_map.h"
#include "profile_train/analysis/intervals.h"
#include "profile_train/analysis/kernel_class.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

using trace::TimeNs;

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
  // One classification per kernel (kernel_class.h), parallel to `kernels`: kernel_classes[kernel_class_of[p]] is
  // the class of t.events[kernels[p]]. Every analyzer reads these, none classifies a kernel on its own.
  std::vector<KernelClass> kernel_classes;  // distinct classes
  std::vector<uint32_t> kernel_class_of;    // parallel to `kernels`
  const KernelClass& kernel_class(size_t kernel_pos) const { return kernel_classes[kernel_class_of[kernel_pos]]; }
  // The class of the kernel at event index `event` (a binary search in `kernels`); nullptr for other events.
  const KernelClass* kernel_class_of_event(size_t event) const {
    auto it = std::lower_bound(kernels.begin(), kernels.end(), event);
    return it == kernels.end() || *it != event ? nullptr : &kernel_class(static_cast<size_t>(it - kernels.begin()));
  }
  int32_t main_device = -1;  // device with the most GPU busy time (-1 if no GPU activity)
  bool has_gpu_activity = false;
  bool has_cpu_ops = false;
  // Training-phase annotations (## forward ##, ## backward ##, Optimizer.step#...) on a CPU thread: the
  // structure native NVTX captures carry instead of framework operators.
  bool has_phase_ranges = false;
};
TraceIndex build_index(const trace::Trace& t);  // classifies the kernels too (classify_kernels)
// Fills idx.kernel_classes / kernel_class_of from the kernels, their launching operators and the main device.
void classify_kernels(const trace::Trace& t, TraceIndex& idx);

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

}  // namespace profile_train::analysis
