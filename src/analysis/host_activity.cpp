// What the host is doing while the GPU idles: the idle part of each step window, carved by host activity.
// A GPU that waits on the host needs a different fix for each answer (allocator churn -> keep the caching
// allocator; synchronization -> drop the per-step sync; kernel-launch API -> CUDA graphs / torch.compile;
// operators -> a bigger batch or fewer, larger ops), so the carving order puts the most specific cause first.
#include <array>
#include <vector>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

HostIdleActivity host_idle_activity(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows,
                                    const Intervals& busy, const Intervals& data_ranges, const Intervals& cpu_ranges) {
  HostIdleActivity out;
  Intervals idle = subtract_intervals(windows, busy);
  out.idle_ns = total_length(idle);
  if (out.idle_ns <= 0) return out;

  enum { kAlloc, kMemcpyApi, kSync, kLaunch, kOtherRuntime, kCount };
  std::array<Intervals, kCount> rt;
  // Each distinct runtime call name is classified once (a trace repeats a few names millions of times).
  std::vector<int8_t> kind_of(t.strings.size(), -1);
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (e.is_gpu || e.dur_ns <= 0) continue;
    int8_t& kind = kind_of[e.name];
    if (kind < 0) {
      const std::string_view n = runtime_base_name(t.name(e));
      kind = is_allocator_call(n) ? kAlloc
             : is_memcpy_call(n)  ? kMemcpyApi
             : is_sync_call(n)    ? kSync
             : is_launch_call(n)  ? kLaunch
                                  : kOtherRuntime;
    }
    rt[static_cast<size_t>(kind)].push_back({e.start_ns, e.end_ns()});
  }
  // Carve: each activity takes only the idle time no earlier one claimed.
  auto take = [&](Intervals ranges) {
    const Intervals got = intersect_intervals(merge_intervals(std::move(ranges)), idle);
    idle = subtract_intervals(idle, got);
    return total_length(got);
  };
  out.allocator = take(std::move(rt[kAlloc]));
  out.memcpy_api = take(std::move(rt[kMemcpyApi]));
  out.sync = take(std::move(rt[kSync]));
  out.launch = take(std::move(rt[kLaunch]));
  out.other_runtime = take(std::move(rt[kOtherRuntime]));
  out.dataloader = take(data_ranges);
  out.operators = take(cpu_ranges);
  out.other = total_length(idle);
  return out;
}

}  // namespace profile_train::analysis
