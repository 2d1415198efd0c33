// Trace index and step detection.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <numeric>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using trace::Category;
using trace::Event;

const char* to_string(StepSource s) {
  switch (s) {
    case StepSource::kProfilerStep: return "profiler_step";
    case StepSource::kNvtxStep: return "nvtx_step";
    case StepSource::kOptimizerAnnotation: return "optimizer_annotation";
    case StepSource::kBackwardAnnotation: return "backward_annotation";
    case StepSource::kDataLoaderAnnotation: return "dataloader_annotation";
    case StepSource::kRepeatingRange: return "repeating_range";
    case StepSource::kWholeTrace: return "whole_trace";
  }
  return "whole_trace";
}

namespace {

// What the device runs on matrix units (kernel_class.h): from its properties, else from its name.
DeviceCaps device_caps(const trace::Trace& t, int32_t device) {
  DeviceCaps caps;
  const trace::DeviceInfo* d = t.device(device);
  if (d == nullptr && t.devices.size() == 1) d = &t.devices.front();  // ROCm: properties under another id
  if (d == nullptr) return caps;
  std::string name;
  for (char ch : d->name) name.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
  caps.vendor = d->vendor;
  if (caps.vendor.empty() && (name.find("amd") != std::string::npos || name.find("instinct") != std::string::npos ||
                              name.find("radeon") != std::string::npos))
    caps.vendor = "amd";
  if (caps.vendor.empty() && name.find("nvidia") != std::string::npos) caps.vendor = "nvidia";
  if (caps.vendor == "amd") {
    // Matrix cores: the CDNA Instinct parts (MI100 and newer); consumer Radeon (RDNA 3) runs WMMA, named as such.
    caps.amd_matrix_cores = name.find("instinct") != std::string::npos || name.find(" mi") != std::string::npos ||
                            name.rfind("mi", 0) == 0 || name.find("radeon") == std::string::npos;
  } else {
    caps.compute_major = d->compute_major;
    caps.compute_minor = d->compute_minor;
  }
  return caps;
}

}  // namespace

