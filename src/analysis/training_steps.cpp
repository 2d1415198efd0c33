// Training steps from the ranges a training loop leaves (fetch, forward, backward, optimizer step), for traces
// whose ProfilerStep# ranges are missing or were placed by the Python shim at DataLoader fetches: a fetch is
// not a step boundary by itself (a prefetching loader fetches batch k+1 before step k runs; an evaluation pass
// fetches batches that train nothing), the optimizer step is.
#include <algorithm>
#include <limits>
#include <map>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

using trace::Category;
using trace::Event;

namespace {

constexpr TimeNs kMinTime = std::numeric_limits<TimeNs>::min();

enum Kind { kFetch, kForward, kBackward, kOptimizer, kZeroGrad, kNone };

Kind kind_of(std::string_view n) {
  if (is_dataloader_annotation(n)) return kFetch;
  if (n == "## forward ##") return kForward;
  if (n == "## backward ##") return kBackward;
  if (is_optimizer_step_annotation(n)) return kOptimizer;
  if (n.starts_with("Optimizer.zero_grad#")) return kZeroGrad;
  return kNone;
}

// Sorted by start (enclosing first); drops ranges nested in the previous kept one (the same range recorded
// twice, e.g. a cpu_op and a user_annotation of one Optimizer.step).
Intervals outermost(Intervals v) {
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start != b.start ? a.start < b.start : a.end > b.end;
  });
  Intervals out;
  for (const auto& i : v) {
    if (!out.empty() && i.end <= out.back().end) continue;
    out.push_back(i);
  }
  return out;
}

// First range of `v` starting at or after `lo`.
Intervals::const_iterator first_from(const Intervals& v, TimeNs lo) {
  return std::lower_bound(v.begin(), v.end(), lo, [](const Interval& i, TimeNs x) { return i.start < x; });
}

// The last range of `v` starting in [lo, hi), or nullptr.
const Interval* last_in(const Intervals& v, TimeNs lo, TimeNs hi) {
  auto it = first_from(v, hi);
  if (it == v.begin()) return nullptr;
  --it;
  return it->start >= lo ? &*it : nullptr;
}

// Where the training work anchored at `anchor` (its first backward, else its optimizer step) began: the last
// forward starting in [lo, anchor), then the fetches and zero_grad calls right before it (no forward between).
// `eval_end` gets the end of the forwards in [lo, ...) before that forward (evaluation; kMinTime when none),
// `known` whether a forward or a fetch says where the work began.
TimeNs segment_start(const LoopRanges& r, TimeNs lo, TimeNs anchor, TimeNs* eval_end, bool* known) {
  TimeNs s = anchor;
  *known = false;
  if (const Interval* f = last_in(r.forward, lo, anchor)) {
    s = f->start;
    *known = true;
  }
  const Interval* prev_fwd = last_in(r.forward, lo, s);
  *eval_end = prev_fwd != nullptr ? prev_fwd->end : kMinTime;
  const TimeNs limit = std::max(lo, *eval_end);
  for (const Intervals* list : {&r.fetch, &r.zero_grad}) {
    for (auto it = first_from(*list, limit); it != list->end() && it->start < s; ++it) {
      if (it->end > s) continue;  // not before the forward
      if (list == &r.fetch) *known = true;
      s = std::min(s, it->start);
    }
  }
  return s;
}

TimeNs median_of(std::vector<TimeNs> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

}  // namespace

