// summarize_job(): per-rank figures of a multi-rank job and the straggler, from the ranks' reports.
#include "profile_train/analysis/job.h"

#include <algorithm>
#include <vector>
#include <cmath>
#include <cstdio>

#include "profile_train/common/json_path.h"
#include "profile_train/common/vocabulary.h"

namespace profile_train::analysis {

using nlohmann::json;

namespace {

double r6(double x) { return std::isfinite(x) ? std::round(x * 1e6) / 1e6 : 0.0; }

double median(std::vector<double> v) {
  if (v.empty()) return 0.0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

struct Rank {
  int64_t rank = -1;
  std::string file;
  double step = 0, input = 0, compute = 0, comm = 0, work = 0;
  bool ok = false;
  bool comm_measured = true;  // false: the collectives' wait is inside compute (see REPORT_FORMAT.md)
  std::string verdict;
};

Rank read_rank(const RankReport& rr, int64_t index) {
  Rank k;
  const json& r = rr.report;
  k.file = rr.file;
  k.rank = static_cast<int64_t>(number_path(r, {"source", "distributed", "rank"}).value_or(double(index)));
  k.verdict = string_path(r, {"verdict", "bottleneck"}).value_or("unknown");
  const auto step = number_path(r, {"steps", "mean_ms"});
  if (!step || *step <= 0) return k;
  k.step = *step;
  auto role = [&](Role name) { return number_path(r, {"breakdown_ms", name_of(name)}).value_or(0.0); };
  k.input = role(Role::kDataLoading);
  // Exposed communication: collectives not overlapped by compute (GPU), else CPU collectives (gloo).
  const auto exposed = number_path(r, {"communication", "exposed_fraction"});
  const json* measured = r.contains("communication") && r["communication"].is_object() &&
                                 r["communication"].contains("measured")
                             ? &r["communication"]["measured"]
                             : nullptr;
  k.comm_measured = measured == nullptr || !measured->is_boolean() || measured->get<bool>();
  k.comm = exposed ? *exposed * k.step : role(Role::kCommunication);
  k.work = std::max(0.0, k.step - k.comm);
  k.compute = std::max(0.0, k.work - k.input);
  k.ok = true;
  return k;
}

// Without measured communication a synchronous job's ranks have the same step time and the wait for a slow
// rank hides in the others' compute (their backward holds the all-reduce). Data loading is the one phase that
// stays local to a rank, so only an input straggler can be named; anything else is "unknown", not "balanced".
json summarize_unmeasured(const std::vector<const Rank*>& ok, double med_step, json out) {
  const Rank* slow = *std::max_element(ok.begin(), ok.end(), [](const Rank* a, const Rank* b) { return a->input < b->input; });
  std::vector<double> in_others;
  for (const Rank* k : ok)
    if (k != slow) in_others.push_back(k->input);
  const double excess = slow->input - median(in_others);
  if (med_step > 0 && excess >= kStragglerShare * med_step) {
    out["verdict"] = "straggler";
    out["slowest_rank"] = slow->rank;
    out["straggler"] = {{"rank", slow->rank}, {"file", slow->file}, {"phase", "input"}, {"excess_ms", r6(excess)},
                        {"phase_excess_ms", r6(excess)}, {"others_wait_ms", nullptr}};
    out["summary"] = "Straggler: rank " + std::to_string(slow->rank) + " waits " + fmt("%.1f", excess) +
                     " ms per step longer for its data than the other ranks (" +
                     fmt("%.1f%%", 100.0 * excess / med_step) +
                     " of the step), and they wait for it in their collectives. Communication was not measured.";
  } else {
    out["verdict"] = "unknown";
    out["summary"] = "Communication was not measured, so a rank's compute cannot be told from its wait for the "
                     "others; no rank's data loading holds the others back (largest excess " +
                     fmt("%.1f", std::max(0.0, excess)) + " ms per step).";
  }
  return out;
}

}  // namespace

json summarize_job(const std::vector<RankReport>& reports) {
  json out = {{"ranks", json::array()}, {"slowest_rank", nullptr}, {"slowdown", nullptr}, {"step_skew", nullptr},
              {"communication_skew_ms", nullptr}, {"straggler", nullptr}, {"verdict", "unknown"},
              {"straggler_threshold", kStragglerShare}, {"summary", ""}};
  try {
    std::vector<Rank> ranks;
    for (size_t i = 0; i < reports.size(); ++i) ranks.push_back(read_rank(reports[i], static_cast<int64_t>(i)));
    std::vector<const Rank*> ok;
    for (const auto& k : ranks) {
      out["ranks"].push_back({{"rank", k.rank},
                              {"file", k.file},
                              {"verdict", k.verdict},
                              {"mean_step_ms", k.ok ? json(r6(k.step)) : json(nullptr)},
                              {"input_ms", k.ok ? json(r6(k.input)) : json(nullptr)},
                              {"compute_ms", k.ok ? json(r6(k.compute)) : json(nullptr)},
                              {"communication_wait_ms", k.ok && k.comm_measured ? json(r6(k.comm)) : json(nullptr)},
                              {"work_ms", k.ok ? json(r6(k.work)) : json(nullptr)}});
      if (k.ok) ok.push_back(&k);
    }
    if (ok.size() < 2) {
      out["summary"] = "Cannot compare ranks: fewer than two ranks have a step time.";
      return out;
    }
    std::vector<double> steps, comms;
    for (const Rank* k : ok) {
      steps.push_back(k->step);
      comms.push_back(k->comm);
    }
    const double med_step = median(steps);
    const bool comm_measured = std::all_of(ok.begin(), ok.end(), [](const Rank* k) { return k->comm_measured; });
    out["communication_measured"] = comm_measured;
    if (!comm_measured) return summarize_unmeasured(ok, med_step, out);
    const auto [smin, smax] = std::minmax_element(steps.begin(), steps.end());
    const auto [cmin, cmax] = std::minmax_element(comms.begin(), comms.end());
    out["step_skew"] = med_step > 0 ? json(r6((*smax - *smin) / med_step)) : json(nullptr);
    out["communication_skew_ms"] = r6(*cmax - *cmin);
    const Rank* slow = *std::max_element(ok.begin(), ok.end(), [](const Rank* a, const Rank* b) { return a->work < b->work; });
    // Compared with the other ranks (with two ranks, the median of both would halve the gap).
    std::vector<double> other_works;
    for (const Rank* k : ok)
      if (k != slow) other_works.push_back(k->work);
    const double med_work = median(other_works);
    out["slowest_rank"] = slow->rank;
    out["slowdown"] = med_work > 0 ? json(r6(slow->work / med_work)) : json(nullptr);
    const double excess = slow->work - med_work;
    if (med_step <= 0 || excess < kStragglerShare * med_step) {
      out["verdict"] = "balanced";
      out["summary"] = "Balanced: the busiest rank (" + std::to_string(slow->rank) + ") works " +
                       fmt("%.1f", excess) + " ms per step more than the other ranks' median (" +
                       fmt("%.1f%%", 100.0 * excess / std::max(med_step, 1e-9)) + " of the step, threshold " +
                       fmt("%.0f%%", 100.0 * kStragglerShare) + ").";
      return out;
    }
    // Which phase makes it slow: its excess over the other ranks' median, per phase.
    std::vector<double> in_others, compute_others;
    for (const Rank* k : ok)
      if (k != slow) {
        in_others.push_back(k->input);
        compute_others.push_back(k->compute);
      }
    const double in_x = slow->input - median(in_others), compute_x = slow->compute - median(compute_others);
    const char* phase = in_x >= compute_x ? "input" : "compute";
    const double phase_x = std::max(in_x, compute_x);
    out["verdict"] = "straggler";
    out["straggler"] = {{"rank", slow->rank},
                        {"file", slow->file},
                        {"phase", phase},
                        {"excess_ms", r6(excess)},
                        {"phase_excess_ms", r6(phase_x)},
                        {"others_wait_ms", r6(median(comms) - slow->comm)}};
    out["summary"] = "Straggler: rank " + std::to_string(slow->rank) + " holds the others back by " +
                     fmt("%.1f", excess) + " ms per step (" + fmt("%.2fx", slow->work / std::max(med_work, 1e-9)) +
                     " the other ranks' median work); its " + (std::string(phase) == "input" ? "data loading" : "compute") +
                     " takes " + fmt("%.1f", phase_x) + " ms more than the other ranks', and they wait for it in their collectives.";
  } catch (const std::exception&) {
    out["verdict"] = "unknown";
  }
  return out;
}

}  // namespace profile_train::analysis
