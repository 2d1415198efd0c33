// build_report(): runs the analyzers and assembles report.json exactly as reports/REPORT_FORMAT.md says.
// Every contract key is present; a value that cannot be computed is null and source.missing says why.
#include "profile_train/analysis/analyze.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <unordered_map>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/common/version.h"
#include "steps_section.h"

namespace profile_train::analysis {

using nlohmann::json;
using trace::Category;
using trace::CopyKind;
using trace::Event;
using trace::MemoryKind;

namespace {

// Fixed precision keeps reports byte-stable and readable (fractions to 1e-6, milliseconds to 1 ns).
double r6(double x) { return std::isfinite(x) ? std::round(x * 1e6) / 1e6 : 0.0; }
json frac_or_null(double num, double den) { return den > 0 ? json(r6(num / den)) : json(nullptr); }
double ms(TimeNs ns) { return static_cast<double>(ns) / 1e6; }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int32_t device_of(const Event& e) { return e.device >= 0 ? e.device : static_cast<int32_t>(e.pid); }

// Per-trace working state shared by the section builders below.
struct Ctx {
  const trace::Trace& t;
  const TraceIndex& idx;
  const StepInfo& si;
  Intervals windows;   // merged step windows
  Intervals busy;      // merged kernel | copy | memset intervals of the main device (whole trace)
  Intervals optimizer; // merged Optimizer.step host ranges (Kineto annotations or the shim's NVTX ranges)
  TimeNs total_ns = 0; // sum of step durations
  double nsteps = 0;
  bool in_window(TimeNs ts) const {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts, [](TimeNs v, const Interval& w) { return v < w.end; });
    return it != windows.end() && it->start <= ts;
  }
  TimeNs clipped(const Intervals& merged) const { return total_length(intersect_intervals(merged, windows)); }
};

// Merged busy intervals (kernel | copy | memset) of the main device.
Intervals device_busy(const trace::Trace& t, const TraceIndex& idx) {
  Intervals busy;
  for (const auto* list : {&idx.kernels, &idx.memcpys, &idx.memsets})
    for (size_t i : *list)
      if (device_of(t.events[i]) == idx.main_device) busy.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  return merge_intervals(std::move(busy));
}

// Merged Optimizer.step host ranges.
Intervals optimizer_ranges(const trace::Trace& t) {
  Intervals opt;
  for (const auto& e : t.events)
    if (!e.is_gpu && (e.cat == Category::kUserAnnotation || e.cat == Category::kCpuOp) && is_optimizer_step_annotation(t.name(e)))
      opt.push_back({e.start_ns, e.end_ns()});
  return merge_intervals(std::move(opt));
}

enum KernelClass : uint8_t { kComm = 1, kTc = 2, kFp64 = 4, kFp32 = 8, kConv = 16, kTf32 = 32 };

// Kernel classes from its name and the operator that launched it (empty if unknown).
uint8_t classify_kernel(const std::string& n, std::string op) {
  if (is_communication_kernel(n)) return kComm;
  uint8_t cls = 0;
  const bool tcore = is_tensor_core_kernel(n);
  if (tcore) cls |= kTc;
  if (tcore && is_tf32_kernel(n)) cls |= kTf32;
  if (is_fp64_kernel(n)) cls |= kFp64;
  else if (!tcore && (is_fp32_tc_eligible_kernel(n) || (!op.empty() && is_tc_eligible_op(op))) &&
           n.find("half") == std::string::npos && n.find("bf16") == std::string::npos &&
           n.find("fp16") == std::string::npos)
    cls |= kFp32;
  for (auto& ch : op) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (is_conv_kernel(n) || op.find("conv") != std::string::npos) cls |= kConv;
  return cls;
}

// ---- gpu ----------------------------------------------------------------------------------------------------
json gpu_section(const Ctx& c, std::set<std::string>& missing) {
  const auto& t = c.t;
  const auto& idx = c.idx;
  json g;
  const char* keys[] = {"utilization", "sm_efficiency", "achieved_occupancy", "busy_fraction", "kernels_per_step",
                        "kernel_median_us", "short_kernel_fraction", "tensor_core_kernel_share", "tf32_kernel_share",
                        "fp32_eligible_kernel_share", "fp64_kernel_share", "conv_kernel_share",
                        "optimizer_kernel_share", "optimizer_kernels_per_step", "memset_per_step",
                        "static_launch_pattern", "idle", "memcpy", "memory", "top_kernels"};
  for (const char* k : keys) g[k] = nullptr;
  g["top_kernels"] = json::array();

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
    json mem = {{"peak_allocated_bytes", nullptr}, {"capacity_bytes", nullptr}, {"peak_fraction", nullptr}};
    const auto* dev = t.device(idx.main_device >= 0 ? idx.main_device : (t.devices.empty() ? -1 : t.devices[0].id));
    if (dev != nullptr && dev->total_memory_bytes > 0) mem["capacity_bytes"] = dev->total_memory_bytes;
    if (any && overflow && !has_total) {
      missing.insert("memory_sum_overflow");  // the peak is unknown, not a wrapped-around figure
    } else if (any) {
      // Without "Total Allocated" the running sum of deltas is a lower bound (allocations before the capture
      // are unseen).
      const int64_t p = has_total ? peak : running_peak;
      mem["peak_allocated_bytes"] = p;
      if (dev != nullptr && dev->total_memory_bytes > 0) mem["peak_fraction"] = r6(double(p) / double(dev->total_memory_bytes));
    } else {
      missing.insert("memory_samples");
    }
    g["memory"] = mem;
  }
  if (!idx.has_gpu_activity || c.total_ns <= 0) return g;

