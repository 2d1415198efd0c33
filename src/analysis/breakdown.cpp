// Step-time breakdown with the TensorBoard profiler plugin's priority carving, and HTA's idle-time classes.
//
// Carving (tb_plugin overall_parser.py / event_parser.py): each role's events are unioned over the whole
// trace (all threads, all devices), then every step window is carved in role order; a role only gets the
// part of the window no earlier role claimed, and what is left is "other". Role membership follows tb_plugin:
//   kernel         GPU kernels that are not collectives
//   memcpy/memset  GPU copies / memsets
//   communication  kernels that move data between devices (kernel_class.h: Kineto's "Collective name" arg, a
//                  communication operator, the kernel-name table: NCCL/RCCL, NVSHMEM, DeepEP, custom all-reduce, ...);
//                  with no GPU activity, CPU collectives ("gloo:*", "nccl:*" annotations)
//   runtime        CUDA/HIP runtime and driver API calls on any CPU thread
//   data_loading   "enumerate(DataLoader)#...__next__" / "enumerate(DataPipe)#..." host ranges
//   cpu            every other cpu_op / user_annotation host range except ProfilerStep# (python_function
//                  frames are not counted, as in tb_plugin)
#include <algorithm>
#include <map>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

namespace {

bool is_cpu_collective(std::string_view n) {
  return n.substr(0, 5) == "gloo:" || n.substr(0, 5) == "nccl:";
}
}  // namespace

RoleRanges build_role_ranges(const trace::Trace& t, const TraceIndex& idx) {
  RoleRanges r;
  RoleRanges raw;  // unmerged until the end
  // Kernels: communication when their class says so (kernel_class.h: collective args, a communication
  // operator, the name table), else kernel.
  for (size_t p = 0; p < idx.kernels.size(); ++p) {
    const Event& e = t.events[idx.kernels[p]];
    if (e.dur_ns <= 0) continue;
    const bool comm = idx.kernel_class(p).kind == KernelKind::kCommunication;
    raw[comm ? Role::kCommunication : Role::kKernel].push_back({e.start_ns, e.end_ns()});
  }
  for (const Event& e : t.events) {
    if (e.dur_ns <= 0) continue;
    const Interval iv{e.start_ns, e.end_ns()};
    switch (e.cat) {
      case Category::kKernel: break;  // above
      case Category::kMemcpy: raw[Role::kMemcpy].push_back(iv); break;
      case Category::kMemset: raw[Role::kMemset].push_back(iv); break;
      case Category::kRuntime:
      case Category::kDriver:
        if (!e.is_gpu) raw[Role::kRuntime].push_back(iv);
        break;
      case Category::kCpuOp:
      case Category::kUserAnnotation: {
        if (e.is_gpu) break;
        const std::string& n = t.name(e);
        if (is_step_annotation(n)) break;
        if (is_dataloader_annotation(n)) raw[Role::kDataLoading].push_back(iv);
        else if (!idx.has_gpu_activity && is_cpu_collective(n)) raw[Role::kCommunication].push_back(iv);
        else raw[Role::kCpu].push_back(iv);
        break;
      }
      default: break;
    }
  }
  for (Role role : kAllRoles)
    if (role != Role::kOther) r[role] = merge_intervals(std::move(raw[role]));
  return r;
}

StepBreakdown carve_step(const RoleRanges& roles, TimeNs start, TimeNs end) {
  StepBreakdown b;
  if (end <= start) return b;
  b.total_ns = end - start;
  Intervals slots{{start, end}};
  for (Role role : kAllRoles) {
    if (role == Role::kOther) break;  // the last: what no other role covers
    const Intervals got = intersect_intervals(slots, clip_intervals(roles[role], start, end));
    b[role] = total_length(got);
    if (!got.empty()) slots = subtract_intervals(slots, got);
  }
  b[Role::kOther] = total_length(slots);
  return b;
}

IdleBreakdown idle_breakdown(const trace::Trace& t, const TraceIndex& idx, int32_t device,
                             const std::vector<Step>& windows, TimeNs kernel_wait_ns) {
  IdleBreakdown out;
  if (windows.empty()) return out;
  std::map<int64_t, std::vector<const Event*>> by_stream;
  auto collect = [&](const std::vector<size_t>& list) {
    for (size_t i : list) {
      const Event& e = t.events[i];
      if ((e.device >= 0 ? e.device : static_cast<int32_t>(e.pid)) == device) by_stream[e.tid].push_back(&e);
    }
  };
  collect(idx.kernels);
  collect(idx.memcpys);
  collect(idx.memsets);
  auto in_window = [&](TimeNs ts) {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts,
                               [](TimeNs v, const Step& s) { return v < s.end; });
    return it != windows.end() && it->start <= ts;
  };
  for (auto& [stream, list] : by_stream) {
    // Each index list is in start order: a stream with one kind of activity is sorted already.
    auto by_start = [](const Event* a, const Event* b) { return a->start_ns < b->start_ns; };
    if (!std::is_sorted(list.begin(), list.end(), by_start)) std::stable_sort(list.begin(), list.end(), by_start);
    for (size_t k = 1; k < list.size(); ++k) {
      const Event& cur = *list[k];
      if (!in_window(cur.start_ns)) continue;
      const TimeNs prev_end = list[k - 1]->end_ns();
      const TimeNs gap = cur.start_ns - prev_end;
      if (gap <= 0) continue;  // back-to-back or overlapping records: no idle time
      bool host_wait = false;
      if (cur.correlation >= 0) {
        const size_t rt = idx.runtime_of(cur.correlation);
        if (rt != TraceIndex::Correlation::kNone) host_wait = t.events[rt].start_ns > prev_end;
      }
      if (host_wait) out.host_wait += gap;
      else if (gap < kernel_wait_ns) out.kernel_wait += gap;
      else out.other += gap;
    }
  }
  return out;
}

}  // namespace profile_train::analysis
