// summarize_job(): per-rank figures of a multi-rank job and the straggler, from the ranks' typed reports.
#include "profile_train/analysis/job.h"

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

#include <map>
#include <tuple>
#include <unordered_map>

#include "profile_train/analysis/collectives.h"
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

Rank read_rank(const RankFacts& f, int64_t index) {
  Rank k;
  k.file = f.file;
  k.rank = f.rank ? *f.rank : index;
  k.verdict = f.verdict;
  if (!f.mean_step_ms || *f.mean_step_ms <= 0) return k;
  k.step = *f.mean_step_ms;
  k.input = f.input_ms;
  // Exposed communication: collectives not overlapped by compute (GPU), else CPU collectives (gloo).
  k.comm_measured = f.communication_measured;
  k.comm = f.exposed_fraction ? *f.exposed_fraction * k.step : f.communication_ms;
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

// Where rank `k` is slower than the other ranks' median (its input or its compute), or nullopt when neither.
std::optional<StragglerPhase> slower_phase(const std::vector<const Rank*>& ok, const Rank* k) {
  if (!k->ok || ok.size() < 2) return std::nullopt;
  const double in_x = k->input - others_median(ok, k, [](const Rank& r) { return r.input; });
  const double compute_x = k->compute - others_median(ok, k, [](const Rank& r) { return r.compute; });
  const double floor = 0.01 * k->step;  // within 1% of the step: no phase is slower
  if (in_x <= floor && compute_x <= floor) return std::nullopt;
  return in_x >= compute_x ? StragglerPhase::kInput : StragglerPhase::kCompute;
}

// The others' wait in collectives, as a share of the median step, from which the rank they wait for is named.
constexpr double kNamedWaitShare = 0.05;
// A collective's ranks whose durations differ by less than this share of its transfer (plus 1 us): none was last.
constexpr double kTieShare = 0.02;

const char* phase_words(StragglerPhase p) { return p == StragglerPhase::kInput ? "data loading" : "compute"; }

// The collectives matched across the ranks: by process group and sequence number where every rank recorded them,
// else by process group (kind, without one) and order within each step. A matched collective's transfer is its
// shortest duration (the last rank to arrive waits for nobody), each rank's wait its duration minus that.
std::optional<JobCollectives> match_collectives(const std::vector<RankFacts>& reports, const std::vector<Rank>& ranks,
                                                const std::vector<const Rank*>& ok) {
  std::vector<size_t> with;  // reports with collectives to match
  int64_t with_seq = 0, without_seq = 0;
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& c = reports[i].collectives;
    if (c.empty()) continue;
    with.push_back(i);
    for (const auto& in : c) ++(in.seq >= 0 && !in.process_group.empty() ? with_seq : without_seq);
  }
  if (with.size() < 2) return std::nullopt;
  struct Seen {
    std::vector<std::pair<size_t, const CollectiveInstance*>> at;  // (report index, instance)
  };
  std::unordered_map<std::string, Seen> by_key;
  std::vector<std::string> order;  // keys in first-seen order (deterministic rows)
  for (size_t i : with) {
    // Without a sequence number, a collective is the k-th of its kind, group and size in its step: a call's size
    // (nccl-tests' S) is the same on every rank, except an all_to_all's, whose splits may differ. Ranks whose traces
    // hold different collectives (sampled, trimmed) then match only the calls that agree.
    std::map<std::string, int64_t> nth;
    for (const auto& in : reports[i].collectives) {
      std::string key = in.kind + '\x1f' + (in.process_group.empty() ? std::string("?") : in.process_group) + '\x1f';
      if (in.seq >= 0 && !in.process_group.empty()) {
        key += "seq " + std::to_string(in.seq);  // the same on every rank of the group
      } else {
        key += in.step + '\x1f';
        if (in.kind != "all_to_all" && in.bytes) key += std::to_string(*in.bytes) + " B\x1f";
        key += std::to_string(nth[key]++);
      }
      auto [it, fresh] = by_key.try_emplace(key);
      if (fresh) order.push_back(key);
      it->second.at.emplace_back(i, &in);
    }
  }
  JobCollectives out;
  out.matched_by = without_seq == 0 ? "process group and sequence number"
                  : with_seq == 0  ? "process group and order in each step"
                                   : "process group and sequence number (order in each step where none was recorded)";
  struct Acc {
    JobCollectiveRow row;
    double bytes = 0, transfer_ns = 0, wait_ns = 0, dur_ns = 0, sized_transfer_ns = 0;
    int64_t sized = 0;
    std::set<int64_t> steps;
    std::map<size_t, std::pair<double, int64_t>> wait_by_report;  // report -> (wait ns, calls)
    std::map<size_t, int64_t> last;                                // report -> times it arrived last
    std::set<size_t> ran;
    int32_t n = -1;
  };
  std::map<std::tuple<std::string, std::string, std::string>, Acc> rows;
  std::map<size_t, double> wait_total;  // report -> ns waited over all matched collectives
  std::map<size_t, double> waited_for;  // report -> ns the others waited for it where it arrived last
  double transfer_total = 0;
  std::set<std::pair<size_t, int64_t>> steps_seen;  // (report, step) with a matched collective
  for (const std::string& key : order) {
    const Seen& s = by_key[key];
    std::set<size_t> reps;
    for (const auto& [ri, in] : s.at) reps.insert(ri);
    if (reps.size() < 2 || reps.size() != s.at.size()) {  // on one rank only, or twice on one rank: not matched
      out.unmatched += static_cast<int64_t>(s.at.size());
      continue;
    }
    ++out.matched;
    const CollectiveInstance* first = s.at.front().second;
    size_t last_ri = s.at.front().first;
    int64_t transfer = INT64_MAX;
    for (const auto& [ri, in] : s.at)
      if (in->dur_ns < transfer) transfer = in->dur_ns, last_ri = ri;
    const std::string bucket = size_bucket(first->bytes);
    const auto rkey = std::make_tuple(first->kind, first->process_group, bucket);
    auto [ait, fresh] = rows.try_emplace(rkey);
    Acc& a = ait->second;
    if (fresh) {
      a.row.kind = first->kind;
      if (!first->process_group.empty()) a.row.process_group = first->process_group;
      a.row.size_bucket = bucket;
    }
    if (a.n < 0) a.n = first->group_size;
    ++a.row.matched;
    a.transfer_ns += static_cast<double>(transfer);
    if (first->bytes) {
      a.bytes += static_cast<double>(*first->bytes);
      a.sized_transfer_ns += static_cast<double>(transfer);
      ++a.sized;
    }
    // The last rank to arrive, where anyone waited for it (equal durations: nobody was last).
    int64_t longest = 0;
    for (const auto& [ri, in] : s.at) longest = std::max(longest, in->dur_ns);
    if (static_cast<double>(longest - transfer) > kTieShare * static_cast<double>(transfer) + 1000.0) ++a.last[last_ri];
    transfer_total += static_cast<double>(transfer);
    double waited = 0;
    for (const auto& [ri, in] : s.at) {
      const double w = static_cast<double>(in->dur_ns - transfer);
      waited += w;
      a.wait_ns += w;
      a.dur_ns += static_cast<double>(in->dur_ns);
      auto& wr = a.wait_by_report[ri];
      wr.first += w;
      ++wr.second;
      a.ran.insert(ri);
      a.steps.insert(in->step_index);
      wait_total[ri] += w;
      steps_seen.insert({ri, in->step_index});
    }
    waited_for[last_ri] += waited;  // the rank the others wait for: where it arrives last, the waits add up
  }
  if (out.matched == 0) {
    out.summary = "No collective could be matched across the ranks (" + std::to_string(out.unmatched) +
                  " seen on one rank only).";
    return out;
  }
  // Steps per rank with a matched collective: the per-step figures' denominator.
  std::map<size_t, int64_t> nsteps;
  for (const auto& [ri, st] : steps_seen) ++nsteps[ri];
  double steps_mean = 0;
  for (const auto& [ri, n] : nsteps) steps_mean += static_cast<double>(n);
  steps_mean /= static_cast<double>(std::max<size_t>(1, nsteps.size()));
  auto rank_of = [&](size_t ri) { return ranks[ri].rank; };
  std::vector<JobCollectiveRow> table;
  for (auto& [k, a] : rows) {
    JobCollectiveRow& r = a.row;
    r.ranks = static_cast<int64_t>(a.ran.size());
    const double m = static_cast<double>(r.matched);
    r.calls_per_step = r6(m / std::max(1.0, static_cast<double>(a.steps.size())));
    r.transfer_ms = r6(a.transfer_ns / m / 1e6);
    r.wait_ms = r6(a.wait_ns / (m * static_cast<double>(r.ranks)) / 1e6);
    r.wait_share = a.dur_ns > 0 ? r6(a.wait_ns / a.dur_ns) : 0;
    if (a.sized > 0) {
      r.bytes = static_cast<int64_t>(std::llround(a.bytes / static_cast<double>(a.sized)));
      if (auto f = bus_factor(r.kind, a.n > 0 ? a.n : r.ranks); f && a.sized_transfer_ns > 0)
        r.busbw_gbps = r6(a.bytes / (a.sized_transfer_ns * 1e-9) / 1e9 * *f);
    }
    auto most = std::max_element(a.last.begin(), a.last.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
    if (most != a.last.end()) {
      r.last_rank = rank_of(most->first);
      r.last_rank_share = r6(static_cast<double>(most->second) / m);
      r.last_rank_phase = slower_phase(ok, &ranks[most->first]);
    }
    for (size_t i = 0; i < reports.size(); ++i) {
      auto it = a.wait_by_report.find(i);
      r.wait_ms_by_rank.push_back(it == a.wait_by_report.end() ? 0.0 : r6(it->second.first / static_cast<double>(it->second.second) / 1e6));
    }
    table.push_back(std::move(r));
  }
  std::sort(table.begin(), table.end(), [](const JobCollectiveRow& x, const JobCollectiveRow& y) {
    const double wx = x.wait_ms * static_cast<double>(x.matched), wy = y.wait_ms * static_cast<double>(y.matched);
    return wx != wy ? wx > wy : x.kind < y.kind;
  });
  if (table.size() > 20) table.resize(20);
  double wait_sum = 0;
  for (const auto& [ri, w] : wait_total) wait_sum += w;
  out.wait_ms_per_step = r6(wait_sum / static_cast<double>(with.size()) / std::max(1.0, steps_mean) / 1e6);
  out.transfer_ms_per_step = r6(transfer_total / std::max(1.0, steps_mean) / 1e6);
  auto top = std::max_element(waited_for.begin(), waited_for.end(), [](const auto& x, const auto& y) { return x.second < y.second; });
  std::vector<double> step_ms;
  for (const Rank* k : ok) step_ms.push_back(k->step);
  const double med_step = median(step_ms);
  // A rank is named only when the others' wait for it is material (a balanced job always has a last rank).
  const bool material = med_step <= 0 || out.wait_ms_per_step >= kNamedWaitShare * med_step;
  if (top != waited_for.end() && top->second > 0 && material) {
    out.last_rank = rank_of(top->first);
    out.last_rank_phase = slower_phase(ok, &ranks[top->first]);
  }
  out.rows = std::move(table);
  std::string s = "ranks wait " + fmt("%.3g", out.wait_ms_per_step) + " ms/step in collectives";
  if (!material)
    s += " (under " + fmt("%.0f%%", 100.0 * kNamedWaitShare) + " of the step: no rank holds the others back)";
  if (out.last_rank) {
    s += " for rank " + std::to_string(*out.last_rank);
    s += out.last_rank_phase ? std::string(" (") + phase_words(*out.last_rank_phase) + ")" : std::string(" (no phase of it slower than the others')");
  }
  s += "; transfer " + fmt("%.3g", out.transfer_ms_per_step) + " ms/step";
  if (!out.rows.empty()) {
    const auto& r = out.rows.front();
    s += "; most waited: " + r.kind + (r.bytes ? " " + size_bucket(r.bytes) : std::string()) +
         fmt(" (%.0f%% of its time is waiting)", 100.0 * r.wait_share);
  }
  out.summary = s;
  return out;
}

}  // namespace

