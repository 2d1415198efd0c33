// The Tuner (tuner.h), the tuning session: budget, interleaved measurements, early stop, the load rule, the
// final head-to-head check; strategies drive it. Noise, significance and which trial is better: tuner_noise.cpp.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "profile_train/common/format.h"
#include "strategy_util.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

using detail::memory_failure;

double steady_now_s() {
  using namespace std::chrono;
  return duration<double>(steady_clock::now().time_since_epoch()).count();
}

}  // namespace

namespace detail {

// One line: "loss 2.31 vs 1.12 (+1.19, bar 0.06, per sample seen)".
std::string loss_summary(const LossComparison& l) {
  if (l.non_finite) return "loss not finite";
  return "loss " + format_significant(l.trial_mean) + " vs " + format_significant(l.baseline_mean) + " (" +
         (l.difference >= 0 ? "+" : "") + format_significant(l.difference) + ", bar " +
         format_significant(l.tolerance) + ", per " + (l.compared_by == "step" ? "step" : "sample seen") + ")";
}


double mean_of(const std::vector<double>& v) {
  double sum = 0;
  for (double x : v) sum += x;
  return v.empty() ? 0.0 : sum / static_cast<double>(v.size());
}

}  // namespace detail

using detail::loss_summary;
using detail::mean_of;

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
  if (time_spent()) return stop("time budget spent");
  return true;
}

bool Tuner::time_spent() const { return options_.time_budget_s > 0 && elapsed_s() >= options_.time_budget_s; }

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

void Tuner::set_baseline(int index) {
  result_.baseline = index;
  if (space_adapted_) return;
  space_adapted_ = true;
  // Takes a skipped knob's values out of the space and says so.
  auto drop = [this](const SkippedKnob& s) {
    for (KnobRange& r : space_) {
      if (r.def->name == s.knob) std::erase_if(r.values, [&](const std::string& v) {
        return std::find(s.values.begin(), s.values.end(), v) != s.values.end();
      });
    }
    std::string values;
    for (const auto& v : s.values) values += (values.empty() ? "" : ",") + v;
    note("skip " + s.knob + "=" + values + ": " + s.reason);
  };
  result_.skipped = skipped_values(space_, trial(index).report, options_.host_bf16_native, options_.placeholders);
  for (const SkippedKnob& s : result_.skipped) drop(s);
  // Batch sizes predicted not to fit in memory (issue 24), from what is left of the space: skipped before any run,
  // saying why; the guided search's refinements between ladder values check the same prediction (known_to_oom).
  memory_fit_ = memory_fit(trial(index).report, options_.max_memory_bytes);
  if (!memory_fit_) return;
  if (auto s = batch_values_that_do_not_fit(space_, *memory_fit_)) {
    drop(*s);
    result_.skipped.push_back(std::move(*s));
  }
}

// ---- the quality guard ---------------------------------------------------------------------------------

const LossComparison& Tuner::update_loss(int index) {
  Trial& t = result_.trials.at(index);
  const int b = result_.baseline;
  if (b < 0 || index == b) {
    t.loss = LossComparison{};
    t.loss.status = b == index ? "baseline" : "not recorded";
    if (b < 0) t.loss.note = "no baseline to compare with";
    return t.loss;
  }
  t.loss = compare_loss(trial(b).losses, t.losses, options_.loss_guard);
  return t.loss;
}

bool Tuner::quality_blocks(int index) {
  const LossComparison& l = update_loss(index);
  return l.changes && !options_.allow_quality_change;
}

// ---- measurements -------------------------------------------------------------------------------------

void Tuner::finish_trial(Trial& t) {
  if (!t.values.empty()) {
    t.mean = mean_of(t.values);
    double ss = 0;
    for (double v : t.values) ss += (v - t.mean) * (v - t.mean);
    t.stddev = t.values.size() > 1 ? std::sqrt(ss / static_cast<double>(t.values.size() - 1)) : 0.0;
  }
  t.diagnosis = summarize_diagnosis(t.report);
  if (t.report) {
    for (const model::Recommendation& rec : t.report->recommendations) {
      for (const auto& k : unknown_knobs(rec)) {
        note("trial #" + std::to_string(t.index) + ": recommendation " + (rec.id.empty() ? std::string("?") : rec.id) +
             " names '" + k + "', not a knob of this profile-train (known: " + knob_names() + "); ignored");
      }
    }
  }
}

