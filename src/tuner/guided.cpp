// The guided strategy: baseline -> the knob the diagnosis points to -> keep a change only when it beats the
// noise -> re-diagnose from the new best -> ... until no knob helps or the budget is spent.
#include <map>

#include "profile_train/common/format.h"
#include "strategy_util.h"

namespace profile_train::tuner::detail {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

class GuidedStrategy : public Strategy {
 public:
  void search(Tuner& t) override {
    Config base = baseline_config(t.space());
    int b = t.evaluate_batch({{base, "baseline", t.options().baseline_repeats}}).front();
    if (b < 0) return;
    // A baseline that runs out of memory: halve the batch until it fits (the search adapts).
    const KnobRange* batch = t.range(KnobName::kBatchSize);
    while (memory_failure(t.trial(b)) && batch != nullptr) {
      const long long cur = config_int(base, KnobName::kBatchSize, 0);
      long long smaller = 0;
      for (long long v : ladder(*batch, cur)) {
        if (v < cur) smaller = v;
      }
      if (smaller <= 0 && batch->is_auto && cur > 1) smaller = cur / 2;
      if (smaller <= 0) break;
      base[KnobName::kBatchSize] = std::to_string(smaller);
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
      for (const DiagnosedKnob& d : knob_order(t, best.report)) {
        if (std::find(explored.begin(), explored.end(), d.knob) == explored.end()) {
          knob = d.knob;
          why = d.source;
          break;
        }
      }
      if (knob.empty()) {
        t.note("no knob left to try at the best configuration: search finished");
        return;
      }
      const std::string bottleneck(name_of(best.diagnosis ? best.diagnosis->bottleneck : Bottleneck::kUnknown));
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
  static std::vector<DiagnosedKnob> knob_order(const Tuner& t, const std::optional<model::Report>& report) {
    std::vector<DiagnosedKnob> out;
    auto add = [&](const std::string& k, const std::string& why) {
      if (t.range(k) == nullptr) return;
      for (const DiagnosedKnob& d : out) {
        if (d.knob == k) return;
      }
      out.push_back({k, why});
    };
    for (const DiagnosedKnob& d : diagnosed_knobs(report)) add(d.knob, d.source);
    for (const KnobRange& r : t.space()) add(r.def->name, "not pointed to by the diagnosis; checked last");
    return out;
  }

  // Knobs named by a report's recommendations (not the verdict's broader list), in order.
  static std::vector<std::string> recommended_knobs(const std::optional<model::Report>& report) {
    std::vector<std::string> out;
    for (const DiagnosedKnob& d : diagnosed_knobs(report, DiagnosisScope::kRecommendations)) out.push_back(d.knob);
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
  static int combined_move(Tuner& t, int plateau, const std::string& knob, int reference) {
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
                               ") did not pay on its own; its diagnosis recommends " + j + " -> " + j + "=" + next,
                        0, reference);
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
      return t.evaluate(c, why, 0, local);  // each run right after a run of the local best
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
        const int c = combined_move(t, i, knob, local);
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
      if (knob == KnobName::kBatchSize && oom_at > 0 && r->is_auto) {
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
             format_fixed(a.mean) + " vs " + format_fixed(b.mean) + " (+" +
             format_fixed(100.0 * (t.ratio(local, t.best()) - 1.0)) + "%)");
      t.set_best(local);
    } else {
      t.note("no significant gain from " + knob + "; keeping " + knob + "=" +
             (start.count(knob) ? start.at(knob) : std::string("(unset)")));
    }
  }
};

}  // namespace

std::unique_ptr<Strategy> make_guided_strategy() { return std::make_unique<GuidedStrategy>(); }

}  // namespace profile_train::tuner::detail
