// summarize_job(): per-rank figures of a multi-rank job and the straggler, from the ranks' typed reports.
#include "profile_train/analysis/job.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include "profile_train/common/format.h"
#include "report_context.h"  // r6, median

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

std::string fmt(const char* f, double v) { return format_printf(f, v); }

struct Rank {
  int64_t rank = -1;
  std::string file;
  double step = 0, input = 0, compute = 0, comm = 0, work = 0;
  bool ok = false;            // has a step time
  bool comm_measured = true;  // false: the collectives' wait is inside compute (see REPORT_FORMAT.md)
  Bottleneck verdict = Bottleneck::kUnknown;
};

Rank read_rank(const RankReport& rr, int64_t index) {
  Rank k;
  const Report& r = rr.report;
  k.file = rr.file;
  k.rank = r.source.distributed && r.source.distributed->rank ? *r.source.distributed->rank : index;
  k.verdict = r.verdict.bottleneck;
  if (!r.steps.mean_ms || *r.steps.mean_ms <= 0) return k;
  k.step = *r.steps.mean_ms;
  k.input = r.breakdown_ms.value_or_zero(Role::kDataLoading);
  // Exposed communication: collectives not overlapped by compute (GPU), else CPU collectives (gloo).
  k.comm_measured = r.communication.measured;
  k.comm = r.communication.exposed_fraction ? *r.communication.exposed_fraction * k.step
                                             : r.breakdown_ms.value_or_zero(Role::kCommunication);
  k.work = std::max(0.0, k.step - k.comm);
  k.compute = std::max(0.0, k.work - k.input);
  k.ok = true;
  return k;
}

JobRank row_of(const Rank& k) {
  JobRank row;
  row.rank = k.rank;
  row.file = k.file;
  row.verdict = k.verdict;
  if (!k.ok) return row;
  row.mean_step_ms = r6(k.step);
  row.input_ms = r6(k.input);
  row.compute_ms = r6(k.compute);
  if (k.comm_measured) row.communication_wait_ms = r6(k.comm);
  row.work_ms = r6(k.work);
  return row;
}

// The median of `value` over the ranks other than `slow` (with two ranks, the median of both would halve the gap).
template <class F>
double others_median(const std::vector<const Rank*>& ok, const Rank* slow, F value) {
  std::vector<double> v;
  for (const Rank* k : ok)
    if (k != slow) v.push_back(value(*k));
  return median(std::move(v));
}

// Without measured communication a synchronous job's ranks have the same step time and the wait for a slow
// rank hides in the others' compute (their backward holds the all-reduce). Data loading is the one phase that
// stays local to a rank, so only an input straggler can be named; anything else is "unknown", not "balanced".
void summarize_unmeasured(const std::vector<const Rank*>& ok, double med_step, JobSummary& out) {
  const Rank* slow = *std::max_element(ok.begin(), ok.end(), [](const Rank* a, const Rank* b) { return a->input < b->input; });
  const double excess = slow->input - others_median(ok, slow, [](const Rank& k) { return k.input; });
  if (med_step > 0 && excess >= kStragglerShare * med_step) {
    out.verdict = JobVerdict::kStraggler;
    out.slowest_rank = slow->rank;
    out.straggler = Straggler{slow->rank, slow->file, StragglerPhase::kInput, r6(excess), r6(excess), std::nullopt};
    out.summary = "Straggler: rank " + std::to_string(slow->rank) + " waits " + fmt("%.1f", excess) +
                  " ms per step longer for its data than the other ranks (" + fmt("%.1f%%", 100.0 * excess / med_step) +
                  " of the step), and they wait for it in their collectives. Communication was not measured.";
  } else {
    out.verdict = JobVerdict::kUnknown;
    out.summary = "Communication was not measured, so a rank's compute cannot be told from its wait for the "
                  "others; no rank's data loading holds the others back (largest excess " +
                  fmt("%.1f", std::max(0.0, excess)) + " ms per step).";
  }
}

}  // namespace

