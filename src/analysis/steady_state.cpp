// Steady state (which steps the summary figures cover) and the forward / backward / optimizer split of a step.
#include <algorithm>
#include <cmath>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

namespace {

double median_of(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

SteadyState steady_state(const std::vector<double>& dur_ms) {
  SteadyState st;
  const size_t n = dur_ms.size();
  st.median_ms = median_of(dur_ms);
  std::vector<double> dev;
  dev.reserve(n);
  for (double d : dur_ms) dev.push_back(std::fabs(d - st.median_ms));
  st.mad_ms = median_of(dev);
  std::vector<const char*> reason(n, nullptr);
  if (n >= 3 && st.median_ms > 0) {
    const double sigma = 1.4826 * st.mad_ms;  // MAD scaled to a standard deviation for normal data
    auto outlier = [&](double d, double ratio) {
      return d >= ratio * st.median_ms && (sigma > 0 ? d > st.median_ms + 5.0 * sigma : d > st.median_ms);
    };
    // The run of slow steps from step 0; a step at least kSpikeGap x the one before it ends the run (warm-up
    // steps get faster: a step that much slower than the last is something else, an image dump right after a
    // start that a loaded machine made slow).
    size_t warm = 0;
    while (warm < n / 2 && outlier(dur_ms[warm], kWarmupRatio) &&
           (warm == 0 || dur_ms[warm] < kSpikeGap * dur_ms[warm - 1]))
      ++warm;
    std::vector<size_t> spikes;
    for (size_t i = warm; i < n; ++i)
      if (outlier(dur_ms[i], kSpikeRatio)) spikes.push_back(i);
    auto slowest_other = [&](size_t from, const std::vector<size_t>& skip) {
      double m = 0;
      for (size_t i = from, j = 0; i < n; ++i) {
        while (j < skip.size() && skip[j] < i) ++j;
        if (j < skip.size() && skip[j] == i) continue;
        m = std::max(m, dur_ms[i]);
      }
      return m;
    };
    // A second kind of step is rare and set apart: the slowest k spikes (k at most kMaxSpikeShare of the steps),
    // the fastest of them at least kSpikeGap x the slowest other step, lesser spikes included. The largest such k
    // goes out; a stall just above kSpikeRatio x the median does not keep a rare dump step in. A long tail of slow
    // steps (a bursty loader) has no such gap and stays in.
    std::vector<size_t> by_duration = spikes;
    std::stable_sort(by_duration.begin(), by_duration.end(), [&](size_t a, size_t b) { return dur_ms[a] > dur_ms[b]; });
    const size_t max_k = std::min(by_duration.size(), static_cast<size_t>(kMaxSpikeShare * static_cast<double>(n)));
    std::vector<size_t> out;
    for (size_t k = max_k; k >= 1 && out.empty(); --k) {
      std::vector<size_t> group(by_duration.begin(), by_duration.begin() + static_cast<std::ptrdiff_t>(k));
      std::sort(group.begin(), group.end());
      if (dur_ms[by_duration[k - 1]] >= kSpikeGap * slowest_other(warm, group)) out = std::move(group);
    }
    spikes = std::move(out);
    // Warm-up steps stand out from every later step but the outliers: each lasts kWarmupGap x the slowest of them.
    const double later = slowest_other(warm, spikes);
    size_t w = 0;
    while (w < warm && dur_ms[w] >= kWarmupGap * later) reason[w++] = "warm-up";
    for (size_t i : spikes) reason[i] = "outlier";
  }
  for (size_t i = 0; i < n; ++i) {
    if (reason[i] == nullptr) st.kept.push_back(i);
    else st.excluded.push_back({i, reason[i]});
  }
  return st;
}

bool has_phases(const LoopRanges& r) {
  return !r.forward.empty() || !r.backward.empty() || !r.optimizer.empty() || !r.autograd.empty();
}

PhaseIndex phase_index(const LoopRanges& r) {
  PhaseIndex x;
  Intervals opt = r.optimizer;
  opt.insert(opt.end(), r.zero_grad.begin(), r.zero_grad.end());
  x[Phase::kOptimizer] = merge_intervals(std::move(opt));
  x[Phase::kBackward] = merge_intervals(r.backward.empty() ? r.autograd : r.backward);
  x[Phase::kForward] = merge_intervals(r.forward);
  x[Phase::kDataWait] = merge_intervals(r.fetch);
  return x;
}

PhaseSplit phase_split(const PhaseIndex& x, TimeNs start, TimeNs end) {
  PhaseSplit p;
  if (end <= start) return p;
  p.total_ns = end - start;
  // Carving order: a range nested in a later phase is the earlier phase's. The optimizer comes last: Lightning
  // (and LBFGS-style loops) run forward and backward inside optimizer.step(closure), and that time is forward and
  // backward; the optimizer phase is what its range holds besides them (the update itself).
  Intervals claimed;
  TimeNs used = 0;
  for (Phase phase : {Phase::kBackward, Phase::kForward, Phase::kDataWait, Phase::kOptimizer}) {
    const Intervals mine = subtract_intervals(clip_intervals(x[phase], start, end), claimed);
    p[phase] = total_length(mine);
    used += p[phase];
    Intervals both = claimed;
    both.insert(both.end(), mine.begin(), mine.end());
    claimed = merge_intervals(std::move(both));
  }
  p[Phase::kOther] = p.total_ns - used;
  return p;
}

}  // namespace profile_train::analysis
