#include "profile_train/tuner/tuner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>
#include "profile_train/common/format.h"

namespace profile_train::tuner {
namespace {

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

bool memory_failure(const Trial& t) {
  return t.status == RunStatus::kOom || t.status == RunStatus::kOverMemory;
}

}  // namespace

// ---- diagnosis -> knobs -------------------------------------------------------------------------------

std::vector<std::string> knobs_for_recommendation(const nlohmann::json& rec) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (!rec.is_object()) return out;
  if (auto it = rec.find("knobs"); it != rec.end() && it->is_array()) {
    for (const auto& el : *it) {
      std::string name;
      if (el.is_string()) {
        name = el.get<std::string>();
      } else if (el.is_object()) {
        for (const char* key : {"name", "knob", "path", "key"}) {
          if (el.contains(key) && el[key].is_string()) {
            name = el[key].get<std::string>();
            break;
          }
        }
      }
      const KnobDef* def = find_knob(name);
      if (def == nullptr && name.find('.') != std::string::npos) def = find_knob(name.substr(name.rfind('.') + 1));
      if (def != nullptr) add(def->name);
    }
    if (!out.empty()) return out;
  }
  // By rule id (the catalog in PRODUCT.md): only the rules a knob can act on.
  static const std::map<std::string, std::vector<std::string>> kById = {
      {"dataloader-workers", {"num_workers"}},
      {"prefetch-persistent-workers", {"prefetch_factor", "persistent_workers", "num_workers"}},
      {"pin-memory", {"pin_memory"}},
      {"gpu-preprocessing", {"num_workers"}},
      {"amp", {"amp"}},
      {"channels-last", {"channels_last"}},
      {"cudnn-benchmark", {"cudnn_benchmark"}},
      {"tf32", {"tf32"}},
      {"batch-size", {"batch_size"}},
      {"cuda-graphs", {"batch_size"}},  // fewer, larger kernels per sample
  };
  const std::string id = rec.value("id", std::string());
  if (auto it = kById.find(id); it != kById.end()) {
    for (const auto& k : it->second) add(k);
  }
  return out;
}

