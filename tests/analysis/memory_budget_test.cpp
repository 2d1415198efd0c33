// memory_budget_section on hand-written facts.memory: the GPU and CPU splits, the fit, growth and bad input.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/memory_budget.h"
#include "profile_train/common/format.h"
#include "profile_train/model/report_json.h"

using namespace profile_train::analysis;
using nlohmann::json;

namespace model = profile_train::model;

namespace {

constexpr int64_t kGiB = int64_t{1} << 30;

json gpu_facts() {
  return json::parse(R"({
    "gpu": {"memory_total_bytes": 85899345920, "memory_peak_bytes": 9000000000},
    "memory": {"device": "cuda:0", "batch_size": 64, "parameter_bytes": 1000000000, "gradient_bytes": 1000000000,
               "optimizer_state_bytes": 2000000064,
               "steps": {"first": 1, "peak_allocated_bytes": [7000000000, 8400000064, 8400000064, 8399999000],
                         "allocated_at_start_bytes": [4000000064, 4000000064, 4000000064, 4000000064]}}})");
}

}  // namespace

TEST(MemoryBudgetSection, GpuPeakLessStaticIsActivations) {
  auto b = memory_budget_section(gpu_facts(), std::nullopt);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->device, "GPU");
  EXPECT_EQ(b->static_bytes, 4000000064);
  EXPECT_EQ(b->peak_bytes, 8400000064);  // the largest step's, not the run's facts.gpu figure
  EXPECT_EQ(b->activation_bytes, 4400000000);
  EXPECT_EQ(b->activation_per_sample_bytes, 4400000000 / 64);
  EXPECT_EQ(b->capacity_bytes, 80 * kGiB);
  EXPECT_EQ(b->free_bytes, 80 * kGiB - 8400000064);
  EXPECT_EQ(b->samples_fit, 64 + (80 * kGiB - 8400000064) / (4400000000 / 64));
  ASSERT_TRUE(b->fit);
  EXPECT_EQ(b->fit->rfind("batch 64 fits with 72.2 GiB free; about " + profile_train::format_count(*b->samples_fit) +
                              " samples would fit", 0),
            0u)
      << *b->fit;
  EXPECT_EQ(b->growth_per_step_bytes, 0);  // flat
  EXPECT_EQ(b->growth_source, "torch.cuda.memory_allocated at each step's start");  // examined, no growth
  // The report model writes every declared key (schema: all required).
  model::Report r;
  r.memory_budget = b;
  const json j = model::to_json(r);
  EXPECT_EQ(j["memory_budget"]["samples_fit"], *b->samples_fit);
  EXPECT_EQ(j["memory_budget"].size(), 20u);
}

TEST(MemoryBudgetSection, CpuUsesSavedActivationsAndTheRamTheProcessMayUse) {
  json f = json::parse(R"({"memory": {"device": "cpu", "batch_size": 10, "parameter_bytes": 400,
    "gradient_bytes": 400, "optimizer_state_bytes": 832, "activation_saved_bytes": 5000,
    "rss_peak_bytes": 700000, "ram_total_bytes": 1000000, "ram_total_source": "cgroup memory.max",
    "ram_available_bytes": 250000,
    "steps": {"first": 1, "heap_in_use_at_start_bytes": [1000000, 1200000, 1400000, 1600000, 1800000]}}})");
  auto b = memory_budget_section(f, std::nullopt);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->device, "CPU");
  EXPECT_EQ(b->static_bytes, 1632);
  EXPECT_EQ(b->activation_bytes, 5000);
  EXPECT_EQ(b->peak_bytes, 6632);
  EXPECT_EQ(b->capacity_source, "the RAM the process may use (cgroup memory.max)");
  EXPECT_EQ(b->free_bytes, 250000);  // min(1000000 - 700000, MemAvailable)
  EXPECT_EQ(b->samples_fit, 10 + 250000 / 500);
  EXPECT_EQ(b->growth_per_step_bytes, 200000);
  EXPECT_TRUE(b->growth_source);
}

TEST(MemoryBudgetSection, GrowthNeedsSteadyRisesAboveTheFloor) {
  EXPECT_FALSE(memory_growth_per_step({1, 2}));
  EXPECT_EQ(memory_growth_per_step({100, 2000, 4000, 6000}), 0);  // rises, below 64 KiB a step
  EXPECT_EQ(memory_growth_per_step({0, 1 << 20, 0, 1 << 20, 0}), 0);  // up and down
  EXPECT_EQ(memory_growth_per_step({0, 1 << 20, 2 << 20, 3 << 20}), 1 << 20);
  // The built-in workload's CPU heap series (12 steps): 26 MB appear during the first step (gradients, AdamW's
  // moments), 1.1 MB once more, a few hundred bytes otherwise: no growth (a least-squares slope said ~1 MB/step).
  EXPECT_EQ(memory_growth_per_step({82464240, 109430432, 109421424, 109422016, 109422416, 109422784, 110549584,
                                    110551072, 110555680, 110556368, 110556608, 110561072, 110561520}),
            0);
  // A leak after the same first-step jump: the per-step rise, not the jump.
  std::vector<int64_t> leak = {1000000, 30000000};
  for (int q = 0; q < 8; ++q) leak.push_back(leak.back() + 800000 + (q % 2) * 10000);
  EXPECT_EQ(memory_growth_per_step(leak), 810000);
}

TEST(MemoryBudgetSection, BadOrMissingFactsGiveNoFigures) {
  EXPECT_FALSE(memory_budget_section(json::object(), std::nullopt));
  EXPECT_FALSE(memory_budget_section(json::parse(R"({"memory": {"parameter_bytes": -5}})"), std::nullopt));
  EXPECT_FALSE(memory_budget_section(json::parse(R"({"memory": {"parameter_bytes": "12"}})"), std::nullopt));
  // A negative or absurd series is not fitted; a peak below the static bytes gives 0 activations, not negative.
  json f = gpu_facts();
  f["memory"]["steps"]["allocated_at_start_bytes"] = json::array({1, -2, 3});
  f["memory"]["steps"]["peak_allocated_bytes"] = json::array({100});
  auto b = memory_budget_section(f, std::nullopt);
  ASSERT_TRUE(b);
  EXPECT_FALSE(b->growth_per_step_bytes);
  EXPECT_EQ(b->activation_bytes, 0);
  EXPECT_FALSE(b->samples_fit);  // no activations per sample: no fit claimed
}