int Tuner::evaluate(const Config& config, const std::string& reason, int repeats_override, int reference) {
  if (int i = find(config); i >= 0) return i;
  if (!budget_left()) return -1;
  Trial t;
  t.index = static_cast<int>(result_.trials.size()) + 1;
  t.config = config;
  t.reason = reason;
  t.status = RunStatus::kOk;
  const int n = repeats_override > 0 ? repeats_override : options_.repeats;
  if (reference < 0) reference = result_.best;
  if (reference >= 0 && trial(reference).ok()) {
    measure_pairs(t, reference, n, false, true);
  } else {
    measure(t, n, "baseline");
  }
  if (t.status == RunStatus::kOk && t.values.empty() && t.unreliable_pairs > 0) {
    t.status = RunStatus::kNoMetric;
    t.message = "every pair's two runs saw different load (re-run " + std::to_string(options_.max_pair_reruns) +
                " times): unreliable, not measured";
  } else if (t.status == RunStatus::kOk && t.values.empty()) {
    t.status = RunStatus::kInterrupted;
    t.message = "interrupted before a measurement finished";
  }
  finish_trial(t);
  if (memory_failure(t)) ++result_.oom_trials;
  else if (!t.ok() && t.status != RunStatus::kInterrupted) ++result_.failed_trials;
  result_.trials.push_back(std::move(t));
  const int index = static_cast<int>(result_.trials.size()) - 1;
  if (options_.on_trial) options_.on_trial(result_.trials.back(), *this);
  if (options_.on_update) options_.on_update(*this);
  return index;
}

bool Tuner::run_once(Trial& t, const std::string& phase, const std::string& role, bool keep_status,
                     double* value) {
  if (interrupted()) return false;
  RunContext ctx;
  ctx.trial_index = t.index;
  ctx.repeat = t.measurements;
  ctx.timeout_s = timeout_for(t.config);
  if (options_.trial_timeout_s > 0 && ctx.timeout_s < options_.trial_timeout_s) {
    ctx.timeout_reason = "stopped early: clearly slower than the best trial, or the time budget ran out";
  } else if (ctx.timeout_s > 0) {
    ctx.timeout_reason = "per-trial timeout";
  }
  Measurement m = next_measurement(t.config, ctx);
  ++t.measurements;
  t.duration_s += m.duration_s;
  if (!m.dir.empty()) t.dirs.push_back(m.dir);
  RunRecord rec;
  if (m.report && m.report->source.run && m.report->source.run->host_load) {
    const model::HostLoad& h = *m.report->source.run->host_load;
    if (h.load_1m_start && h.load_1m_end && h.wall_s > 0) {
      rec.host_known = true;
      rec.load_1m = (*h.load_1m_start + *h.load_1m_end) / 2;
      rec.wall_s = h.wall_s;
      rec.cpu_time_s = h.cpu_time_s;
      rec.cpus = static_cast<int>(h.cpus);
    }
  }
  if (m.report && m.status == RunStatus::kOk && m.throughput > 0) {
    long long batch = config_int(t.config, KnobName::kBatchSize, 0);
    if (batch <= 0) batch = batch_from_facts(m.report);
    t.losses.push_back(loss_from_report(*m.report, batch));
  }
  if (m.report && m.report->compilation && m.report->compilation->compile_time_s)
    t.compile_s.push_back(*m.report->compilation->compile_time_s);
  if (m.report) t.report = std::move(m.report);
  if (m.status == RunStatus::kOk && options_.max_memory_bytes && m.peak_memory_bytes &&
      *m.peak_memory_bytes > *options_.max_memory_bytes) {
    m.status = RunStatus::kOverMemory;
    m.message = "peak memory " + format_fixed(*m.peak_memory_bytes / 1048576.0) + " MiB is above --max-memory";
  }
  if (m.peak_memory_bytes) t.peak_memory_bytes = std::max(t.peak_memory_bytes.value_or(0.0), *m.peak_memory_bytes);
  const bool ok = m.status == RunStatus::kOk && m.throughput > 0;
  rec.trial = t.index;
  rec.repeat = ctx.repeat;
  rec.phase = phase;
  rec.role = role;
  rec.status = ok ? RunStatus::kOk : (m.status == RunStatus::kOk ? RunStatus::kNoMetric : m.status);
  rec.throughput = ok ? m.throughput : 0;
  rec.step_ms = m.step_ms;
  rec.steady = m.steady;
  result_.runs.push_back(std::move(rec));
  if (!ok) {
    if (!keep_status) {
      t.status = result_.runs.back().status;
      t.message = m.message;
    } else {
      note("a " + role + " run of trial #" + std::to_string(t.index) + " failed (" +
           std::string(to_string(result_.runs.back().status)) + "): " + m.message);
    }
    return false;
  }
  t.values.push_back(m.throughput);
  t.per_sample = m.per_sample;
  *value = m.throughput;
  return true;
}

