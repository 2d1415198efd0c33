// The memory analyzer (include/profile_train/analysis/memory.h says what it computes and how).
#include "profile_train/analysis/memory.h"

#include <algorithm>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "profile_train/common/huge_pages.h"
#include "report_context.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

// Named (not anonymous): MemoryPrep, declared in the header, holds them.
namespace memory_types {
// Device index in the section: one per (type, id) pair the plugin names alike (any non-CPU type is "GPU<id>").
struct DeviceKey {
  bool cpu = false;
  int32_t id = -1;
  bool operator<(const DeviceKey& o) const { return cpu != o.cpu ? !cpu : id < o.id; }  // GPUs first
};
// Operator attribution: per sample, the node (global index) of the operator range it belongs to, or -1; and
// the per-device operator tables.
struct Attribution {
  std::vector<int64_t> sample_op;  // parallel to the good samples: the operator's event index, or -1
  std::map<DeviceKey, std::map<std::string, MemoryOperator>> rows;
};
}  // namespace memory_types

namespace {

using memory_types::Attribution;
using memory_types::DeviceKey;
using trace::Category;
using trace::MemorySample;

int64_t sat_add(int64_t a, int64_t b) {
  int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) return b > 0 ? INT64_MAX : INT64_MIN;
  return r;
}

// Annotation ranges the plugin keeps out of the operator table (node.py is_operator_node, ExcludeOpName) and
// those the importer files as annotations (kineto_schema.cpp is_builtin_record_function).
bool is_memory_operator(const trace::Trace& t, const trace::Event& e) {
  if (e.cat != Category::kCpuOp) return false;
  const std::string& n = t.name(e);
  return n != "DataParallel.forward" && n != "DistributedDataParallel.forward" && !n.starts_with("Optimizer.");
}

struct Node {
  size_t event = 0;
  // The event's times, name and kind, copied here: the passes over the tree read nodes in order instead of
  // events at scattered places.
  TimeNs start = 0, end = 0;
  trace::StringId name = 0;
  bool cpu_op = false;
  int parent = -1;  // -1: the thread's root; a merged node's children keep it until the merge pass re-points them
  int first_child = -1;  // the first child (the only one when child_count is 1)
  int child_count = 0;
  bool op = false, processed = false, merged = false;
};

DeviceKey key_of(const MemorySample& m) { return {m.device_type == 0, m.device_type == 0 ? -1 : m.device_id}; }

struct SelfMetrics {
  int64_t increase = 0, alloc_bytes = 0, alloc_count = 0;
  void add(int64_t bytes) {
    increase = sat_add(increase, bytes);
    if (bytes > 0) {
      alloc_bytes = sat_add(alloc_bytes, bytes);
      ++alloc_count;
    }
  }
  void add(const SelfMetrics& o) {
    increase = sat_add(increase, o.increase);
    alloc_bytes = sat_add(alloc_bytes, o.alloc_bytes);
    alloc_count = sat_add(alloc_count, o.alloc_count);
  }
  bool any() const { return increase != 0 || alloc_bytes != 0 || alloc_count != 0; }
};

