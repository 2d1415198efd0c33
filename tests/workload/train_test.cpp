// Models, loader and optimizers of the workload, and short CPU training runs with tiny sizes.
#include "train.h"

#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <cmath>
#include <numeric>
#include <thread>

#include <gtest/gtest.h>

#include <torch/cuda.h>

#include "amp.h"
#include "memory_facts.h"
#include "data.h"
#include "models.h"
#include "optimizers.h"
#include "results.h"

namespace profile_train::workload {
namespace {

ModelConfig tiny_config(ModelKind kind) {
  ModelConfig c;
  c.kind = kind;
  c.image_size = 8;
  c.channels = 4;
  c.features = 32;
  c.hidden = 64;
  c.mlp_layers = 2;
  c.vocab = 32;
  c.seq_len = 12;
  c.d_model = 32;
  c.heads = 2;
  c.layers = 1;
  return c;
}

WorkloadOptions cpu_options(ModelKind kind, int64_t steps) {
  WorkloadOptions o;
  o.model = kind;
  o.device = DeviceChoice::kCpu;
  o.batch_size = 16;
  o.steps = steps;
  o.warmup = 0;
  o.threads = 1;
  o.seed = 3;
  return o;
}

double mean_of(const std::vector<float>& v, size_t from, size_t n) {
  return std::accumulate(v.begin() + static_cast<long>(from), v.begin() + static_cast<long>(from + n), 0.0) /
         static_cast<double>(n);
}

// Mean of the last 5 losses is below the mean of the first 5 by `margin` (relative).
void expect_loss_falls(const TrainResult& r, double margin) {
  ASSERT_GE(r.losses.size(), 10u);
  const double first = mean_of(r.losses, 0, 5), last = mean_of(r.losses, r.losses.size() - 5, 5);
  EXPECT_LT(last, first * (1.0 - margin)) << "first " << first << " last " << last;
}

TEST(WorkloadModels, BuildAndProduceLogitsOfTheRightShape) {
  torch::manual_seed(0);
  for (auto kind : {ModelKind::kCnn, ModelKind::kMlp, ModelKind::kTransformer}) {
    const auto cfg = tiny_config(kind);
    auto net = make_model(cfg);
    ASSERT_TRUE(net);
    EXPECT_FALSE(net->parameters().empty());
    torch::Tensor x, logits;
    if (kind == ModelKind::kCnn) {
      x = torch::randn({2, 3, cfg.image_size, cfg.image_size});
      logits = net->forward(x);
      EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, cfg.num_classes}));
      EXPECT_TRUE(net->has_conv());
    } else if (kind == ModelKind::kMlp) {
      logits = net->forward(torch::randn({2, cfg.features}));
      EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, cfg.num_classes}));
      EXPECT_FALSE(net->has_conv());
    } else {
      logits = net->forward(torch::randint(cfg.vocab, {2, cfg.seq_len}, torch::kLong));
      EXPECT_EQ(logits.sizes(), (std::vector<int64_t>{2, cfg.seq_len, cfg.vocab}));
    }
  }
}

TEST(WorkloadModels, TransformerAttentionIsCausal) {
  torch::manual_seed(0);
  const auto cfg = tiny_config(ModelKind::kTransformer);
  auto net = make_model(cfg);
  net->eval();
  auto a = torch::randint(cfg.vocab, {1, cfg.seq_len}, torch::kLong);
  auto b = a.clone();
  b[0][cfg.seq_len - 1] = (a[0][cfg.seq_len - 1].item<int64_t>() + 1) % cfg.vocab;  // change the last token
  torch::NoGradGuard no_grad;
  auto la = net->forward(a), lb = net->forward(b);
  // Earlier positions cannot see the last token; the last position does.
  EXPECT_TRUE(torch::allclose(la.slice(1, 0, cfg.seq_len - 1), lb.slice(1, 0, cfg.seq_len - 1)));
  EXPECT_FALSE(torch::allclose(la.slice(1, cfg.seq_len - 1), lb.slice(1, cfg.seq_len - 1)));
}

