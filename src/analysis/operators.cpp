// Where the time goes: GPU activity joined to the CPU operators and the annotation / module ranges that launched
// it, operator self time on the host, and the operators the host runs while the GPU idles. One sweep per CPU
// thread over its ranges (sorted by start, enclosing first) with a stack of open ranges answers "innermost
// enclosing operator / module" for every runtime call of that thread in O(n log n).
#include <algorithm>
#include <limits>
#include <map>
#include <unordered_map>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/analysis/efficiency.h"
#include "profile_train/common/huge_pages.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

namespace {

bool is_module_range(const Event& e, const std::string& n) {
  if (e.cat == Category::kPythonFunction) return n.rfind("nn.Module:", 0) == 0;
  if (e.cat != Category::kUserAnnotation) return false;
  return !is_step_annotation(n) && !is_dataloader_annotation(n);
}

// The shim's backward range of a module (PROFILE_TRAIN_MODULE_RANGES=DEPTH,backward): its GPU time goes to the
// module's row, "nn.Module: " + the qualified name.
constexpr std::string_view kModulePrefix = "nn.Module: ";
constexpr std::string_view kModuleBackwardPrefix = "nn.Module backward: ";

struct ThreadKey {
  int64_t pid, tid;
  bool operator<(const ThreadKey& o) const { return pid != o.pid ? pid < o.pid : tid < o.tid; }
};

}  // namespace

// The host side of the attribution, which reads only the trace: each runtime call's innermost operator and
// module range, each operator's self time and enclosing operator.
struct OperatorTree {
  static constexpr size_t kNone = SIZE_MAX;
  static constexpr uint32_t kNoParent = UINT32_MAX;
  // Indexed by event: runtime call -> innermost op / module event (kNone if none); cpu_op -> self time.
  std::vector<size_t> op_of_call, module_of_call;
  std::vector<TimeNs> self_ns;
  // With recorded inputs: each cpu_op's enclosing cpu_op (the roofline's grouping walks up to its operator).
  std::vector<uint32_t> parent_op;
  std::vector<size_t> ops_seen;  // cpu_op events, in no particular order
  std::vector<size_t> outermost_ops;
  bool has_backward_modules = false;
};

void OperatorTreeDeleter::operator()(OperatorTree* p) const { delete p; }

