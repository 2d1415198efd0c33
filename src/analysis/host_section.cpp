// report.json's host and communication sections: runtime calls, synchronization, the allocator, CPU operators,
// the optimizer, what the host does while the GPU idles; collectives and how much of them compute hides.
#include "report_context.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using trace::Event;

Host host_section(const Ctx& c, const RoleRanges& roles) {
  const auto& t = c.t;
  const auto& idx = c.idx;
  Host h;  // every value null until computed below
  if (c.total_ns <= 0) return h;
  int64_t launches = 0, syncs = 0, outliers = 0, allocs = 0;
  TimeNs launch_t = 0, sync_t = 0, alloc_t = 0;
  std::vector<double> delays;
  Intervals sync_iv, alloc_iv;
  // The kind of each distinct runtime call name, found once per name (traces repeat a few names a lot).
  enum : uint8_t { kKnown = 1, kAlloc = 2, kLaunch = 4, kSync = 8 };
  std::vector<uint8_t> kind_of(t.strings.size(), 0);  // by StringId
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (e.is_gpu || !c.in_window(e.start_ns)) continue;
    uint8_t& kind = kind_of[e.name];
    if (!(kind & kKnown)) {
      const std::string_view n = runtime_base_name(t.name(e));
      kind = kKnown | (is_allocator_call(n) ? kAlloc : 0) | (is_launch_call(n) ? kLaunch : 0) | (is_sync_call(n) ? kSync : 0);
    }
    if (e.dur_ns > 50'000) ++outliers;
    if (kind & kAlloc) {
      ++allocs;
      alloc_t += e.dur_ns;
      alloc_iv.push_back({e.start_ns, e.end_ns()});
    }
    if (kind & kLaunch) {
      ++launches;
      launch_t += e.dur_ns;
      // The first GPU start of each correlation id comes from the index (computed once there: a hostile or
      // merged trace can give one id to many launches and many kernels).
      if (const TraceIndex::Correlation* g = idx.correlation(e.correlation); g != nullptr && g->gpu_count > 0)
        delays.push_back((g->gpu_first - e.start_ns) / 1e3);
    } else if (kind & kSync) {
      ++syncs;
      sync_t += e.dur_ns;
      sync_iv.push_back({e.start_ns, e.end_ns()});
    }
  }
  int64_t records = 0;
  for (size_t i : idx.syncs)
    if (c.in_window(t.events[i].start_ns) && t.events[i].sync_kind != trace::SyncKind::kStreamWaitEvent) ++records;
  const double total = static_cast<double>(c.total_ns);
  const bool any_runtime = !idx.runtimes.empty();
  if (any_runtime) {
    h.launches_per_step = r6(launches / c.nsteps);
    if (launches) h.launch_mean_us = r6(launch_t / 1e3 / launches);
    if (!delays.empty()) h.launch_delay_median_us = r6(median(delays));
    h.runtime_outliers = r6(outliers / c.nsteps);
    h.sync.count_per_step = r6(syncs / c.nsteps);
    h.sync.time_ms_per_step = r6(ms(sync_t) / c.nsteps);
    h.sync.fraction = r6(c.clipped(merge_intervals(sync_iv)) / total);
    h.allocator = {r6(allocs / c.nsteps), r6(ms(alloc_t) / c.nsteps), r6(c.clipped(merge_intervals(alloc_iv)) / total)};
  }
  if (!idx.syncs.empty() || any_runtime) h.sync.gpu_records_per_step = r6(records / c.nsteps);
  // CPU operators outside data loading, as a share of the step (union, not carved).
  if (idx.has_cpu_ops) {
    const Intervals cpu_only =
        subtract_intervals(roles[Role::kCpu], roles[Role::kDataLoading]);
    h.cpu_op_fraction = r6(c.clipped(cpu_only) / total);
  }
  // Optimizer.step ranges (Kineto annotations or the shim's NVTX ranges), as a share of the step.
  const Intervals& opt = c.optimizer;
  if (!opt.empty()) h.optimizer_step_fraction = r6(c.clipped(opt) / total);
  // What the host does while the GPU idles.
  if (idx.has_gpu_activity) {
    const Intervals& busy = c.busy;
    // The optimizer's host time only costs step time where the GPU idles meanwhile.
    if (!opt.empty()) h.optimizer_idle_fraction = r6(c.clipped(subtract_intervals(opt, busy)) / total);
    const HostIdleActivity a = host_idle_activity(t, idx, c.windows, busy, roles[Role::kDataLoading],
                                                  roles[Role::kCpu]);
    h.idle_activity = HostIdleActivityShares{r6(a.idle_ns / total),    r6(a.allocator / total), r6(a.memcpy_api / total),
                                             r6(a.sync / total),       r6(a.launch / total),    r6(a.other_runtime / total),
                                             r6(a.dataloader / total), r6(a.operators / total), r6(a.other / total)};
  }
  return h;
}

// ---- communication ----------------------------------------------------------------------------------------
Communication communication_section(const Ctx& c, const RoleRanges& roles) {
  Communication o;
  const Intervals& comm = roles[Role::kCommunication];
  if (!c.idx.has_gpu_activity || c.total_ns <= 0) {
    // Without GPU activity only collectives recorded on the host (gloo ops in a Kineto trace) count; DDP's
    // reducer runs its gloo all-reduces outside every range a native CPU capture records.
    if (!comm.empty()) o.measured = true;
    else
      o.not_measured_reason = c.idx.has_gpu_activity ? "the trace has no step time"
                                                         : "no GPU activity and no host collective in the trace: the time "
                                                           "ranks spend in collectives is not separated from compute";
    return o;
  }
  o.measured = true;
  const Intervals& comp = roles[Role::kKernel];
  const double total = static_cast<double>(c.total_ns);
  o.kernel_fraction = r6(c.clipped(comm) / total);
  o.exposed_fraction = r6(c.clipped(subtract_intervals(comm, comp)) / total);
  return o;
}

}  // namespace profile_train::analysis