  const int32_t dev = idx.main_device;
  const trace::DeviceInfo* props = t.device(dev);
  const double total = static_cast<double>(c.total_ns);

  Intervals kern;
  std::vector<double> durs_us;
  int64_t nkern = 0, nshort = 0;
  TimeNs kt = 0, tc = 0, tf32 = 0, fp32 = 0, fp64 = 0, conv = 0, opt_t = 0;
  int64_t opt_n = 0;
  // Host ranges of Optimizer.step (launch inside -> optimizer kernel).
  const Intervals& opt_ranges = c.optimizer;
  auto in_opt = [&](TimeNs ts) {
    auto it = std::upper_bound(opt_ranges.begin(), opt_ranges.end(), ts, [](TimeNs v, const Interval& w) { return v < w.end; });
    return it != opt_ranges.end() && it->start <= ts;
  };
  struct Agg { int64_t count = 0; TimeNs total = 0; };
  std::unordered_map<uint64_t, uint8_t> cls_cache;
  std::map<std::string, Agg> by_name;
  // SM efficiency inputs: (start, end, blocks per SM) and occupancy (start, end, fraction).
  struct Valued { TimeNs s, e; double v; };
  std::vector<Valued> bps, occ;
  bool any_launch_cfg = false;

  for (size_t i : idx.kernels) {
    const Event& k = t.events[i];
    if (device_of(k) != dev) continue;
    kern.push_back({k.start_ns, k.end_ns()});
    double b = k.blocks_per_sm;
    if (!(b > 0) && k.grid_blocks > 0 && props != nullptr && props->num_sms > 0) b = double(k.grid_blocks) / props->num_sms;
    if (b > 0) { bps.push_back({k.start_ns, k.end_ns(), b}); any_launch_cfg = true; }
    if (k.occupancy_pct >= 0) occ.push_back({k.start_ns, k.end_ns(), k.occupancy_pct / 100.0});
    if (!c.in_window(k.start_ns)) continue;
    const std::string& n = t.name(k);
    ++nkern;
    durs_us.push_back(k.dur_ns / 1e3);
    if (k.dur_ns < 10'000) ++nshort;
    auto& a = by_name[n];
    a.count++;
    a.total += k.dur_ns;
    // Classify each distinct (kernel name, launching operator) pair once: traces repeat names a lot.
    const auto op_it = k.external_id >= 0 ? idx.op_by_external_id.find(k.external_id) : idx.op_by_external_id.end();
    const trace::StringId op_id = op_it == idx.op_by_external_id.end() ? 0 : t.events[op_it->second].name;
    const uint64_t key = (uint64_t{k.name} << 32) | op_id;
    auto cls_it = cls_cache.find(key);
    if (cls_it == cls_cache.end()) cls_it = cls_cache.emplace(key, classify_kernel(n, t.strings.get(op_id))).first;
    const uint8_t cls = cls_it->second;
    if (cls & kComm) continue;  // the shares below are of compute-kernel time
    kt += k.dur_ns;
    if (cls & kTc) tc += k.dur_ns;
    if (cls & kTf32) tf32 += k.dur_ns;
    if (cls & kFp64) fp64 += k.dur_ns;
    if (cls & kFp32) fp32 += k.dur_ns;
    if (cls & kConv) conv += k.dur_ns;
    if (!opt_ranges.empty() && k.correlation >= 0) {
      auto rt = idx.runtime_by_correlation.find(k.correlation);
      if (rt != idx.runtime_by_correlation.end() && in_opt(t.events[rt->second].start_ns)) { opt_t += k.dur_ns; ++opt_n; }
    }
  }
  int64_t nmemset = 0;
  for (size_t i : idx.memsets) {
    const Event& e = t.events[i];
    if (device_of(e) == dev && c.in_window(e.start_ns)) ++nmemset;
  }
  kern = merge_intervals(std::move(kern));
  const TimeNs kern_in = c.clipped(kern), busy_in = c.clipped(c.busy);
  g["utilization"] = r6(kern_in / total);
  g["busy_fraction"] = r6(busy_in / total);
  g["kernels_per_step"] = r6(nkern / c.nsteps);
  g["kernel_median_us"] = nkern ? json(r6(median(durs_us))) : json(nullptr);
  g["short_kernel_fraction"] = frac_or_null(double(nshort), double(nkern));
  g["tensor_core_kernel_share"] = frac_or_null(double(tc), double(kt));
  g["tf32_kernel_share"] = frac_or_null(double(tf32), double(kt));
  g["fp32_eligible_kernel_share"] = frac_or_null(double(fp32), double(kt));
  g["fp64_kernel_share"] = frac_or_null(double(fp64), double(kt));
  g["conv_kernel_share"] = frac_or_null(double(conv), double(kt));
  if (!opt_ranges.empty()) {
    g["optimizer_kernel_share"] = frac_or_null(double(opt_t), double(kt));
    g["optimizer_kernels_per_step"] = r6(opt_n / c.nsteps);
  }
  g["memset_per_step"] = r6(nmemset / c.nsteps);
  // Static shapes leave a fingerprint: every step launches the same number of GPU activities (what CUDA graphs
  // and torch.compile's reduce-overhead mode need). Two steps at least; 1% slack for a stray copy.
  if (c.si.steps.size() >= 2) {
    int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
    for (const auto& s : c.si.steps) {
      lo = std::min(lo, s.device_activities);
      hi = std::max(hi, s.device_activities);
    }
    g["static_launch_pattern"] = hi > 0 && double(hi - lo) <= 0.01 * double(hi);
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
    g["sm_efficiency"] = r6(acc / total);
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
    g["achieved_occupancy"] = w > 0 ? json(r6(acc / w)) : json(nullptr);
  } else {
    missing.insert("kernel_occupancy");
  }

  // Idle time (HTA classes), as fractions of the summed per-stream idle gaps.
  const IdleBreakdown idle = idle_breakdown(t, idx, dev, c.si.steps);
  const double isum = static_cast<double>(idle.total());
  g["idle"] = {{"fraction", r6(1.0 - busy_in / total)},
               {"host_wait", frac_or_null(double(idle.host_wait), isum)},
               {"kernel_wait", frac_or_null(double(idle.kernel_wait), isum)},
               {"other", frac_or_null(double(idle.other), isum)}};

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
  json mc = json::object();
  const std::pair<CopyKind, const char*> kinds[] = {{CopyKind::kHtoD, "h2d"}, {CopyKind::kDtoH, "d2h"}, {CopyKind::kDtoD, "d2d"}};
  for (const auto& [kind, key] : kinds) {
    const Dir d = dirs.count(kind) ? dirs[kind] : Dir{};
    json o;
    o["count_per_step"] = r6(d.n / c.nsteps);
    o["bytes_per_step"] = r6(d.bytes / c.nsteps);
    o["time_ms_per_step"] = r6(ms(d.time) / c.nsteps);
    o["fraction"] = r6(d.time / total);
    o["bandwidth_gbps"] = d.time_with_bytes > 0 ? json(r6(double(d.bytes) / double(d.time_with_bytes))) : json(nullptr);  // B/ns == GB/s
    o["pageable_bytes"] = r6(d.pageable / c.nsteps);
    o["pinned_bytes"] = r6(d.pinned / c.nsteps);
    o["pageable_fraction"] = kind == CopyKind::kDtoD ? json(nullptr) : frac_or_null(double(d.pageable), double(d.pageable + d.pinned));
    mc[key] = o;
  }
  g["memcpy"] = mc;

  // Top kernels by total time in the steps.
  std::vector<std::pair<std::string, Agg>> rows(by_name.begin(), by_name.end());
  std::sort(rows.begin(), rows.end(), [](const auto& a, const auto& b) {
    return a.second.total != b.second.total ? a.second.total > b.second.total : a.first < b.first;
  });
  TimeNs all = 0;
  for (const auto& r : rows) all += r.second.total;
  json top = json::array();
  for (size_t i = 0; i < rows.size() && i < kTopKernels; ++i) {
    const auto& [name, a] = rows[i];
    top.push_back({{"name", name},
                   {"count", a.count},
                   {"total_ms", r6(ms(a.total))},
                   {"mean_us", r6(a.total / 1e3 / a.count)},
                   {"share", frac_or_null(double(a.total), double(all))},
                   {"tensor_core", is_tensor_core_kernel(name)},
                   {"category", kernel_category(name)}});
  }
  g["top_kernels"] = top;
  return g;
}

// ---- operators ----------------------------------------------------------------------------------------------
json operators_section(const Ctx& c) {
  json o = {{"attributed_fraction", nullptr}, {"unattributed_ms_per_step", nullptr}, {"in_module_fraction", nullptr},
            {"top_by_gpu_time", json::array()}, {"top_by_host_time", json::array()}, {"during_gpu_idle", json::array()},
            {"modules", json::array()}, {"fp32", nullptr}, {"conv", nullptr}, {"idle", nullptr}, {"h2d", nullptr}};
  if (c.total_ns <= 0) return o;
  const OperatorAttribution a = attribute_operators(c.t, c.idx, c.windows, c.idx.main_device,
                                                    c.busy);
  const double n = c.nsteps, total = static_cast<double>(c.total_ns), gpu = static_cast<double>(a.gpu_ns);
  auto per_step_ms = [&](TimeNs v) { return r6(ms(v) / n); };
  constexpr size_t kTop = 10;
  auto top = [&](auto key, auto row_json) {
    std::vector<const OperatorRow*> rows;
    for (const auto& r : a.operators)
      if (key(r) > 0) rows.push_back(&r);
    std::sort(rows.begin(), rows.end(), [&](const OperatorRow* x, const OperatorRow* y) {
      return key(*x) != key(*y) ? key(*x) > key(*y) : x->name < y->name;
    });
    json arr = json::array();
    for (size_t i = 0; i < rows.size() && i < kTop; ++i) arr.push_back(row_json(*rows[i]));
    return std::make_pair(arr, rows.empty() ? nullptr : rows.front());
  };
  if (a.gpu_ns > 0 && a.has_operators) {
    o["attributed_fraction"] = r6(double(a.gpu_attributed_ns) / gpu);
    o["unattributed_ms_per_step"] = per_step_ms(a.gpu_ns - a.gpu_attributed_ns);
  }
  if (a.gpu_ns > 0) o["in_module_fraction"] = r6(double(a.gpu_in_module_ns) / gpu);
  o["top_by_gpu_time"] = top([](const OperatorRow& r) { return r.gpu_ns; }, [&](const OperatorRow& r) {
    return json{{"name", r.name}, {"gpu_ms_per_step", per_step_ms(r.gpu_ns)}, {"gpu_share", frac_or_null(double(r.gpu_ns), gpu)},
                {"calls_per_step", r6(r.launching_calls / n)},
                {"gpu_activities_per_call", r.launching_calls ? json(r6(double(r.gpu_activities) / r.launching_calls)) : json(nullptr)},
                {"host_self_ms_per_step", per_step_ms(r.host_self_ns)}};
  }).first;
  o["top_by_host_time"] = top([](const OperatorRow& r) { return r.host_self_ns; }, [&](const OperatorRow& r) {
    return json{{"name", r.name}, {"host_self_ms_per_step", per_step_ms(r.host_self_ns)},
                {"host_share", r6(double(r.host_self_ns) / total)}, {"calls_per_step", r6(r.calls / n)},
                {"gpu_ms_per_step", per_step_ms(r.gpu_ns)}};
  }).first;
  const double idle = static_cast<double>(a.idle_ns);
  o["during_gpu_idle"] = top([](const OperatorRow& r) { return r.idle_ns; }, [&](const OperatorRow& r) {
    return json{{"name", r.name}, {"idle_ms_per_step", per_step_ms(r.idle_ns)}, {"idle_share", frac_or_null(double(r.idle_ns), idle)}};
  }).first;
  std::vector<const ModuleRow*> mods;
  for (const auto& m : a.modules) mods.push_back(&m);
  std::sort(mods.begin(), mods.end(), [](const ModuleRow* x, const ModuleRow* y) {
    return x->gpu_ns != y->gpu_ns ? x->gpu_ns > y->gpu_ns : x->name < y->name;
  });
  for (size_t i = 0; i < mods.size() && i < kTop; ++i)
    o["modules"].push_back({{"name", mods[i]->name}, {"gpu_ms_per_step", per_step_ms(mods[i]->gpu_ns)},
                            {"gpu_share", frac_or_null(double(mods[i]->gpu_ns), gpu)}});
  // The operator (and module) carrying the most of each removable kind of time, for the rules' evidence.
  auto lead = [&](auto key, double denom) -> json {
    const auto [arr, best] = top(key, [](const OperatorRow& r) { return json(r.name); });
    if (best == nullptr || denom <= 0) return nullptr;
    return {{"top_op", best->name}, {"top_op_share", r6(double(key(*best)) / denom)}};
  };
  o["fp32"] = lead([](const OperatorRow& r) { return r.fp32_ns; }, gpu);
  if (o["fp32"].is_object()) {
    const ModuleRow* best = nullptr;
    for (const auto& m : a.modules)
      if (m.fp32_ns > 0 && (best == nullptr || m.fp32_ns > best->fp32_ns)) best = &m;
    o["fp32"]["top_module"] = best ? json(best->name) : json(nullptr);
  }
  o["conv"] = lead([](const OperatorRow& r) { return r.conv_ns; }, gpu);
  o["idle"] = lead([](const OperatorRow& r) { return r.idle_ns; }, idle);
  TimeNs h2d_total = 0;
  for (const auto& r : a.operators) h2d_total += r.h2d_ns;
  o["h2d"] = lead([](const OperatorRow& r) { return r.h2d_ns; }, double(h2d_total));
  return o;
}

// ---- host ---------------------------------------------------------------------------------------------------
json host_section(const Ctx& c, const RoleRanges& roles) {
  const auto& t = c.t;
  const auto& idx = c.idx;
  json h = {{"launches_per_step", nullptr}, {"launch_mean_us", nullptr}, {"launch_delay_median_us", nullptr},
            {"sync", {{"count_per_step", nullptr}, {"time_ms_per_step", nullptr}, {"fraction", nullptr}, {"gpu_records_per_step", nullptr}}},
            {"runtime_outliers", nullptr}, {"cpu_op_fraction", nullptr}, {"idle_activity", nullptr},
            {"allocator", {{"calls_per_step", nullptr}, {"time_ms_per_step", nullptr}, {"fraction", nullptr}}},
            {"optimizer_step_fraction", nullptr}, {"optimizer_idle_fraction", nullptr}};
  if (c.total_ns <= 0) return h;
  int64_t launches = 0, syncs = 0, outliers = 0, allocs = 0;
  TimeNs launch_t = 0, sync_t = 0, alloc_t = 0;
  std::vector<double> delays;
  Intervals sync_iv, alloc_iv;
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (e.is_gpu || !c.in_window(e.start_ns)) continue;
    const std::string_view n = runtime_base_name(t.name(e));
    if (e.dur_ns > 50'000) ++outliers;
    if (is_allocator_call(n)) {
      ++allocs;
      alloc_t += e.dur_ns;
      alloc_iv.push_back({e.start_ns, e.end_ns()});
    }
    if (is_launch_call(n)) {
      ++launches;
      launch_t += e.dur_ns;
      auto g = idx.gpu_by_correlation.find(e.correlation);
      if (e.correlation >= 0 && g != idx.gpu_by_correlation.end()) {
        TimeNs first = t.events[g->second.front()].start_ns;
        for (size_t gi : g->second) first = std::min(first, t.events[gi].start_ns);
        delays.push_back((first - e.start_ns) / 1e3);
      }
    } else if (is_sync_call(n)) {
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
    h["launches_per_step"] = r6(launches / c.nsteps);
    h["launch_mean_us"] = launches ? json(r6(launch_t / 1e3 / launches)) : json(nullptr);
    h["launch_delay_median_us"] = delays.empty() ? json(nullptr) : json(r6(median(delays)));
    h["runtime_outliers"] = r6(outliers / c.nsteps);
    h["sync"]["count_per_step"] = r6(syncs / c.nsteps);
    h["sync"]["time_ms_per_step"] = r6(ms(sync_t) / c.nsteps);
    h["sync"]["fraction"] = r6(c.clipped(merge_intervals(sync_iv)) / total);
    h["allocator"] = {{"calls_per_step", r6(allocs / c.nsteps)},
                      {"time_ms_per_step", r6(ms(alloc_t) / c.nsteps)},
                      {"fraction", r6(c.clipped(merge_intervals(alloc_iv)) / total)}};
  }
  if (!idx.syncs.empty() || any_runtime) h["sync"]["gpu_records_per_step"] = r6(records / c.nsteps);
  // CPU operators outside data loading, as a share of the step (union, not carved).
  if (idx.has_cpu_ops) {
    const Intervals cpu_only = subtract_intervals(roles.role[6], roles.role[5]);
    h["cpu_op_fraction"] = r6(c.clipped(cpu_only) / total);
  }
  // Optimizer.step ranges (Kineto annotations or the shim's NVTX ranges), as a share of the step.
  const Intervals& opt = c.optimizer;
  if (!opt.empty()) h["optimizer_step_fraction"] = r6(c.clipped(opt) / total);
  // What the host does while the GPU idles.
  if (idx.has_gpu_activity) {
    const Intervals& busy = c.busy;
    // The optimizer's host time only costs step time where the GPU idles meanwhile.
    if (!opt.empty()) h["optimizer_idle_fraction"] = r6(c.clipped(subtract_intervals(opt, busy)) / total);
    constexpr int kDataRole = 5, kCpuRole = 6;  // kRoleNames order
    const HostIdleActivity a = host_idle_activity(t, idx, c.windows, busy, roles.role[kDataRole], roles.role[kCpuRole]);
    h["idle_activity"] = {{"fraction", r6(a.idle_ns / total)},
                          {"allocator", r6(a.allocator / total)},
                          {"memcpy_api", r6(a.memcpy_api / total)},
                          {"sync", r6(a.sync / total)},
                          {"launch", r6(a.launch / total)},
                          {"other_runtime", r6(a.other_runtime / total)},
                          {"dataloader", r6(a.dataloader / total)},
                          {"operators", r6(a.operators / total)},
                          {"other", r6(a.other / total)}};
  }
  return h;
}

// ---- communication ----------------------------------------------------------------------------------------
json comm_section(const Ctx& c, const RoleRanges& roles) {
  json o = {{"kernel_fraction", nullptr}, {"exposed_fraction", nullptr}, {"measured", false}, {"not_measured_reason", nullptr}};
  const Intervals& comm = roles.role[3];
  if (!c.idx.has_gpu_activity || c.total_ns <= 0) {
    // Without GPU activity only collectives recorded on the host (gloo ops in a Kineto trace) count; DDP's
    // reducer runs its gloo all-reduces outside every range a native CPU capture records.
    if (!comm.empty()) o["measured"] = true;
    else
      o["not_measured_reason"] = c.idx.has_gpu_activity ? "the trace has no step time"
                                                         : "no GPU activity and no host collective in the trace: the time "
                                                           "ranks spend in collectives is not separated from compute";
    return o;
  }
  o["measured"] = true;
  const Intervals& comp = roles.role[0];
  const double total = static_cast<double>(c.total_ns);
  o["kernel_fraction"] = r6(c.clipped(comm) / total);
  o["exposed_fraction"] = r6(c.clipped(subtract_intervals(comm, comp)) / total);
  return o;
}

}  // namespace

nlohmann::json build_report(const trace::Trace& t, const AnalysisOptions& options) {
  const TraceIndex idx = build_index(t);
  const StepInfo si = detect_steps(t, idx);
  const RoleRanges roles = build_role_ranges(t, idx);

  Intervals kern_main;
  for (size_t i : idx.kernels)
    if (device_of(t.events[i]) == idx.main_device) kern_main.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  kern_main = merge_intervals(std::move(kern_main));
  StepsSection sec = steps_section(t, idx, si, roles, kern_main, options);
  // Every section below covers the steady-state steps (steps.steady_state says which were left out).
  StepInfo steady = si;
  steady.steps = sec.steady;
  Ctx c{t, idx, steady, {}, device_busy(t, idx), optimizer_ranges(t), 0, 0};
  Intervals w;
  for (const auto& s : steady.steps) {
    w.push_back({s.start, s.end});
    c.total_ns += s.duration();
  }
  c.windows = merge_intervals(std::move(w));
  c.nsteps = static_cast<double>(steady.steps.size());
  std::set<std::string> missing;

  json r;
  r["schema_version"] = kReportSchemaVersion;
  r["tool"] = {{"name", "profile-train"}, {"version", kVersion}};
  r["steps"] = std::move(sec.steps);
  r["breakdown"] = std::move(sec.breakdown);
  r["breakdown_ms"] = std::move(sec.breakdown_ms);
  r["phases"] = std::move(sec.phases);

  // ---- device
  const trace::DeviceInfo* dev = t.device(idx.main_device);
  if (dev == nullptr && !idx.has_gpu_activity && !t.devices.empty()) dev = &t.devices.front();
  if (dev != nullptr) {
    r["device"] = {{"id", dev->id},
                   {"name", dev->name.empty() ? json(nullptr) : json(dev->name)},
                   {"vendor", dev->vendor.empty() ? json(nullptr) : json(dev->vendor)},
                   {"compute_capability", dev->compute_major >= 0 ? json(std::to_string(dev->compute_major) + "." +
                                                                         std::to_string(std::max(0, dev->compute_minor)))
                                                                  : json(nullptr)},
                   {"num_sms", dev->num_sms > 0 ? json(dev->num_sms) : json(nullptr)},
                   {"total_memory_bytes", dev->total_memory_bytes > 0 ? json(dev->total_memory_bytes) : json(nullptr)}};
  } else if (idx.has_gpu_activity) {
    r["device"] = {{"id", idx.main_device}, {"name", nullptr}, {"vendor", nullptr}, {"compute_capability", nullptr},
                   {"num_sms", nullptr}, {"total_memory_bytes", nullptr}};
  } else {
    r["device"] = nullptr;
  }
  if (t.devices.empty()) missing.insert("deviceProperties");

  r["gpu"] = gpu_section(c, missing);
  r["host"] = host_section(c, roles);
  r["communication"] = comm_section(c, roles);
  r["operators"] = operators_section(c);
  r["facts"] = infer_facts(t, idx);
  if (sec.accumulation > 0) {
    // Counted in the trace: backward passes per optimizer step. It replaces what the shim counted from
    // DataLoader fetches, which a prefetching loader inflates.
    r["facts"]["training"] = {{"gradient_accumulation_steps", sec.accumulation}, {"step_boundary", "optimizer step"}};
    auto& inferred = r["facts"]["inferred"];
    if (inferred.is_array() && std::find(inferred.begin(), inferred.end(), "training.gradient_accumulation_steps") == inferred.end())
      inferred.push_back("training.gradient_accumulation_steps");
  }

  // ---- data quality (+ unmatched correlations)
  int64_t unmatched = 0, gpu_without_corr = 0;
  for (const auto* list : {&idx.kernels, &idx.memcpys, &idx.memsets}) {
    for (size_t i : *list) {
      const Event& e = t.events[i];
      if (e.correlation < 0) { ++gpu_without_corr; continue; }
      if (!idx.runtime_by_correlation.count(e.correlation)) ++unmatched;
    }
  }
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (e.correlation >= 0 && is_launch_call(runtime_base_name(t.name(e))) && !idx.gpu_by_correlation.count(e.correlation))
      ++unmatched;
  }
  if (gpu_without_corr > 0) missing.insert("correlation_ids");
  const auto& q = t.quality;
  json notes = json::array();
  for (const auto& n : q.notes) notes.push_back(n);
  if (unmatched > 0)
    notes.push_back(std::to_string(unmatched) + " GPU activities / launch calls without a matching correlation id");
  r["data_quality"] = {{"events_total", q.events_total},
                       {"events_imported", q.events_imported},
                       {"malformed_events", q.malformed_events},
                       {"unknown_categories", q.unknown_categories},
                       {"flow_events_skipped", q.flow_events_skipped},
                       {"negative_durations", q.negative_durations},
                       {"clock_anomalies", q.clock_anomalies},
                       {"unmatched_correlations", q.unmatched_correlations + unmatched},
                       {"dropped_records", q.dropped_records},
                       {"missing_device_properties", q.missing_device_properties || (t.devices.empty() && idx.has_gpu_activity)},
                       {"notes", notes}};
  if (q.agent_internal_errors >= 0) r["data_quality"]["agent_internal_errors"] = q.agent_internal_errors;

