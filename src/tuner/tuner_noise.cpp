// The tuning session's statistics: paired noise, the ratio of two trials, the significance bar, which of two
// trials is better (speed, then the quality guard), and what a trial may cost (memory, time). Split from
// tuner.cpp, which holds the rest of the Tuner.
#include <algorithm>
#include <cmath>

#include "strategy_util.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

using detail::loss_summary;
using detail::mean_of;
using detail::memory_failure;

// The Student-t / normal ratio for `dof` degrees of freedom: with few, the noise estimate itself is uncertain
// and the bar is raised by it.
double t_factor(int dof) { return dof > 0 ? t95(dof) / 1.96 : 1.0; }

}  // namespace

// ---- noise and significance ---------------------------------------------------------------------------

std::vector<double> Tuner::log_ratios(int candidate, int reference) const {
  std::vector<double> d;
  for (const Pair& p : trial(candidate).pairs) {
    if (p.reference == reference && !p.confirm) d.push_back(p.log_ratio());
  }
  return d;
}

PairedNoise Tuner::paired_noise(int skip_candidate, int skip_reference) const {
  PairedNoise n;
  // Consecutive runs of one configuration measured alone (the baseline's repeats): true difference 0.
  for (size_t k = 1; k < result_.runs.size(); ++k) {
    const RunRecord& a = result_.runs[k - 1];
    const RunRecord& b = result_.runs[k];
    if (a.role == "alone" && b.role == "alone" && a.trial == b.trial && a.throughput > 0 && b.throughput > 0 &&
        a.excluded.empty() && b.excluded.empty()) {
      n.add_null(std::log(b.throughput / a.throughput));
    }
  }
  // The spread of each group of pairs (one candidate against one reference, search or check) around its mean.
  for (size_t c = 0; c < result_.trials.size(); ++c) {
    std::map<std::pair<int, bool>, std::vector<double>> groups;
    for (const Pair& p : result_.trials[c].pairs) groups[{p.reference, p.confirm}].push_back(p.log_ratio());
    for (const auto& [key, d] : groups) {
      if (static_cast<int>(c) == skip_candidate && key.first == skip_reference) continue;
      n.add_group(d);
    }
  }
  return n;
}

std::pair<double, int> Tuner::pooled_noise() const {
  const PairedNoise n = paired_noise();
  return {n.sd() / std::sqrt(2.0), n.dof};
}

double Tuner::ratio(int candidate, int reference) const {
  if (candidate == reference) return 1.0;
  const std::vector<double> d = log_ratios(candidate, reference);
  if (!d.empty()) return std::exp(mean_of(d));
  const std::vector<double> back = log_ratios(reference, candidate);
  if (!back.empty()) return std::exp(-mean_of(back));
  const Trial& c = trial(candidate);
  const Trial& r = trial(reference);
  return r.mean > 0 ? c.mean / r.mean : 0.0;
}

bool Tuner::significantly_better(int candidate, int reference) const {
  const Trial& c = trial(candidate);
  const Trial& r = trial(reference);
  if (!c.ok() || !r.ok() || r.mean <= 0) return false;
  return ratio(candidate, reference) - 1.0 > threshold(candidate, reference);
}

double Tuner::threshold(int candidate, int reference) const {
  // Paired: the standard error of the mean log-ratio of the pairs, their own spread pooled with the session's.
  for (const auto& [c, r] : {std::pair{candidate, reference}, std::pair{reference, candidate}}) {
    const std::vector<double> d = log_ratios(c, r);
    if (d.empty()) continue;
    const PairedEstimate e = paired_ratio(d, paired_noise(c, r));
    const double se = e.sd / std::sqrt(static_cast<double>(d.size()));
    return std::max(options_.min_gain, options_.noise_k * t_factor(e.dof) * se);
  }
  // Never side by side: the difference of the two means, from the relative noise of one run.
  const auto [rel_sd, dof] = pooled_noise();
  const Trial& c = trial(candidate);
  const Trial& r = trial(reference);
  const double se_rel = rel_sd * std::sqrt(1.0 / static_cast<double>(std::max<size_t>(1, c.values.size())) +
                                           1.0 / static_cast<double>(std::max<size_t>(1, r.values.size())));
  return std::max(options_.min_gain, options_.noise_k * t_factor(dof) * se_rel);
}

