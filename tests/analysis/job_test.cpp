// The job summary (src/analysis/job.cpp): synthetic synchronous data-parallel ranks where one rank has a slow
// loader or slow compute (the others wait in their all-reduce), a balanced job, and the two ranks of one
// 128-rank job in the shared HTA traces.
#include <gtest/gtest.h>

#include <filesystem>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/job.h"
#include "profile_train/trace/importer.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

using testing::TraceBuilder;

// One rank of a DDP step: DataLoader wait `load_us`, compute kernels `compute_us`, then an NCCL all-reduce that
// lasts until the slowest rank arrives (`step_us`, the same for all ranks).
nlohmann::json rank_report(int rank, double load_us, double compute_us, double step_us, int steps = 4) {
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
  return build_report(t);
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
  ASSERT_EQ(s["ranks"].size(), 4u);
  EXPECT_EQ(s["verdict"], "straggler") << s.dump(1);
  EXPECT_EQ(s["straggler"]["rank"], 2);
  EXPECT_EQ(s["straggler"]["phase"], "input");
  EXPECT_NEAR(s["straggler"]["excess_ms"].get<double>(), 0.6, 0.02);
  EXPECT_GT(s["slowdown"].get<double>(), 1.4);
  // The others wait for it: their exposed communication is longer by about the same 0.6 ms.
  EXPECT_NEAR(s["straggler"]["others_wait_ms"].get<double>(), 0.6, 0.02);
  EXPECT_NE(s["summary"].get<std::string>().find("rank 2"), std::string::npos);
}

TEST(Job, SlowComputeOnOneRankIsAComputeStraggler) {
  const auto s = summarize_job(job({{100, 1000}, {100, 1600}, {100, 1000}, {100, 1000}}));
  EXPECT_EQ(s["verdict"], "straggler") << s.dump(1);
  EXPECT_EQ(s["straggler"]["rank"], 1);
  EXPECT_EQ(s["straggler"]["phase"], "compute");
  EXPECT_NEAR(s["straggler"]["phase_excess_ms"].get<double>(), 0.6, 0.03);
}

TEST(Job, EvenRanksAreBalancedAndFigureEachRank) {
  const auto s = summarize_job(job({{100, 1000}, {110, 1000}, {100, 1020}, {100, 1000}}));
  EXPECT_EQ(s["verdict"], "balanced") << s.dump(1);
  EXPECT_TRUE(s["straggler"].is_null());
  for (const auto& r : s["ranks"]) {
    EXPECT_NEAR(r["mean_step_ms"].get<double>(), 1.14, 1e-6);  // synchronized: one step time for all
    EXPECT_GT(r["communication_wait_ms"].get<double>(), 0.0);
  }
}

TEST(Job, OneRankCannotBeCompared) {
  const auto s = summarize_job(job({{100, 1000}}));
  EXPECT_EQ(s["verdict"], "unknown");
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
    ranks.push_back({f.string(), build_report(*t)});
  }
  const auto s = summarize_job(ranks);
  ASSERT_EQ(s["ranks"].size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(s["ranks"][i]["mean_step_ms"].get<double>(), ranks[i].report["steps"]["mean_ms"].get<double>());
    EXPECT_NEAR(s["ranks"][i]["communication_wait_ms"].get<double>(),
                ranks[i].report["communication"]["exposed_fraction"].get<double>() * ranks[i].report["steps"]["mean_ms"].get<double>(),
                1e-5);
  }
  EXPECT_TRUE(s["verdict"] == "balanced" || s["verdict"] == "straggler") << s.dump(1);
  EXPECT_TRUE(s["slowest_rank"].is_number());
  std::cout << "[hta sampled ranks] " << s["summary"].get<std::string>() << "\n";
}

}  // namespace
}  // namespace profile_train::analysis