TEST(WorkloadModels, ChannelsLastConvertsConvWeights) {
  auto net = make_model(tiny_config(ModelKind::kCnn));
  to_channels_last(*net);
  int converted = 0;
  for (const auto& p : net->parameters()) {
    if (p.dim() != 4) continue;
    EXPECT_TRUE(p.is_contiguous(at::MemoryFormat::ChannelsLast));
    ++converted;
  }
  EXPECT_GT(converted, 0);
}

TEST(WorkloadData, SamplesAreDeterministicAndWellFormed) {
  DataConfig dc;
  dc.model = tiny_config(ModelKind::kCnn);
  dc.seed = 11;
  dc.size = 64;
  SyntheticDataset ds(dc);
  auto a = ds.get(5), b = ds.get(5), c = ds.get(6);
  EXPECT_TRUE(torch::equal(a.data, b.data));
  EXPECT_FALSE(torch::equal(a.data, c.data));
  EXPECT_EQ(a.data.scalar_type(), torch::kUInt8);
  EXPECT_EQ(a.data.sizes(), (std::vector<int64_t>{3, 8, 8}));
  const auto label = a.target.item<int64_t>();
  EXPECT_GE(label, 0);
  EXPECT_LT(label, dc.model.num_classes);

  dc.cpu_normalize = true;
  SyntheticDataset normalized(dc);
  auto n = normalized.get(5);
  EXPECT_EQ(n.data.scalar_type(), torch::kFloat);
  // Same sample, normalized on the CPU, equals the device-side normalization of the raw one.
  DataConfig raw_cfg = dc;
  raw_cfg.cpu_normalize = false;
  auto on_device = normalize_on_device(raw_cfg, a.data, torch::kFloat);
  EXPECT_TRUE(torch::allclose(n.data, on_device, 1e-4, 1e-4));

  DataConfig lm;
  lm.model = tiny_config(ModelKind::kTransformer);
  lm.size = 8;
  auto t = SyntheticDataset(lm).get(0);
  EXPECT_EQ(t.data.sizes(), (std::vector<int64_t>{lm.model.seq_len}));
  // Targets are the inputs shifted by one.
  EXPECT_TRUE(torch::equal(t.data.slice(0, 1), t.target.slice(0, 0, lm.model.seq_len - 1)));
}

TEST(WorkloadData, CnnImagesComeFromAPoolGeneratedOnce) {
  DataConfig dc;
  dc.model = tiny_config(ModelKind::kCnn);
  dc.size = 1200;
  SyntheticDataset ds(dc);
  // Sample i is pool image i % 512: equal images (and labels) one pool apart, distinct within the pool.
  auto a = ds.get(3), b = ds.get(3 + 512), c = ds.get(4);
  EXPECT_TRUE(torch::equal(a.data, b.data));
  EXPECT_EQ(a.target.item<int64_t>(), b.target.item<int64_t>());
  EXPECT_FALSE(torch::equal(a.data, c.data));
  // get() hands out a copy: changing it leaves the pool alone.
  a.data.fill_(0);
  EXPECT_FALSE(torch::equal(a.data, ds.get(3).data));
}