OperatorTreePtr build_operator_tree(const trace::Trace& t) {
  OperatorTreePtr tree(new OperatorTree);
  // Per thread: its operators and module ranges, and the runtime calls to resolve.
  std::map<ThreadKey, std::vector<size_t>> ranges, calls;
  // The lists of the previous event's thread: host events come in runs of one thread.
  ThreadKey last_key{0, 0};
  bool have_last = false;
  std::vector<size_t>*last_ranges = nullptr, *last_calls = nullptr;
  // is_module_range's answer once per (name, annotation or Python function): [StringId * 2 + python].
  std::vector<int8_t> module_name(t.strings.size() * 2, -1);
  for (size_t i = 0; i < t.events.size(); ++i) {
    const Event& e = t.events[i];
    if (e.is_gpu) continue;
    bool range = e.cat == Category::kCpuOp;
    if (!range && (e.cat == Category::kUserAnnotation || e.cat == Category::kPythonFunction)) {
      int8_t& m = module_name[size_t{e.name} * 2 + (e.cat == Category::kPythonFunction)];
      if (m < 0) m = is_module_range(e, t.name(e)) ? 1 : 0;
      range = m == 1;
    }
    const bool call = !range && (e.cat == Category::kRuntime || e.cat == Category::kDriver);
    if (!range && !call) continue;
    if (!have_last || last_key.pid != e.pid || last_key.tid != e.tid) {
      last_key = {e.pid, e.tid};
      have_last = true;
      last_ranges = last_calls = nullptr;
    }
    if (range) {
      if (last_ranges == nullptr) last_ranges = &ranges[last_key];
      last_ranges->push_back(i);
    } else {
      if (last_calls == nullptr) last_calls = &calls[last_key];
      last_calls->push_back(i);
    }
  }
  constexpr size_t kNone = OperatorTree::kNone;
  constexpr uint32_t kNoParent = OperatorTree::kNoParent;
  std::vector<size_t>& op_of_call = tree->op_of_call;
  std::vector<size_t>& module_of_call = tree->module_of_call;
  std::vector<TimeNs>& self_ns = tree->self_ns;
  std::vector<uint32_t>& parent_op = tree->parent_op;
  std::vector<size_t>& ops_seen = tree->ops_seen;
  std::vector<size_t>& outermost_ops = tree->outermost_ops;
  assign_huge(op_of_call, t.events.size(), kNone);
  assign_huge(module_of_call, t.events.size(), kNone);
  assign_huge(self_ns, t.events.size(), TimeNs{0});
  const bool shapes = t.has_input_shapes();
  assign_huge(parent_op, shapes ? t.events.size() : 0, kNoParent);
  for (auto& [key, rs] : ranges) {
    std::sort(rs.begin(), rs.end(), [&](size_t a, size_t b) {
      const Event &x = t.events[a], &y = t.events[b];
      return x.start_ns != y.start_ns ? x.start_ns < y.start_ns : x.dur_ns > y.dur_ns;
    });
    // Already in start order: collected in event order (trace::Trace::finalize sorts the events by start), and
    // calls starting together resolve alike.
    const std::vector<size_t>& cs = calls[key];
    std::vector<size_t> ops, mods;  // open ranges, innermost last
    auto close_until = [&](std::vector<size_t>& stack, TimeNs ts) {
      while (!stack.empty() && t.events[stack.back()].end_ns() <= ts) stack.pop_back();
    };
    size_t ci = 0;
    auto resolve_calls_before = [&](TimeNs ts) {
      for (; ci < cs.size() && t.events[cs[ci]].start_ns < ts; ++ci) {
        const TimeNs at = t.events[cs[ci]].start_ns;
        close_until(ops, at);
        close_until(mods, at);
        if (!ops.empty()) op_of_call[cs[ci]] = ops.back();
        if (!mods.empty()) module_of_call[cs[ci]] = mods.back();
      }
    };
    for (size_t r : rs) {
      const Event& e = t.events[r];
      resolve_calls_before(e.start_ns);
      if (e.cat == Category::kCpuOp) {
        close_until(ops, e.start_ns);
        if (ops.empty()) outermost_ops.push_back(r);
        else self_ns[ops.back()] -= std::min(e.dur_ns, t.events[ops.back()].end_ns() - e.start_ns);
        if (shapes && !ops.empty()) parent_op[r] = static_cast<uint32_t>(ops.back());
        self_ns[r] += e.dur_ns;
        ops_seen.push_back(r);
        ops.push_back(r);
      } else {
        close_until(mods, e.start_ns);
        mods.push_back(r);
        if (!tree->has_backward_modules && t.name(e).rfind(kModuleBackwardPrefix, 0) == 0) tree->has_backward_modules = true;
      }
    }
    resolve_calls_before(std::numeric_limits<TimeNs>::max());
  }
  return tree;
}

OperatorAttribution attribute_operators(const trace::Trace& t, const TraceIndex& idx, const Intervals& windows,
                                        int32_t device, const Intervals& busy) {
  return attribute_operators(t, idx, build_operator_tree(t), windows, device, busy);
}

