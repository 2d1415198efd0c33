#include "profile_train/tuner/quality.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "profile_train/common/format.h"
#include "profile_train/common/json_path.h"
#include "profile_train/tuner/statistics.h"

namespace profile_train::tuner {
namespace {

// A curve's loss at x by linear interpolation between its points (x ascending); NaN outside them.
double at(const std::vector<double>& xs, const std::vector<double>& ys, double x) {
  if (xs.empty() || x < xs.front() || x > xs.back()) return std::numeric_limits<double>::quiet_NaN();
  auto it = std::lower_bound(xs.begin(), xs.end(), x);
  const size_t j = static_cast<size_t>(it - xs.begin());
  if (xs[j] == x || j == 0) return ys[j];
  const double f = (x - xs[j - 1]) / (xs[j] - xs[j - 1]);
  return ys[j - 1] + f * (ys[j] - ys[j - 1]);
}

}  // namespace

bool LossCurve::finite() const {
  return std::all_of(values.begin(), values.end(), [](double v) { return std::isfinite(v); });
}

LossCurve loss_from_report(const model::Report& report, long long batch) {
  LossCurve c;
  const nlohmann::json* loss = report.facts.is_object() && report.facts.contains("loss") ? &report.facts["loss"] : nullptr;
  if (loss == nullptr || !loss->is_object()) return c;
  const auto steps = loss->find("steps");
  const auto values = loss->find("values");
  if (steps == loss->end() || values == loss->end() || !steps->is_array() || !values->is_array() ||
      steps->size() != values->size()) {
    return c;
  }
  for (size_t i = 0; i < steps->size(); ++i) {
    const nlohmann::json& s = (*steps)[i];
    const nlohmann::json& v = (*values)[i];
    if (!s.is_number_integer()) continue;
    double value = 0;
    if (v.is_number()) value = v.get<double>();
    else if (v.is_string()) value = v.get<std::string>() == "-inf" ? -INFINITY
                                    : v.get<std::string>() == "inf" ? INFINITY : NAN;  // the shim writes "nan"
    else continue;
    if (!c.steps.empty() && s.get<long long>() <= c.steps.back()) continue;
    c.steps.push_back(s.get<long long>());
    c.values.push_back(value);
  }
  c.recorded = !c.steps.empty();
  // The built-in workload says its warm-up in facts.loss; the shim in facts.capture.
  c.warmup_steps = static_cast<long long>(number_path(report.facts, {"loss", "warmup_steps"})
                                              .value_or(number_path(report.facts, {"capture", "warmup_steps"}).value_or(0)));
  c.samples_per_step = batch > 0 ? static_cast<double>(batch) : 0;
  return c;
}

LossComparison compare_loss(const std::vector<LossCurve>& baseline, const std::vector<LossCurve>& trial,
                            const LossGuardOptions& options) {
  LossComparison out;
  std::vector<const LossCurve*> b, t;
  for (const LossCurve& c : baseline) if (c.recorded) b.push_back(&c);
  for (const LossCurve& c : trial) if (c.recorded) t.push_back(&c);
  out.baseline_runs = static_cast<int>(b.size());
  out.trial_runs = static_cast<int>(t.size());
  if (t.empty()) {
    out.note = "loss not recorded (no backward() on a scalar tensor in the trial's runs)";
    return out;
  }
  if (b.empty()) {
    out.note = "loss not recorded by the baseline's runs";
    return out;
  }
  for (const LossCurve* c : t) out.non_finite = out.non_finite || !c->finite();
  bool baseline_finite = true;
  for (const LossCurve* c : b) baseline_finite = baseline_finite && c->finite();
  if (!baseline_finite) {
    out.status = "not compared";
    out.note = "the baseline's own loss is not finite";
    return out;
  }
  if (out.non_finite) {
    out.status = "changes the loss";
    out.changes = true;
    out.note = "the trial's loss went non-finite (NaN / inf) where the baseline's stayed finite";
    return out;
  }
  // The axis: samples seen when the batch sizes are known and differ, else the step.
  const double bb = b.front()->samples_per_step, tb = t.front()->samples_per_step;
  const bool by_samples = bb > 0 && tb > 0 && bb != tb;
  out.compared_by = by_samples ? "samples seen" : "step";
  auto xs_of = [&](const LossCurve& c) {
    std::vector<double> xs;
    for (long long s : c.steps) xs.push_back(by_samples ? static_cast<double>(s) * c.samples_per_step : static_cast<double>(s));
    return xs;
  };
  std::vector<std::vector<double>> bx;
  double lo = -INFINITY, hi = INFINITY;
  for (const LossCurve* c : b) {
    bx.push_back(xs_of(*c));
    lo = std::max(lo, bx.back().front());
    hi = std::min(hi, bx.back().back());
  }
  auto reference = [&](double x) {
    double sum = 0;
    for (size_t r = 0; r < b.size(); ++r) sum += at(bx[r], b[r]->values, x);
    return sum / static_cast<double>(b.size());
  };
  // The trial's points: measured steps in the baseline's range, else any of its steps there.
  std::vector<std::vector<std::pair<double, double>>> pts(t.size());
  for (size_t r = 0; r < t.size(); ++r) {
    const std::vector<double> xs = xs_of(*t[r]);
    for (bool measured_only : {true, false}) {
      for (size_t i = 0; i < xs.size(); ++i) {
        if (measured_only && t[r]->steps[i] <= t[r]->warmup_steps) continue;
        if (xs[i] >= lo && xs[i] <= hi) pts[r].push_back({xs[i], t[r]->values[i]});
      }
      if (!pts[r].empty()) break;
    }
  }
  std::vector<double> all_x;
  double trial_sum = 0, ref_sum = 0;
  int runs_compared = 0;
  for (const auto& p : pts) {
    if (p.empty()) continue;
    ++runs_compared;
    double ts = 0, rs = 0;
    for (const auto& [x, y] : p) {
      ts += y;
      rs += reference(x);
      all_x.push_back(x);
    }
    trial_sum += ts / static_cast<double>(p.size());
    ref_sum += rs / static_cast<double>(p.size());
  }
  if (runs_compared == 0) {
    out.status = "not compared";
    out.note = "no step of the trial falls within the " + out.compared_by + " the baseline recorded";
    return out;
  }
  out.points = static_cast<int>(pts.front().size());
  out.trial_mean = trial_sum / runs_compared;
  out.baseline_mean = ref_sum / runs_compared;
  out.difference = out.trial_mean - out.baseline_mean;
  // The baseline's spread: each run against the mean of all, over the same points.
  const int nb = static_cast<int>(b.size());
  if (nb >= 2) {
    double ss = 0;
    for (size_t r = 0; r < b.size(); ++r) {
      double d = 0;
      for (double x : all_x) d += at(bx[r], b[r]->values, x) - reference(x);
      d /= static_cast<double>(all_x.size());
      ss += d * d;
    }
    out.spread_dof = nb - 1;
    out.spread = std::sqrt(ss / out.spread_dof);
  }
  const double se = out.spread * std::sqrt(1.0 / runs_compared + 1.0 / nb);
  const double t_factor = out.spread_dof > 0 ? t95(out.spread_dof) / 1.96 : 1.0;
  const double floor = options.floor_relative * std::fabs(out.baseline_mean);
  out.tolerance = std::max(options.k * t_factor * se, floor);
  out.changes = out.difference > out.tolerance;
  out.status = out.changes ? "changes the loss" : "same loss";
  out.note = nb >= 2 ? "noise: the spread of " + std::to_string(nb) + " baseline runs (" +
                           std::to_string(out.spread_dof) + " d.o.f.), at least " +
                           format_fixed(100 * options.floor_relative, 0) + "% of the baseline's loss"
                     : "noise: one baseline run, no spread measured: the bar is " +
                           format_fixed(100 * options.floor_relative, 0) + "% of the baseline's loss";
  if (by_samples) {
    out.note += "; batch size " + format_fixed(tb, 0) + " vs " + format_fixed(bb, 0) +
                ", compared per sample seen: tune does not change the learning rate, which a different batch size "
                "usually needs (a larger batch at the same rate takes fewer updates per sample)";
  }
  return out;
}

}  // namespace profile_train::tuner