Attribution attribute(const trace::Trace& t, const std::vector<const MemorySample*>& samples,
                      const std::map<DeviceKey, size_t>& dev_index) {
  Attribution out;
  out.sample_op.assign(samples.size(), -1);
  // Ranges per thread, in (start, longer first) order (trace::Trace::finalize sorted the events so).
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> by_thread;
  std::pair<int64_t, int64_t> last_key{};
  std::vector<size_t>* last = nullptr;  // the list of the previous range's thread: ranges come in runs
  for (size_t i = 0; i < t.events.size(); ++i) {
    const auto& e = t.events[i];
    if (e.is_gpu || (e.cat != Category::kCpuOp && e.cat != Category::kUserAnnotation)) continue;
    if (last == nullptr || last_key.first != e.pid || last_key.second != e.tid) {
      last_key = {e.pid, e.tid};
      last = &by_thread[last_key];
    }
    last->push_back(i);
  }
  std::map<std::pair<int64_t, int64_t>, std::vector<size_t>> samples_by_thread;
  for (size_t i = 0; i < samples.size(); ++i) samples_by_thread[{samples[i]->pid, samples[i]->tid}].push_back(i);

  const size_t ndev = dev_index.size();
  std::vector<int8_t> operator_name(t.strings.size(), -1);  // is_memory_operator's name test, once per name
  auto is_operator = [&](const trace::Event& e) {
    if (e.cat != Category::kCpuOp) return false;
    int8_t& op = operator_name[e.name];
    if (op < 0) op = is_memory_operator(t, e) ? 1 : 0;
    return op == 1;
  };
  std::vector<Node> nodes;
  size_t ranges = 0;
  for (const auto& [thread, evs] : by_thread) ranges += evs.size();
  reserve_huge(nodes, ranges);
  std::vector<SelfMetrics> self;  // [node * ndev + device]
  for (const auto& [thread, evs] : by_thread) {
    const int base = static_cast<int>(nodes.size());
    std::vector<int> stack;
    for (size_t ei : evs) {
      const auto& e = t.events[ei];
      while (!stack.empty() && !(e.start_ns < nodes[stack.back()].end)) stack.pop_back();
      // A range that outlasts the one it starts in is malformed nesting; the plugin drops it (op_tree.py).
      if (!stack.empty() && e.end_ns() > nodes[stack.back()].end) continue;
      Node n;
      n.event = ei;
      n.start = e.start_ns;
      n.end = e.end_ns();
      n.name = e.name;
      n.cpu_op = e.cat == Category::kCpuOp;
      n.parent = stack.empty() ? -1 : stack.back();
      n.op = is_operator(e);
      nodes.push_back(n);
      const int id = static_cast<int>(nodes.size()) - 1;
      if (n.parent >= 0 && nodes[n.parent].child_count++ == 0) nodes[n.parent].first_child = id;
      stack.push_back(id);
    }
    // Merge a range with its single same-named child (torch.autograd.profiler's _remove_dup_nodes): the node
    // takes over the child's children (counts here, no child lists: one allocation per range cost more than
    // the rest of the tree).
    for (int id = base; id < static_cast<int>(nodes.size()); ++id) {
      if (nodes[id].merged) continue;
      while (nodes[id].child_count == 1) {
        const int c = nodes[id].first_child;
        if (nodes[id].name != nodes[c].name || !nodes[id].cpu_op || !nodes[c].cpu_op) break;
        nodes[c].merged = true;
        nodes[id].child_count = nodes[c].child_count;
        nodes[id].first_child = nodes[c].first_child;
      }
    }
    // Children of a merged node belong to the node it merged into. Parents come before their children, so one
    // forward pass re-points every chain of merges.
    for (int id = base; id < static_cast<int>(nodes.size()); ++id) {
      const int p = nodes[id].parent;
      if (p >= 0 && nodes[p].merged) nodes[id].parent = nodes[p].parent;
    }
    // Place the thread's samples: a sweep over the ranges in start order with the stack of open ones.
    auto sit = samples_by_thread.find(thread);
    if (sit == samples_by_thread.end()) continue;
    std::vector<int> order;  // preorder of the kept ranges
    for (int id = base; id < static_cast<int>(nodes.size()); ++id)
      if (!nodes[id].merged) order.push_back(id);
    std::vector<size_t> sidx = sit->second;
    std::stable_sort(sidx.begin(), sidx.end(), [&](size_t a, size_t b) { return samples[a]->ts_ns < samples[b]->ts_ns; });
    stack.clear();
    size_t p = 0;
    for (size_t si : sidx) {
      const TimeNs ts = samples[si]->ts_ns;
      for (; p < order.size() && nodes[order[p]].start <= ts; ++p) {
        const int id = order[p];
        while (!stack.empty() && stack.back() != nodes[id].parent) stack.pop_back();
        stack.push_back(id);
      }
      while (!stack.empty() && nodes[stack.back()].end <= ts) stack.pop_back();
      if (stack.empty()) continue;  // outside every range of the thread
      const int d = stack.back();
      nodes[d].processed = true;
      if (!nodes[d].op) continue;  // inside an annotation only: the plugin leaves it unattributed too
      out.sample_op[si] = d;  // a node index until the end of attribute()
    }
  }
  // A range is reached when a sample lies in it or in a range below it; the plugin's traversal visits the
  // top-level ranges and the children of reached ones (so only those count as calls).
  for (size_t i = nodes.size(); i-- > 0;)
    if (nodes[i].processed && !nodes[i].merged && nodes[i].parent >= 0) nodes[nodes[i].parent].processed = true;
  // Metrics only for the reached ranges (every sample's range and its ancestors; any other range's are all 0):
  // compact[node] is its row in self / incl, or -1.
  std::vector<int> compact(nodes.size(), -1);
  size_t nreached = 0;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].processed && !nodes[i].merged) compact[i] = static_cast<int>(nreached++);
  self.assign(nreached * ndev, SelfMetrics{});
  for (size_t si = 0; si < samples.size(); ++si) {
    const int d = out.sample_op[si];
    if (d >= 0)
      self[static_cast<size_t>(compact[static_cast<size_t>(d)]) * ndev + dev_index.at(key_of(*samples[si]))].add(samples[si]->bytes_delta);
  }
  std::vector<SelfMetrics> incl = self;  // children come after their parent: accumulate backwards
  for (size_t i = nodes.size(); i-- > 0;) {
    if (compact[i] < 0 || nodes[i].parent < 0) continue;
    const size_t from = static_cast<size_t>(compact[i]) * ndev;
    const size_t to = static_cast<size_t>(compact[static_cast<size_t>(nodes[i].parent)]) * ndev;
    for (size_t d = 0; d < ndev; ++d) incl[to + d].add(incl[from + d]);
  }
  std::vector<int64_t> calls(t.strings.size(), 0);  // by name
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = nodes[i];
    if (n.merged || !n.op) continue;
    if (n.parent < 0 || nodes[n.parent].processed) ++calls[n.name];
  }
  for (const auto& [key, d] : dev_index) {
    std::map<trace::StringId, MemoryOperator> rows;
    for (size_t i = 0; i < nodes.size(); ++i) {
      const Node& n = nodes[i];
      if (n.merged || !n.op || !n.processed) continue;
      const SelfMetrics& s = self[static_cast<size_t>(compact[i]) * ndev + d];
      const SelfMetrics& c = incl[static_cast<size_t>(compact[i]) * ndev + d];
      if (!s.any() && !c.any()) continue;
      MemoryOperator& r = rows[n.name];
      r.self_increase_bytes = sat_add(r.self_increase_bytes, s.increase);
      r.self_allocation_bytes = sat_add(r.self_allocation_bytes, s.alloc_bytes);
      r.self_allocation_count = sat_add(r.self_allocation_count, s.alloc_count);
      r.increase_bytes = sat_add(r.increase_bytes, c.increase);
      r.allocation_bytes = sat_add(r.allocation_bytes, c.alloc_bytes);
      r.allocation_count = sat_add(r.allocation_count, c.alloc_count);
    }
    auto& named = out.rows[key];
    for (auto& [name, r] : rows) {
      r.name = t.strings.get(name);
      r.calls = calls[name];
      named[r.name] = r;
    }
  }
  for (auto& op : out.sample_op)
    if (op >= 0) op = static_cast<int64_t>(nodes[static_cast<size_t>(op)].event);
  return out;
}

