// report.json's gpu section: kernel time and classes, SM efficiency, idle time, copies, memory, top kernels.
#include <array>
#include <limits>
#include <map>
#include <unordered_map>

#include "profile_train/analysis/analyze.h"
#include "report_context.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using trace::CopyKind;
using trace::Event;
using trace::MemoryKind;

namespace {

// Time per kind of kernel, split by precision, evidence and matrix units (gpu.kernel_classes).
struct KindTime {
  TimeNs total = 0, matrix_units = 0;
  std::array<TimeNs, kPrecisions> by_precision{};
  std::array<TimeNs, kEvidences> kind_from{}, precision_from{};
};

template <size_t N>
size_t largest(const std::array<TimeNs, N>& a) {
  size_t best = 0;
  for (size_t i = 1; i < N; ++i)
    if (a[i] > a[best]) best = i;
  return best;
}

KernelClassRow class_row(KernelKind kind, const KindTime& k, double nsteps, double all_kernels) {
  KernelClassRow row;
  row.kind = to_string(kind);
  row.gpu_ms_per_step = r6(ms(k.total) / nsteps);
  row.share = all_kernels > 0 ? r6(double(k.total) / all_kernels) : 0.0;
  // The precision of most of the time among the known ones; "unknown" only when none is known.
  std::array<TimeNs, kPrecisions> known = k.by_precision;
  known[static_cast<size_t>(Precision::kUnknown)] = 0;
  const size_t p = largest(known);
  row.precision = known[p] > 0 ? to_string(static_cast<Precision>(p)) : "unknown";
  for (size_t i = 0; i < kPrecisions; ++i)
    if (k.by_precision[i] > 0)
      row.precisions.push_back({to_string(static_cast<Precision>(i)), r6(double(k.by_precision[i]) / double(k.total))});
  std::stable_sort(row.precisions.begin(), row.precisions.end(),
                   [](const PrecisionShare& a, const PrecisionShare& b) { return a.share > b.share; });
  row.matrix_unit_share = k.total > 0 ? r6(double(k.matrix_units) / double(k.total)) : 0.0;
  row.kind_from = to_string(static_cast<Evidence>(largest(k.kind_from)));
  row.precision_from = to_string(static_cast<Evidence>(largest(k.precision_from)));
  return row;
}

}  // namespace

