// Interval algebra on half-open [start, end) nanosecond ranges. Inputs of the binary operations must be
// merged (sorted, non-overlapping); outputs are merged too.
#include <algorithm>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

Intervals merge_intervals(Intervals v) {
  // The union only needs the starts in order (ranges with one start merge alike in any order): lists gathered
  // from the events, which are in start order, skip the sort.
  if (!std::is_sorted(v.begin(), v.end(), [](const Interval& a, const Interval& b) { return a.start < b.start; }))
    std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
      return a.start != b.start ? a.start < b.start : a.end < b.end;
    });
  Intervals out;
  out.reserve(v.size());
  for (const auto& iv : v) {
    if (iv.end <= iv.start) continue;
    if (!out.empty() && iv.start <= out.back().end) {
      out.back().end = std::max(out.back().end, iv.end);
    } else {
      out.push_back(iv);
    }
  }
  return out;
}

Intervals intersect_intervals(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const TimeNs s = std::max(a[i].start, b[j].start);
    const TimeNs e = std::min(a[i].end, b[j].end);
    if (s < e) out.push_back({s, e});
    if (a[i].end < b[j].end) ++i; else ++j;
  }
  return out;
}

Intervals subtract_intervals(const Intervals& a, const Intervals& b) {
  Intervals out;
  size_t j = 0;
  for (const auto& iv : a) {
    TimeNs cur = iv.start;
    while (j < b.size() && b[j].end <= cur) ++j;
    size_t k = j;
    while (k < b.size() && b[k].start < iv.end) {
      if (b[k].start > cur) out.push_back({cur, b[k].start});
      cur = std::max(cur, b[k].end);
      if (cur >= iv.end) break;
      ++k;
    }
    if (cur < iv.end) out.push_back({cur, iv.end});
  }
  return out;
}

Intervals clip_intervals(const Intervals& merged, TimeNs start, TimeNs end) {
  Intervals out;
  if (end <= start) return out;
  // First interval that ends after `start`.
  auto it = std::upper_bound(merged.begin(), merged.end(), start,
                             [](TimeNs t, const Interval& iv) { return t < iv.end; });
  for (; it != merged.end() && it->start < end; ++it) {
    out.push_back({std::max(it->start, start), std::min(it->end, end)});
  }
  return out;
}

TimeNs total_length(const Intervals& v) {
  TimeNs s = 0;
  for (const auto& iv : v) s += iv.end - iv.start;
  return s;
}

}  // namespace profile_train::analysis