// One class per kernel: per distinct (kernel name, collective arg, launching operator, its input types), once.
void classify_kernels(const trace::Trace& t, TraceIndex& idx) {
  const DeviceCaps caps = device_caps(t, idx.main_device);
  struct Key {
    uint64_t a, b;
    bool operator==(const Key& o) const { return a == o.a && b == o.b; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const { return std::hash<uint64_t>()(k.a * 0x9E3779B97F4A7C15ull ^ k.b); }
  };
  std::unordered_map<Key, uint32_t, KeyHash> seen;
  idx.kernel_class_of.resize(idx.kernels.size());
  for (size_t p = 0; p < idx.kernels.size(); ++p) {
    const Event& k = t.events[idx.kernels[p]];
    trace::StringId op_name = 0, op_types = 0;
    if (const size_t* op = idx.op_by_external_id.find(k.external_id)) {
      const Event& o = t.events[*op];
      op_name = o.name;
      if (o.inputs > 0 && o.inputs < t.op_inputs.size()) op_types = t.op_inputs[o.inputs].types;
    }
    const Key key{(uint64_t{k.name} << 32) | op_name, (uint64_t{op_types} << 1) | (k.collective ? 1u : 0u)};
    auto it = seen.find(key);
    if (it == seen.end()) {
      LaunchingOperator op{t.strings.get(op_name), t.strings.get(op_types)};
      // The operator's inputs are the kernel's when the operator computes it (an ATen or library operator), not
      // when it only wraps compiled code or autograd (CompiledFunction, autograd::engine::evaluate_function: ...).
      if (!operator_inputs_are_kernel_inputs(op.name)) op.types = {};
      const KernelClass cls = classify_kernel(t.name(k), k.collective, op, caps);
      auto at = std::find(idx.kernel_classes.begin(), idx.kernel_classes.end(), cls);
      if (at == idx.kernel_classes.end()) at = idx.kernel_classes.insert(idx.kernel_classes.end(), cls);
      it = seen.emplace(key, static_cast<uint32_t>(at - idx.kernel_classes.begin())).first;
    }
    idx.kernel_class_of[p] = it->second;
  }
}

TraceIndex build_index(const trace::Trace& t) {
  TraceIndex idx;
  std::map<int32_t, TimeNs> busy_by_device;
  auto correlation_of = [&](int64_t id) -> TraceIndex::Correlation& {
    auto [slot, fresh] = idx.correlation_slot.try_emplace(id, static_cast<uint32_t>(idx.correlations.size()));
    if (fresh) idx.correlations.emplace_back();
    return idx.correlations[*slot];
  };
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    switch (e.cat) {
      case Category::kKernel: idx.kernels.push_back(i); break;
      case Category::kMemcpy: idx.memcpys.push_back(i); break;
      case Category::kMemset: idx.memsets.push_back(i); break;
      case Category::kSync: idx.syncs.push_back(i); break;
      case Category::kRuntime:
      case Category::kDriver:
        idx.runtimes.push_back(i);
        if (e.correlation >= 0) {
          TraceIndex::Correlation& c = correlation_of(e.correlation);
          if (c.runtime == TraceIndex::Correlation::kNone) c.runtime = i;
        }
        break;
      case Category::kCpuOp:
        idx.cpu_ops.push_back(i);
        // Events are sorted by start (enclosing first): a later match is nested deeper, keep the innermost.
        if (e.external_id >= 0) *idx.op_by_external_id.try_emplace(e.external_id, i).first = i;
        break;
      case Category::kUserAnnotation:
        if (!idx.has_phase_ranges) {
          const std::string& n = t.strings.get(e.name);
          idx.has_phase_ranges = n == "## forward ##" || n == "## backward ##" || n.rfind("Optimizer.step#", 0) == 0;
        }
        break;
      default: break;
    }
    if (e.cat == Category::kKernel || e.cat == Category::kMemcpy || e.cat == Category::kMemset) {
      if (e.correlation >= 0) {
        TraceIndex::Correlation& c = correlation_of(e.correlation);
        c.gpu_first = c.gpu_count == 0 ? e.start_ns : std::min(c.gpu_first, e.start_ns);
        c.gpu_last = c.gpu_count == 0 ? e.end_ns() : std::max(c.gpu_last, e.end_ns());
        ++c.gpu_count;
      }
      busy_by_device[e.device >= 0 ? e.device : static_cast<int32_t>(e.pid)] += e.dur_ns;
    }
  }
  idx.correlation_slot.pack();
  idx.op_by_external_id.pack();
  idx.has_gpu_activity = !busy_by_device.empty();
  idx.has_cpu_ops = !idx.cpu_ops.empty();
  TimeNs best = -1;
  for (const auto& [dev, busy] : busy_by_device) {
    if (busy > best) {  // std::map order: ties go to the lowest device id
      best = busy;
      idx.main_device = dev;
    }
  }
  classify_kernels(t, idx);
  return idx;
}