// Autograd's backward nodes: "autograd::engine::evaluate_function: XBackward0" (modern), "XBackward" (2021).
bool is_backward_operator(std::string_view n) {
  return n.starts_with("autograd::engine::evaluate_function") || n.find("Backward") != std::string_view::npos;
}

std::optional<Phase> phase_at(const PhaseIndex* phases, TimeNs ts) {
  if (phases == nullptr) return std::nullopt;
  // The carving order of phase_split: a moment in both an optimizer and a backward range is optimizer time.
  for (Phase p : {Phase::kOptimizer, Phase::kBackward, Phase::kForward, Phase::kDataWait}) {
    const Intervals& r = (*phases)[p];
    auto it = std::upper_bound(r.begin(), r.end(), ts, [](TimeNs v, const Interval& w) { return v < w.end; });
    if (it != r.end() && it->start <= ts) return p;
  }
  return std::nullopt;
}

}  // namespace

bool is_bad_memory_sample(const trace::MemorySample& m) {
  return m.bytes_delta > kMaxMemoryBytes || m.bytes_delta < -kMaxMemoryBytes || m.total_allocated < -1 ||
         m.total_allocated > kMaxMemoryBytes || m.total_reserved < -1 || m.total_reserved > kMaxMemoryBytes ||
         m.device_type < 0;
}

