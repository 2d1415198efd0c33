// diff_reports: two typed reports into the diff document (analysis/diff.h).
#include "profile_train/analysis/diff.h"

#include "profile_train/analysis/job.h"
#include "report_context.h"  // r6

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using model::Diff;
using model::DiffCategory;
using model::DiffCopy;
using model::DiffKernel;
using model::DiffOptions;
using model::DiffPair;
using model::DiffRecommendations;
using model::DiffSide;
using model::KernelPresence;

namespace {

DiffPair pair_of(std::optional<double> a, std::optional<double> b) {
  return {a, b, a && b ? std::optional<double>(*b - *a) : std::nullopt};
}

// Kernel name -> ms per step and calls per step, from one report's top list.
struct KernelRow {
  double ms_per_step = 0;
  std::optional<double> count_per_step;
};
std::map<std::string, KernelRow> kernel_rows(const Report& r) {
  std::map<std::string, KernelRow> rows;
  // top_kernels cover the steady-state steps (all steps in reports without steady_state: count 0 there).
  const int64_t steady = r.steps.steady_state.count > 0 ? r.steps.steady_state.count : r.steps.count;
  const double steps = std::max(1.0, static_cast<double>(steady));
  for (const auto& k : r.gpu.top_kernels) {
    KernelRow& row = rows[k.name];  // duplicates (should not happen) are summed
    row.ms_per_step += k.total_ms / steps;
    row.count_per_step = row.count_per_step.value_or(0) + static_cast<double>(k.count) / steps;
  }
  return rows;
}

const model::CopyDirection* copy_direction(const Report& r, model::CopyDirection model::Memcpy::*dir) {
  return r.gpu.memcpy ? &((*r.gpu.memcpy).*dir) : nullptr;
}

// One side's window and its kernel time shared with the other side's top-kernel list.
model::DiffWindow window_of(const Report& r, const Report& other) {
  model::DiffWindow w;
  w.steps = r.steps.count;
  w.steady_steps = r.steps.steady_state.count > 0 ? r.steps.steady_state.count : r.steps.count;
  w.mean_ms = r.steps.mean_ms;
  w.stddev_ms = r.steps.stddev_ms;
  if (w.mean_ms && *w.mean_ms > 0) {
    w.window_ms = r6(static_cast<double>(w.steady_steps) * *w.mean_ms);
    if (w.stddev_ms) w.relative_stddev = r6(*w.stddev_ms / *w.mean_ms);
  }
  std::set<std::string> other_names;
  for (const auto& k : other.gpu.top_kernels) other_names.insert(k.name);
  // top_kernels' share is of all kernel time in the window: total / share gives it, also past the top list.
  double listed = 0, shared = 0, share = 0;
  for (const auto& k : r.gpu.top_kernels) {
    listed += k.total_ms;
    if (other_names.count(k.name)) shared += k.total_ms;
    if (k.share && *k.share > 0) share += *k.share;
  }
  if (listed > 0) {
    const double all = share > 0 ? listed / std::min(1.0, share) : listed;
    w.kernel_ms = r6(all);
    w.shared_kernel_fraction = r6(shared / all);
  }
  return w;
}

// The neutral rule (model/diff.h) over the two mean steps and their spreads, and the categories that moved.
model::DiffHeadline headline_of(const Report& ra, const Report& rb, const Diff& d) {
  model::DiffHeadline h;
  const auto& a = ra.steps;
  const auto& b = rb.steps;
  if (a.mean_ms && b.mean_ms && *a.mean_ms > 0 && *b.mean_ms > 0) {
    // The uncertainty of each side's mean step: its steps' stddev over the root of their count (the steady ones).
    auto variance_of_mean = [](const model::Steps& s) {
      const double n = static_cast<double>(std::max<int64_t>(1, s.steady_state.count > 0 ? s.steady_state.count : s.count));
      const double sd = s.stddev_ms.value_or(0.0);
      return sd * sd / n;
    };
    const double se = std::sqrt(variance_of_mean(a) + variance_of_mean(b)) / *a.mean_ms;
    const double change = *b.mean_ms / *a.mean_ms - 1;
    const double threshold = std::max(model::kNeutralFloor, model::kNeutralSpreads * se);
    h.relative_change = r6(change);
    h.threshold = r6(threshold);
    h.step_time = std::fabs(change) <= threshold ? model::StepChange::kNeutral
                  : change < 0                   ? model::StepChange::kFaster
                                                 : model::StepChange::kSlower;
    std::vector<std::pair<double, Role>> moved;
    for (const DiffCategory& c : d.breakdown)
      if (c.delta_ms && std::fabs(*c.delta_ms) >= model::kMaterialShare * *a.mean_ms)
        moved.emplace_back(std::fabs(*c.delta_ms), c.role);
    std::stable_sort(moved.begin(), moved.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
    for (const auto& [_, role] : moved) h.changed_categories.push_back(role);
  }
  return h;
}

// The index of the rank with the longest mean step (the job's step time), if any has one.
std::optional<size_t> slowest_of(const std::vector<model::RankReport>& ranks) {
  std::optional<size_t> slow;
  for (size_t i = 0; i < ranks.size(); ++i) {
    const auto& m = ranks[i].report.steps.mean_ms;
    if (m && *m > 0 && (!slow || *m > *ranks[*slow].report.steps.mean_ms)) slow = i;
  }
  return slow;
}

}  // namespace

Diff diff_reports(const Report& a, const Report& b, const std::string& label_a, const std::string& label_b,
                  const DiffOptions& options) {
  Diff d;
  auto side = [](const Report& r, const std::string& label) {
    return DiffSide{label, r.verdict.bottleneck, r.verdict.confidence, r.verdict.summary, r.steps.count,
                    r.device ? r.device->name.value_or("") : std::string()};
  };
  d.a = side(a, label_a);
  d.b = side(b, label_b);

  const auto ma = a.steps.mean_ms;
  const auto mb = b.steps.mean_ms;
  d.step_time.a_ms = ma;
  d.step_time.b_ms = mb;
  if (ma && mb) {
    d.step_time.delta_ms = *mb - *ma;
    // A 0 ms mean step (a trace without a step window) has no meaningful ratio: both stay null.
    if (*ma > 0 && *mb > 0) {
      d.step_time.ratio = *mb / *ma;
      d.step_time.speedup = *ma / *mb;
    }
  }
  d.gpu_utilization = pair_of(a.gpu.utilization, b.gpu.utilization);

  for (Role role : kAllRoles) {
    auto ms_of = [&](const Report& r, std::optional<double> mean) -> std::optional<double> {
      if (auto v = r.breakdown_ms[role]) return v;
      if (auto f = r.breakdown[role]; f && mean) return *f * *mean;
      return std::nullopt;
    };
    const DiffPair ms = pair_of(ms_of(a, ma), ms_of(b, mb));
    d.breakdown.push_back({role, ms.a, ms.b, ms.delta, a.breakdown[role], b.breakdown[role]});
  }

  // Kernels: union of both top lists, ordered by |change in ms per step|.
  const auto ka = kernel_rows(a), kb = kernel_rows(b);
  std::set<std::string> names;
  for (const auto& [n, _] : ka) names.insert(n);
  for (const auto& [n, _] : kb) names.insert(n);
  std::vector<std::pair<double, DiffKernel>> ks;
  for (const auto& n : names) {
    DiffKernel k;
    k.name = n;
    if (auto it = ka.find(n); it != ka.end()) k.a_ms_per_step = it->second.ms_per_step, k.a_count_per_step = it->second.count_per_step;
    if (auto it = kb.find(n); it != kb.end()) k.b_ms_per_step = it->second.ms_per_step, k.b_count_per_step = it->second.count_per_step;
    k.delta_ms_per_step = pair_of(k.a_ms_per_step, k.b_ms_per_step).delta;
    k.presence = k.a_ms_per_step && k.b_ms_per_step ? KernelPresence::kInBoth
                 : k.a_ms_per_step                  ? KernelPresence::kOnlyInATop
                                                    : KernelPresence::kOnlyInBTop;
    // A kernel missing from one top list changed by at least its time in the other.
    const double magnitude = std::fabs(k.b_ms_per_step.value_or(0) - k.a_ms_per_step.value_or(0));
    ks.emplace_back(magnitude, std::move(k));
  }
  std::stable_sort(ks.begin(), ks.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; i < ks.size() && static_cast<int>(i) < options.top; ++i) d.kernels.push_back(std::move(ks[i].second));

  using model::CopyDirection;
  using model::Memcpy;
  static const std::pair<const char*, CopyDirection Memcpy::*> kDirections[] = {
      {"h2d", &Memcpy::h2d}, {"d2h", &Memcpy::d2h}, {"d2d", &Memcpy::d2d}};
  for (const auto& [dir, member] : kDirections) {
    const CopyDirection* ca = copy_direction(a, member);
    const CopyDirection* cb = copy_direction(b, member);
    if (!ca && !cb) continue;
    // A direction without copies in either run is noise in a "what changed" list.
    auto none = [](const CopyDirection* c) { return !c || c->count_per_step == 0.0; };
    if (none(ca) && none(cb)) continue;
    // A side without the direction (no memcpy section) is null, not 0.
    auto field = [](const CopyDirection* c, double CopyDirection::*f) { return c ? std::optional<double>(c->*f) : std::nullopt; };
    auto optional_field = [](const CopyDirection* c, std::optional<double> CopyDirection::*f) {
      return c ? c->*f : std::nullopt;
    };
    DiffCopy e;
    e.direction = dir;
    e.a_ms_per_step = field(ca, &CopyDirection::time_ms_per_step);
    e.b_ms_per_step = field(cb, &CopyDirection::time_ms_per_step);
    e.delta_ms_per_step = pair_of(e.a_ms_per_step, e.b_ms_per_step).delta;
    e.a_bytes_per_step = field(ca, &CopyDirection::bytes_per_step);
    e.b_bytes_per_step = field(cb, &CopyDirection::bytes_per_step);
    e.a_count_per_step = field(ca, &CopyDirection::count_per_step);
    e.b_count_per_step = field(cb, &CopyDirection::count_per_step);
    e.a_bandwidth_gbps = optional_field(ca, &CopyDirection::bandwidth_gbps);
    e.b_bandwidth_gbps = optional_field(cb, &CopyDirection::bandwidth_gbps);
    e.a_pageable_fraction = optional_field(ca, &CopyDirection::pageable_fraction);
    e.b_pageable_fraction = optional_field(cb, &CopyDirection::pageable_fraction);
    d.copies.push_back(std::move(e));
  }
  std::stable_sort(d.copies.begin(), d.copies.end(), [](const DiffCopy& x, const DiffCopy& y) {
    return std::fabs(x.delta_ms_per_step.value_or(0)) > std::fabs(y.delta_ms_per_step.value_or(0));
  });

  auto rec_ids = [](const Report& r) {
    std::vector<std::string> ids;
    for (const auto& rec : r.recommendations) ids.push_back(rec.id);
    return ids;
  };
  DiffRecommendations& recs = d.recommendations;
  recs.a = rec_ids(a);
  recs.b = rec_ids(b);
  for (const auto& id : recs.a)
    if (std::find(recs.b.begin(), recs.b.end(), id) == recs.b.end()) recs.resolved.push_back(id);
  for (const auto& id : recs.b)
    if (std::find(recs.a.begin(), recs.a.end(), id) == recs.a.end()) recs.added.push_back(id);
  d.comparability.a = window_of(a, b);
  d.comparability.b = window_of(b, a);
  d.headline = headline_of(a, b, d);
  return d;
}

RankPairs pair_ranks(const std::vector<RankReport>& a, const std::vector<RankReport>& b) {
  auto recorded = [](const std::vector<RankReport>& side, std::map<int64_t, size_t>& out) {
    for (size_t i = 0; i < side.size(); ++i) {
      const auto& d = side[i].report.source.distributed;
      if (!d || !d->rank || !out.emplace(*d->rank, i).second) return false;
    }
    return true;
  };
  RankPairs out;
  std::map<int64_t, size_t> ra, rb;
  if (recorded(a, ra) && recorded(b, rb)) {
    out.pairing = model::RankPairing::kByRank;
    std::set<int64_t> keys;
    for (const auto& [k, _] : ra) keys.insert(k);
    for (const auto& [k, _] : rb) keys.insert(k);
    for (int64_t k : keys) {
      RankPair p;
      p.rank = k;
      if (auto it = ra.find(k); it != ra.end()) p.a = it->second;
      if (auto it = rb.find(k); it != rb.end()) p.b = it->second;
      out.pairs.push_back(p);
    }
    return out;
  }
  out.pairing = model::RankPairing::kByOrder;
  for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    RankPair p;
    p.rank = static_cast<int64_t>(i);
    if (i < a.size()) p.a = i;
    if (i < b.size()) p.b = i;
    out.pairs.push_back(p);
  }
  return out;
}