TEST(WorkloadData, WorkerThreadsServeTheSameBatchesAsTheMainThread) {
  DataConfig dc;
  dc.model = tiny_config(ModelKind::kMlp);
  dc.size = 64;
  auto first_batches = [&](int64_t workers) {
    torch::manual_seed(7);  // RandomSampler draws its permutation from the global generator
    LoaderConfig lc;
    lc.batch_size = 8;
    lc.workers = workers;
    auto loader = make_loader(SyntheticDataset(dc), lc);
    std::vector<torch::Tensor> out;
    for (auto& batch : *loader) {
      EXPECT_EQ(batch.data.size(0), 8);
      out.push_back(batch.data);
      if (out.size() == 3) break;
    }
    return out;
  };
  auto main_thread = first_batches(0), threads = first_batches(2);
  ASSERT_EQ(main_thread.size(), 3u);
  ASSERT_EQ(threads.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_TRUE(torch::equal(main_thread[i], threads[i])) << i;
}

// The planted preprocessing is work, not a wall-clock wait: two threads burning 150 ms each on one core take
// about 300 ms together. A deadline-based burn ends both after ~150 ms plus the few ms of scheduler slice the
// second thread waits before its deadline starts, as if the core were two.
TEST(WorkloadData, BurnIsFixedWorkThatSharesACore) {
  cpu_set_t mine;
  CPU_ZERO(&mine);
  ASSERT_EQ(sched_getaffinity(0, sizeof(mine), &mine), 0);
  int cpu = 0;
  while (!CPU_ISSET(cpu, &mine)) ++cpu;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(cpu, &one);
  burn_cpu(1000);  // calibrates before the timed part
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int i = 0; i < 2; ++i) {
    threads.emplace_back([&] {
      pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
      burn_cpu(150'000);
    });
  }
  for (auto& t : threads) t.join();
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_GE(ms, 240.0) << "two 150 ms burns on one core ended after " << ms << " ms";
}

TEST(WorkloadTrain, FactsNameTheCpuLikeTheShim) {
  auto o = cpu_options(ModelKind::kMlp, 2);
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto cpu = facts_json(o, *r)["cpu"];
  EXPECT_EQ(cpu["cores"], affinity_cores()) << cpu.dump();
  EXPECT_EQ(cpu["torch_threads"], o.threads) << cpu.dump();
  EXPECT_GE(cpu["interop_threads"].get<int64_t>(), 1) << cpu.dump();
  EXPECT_TRUE(cpu["capability"].is_string()) << cpu.dump();
  // Read from /proc/cpuinfo (Linux): booleans, and bf16_native is their "or".
  ASSERT_TRUE(cpu["amx_bf16"].is_boolean() && cpu["avx512_bf16"].is_boolean()) << cpu.dump();
  EXPECT_EQ(cpu["bf16_native"], cpu["amx_bf16"].get<bool>() || cpu["avx512_bf16"].get<bool>());
}

TEST(WorkloadOptimizers, ConstructWithHonestFlags) {
  auto net = make_model(tiny_config(ModelKind::kMlp));
  struct Case {
    OptimizerKind kind;
    bool fused, foreach;
    const char* name;
  } cases[] = {{OptimizerKind::kSgd, false, false, "SGD"},   {OptimizerKind::kAdam, false, true, "Adam"},
               {OptimizerKind::kAdamW, true, false, "AdamW"}, {OptimizerKind::kAdamW, false, false, "AdamW"}};
  for (const auto& c : cases) {
    auto opt = make_optimizer(c.kind, c.fused, c.foreach, net->parameters());
    EXPECT_EQ(opt->class_name(), c.name);
    EXPECT_EQ(opt->fused(), c.fused);
    EXPECT_EQ(opt->foreach(), c.foreach);
    EXPECT_EQ(opt->supports_amp_scaling(), c.fused);
  }
  EXPECT_DOUBLE_EQ(make_optimizer(OptimizerKind::kAdamW, false, false, net->parameters())->weight_decay(), 0.01);
  EXPECT_DOUBLE_EQ(make_optimizer(OptimizerKind::kAdam, false, false, net->parameters())->weight_decay(), 0.0);
}

TEST(WorkloadOptimizers, ForeachAndFusedAdamWMatchTheForLoop) {
  // Same gradients, three implementations: the parameters must end up (nearly) equal.
  auto run = [](bool fused, bool foreach) {
    torch::manual_seed(1);
    auto p = torch::randn({5, 3}).requires_grad_(true);
    auto opt = make_optimizer(OptimizerKind::kAdamW, fused, foreach, {p});
    for (int i = 0; i < 3; ++i) {
      opt->zero_grad();
      (p * p * (i + 1)).sum().backward();
      opt->step();
    }
    return p.detach().clone();
  };
  auto loop = run(false, false), fe = run(false, true), fu = run(true, false);
  torch::manual_seed(1);
  const auto initial = torch::randn({5, 3});
  EXPECT_FALSE(torch::allclose(loop, initial, 1e-4, 1e-4));  // the updates did move the parameters
  EXPECT_TRUE(torch::allclose(loop, fe, 1e-5, 1e-6));
  EXPECT_TRUE(torch::allclose(loop, fu, 1e-5, 1e-6));
}

// issue 24: facts.memory's static bytes, counted from the tensors, equal what the shapes say for every optimizer
// implementation: parameters and gradients 4 bytes a float, SGD one momentum buffer, Adam/AdamW two moments (the
// fused kernels add one float32 step counter per parameter).
TEST(WorkloadMemory, StaticBytesAreExactForEveryOptimizer) {
  const ModelConfig mc = tiny_config(ModelKind::kMlp);
  int64_t numel = 0, tensors = 0;
  for (const auto& p : make_model(mc)->parameters()) numel += p.numel(), ++tensors;
  const int64_t param_bytes = 4 * numel;
  struct Case {
    OptimizerKind kind;
    bool fused, foreach;
    int64_t state_bytes;
  } cases[] = {{OptimizerKind::kSgd, false, false, param_bytes},
               {OptimizerKind::kAdam, false, false, 2 * param_bytes},
               {OptimizerKind::kAdamW, false, false, 2 * param_bytes},
               {OptimizerKind::kAdamW, false, true, 2 * param_bytes},
               {OptimizerKind::kAdamW, true, false, 2 * param_bytes + 4 * tensors},
               {OptimizerKind::kSgd, false, true, param_bytes}};
  for (const auto& c : cases) {
    auto o = cpu_options(ModelKind::kMlp, 3);
    o.optimizer = c.kind;
    o.fused = c.fused;
    o.foreach = c.foreach;
    auto r = train(o, mc);
    ASSERT_TRUE(r.ok()) << r.status().message();
    SCOPED_TRACE(r->optimizer_class + (c.fused ? " fused" : c.foreach ? " foreach" : ""));
    const MemoryFacts& m = r->memory;
    EXPECT_EQ(m.device, "cpu");
    EXPECT_EQ(m.batch_size, 16);
    EXPECT_EQ(m.parameter_bytes, param_bytes);
    EXPECT_EQ(m.parameter_bytes_by_dtype.at("float32"), param_bytes);
    EXPECT_EQ(m.gradient_bytes, param_bytes);
    EXPECT_EQ(m.optimizer_state_bytes, c.state_bytes);
    EXPECT_EQ(m.optimizer_class, r->optimizer_class);
    const auto f = facts_json(o, *r)["memory"];
    EXPECT_EQ(f["optimizer_state_bytes_by_class"][r->optimizer_class], c.state_bytes) << f.dump();
  }
}

// The forward's heap growth (the workload's activation figure on the CPU) is what the MLP must hold for backward:
// each hidden layer keeps at least its Linear output and its LayerNorm output (2 x batch x hidden floats), and it
// scales with the batch. Checked against those shapes at two batch sizes, with the per-step series and the host
// figures present.
TEST(WorkloadMemory, ForwardActivationsMatchTheShapesAndScaleWithTheBatch) {
  if (heap_in_use_bytes() < 0) GTEST_SKIP() << "the C heap cannot be read here (not glibc, or another allocator)";
  ModelConfig mc = tiny_config(ModelKind::kMlp);
  mc.features = 256;
  mc.hidden = 512;
  mc.mlp_layers = 3;
  auto activations = [&](int64_t batch) {
    auto o = cpu_options(ModelKind::kMlp, 5);
    o.warmup = 1;
    o.batch_size = batch;
    auto r = train(o, mc);
    EXPECT_TRUE(r.ok()) << r.status().message();
    if (!r.ok()) return int64_t{0};
    EXPECT_EQ(r->memory.heap_in_use_at_start_bytes.size(), 6u);
    EXPECT_GT(r->memory.rss_peak_bytes, 0);
    EXPECT_GT(r->memory.ram_total_bytes, 0);
    const auto f = facts_json(o, *r)["memory"];
    EXPECT_EQ(f["steps"]["heap_in_use_at_start_bytes"].size(), 6u) << f.dump();
    EXPECT_EQ(f["activation_heap_bytes"], r->memory.activation_heap_bytes);
    return r->memory.activation_heap_bytes;
  };
  for (int64_t batch : {128, 512}) {
    const int64_t a = activations(batch);
    const double held = 2.0 * batch * mc.hidden * mc.mlp_layers * 4;  // bytes the backward must find
    EXPECT_GE(a, 0.9 * held) << "batch " << batch;
    EXPECT_LE(a, 2.5 * held) << "batch " << batch;
  }
}

// facts.loss for tune's quality guard, in the shim's shape: every step's loss (warm-up included), steps from 1.
TEST(WorkloadTrain, FactsCarryTheLossOfEveryStep) {
  auto o = cpu_options(ModelKind::kMlp, 4);
  o.warmup = 2;
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_TRUE(r.ok()) << r.status().message();
  const auto loss = facts_json(o, *r)["loss"];
  ASSERT_TRUE(loss.is_object()) << facts_json(o, *r).dump();
  EXPECT_EQ(loss["recorded"], true);
  EXPECT_EQ(loss["steps"], nlohmann::json::array({1, 2, 3, 4, 5, 6}));
  ASSERT_EQ(loss["values"].size(), 6u);
  for (size_t i = 0; i < 6; ++i) EXPECT_FLOAT_EQ(loss["values"][i].get<float>(), r->losses[i]);
  EXPECT_EQ(loss["warmup_steps"], 2);
  TrainResult bad = *r;
  bad.losses = {1.0f, std::nanf(""), INFINITY};
  EXPECT_EQ(facts_json(o, bad)["loss"]["values"], nlohmann::json::array({1.0, "nan", "inf"}));
  bad.losses.clear();
  EXPECT_FALSE(facts_json(o, bad).contains("loss"));  // the set-up facts, before any step
}

TEST(WorkloadTrain, EveryModelLowersItsLossOnTheCpu) {
  for (auto kind : {ModelKind::kMlp, ModelKind::kCnn, ModelKind::kTransformer}) {
    auto r = train(cpu_options(kind, 30), tiny_config(kind));
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(r->device, "cpu");
    EXPECT_EQ(r->timings.size(), 30u);
    EXPECT_GT(r->samples_per_s, 0.0);
    SCOPED_TRACE(to_string(kind));
    expect_loss_falls(*r, 0.05);
  }
}

TEST(WorkloadTrain, Bf16AutocastRunsOnTheCpu) {
  auto o = cpu_options(ModelKind::kMlp, 30);
  o.amp = AmpMode::kBf16;
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->grad_scaler);
  EXPECT_EQ(r->param_dtypes, std::vector<std::string>{"float32"});  // autocast leaves parameters in fp32
  expect_loss_falls(*r, 0.05);
}

