// report.json's steps, breakdown and phases: every step is listed, the summary figures cover the steady state.
#include "steps_section.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace profile_train::analysis {

using nlohmann::json;

namespace {

// Same precision as the rest of the report (fractions to 1e-6, milliseconds to 1 ns).
double r6(double x) { return std::isfinite(x) ? std::round(x * 1e6) / 1e6 : 0.0; }
double ms(TimeNs ns) { return static_cast<double>(ns) / 1e6; }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

json breakdown_json(const StepBreakdown& b, double denom, bool as_ms) {
  json o;
  for (int i = 0; i < kNumRoles; ++i) {
    if (as_ms) o[kRoleNames[i]] = r6(ms(b.role_ns[i]) / denom);
    else o[kRoleNames[i]] = denom > 0 ? r6(b.role_ns[i] / denom) : 0.0;
  }
  return o;
}

// A phase without any range in the trace is null (unknown, e.g. no forward annotation), not 0.
json phases_json(const PhaseSplit& p, const PhaseIndex& x, double denom, bool as_ms) {
  json o;
  for (int i = 0; i < kNumPhases; ++i) {
    if (i < kNumPhases - 1 && x.ranges[i].empty()) o[kPhaseNames[i]] = nullptr;
    else if (as_ms) o[kPhaseNames[i]] = r6(ms(p.phase_ns[i]) / denom);
    else o[kPhaseNames[i]] = denom > 0 ? r6(double(p.phase_ns[i]) / denom) : 0.0;
  }
  return o;
}

// mean/median/min/max/stddev of `v` (ms); nulls when empty.
void summary(json& o, const std::vector<double>& v) {
  if (v.empty()) {
    for (const char* k : {"mean_ms", "median_ms", "min_ms", "max_ms", "stddev_ms"}) o[k] = nullptr;
    return;
  }
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double var = 0;
  for (double d : v) var += (d - mean) * (d - mean);
  o["mean_ms"] = r6(mean);
  o["median_ms"] = r6(median(v));
  o["min_ms"] = r6(*std::min_element(v.begin(), v.end()));
  o["max_ms"] = r6(*std::max_element(v.begin(), v.end()));
  o["stddev_ms"] = r6(std::sqrt(var / static_cast<double>(v.size())));
}

// Ranges of `v` (sorted by start) starting in [start, end).
int64_t count_in(const Intervals& v, TimeNs start, TimeNs end) {
  auto lo = std::lower_bound(v.begin(), v.end(), start, [](const Interval& i, TimeNs x) { return i.start < x; });
  auto hi = std::lower_bound(lo, v.end(), end, [](const Interval& i, TimeNs x) { return i.start < x; });
  return hi - lo;
}

}  // namespace

