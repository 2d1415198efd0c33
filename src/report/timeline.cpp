#include "timeline.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "profile_train/report/escape.h"

namespace profile_train::report::detail {
namespace {

using trace::Category;
using trace::Event;
using trace::TimeNs;
using nlohmann::json;

// Timeline category codes; the order is the `cats` array the page's script reads.
constexpr const char* kCatNames[] = {"annotation", "python", "cpu_op", "runtime", "driver",
                                     "kernel",     "memcpy", "memset", "sync"};

int category_code(Category c) {
  switch (c) {
    case Category::kUserAnnotation: return 0;
    case Category::kPythonFunction: return 1;
    case Category::kCpuOp: return 2;
    case Category::kRuntime: return 3;
    case Category::kDriver: return 4;
    case Category::kKernel: return 5;
    case Category::kMemcpy: return 6;
    case Category::kMemset: return 7;
    case Category::kSync: return 8;
    default: return -1;  // GPU annotations, profiler overhead, other: not drawn
  }
}

struct Window {
  TimeNs start = 0, end = 0;
  std::string label;
};

// The step closest to the median step time, else the analysis window, else the whole trace.
std::optional<Window> choose_window(const model::Report& report, const trace::Trace& trace) {
  const auto& per_step = report.steps.per_step;
  if (!per_step.empty()) {
    double median = 0;
    if (report.steps.median_ms) {
      median = *report.steps.median_ms;
    } else {
      std::vector<double> sorted;
      for (const auto& s : per_step) sorted.push_back(s.duration_ms);
      std::sort(sorted.begin(), sorted.end());
      median = sorted[(sorted.size() - 1) / 2];
    }
    const model::StepRow* best = nullptr;
    double best_diff = 0;
    for (const auto& s : per_step) {
      const double diff = std::fabs(s.duration_ms - median);
      if (!best || diff < best_diff) best = &s, best_diff = diff;
    }
    Window w;
    w.start = best->start_ns;
    w.end = w.start + static_cast<TimeNs>(std::llround(best->duration_ms * 1e6));
    // per_step may list only some of the steps (first, last, slowest): steps.count is the total.
    const size_t n = report.steps.count >= 1 ? static_cast<size_t>(report.steps.count) : per_step.size();
    if (n == 1) w.label = best->name + " (the only step)";
    else w.label = best->name + " (median step of " + std::to_string(n) + ")";
    if (w.end > w.start) return w;
  }
  const auto ws = report.source.window_start_ns, we = report.source.window_end_ns;
  if (ws && we && *we > *ws) return Window{*ws, *we, "analysis window (no steps found)"};
  TimeNs lo = 0, hi = 0;
  bool any = false;
  for (const auto& e : trace.events) {
    if (category_code(e.cat) < 0) continue;
    if (!any) lo = e.start_ns, hi = e.end_ns(), any = true;
    lo = std::min(lo, e.start_ns);
    hi = std::max(hi, e.end_ns());
  }
  if (!any || hi <= lo) return std::nullopt;
  return Window{lo, hi, "whole trace (no steps found)"};
}

struct Sel {
  TimeNs start, end;
  int64_t bytes;
  trace::StringId name;
  int cat;
  int track;
  int depth;
};

struct Block {
  size_t first;  // index into the lane's events
  TimeNs start, end;
  int64_t count;
};

// Merges runs of events shorter than `res` whose gaps are shorter than `res`, each merged block spanning at
// most `res` (so uniform streams of tiny events become a row of res-wide blocks, not one bar). res == 0
// merges nothing.
void merge_lane(const std::vector<Sel>& sel, const std::vector<uint32_t>& lane, TimeNs res,
                std::vector<Block>* out) {
  out->clear();
  bool open_short = false;
  for (size_t k = 0; k < lane.size(); ++k) {
    const Sel& e = sel[lane[k]];
    const bool is_short = res > 0 && (e.end - e.start) < res;
    if (is_short && open_short && !out->empty() && e.start - out->back().end < res &&
        e.end - out->back().start <= res) {
      out->back().end = std::max(out->back().end, e.end);
      ++out->back().count;
      continue;
    }
    out->push_back(Block{k, e.start, e.end, 1});
    open_short = is_short;
  }
}

}  // namespace

json build_timeline(const model::Report& report, const trace::Trace& trace, const TimelineLimits& limits) {
  auto window = choose_window(report, trace);
  if (!window) return nullptr;
  const TimeNs ws = window->start, we = window->end;

  // Tracks: (is_gpu, pid, tid).
  std::map<std::tuple<int, int64_t, int64_t>, int> track_index;
  std::vector<std::tuple<int, int64_t, int64_t>> track_keys;
  std::vector<Sel> sel;
  int64_t total = 0;
  for (const auto& e : trace.events) {
    const int cat = category_code(e.cat);
    if (cat < 0) continue;
    const TimeNs end = std::max(e.end_ns(), e.start_ns);
    if (end < ws || e.start_ns > we) continue;
    ++total;
    // Main process first among CPU tracks: key 0 for it, 1 for other processes, 2 for GPUs.
    const int group = e.is_gpu ? 2 : (trace.meta.main_pid >= 0 && e.pid != trace.meta.main_pid ? 1 : 0);
    auto key = std::make_tuple(group, e.pid, e.tid);
    auto [it, inserted] = track_index.emplace(key, static_cast<int>(track_keys.size()));
    if (inserted) track_keys.push_back(key);
    sel.push_back(Sel{e.start_ns, end, e.bytes, e.name, cat, it->second, 0});
  }
  if (sel.empty()) return nullptr;

  // Keep at most max_tracks tracks: the busiest ones, shown in (group, pid, tid) order.
  std::vector<int64_t> per_track(track_keys.size(), 0);
  for (const auto& s : sel) ++per_track[s.track];
  std::vector<int> order(track_keys.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::vector<bool> keep(track_keys.size(), true);
  int64_t dropped_tracks = 0, dropped_track_events = 0;
  if (order.size() > limits.max_tracks) {
    std::vector<int> by_count = order;
    std::stable_sort(by_count.begin(), by_count.end(), [&](int a, int b) { return per_track[a] > per_track[b]; });
    for (size_t i = limits.max_tracks; i < by_count.size(); ++i) {
      keep[by_count[i]] = false;
      ++dropped_tracks;
      dropped_track_events += per_track[by_count[i]];
    }
  }
  std::sort(order.begin(), order.end(), [&](int a, int b) { return track_keys[a] < track_keys[b]; });
  std::vector<int> new_index(track_keys.size(), -1);
  int n_tracks = 0;
  for (int t : order)
    if (keep[t]) new_index[t] = n_tracks++;

  // Depth per track by nesting: sort by (track, start, longer first), a stack of open end times.
  std::vector<Sel> kept;
  kept.reserve(sel.size());
  for (auto& s : sel)
    if (new_index[s.track] >= 0) {
      s.track = new_index[s.track];
      kept.push_back(s);
    }
  sel.swap(kept);
  std::sort(sel.begin(), sel.end(), [](const Sel& a, const Sel& b) {
    if (a.track != b.track) return a.track < b.track;
    if (a.start != b.start) return a.start < b.start;
    return a.end > b.end;
  });
  std::vector<int> track_depth(n_tracks, 0);
  int64_t dropped_depth = 0;
  {
    std::vector<TimeNs> stack;
    int current = -1;
    std::vector<Sel> kept_depth;
    kept_depth.reserve(sel.size());
    for (auto& s : sel) {
      if (s.track != current) stack.clear(), current = s.track;
      while (!stack.empty() && stack.back() <= s.start) stack.pop_back();
      s.depth = static_cast<int>(stack.size());
      stack.push_back(s.end);
      if (s.depth >= limits.max_cpu_depth) {
        ++dropped_depth;
        continue;
      }
      track_depth[s.track] = std::max(track_depth[s.track], s.depth + 1);
      kept_depth.push_back(s);
    }
    sel.swap(kept_depth);
  }

  // Lanes (track, depth), events in start order.
  std::map<std::pair<int, int>, std::vector<uint32_t>> lanes;
  for (uint32_t i = 0; i < sel.size(); ++i) lanes[{sel[i].track, sel[i].depth}].push_back(i);

  // Grow the merge resolution until the number of drawn blocks fits the budget.
  const TimeNs span = std::max<TimeNs>(we - ws, 1);
  TimeNs res = 0;
  std::vector<Block> blocks;
  auto count_blocks = [&](TimeNs r) {
    size_t n = 0;
    for (const auto& [key, lane] : lanes) {
      merge_lane(sel, lane, r, &blocks);
      n += blocks.size();
    }
    return n;
  };
  if (sel.size() > limits.max_events) {
    res = std::max<TimeNs>(span / 200000, 1);
    for (int iter = 0; iter < 48 && count_blocks(res) > limits.max_events; ++iter) res *= 2;
  }

  // Emit.
  json names = json::array();
  std::unordered_map<trace::StringId, int> name_index;
  auto name_id = [&](trace::StringId id) {
    auto [it, inserted] = name_index.emplace(id, static_cast<int>(names.size()));
    if (inserted) names.push_back(truncate_utf8(trace.strings.get(id), limits.max_name_bytes));
    return it->second;
  };
  json ev = json::array();
  int64_t drawn = 0, merged_blocks = 0, merged_events = 0, dropped_budget = 0;
  for (const auto& [key, lane] : lanes) {
    merge_lane(sel, lane, res, &blocks);
    for (const auto& b : blocks) {
      if (static_cast<size_t>(drawn) >= limits.max_events) {  // only when merging could not fit
        dropped_budget += b.count;
        continue;
      }
      const Sel& first = sel[lane[b.first]];
      ev.push_back(key.first);
      ev.push_back(b.start - ws);
      ev.push_back(b.end - b.start);
      ev.push_back(name_id(first.name));
      ev.push_back(key.second);
      ev.push_back(first.cat);
      ev.push_back(b.count);
      ev.push_back(b.count == 1 ? first.bytes : -1);
      ++drawn;
      if (b.count > 1) ++merged_blocks, merged_events += b.count;
    }
  }

  json tracks = json::array();
  for (int t : order) {
    if (!keep[t]) continue;
    const auto& [group, pid, tid] = track_keys[t];
    std::string name;
    if (group == 2) {
      name = "GPU " + std::to_string(pid) + " \xC2\xB7 stream " + std::to_string(tid);
    } else {
      auto it = trace.meta.thread_names.find({pid, tid});
      const std::string tid_text = std::to_string(tid);
      if (it == trace.meta.thread_names.end() || it->second.empty()) name = "thread " + tid_text;
      else if (it->second.find(tid_text) != std::string::npos) name = it->second;  // already names the tid
      else name = it->second + " (" + tid_text + ")";
      if (group == 1) name = "pid " + std::to_string(pid) + " \xC2\xB7 " + name;
    }
    tracks.push_back({{"name", truncate_utf8(name, limits.max_name_bytes)},
                      {"kind", group == 2 ? "gpu" : "cpu"},
                      {"depth", track_depth[new_index[t]]}});
  }
  json cats = json::array();
  for (const char* c : kCatNames) cats.push_back(c);
  return json{{"window", {{"start_ns", ws}, {"end_ns", we}, {"label", window->label}}},
              {"tracks", std::move(tracks)},
              {"names", std::move(names)},
              {"cats", std::move(cats)},
              {"stride", 8},
              {"ev", std::move(ev)},
              {"total", total},
              {"drawn", drawn},
              {"merge_resolution_ns", res},
              {"merged_blocks", merged_blocks},
              {"merged_events", merged_events},
              {"dropped_depth", dropped_depth},
              {"dropped_tracks", dropped_tracks},
              {"dropped_track_events", dropped_track_events},
              {"dropped_budget", dropped_budget}};
}

}  // namespace profile_train::report::detail
