#include "data.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <random>

#include <torch/cuda.h>

namespace profile_train::workload {
namespace {

// Image statistics of the synthetic CNN data, in pixel units; the normalization constants follow from them.
constexpr float kPixelMean = 128.0f;
constexpr float kPixelStd = 64.0f;
// Raw MLP feature scale (features = kFeatMean + kFeatStd * z).
constexpr float kFeatMean = 50.0f;
constexpr float kFeatStd = 20.0f;
// Distinct cnn images; sample i is image i % kCnnPoolSize (see the SyntheticDataset constructor).
constexpr int64_t kCnnPoolSize = 512;

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

}  // namespace

namespace {

// One unit of burn_cpu's work: a dependent chain of 256 sqrt/multiply-adds (no vectorizing, no skipping).
float burn_units(int64_t units, float acc) {
  volatile float sink = 0.0f;
  for (int64_t u = 0; u < units; ++u) {
    for (int k = 0; k < 256; ++k) acc = acc * 0.999f + std::sqrt(std::fabs(acc) + static_cast<float>(k));
    sink = acc;
  }
  return sink;
}

// Units per microsecond on an idle core: the fastest of several ~2 ms samples, so a core shared at start-up
// (other processes, the first DataLoader workers) does not make later burns short.
double units_per_us() {
  static const double rate = [] {
    double best = 0;
    float acc = 1.0f;
    int64_t units = 64;
    for (int trial = 0; trial < 7; ++trial) {
      const auto t0 = std::chrono::steady_clock::now();
      acc = burn_units(units, acc);
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
      if (us > 0) best = std::max(best, static_cast<double>(units) / us);
      if (us < 2000) units *= 2;  // grow the sample until it lasts ~2 ms
    }
    return best > 0 ? best : 1.0;
  }();
  return rate;
}

}  // namespace

void burn_cpu(int64_t us) {
  if (us <= 0) return;
  const auto units = static_cast<int64_t>(std::llround(static_cast<double>(us) * units_per_us()));
  (void)burn_units(std::max<int64_t>(1, units), 1.0f);
}

struct SyntheticDataset::Tables {
  // cnn: per class (fx, fy, tint_r, tint_g, tint_b)
  std::vector<std::array<float, 5>> cnn_classes;
  // cnn: the image pool, generated once (uint8 [3,H,W] and its class); sample i is pool[i % size]
  std::vector<std::pair<torch::Tensor, int64_t>> cnn_pool;
  // mlp: teacher weights [num_classes x features], row-major
  std::vector<float> teacher;
};

namespace {

// One synthetic image of the pool: an oriented stripe pattern of its class, a tint, a random phase, noise.
std::pair<torch::Tensor, int64_t> make_cnn_image(const ModelConfig& m, const std::vector<std::array<float, 5>>& classes,
                                                 uint64_t seed, size_t index) {
  std::mt19937_64 rng(splitmix64(seed * 0x100000001B3ull ^ splitmix64(index)));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  const int64_t label = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.num_classes));
  const int64_t hw = m.image_size;
  const auto& cls = classes[static_cast<size_t>(label)];
  const float phase = 6.2831853f * uniform(rng);
  auto img = torch::empty({3, hw, hw}, torch::kUInt8);
  uint8_t* px = img.data_ptr<uint8_t>();
  for (int64_t ch = 0; ch < 3; ++ch) {
    for (int64_t y = 0; y < hw; ++y) {
      for (int64_t x = 0; x < hw; ++x) {
        const float u = static_cast<float>(x) / static_cast<float>(hw);
        const float v = static_cast<float>(y) / static_cast<float>(hw);
        const float stripe = std::sin(6.2831853f * (cls[0] * u + cls[1] * v) + phase);
        const float value = kPixelMean + kPixelStd * (0.6f * stripe + cls[2 + ch] + 0.5f * normal(rng));
        px[(ch * hw + y) * hw + x] = static_cast<uint8_t>(std::lround(std::clamp(value, 0.0f, 255.0f)));
      }
    }
  }
  return {img, label};
}

}  // namespace

SyntheticDataset::SyntheticDataset(DataConfig cfg) : cfg_(std::move(cfg)) {
  auto t = std::make_shared<Tables>();
  std::mt19937_64 rng(splitmix64(cfg_.seed ^ 0xC1A55E5ull));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const auto& m = cfg_.model;
  for (int64_t c = 0; c < m.num_classes; ++c) {
    // Distinct orientations/frequencies: angle spread over half a turn, 2-4 cycles across the image.
    const float angle = 3.14159265f * static_cast<float>(c) / static_cast<float>(m.num_classes);
    const float cycles = 2.0f + static_cast<float>(c % 3);
    t->cnn_classes.push_back({cycles * std::cos(angle), cycles * std::sin(angle), 0.3f * normal(rng),
                              0.3f * normal(rng), 0.3f * normal(rng)});
  }
  t->teacher.resize(static_cast<size_t>(m.num_classes * m.features));
  for (auto& w : t->teacher) w = normal(rng);
  if (m.kind == ModelKind::kCnn) {
    // Generating an image costs ~40 ns per pixel (150 us at 32x32, 0.6 ms at 64x64): per sample, that would
    // make every large-image run input bound by accident. A pool generated up front keeps the unplanted data
    // path nearly free, as for a dataset already decoded in memory; --slow-preprocess-us adds the planted cost.
    const size_t pool = static_cast<size_t>(std::clamp<int64_t>(cfg_.size, 1, kCnnPoolSize));
    t->cnn_pool.reserve(pool);
    for (size_t i = 0; i < pool; ++i) t->cnn_pool.push_back(make_cnn_image(m, t->cnn_classes, cfg_.seed, i));
  }
  tables_ = std::move(t);
}

