// Batches of independent measurements for a parallel runner (the Ray executor): Tuner::evaluate_batch and the
// look-ahead lists the grid and guided strategies hand to it.
#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

std::vector<int> Tuner::evaluate_batch(const std::vector<BatchItem>& items) {
  if (parallelism() > 1 && budget_left()) {
    std::vector<std::pair<Config, RunContext>> jobs;
    std::vector<std::string> keys;
    int index = static_cast<int>(result_.trials.size()) + 1;  // evaluate() numbers the new trials in this order
    int room = options_.max_trials > 0 ? options_.max_trials - static_cast<int>(result_.trials.size()) : INT_MAX;
    std::set<std::string> seen;
    auto context = [&](const Config& config, int trial_index, int repeat) {
      RunContext ctx;
      ctx.trial_index = trial_index;
      ctx.repeat = repeat;
      ctx.timeout_s = timeout_for(config);
      if (options_.trial_timeout_s > 0 && ctx.timeout_s < options_.trial_timeout_s) {
        ctx.timeout_reason = "stopped early: clearly slower than the best trial, or the time budget ran out";
      } else if (ctx.timeout_s > 0) {
        ctx.timeout_reason = "per-trial timeout";
      }
      return ctx;
    };
    // The reference runs evaluate() will pair with each candidate run (ABAB) go into the same batch: a pair
    // then runs at the same time on two nodes instead of one after the other. Their repeat numbers continue
    // the reference trial's count, in the order evaluate() will ask for them.
    std::map<int, int> reference_runs;
    for (const BatchItem& item : items) {
      const std::string key = config_key(item.config);
      if (room <= 0) break;
      if (find(item.config) >= 0 || !seen.insert(key).second) continue;
      --room;
      const int n = item.repeats_override > 0 ? item.repeats_override : options_.repeats;
      const int ref = item.reference >= 0 ? item.reference : result_.best;
      const bool paired = ref >= 0 && ref < static_cast<int>(result_.trials.size()) && trial(ref).ok();
      if (paired && !reference_runs.count(ref)) reference_runs[ref] = trial(ref).measurements;
      for (int r = 0; r < n; ++r) {
        if (paired) {
          const Trial& rt = trial(ref);
          const int rr = reference_runs[ref]++;
          jobs.emplace_back(rt.config, context(rt.config, rt.index, rr));
          keys.push_back(config_key(rt.config) + "#" + std::to_string(rr));
        }
        jobs.emplace_back(item.config, context(item.config, index, r));
        keys.push_back(key + "#" + std::to_string(r));
      }
      ++index;
    }
    if (jobs.size() > 1) {
      std::vector<Measurement> done = runner_.run_batch(jobs);
      for (size_t i = 0; i < done.size() && i < keys.size(); ++i) prefetched_[keys[i]] = std::move(done[i]);
    }
  }
  std::vector<int> out;
  for (const BatchItem& item : items)
    out.push_back(evaluate(item.config, item.reason, item.repeats_override, item.reference));
  prefetched_.clear();
  return out;
}

Measurement Tuner::next_measurement(const Config& config, const RunContext& context) {
  auto it = prefetched_.find(config_key(config) + "#" + std::to_string(context.repeat));
  if (it == prefetched_.end()) return runner_.run(config, context);
  Measurement m = std::move(it->second);
  prefetched_.erase(it);
  return m;
}

std::vector<Tuner::BatchItem> grid_lookahead(const Tuner& t, const std::vector<size_t>& start, bool first) {
  std::vector<Tuner::BatchItem> out;
  const KnobSpace& space = t.space();
  std::vector<size_t> pos = start;
  const size_t want = static_cast<size_t>(std::max(1, t.parallelism()));
  while (out.size() < want && !space.empty()) {
    Config c;
    for (size_t k = 0; k < space.size(); ++k) c[space[k].def->name] = space[k].values[pos[k]];
    if (!t.known_to_oom(c) && t.find(c) < 0) {
      const bool base = first && out.empty() && pos == start;
      out.push_back({c, base ? "baseline (grid)" : "grid", base ? t.options().baseline_repeats : 0,
                     base ? -1 : t.baseline()});
    }
    size_t k = space.size();
    bool wrapped = false;
    while (k > 0) {
      --k;
      if (++pos[k] < space[k].values.size()) break;
      pos[k] = 0;
      if (k == 0) wrapped = true;
    }
    if (wrapped) break;
  }
  return out;
}

std::vector<Tuner::BatchItem> explore_lookahead(const Tuner& t, const Config& start, const std::string& knob,
                                                const std::string& why) {
  std::vector<Tuner::BatchItem> out;
  const KnobRange* r = t.range(knob);
  if (r == nullptr) return out;
  const size_t want = static_cast<size_t>(std::max(1, t.parallelism()));
  std::vector<std::string> values;
  if (r->def->kind == KnobKind::kInteger) {
    const long long cur = config_int(start, knob, -1);
    std::vector<long long> ladder;
    for (const auto& s : r->values) ladder.push_back(std::stoll(s));
    std::sort(ladder.begin(), ladder.end());
    for (long long v : ladder) {
      if (v > cur) values.push_back(std::to_string(v));
    }
  } else {
    const std::string cur = start.count(knob) ? start.at(knob) : std::string();
    for (const auto& v : r->values) {
      if (v != cur) values.push_back(v);
    }
  }
  for (const std::string& v : values) {
    if (out.size() >= want) break;
    Config c = start;
    c[knob] = v;
    if (t.known_to_oom(c)) break;  // explore() stops climbing there too
    out.push_back({c, why, 0});
  }
  return out;
}

}  // namespace profile_train::tuner