std::vector<std::string> knobs_for_bottleneck(std::string_view bottleneck) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kByVerdict = {
      {"input_pipeline", {"num_workers", "prefetch_factor", "persistent_workers", "pin_memory"}},
      {"host_to_device", {"pin_memory", "num_workers"}},
      {"cpu_overhead", {"batch_size", "amp"}},
      {"synchronization", {"batch_size"}},
      {"gpu_compute", {"amp", "channels_last", "tf32", "cudnn_benchmark", "batch_size"}},
      {"gpu_memory", {"amp", "batch_size"}},
      {"communication", {"batch_size"}},
      {"cpu_only", {"num_workers", "batch_size"}},
  };
  auto it = kByVerdict.find(bottleneck);
  return it == kByVerdict.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> diagnosed_knobs(const nlohmann::json& report) {
  std::vector<std::string> out;
  auto add = [&](const std::string& k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  if (!report.is_object()) return out;
  if (auto it = report.find("recommendations"); it != report.end() && it->is_array()) {
    for (const auto& rec : *it) {
      for (const auto& k : knobs_for_recommendation(rec)) add(k);
    }
  }
  if (auto it = report.find("verdict"); it != report.end() && it->is_object()) {
    for (const auto& k : knobs_for_bottleneck(it->value("bottleneck", std::string()))) add(k);
  }
  return out;
}

nlohmann::json summarize_diagnosis(const nlohmann::json& report) {
  nlohmann::json d = nlohmann::json::object();
  if (!report.is_object()) return d;
  if (auto it = report.find("verdict"); it != report.end() && it->is_object()) {
    d["bottleneck"] = it->value("bottleneck", std::string("unknown"));
    if (it->contains("confidence") && (*it)["confidence"].is_number()) d["confidence"] = (*it)["confidence"];
    d["summary"] = it->value("summary", std::string());
  }
  nlohmann::json recs = nlohmann::json::array();
  if (auto it = report.find("recommendations"); it != report.end() && it->is_array()) {
    for (const auto& rec : *it) {
      if (recs.size() >= 5) break;
      if (!rec.is_object()) continue;
      recs.push_back({{"id", rec.value("id", std::string())},
                      {"title", rec.value("title", std::string())},
                      {"knobs", knobs_for_recommendation(rec)}});
    }
  }
  d["recommendations"] = recs;
  return d;
}

// ---- Tuner --------------------------------------------------------------------------------------------

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
    Measurement m = next_measurement(t.config, ctx);
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

// ---- strategies ---------------------------------------------------------------------------------------
namespace {

// Values of an integer knob, ascending, including `current` when it is not in the list.
std::vector<long long> ladder(const KnobRange& r, long long current) {
  std::vector<long long> v;
  for (const auto& s : r.values) v.push_back(std::stoll(s));
  if (current >= 0 && std::find(v.begin(), v.end(), current) == v.end()) v.push_back(current);
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

class GridStrategy : public Strategy {
 public:
  void search(Tuner& t) override {
    const KnobSpace& space = t.space();
    std::vector<size_t> pos(space.size(), 0);
    bool first = true;
    while (true) {
      Config c;
      for (size_t k = 0; k < space.size(); ++k) c[space[k].def->name] = space[k].values[pos[k]];
      if (t.known_to_oom(c)) {
        t.note("grid: skip " + describe_config(c, space) + " (a smaller batch ran out of memory)");
      } else {
        if (t.parallelism() > 1 && t.find(c) < 0) t.evaluate_batch(grid_lookahead(t, pos, first));
        const int i = t.evaluate(c, first ? "baseline (grid)" : "grid", first ? t.options().baseline_repeats : 0);
        if (i < 0) return;  // budget spent / interrupted
        if (t.baseline() < 0 && t.trial(i).ok()) t.set_baseline(i);
        if (t.trial(i).ok() && (t.best() < 0 || t.trial(i).mean > t.trial(t.best()).mean)) t.set_best(i);
      }
      first = false;
      // Mixed-radix increment, the last knob fastest.
      size_t k = space.size();
      while (k > 0) {
        --k;
        if (++pos[k] < space[k].values.size()) break;
        pos[k] = 0;
        if (k == 0) return;
      }
      if (space.empty()) return;
    }
  }
};

class GuidedStrategy : public Strategy {
 public:
  void search(Tuner& t) override {
    Config base = baseline_config(t.space());
    int b = t.evaluate_batch({{base, "baseline", t.options().baseline_repeats}}).front();
    if (b < 0) return;
    // A baseline that runs out of memory: halve the batch until it fits (the search adapts).
    const KnobRange* batch = t.range("batch_size");
    while (memory_failure(t.trial(b)) && batch != nullptr) {
      const long long cur = config_int(base, "batch_size", 0);
      long long smaller = 0;
      for (long long v : ladder(*batch, cur)) {
        if (v < cur) smaller = v;
      }
      if (smaller <= 0 && batch->is_auto && cur > 1) smaller = cur / 2;
      if (smaller <= 0) break;
      base["batch_size"] = std::to_string(smaller);
      t.note("baseline ran out of memory at batch_size=" + std::to_string(cur) + "; retrying with " +
             std::to_string(smaller));
      b = t.evaluate(base, "baseline (smaller batch after out-of-memory)", t.options().baseline_repeats);
      if (b < 0) return;
    }
    if (!t.trial(b).ok()) {
      t.note("baseline failed (" + std::string(to_string(t.trial(b).status)) + "): " + t.trial(b).message +
             "; nothing to compare against, stopping");
      return;
    }
    t.set_baseline(b);
    t.set_best(b);
    std::vector<std::string> explored;
    std::map<std::string, int> reopened;
    for (int round = 1; round <= 64; ++round) {
      if (!t.budget_left()) return;  // records the stop reason
      const Trial& best = t.trial(t.best());
      std::string knob, why;
      for (const auto& [k, w] : knob_order(t, best.report)) {
        if (std::find(explored.begin(), explored.end(), k) == explored.end()) {
          knob = k;
          why = w;
          break;
        }
      }
      if (knob.empty()) {
        t.note("no knob left to try at the best configuration: search finished");
        return;
      }
      const std::string bottleneck = best.diagnosis.value("bottleneck", std::string("unknown"));
      t.note("round " + std::to_string(round) + ": best trial #" + std::to_string(best.index) + " (" +
             bottleneck + "), trying " + knob + " (" + why + ")");
      const int before = t.best();
      explore(t, knob, why);
      explored.push_back(knob);
      if (t.best() != before) {
        // Re-diagnose: what the new best's report points to may help again although it did not before.
        for (const auto& k : recommended_knobs(t.trial(t.best()).report)) {
          auto it = std::find(explored.begin(), explored.end(), k);
          if (k != knob && it != explored.end() && reopened[k] < 2) {
            ++reopened[k];
            explored.erase(it);
            t.note("re-diagnosis of trial #" + std::to_string(t.trial(t.best()).index) + " points to " + k +
                   " again");
          }
        }
      }
    }
  }

 private:
  // Knobs in the order the diagnosis asks for them: recommendations first, then the verdict, then every
  // other knob of the space (cheapest first) so that "no knob helps" is established by measurement.
  static std::vector<std::pair<std::string, std::string>> knob_order(const Tuner& t, const nlohmann::json& report) {
    std::vector<std::pair<std::string, std::string>> out;
    auto add = [&](const std::string& k, const std::string& why) {
      if (t.range(k) == nullptr) return;
      for (const auto& [kk, w] : out) {
        if (kk == k) return;
      }
      out.emplace_back(k, why);
    };
    if (report.is_object()) {
      if (auto it = report.find("recommendations"); it != report.end() && it->is_array()) {
        for (const auto& rec : *it) {
          for (const auto& k : knobs_for_recommendation(rec)) add(k, "recommendation " + rec.value("id", std::string("?")));
        }
      }
      if (auto it = report.find("verdict"); it != report.end() && it->is_object()) {
        const std::string v = it->value("bottleneck", std::string());
        for (const auto& k : knobs_for_bottleneck(v)) add(k, "verdict " + v);
      }
    }
    for (const KnobRange& r : t.space()) add(r.def->name, "not pointed to by the diagnosis; checked last");
    return out;
  }

  // Knobs named by a report's recommendations (not the verdict's broader list), in order.
  static std::vector<std::string> recommended_knobs(const nlohmann::json& report) {
    std::vector<std::string> out;
    if (!report.is_object() || !report.contains("recommendations") || !report["recommendations"].is_array()) return out;
    for (const auto& rec : report["recommendations"]) {
      for (const auto& k : knobs_for_recommendation(rec)) {
        if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
      }
    }
    return out;
  }

  // The next value of `knob` after `current` in its range: the next larger integer, or the first other
  // value of a bool / choice knob. "" when there is none.
  static std::string next_value(const KnobRange& r, const std::string& current) {
    if (r.def->kind == KnobKind::kInteger) {
      const long long cur = current.empty() ? -1 : std::stoll(current);
      for (long long v : ladder(r, cur)) {
        if (v > cur) return std::to_string(v);
      }
      return "";
    }
    for (const auto& v : r.values) {
      if (v != current) return v;
    }
    return "";
  }

  // A step of `knob` that did not pay is often limited by something else (a bigger batch becomes
  // input-bound): its own report says what limits it now. Try that trial's config with the top recommended other knob moved
  // one step. Returns the trial index, -1 when the budget is spent, -2 when there was nothing to try.
  static int combined_move(Tuner& t, int plateau, const std::string& knob) {
    const Trial& p = t.trial(plateau);
    if (!p.ok()) return -2;
    const Config pc = p.config;
    const int p_index = p.index;
    for (const auto& j : recommended_knobs(p.report)) {
      const KnobRange* r = t.range(j);
      if (j == knob || r == nullptr) continue;
      const std::string next = next_value(*r, pc.count(j) ? pc.at(j) : std::string());
      if (next.empty()) continue;
      Config c = with(pc, j, next);
      if (t.known_to_oom(c) || t.find(c) >= 0) continue;
      return t.evaluate(c, "trial #" + std::to_string(p_index) + " (" + knob + "=" + pc.at(knob) +
                               ") did not pay on its own; its diagnosis recommends " + j + " -> " + j + "=" + next);
    }
    return -2;
  }

  static Config with(Config c, const std::string& knob, const std::string& value) {
    c[knob] = value;
    return c;
  }

  // Tries the values of `knob` around the best configuration and accepts the best significant gain.
  static void explore(Tuner& t, const std::string& knob, const std::string& why) {
    const KnobRange* r = t.range(knob);
    if (r == nullptr) return;
    Config start = t.trial(t.best()).config;
    int local = t.best();
    if (t.parallelism() > 1) t.evaluate_batch(explore_lookahead(t, start, knob, why));
    auto try_value = [&](const std::string& value) -> int {
      Config c = with(start, knob, value);
      if (t.known_to_oom(c)) {
        t.note("skip " + knob + "=" + value + ": a smaller batch already ran out of memory");
        return -2;
      }
      return t.evaluate(c, why);
    };
    if (r->def->kind == KnobKind::kInteger) {
      const long long cur = config_int(start, knob, -1);
      const std::vector<long long> vals = ladder(*r, cur);
      const size_t idx = static_cast<size_t>(std::find(vals.begin(), vals.end(), cur) - vals.begin());
      bool improved_up = false;
      bool looked_ahead = false;
      long long oom_at = 0;
      for (size_t j = idx + 1; j < vals.size(); ++j) {  // upwards: doubling ladder for batch_size
        const int i = try_value(std::to_string(vals[j]));
        if (i == -1) return;
        if (i == -2 || memory_failure(t.trial(i))) {
          oom_at = vals[j];
          break;
        }
        if (!t.trial(i).ok()) break;  // crashed / timed out: do not climb past it
        if (t.better(i, local)) {
          local = i;
          improved_up = true;
          looked_ahead = false;
          continue;
        }
        // Plateau. If this trial's own diagnosis still names `knob`, the bottleneck did not move: one more
        // step up may pay where this one was lost in the noise (at most one such look-ahead in a row).
        if (!looked_ahead && j + 1 < vals.size()) {
          const auto rec = recommended_knobs(t.trial(i).report);
          if (std::find(rec.begin(), rec.end(), knob) != rec.end()) {
            looked_ahead = true;
            continue;
          }
        }
        // If the step moved the bottleneck, follow that trial's own diagnosis once.
        const int c = combined_move(t, i, knob);
        if (c == -1) return;
        if (c >= 0 && t.better(c, local)) {
          t.note("combined move kept: trial #" + std::to_string(t.trial(c).index));
          local = c;
          improved_up = true;
          start = t.trial(c).config;  // keep climbing `knob` from the combined configuration
          continue;
        }
        break;
      }
      // Out of memory above the best batch: refine once between the best and the failing size.
      if (knob == "batch_size" && oom_at > 0 && r->is_auto) {
        const long long lo = config_int(t.trial(local).config, knob, 0);
        long long mid = (lo + oom_at) / 2;
        if (mid >= 16) mid -= mid % 8;
        if (mid > lo && mid < oom_at) {
          const int i = try_value(std::to_string(mid));
          if (i == -1) return;
          if (i >= 0 && t.better(i, local)) local = i;
        }
      }
      // Downwards, when going up did not help, and only from the baseline's value: a value reached by
      // climbing already beat the smaller ones.
      const KnobRange* rb = t.range(knob);
      const bool at_baseline_value = rb != nullptr && t.baseline() >= 0 &&
                                     t.trial(t.baseline()).config.count(knob) &&
                                     t.trial(t.baseline()).config.at(knob) == std::to_string(cur);
      if (!improved_up && at_baseline_value && idx > 0 && idx < vals.size()) {
        for (size_t j = idx; j-- > 0;) {
          const int i = try_value(std::to_string(vals[j]));
          if (i == -1) return;
          if (i < 0 || !t.trial(i).ok() || !t.better(i, local)) break;
          local = i;
        }
      }
    } else {
      const std::string cur = start.count(knob) ? start.at(knob) : std::string();
      for (const std::string& v : r->values) {
        if (v == cur) continue;
        const int i = try_value(v);
        if (i == -1) return;
        if (i >= 0 && t.better(i, local)) local = i;
      }
    }
    if (local != t.best()) {
      const Trial& a = t.trial(local);
      const Trial& b = t.trial(t.best());
      t.note("keep " + describe_config(a.config, t.space()) + " (trial #" + std::to_string(a.index) + "): " +
             format_fixed(a.mean) + " vs " + format_fixed(b.mean) + " (+" + format_fixed(100.0 * (a.mean / b.mean - 1.0)) + "%)");
      t.set_best(local);
    } else {
      t.note("no significant gain from " + knob + "; keeping " + knob + "=" +
             (start.count(knob) ? start.at(knob) : std::string("(unset)")));
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_strategy(std::string_view name) {
  if (name == "guided") return std::make_unique<GuidedStrategy>();
  if (name == "grid") return std::make_unique<GridStrategy>();
  return nullptr;
}

}  // namespace profile_train::tuner