model::JobDiff diff_jobs(const model::JobFolder& a, const model::JobFolder& b, const std::string& label_a,
                         const std::string& label_b, const DiffOptions& options) {
  model::JobDiff d;
  const RankPairs pairs = pair_ranks(a.ranks, b.ranks);
  d.pairing = pairs.pairing;
  auto key_of = [&](bool side_a, size_t index) {
    for (const RankPair& p : pairs.pairs)
      if ((side_a ? p.a : p.b) == index) return p.rank;
    return static_cast<int64_t>(index);
  };
  auto side = [&](const model::JobFolder& job, const std::string& label, bool side_a) {
    model::JobDiffSide s;
    s.label = label;
    s.ranks = static_cast<int64_t>(job.ranks.size());
    s.from_job_json = job.summary.has_value();
    s.summary = job.summary ? *job.summary : summarize_job(job.ranks);
    if (auto slow = slowest_of(job.ranks)) {
      s.slowest_rank = key_of(side_a, *slow);
      s.slowest_label = job.ranks[*slow].file;
      s.step_ms = job.ranks[*slow].report.steps.mean_ms;
    }
    return s;
  };
  d.a = side(a, label_a, true);
  d.b = side(b, label_b, false);
  // The job's figures are its slowest rank's; a side without step times stands on its first rank.
  const size_t sa = slowest_of(a.ranks).value_or(0), sb = slowest_of(b.ranks).value_or(0);
  static const Report kEmpty;
  d.slowest = diff_reports(a.ranks.empty() ? kEmpty : a.ranks[sa].report, b.ranks.empty() ? kEmpty : b.ranks[sb].report,
                           label_a, label_b, options);
  for (const RankPair& p : pairs.pairs) {
    if (p.a && p.b) {
      d.ranks.push_back({p.rank, diff_reports(a.ranks[*p.a].report, b.ranks[*p.b].report, a.ranks[*p.a].file,
                                              b.ranks[*p.b].file, options)});
    } else if (p.a) {
      d.only_in_a.push_back({p.rank, a.ranks[*p.a].file});
    } else if (p.b) {
      d.only_in_b.push_back({p.rank, b.ranks[*p.b].file});
    }
  }
  return d;
}

}  // namespace profile_train::analysis
