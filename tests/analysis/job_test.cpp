// The job summary (src/analysis/job.cpp): synthetic synchronous data-parallel ranks where one rank has a slow
// loader or slow compute (the others wait in their all-reduce), a balanced job, and the two ranks of one
// 128-rank job in the shared HTA traces.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/job.h"
#include "profile_train/model/job_json.h"
#include "profile_train/report/writers.h"
#include "profile_train/trace/importer.h"
#include "trace_builder.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types
namespace {

using testing::TraceBuilder;

// One rank of a DDP step: DataLoader wait `load_us`, compute kernels `compute_us`, then an NCCL all-reduce that
// lasts until the slowest rank arrives (`step_us`, the same for all ranks).
Report rank_report(int rank, double load_us, double compute_us, double step_us, int steps = 4) {
  TraceBuilder b;
  b.device(0, "NVIDIA A100-SXM4-80GB", 108);
  int64_t corr = 0;
  for (int s = 0; s < steps; ++s) {
    const double t0 = s * step_us;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, step_us);
    b.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0, load_us);
    b.runtime("cudaLaunchKernel", t0 + load_us, 2, ++corr);
    b.kernel("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nn", t0 + load_us + 2, compute_us - 2, corr);
    b.runtime("cudaLaunchKernel", t0 + load_us + 1, 1, ++corr);
    b.kernel("ncclKernel_AllReduce_RING_LL_Sum_float", t0 + load_us + compute_us, step_us - load_us - compute_us - 1, corr);
  }
  auto t = b.build();
  t.meta.rank = rank;
  t.meta.world_size = 4;
  t.meta.distributed_backend = "nccl";
  return build_typed_report(t);
}

std::vector<RankReport> job(const std::vector<std::pair<double, double>>& load_compute) {
  double step = 0;
  for (const auto& [l, c] : load_compute) step = std::max(step, l + c);
  step += 20;  // the all-reduce itself
  std::vector<RankReport> out;
  for (size_t r = 0; r < load_compute.size(); ++r)
    out.push_back({"rank" + std::to_string(r) + ".json",
                   rank_report(static_cast<int>(r), load_compute[r].first, load_compute[r].second, step)});
  return out;
}

TEST(Job, SlowLoaderOnOneRankIsAnInputStraggler) {
  const auto s = summarize_job(job({{100, 1000}, {100, 1000}, {700, 1000}, {100, 1000}}));
  ASSERT_EQ(s.ranks.size(), 4u);
  EXPECT_EQ(s.verdict, JobVerdict::kStraggler) << s.summary;
  ASSERT_TRUE(s.straggler);
  EXPECT_EQ(s.straggler->rank, 2);
  EXPECT_EQ(s.straggler->phase, StragglerPhase::kInput);
  EXPECT_NEAR(s.straggler->excess_ms, 0.6, 0.02);
  ASSERT_TRUE(s.slowdown);
  EXPECT_GT(*s.slowdown, 1.4);
  // The others wait for it: their exposed communication is longer by about the same 0.6 ms.
  ASSERT_TRUE(s.straggler->others_wait_ms);
  EXPECT_NEAR(*s.straggler->others_wait_ms, 0.6, 0.02);
  EXPECT_NE(s.summary.find("rank 2"), std::string::npos);
}

TEST(Job, SlowComputeOnOneRankIsAComputeStraggler) {
  const auto s = summarize_job(job({{100, 1000}, {100, 1600}, {100, 1000}, {100, 1000}}));
  EXPECT_EQ(s.verdict, JobVerdict::kStraggler) << s.summary;
  ASSERT_TRUE(s.straggler);
  EXPECT_EQ(s.straggler->rank, 1);
  EXPECT_EQ(s.straggler->phase, StragglerPhase::kCompute);
  EXPECT_NEAR(s.straggler->phase_excess_ms, 0.6, 0.03);
}

TEST(Job, EvenRanksAreBalancedAndFigureEachRank) {
  const auto s = summarize_job(job({{100, 1000}, {110, 1000}, {100, 1020}, {100, 1000}}));
  EXPECT_EQ(s.verdict, JobVerdict::kBalanced) << s.summary;
  EXPECT_FALSE(s.straggler);
  for (const auto& r : s.ranks) {
    ASSERT_TRUE(r.mean_step_ms && r.communication_wait_ms);
    EXPECT_NEAR(*r.mean_step_ms, 1.14, 1e-6);  // synchronized: one step time for all
    EXPECT_GT(*r.communication_wait_ms, 0.0);
  }
}

TEST(Job, OneRankCannotBeCompared) {
  const auto s = summarize_job(job({{100, 1000}}));
  EXPECT_EQ(s.verdict, JobVerdict::kUnknown);
}

