// report.json's steps, breakdown and phases: every step is listed, the summary figures cover the steady state.
#include "steps_section.h"

#include "report_context.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

RoleValues breakdown_values(const StepBreakdown& b, double denom, bool as_ms) {
  RoleValues o;
  for (Role r : kAllRoles) {
    const TimeNs v = b[r];
    if (as_ms) o[r] = r6(ms(v) / denom);
    else o[r] = denom > 0 ? r6(v / denom) : 0.0;
  }
  return o;
}

// A phase without any range in the trace is null (unknown, e.g. no forward annotation), not 0.
PhaseValues phase_values(const PhaseSplit& p, const PhaseIndex& x, double denom, bool as_ms) {
  PhaseValues o;
  for (Phase ph : kAllPhases) {
    if (ph != Phase::kOther && x[ph].empty()) o[ph] = std::nullopt;
    else if (as_ms) o[ph] = r6(ms(p[ph]) / denom);
    else o[ph] = denom > 0 ? r6(double(p[ph]) / denom) : 0.0;
  }
  return o;
}

// mean/median/min/max/stddev of `v` (ms); nulls when empty.
void summary(Steps& o, const std::vector<double>& v) {
  if (v.empty()) return;
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  double var = 0;
  for (double d : v) var += (d - mean) * (d - mean);
  o.mean_ms = r6(mean);
  o.median_ms = r6(median(v));
  o.min_ms = r6(*std::min_element(v.begin(), v.end()));
  o.max_ms = r6(*std::max_element(v.begin(), v.end()));
  o.stddev_ms = r6(std::sqrt(var / static_cast<double>(v.size())));
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
  return steps_section(idx, si, loop_ranges(t, si.main_pid, si.main_tid), roles, kern_main, options);
}

StepsSection steps_section(const TraceIndex& idx, const StepInfo& si, const LoopRanges& loop, const RoleRanges& roles,
                           const Intervals& kern_main, const AnalysisOptions& options) {
  StepsSection out;
  const size_t n = si.steps.size();
  std::vector<double> dur_ms;
  dur_ms.reserve(n);
  for (const auto& s : si.steps) dur_ms.push_back(ms(s.duration()));
  const SteadyState st = steady_state(dur_ms);
  std::vector<const char*> excluded(n, nullptr);
  for (const auto& x : st.excluded) excluded[x.index] = x.reason;

  const bool phases = has_phases(loop);
  if (phases) out.phase_ranges = phase_index(loop);
  static const PhaseIndex kNoPhases;
  const PhaseIndex& pidx = phases ? *out.phase_ranges : kNoPhases;

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
    data_wait_min = std::min(data_wait_min, b[Role::kDataLoading]);
    for (Role r : kAllRoles) sum[r] += b[r];
    sum.total_ns += b.total_ns;
    if (phases) {
      const PhaseSplit p = phase_split(pidx, s.start, s.end);
      for (Phase k : kAllPhases) phase_sum[k] += p[k];
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
    StepRow row;
    row.index = static_cast<int64_t>(i);
    row.name = s.name;
    row.start_ns = s.start;
    row.duration_ms = r6(dur_ms[i]);
    row.breakdown = breakdown_values(b, double(b.total_ns), false);
    if (idx.has_gpu_activity && b.total_ns > 0)
      row.gpu_utilization = r6(double(total_length(clip_intervals(kern_main, s.start, s.end))) / double(b.total_ns));
    if (excluded[i]) row.excluded = excluded[i];
    if (phases) row.phases_ms = phase_values(phase_split(pidx, s.start, s.end), pidx, 1.0, true);
    return row;
  };
  const bool complete = kept.empty() || kept.size() == n;
  Steps& steps = out.steps;
  if (complete) {
    for (size_t i = 0; i < n; ++i) steps.per_step.push_back(step_row(i));
  } else {
    for (size_t i : kept) steps.per_step.push_back(step_row(i));
  }
  steps.count = static_cast<int64_t>(n);
  summary(steps, steady_ms);
  steps.per_step_complete = complete;
  steps.histogram = step_histogram(dur_ms, kStepHistogramBins);
  // The data wait that even the best step has, as a share of the mean step: a loader slower than the GPU
  // every step (a throughput deficit) has a high floor; a bursty one (slow batches, epoch start-up) has a low
  // floor. Deeper prefetching can only absorb the part above the floor.
  if (!st.kept.empty() && sum.total_ns > 0) steps.data_wait_floor = r6(double(data_wait_min) * nsteady / double(sum.total_ns));
  SteadyStateSummary& ss = steps.steady_state;
  ss.count = static_cast<int64_t>(st.kept.size());
  ss.excluded_count = static_cast<int64_t>(st.excluded.size());
  double excluded_ms = 0;
  for (const auto& x : st.excluded) {
    excluded_ms += dur_ms[x.index];
    if (ss.excluded.size() < kPerStepKept)
      ss.excluded.push_back({static_cast<int64_t>(x.index), si.steps[x.index].name, x.reason, r6(dur_ms[x.index])});
  }
  ss.excluded_ms = r6(excluded_ms);
  if (n) {
    ss.median_all_ms = r6(st.median_ms);
    ss.mad_all_ms = r6(st.mad_ms);
    ss.mean_all_ms = r6(std::accumulate(dur_ms.begin(), dur_ms.end(), 0.0) / static_cast<double>(n));
  }

  if (sum.total_ns > 0) {  // else every role is null
    out.breakdown = breakdown_values(sum, double(sum.total_ns), false);
    out.breakdown_ms = breakdown_values(sum, nsteady, true);
  }
  if (phases && phase_sum.total_ns > 0) {
    Phases& ph = out.phases.emplace();
    ph.ms_per_step = phase_values(phase_sum, pidx, nsteady, true);
    ph.fraction = phase_values(phase_sum, pidx, double(phase_sum.total_ns), false);
    if (!loop.backward.empty()) ph.backward_from = "## backward ##";
    else if (!loop.autograd.empty()) ph.backward_from = "autograd::engine::evaluate_function";
  }
  return out;
}

}  // namespace profile_train::analysis