namespace {

// The rank facts of a report, its collectives aside.
RankFacts figures_of(std::string file, const Report& r) {
  RankFacts f;
  f.file = std::move(file);
  if (r.source.distributed) {
    f.rank = r.source.distributed->rank;
    f.world_size = r.source.distributed->world_size;
  }
  f.verdict = r.verdict.bottleneck;
  f.mean_step_ms = r.steps.mean_ms;
  f.input_ms = r.breakdown_ms.value_or_zero(Role::kDataLoading);
  f.communication_ms = r.breakdown_ms.value_or_zero(Role::kCommunication);
  f.communication_measured = r.communication.measured;
  f.exposed_fraction = r.communication.exposed_fraction;
  return f;
}

}  // namespace

RankFacts rank_facts(const RankReport& rr) {
  RankFacts f = figures_of(rr.file, rr.report);
  if (rr.report.collectives) f.collectives = rr.report.collectives->instances;
  return f;
}

RankFacts rank_facts(std::string file, Report&& r) {
  RankFacts f = figures_of(std::move(file), r);
  if (r.collectives) f.collectives = std::move(r.collectives->instances);
  return f;
}

bool is_one_job(const std::vector<RankFacts>& ranks) {
  if (ranks.size() < 2) return false;
  std::set<int64_t> seen;
  std::optional<int64_t> world;
  for (const auto& r : ranks) {
    if (!r.rank || !r.world_size) return false;
    if (world && *world != *r.world_size) return false;
    world = r.world_size;
    if (!seen.insert(*r.rank).second) return false;
  }
  return true;
}

bool is_one_job(const std::vector<RankReport>& reports) {
  std::vector<RankFacts> f;
  for (const auto& r : reports) f.push_back(figures_of(r.file, r.report));
  return is_one_job(f);
}

namespace {
JobSummary summarize_ranks(std::vector<Rank>& ranks, std::vector<const Rank*>& ok) {
  JobSummary out;
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

}  // namespace

JobSummary summarize_job(const std::vector<RankReport>& reports) {
  std::vector<RankFacts> facts;
  facts.reserve(reports.size());
  for (const auto& r : reports) facts.push_back(rank_facts(r));
  return summarize_job(facts);
}

JobSummary summarize_job(const std::vector<RankFacts>& reports) {
  std::vector<Rank> ranks;
  for (size_t i = 0; i < reports.size(); ++i) ranks.push_back(read_rank(reports[i], static_cast<int64_t>(i)));
  std::vector<const Rank*> ok;
  JobSummary out = summarize_ranks(ranks, ok);
  out.collectives = match_collectives(reports, ranks, ok);
  return out;
}

}  // namespace profile_train::analysis