void Tuner::measure(Trial& t, int n, const std::string& phase) {
  for (int r = 0; r < n; ++r) {
    if (r > 0 && time_spent()) break;
    double v = 0;
    if (!run_once(t, phase, "alone", false, &v)) break;  // a failed measurement is not repeated
  }
}

void Tuner::measure_pairs(Trial& t, int reference, int n, bool confirm, bool early_stop) {
  const std::string phase = confirm ? "confirm" : "search";
  for (int i = 0; i < n; ++i) {
    if (interrupted() || (i > 0 && time_spent())) break;
    double rv = 0, cv = 0;
    bool failed = false, unreliable = false;
    for (int attempt = 0;; ++attempt) {
      const size_t ref_run = result_.runs.size();
      if (!run_once(result_.trials.at(reference), phase, "reference", true, &rv)) {
        // The reference failed this time: the candidate's remaining runs go alone (compared on the means).
        if (!confirm && !interrupted()) measure(t, n - i, phase);
        failed = true;
        break;
      }
      if (!run_once(t, phase, "candidate", confirm, &cv)) {
        failed = true;
        break;
      }
      // The load rule: a pair whose two runs saw different load is re-run, not averaged. Not with runs in
      // parallel (a Ray executor with several trials at once): there the load and the CPUs a run keeps busy
      // follow our own concurrent runs, and a pair's two runs run side by side under the same contention.
      const std::string why = parallelism() > 1 ? std::string() : load_disagreement(ref_run, ref_run + 1);
      if (why.empty()) break;
      result_.trials.at(reference).values.pop_back();
      t.values.pop_back();
      result_.runs[ref_run].excluded = result_.runs[ref_run + 1].excluded = why;
      if (attempt >= options_.max_pair_reruns || interrupted() || time_spent()) {
        unreliable = true;
        ++t.unreliable_pairs;
        ++result_.unreliable_pairs;
        note("pair of trial #" + std::to_string(t.index) + " against #" + std::to_string(trial(reference).index) +
             " unreliable after " + std::to_string(attempt) + " re-run(s): " + why + "; not used");
        break;
      }
      ++result_.rerun_pairs;
      note("re-running a pair of trial #" + std::to_string(t.index) + " against #" +
           std::to_string(trial(reference).index) + ": " + why);
    }
    if (failed) break;
    if (unreliable) continue;
    t.pairs.push_back({reference, rv, cv, confirm});
    // Early stop: the first pair is clearly slower; more pairs would not change the decision.
    if (early_stop && i == 0 && n > 1) {
      const double margin = std::max(options_.early_stop_fraction, 4.0 * pooled_noise().first);
      if (cv < rv * (1.0 - margin)) {
        t.early_stopped = true;
        break;
      }
    }
  }
  finish_trial(result_.trials.at(reference));
}

// ---- the load rule -------------------------------------------------------------------------------------

double Tuner::load_threshold(int cpus) const {
  return std::max(options_.load_delta_min, options_.load_delta_cpu_fraction * std::max(cpus, 1));
}

std::string Tuner::load_disagreement(size_t a, size_t b) const {
  const RunRecord& ra = result_.runs.at(a);
  const RunRecord& rb = result_.runs.at(b);
  if (!ra.host_known || !rb.host_known) return "";
  const double bar = load_threshold(std::max(ra.cpus, rb.cpus));
  if (std::fabs(ra.load_1m - rb.load_1m) > bar) {
    return "1-minute load " + format_significant(ra.load_1m, 2) + " vs " + format_significant(rb.load_1m, 2) +
           " (more than " + format_significant(bar, 2) + " apart)";
  }
  // Each run's CPUs used against its own configuration's earlier runs (not the other configuration's: a knob
  // may change how many CPUs a run keeps busy).
  for (size_t k : {a, b}) {
    const RunRecord& r = result_.runs[k];
    std::vector<double> earlier;
    for (size_t j = 0; j < k; ++j) {
      const RunRecord& e = result_.runs[j];
      if (e.trial == r.trial && e.host_known && e.excluded.empty() && e.throughput > 0 && e.cpus_used() > 0) {
        earlier.push_back(e.cpus_used());
      }
    }
    if (earlier.empty() || r.cpus_used() <= 0) continue;
    std::sort(earlier.begin(), earlier.end());
    const double med = earlier.size() % 2 ? earlier[earlier.size() / 2]
                                          : (earlier[earlier.size() / 2 - 1] + earlier[earlier.size() / 2]) / 2;
    const double ratio = r.cpus_used() / med;
    if (ratio > options_.cpu_ratio_tolerance || ratio < 1.0 / options_.cpu_ratio_tolerance) {
      return "the " + r.role + " run kept " + format_significant(r.cpus_used(), 2) + " CPUs busy (CPU time / wall " +
             "time) against " + format_significant(med, 2) + " in its configuration's earlier runs";
    }
  }
  return "";
}