bool is_one_job(const std::vector<RankReport>& reports) {
  if (reports.size() < 2) return false;
  std::set<int64_t> ranks;
  std::optional<int64_t> world;
  for (const auto& r : reports) {
    const auto& d = r.report.source.distributed;
    if (!d || !d->rank || !d->world_size) return false;
    if (world && *world != *d->world_size) return false;
    world = d->world_size;
    if (!ranks.insert(*d->rank).second) return false;
  }
  return true;
}

JobSummary summarize_job(const std::vector<RankReport>& reports) {
  JobSummary out;
  std::vector<Rank> ranks;
  for (size_t i = 0; i < reports.size(); ++i) ranks.push_back(read_rank(reports[i], static_cast<int64_t>(i)));
  std::vector<const Rank*> ok;
  for (const auto& k : ranks) {
    out.ranks.push_back(row_of(k));
    if (k.ok) ok.push_back(&k);
  }
  if (ok.size() < 2) {
    out.summary = "Cannot compare ranks: fewer than two ranks have a step time.";
    return out;
  }
  std::vector<double> steps, comms;
  for (const Rank* k : ok) {
    steps.push_back(k->step);
    comms.push_back(k->comm);
  }
  const double med_step = median(steps);
  const bool comm_measured = std::all_of(ok.begin(), ok.end(), [](const Rank* k) { return k->comm_measured; });
  out.communication_measured = comm_measured;
  if (!comm_measured) {
    summarize_unmeasured(ok, med_step, out);
    return out;
  }
  const auto [smin, smax] = std::minmax_element(steps.begin(), steps.end());
  const auto [cmin, cmax] = std::minmax_element(comms.begin(), comms.end());
  if (med_step > 0) out.step_skew = r6((*smax - *smin) / med_step);
  out.communication_skew_ms = r6(*cmax - *cmin);
  const Rank* slow = *std::max_element(ok.begin(), ok.end(), [](const Rank* a, const Rank* b) { return a->work < b->work; });
  const double med_work = others_median(ok, slow, [](const Rank& k) { return k.work; });
  out.slowest_rank = slow->rank;
  if (med_work > 0) out.slowdown = r6(slow->work / med_work);
  const double excess = slow->work - med_work;
  if (med_step <= 0 || excess < kStragglerShare * med_step) {
    out.verdict = JobVerdict::kBalanced;
    out.summary = "Balanced: the busiest rank (" + std::to_string(slow->rank) + ") works " + fmt("%.1f", excess) +
                  " ms per step more than the other ranks' median (" +
                  fmt("%.1f%%", 100.0 * excess / std::max(med_step, 1e-9)) + " of the step, threshold " +
                  fmt("%.0f%%", 100.0 * kStragglerShare) + ").";
    return out;
  }
  // Which phase makes it slow: its excess over the other ranks' median, per phase.
  const double in_x = slow->input - others_median(ok, slow, [](const Rank& k) { return k.input; });
  const double compute_x = slow->compute - others_median(ok, slow, [](const Rank& k) { return k.compute; });
  const StragglerPhase phase = in_x >= compute_x ? StragglerPhase::kInput : StragglerPhase::kCompute;
  const double phase_x = std::max(in_x, compute_x);
  out.verdict = JobVerdict::kStraggler;
  out.straggler = Straggler{slow->rank, slow->file, phase, r6(excess), r6(phase_x), r6(median(comms) - slow->comm)};
  out.summary = "Straggler: rank " + std::to_string(slow->rank) + " holds the others back by " + fmt("%.1f", excess) +
                " ms per step (" + fmt("%.2fx", slow->work / std::max(med_work, 1e-9)) +
                " the other ranks' median work); its " +
                (phase == StragglerPhase::kInput ? "data loading" : "compute") + " takes " + fmt("%.1f", phase_x) +
                " ms more than the other ranks', and they wait for it in their collectives.";
  return out;
}

}  // namespace profile_train::analysis