Gpu gpu_section(const Ctx& c, std::set<std::string>& missing) {
  const auto& t = c.t;
  const auto& idx = c.idx;
  Gpu g;  // every value null until computed below

  // Memory (allocator samples) is reported even without GPU activity in the steps.
  {
    int64_t peak = -1, running = 0, running_peak = 0;
    bool any = false, has_total = false, overflow = false;
    for (const auto& m : t.memory) {
      if (m.device_type != 1) continue;
      if (idx.main_device >= 0 && m.device_id >= 0 && m.device_id != idx.main_device) continue;
      any = true;
      if (m.total_allocated >= 0) { has_total = true; peak = std::max(peak, m.total_allocated); }
      // Deltas from a damaged or hostile trace can overflow int64: the running sum is then meaningless.
      if (!overflow && __builtin_add_overflow(running, m.bytes_delta, &running)) overflow = true;
      if (!overflow) running_peak = std::max(running_peak, running);
    }
    GpuMemory& mem = g.memory;
    const auto* dev = t.device(idx.main_device >= 0 ? idx.main_device : (t.devices.empty() ? -1 : t.devices[0].id));
    if (dev != nullptr && dev->total_memory_bytes > 0) mem.capacity_bytes = dev->total_memory_bytes;
    if (any && overflow && !has_total) {
      missing.insert("memory_sum_overflow");  // the peak is unknown, not a wrapped-around figure
    } else if (any) {
      // Without "Total Allocated" the running sum of deltas is a lower bound (allocations before the capture
      // are unseen).
      const int64_t p = has_total ? peak : running_peak;
      mem.peak_allocated_bytes = p;
      if (dev != nullptr && dev->total_memory_bytes > 0) mem.peak_fraction = r6(double(p) / double(dev->total_memory_bytes));
    } else {
      missing.insert("memory_samples");
    }
  }
  if (!idx.has_gpu_activity || c.total_ns <= 0) return g;

  const int32_t dev = idx.main_device;
  const trace::DeviceInfo* props = t.device(dev);
  const double total = static_cast<double>(c.total_ns);

  Intervals kern;
  std::vector<double> durs_us;
  int64_t nkern = 0, nshort = 0;
  TimeNs kt = 0, all_kernels = 0, tc = 0, tf32 = 0, fp32 = 0, fp64 = 0, conv = 0, low_matrix = 0, unknown_matrix = 0;
  TimeNs opt_t = 0;
  int64_t opt_n = 0;
  // Host ranges of Optimizer.step (launch inside -> optimizer kernel).
  const Intervals& opt_ranges = c.optimizer;
  auto in_opt = [&](TimeNs ts) {
    auto it = std::upper_bound(opt_ranges.begin(), opt_ranges.end(), ts, [](TimeNs v, const Interval& w) { return v < w.end; });
    return it != opt_ranges.end() && it->start <= ts;
  };
  struct Agg { int64_t count = 0; TimeNs total = 0; };
  std::vector<Agg> by_name_id(t.strings.size());  // by kernel name StringId; keyed by text after the loop
  // Per kernel name: time by class, so that a top kernel shows the class most of its time has.
  std::unordered_map<uint64_t, TimeNs> name_class_time;  // (name << 32 | class index) -> time
  std::array<KindTime, kKernelKinds> by_kind{};
  // SM efficiency inputs: (start, end, blocks per SM) and occupancy (start, end, fraction).
  struct Valued { TimeNs s, e; double v; };
  std::vector<Valued> bps, occ;
  bool any_launch_cfg = false;

  for (size_t p = 0; p < idx.kernels.size(); ++p) {
    const Event& k = t.events[idx.kernels[p]];
    if (device_of(k) != dev) continue;
    kern.push_back({k.start_ns, k.end_ns()});
    double b = k.blocks_per_sm;
    if (!(b > 0) && k.grid_blocks > 0 && props != nullptr && props->num_sms > 0) b = double(k.grid_blocks) / props->num_sms;
    if (b > 0) { bps.push_back({k.start_ns, k.end_ns(), b}); any_launch_cfg = true; }
    if (k.occupancy_pct >= 0) occ.push_back({k.start_ns, k.end_ns(), k.occupancy_pct / 100.0});
    if (!c.in_window(k.start_ns)) continue;
    ++nkern;
    durs_us.push_back(k.dur_ns / 1e3);
    if (k.dur_ns < 10'000) ++nshort;
    auto& a = by_name_id[k.name];
    a.count++;
    a.total += k.dur_ns;
    const KernelClass& cls = idx.kernel_class(p);
    name_class_time[(uint64_t{k.name} << 32) | idx.kernel_class_of[p]] += k.dur_ns;
    KindTime& kind = by_kind[static_cast<size_t>(cls.kind)];
    kind.total += k.dur_ns;
    if (cls.matrix_units) kind.matrix_units += k.dur_ns;
    kind.by_precision[static_cast<size_t>(cls.precision)] += k.dur_ns;
    kind.kind_from[static_cast<size_t>(cls.kind_from)] += k.dur_ns;
    kind.precision_from[static_cast<size_t>(cls.precision_from)] += k.dur_ns;
    all_kernels += k.dur_ns;
    if (cls.kind == KernelKind::kCommunication) continue;  // the shares below are of compute-kernel time
    kt += k.dur_ns;
    if (cls.matrix_units) tc += k.dur_ns;
    if (cls.precision == Precision::kTf32) tf32 += k.dur_ns;
    if (cls.precision == Precision::kFp64) fp64 += k.dur_ns;
    if (cls.fp32_matrix()) fp32 += k.dur_ns;
    if (cls.kind == KernelKind::kConv || cls.conv_operator) conv += k.dur_ns;
    if (cls.matrix() && is_low_precision(cls.precision)) low_matrix += k.dur_ns;
    if (cls.matrix() && cls.precision == Precision::kUnknown) unknown_matrix += k.dur_ns;
    if (!opt_ranges.empty() && k.correlation >= 0) {
      const size_t rt = idx.runtime_of(k.correlation);
      if (rt != TraceIndex::Correlation::kNone && in_opt(t.events[rt].start_ns)) { opt_t += k.dur_ns; ++opt_n; }
    }
  }
  int64_t nmemset = 0;
  for (size_t i : idx.memsets) {
    const Event& e = t.events[i];
    if (device_of(e) == dev && c.in_window(e.start_ns)) ++nmemset;
  }
  kern = merge_intervals(std::move(kern));
  const TimeNs kern_in = c.clipped(kern), busy_in = c.clipped(c.busy);
  g.utilization = r6(kern_in / total);
  g.busy_fraction = r6(busy_in / total);
  g.kernels_per_step = r6(nkern / c.nsteps);
  if (nkern) g.kernel_median_us = r6(median(durs_us));
  g.short_kernel_fraction = frac_or_null(double(nshort), double(nkern));
  g.tensor_core_kernel_share = frac_or_null(double(tc), double(kt));
  g.tf32_kernel_share = frac_or_null(double(tf32), double(kt));
  g.fp32_eligible_kernel_share = frac_or_null(double(fp32), double(kt));
  g.fp64_kernel_share = frac_or_null(double(fp64), double(kt));
  g.conv_kernel_share = frac_or_null(double(conv), double(kt));
  g.low_precision_matrix_share = frac_or_null(double(low_matrix), double(kt));
  g.matrix_precision_unknown_share = frac_or_null(double(unknown_matrix), double(kt));
  for (size_t i = 0; i < by_kind.size(); ++i)
    if (by_kind[i].total > 0)
      g.kernel_classes.push_back(class_row(static_cast<KernelKind>(i), by_kind[i], c.nsteps, double(all_kernels)));
  std::stable_sort(g.kernel_classes.begin(), g.kernel_classes.end(), [](const KernelClassRow& a, const KernelClassRow& b) {
    return a.gpu_ms_per_step != b.gpu_ms_per_step ? a.gpu_ms_per_step > b.gpu_ms_per_step : a.kind < b.kind;
  });
  if (!opt_ranges.empty()) {
    g.optimizer_kernel_share = frac_or_null(double(opt_t), double(kt));
    g.optimizer_kernels_per_step = r6(opt_n / c.nsteps);
  }
  g.memset_per_step = r6(nmemset / c.nsteps);
  // Static shapes leave a fingerprint: every step launches the same number of GPU activities (what CUDA graphs
  // and torch.compile's reduce-overhead mode need). Two steps at least; 1% slack for a stray copy.
  if (c.si.steps.size() >= 2) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (const auto& s : c.si.steps) {
      lo = std::min(lo, s.device_activities);
      hi = std::max(hi, s.device_activities);
    }
    g.static_launch_pattern = hi > 0 && double(hi - lo) <= 0.01 * double(hi);
  }

  // Est. SM efficiency (tb_plugin): sum over time of min(sum of blocks/SM of running kernels, 1), in steps.
  if (any_launch_cfg) {
    std::vector<std::pair<TimeNs, double>> pts;
    for (const auto& x : bps) { pts.push_back({x.s, x.v}); pts.push_back({x.e, -x.v}); }
    std::sort(pts.begin(), pts.end(), [](auto& a, auto& b) { return a.first != b.first ? a.first < b.first : a.second > b.second; });
    double level = 0, acc = 0;
    for (size_t i = 0; i + 1 <= pts.size(); ++i) {
      level += pts[i].second;
      if (i + 1 == pts.size()) break;
      const TimeNs s = pts[i].first, e = pts[i + 1].first;
      if (e > s && level > 1e-12) {
        const TimeNs in = total_length(clip_intervals(c.windows, s, e));
        acc += std::min(level, 1.0) * double(in);
      }
    }
    g.sm_efficiency = r6(acc / total);
  } else {
    missing.insert("kernel_launch_config");
  }
  if (!occ.empty()) {
    double w = 0, acc = 0;
    for (const auto& x : occ) {
      const TimeNs in = total_length(clip_intervals(c.windows, x.s, x.e));
      w += double(in);
      acc += x.v * double(in);
    }
    if (w > 0) g.achieved_occupancy = r6(acc / w);
  } else {
    missing.insert("kernel_occupancy");
  }

  // Idle time (HTA classes), as fractions of the summed per-stream idle gaps.
  const IdleBreakdown idle = idle_breakdown(t, idx, dev, c.si.steps);
  const double isum = static_cast<double>(idle.total());
  // Per-stream gaps may overlap another stream's work: subtracting them can only undercount the unqueued idle.
  g.idle = GpuIdle{r6(1.0 - busy_in / total), frac_or_null(double(idle.host_wait), isum),
                   frac_or_null(double(idle.kernel_wait), isum), frac_or_null(double(idle.other), isum),
                   r6(std::clamp((total - busy_in - double(idle.kernel_wait) - double(idle.other)) / total, 0.0, 1.0))};

  // Copies by direction.
  struct Dir { int64_t n = 0, bytes = 0, pageable = 0, pinned = 0; TimeNs time = 0; TimeNs time_with_bytes = 0; bool unknown_bytes = false; };
  std::map<CopyKind, Dir> dirs;
  bool copies_without_bytes = false;
  for (size_t i : idx.memcpys) {
    const Event& e = t.events[i];
    if (device_of(e) != dev || !c.in_window(e.start_ns)) continue;
    Dir& d = dirs[e.copy_kind];
    d.n++;
    d.time += e.dur_ns;
    if (e.bytes >= 0) {
      d.bytes += e.bytes;
      d.time_with_bytes += e.dur_ns;
      const MemoryKind host = e.copy_kind == CopyKind::kDtoH ? e.dst_mem : e.src_mem;
      if (host == MemoryKind::kPageable) d.pageable += e.bytes;
      else if (host == MemoryKind::kPinned) d.pinned += e.bytes;
    } else {
      d.unknown_bytes = true;
      copies_without_bytes = true;
    }
  }
  if (copies_without_bytes) missing.insert("memcpy_bytes");
  Memcpy& mc = g.memcpy.emplace();
  const std::pair<CopyKind, CopyDirection*> kinds[] = {{CopyKind::kHtoD, &mc.h2d}, {CopyKind::kDtoH, &mc.d2h}, {CopyKind::kDtoD, &mc.d2d}};
  for (const auto& [kind, out] : kinds) {
    const Dir d = dirs.count(kind) ? dirs[kind] : Dir{};
    CopyDirection& o = *out;
    o.count_per_step = r6(d.n / c.nsteps);
    o.bytes_per_step = r6(d.bytes / c.nsteps);
    o.time_ms_per_step = r6(ms(d.time) / c.nsteps);
    o.fraction = r6(d.time / total);
    if (d.time_with_bytes > 0) o.bandwidth_gbps = r6(double(d.bytes) / double(d.time_with_bytes));  // B/ns == GB/s
    o.pageable_bytes = r6(d.pageable / c.nsteps);
    o.pinned_bytes = r6(d.pinned / c.nsteps);
    if (kind != CopyKind::kDtoD) o.pageable_fraction = frac_or_null(double(d.pageable), double(d.pageable + d.pinned));
  }

  // Top kernels by total time in the steps.
  std::map<std::string, Agg> by_name;
  for (size_t id = 0; id < by_name_id.size(); ++id) {
    if (by_name_id[id].count == 0) continue;
    Agg& a = by_name[t.strings.get(static_cast<trace::StringId>(id))];
    a.count += by_name_id[id].count;
    a.total += by_name_id[id].total;
  }
  std::vector<std::pair<std::string, Agg>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total != b.second.total ? a.second.total > b.second.total : a.first < b.first;
  });
  TimeNs all = 0;
  for (const auto& r : rows) all += r.second.total;
  // Each name's class: the one most of its time has (a name launched by operators of two dtypes has two).
  std::unordered_map<std::string_view, uint32_t> class_of_name;
  {
    std::unordered_map<trace::StringId, std::pair<TimeNs, uint32_t>> best;
    for (const auto& [key, ns] : name_class_time) {
      auto& b = best[static_cast<trace::StringId>(key >> 32)];
      const uint32_t cls = static_cast<uint32_t>(key & 0xFFFFFFFFu);
      if (ns > b.first || (ns == b.first && cls < b.second)) b = {ns, cls};
    }
    for (const auto& [name, b] : best) class_of_name[t.strings.get(name)] = b.second;
  }
  const auto& families = KernelNameTable::builtin().families();
  for (size_t i = 0; i < rows.size() && i < kTopKernels; ++i) {
    const auto& [name, a] = rows[i];
    const KernelClass& cls = idx.kernel_classes[class_of_name.at(name)];
    TopKernel row;
    row.name = name;
    row.count = a.count;
    row.total_ms = r6(ms(a.total));
    row.mean_us = r6(a.total / 1e3 / a.count);
    row.share = frac_or_null(double(a.total), double(all));
    row.tensor_core = cls.matrix_units;
    row.category = to_string(cls.kind);
    row.precision = to_string(cls.precision);
    row.precision_from = to_string(cls.precision_from);
    if (cls.family >= 0 && static_cast<size_t>(cls.family) < families.size() &&
        !families[static_cast<size_t>(cls.family)].library.empty())
      row.library = families[static_cast<size_t>(cls.family)].library;
    g.top_kernels.push_back(std::move(row));
  }
  return g;
}

}  // namespace profile_train::analysis