LoopRanges loop_ranges(const trace::Trace& t, int64_t pid, int64_t tid) {
  std::map<std::pair<int64_t, int64_t>, LoopRanges> by_thread;
  std::map<std::pair<int64_t, int64_t>, size_t> counts;
  std::map<int64_t, Intervals> autograd_by_pid;
  for (const auto& e : t.events) {
    if (e.is_gpu || (e.cat != Category::kUserAnnotation && e.cat != Category::kCpuOp)) continue;
    const std::string& n = t.name(e);
    if (e.cat == Category::kCpuOp && n.starts_with("autograd::engine::evaluate_function")) {
      autograd_by_pid[e.pid].push_back({e.start_ns, e.end_ns()});
      continue;
    }
    const Kind k = kind_of(n);
    if (k == kNone) continue;
    if (pid >= 0 && (e.pid != pid || e.tid != tid)) continue;
    LoopRanges& lr = by_thread[{e.pid, e.tid}];
    Intervals* lists[] = {&lr.fetch, &lr.forward, &lr.backward, &lr.optimizer, &lr.zero_grad};
    lists[k]->push_back({e.start_ns, e.end_ns()});
    ++counts[{e.pid, e.tid}];
  }
  LoopRanges best;
  size_t best_n = 0;
  for (auto& [key, lr] : by_thread) {
    if (counts[key] > best_n) {  // std::map order: ties go to the lowest (pid, tid)
      best_n = counts[key];
      best = std::move(lr);
      best.pid = key.first;
      best.tid = key.second;
    }
  }
  if (best_n == 0) {
    best.pid = pid;
    best.tid = tid;
  }
  for (Intervals* v : {&best.fetch, &best.forward, &best.backward, &best.optimizer, &best.zero_grad})
    *v = outermost(std::move(*v));
  if (best.pid >= 0) {
    auto it = autograd_by_pid.find(best.pid);
    if (it != autograd_by_pid.end()) best.autograd = merge_intervals(std::move(it->second));
  } else if (autograd_by_pid.size() == 1) {
    best.autograd = merge_intervals(std::move(autograd_by_pid.begin()->second));
  }
  return best;
}

std::vector<Step> optimizer_bounded_steps(const LoopRanges& r) {
  // Optimizer steps with no fetch between them belong to one step in a loop that fetches batches: a GAN steps
  // its discriminator's and its generator's optimizers on the same batch.
  Intervals opt;
  for (const auto& o : r.optimizer) {
    const bool same_batch = !opt.empty() && !r.fetch.empty() && [&] {
      auto f = first_from(r.fetch, opt.back().end);
      return f == r.fetch.end() || f->start >= o.start;
    }();
    if (same_batch) opt.back().end = o.end;
    else opt.push_back(o);
  }
  std::vector<Step> steps;
  for (size_t k = 0; k < opt.size(); ++k) {
    const TimeNs lo = k == 0 ? kMinTime : opt[k - 1].end;
    auto b = first_from(r.backward, lo);
    const TimeNs anchor = b != r.backward.end() && b->start < opt[k].start ? b->start : opt[k].start;
    TimeNs eval_end = kMinTime;
    bool known = false;
    const TimeNs seg = segment_start(r, lo, anchor, &eval_end, &known);
    TimeNs start = lo;
    if (k == 0) {
      if (!known) continue;  // nothing says where the first step began
      start = seg;
    } else if (eval_end != kMinTime) {
      start = seg;  // evaluation ran between the two optimizer steps: it is no part of this step
    }
    steps.push_back({"iteration#" + std::to_string(k), start, opt[k].end, start, opt[k].end, 0});
  }
  return steps;
}

std::vector<Step> backward_bounded_steps(const LoopRanges& r) {
  const Intervals& bwd = r.backward;
  const size_t n = bwd.size();
  std::vector<TimeNs> seg(n), eval_end(n);
  for (size_t k = 0; k < n; ++k) {
    bool known = false;
    seg[k] = segment_start(r, k == 0 ? kMinTime : bwd[k - 1].end, bwd[k].start, &eval_end[k], &known);
  }
  // The post-backward tail (the update, the next batch's preparation) of steps followed directly by the next.
  std::vector<TimeNs> tails;
  for (size_t k = 0; k + 1 < n; ++k)
    if (eval_end[k + 1] == kMinTime) tails.push_back(seg[k + 1] - bwd[k].end);
  const TimeNs tail = median_of(tails);
  // Where the evaluation after backward k begins: its first fetch or forward.
  auto first_activity_after = [&](TimeNs from) {
    TimeNs first = std::numeric_limits<TimeNs>::max();
    for (const Intervals* list : {&r.fetch, &r.forward}) {
      auto it = first_from(*list, from);
      if (it != list->end()) first = std::min(first, it->start);
    }
    return first;
  };
  std::vector<Step> steps;
  for (size_t k = 0; k < n; ++k) {
    TimeNs end;
    if (k + 1 < n && eval_end[k + 1] == kMinTime) {
      end = seg[k + 1];
    } else {
      end = std::min(bwd[k].end + tail, std::max(bwd[k].end, first_activity_after(bwd[k].end)));
    }
    steps.push_back({"iteration#" + std::to_string(k), seg[k], end, seg[k], end, 0});
  }
  return steps;
}

}  // namespace profile_train::analysis