namespace {

bool is_host_annotation(const Event& e) {
  return !e.is_gpu && (e.cat == Category::kUserAnnotation || e.cat == Category::kCpuOp);
}

// Host-side ranges whose name matches `pred`, on the thread carrying most of them; ranges nested in another
// kept range (the same annotation recorded twice) are dropped.
std::vector<const Event*> ranges_on_main_thread(const trace::Trace& t, bool (*pred)(std::string_view),
                                                int64_t* pid, int64_t* tid) {
  std::map<std::pair<int64_t, int64_t>, std::vector<const Event*>> by_thread;
  for (const auto& e : t.events)
    if (is_host_annotation(e) && pred(t.name(e))) by_thread[{e.pid, e.tid}].push_back(&e);
  const std::vector<const Event*>* best = nullptr;
  for (const auto& [key, list] : by_thread) {
    if (best == nullptr || list.size() > best->size()) {
      best = &list;
      *pid = key.first;
      *tid = key.second;
    }
  }
  std::vector<const Event*> out;
  if (best == nullptr) return out;
  for (const Event* e : *best) {  // already sorted by start, enclosing first
    if (!out.empty() && e->end_ns() <= out.back()->end_ns()) continue;
    out.push_back(e);
  }
  return out;
}

// Extends host step spans to the GPU work they launched (tb_plugin's _find_device_steps /
// _update_steps_duration): a step ends at max(host end, last GPU activity launched by a runtime call fully
// inside the host span) and starts no earlier than the previous step's end. Trailing steps whose GPU work
// was not captured are dropped.
void adjust_to_device(const trace::Trace& t, const TraceIndex& idx, StepInfo& info) {
  auto& steps = info.steps;
  if (steps.empty()) return;
  const TimeNs kMax = std::numeric_limits<TimeNs>::max();
  const TimeNs kMin = std::numeric_limits<TimeNs>::min();
  std::vector<std::pair<TimeNs, TimeNs>> device(steps.size(), {kMax, kMin});
  // The span and count of each correlation id's GPU activities come from the index (computed once there: a
  // hostile or merged trace can give one id to many launches and many kernels). matched: by correlation slot,
  // the ids whose GPU activities a step claimed.
  std::vector<char> matched(idx.correlations.size(), 0);
  bool any = false;
  for (size_t s = 0; s < steps.size(); ++s) {
    auto it = std::lower_bound(idx.runtimes.begin(), idx.runtimes.end(), steps[s].host_start,
                               [&](size_t i, TimeNs v) { return t.events[i].start_ns < v; });
    for (; it != idx.runtimes.end() && t.events[*it].start_ns < steps[s].host_end; ++it) {
      const Event& rt = t.events[*it];
      if (rt.end_ns() > steps[s].host_end || rt.correlation < 0) continue;
      const TraceIndex::Correlation* span = idx.correlation(rt.correlation);
      if (span == nullptr || span->gpu_count == 0) continue;
      device[s].first = std::min(device[s].first, span->gpu_first);
      device[s].second = std::max(device[s].second, span->gpu_last);
      matched[static_cast<size_t>(span - idx.correlations.data())] = 1;
      steps[s].device_activities += span->gpu_count;
      any = true;
    }
  }
  if (!any) return;
  TimeNs prev_end = steps[0].host_start;
  if (device[0].first != kMax) {
    // GPU work launched before the first step (not matched to any step) that finished before the first
    // step's GPU work started pushes the first step's start.
    auto consider = [&](const std::vector<size_t>& list) {
      for (size_t gi : list) {
        const Event& ge = t.events[gi];
        const TraceIndex::Correlation* c = idx.correlation(ge.correlation);
        if ((c == nullptr || !matched[static_cast<size_t>(c - idx.correlations.data())]) && ge.end_ns() < device[0].first)
          prev_end = std::max(prev_end, ge.end_ns());
      }
    };
    consider(idx.kernels);
    consider(idx.memcpys);
    consider(idx.memsets);
  }
  for (size_t s = 0; s < steps.size(); ++s) {
    const TimeNs start = std::max(prev_end, steps[s].host_start);
    TimeNs end = steps[s].host_end;
    if (device[s].first == kMax) {
      end = std::max(end, start);
    } else {
      end = std::max(end, device[s].second);
      if (end < start) end = start;
    }
    steps[s].start = start;
    steps[s].end = end;
    prev_end = end;
  }
  if (steps.size() > 1) {
    int64_t last = static_cast<int64_t>(steps.size()) - 1;
    while (last >= 0 && steps[last].device_activities == 0) --last;
    if (last >= 0) {
      size_t keep = static_cast<size_t>(last) + 1;
      if (last > 0 && steps[last - 1].device_activities * 0.8 > static_cast<double>(steps[last].device_activities))
        keep = static_cast<size_t>(last);
      if (keep < steps.size()) {
        info.dropped_tail_steps = static_cast<int64_t>(steps.size() - keep);
        info.notes.push_back("dropped the last " + std::to_string(info.dropped_tail_steps) +
                             " step(s): their GPU work was not (fully) captured");
        steps.resize(keep);
      }
    }
  }
}

}  // namespace

