// The diff of two jobs: rank pairing, the job's figures, diff.json of a job diff, its text and HTML.
#include <gtest/gtest.h>

#include <sstream>

#include "profile_train/analysis/diff.h"
#include "profile_train/analysis/job.h"
#include "profile_train/model/job_json.h"
#include "profile_train/model/report_json.h"
#include "profile_train/report/diff.h"
#include "test_util.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types
namespace {

using namespace profile_train::report::testing;
using nlohmann::json;

// The fixture (mean step 100 ms) with its step time and spread set.
json with_steps(double mean_ms, double stddev_ms) {
  json r = fixture("report_input_pipeline.json");
  r["steps"]["mean_ms"] = mean_ms;
  r["steps"]["stddev_ms"] = stddev_ms;
  return r;
}

// ---- rank pairing ------------------------------------------------------------------------------------------

RankReport rank_report(std::optional<int64_t> rank, double mean_ms = 100.0, double data_loading_ms = 42.0,
                       const std::string& file = "") {
  json r = with_steps(mean_ms, 0.5);
  r["breakdown_ms"]["data_loading"] = data_loading_ms;
  if (rank) r["source"]["distributed"] = {{"rank", *rank}, {"world_size", 4}, {"backend", "nccl"}};
  return {file.empty() ? "rank" + std::to_string(rank.value_or(-1)) : file, typed_report(r)};
}

TEST(RankPairing, ByRankNumberWhateverTheOrder) {
  const std::vector<RankReport> a = {rank_report(1), rank_report(0)};
  const std::vector<RankReport> b = {rank_report(0), rank_report(2)};
  const analysis::RankPairs p = analysis::pair_ranks(a, b);
  EXPECT_EQ(p.pairing, RankPairing::kByRank);
  ASSERT_EQ(p.pairs.size(), 3u);
  EXPECT_EQ(p.pairs[0].rank, 0);
  EXPECT_EQ(p.pairs[0].a, 1u);
  EXPECT_EQ(p.pairs[0].b, 0u);
  EXPECT_EQ(p.pairs[1].rank, 1);  // only in A
  EXPECT_EQ(p.pairs[1].a, 0u);
  EXPECT_FALSE(p.pairs[1].b);
  EXPECT_EQ(p.pairs[2].rank, 2);  // only in B
  EXPECT_FALSE(p.pairs[2].a);
  EXPECT_EQ(p.pairs[2].b, 1u);
}

TEST(RankPairing, ByOrderWhenAReportRecordsNoRankOrOneTwice) {
  // B's second report records no rank: position pairs with position, the extra A rank is on A's side only.
  const std::vector<RankReport> a = {rank_report(1), rank_report(0), rank_report(2)};
  const analysis::RankPairs p = analysis::pair_ranks(a, {rank_report(0), rank_report(std::nullopt)});
  EXPECT_EQ(p.pairing, RankPairing::kByOrder);
  ASSERT_EQ(p.pairs.size(), 3u);
  EXPECT_EQ(p.pairs[0].a, 0u);
  EXPECT_EQ(p.pairs[0].b, 0u);
  EXPECT_EQ(p.pairs[1].a, 1u);
  EXPECT_EQ(p.pairs[1].b, 1u);
  EXPECT_EQ(p.pairs[2].rank, 2);
  EXPECT_EQ(p.pairs[2].a, 2u);
  EXPECT_FALSE(p.pairs[2].b);
  // A rank recorded twice on one side cannot key a pairing either.
  EXPECT_EQ(analysis::pair_ranks({rank_report(0), rank_report(0)}, {rank_report(0), rank_report(1)}).pairing,
            RankPairing::kByOrder);
}

// ---- the diff of two jobs ----------------------------------------------------------------------------------

JobFolder job_of(std::vector<RankReport> ranks, const std::string& dir) {
  JobFolder f;
  for (auto& r : ranks) r.file = dir + "/" + r.file;
  f.ranks = std::move(ranks);
  return f;
}

TEST(JobDiff, ARankThatSlowsDownBecomesTheStragglerAndTheJobsStepTime) {
  const JobFolder a = job_of({rank_report(0), rank_report(1)}, "A");
  // Rank 1 of B waits 40 ms longer for its data: 140 ms steps; B's folders come in the other order.
  const JobFolder b = job_of({rank_report(1, 140.0, 82.0), rank_report(0)}, "B");
  const JobDiff d = analysis::diff_jobs(a, b, "A", "B");
  EXPECT_EQ(d.pairing, RankPairing::kByRank);
  EXPECT_FALSE(d.a.from_job_json);
  EXPECT_FALSE(d.a.summary.straggler);
  ASSERT_TRUE(d.b.summary.straggler);
  EXPECT_EQ(d.b.summary.straggler->rank, 1);
  EXPECT_EQ(d.b.summary.straggler->phase, StragglerPhase::kInput);
  EXPECT_TRUE(d.straggler_changed());
  EXPECT_TRUE(d.verdict_changed());
  EXPECT_EQ(d.b.slowest_rank, 1);
  EXPECT_EQ(d.b.slowest_label, "B/rank1");
  EXPECT_EQ(d.b.step_ms, 140.0);
  // The job's step time is the slowest rank's; its headline follows the neutral rule.
  EXPECT_EQ(d.slowest.step_time.b_ms, 140.0);
  EXPECT_EQ(d.slowest.headline.step_time, StepChange::kSlower);
  EXPECT_EQ(d.slowest.a.label, "A");
  ASSERT_EQ(d.ranks.size(), 2u);
  EXPECT_EQ(d.ranks[0].rank, 0);
  EXPECT_EQ(d.ranks[0].diff.a.label, "A/rank0");
  EXPECT_EQ(d.ranks[0].diff.b.label, "B/rank0");
  EXPECT_EQ(d.ranks[0].diff.headline.step_time, StepChange::kNeutral);
  EXPECT_EQ(d.ranks[1].diff.headline.step_time, StepChange::kSlower);
  EXPECT_TRUE(d.only_in_a.empty() && d.only_in_b.empty());

  const json j = to_json(d);
  EXPECT_EQ(j["diff_version"], "1.1");
  EXPECT_EQ(j["kind"], "job");
  EXPECT_EQ(j["step_time"]["b_ms"], 140.0);  // the 1.0 keys: the slowest ranks' diff
  EXPECT_EQ(j["job"]["pairing"], "rank");
  EXPECT_EQ(j["job"]["straggler"], json({{"a", nullptr}, {"b", 1}, {"changed", true}}));
  EXPECT_EQ(j["job"]["b"]["straggler"]["phase"], "input");
  EXPECT_EQ(j["job"]["b"]["slowest_rank"], 1);
  EXPECT_EQ(j["job"]["ranks"].size(), 2u);
  EXPECT_EQ(j["job"]["ranks"][1]["headline"]["step_time"], "slower");
  EXPECT_EQ(j["job"]["ranks"][1]["breakdown"].size(), 8u);
  EXPECT_EQ(j["job"]["ranks"][1]["verdict"]["changed"], false);

  std::ostringstream out;
  write_job_diff_text(d, out, {});
  const std::string s = out.str();
  EXPECT_EQ(s.rfind("profile-train diff (jobs)  A: A (2 ranks)  B: B (2 ranks)\n", 0), 0u) << s;
  EXPECT_NE(s.find("Job step    100 ms -> 140 ms  (+40.0 ms, B/A = 1.400, 1.40x slower)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("the slowest rank's mean step: A rank 0 (A/rank0), B rank 1 (B/rank1)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Straggler   none -> rank 1 (input, 40.0 ms per step over the others)  (changed)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("Ranks       2 paired by rank number (source.distributed.rank); only in A: none; only in B: none\n"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("Comparable  slowest ranks: window 4 steps x 100 ms"), std::string::npos) << s;
  EXPECT_NE(s.find("rank 1          100 ms      140 ms   +40.0 ms    1.400  slower     input_pipeline -> input_pipeline\n"),
            std::string::npos)
      << s;
  const std::string html = render_job_diff_html(d);
  EXPECT_NE(html.find("<section id=\"diff-ranks\">"), std::string::npos);
  EXPECT_NE(html.find("<section id=\"diff-breakdown-1\">"), std::string::npos);
  EXPECT_NE(html.find("<h1>1.40\xC3\x97 slower</h1>"), std::string::npos);
}

TEST(JobDiff, RanksOnOneSideAndTheJobSummaryOfJobJson) {
  JobFolder a = job_of({rank_report(0), rank_report(1)}, "A");
  JobFolder b = job_of({rank_report(0), rank_report(2)}, "B");
  // job.json's figures are the job's, not recomputed: here it names rank 0 a compute straggler.
  JobSummary recorded = analysis::summarize_job(a.ranks);
  recorded.verdict = JobVerdict::kStraggler;
  recorded.straggler = Straggler{0, "A/rank0", StragglerPhase::kCompute, 12.5, 12.5, std::nullopt};
  a.summary = recorded;
  const JobDiff d = analysis::diff_jobs(a, b, "A", "B");
  EXPECT_TRUE(d.a.from_job_json);
  EXPECT_FALSE(d.b.from_job_json);
  ASSERT_TRUE(d.a.summary.straggler);
  EXPECT_EQ(d.a.summary.straggler->phase, StragglerPhase::kCompute);
  EXPECT_TRUE(d.straggler_changed());
  ASSERT_EQ(d.ranks.size(), 1u);
  ASSERT_EQ(d.only_in_a.size(), 1u);
  EXPECT_EQ(d.only_in_a[0].rank, 1);
  EXPECT_EQ(d.only_in_a[0].label, "A/rank1");
  ASSERT_EQ(d.only_in_b.size(), 1u);
  EXPECT_EQ(d.only_in_b[0].rank, 2);
  std::ostringstream out;
  write_job_diff_text(d, out, {});
  EXPECT_NE(out.str().find("; only in A: rank 1 (A/rank1); only in B: rank 2 (B/rank2)\n"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("Straggler   rank 0 (compute, 12.5 ms per step over the others) -> none  (changed)"),
            std::string::npos)
      << out.str();
  const json j = to_json(d);
  EXPECT_EQ(j["job"]["only_in_a"], json::array({{{"rank", 1}, {"label", "A/rank1"}}}));
  EXPECT_EQ(j["job"]["a"]["from_job_json"], true);
}

TEST(JobDiff, ReportsWithoutRanksArePairedByPositionAndSaySo) {
  const JobDiff d = analysis::diff_jobs(job_of({rank_report(std::nullopt, 100, 42, "x"), rank_report(std::nullopt, 100, 42, "y")}, "A"),
                                        job_of({rank_report(std::nullopt, 100, 42, "x")}, "B"), "A", "B");
  EXPECT_EQ(d.pairing, RankPairing::kByOrder);
  ASSERT_EQ(d.only_in_a.size(), 1u);
  EXPECT_EQ(d.only_in_a[0].label, "A/y");
  std::ostringstream out;
  write_job_diff_text(d, out, {});
  EXPECT_NE(out.str().find("1 paired by position (job.json's order, else the rank folders' names)"), std::string::npos)
      << out.str();
  EXPECT_NE(out.str().find("only in A: #1 (A/y)"), std::string::npos) << out.str();
  EXPECT_EQ(to_json(d)["job"]["pairing"], "order");
}

}  // namespace
}  // namespace profile_train::report