// Two ranks of one 128-rank job (HTA's sampled traces): per-rank figures equal the ranks' own reports.
TEST(Job, HtaSampledRanksOfOneJob) {
  const auto dir = std::filesystem::path(PT_TRACES_DIR) / "hta";
  const std::filesystem::path files[] = {dir / "timeline_analysis/sampled_rank-0.json.gz",
                                         dir / "trace_filter/sampled_rank-1.json.gz"};
  std::vector<RankReport> ranks;
  for (const auto& f : files) {
    if (!std::filesystem::exists(f)) GTEST_SKIP() << "trace not found: " << f;
    auto t = trace::load_trace(f);
    ASSERT_TRUE(t.ok()) << t.status().message();
    ranks.push_back({f.string(), build_typed_report(*t)});
  }
  const auto s = summarize_job(ranks);
  ASSERT_EQ(s.ranks.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const Report& r = ranks[i].report;
    ASSERT_TRUE(s.ranks[i].mean_step_ms && s.ranks[i].communication_wait_ms && r.steps.mean_ms &&
                r.communication.exposed_fraction);
    EXPECT_EQ(*s.ranks[i].mean_step_ms, *r.steps.mean_ms);
    EXPECT_NEAR(*s.ranks[i].communication_wait_ms, *r.communication.exposed_fraction * *r.steps.mean_ms, 1e-5);
  }
  EXPECT_TRUE(s.verdict == JobVerdict::kBalanced || s.verdict == JobVerdict::kStraggler) << s.summary;
  EXPECT_TRUE(s.slowest_rank);
  std::cout << "[hta sampled ranks] " << s.summary << "\n";
}


// ---------------------------------------------------------------------------------------------------------------
// Golden job summaries: job.json and summary.html (its body, without the shared assets) of each kind of job,
// compared with tests/golden/job/. A refactor leaves them identical; PT_UPDATE_GOLDEN=1 rewrites them on purpose.
namespace golden {

Report cpu_rank_report(int rank, double load_us, double work_us, double step_us, int steps = 4) {
  TraceBuilder b;
  for (int s = 0; s < steps; ++s) {
    const double t0 = s * step_us;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, step_us);
    b.annotation("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", t0, load_us);
    b.cpu_op("aten::mm", t0 + load_us, work_us);
  }
  auto t = b.build();
  t.meta.rank = rank;
  t.meta.world_size = 3;
  t.meta.distributed_backend = "gloo";
  return build_typed_report(t);
}

std::string page_body(const std::string& html) {
  const size_t from = html.find("<body"), to = html.rfind("<script>");
  return from == std::string::npos || to == std::string::npos || to < from ? html : html.substr(from, to - from);
}

void check(const std::string& name, const std::vector<RankReport>& ranks) {
  const JobSummary job = summarize_job(ranks);
  const std::string got_json = model::to_json(job).dump(2) + "\n";
  const std::string got_html = page_body(report::render_job_html(job));
  const auto dir = std::filesystem::path(PT_SOURCE_DIR) / "tests" / "golden" / "job";
  const auto json_path = dir / (name + ".json"), html_path = dir / (name + ".html.txt");
  auto slurp = [](const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  if (std::getenv("PT_UPDATE_GOLDEN")) {
    std::filesystem::create_directories(dir);
    std::ofstream(json_path, std::ios::binary) << got_json;
    std::ofstream(html_path, std::ios::binary) << got_html;
    GTEST_SKIP() << "updated " << json_path;
  }
  ASSERT_TRUE(std::filesystem::exists(json_path)) << "no golden " << json_path << ": run with PT_UPDATE_GOLDEN=1";
  EXPECT_EQ(got_json, slurp(json_path)) << name << ": job.json differs";
  EXPECT_EQ(got_html, slurp(html_path)) << name << ": summary.html differs";
}

}  // namespace golden

TEST(JobGolden, InputStraggler) { golden::check("input_straggler", job({{100, 1000}, {100, 1000}, {700, 1000}, {100, 1000}})); }
TEST(JobGolden, ComputeStraggler) { golden::check("compute_straggler", job({{100, 1000}, {100, 1600}, {100, 1000}, {100, 1000}})); }
TEST(JobGolden, Balanced) { golden::check("balanced", job({{100, 1000}, {110, 1000}, {100, 1020}, {100, 1000}})); }
TEST(JobGolden, OneRank) { golden::check("one_rank", job({{100, 1000}})); }
// One rank's trace has only CPU work (no GPU activity): communication is then not measured for the job.
TEST(JobGolden, CpuOnlyRank) {
  auto ranks = job({{100, 1000}, {100, 1000}, {100, 1000}});
  TraceBuilder b;
  b.cpu_op("aten::mm", 0, 50);
  auto t = b.build();
  t.meta.rank = 3;
  t.meta.world_size = 4;
  ranks.push_back({"rank3-<cpu only>.json", build_typed_report(t)});
  golden::check("cpu_only_rank", ranks);
}
// One rank's trace is empty (no step time): listed without figures, the others compared.
TEST(JobGolden, RankWithoutSteps) {
  auto ranks = job({{100, 1000}, {100, 1000}, {700, 1000}});
  auto t = TraceBuilder().build();
  t.meta.rank = 3;
  t.meta.world_size = 4;
  ranks.push_back({"rank3-empty.json", build_typed_report(t)});
  golden::check("rank_without_steps", ranks);
}
TEST(JobGolden, UnmeasuredInputStraggler) {
  golden::check("unmeasured_input_straggler",
                {{"r0.json", golden::cpu_rank_report(0, 100, 900, 1500)}, {"r1.json", golden::cpu_rank_report(1, 600, 900, 1500)},
                 {"r2.json", golden::cpu_rank_report(2, 100, 900, 1500)}});
}
TEST(JobGolden, UnmeasuredUnknown) {
  golden::check("unmeasured_unknown",
                {{"r0.json", golden::cpu_rank_report(0, 100, 900, 1200)}, {"r1.json", golden::cpu_rank_report(1, 110, 1000, 1200)},
                 {"r2.json", golden::cpu_rank_report(2, 100, 900, 1200)}});
}

}  // namespace
}  // namespace profile_train::analysis