std::string memory_device_name(int32_t device_type, int32_t device_id) {
  return device_type == 0 ? std::string("CPU") : "GPU" + std::to_string(device_id);
}

struct MemoryPrep {
  int64_t rejected = 0;
  std::vector<const trace::MemorySample*> samples;  // the good ones, in time order (finalize sorted them)
  std::map<memory_types::DeviceKey, int64_t> rejected_on;  // per device
  std::map<memory_types::DeviceKey, size_t> dev_index;
  memory_types::Attribution attr;
};

void MemoryPrepDeleter::operator()(MemoryPrep* p) const { delete p; }

MemoryPrepPtr prepare_memory(const trace::Trace& t) {
  MemoryPrepPtr p(new MemoryPrep);
  p->samples.reserve(t.memory.size());
  for (const auto& m : t.memory) {
    if (is_bad_memory_sample(m)) {
      ++p->rejected;
      ++p->rejected_on[key_of(m)];
    } else {
      p->samples.push_back(&m);
    }
  }
  if (p->samples.empty()) return p;
  for (const auto* m : p->samples) p->dev_index.emplace(key_of(*m), 0);
  size_t k = 0;
  for (auto& [key, i] : p->dev_index) i = k++;
  p->attr = attribute(t, p->samples, p->dev_index);
  return p;
}

std::optional<Memory> memory_section(const trace::Trace& t, const std::vector<Step>& steps, const PhaseIndex* phases,
                                     int64_t* rejected) {
  return memory_section(t, prepare_memory(t), steps, phases, rejected);
}