namespace {

// The ProfilerStep# ranges of a native capture come from the Python shim (one per DataLoader fetch, or per
// optimizer step once it saw one) rather than from the program when the shim wrote facts.
bool steps_from_shim(const trace::Trace& t) {
  if (!t.meta.steps_from_capture) return false;
  const auto cap = t.facts.find("capture");
  return cap != t.facts.end() && cap->is_object() && cap->value("shim", false);
}

bool any_in(const Intervals& v, TimeNs start, TimeNs end) {
  auto it = std::upper_bound(v.begin(), v.end(), start, [](TimeNs x, const Interval& i) { return x < i.end; });
  return it != v.end() && it->start < end;
}

// Keeps the steps holding a backward or an optimizer step when some do (the others are evaluation batches).
void keep_training_steps(const LoopRanges& r, StepInfo& info) {
  auto training = [&](const Step& s) {
    return any_in(r.optimizer, s.host_start, s.host_end) || any_in(r.backward, s.host_start, s.host_end) ||
           any_in(r.autograd, s.host_start, s.host_end);
  };
  if (std::none_of(info.steps.begin(), info.steps.end(), training)) return;
  const size_t before = info.steps.size();
  info.steps.erase(std::remove_if(info.steps.begin(), info.steps.end(), [&](const Step& s) { return !training(s); }),
                   info.steps.end());
  info.dropped_eval_steps = static_cast<int64_t>(before - info.steps.size());
  if (info.dropped_eval_steps > 0)
    info.notes.push_back("left out " + std::to_string(info.dropped_eval_steps) +
                         " step(s) holding neither a backward nor an optimizer step (evaluation, or cut short)");
}

// A first optimizer-bounded step holding fewer backward passes than every later step began before the capture
// did (a --warmup-steps window opening between the micro-batches of an accumulation): it is dropped.
void drop_partial_first_step(const LoopRanges& r, StepInfo& info) {
  if (info.steps.size() < 2 || r.backward.empty()) return;
  auto backwards = [&](const Step& s) {
    auto lo = std::lower_bound(r.backward.begin(), r.backward.end(), s.host_start,
                               [](const Interval& i, TimeNs x) { return i.start < x; });
    auto hi = std::lower_bound(lo, r.backward.end(), s.host_end, [](const Interval& i, TimeNs x) { return i.start < x; });
    return hi - lo;
  };
  std::ptrdiff_t fewest_later = std::numeric_limits<std::ptrdiff_t>::max();
  for (size_t i = 1; i < info.steps.size(); ++i) fewest_later = std::min(fewest_later, backwards(info.steps[i]));
  if (backwards(info.steps.front()) >= fewest_later) return;
  info.steps.erase(info.steps.begin());
  info.notes.push_back("dropped the first step: it holds fewer backward passes than every later step (the capture "
                       "started inside it)");
}

// The program's most time-covering repeated annotation (user_annotation, outermost on its thread, >= 2
// occurrences, covering at least half of the span from its first start to its last end): a loop body.
std::vector<Step> repeating_range_steps(const trace::Trace& t, StepInfo& info) {
  struct Occ { std::vector<const Event*> list; TimeNs total = 0; };
  std::map<std::pair<int64_t, int64_t>, std::vector<const Event*>> by_thread;
  for (const auto& e : t.events)
    if (!e.is_gpu && e.cat == Category::kUserAnnotation && e.dur_ns > 0) by_thread[{e.pid, e.tid}].push_back(&e);
  const Occ* best = nullptr;
  std::string best_name;
  std::pair<int64_t, int64_t> best_thread;
  std::map<std::pair<std::pair<int64_t, int64_t>, std::string>, Occ> occ;
  for (auto& [thread, list] : by_thread) {
    TimeNs open_end = std::numeric_limits<TimeNs>::min();
    for (const Event* e : list) {  // sorted by start, enclosing first
      if (e->start_ns < open_end) continue;  // nested
      open_end = e->end_ns();
      Occ& o = occ[{thread, t.name(*e)}];
      o.list.push_back(e);
      o.total += e->dur_ns;
    }
  }
  for (const auto& [key, o] : occ) {
    if (o.list.size() < 2 || is_step_annotation(key.second)) continue;
    const TimeNs span = o.list.back()->end_ns() - o.list.front()->start_ns;
    if (span <= 0 || 2 * o.total < span) continue;
    if (best == nullptr || o.total > best->total) {
      best = &o;
      best_name = key.second;
      best_thread = key.first;
    }
  }
  std::vector<Step> steps;
  if (best == nullptr) return steps;
  for (size_t i = 0; i < best->list.size(); ++i) {
    const TimeNs s = best->list[i]->start_ns;
    const TimeNs e = i + 1 < best->list.size() ? best->list[i + 1]->start_ns : best->list[i]->end_ns();
    steps.push_back({best_name + "#" + std::to_string(i), s, e, s, e, 0});
  }
  info.main_pid = best_thread.first;
  info.main_tid = best_thread.second;
  info.repeating_range = best_name;
  return steps;
}

}  // namespace