OperatorAttribution attribute_operators(const trace::Trace& t, const TraceIndex& idx, OperatorTreePtr tree,
                                        const Intervals& windows, int32_t device, const Intervals& busy) {
  OperatorAttribution out;
  out.has_operators = idx.has_cpu_ops;
  out.has_backward_modules = tree->has_backward_modules;
  auto in_window = [&](TimeNs ts) {
    auto it = std::upper_bound(windows.begin(), windows.end(), ts, [](TimeNs v, const Interval& w) { return v < w.end; });
    return it != windows.end() && it->start <= ts;
  };
  const Intervals idle = subtract_intervals(windows, busy);
  out.idle_ns = total_length(idle);
  constexpr size_t kNone = OperatorTree::kNone;
  constexpr uint32_t kNoParent = OperatorTree::kNoParent;
  const std::vector<size_t>& op_of_call = tree->op_of_call;
  const std::vector<size_t>& module_of_call = tree->module_of_call;
  const std::vector<TimeNs>& self_ns = tree->self_ns;
  const std::vector<uint32_t>& parent_op = tree->parent_op;
  const bool shapes = t.has_input_shapes();

  // GPU activities -> operator and module.
  // The operators' rows by name: an array indexed by the name's id (row_of), rows in the order first met.
  std::vector<uint32_t> op_row(t.strings.size(), UINT32_MAX);
  std::vector<OperatorRow> op_rows;
  std::vector<trace::StringId> op_row_name;
  auto row_of = [&](trace::StringId name) -> OperatorRow& {
    uint32_t& r = op_row[name];
    if (r == UINT32_MAX) {
      r = static_cast<uint32_t>(op_rows.size());
      op_rows.emplace_back();
      op_row_name.push_back(name);
    }
    return op_rows[r];
  };
  std::unordered_map<std::string, ModuleRow> by_module;
  struct ModuleOfRange {
    ModuleRow* row;
    bool backward;
  };
  std::unordered_map<trace::StringId, ModuleOfRange> module_of_range;  // range name -> its row
  auto module_row = [&](trace::StringId range) -> const ModuleOfRange& {
    auto it = module_of_range.find(range);
    if (it != module_of_range.end()) return it->second;
    const std::string& n = t.strings.get(range);
    const bool backward = n.rfind(kModuleBackwardPrefix, 0) == 0;
    const std::string row = backward ? std::string(kModulePrefix) + n.substr(kModuleBackwardPrefix.size()) : n;
    return module_of_range.emplace(range, ModuleOfRange{&by_module[row], backward}).first->second;
  };
  std::vector<bool> launched(t.events.size(), false);  // op instances that launched GPU work
  // (operator name, input signature) -> its share of the row, only when the trace records inputs.
  std::unordered_map<uint64_t, OperatorShapeRow> by_shape;
  // The roofline's groups: the outermost enclosing roofline operator of the launching one (kNone: none).
  std::unordered_map<uint64_t, OperatorShapeRow> by_roofline;
  std::vector<int8_t> roofline_name(shapes ? t.strings.size() : 0, -1);  // by StringId: -1 unknown, 0 no, 1 yes
  std::vector<bool> launched_owner(shapes ? t.events.size() : 0, false);
  auto roofline_owner = [&](size_t op) {
    size_t owner = kNone;
    for (size_t cur = op; cur != kNone;) {
      const trace::StringId n = t.events[cur].name;
      int8_t& known = roofline_name[n];
      if (known < 0) known = is_roofline_operator(t.strings.get(n)) ? 1 : 0;
      if (known) owner = cur;
      cur = parent_op[cur] == kNoParent ? kNone : parent_op[cur];
    }
    return owner;
  };
  auto shape_of = [&](const Event& e) -> OperatorShapeRow& { return by_shape[(uint64_t{e.name} << 32) | e.inputs]; };
  // Each list with its kernel classes (the kernels' from the index: kernel_class.h).
  const std::vector<size_t>* lists[] = {&idx.kernels, &idx.memcpys, &idx.memsets};
  for (const auto* list : lists) {
    const bool kernels = list == &idx.kernels;
    // The list is in start order: the window holding an activity is found by moving forward, not searched.
    auto window = windows.begin();
    for (size_t pos = 0; pos < list->size(); ++pos) {
      const size_t i = (*list)[pos];
      const Event& g = t.events[i];
      const int32_t dev = g.device >= 0 ? g.device : static_cast<int32_t>(g.pid);
      if (dev != device) continue;
      while (window != windows.end() && window->end <= g.start_ns) ++window;
      if (window == windows.end() || window->start > g.start_ns) continue;
      out.gpu_ns += g.dur_ns;
      size_t op = kNone, mod = kNone;
      if (const size_t* it = idx.op_by_external_id.find(g.external_id)) op = *it;
      if (const size_t rt = idx.runtime_of(g.correlation); rt != TraceIndex::Correlation::kNone) {
        if (op == kNone) op = op_of_call[rt];
        mod = module_of_call[rt];
      }
      const KernelClass* cls = kernels ? &idx.kernel_class(pos) : nullptr;
      // FP32 GEMM/conv/attention (what AMP or TF32 would speed up); convolutions as gpu.conv_kernel_share counts
      // them: by what the kernel computes, or launched by a convolution operator.
      const bool fp32 = cls != nullptr && cls->fp32_matrix();
      const bool conv = cls != nullptr && cls->kind != KernelKind::kCommunication &&
                        (cls->kind == KernelKind::kConv || cls->conv_operator);
      const bool tf32 = cls != nullptr && cls->precision == Precision::kTf32;
      const bool h2d = g.cat == Category::kMemcpy && g.copy_kind == trace::CopyKind::kHtoD;
      if (op != kNone) {
        out.gpu_attributed_ns += g.dur_ns;
        OperatorRow& row = row_of(t.events[op].name);
        row.gpu_ns += g.dur_ns;
        row.gpu_activities++;
        if (fp32) row.fp32_ns += g.dur_ns;
        if (conv) row.conv_ns += g.dur_ns;
        if (h2d) row.h2d_ns += g.dur_ns;
        if (shapes) {
          OperatorShapeRow& sr = shape_of(t.events[op]);
          sr.gpu_ns += g.dur_ns;
          sr.gpu_activities++;
          if (!launched[op]) sr.launching_calls++;
          if (const size_t owner = roofline_owner(op); owner != kNone) {
            const Event& oe = t.events[owner];
            OperatorShapeRow& rr = by_roofline[(uint64_t{oe.name} << 32) | oe.inputs];
            rr.gpu_ns += g.dur_ns;
            if (tf32) rr.tf32_ns += g.dur_ns;
            rr.gpu_activities++;
            if (!launched_owner[owner]) {
              launched_owner[owner] = true;
              rr.launching_calls++;
            }
          }
        }
        if (!launched[op]) {
          launched[op] = true;
          row.launching_calls++;
        }
      }
      if (mod != kNone) {
        out.gpu_in_module_ns += g.dur_ns;
        const ModuleOfRange& mr = module_row(t.events[mod].name);
        mr.row->gpu_ns += g.dur_ns;
        if (fp32) mr.row->fp32_ns += g.dur_ns;
        if (mr.backward) mr.row->backward_ns += g.dur_ns;
      }
    }
  }
  // Host self time and calls of operators starting in the windows.
  for (size_t op : tree->ops_seen) {
    const Event& e = t.events[op];
    if (!in_window(e.start_ns)) continue;
    OperatorRow& row = row_of(e.name);
    row.host_self_ns += std::max<TimeNs>(0, self_ns[op]);
    row.calls++;
    if (shapes) {
      OperatorShapeRow& sr = shape_of(e);
      sr.host_self_ns += std::max<TimeNs>(0, self_ns[op]);
      sr.calls++;
    }
  }
  for (auto& [key, sr] : by_shape) {
    const size_t at = key & 0xFFFFFFFFu;
    const trace::OpInputs in = at < t.op_inputs.size() ? t.op_inputs[at] : trace::OpInputs{};
    sr.dims = t.strings.get(in.dims);
    sr.types = t.strings.get(in.types);
    sr.concrete = t.strings.get(in.concrete);
    row_of(static_cast<trace::StringId>(key >> 32)).shapes.push_back(std::move(sr));
  }
  for (auto& [key, rr] : by_roofline) {
    const size_t at = key & 0xFFFFFFFFu;
    const trace::OpInputs in = at < t.op_inputs.size() ? t.op_inputs[at] : trace::OpInputs{};
    rr.dims = t.strings.get(in.dims);
    rr.types = t.strings.get(in.types);
    rr.concrete = t.strings.get(in.concrete);
    out.roofline.push_back({t.strings.get(static_cast<trace::StringId>(key >> 32)), std::move(rr)});
  }
  // Outermost operators while the GPU idles.
  for (size_t op : tree->outermost_ops) {
    const Event& e = t.events[op];
    if (!in_window(e.start_ns) || e.dur_ns <= 0) continue;
    const TimeNs overlap = total_length(clip_intervals(idle, e.start_ns, e.end_ns()));
    if (overlap > 0) row_of(e.name).idle_ns += overlap;
  }
  for (size_t r = 0; r < op_rows.size(); ++r) {
    op_rows[r].name = t.strings.get(op_row_name[r]);
    out.operators.push_back(std::move(op_rows[r]));
  }
  for (auto& [name, row] : by_module) {
    row.name = name;
    out.modules.push_back(std::move(row));
  }
  return out;
}

}  // namespace profile_train::analysis