std::optional<Memory> memory_section(const trace::Trace& t, MemoryPrepPtr prep, const std::vector<Step>& steps,
                                     const PhaseIndex* phases, int64_t* rejected) {
  *rejected = prep->rejected;
  const std::vector<const MemorySample*>& samples = prep->samples;
  const std::map<DeviceKey, int64_t>& rejected_on = prep->rejected_on;
  const std::map<DeviceKey, size_t>& dev_index = prep->dev_index;
  Attribution& attr = prep->attr;
  if (samples.empty()) return std::nullopt;

  const TimeNs t0 = t.events.empty() ? samples.front()->ts_ns : std::min(t.events.front().start_ns, samples.front()->ts_ns);
  Memory mem;
  mem.rejected_events = *rejected;
  for (const auto& s : steps) {
    if (mem.steps.size() >= kMemorySpans) break;
    mem.steps.push_back({s.name, r6(ms(s.start - t0)), r6(ms(s.end - t0))});
  }
  if (phases != nullptr) {
    // Gaps under 1/1000 of the capture are below a pixel of the chart: ranges across them are drawn as one
    // (the backward of a Kineto trace is thousands of autograd operators).
    const TimeNs t_end = std::max(samples.back()->ts_ns, steps.empty() ? t0 : steps.back().end);
    const TimeNs gap = std::max<TimeNs>(0, (t_end - t0) / 1000);
    for (Phase p : {Phase::kForward, Phase::kBackward, Phase::kOptimizer}) {
      Intervals joined;
      for (const auto& iv : (*phases)[p]) {
        if (!joined.empty() && iv.start - joined.back().end <= gap) joined.back().end = std::max(joined.back().end, iv.end);
        else joined.push_back(iv);
      }
      for (const auto& iv : joined) {
        if (mem.phases.size() >= kMemorySpans) break;
        mem.phases.push_back({std::string(name_of(p)), r6(ms(iv.start - t0)), r6(ms(iv.end - t0))});
      }
    }
  }
  for (const auto& [key, di] : dev_index) {
    MemoryDevice d;
    std::vector<size_t> idx;  // this device's samples
    for (size_t i = 0; i < samples.size(); ++i)
      if (!(key_of(*samples[i]) < key) && !(key < key_of(*samples[i]))) idx.push_back(i);
    const MemorySample& first = *samples[idx.front()];
    d.device_type = first.device_type;
    d.device_id = key.cpu ? -1 : key.id;
    d.device = memory_device_name(key.cpu ? 0 : 1, d.device_id);
    d.events = static_cast<int64_t>(idx.size());
    bool has_totals = false;
    for (size_t i : idx) {
      const auto& m = *samples[i];
      d.allocations += m.bytes_delta > 0;
      d.frees += m.bytes_delta < 0;
      has_totals |= m.total_allocated >= 0;
      d.samples_with_totals += m.total_allocated >= 0 && m.total_reserved >= 0;
    }
    // The allocated (and reserved) curve, one value per sample of the device; -1 where a sample has none.
    std::vector<int64_t> alloc(idx.size(), -1), resv(idx.size(), -1);
    if (has_totals) {
      d.totals = "running_totals";
      for (size_t j = 0; j < idx.size(); ++j) {
        alloc[j] = samples[idx[j]]->total_allocated;
        resv[j] = samples[idx[j]]->total_reserved;
      }
    } else {
      d.totals = "reconstructed_from_deltas";
      int64_t run = 0, lowest = 0, highest = 0;
      bool overflow = false;
      for (size_t j = 0; j < idx.size() && !overflow; ++j) {
        overflow = __builtin_add_overflow(run, samples[idx[j]]->bytes_delta, &run);
        lowest = std::min(lowest, run);
        highest = std::max(highest, run);
        alloc[j] = run;
      }
      int64_t span = 0;
      // A rejected delta leaves the running sum wrong from there on: no curve from the rest either.
      if (overflow || __builtin_sub_overflow(highest, lowest, &span) || span > kMaxMemoryBytes ||
          rejected_on.count(key) > 0) {
        // Deltas that sum past any device's size are damage: no peak from them.
        mem.rejected_events += d.events;
        *rejected += d.events;
        continue;
      }
      const int64_t baseline = -lowest;
      for (auto& a : alloc) a += baseline;
      d.baseline_bytes = baseline;
      d.reconstruction =
          "the samples carry no running totals: allocated = the running sum of their Bytes from the first sample" +
          (baseline > 0 ? ", plus " + std::to_string(baseline) +
                              " B the capture freed before allocating them (allocated before it began)"
                        : std::string()) +
          "; a lower bound (blocks that live through the whole capture are not seen); reserved is unknown";
    }
    size_t peak_j = idx.size();
    int64_t peak_resv = -1;
    for (size_t j = 0; j < idx.size(); ++j) {
      if (alloc[j] >= 0 && (peak_j == idx.size() || alloc[j] > alloc[peak_j])) peak_j = j;
      peak_resv = std::max(peak_resv, resv[j]);
    }
    if (peak_j == idx.size()) continue;  // cannot happen: a device with totals has one sample with them
    d.peak_allocated_bytes = alloc[peak_j];
    if (peak_resv >= 0) d.peak_reserved_bytes = peak_resv;
    if (resv[peak_j] >= 0) {
      d.reserved_at_peak_bytes = resv[peak_j];
      // The CPU allocator reserves nothing ahead (Kineto writes 0): then there is no unused reserve to report.
      if (resv[peak_j] >= alloc[peak_j]) d.unused_reserved_at_peak_bytes = resv[peak_j] - alloc[peak_j];
    }
    const TimeNs peak_ts = samples[idx[peak_j]]->ts_ns;
    d.peak_time_ms = r6(ms(peak_ts - t0));
    if (!key.cpu) {
      if (const auto* dev = t.device(d.device_id); dev != nullptr && dev->total_memory_bytes > 0) {
        d.capacity_bytes = dev->total_memory_bytes;
        d.peak_fraction = r6(double(d.peak_allocated_bytes) / double(dev->total_memory_bytes));
      }
    }
    for (const auto& s : steps)
      if (s.start <= peak_ts && peak_ts < s.end) d.peak_step = s.name;
    if (auto p = phase_at(phases, peak_ts)) {
      d.peak_phase = std::string(name_of(*p));
    } else {
      // No phase range holds the peak (Kineto traces without "## forward ##" ranges, 2021 ones without the
      // autograd engine's operators): the operators say. Inside a backward operator -> backward; before the
      // first backward operator of its step, on the same thread -> forward.
      const MemorySample& pk = *samples[idx[peak_j]];
      const Step* in_step = nullptr;
      for (const auto& s : steps)
        if (s.start <= peak_ts && peak_ts < s.end) in_step = &s;
      bool inside_bwd = false, bwd_after = false;
      for (const auto& e : t.events) {
        if (e.start_ns > (in_step != nullptr ? in_step->end : peak_ts)) break;
        if (e.is_gpu || e.cat != Category::kCpuOp || e.pid != pk.pid || e.tid != pk.tid) continue;
        if (!is_backward_operator(t.name(e))) continue;
        if (e.start_ns <= peak_ts && peak_ts < e.end_ns()) inside_bwd = true;
        else if (e.start_ns > peak_ts) bwd_after = true;
      }
      if (inside_bwd) d.peak_phase = "backward";
      else if (bwd_after && in_step != nullptr) d.peak_phase = "forward";
    }

    // Live at the peak: allocations not yet freed, paired by address.
    bool any_addr = false;
    for (size_t i : idx) any_addr |= samples[i]->addr >= 0;
    if (any_addr) {
      struct Block { int64_t bytes, op; };
      std::unordered_map<int64_t, Block> live;
      for (size_t j = 0; j <= peak_j; ++j) {
        const auto& m = *samples[idx[j]];
        if (m.addr < 0) continue;
        if (m.bytes_delta > 0) live[m.addr] = {m.bytes_delta, attr.sample_op[idx[j]]};
        else if (m.bytes_delta < 0) live.erase(m.addr);
      }
      std::map<std::string, MemoryLive> by_op;
      int64_t total = 0;
      for (const auto& [addr, b] : live) {
        std::string op = b.op >= 0 ? t.name(t.events[static_cast<size_t>(b.op)]) : std::string("<outside any operator>");
        auto& row = by_op[op];
        row.bytes = sat_add(row.bytes, b.bytes);
        ++row.blocks;
        total = sat_add(total, b.bytes);
      }
      d.live_at_peak_bytes = total;
      d.live_unattributed_bytes = std::max<int64_t>(0, d.peak_allocated_bytes - total);
      for (auto& [op, row] : by_op) {
        row.op = op;
        d.live_at_peak.push_back(row);
      }
      std::sort(d.live_at_peak.begin(), d.live_at_peak.end(), [](const MemoryLive& a, const MemoryLive& b) {
        return a.bytes != b.bytes ? a.bytes > b.bytes : a.op < b.op;
      });
      if (d.live_at_peak.size() > kMemoryLiveRows) d.live_at_peak.resize(kMemoryLiveRows);
    }

    // Growth across steps: what a step leaves behind. Each step's floor (its lowest allocated figure) is what
    // survives from the steps before; a leak raises it step after step. The least-squares slope of the floors,
    // when they rise between at least two thirds of the consecutive steps; 0 when they do not.
    {
      std::vector<double> xs, ys;
      size_t j = 0;
      for (size_t si = 0; si < steps.size(); ++si) {
        int64_t lo = INT64_MAX;
        while (j < idx.size() && samples[idx[j]]->ts_ns < steps[si].start) ++j;
        for (size_t q = j; q < idx.size() && samples[idx[q]]->ts_ns < steps[si].end; ++q)
          if (alloc[q] >= 0) lo = std::min(lo, alloc[q]);
        if (lo != INT64_MAX) {
          xs.push_back(static_cast<double>(si));
          ys.push_back(static_cast<double>(lo));
        }
      }
      size_t rises = 0;
      for (size_t q = 1; q < ys.size(); ++q) rises += ys[q] > ys[q - 1];
      if (xs.size() >= 3 && rises * 3 < (ys.size() - 1) * 2) {
        d.growth_per_step_bytes = 0;
      } else if (xs.size() >= 3) {
        double mx = 0, my = 0;
        for (size_t q = 0; q < xs.size(); ++q) mx += xs[q], my += ys[q];
        mx /= double(xs.size()), my /= double(xs.size());
        double sxy = 0, sxx = 0;
        for (size_t q = 0; q < xs.size(); ++q) sxy += (xs[q] - mx) * (ys[q] - my), sxx += (xs[q] - mx) * (xs[q] - mx);
        if (sxx > 0) d.growth_per_step_bytes = static_cast<int64_t>(std::llround(sxy / sxx));
      }
    }

    // The timeline: every sample, or the highest of each of kMemoryTimelinePoints equal runs of samples.
    {
      std::vector<size_t> keep;  // positions j with a known allocated figure
      for (size_t j = 0; j < idx.size(); ++j)
        if (alloc[j] >= 0) keep.push_back(j);
      std::vector<size_t> pick;
      if (keep.size() <= kMemoryTimelinePoints) {
        pick = keep;
      } else {
        for (size_t b = 0; b < kMemoryTimelinePoints; ++b) {
          const size_t lo = keep.size() * b / kMemoryTimelinePoints, hi = keep.size() * (b + 1) / kMemoryTimelinePoints;
          size_t best = keep[lo];
          for (size_t q = lo; q < hi; ++q)
            if (alloc[keep[q]] > alloc[best]) best = keep[q];
          pick.push_back(best);
        }
      }
      for (size_t j : pick) {
        d.timeline.t_ms.push_back(r6(ms(samples[idx[j]]->ts_ns - t0)));
        d.timeline.allocated_bytes.push_back(alloc[j]);
        d.timeline.reserved_bytes.push_back(resv[j] >= 0 ? std::optional<int64_t>(resv[j]) : std::nullopt);
      }
    }

    // The operator table, largest self increase first.
    for (auto& [name, r] : attr.rows[key]) d.operators.push_back(r);
    d.operators_total = static_cast<int64_t>(d.operators.size());
    std::sort(d.operators.begin(), d.operators.end(), [](const MemoryOperator& a, const MemoryOperator& b) {
      if (a.self_increase_bytes != b.self_increase_bytes) return a.self_increase_bytes > b.self_increase_bytes;
      if (a.allocation_bytes != b.allocation_bytes) return a.allocation_bytes > b.allocation_bytes;
      return a.name < b.name;
    });
    if (d.operators.size() > kMemoryOperatorRows) d.operators.resize(kMemoryOperatorRows);
    mem.devices.push_back(std::move(d));
  }
  if (mem.devices.empty()) return std::nullopt;
  return mem;
}

}  // namespace profile_train::analysis
