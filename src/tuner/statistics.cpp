#include "profile_train/tuner/statistics.h"

#include <algorithm>
#include <cmath>

namespace profile_train::tuner {
namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  const size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  const double hi = v[mid];
  if (v.size() % 2 == 1) return hi;
  const double lo = *std::max_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid));
  return (lo + hi) / 2;
}

}  // namespace

SteadyState steady_state_of(const model::Report& report) {
  SteadyState s;
  const model::Steps& steps = report.steps;
  const int64_t count = steps.count;
  std::vector<double> d;
  for (const model::StepRow& st : steps.per_step) {
    if (std::isfinite(st.duration_ms) && st.duration_ms > 0) d.push_back(st.duration_ms);
  }
  const bool complete = steps.per_step_complete && static_cast<int64_t>(d.size()) == count;
  if (!d.empty() && complete) {
    const double m = median(d);
    std::vector<double> dev;
    dev.reserve(d.size());
    for (double x : d) dev.push_back(std::fabs(x - m));
    const double spread = 1.4826 * median(dev);  // MAD scaled to a normal sd
    // Twice the 90th percentile (nearest rank) bounds the threshold where steps alternate fast / slow and
    // the MAD is as large as the gap between the two.
    std::vector<double> sorted = d;
    std::sort(sorted.begin(), sorted.end());
    const double p90 = sorted[static_cast<size_t>(std::ceil(0.9 * static_cast<double>(sorted.size()))) - 1];
    s.warmup_threshold_ms = std::min(m + std::max(3.0 * spread, 0.25 * m), 2.0 * p90);
    size_t k = 0;
    while (k < d.size() / 2 && d[k] > s.warmup_threshold_ms) s.excluded_ms.push_back(d[k++]);
    s.warmup_excluded = static_cast<int>(k);
    std::vector<double> kept(d.begin() + static_cast<std::ptrdiff_t>(k), d.end());
    std::sort(kept.begin(), kept.end());
    // 10% off each end (at least one step each from 3 steps on), the mean of the rest.
    const size_t n = kept.size();
    const size_t trim = std::min((n + 9) / 10, (n - 1) / 2);
    double sum = 0;
    for (size_t i = trim; i < n - trim; ++i) sum += kept[i];
    s.step_ms = sum / static_cast<double>(n - 2 * trim);
    s.steps = static_cast<int>(n);
    s.trimmed = static_cast<int>(2 * trim);
    s.method = "trimmed mean of post-warm-up steps";
    return s;
  }
  const double med = steps.median_ms.value_or(NAN);
  if (std::isfinite(med) && med > 0) {
    s.step_ms = med;
    s.steps = static_cast<int>(count);
    s.method = "steps.median_ms (the per-step list is bounded; warm-up not separated)";
    return s;
  }
  const double mean = steps.mean_ms.value_or(NAN);
  if (std::isfinite(mean) && mean > 0) {
    s.step_ms = mean;
    s.steps = static_cast<int>(count);
    s.method = "steps.mean_ms (no per-step times in the report; warm-up not separated)";
  }
  return s;
}

double t95(int dof) {
  static constexpr double kT[] = {0,     12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                  2.201, 2.179,  2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080,
                                  2.074, 2.069,  2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (dof <= 0) return 0;
  if (dof <= 30) return kT[dof];
  return dof <= 40 ? 2.021 : dof <= 60 ? 2.000 : dof <= 120 ? 1.980 : 1.960;
}

void PairedNoise::add_group(const std::vector<double>& d) {
  if (d.size() < 2) return;
  double mean = 0;
  for (double x : d) mean += x;
  mean /= static_cast<double>(d.size());
  for (double x : d) sum_sq += (x - mean) * (x - mean);
  dof += static_cast<int>(d.size()) - 1;
}

double PairedNoise::sd() const { return dof > 0 ? std::sqrt(sum_sq / dof) : 0.0; }

PairedEstimate paired_ratio(const std::vector<double>& d, const PairedNoise& session) {
  PairedEstimate e;
  e.pairs = static_cast<int>(d.size());
  if (d.empty()) return e;
  double mean = 0;
  for (double x : d) mean += x;
  mean /= static_cast<double>(d.size());
  PairedNoise pooled = session;
  pooled.add_group(d);
  e.sd = pooled.sd();
  e.dof = pooled.dof;
  e.ratio = std::exp(mean);
  const double half = t95(e.dof) * e.sd / std::sqrt(static_cast<double>(d.size()));
  e.low = std::exp(mean - half);
  e.high = std::exp(mean + half);
  return e;
}

}  // namespace profile_train::tuner