StepsSection steps_section(const trace::Trace& t, const TraceIndex& idx, const StepInfo& si, const RoleRanges& roles,
                           const Intervals& kern_main, const AnalysisOptions& options) {
  StepsSection out;
  const size_t n = si.steps.size();
  std::vector<double> dur_ms;
  dur_ms.reserve(n);
  for (const auto& s : si.steps) dur_ms.push_back(ms(s.duration()));
  const SteadyState st = steady_state(dur_ms);
  std::vector<const char*> excluded(n, nullptr);
  for (const auto& x : st.excluded) excluded[x.index] = x.reason;

  const LoopRanges loop = loop_ranges(t, si.main_pid, si.main_tid);
  const bool phases = has_phases(loop);
  const PhaseIndex pidx = phases ? phase_index(loop) : PhaseIndex{};

  StepBreakdown sum;
  PhaseSplit phase_sum;
  std::vector<double> steady_ms;
  TimeNs data_wait_min = std::numeric_limits<TimeNs>::max();  // the data wait every steady step has (see below)
  std::vector<double> backwards;
  for (size_t i : st.kept) {
    const Step& s = si.steps[i];
    out.steady.push_back(s);
    steady_ms.push_back(dur_ms[i]);
    const StepBreakdown b = carve_step(roles, s.start, s.end);
    constexpr int kDataRole = 5;  // kRoleNames order
    data_wait_min = std::min(data_wait_min, b.role_ns[kDataRole]);
    for (int r = 0; r < kNumRoles; ++r) sum.role_ns[r] += b.role_ns[r];
    sum.total_ns += b.total_ns;
    if (phases) {
      const PhaseSplit p = phase_split(pidx, s.start, s.end);
      for (int k = 0; k < kNumPhases; ++k) phase_sum.phase_ns[k] += p.phase_ns[k];
      phase_sum.total_ns += p.total_ns;
    }
  }
  // Accumulation: backward passes per optimizer step, where each step holds one optimizer step (a GAN's steps
  // hold two, and their backward passes are no accumulation).
  if (si.source == StepSource::kOptimizerAnnotation && !loop.backward.empty()) {
    std::vector<double> optimizers;
    for (const auto& s : si.steps) {
      backwards.push_back(static_cast<double>(count_in(loop.backward, s.host_start, s.host_end)));
      optimizers.push_back(static_cast<double>(count_in(loop.optimizer, s.host_start, s.host_end)));
    }
    if (median(optimizers) == 1.0) out.accumulation = static_cast<int64_t>(std::llround(median(backwards)));
  }
  const double nsteady = static_cast<double>(st.kept.size());

  // Per-step rows only for the steps kept (carved a second time: cheap for a bounded number of steps).
  const std::vector<size_t> kept = options.all_steps ? std::vector<size_t>() : bounded_step_selection(dur_ms, kPerStepKept);
  auto step_row = [&](size_t i) {
    const Step& s = si.steps[i];
    const StepBreakdown b = carve_step(roles, s.start, s.end);
    json row = {{"index", i},
                {"name", s.name},
                {"start_ns", s.start},
                {"duration_ms", r6(dur_ms[i])},
                {"breakdown", breakdown_json(b, double(b.total_ns), false)},
                {"gpu_utilization", idx.has_gpu_activity && b.total_ns > 0
                                        ? json(r6(double(total_length(clip_intervals(kern_main, s.start, s.end))) / double(b.total_ns)))
                                        : json(nullptr)},
                {"excluded", excluded[i] ? json(excluded[i]) : json(nullptr)}};
    if (phases) row["phases_ms"] = phases_json(phase_split(pidx, s.start, s.end), pidx, 1.0, true);
    return row;
  };
  const bool complete = kept.empty() || kept.size() == n;
  json per_step = json::array();
  if (complete) {
    for (size_t i = 0; i < n; ++i) per_step.push_back(step_row(i));
  } else {
    for (size_t i : kept) per_step.push_back(step_row(i));
  }
  json steps;
  steps["count"] = n;
  summary(steps, steady_ms);
  steps["per_step"] = std::move(per_step);
  steps["per_step_complete"] = complete;
  steps["histogram"] = step_histogram(dur_ms, kStepHistogramBins);
  // The data wait that even the best step has, as a share of the mean step: a loader slower than the GPU
  // every step (a throughput deficit) has a high floor; a bursty one (slow batches, epoch start-up) has a low
  // floor. Deeper prefetching can only absorb the part above the floor.
  steps["data_wait_floor"] = st.kept.empty() || sum.total_ns <= 0
                                 ? json(nullptr)
                                 : json(r6(double(data_wait_min) * nsteady / double(sum.total_ns)));
  json ss;
  ss["count"] = st.kept.size();
  ss["excluded_count"] = st.excluded.size();
  double excluded_ms = 0;
  json ex = json::array();
  for (const auto& x : st.excluded) {
    excluded_ms += dur_ms[x.index];
    if (ex.size() < kPerStepKept)
      ex.push_back({{"index", x.index}, {"name", si.steps[x.index].name}, {"reason", x.reason},
                    {"duration_ms", r6(dur_ms[x.index])}});
  }
  ss["excluded_ms"] = r6(excluded_ms);
  ss["excluded"] = std::move(ex);
  ss["median_all_ms"] = n ? json(r6(st.median_ms)) : json(nullptr);
  ss["mad_all_ms"] = n ? json(r6(st.mad_ms)) : json(nullptr);
  ss["mean_all_ms"] = n ? json(r6(std::accumulate(dur_ms.begin(), dur_ms.end(), 0.0) / static_cast<double>(n))) : json(nullptr);
  steps["steady_state"] = std::move(ss);
  out.steps = std::move(steps);

  if (sum.total_ns > 0) {
    out.breakdown = breakdown_json(sum, double(sum.total_ns), false);
    out.breakdown_ms = breakdown_json(sum, nsteady, true);
  } else {
    json nb;
    for (const char* k : kRoleNames) nb[k] = nullptr;
    out.breakdown = nb;
    out.breakdown_ms = nb;
  }
  out.phases = nullptr;
  if (phases && phase_sum.total_ns > 0) {
    const bool annotated_backward = !loop.backward.empty();
    out.phases = {{"ms_per_step", phases_json(phase_sum, pidx, nsteady, true)},
                  {"fraction", phases_json(phase_sum, pidx, double(phase_sum.total_ns), false)},
                  {"backward_from", annotated_backward ? json("## backward ##")
                                                       : (loop.autograd.empty() ? json(nullptr) : json("autograd::engine::evaluate_function"))}};
  }
  return out;
}

}  // namespace profile_train::analysis