torch::data::Example<> SyntheticDataset::get(size_t index) {
  const auto& m = cfg_.model;
  std::mt19937_64 rng(splitmix64(cfg_.seed * 0x100000001B3ull ^ splitmix64(index)));
  std::normal_distribution<float> normal(0.0f, 1.0f);

  if (m.kind == ModelKind::kTransformer) {
    const int64_t start = static_cast<int64_t>(rng() % static_cast<uint64_t>(m.vocab));
    const int64_t stride = 1 + static_cast<int64_t>(rng() % 7);
    auto seq = torch::empty({m.seq_len + 1}, torch::kLong);
    auto* s = seq.data_ptr<int64_t>();
    for (int64_t i = 0; i <= m.seq_len; ++i) s[i] = (start + stride * i) % m.vocab;
    burn_cpu(cfg_.slow_preprocess_us);
    return {seq.slice(0, 0, m.seq_len).clone(), seq.slice(0, 1, m.seq_len + 1).clone()};
  }

  if (m.kind == ModelKind::kCnn) {
    const auto& [pooled, label] = tables_->cnn_pool[index % tables_->cnn_pool.size()];
    auto img = pooled.clone();
    burn_cpu(cfg_.slow_preprocess_us);
    if (cfg_.cpu_normalize) {
      // The torchvision habit: ToTensor + Normalize per sample on the CPU (float32 out, 4x the H2D bytes).
      img = (img.to(torch::kFloat).div(255.0f) - kPixelMean / 255.0f) / (kPixelStd / 255.0f);
    }
    return {img, torch::tensor(label, torch::kLong)};
  }

  // mlp
  std::vector<float> z(static_cast<size_t>(m.features));
  for (auto& v : z) v = normal(rng);
  int64_t best = 0;
  float best_score = -1e30f;
  for (int64_t c = 0; c < m.num_classes; ++c) {
    float score = 0.0f;
    const float* w = tables_->teacher.data() + c * m.features;
    for (int64_t f = 0; f < m.features; ++f) score += w[f] * z[static_cast<size_t>(f)];
    if (score > best_score) best_score = score, best = c;
  }
  for (auto& v : z) v = kFeatMean + kFeatStd * v;
  burn_cpu(cfg_.slow_preprocess_us);
  auto feats = torch::from_blob(z.data(), {m.features}, torch::kFloat).clone();
  if (cfg_.cpu_normalize) feats = (feats - kFeatMean) / kFeatStd;
  return {feats, torch::tensor(best, torch::kLong)};
}

torch::data::Example<> StackAndPin::apply_batch(std::vector<torch::data::Example<>> samples) {
  std::vector<torch::Tensor> data, target;
  data.reserve(samples.size());
  target.reserve(samples.size());
  for (auto& s : samples) {
    data.push_back(std::move(s.data));
    target.push_back(std::move(s.target));
  }
  auto x = torch::stack(data);
  auto y = torch::stack(target);
  if (pin_) {
    x = x.pin_memory();
    y = y.pin_memory();
  }
  return {x, y};
}

std::unique_ptr<WorkloadLoader> make_loader(SyntheticDataset dataset, const LoaderConfig& cfg) {
  const bool pin = cfg.pin_memory && torch::cuda::is_available();
  const auto n = *dataset.size();
  auto options = torch::data::DataLoaderOptions()
                     .batch_size(static_cast<size_t>(cfg.batch_size))
                     .workers(static_cast<size_t>(cfg.workers))
                     .drop_last(true);
  if (cfg.workers > 0) options.max_jobs(static_cast<size_t>(cfg.prefetch * cfg.workers));
  return torch::data::make_data_loader(dataset.map(StackAndPin(pin)), torch::data::samplers::RandomSampler(n),
                                       options);
}

torch::Tensor normalize_on_device(const DataConfig& cfg, const torch::Tensor& x, torch::ScalarType dtype) {
  switch (cfg.model.kind) {
    case ModelKind::kTransformer: return x;
    case ModelKind::kCnn:
      if (cfg.cpu_normalize) return x.to(dtype);
      return (x.to(dtype) - kPixelMean) * (1.0f / kPixelStd);
    case ModelKind::kMlp:
      if (cfg.cpu_normalize) return x.to(dtype);
      return (x.to(dtype) - kFeatMean) * (1.0f / kFeatStd);
  }
  return x;
}

}  // namespace profile_train::workload
