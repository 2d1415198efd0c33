// The memory analyzer: the allocator's picture per device from a trace's memory samples (Kineto `[memory]`
// instants of every generation, native CUPTI memory records). reports/REPORT_FORMAT.md, "Memory", says what
// each figure means; this header says how they are computed.
//
//  - Running totals: a sample's "Total Allocated" / "Total Reserved" (modern Kineto). Peak = their maximum over
//    the samples that carry them, as the TensorBoard plugin takes it.
//  - Reconstructed from deltas (2021-06 Kineto, CUPTI): allocated(t) = baseline + the running sum of "Bytes"
//    from the first sample, baseline = the most the running sum goes below zero (bytes freed in the capture
//    that were allocated before it). A lower bound: blocks that live through the whole capture are unseen.
//  - Operators: a sample belongs to the innermost CPU range on its thread that contains it (ranges that
//    partially overlap an enclosing one are dropped, a range whose single child has its name is merged with
//    it, as the plugin's op tree does); self figures count samples of operator ranges (not ProfilerStep#,
//    Optimizer.*, DataLoader or DataParallel annotations), inclusive ones add the children's. Rows are summed
//    by name; calls count the ranges the plugin's traversal reaches.
//  - Live at the peak: allocations paired with frees by (device, address); what is outstanding at the peak
//    sample, by the operator that allocated it. Needs "Addr" (not in 2021-06 traces).
// Units: bytes, and milliseconds since the trace's first event.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/model/report.h"
#include "profile_train/trace/model.h"

namespace profile_train::analysis {

inline constexpr size_t kMemoryTimelinePoints = 400;  // per device; the peak sample is always one of them
inline constexpr size_t kMemoryOperatorRows = 100;     // per device, by self increase
inline constexpr size_t kMemoryLiveRows = 10;
inline constexpr size_t kMemorySpans = 500;           // steps, and phase ranges, drawn under the timeline
// No device has 2^50 bytes (1 PiB): larger figures are damage, and summing them could overflow.
inline constexpr int64_t kMaxMemoryBytes = int64_t{1} << 50;

// Samples the analysis cannot use (|Bytes| or a running total above kMaxMemoryBytes, a running total below
// -1, a negative device type); they are counted and left out of every figure.
bool is_bad_memory_sample(const trace::MemorySample& m);

// Device name as the TensorBoard plugin writes it: "CPU" (type 0), "GPU<id>" (any other type: CUDA, HIP).
std::string memory_device_name(int32_t device_type, int32_t device_id);

// The memory section; nullopt when the trace has no usable memory sample. `steps` (all steps, in order) and
// `phases` place the peak; `rejected` receives the number of bad samples.
std::optional<model::Memory> memory_section(const trace::Trace& t, const std::vector<Step>& steps,
                                            const PhaseIndex* phases, int64_t* rejected);

// The same in two halves: prepare_memory() reads only the trace (the samples, the operator ranges they fall in:
// the costly half), so that it can run while the steps are still being found; memory_section(prep, ...) is
// the rest. The result is the one above.
struct MemoryPrep;
struct MemoryPrepDeleter {
  void operator()(MemoryPrep* p) const;
};
using MemoryPrepPtr = std::unique_ptr<MemoryPrep, MemoryPrepDeleter>;
MemoryPrepPtr prepare_memory(const trace::Trace& t);
std::optional<model::Memory> memory_section(const trace::Trace& t, MemoryPrepPtr prep, const std::vector<Step>& steps,
                                            const PhaseIndex* phases, int64_t* rejected);

}  // namespace profile_train::analysis