StepInfo detect_steps(const trace::Trace& t, const TraceIndex& idx) {
  StepInfo info;
  int64_t pid = -1, tid = -1;
  const bool shim = steps_from_shim(t);
  auto profiler_steps = ranges_on_main_thread(t, &is_step_annotation, &pid, &tid);
  auto take_profiler_steps = [&] {
    info.source = t.meta.steps_from_capture ? StepSource::kNvtxStep : StepSource::kProfilerStep;
    info.main_pid = pid;
    info.main_tid = tid;
    for (const Event* e : profiler_steps)
      info.steps.push_back({t.name(*e), e->start_ns, e->end_ns(), e->start_ns, e->end_ns(), 0});
    keep_training_steps(loop_ranges(t, pid, tid), info);
  };
  if (!profiler_steps.empty() && !shim) take_profiler_steps();
  if (info.steps.empty()) {
    const LoopRanges loop = shim && !profiler_steps.empty() ? loop_ranges(t, pid, tid) : loop_ranges(t);
    auto use = [&](std::vector<Step> steps, StepSource source, const char* note) {
      if (steps.empty()) return false;
      info.steps = std::move(steps);
      info.source = source;
      info.main_pid = loop.pid;
      info.main_tid = loop.tid;
      info.notes.push_back(note);
      return true;
    };
    use(optimizer_bounded_steps(loop), StepSource::kOptimizerAnnotation,
        "steps are bounded by the Optimizer.step ranges (a step ends where its optimizer step ends)") ||
        use(backward_bounded_steps(loop), StepSource::kBackwardAnnotation,
            "no optimizer step: one step per backward range, from the forward and fetches before it");
    if (info.source == StepSource::kOptimizerAnnotation) drop_partial_first_step(loop, info);
  }
  if (info.steps.empty() && !profiler_steps.empty()) take_profiler_steps();
  if (info.steps.empty()) {
    auto dl = ranges_on_main_thread(t, &is_dataloader_annotation, &pid, &tid);
    if (dl.size() >= 2) {
      info.source = StepSource::kDataLoaderAnnotation;
      info.main_pid = pid;
      info.main_tid = tid;
      for (size_t i = 1; i < dl.size(); ++i) {
        const TimeNs s = dl[i - 1]->start_ns, e = dl[i]->start_ns;
        info.steps.push_back({"iteration#" + std::to_string(i), s, e, s, e, 0});
      }
      info.notes.push_back("no ProfilerStep#: steps are the windows between consecutive DataLoader __next__ calls");
    }
  }
  if (info.steps.empty()) {
    info.steps = repeating_range_steps(t, info);
    if (!info.steps.empty()) {
      info.source = StepSource::kRepeatingRange;
      info.notes.push_back("no step, optimizer, backward or DataLoader ranges: steps are the repeats of the range \"" +
                           info.repeating_range + "\"");
    }
  }
  if (info.steps.empty()) {
    info.source = StepSource::kWholeTrace;
    TimeNs lo = std::numeric_limits<TimeNs>::max(), hi = std::numeric_limits<TimeNs>::min();
    TimeNs glo = lo, ghi = hi;
    for (const auto& e : t.events) {
      if (e.cat == Category::kOther || e.cat == Category::kOverhead) continue;
      glo = std::min(glo, e.start_ns);
      ghi = std::max(ghi, e.end_ns());
      if (e.cat == Category::kCpuOp || e.cat == Category::kUserAnnotation || e.cat == Category::kPythonFunction) {
        lo = std::min(lo, e.start_ns);
        hi = std::max(hi, e.end_ns());
      }
    }
    if (lo > hi) { lo = glo; hi = ghi; }  // no CPU ops: the span of everything
    if (lo <= hi) {
      info.steps.push_back({"whole_trace", lo, hi, lo, hi, 0});
      info.notes.push_back("no step annotations: the whole trace is one window (includes start-up costs)");
    }
    // Main thread: the CPU thread with the most runtime calls, else the most CPU ops.
    std::map<std::pair<int64_t, int64_t>, int64_t> count;
    for (size_t i : idx.runtimes) count[{t.events[i].pid, t.events[i].tid}]++;
    if (count.empty())
      for (size_t i : idx.cpu_ops) count[{t.events[i].pid, t.events[i].tid}]++;
    int64_t best = 0;
    for (const auto& [k, c] : count)
      if (c > best) { best = c; info.main_pid = k.first; info.main_tid = k.second; }
  }
  adjust_to_device(t, idx, info);
  return info;
}