  // ---- source
  if (!idx.has_gpu_activity) missing.insert("gpu_activity");
  if (si.source != StepSource::kProfilerStep && si.source != StepSource::kNvtxStep) missing.insert("profiler_steps");
  if (!idx.has_cpu_ops) missing.insert("cpu_ops");
  if (idx.runtimes.empty() && idx.has_gpu_activity) missing.insert("runtime_calls");
  json files = json::array();
  for (const auto& f : t.meta.source_files) files.push_back(f);
  json src;
  src["files"] = files;
  src["format"] = t.meta.format.empty() ? json(nullptr) : json(t.meta.format);
  src["format_version"] = t.meta.format_version.empty() ? json(nullptr) : json(t.meta.format_version);
  src["producer"] = t.meta.producer.empty() ? json(nullptr) : json(t.meta.producer);
  src["step_detection"] = to_string(si.source);
  src["window_start_ns"] = si.steps.empty() ? json(nullptr) : json(si.steps.front().start);
  src["window_end_ns"] = si.steps.empty() ? json(nullptr) : json(si.steps.back().end);
  src["has_gpu_activity"] = idx.has_gpu_activity;
  src["has_cpu_ops"] = idx.has_cpu_ops;
  src["has_phase_ranges"] = idx.has_phase_ranges;
  std::string cap = t.meta.gpu_capture_status;
  if (cap.empty() && !t.meta.gpu_capture_attempted) cap = "GPU activity was not captured";
  src["gpu_capture_status"] = cap.empty() ? json(nullptr) : json(cap);
  src["missing"] = json(std::vector<std::string>(missing.begin(), missing.end()));
  json step_notes = json::array();
  for (const auto& n : si.notes) step_notes.push_back(n);
  src["notes"] = step_notes;
  if (t.meta.rank >= 0 || t.meta.world_size > 0 || !t.meta.distributed_backend.empty()) {
    src["distributed"] = {{"rank", t.meta.rank >= 0 ? json(t.meta.rank) : json(nullptr)},
                          {"world_size", t.meta.world_size > 0 ? json(t.meta.world_size) : json(nullptr)},
                          {"backend", t.meta.distributed_backend.empty() ? json(nullptr) : json(t.meta.distributed_backend)}};
  } else {
    src["distributed"] = nullptr;
  }
  r["source"] = src;

  r["recommendations"] = json::array();
  r["plan"] = nullptr;  // written with the recommendations (rules::apply_rules)
  r["verdict"] = decide_verdict(r);
  return r;
}

}  // namespace profile_train::analysis