std::optional<double> Tuner::median_load(const std::string& phase, size_t from) const {
  std::vector<double> v;
  for (size_t k = from; k < result_.runs.size(); ++k) {
    const RunRecord& r = result_.runs[k];
    if (r.phase == phase && r.host_known && r.excluded.empty()) v.push_back(r.load_1m);
  }
  if (v.empty()) return std::nullopt;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// ---- the head-to-head check ---------------------------------------------------------------------------

void Tuner::confirm_winner() {
  Confirmation& c = result_.confirmation;
  const int b = result_.baseline, w = result_.best;
  if (b < 0 || w < 0 || w == b || !trial(w).ok()) return;
  c.candidate = w;
  const std::string who = "trial #" + std::to_string(trial(w).index);
  if (options_.confirm_repeats <= 0) c.status = "skipped (--confirm-repeats 0)";
  else if (interrupted()) c.status = "skipped: interrupted";
  else if (time_spent()) c.status = "skipped: time budget spent";
  if (!c.status.empty()) {
    note("head-to-head check of " + who + " against the baseline " + c.status + ": its gain is not claimed");
    return;
  }
  note("head-to-head check: " + who + " against the baseline #" + std::to_string(trial(b).index) + ", " +
       std::to_string(options_.confirm_repeats) + " fresh interleaved pairs");
  result_.search_load_1m = median_load("search");
  if (!result_.search_load_1m) result_.search_load_1m = median_load("baseline");
  size_t first_run = result_.runs.size();
  measure_pairs(result_.trials.at(w), b, options_.confirm_repeats, true, false);
  // The load rule across phases: when the load changed since the search, the check is repeated once (its
  // pairs then come from the repetition alone).
  std::optional<double> load = median_load("confirm", first_run);
  int cpus = 0;
  for (size_t k = first_run; k < result_.runs.size(); ++k) cpus = std::max(cpus, result_.runs[k].cpus);
  if (load && result_.search_load_1m && std::fabs(*load - *result_.search_load_1m) > load_threshold(cpus) &&
      !interrupted() && !time_spent()) {
    note("head-to-head: the 1-minute load changed since the search (" + format_significant(*result_.search_load_1m, 2) +
         " -> " + format_significant(*load, 2) + "); repeating the check");
    c.repeated = true;
    std::erase_if(result_.trials.at(w).pairs, [&](const Pair& p) { return p.confirm && p.reference == b; });
    first_run = result_.runs.size();
    measure_pairs(result_.trials.at(w), b, options_.confirm_repeats, true, false);
    load = median_load("confirm", first_run);
  }
  c.load_1m = load;
  for (size_t k = first_run; k < result_.runs.size(); ++k) c.cpus = std::max(c.cpus, result_.runs[k].cpus);
  finish_trial(result_.trials.at(w));
  std::vector<double> d;
  for (const Pair& p : trial(w).pairs) {
    if (p.confirm && p.reference == b) d.push_back(p.log_ratio());
  }
  c.ran = !d.empty();
  c.estimate = paired_ratio(d, paired_noise(w, b));
  c.claimed = c.ran && c.estimate.interval_known() && c.estimate.low > 1.0 &&
              c.estimate.ratio - 1.0 > options_.min_gain;
  c.status = c.claimed ? "confirmed" : c.ran ? "not confirmed" : "not confirmed (the check's runs failed)";
  // The guard again, with the baseline's runs of the check added to its spread.
  if (c.claimed && quality_blocks(w)) {
    c.claimed = false;
    c.status = "not confirmed: changes the loss";
    note("head-to-head: " + who + " changes the loss: " + loss_summary(trial(w).loss));
  }
  note("head-to-head: x" + format_fixed(c.estimate.ratio, 3) + " (95% interval " + format_fixed(c.estimate.low, 3) +
       "-" + format_fixed(c.estimate.high, 3) + ", " + std::to_string(c.estimate.pairs) + " pairs" +
       (c.load_1m ? ", 1-minute load " + format_significant(*c.load_1m, 2) + " on " + std::to_string(c.cpus) + " CPUs" : "") +
       "): " + c.status +
       (c.claimed ? "" : "; keeping the baseline"));
  if (!c.claimed) result_.best = b;
  if (options_.on_update) options_.on_update(*this);
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
  confirm_winner();
  if (stop_.empty() && interrupted()) stop_ = "interrupted";
  result_.complete = stop_.empty();
  result_.partial = stop_ == "interrupted" || result_.baseline < 0;
  result_.stop_reason = stop_.empty() ? "search finished" : stop_;
  for (size_t i = 0; i < result_.trials.size(); ++i) update_loss(static_cast<int>(i));
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