bool Tuner::better(int candidate, int reference) {
  if (!trial(candidate).ok() || !trial(reference).ok()) return false;
  // The quality guard first: a faster step that learns worse is no win (quality.h).
  if (update_loss(candidate).changes) {
    const LossComparison& l = trial(candidate).loss;
    note("trial #" + std::to_string(trial(candidate).index) + " changes the loss: " + loss_summary(l) +
         (options_.allow_quality_change ? " (allowed by --allow-quality-change)"
                                        : "; not kept (--allow-quality-change allows it)"));
    if (!options_.allow_quality_change) return false;
  }
  // More runs of trials already measured are no new trials: only the time budget and Ctrl-C stop them.
  const bool can_measure = !interrupted() && !time_spent();
  if (log_ratios(candidate, reference).empty() && log_ratios(reference, candidate).empty() && can_measure) {
    note("measuring trial #" + std::to_string(trial(candidate).index) + " side by side with #" +
         std::to_string(trial(reference).index));
    measure_pairs(result_.trials.at(candidate), reference, options_.repeats, false, false);
    finish_trial(result_.trials.at(candidate));
  }
  if (!significantly_better(candidate, reference)) {
    // Inconclusive: a gain above min_gain that only misses a bar raised by a noise estimate from few degrees
    // of freedom (t(1) = 12.7) gets two more pairs, once. With --baseline-repeats 2 --repeats 1 a x2.2 gain
    // missed the bar whenever the baseline's two runs differed by 8%.
    const double gain = ratio(candidate, reference) - 1.0;
    const size_t pairs = log_ratios(candidate, reference).size();
    if (gain <= options_.min_gain || pairs == 0 || pairs >= 3 || paired_noise().dof >= 6 || !can_measure) return false;
    note("inconclusive: trial #" + std::to_string(trial(candidate).index) + " (+" +
         std::to_string(static_cast<int>(100 * gain + 0.5)) + "%) against #" + std::to_string(trial(reference).index) +
         " with the noise from " + std::to_string(paired_noise().dof) + " degrees of freedom; two more pairs");
    measure_pairs(result_.trials.at(candidate), reference, 2, false, false);
    finish_trial(result_.trials.at(candidate));
    if (options_.on_update) options_.on_update(*this);
    return significantly_better(candidate, reference);
  }
  // A marginal win (less than twice the bar; while the noise is estimated from fewer than 6 degrees of
  // freedom, less than max(4 x the bar, 25%)) is confirmed by two more pairs: with 2-3 pairs a lucky draw
  // clears the bar too often.
  const double gain = ratio(candidate, reference) - 1.0;
  const double bar = threshold(candidate, reference);
  const bool noise_known = paired_noise().dof >= 6;
  const bool clear = noise_known ? gain >= 2.0 * bar : gain >= std::max(4.0 * bar, 0.25);
  const size_t pairs = log_ratios(candidate, reference).size();
  if (clear || pairs >= 6 || pairs == 0 || !can_measure) return true;
  note("confirming trial #" + std::to_string(trial(candidate).index) + " (+" +
       std::to_string(static_cast<int>(100 * gain + 0.5)) + "%) against #" + std::to_string(trial(reference).index) +
       " with two more pairs");
  measure_pairs(result_.trials.at(candidate), reference, 2, false, false);
  finish_trial(result_.trials.at(candidate));
  if (options_.on_update) options_.on_update(*this);
  return significantly_better(candidate, reference);
}

bool Tuner::known_to_oom(const Config& config) const {
  auto it = config.find(KnobName::kBatchSize);
  if (it == config.end()) return false;
  const long long batch = config_int(config, KnobName::kBatchSize, 0);
  if (memory_fit_ && batch > 0 && !memory_fit_->fits(batch)) return true;  // predicted not to fit
  Config others = config;
  others.erase(KnobName::kBatchSize);
  for (const Trial& t : result_.trials) {
    if (!memory_failure(t)) continue;
    Config t_others = t.config;
    const long long t_batch = config_int(t_others, KnobName::kBatchSize, 0);
    t_others.erase(KnobName::kBatchSize);
    if (t_batch > 0 && batch >= t_batch && config_key(t_others) == config_key(others)) return true;
  }
  return false;
}

double Tuner::timeout_for(const Config& config) const {
  double limit = options_.trial_timeout_s > 0 ? options_.trial_timeout_s : 0;
  auto tighten = [&](double v) { limit = (limit <= 0) ? v : std::min(limit, v); };
  if (options_.time_budget_s > 0) tighten(std::max(1.0, options_.time_budget_s - elapsed_s()));
  if (options_.slow_kill_factor > 0 && result_.best >= 0) {
    const Trial& b = trial(result_.best);
    // A compile mode the best did not run pays a compile first (seconds on a small model, minutes on a large
    // one) that its wall time cannot be judged by: only the per-trial timeout and the time budget apply to it.
    auto mode = [](const Config& c) {
      auto it = c.find(KnobName::kCompile);
      return it == c.end() ? std::string("off") : it->second;
    };
    const bool new_compile = mode(config) != "off" && mode(config) != mode(b.config);
    if (b.ok() && b.measurements > 0 && !new_compile) {
      // A fixed-step run takes time proportional to batch / throughput: scale by the batch ratio so a larger
      // batch is not mistaken for a slow one; a few seconds of slack cover process start-up.
      const double per = b.duration_s / b.measurements;
      double scale = 1;
      if (b.per_sample) {
        const double cb = static_cast<double>(config_int(config, KnobName::kBatchSize, 0));
        const double bb = static_cast<double>(config_int(b.config, KnobName::kBatchSize, 0));
        if (cb > 0 && bb > 0) scale = std::max(1.0, cb / bb);
      }
      tighten(options_.slow_kill_factor * per * scale + 5.0);
    }
  }
  return limit;
}

}  // namespace profile_train::tuner
