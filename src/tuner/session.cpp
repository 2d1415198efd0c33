// The tuning session: budget, repeats, noise, significance, early stop; strategies drive it.
#include <algorithm>
#include <chrono>
#include <cmath>

#include "profile_train/common/format.h"
#include "strategy_util.h"

namespace profile_train::tuner {
namespace {

using detail::memory_failure;

double steady_now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

// Two-sided 95% Student-t quantile for `dof` degrees of freedom divided by the normal one (1.96).
double t_factor(int dof) {
  static constexpr double kT[] = {0, 12.71, 4.30, 3.18, 2.78, 2.57, 2.45, 2.36, 2.31, 2.26, 2.23};
  if (dof <= 0) return 1.0;
  const double t = dof <= 10 ? kT[dof] : dof <= 20 ? 2.09 : dof <= 30 ? 2.04 : 1.96;
  return t / 1.96;
}

}  // namespace

Tuner::Tuner(KnobSpace space, TuneOptions options, TrialRunner& runner)
    : space_(std::move(space)), options_(std::move(options)), runner_(runner) {
  if (!options_.now_s) options_.now_s = steady_now_s;
  options_.repeats = std::max(1, options_.repeats);
  options_.baseline_repeats = std::max(options_.repeats, options_.baseline_repeats);
}

double Tuner::elapsed_s() const { return options_.now_s() - start_s_; }

bool Tuner::interrupted() const {
  return options_.interrupted != nullptr && options_.interrupted->load();
}

bool Tuner::budget_left() const {
  // The first reason found is kept as the session's stop reason.
  auto stop = [&](const char* why) {
    if (stop_.empty()) stop_ = why;
    return false;
  };
  if (interrupted()) return stop("interrupted");
  if (options_.max_trials > 0 && static_cast<int>(result_.trials.size()) >= options_.max_trials) {
    return stop("max trials reached");
  }
  if (options_.time_budget_s > 0 && elapsed_s() >= options_.time_budget_s) return stop("time budget spent");
  return true;
}

const KnobRange* Tuner::range(const std::string& knob) const {
  for (const KnobRange& r : space_) {
    if (r.def->name == knob) return &r;
  }
  return nullptr;
}

int Tuner::find(const Config& config) const {
  const std::string key = config_key(config);
  for (size_t i = 0; i < result_.trials.size(); ++i) {
    if (config_key(result_.trials[i].config) == key) return static_cast<int>(i);
  }
  return -1;
}

void Tuner::note(std::string line) { result_.log.push_back(std::move(line)); }

void Tuner::set_best(int index) {
  result_.best = index;
  result_.trials.at(index).accepted = true;
  if (options_.on_update) options_.on_update(*this);
}

std::pair<double, int> Tuner::pooled_noise() const {
  double sum = 0;
  int dof = 0;
  for (const Trial& t : result_.trials) {
    if (!t.ok() || t.values.size() < 2 || t.mean <= 0) continue;
    const double rel = t.stddev / t.mean;
    const int n1 = static_cast<int>(t.values.size()) - 1;
    sum += n1 * rel * rel;
    dof += n1;
  }
  return {dof > 0 ? std::sqrt(sum / dof) : 0.0, dof};
}

bool Tuner::significantly_better(int candidate, int reference) const {
  const Trial& c = trial(candidate);
  const Trial& r = trial(reference);
  if (!c.ok() || !r.ok() || r.mean <= 0) return false;
  // The bar: min_gain, and noise_k standard errors of the difference of the two means (from the pooled
  // relative noise); with few degrees of freedom the noise estimate itself is uncertain, so the bar is raised
  // by the Student-t / normal ratio.
  return c.mean / r.mean - 1.0 > threshold(candidate, reference);
}

bool Tuner::known_to_oom(const Config& config) const {
  auto it = config.find("batch_size");
  if (it == config.end()) return false;
  const long long batch = config_int(config, "batch_size", 0);
  Config others = config;
  others.erase("batch_size");
  for (const Trial& t : result_.trials) {
    if (!memory_failure(t)) continue;
    Config t_others = t.config;
    const long long t_batch = config_int(t_others, "batch_size", 0);
    t_others.erase("batch_size");
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
    if (b.ok() && b.measurements > 0) {
      // A fixed-step run takes time proportional to batch / throughput: scale by the batch ratio so a larger
      // batch is not mistaken for a slow one; a few seconds of slack cover process start-up.
      const double per = b.duration_s / b.measurements;
      double scale = 1;
      if (b.per_sample) {
        const double cb = static_cast<double>(config_int(config, "batch_size", 0));
        const double bb = static_cast<double>(config_int(b.config, "batch_size", 0));
        if (cb > 0 && bb > 0) scale = std::max(1.0, cb / bb);
      }
      tighten(options_.slow_kill_factor * per * scale + 5.0);
    }
  }
  return limit;
}

void Tuner::finish_trial(Trial& t) {
  if (!t.values.empty()) {
    double sum = 0;
    for (double v : t.values) sum += v;
    t.mean = sum / static_cast<double>(t.values.size());
    double ss = 0;
    for (double v : t.values) ss += (v - t.mean) * (v - t.mean);
    t.stddev = t.values.size() > 1 ? std::sqrt(ss / static_cast<double>(t.values.size() - 1)) : 0.0;
  }
  t.diagnosis = summarize_diagnosis(t.report);
}

int Tuner::evaluate(const Config& config, const std::string& reason, int repeats_override) {
  if (int i = find(config); i >= 0) return i;
  if (!budget_left()) return -1;
  Trial t;
  t.index = static_cast<int>(result_.trials.size()) + 1;
  t.config = config;
  t.reason = reason;
  t.status = RunStatus::kOk;
  const int n = repeats_override > 0 ? repeats_override : options_.repeats;
  const double best_mean = (result_.best >= 0 && trial(result_.best).ok()) ? trial(result_.best).mean : 0;
  measure(t, n, best_mean);
  finish_trial(t);
  if (memory_failure(t)) ++result_.oom_trials;
  else if (!t.ok() && t.status != RunStatus::kInterrupted) ++result_.failed_trials;
  result_.trials.push_back(std::move(t));
  const int index = static_cast<int>(result_.trials.size()) - 1;
  if (options_.on_trial) options_.on_trial(result_.trials.back(), *this);
  if (options_.on_update) options_.on_update(*this);
  return index;
}

bool Tuner::better(int candidate, int reference) {
  if (!significantly_better(candidate, reference)) return false;
  // A marginal win (less than twice the bar; while the noise is estimated from fewer than 6 degrees of
  // freedom, less than max(4 x the bar, 25%)) is confirmed by measuring both again: with 2-3 values per trial
  // a lucky draw clears the bar too often.
  const Trial& c = trial(candidate);
  const Trial& r = trial(reference);
  const double gain = c.mean / r.mean - 1.0;
  const double bar = threshold(candidate, reference);
  const bool noise_known = pooled_noise().second >= 6;  // below that, the noise estimate itself is too rough
  const bool clear = noise_known ? gain >= 2.0 * bar : gain >= std::max(4.0 * bar, 0.25);
  if (clear || c.values.size() >= 6 || !budget_left()) return true;
  note("confirming trial #" + std::to_string(c.index) + " (+" + std::to_string(static_cast<int>(100 * gain + 0.5)) +
       "%) against #" + std::to_string(r.index) + " with more measurements");
  for (int idx : {candidate, reference}) {
    Trial& t = result_.trials.at(idx);
    const size_t before = t.values.size();
    measure(t, 2, 0);
    if (t.values.size() == before) continue;
    finish_trial(t);
  }
  if (options_.on_update) options_.on_update(*this);
  return significantly_better(candidate, reference);
}

double Tuner::threshold(int candidate, int reference) const {
  const Trial& c = trial(candidate);
  const Trial& r = trial(reference);
  const auto [rel_sd, dof] = pooled_noise();
  const double se_rel = rel_sd * std::sqrt(1.0 / static_cast<double>(std::max<size_t>(1, c.values.size())) +
                                           1.0 / static_cast<double>(std::max<size_t>(1, r.values.size())));
  return std::max(options_.min_gain, options_.noise_k * t_factor(dof) * se_rel);
}

void Tuner::measure(Trial& t, int n, double best_mean) {
  const int first = t.measurements;
  bool failed = false;
  for (int r = first; r < first + n; ++r) {
    if (interrupted()) break;
    if (r > 0 && options_.time_budget_s > 0 && elapsed_s() >= options_.time_budget_s) break;
    RunContext ctx;
    ctx.trial_index = t.index;
    ctx.repeat = r;
    ctx.timeout_s = timeout_for(t.config);
    if (options_.trial_timeout_s > 0 && ctx.timeout_s < options_.trial_timeout_s) {
      ctx.timeout_reason = "stopped early: clearly slower than the best trial, or the time budget ran out";
    } else if (ctx.timeout_s > 0) {
      ctx.timeout_reason = "per-trial timeout";
    }
    Measurement m = runner_.run(t.config, ctx);
    ++t.measurements;
    t.duration_s += m.duration_s;
    if (!m.dir.empty()) t.dirs.push_back(m.dir);
    if (!m.report.is_null()) t.report = std::move(m.report);
    if (m.status == RunStatus::kOk && options_.max_memory_bytes && m.peak_memory_bytes &&
        *m.peak_memory_bytes > *options_.max_memory_bytes) {
      m.status = RunStatus::kOverMemory;
      m.message = "peak memory " + format_fixed(*m.peak_memory_bytes / 1048576.0) + " MiB is above --max-memory";
    }
    if (m.peak_memory_bytes) {
      t.peak_memory_bytes = std::max(t.peak_memory_bytes.value_or(0.0), *m.peak_memory_bytes);
    }
    if (m.status != RunStatus::kOk || !(m.throughput > 0)) {
      t.status = m.status == RunStatus::kOk ? RunStatus::kNoMetric : m.status;
      t.message = m.message;
      failed = true;
      break;  // a failed measurement is not repeated; the trial counts as failed
    }
    t.values.push_back(m.throughput);
    t.per_sample = m.per_sample;
    // Early stop: the first measurement is clearly below the best; repeats would not change the decision.
    if (r == 0 && n > 1 && best_mean > 0) {
      const double margin = std::max(options_.early_stop_fraction, 4.0 * pooled_noise().first);
      if (m.throughput < best_mean * (1.0 - margin)) {
        t.early_stopped = true;
        break;
      }
    }
  }
  if (!failed && t.values.empty()) {
    t.status = RunStatus::kInterrupted;
    t.message = "interrupted before a measurement finished";
  }
}

TuneResult Tuner::run() {
  start_s_ = options_.now_s();
  std::unique_ptr<Strategy> strategy = make_strategy(options_.strategy);
  if (!strategy) {
    result_.stop_reason = "unknown strategy '" + options_.strategy + "'";
    return result_;
  }
  strategy->search(*this);
  if (stop_.empty() && interrupted()) stop_ = "interrupted";
  result_.complete = stop_.empty();
  result_.stop_reason = stop_.empty() ? "search finished" : stop_;
  auto [sd, dof] = pooled_noise();
  result_.pooled_relative_sd = sd;
  result_.noise_samples = dof;
  result_.elapsed_s = elapsed_s();
  if (options_.on_update) options_.on_update(*this);
  return result_;
}

std::unique_ptr<Strategy> make_strategy(std::string_view name) {
  if (name == "guided") return detail::make_guided_strategy();
  if (name == "grid") return detail::make_grid_strategy();
  return nullptr;
}

}  // namespace profile_train::tuner
