// job.json read back (model::job_summary_from_json) and the job folders `diff` reads (model::load_diff_input):
// the ranks in job.json's order, else the rank folders' natural order, and the errors that name the folder.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <optional>

#include "profile_train/analysis/job.h"
#include "profile_train/model/job_json.h"
#include "profile_train/model/report_json.h"
#include "test_util.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types
namespace {

using namespace profile_train::report::testing;
using nlohmann::json;
namespace fs = std::filesystem;

// A rank's report: the fixture (100 ms steps, 42 ms of data loading by default), with its rank when given.
RankReport rank_report(std::optional<int64_t> rank, double mean_ms = 100.0, double data_loading_ms = 42.0,
                       const std::string& file = "") {
  json r = fixture("report_input_pipeline.json");
  r["steps"]["mean_ms"] = mean_ms;
  r["breakdown_ms"]["data_loading"] = data_loading_ms;
  if (rank) r["source"]["distributed"] = {{"rank", *rank}, {"world_size", 4}, {"backend", "nccl"}};
  return {file.empty() ? "rank" + std::to_string(rank.value_or(-1)) : file, typed_report(r)};
}

TEST(JobJson, ReadsBackWhatItWrites) {
  const std::vector<RankReport> ranks = {rank_report(0), rank_report(1, 140.0, 82.0)};
  const JobSummary job = analysis::summarize_job(ranks);
  ASSERT_TRUE(job.straggler);
  auto back = job_summary_from_json(to_json(job));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(to_json(*back), to_json(job));
  json bad = to_json(job);
  bad["straggler"]["phase"] = "lunch";
  auto r = job_summary_from_json(bad);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kBadInput);
  EXPECT_EQ(r.status().message(), "job.json: not a job summary (straggler.phase is not a known name)");
  bad = to_json(job);
  bad["ranks"][1]["mean_step_ms"] = "fast";
  EXPECT_EQ(job_summary_from_json(bad).status().message(),
            "job.json: not a job summary (ranks[1].mean_step_ms is not a number)");
}

void write_rank(const fs::path& dir, const RankReport& r) {
  fs::create_directories(dir);
  ASSERT_TRUE(write_report_json(dir / "report.json", r.report).ok());
}

TEST(JobFolder, RankFoldersInNaturalOrderWithoutJobJson) {
  const fs::path dir = temp_dir("job-natural");
  write_rank(dir / "rank10", rank_report(std::nullopt));
  write_rank(dir / "rank2", rank_report(std::nullopt));
  write_rank(dir / "rank0", rank_report(std::nullopt));
  fs::create_directories(dir / "capture");  // run's capture folder holds no report
  auto in = load_diff_input(dir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_TRUE(in->job);
  EXPECT_FALSE(in->report);
  EXPECT_FALSE(in->job->summary);
  ASSERT_EQ(in->job->ranks.size(), 3u);
  EXPECT_EQ(in->job->ranks[0].file, (dir / "rank0").string());
  EXPECT_EQ(in->job->ranks[1].file, (dir / "rank2").string());
  EXPECT_EQ(in->job->ranks[2].file, (dir / "rank10").string());
  // A folder holding report.json is a report, whatever its sub-folders.
  write_rank(dir, rank_report(std::nullopt));
  auto report = load_diff_input(dir);
  ASSERT_TRUE(report.ok());
  EXPECT_TRUE(report->report);
}

TEST(JobFolder, JobJsonNamesTheRanksAndTheirOrder) {
  const fs::path dir = temp_dir("job-json");
  const std::vector<RankReport> ranks = {rank_report(0, 100, 42, "/traces/r0.json"), rank_report(1, 100, 42, "/traces/r1.json")};
  write_rank(dir / "b_rank0", ranks[0]);
  write_rank(dir / "a_rank1", ranks[1]);
  write_rank(dir / "stale", rank_report(7));  // from an earlier command into the same folder
  ASSERT_TRUE(write_job_json(dir / "job.json", analysis::summarize_job(ranks)).ok());
  auto in = load_diff_input(dir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_TRUE(in->job && in->job->summary);
  ASSERT_EQ(in->job->ranks.size(), 2u);
  EXPECT_EQ(in->job->ranks[0].file, (dir / "b_rank0").string());
  EXPECT_EQ(in->job->ranks[1].file, (dir / "a_rank1").string());
}

// run's layout: job.json's files are DIR/rankN/report.json; a report that records no rank is matched by its folder.
TEST(JobFolder, JobJsonMatchesARankWithoutARecordedRankByItsFolder) {
  const fs::path dir = temp_dir("job-run");
  write_rank(dir / "rank0", rank_report(std::nullopt));
  write_rank(dir / "rank1", rank_report(std::nullopt, 120.0));
  JobSummary job;
  for (int r : {1, 0}) {
    JobRank row;
    row.rank = r;
    row.file = (dir / ("rank" + std::to_string(r)) / "report.json").string();
    job.ranks.push_back(row);
  }
  ASSERT_TRUE(write_job_json(dir / "job.json", job).ok());
  auto in = load_diff_input(dir);
  ASSERT_TRUE(in.ok()) << in.status().message();
  ASSERT_EQ(in->job->ranks.size(), 2u);
  EXPECT_EQ(in->job->ranks[0].file, (dir / "rank1").string());  // job.json's order
  EXPECT_EQ(in->job->ranks[0].report.steps.mean_ms, 120.0);
  EXPECT_EQ(in->job->ranks[1].file, (dir / "rank0").string());
}

TEST(JobFolder, ErrorsNameTheFolderAndTheProblem) {
  const fs::path empty = temp_dir("job-empty");
  auto e = load_diff_input(empty);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(e.status().message(), empty.string() + ": no report.json, job.json or sub-folder with a report.json in this folder");

  const fs::path dir = temp_dir("job-missing");
  const std::vector<RankReport> ranks = {rank_report(0, 100, 42, "/traces/r0.json"), rank_report(1, 100, 42, "/traces/r1.json")};
  write_rank(dir / "r0", ranks[0]);
  ASSERT_TRUE(write_job_json(dir / "job.json", analysis::summarize_job(ranks)).ok());
  auto m = load_diff_input(dir);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(m.status().message(),
            dir.string() + ": job.json lists rank 1 (/traces/r1.json) but no sub-folder holds its report.json");

  std::ofstream(dir / "job.json") << "{\"ranks\": [";
  auto t = load_diff_input(dir);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), StatusCode::kBadInput);
  EXPECT_EQ(t.status().message().rfind((dir / "job.json").string() + ": not valid JSON", 0), 0u) << t.status().message();
  std::ofstream(dir / "job.json") << "{\"ranks\": []}";
  EXPECT_EQ(load_diff_input(dir).status().message(), (dir / "job.json").string() + ": lists no ranks");
}

}  // namespace
}  // namespace profile_train::report
