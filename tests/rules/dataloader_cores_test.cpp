// dataloader-workers weighs the cores left for the training process (issue 17 item 6): on CPU-only training
// the workers take their cores from compute, so the bound counts only the loading the idle cores can absorb;
// and raising num_workers is not advised when the workers already fill the usable cores. Synthetic reports
// (the catalog fixtures' healthy base, patched).
#include <gtest/gtest.h>

#include "profile_train/rules/engine.h"
#include "test_util.h"

namespace profile_train::rules {
namespace {

using nlohmann::json;

const json& base() {
  static const json j =
      testing::read_json(std::filesystem::path(PT_RULES_FIXTURES) / "catalog_cases.json").at("base");
  return j;
}

// CPU-only training: no device, no GPU activity, facts.gpu.available = false; `cores` usable cores, torch
// computing with `threads` threads, `workers` DataLoader workers, loading `share` of the step.
json cpu_only(int cores, int threads, int workers, double share) {
  json r = base();
  r["device"] = nullptr;
  r["source"]["has_gpu_activity"] = false;
  r["verdict"]["bottleneck"] = "cpu_only";
  r["breakdown"] = {{"kernel", 0.0}, {"memcpy", 0.0}, {"memset", 0.0}, {"communication", 0.0}, {"runtime", 0.0},
                    {"data_loading", share}, {"cpu", 1.0 - share}, {"other", 0.0}};
  r["breakdown_ms"]["data_loading"] = 100 * share;
  r["facts"]["gpu"] = {{"available", false}};
  r["facts"]["dataloader"]["num_workers"] = workers;
  r["facts"]["cpu"] = {{"cores", cores}, {"torch_threads", threads}, {"interop_threads", threads},
                       {"capability", "AVX2"}, {"bf16_native", false}};
  return r;
}

json gpu_job(int cores, int workers, double share) {
  json r = base();
  r["breakdown"]["data_loading"] = share;
  r["gpu"]["idle"]["fraction"] = share + 0.08;  // the GPU idles while the step waits for data
  r["breakdown"]["kernel"] = 0.9 - share;
  r["facts"]["dataloader"]["num_workers"] = workers;
  r["facts"]["cpu"] = {{"cores", cores}, {"torch_threads", cores}};
  return r;
}

const json* workers_rec(const json& report) {
  static json recs;
  recs = recommend(*testing::builtin_catalog(), report);
  for (const auto& r : recs)
    if (r.at("id") == "dataloader-workers") return &r;
  return nullptr;
}

std::string all_evidence(const json& rec) {
  std::string s;
  for (const auto& e : rec.at("evidence")) s += e.get<std::string>() + "\n";
  return s;
}

TEST(DataloaderWorkersCores, TwoCoresAndASmallLoaderShareIsNotRecommended) {
  // The case: 2 cores, torch on both, the loader 8% of the step. A worker would take a core from the
  // step's compute: at most 4% could be hidden, and tune measured x0.93 / x1.03.
  const json r = cpu_only(2, 2, 0, 0.08);
  EXPECT_EQ(workers_rec(r), nullptr) << explain_rule(*testing::builtin_catalog(), "dataloader-workers", r);
}

// Issue 23 item 7: DDP ranks on one host share its cores. Two ranks of one thread on two cores leave no core for
// a worker (each rank has one core: the bound is 0), where one process of one thread on the same two cores has
// an idle core for its loading.
TEST(DataloaderWorkersCores, RanksOnTheHostShareTheCores) {
  json two_ranks = cpu_only(2, 1, 0, 0.30);
  two_ranks["facts"]["cpu"]["local_ranks"] = 2;
  EXPECT_EQ(workers_rec(two_ranks), nullptr)
      << explain_rule(*testing::builtin_catalog(), "dataloader-workers", two_ranks);
  json one_rank = cpu_only(2, 1, 0, 0.30);
  one_rank["facts"]["cpu"]["local_ranks"] = 1;
  const json* rec = workers_rec(one_rank);
  ASSERT_NE(rec, nullptr);
  EXPECT_NEAR(rec->at("estimated_speedup_max").get<double>(), 1.0 / 0.7, 1e-3);
}

TEST(DataloaderWorkersCores, OnTheCpuTheBoundCountsTheCoresComputeKeeps) {
  // 2 cores, 2 torch threads, 30% loading: the workers' loading (30 core-ms of a 100 ms step) must share the
  // two cores with 70 ms x 2 cores of compute: the step cannot go below (30 + 140) / 2 = 85 ms -> at most
  // 1/0.85 = 1.18x, not the 1/0.7 = 1.43x that hiding all the loading would give.
  const json* rec = workers_rec(cpu_only(2, 2, 0, 0.30));
  ASSERT_NE(rec, nullptr);
  EXPECT_NEAR(rec->at("estimated_speedup_max").get<double>(), 1.0 / 0.85, 1e-3);
  const std::string ev = all_evidence(*rec);
  EXPECT_NE(ev.find("2 cores"), std::string::npos) << ev;
  EXPECT_NE(ev.find("2 threads"), std::string::npos) << ev;
  // With idle cores (8 cores, torch on 4) the workers can run beside compute: the whole loading share.
  const json* idle = workers_rec(cpu_only(8, 4, 0, 0.30));
  ASSERT_NE(idle, nullptr);
  EXPECT_NEAR(idle->at("estimated_speedup_max").get<double>(), 1.0 / 0.7, 1e-3);
}

TEST(DataloaderWorkersCores, NotAdvisedWhenWorkersAlreadyFillTheUsableCores) {
  // One core stays with the training process; the workers share the rest.
  EXPECT_EQ(workers_rec(cpu_only(2, 1, 1, 0.5)), nullptr);
  EXPECT_EQ(workers_rec(cpu_only(2, 1, 2, 0.5)), nullptr);
  EXPECT_EQ(workers_rec(gpu_job(4, 3, 0.3)), nullptr);
  EXPECT_EQ(workers_rec(gpu_job(2, 2, 0.3)), nullptr);
  // Cores to spare: still advised, and the text names the cores.
  const json* rec = workers_rec(gpu_job(8, 2, 0.3));
  ASSERT_NE(rec, nullptr);
  EXPECT_NE(all_evidence(*rec).find("8 cores"), std::string::npos) << all_evidence(*rec);
  // On the GPU the compute is not on the cores: the bound is the whole loading share.
  EXPECT_NEAR(rec->at("estimated_speedup_max").get<double>(), 1.0 / 0.7, 1e-3);
}

TEST(DataloaderWorkersCores, WithoutCpuFactsTheRuleIsUnchanged) {
  // Kineto traces and the built-in workload have no facts.cpu: the loading share alone decides, as before.
  json r = cpu_only(2, 2, 0, 0.08);
  r["facts"]["cpu"] = nullptr;
  const json* rec = workers_rec(r);
  ASSERT_NE(rec, nullptr);
  EXPECT_NEAR(rec->at("estimated_speedup_max").get<double>(), 1.0 / 0.92, 1e-3);
  EXPECT_EQ(all_evidence(*rec).find("cores"), std::string::npos);
}

}  // namespace
}  // namespace profile_train::rules