TEST(WorkloadTrain, Fp16WithTheLossScalerAndFusedAdamWRunsOnTheCpu) {
  auto o = cpu_options(ModelKind::kMlp, 30);
  o.amp = AmpMode::kFp16;
  o.fused = true;
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->grad_scaler);
  EXPECT_TRUE(r->optimizer_fused);
  expect_loss_falls(*r, 0.05);
}

TEST(WorkloadTrain, PlantedFlagsChangeWhatTheRunRecords) {
  auto o = cpu_options(ModelKind::kMlp, 3);
  o.planted.float64 = true;
  o.planted.host_sync = true;
  o.planted.cpu_tensors = true;
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->param_dtypes, std::vector<std::string>{"float64"});
  const auto facts = facts_json(o, *r);
  EXPECT_EQ(facts["params"]["dtypes"][0], "float64");
  EXPECT_EQ(facts["workload"]["planted"].size(), 3u);
}

TEST(WorkloadTrain, HostWorkRunsInsideEveryStep) {
  auto o = cpu_options(ModelKind::kMlp, 3);
  o.host_work_us = 20'000;
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_TRUE(r.ok()) << r.status().message();
  ASSERT_EQ(r->timings.size(), 3u);
  // burn_cpu is calibrated on the fastest of its samples: on a faster moment of the core it may end a little
  // early, never by a tenth.
  for (const auto& t : r->timings) EXPECT_GE(t.step_ms, 18.0);
  EXPECT_EQ(result_json(o, *r)["config"]["host_work_us"], 20'000);
}

TEST(WorkloadTrain, CudaRequestWithoutAGpuIsAnUsageError) {
  if (torch::cuda::is_available()) GTEST_SKIP() << "a CUDA device is present";
  auto o = cpu_options(ModelKind::kMlp, 1);
  o.device = DeviceChoice::kCuda;
  auto r = train(o, tiny_config(ModelKind::kMlp));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().exit_code(), 2);
}

}  // namespace
}  // namespace profile_train::workload