std::vector<size_t> bounded_step_selection(const std::vector<double>& dur_ms, size_t keep) {
  const size_t n = dur_ms.size();
  std::vector<size_t> all(n);
  std::iota(all.begin(), all.end(), size_t{0});
  if (n <= 3 * keep) return all;
  std::vector<size_t> slow = all;
  std::partial_sort(slow.begin(), slow.begin() + static_cast<std::ptrdiff_t>(keep), slow.end(), [&](size_t a, size_t b) {
    return dur_ms[a] != dur_ms[b] ? dur_ms[a] > dur_ms[b] : a < b;
  });
  std::set<size_t> pick;
  for (size_t i = 0; i < keep; ++i) pick.insert({i, n - 1 - i, slow[i]});
  return {pick.begin(), pick.end()};
}

std::optional<StepHistogram> step_histogram(const std::vector<double>& dur_ms, size_t bins) {
  if (dur_ms.empty() || bins == 0) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(dur_ms.begin(), dur_ms.end());
  const double width = (*hi - *lo) / static_cast<double>(bins);
  std::vector<int64_t> counts(bins, 0);
  for (double d : dur_ms) {
    const size_t bin = width > 0 ? static_cast<size_t>((d - *lo) / width) : 0;
    counts[std::min(bin, bins - 1)]++;
  }
  // Same 1e-6 rounding as the rest of the report.
  auto r6 = [](double x) { return std::isfinite(x) ? std::round(x * 1e6) / 1e6 : 0.0; };
  return StepHistogram{r6(*lo), r6(*hi), r6(width), std::move(counts)};
}

}  // namespace profile_train::analysis
