// Synthetic, deterministic, learnable data for the workload models, served by a torch::data DataLoader
// whose workers are threads (LibTorch has no worker processes).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include <torch/data.h>

#include "models.h"

namespace profile_train::workload {

struct DataConfig {
  ModelConfig model;
  uint64_t seed = 0;
  int64_t size = 1024;              // samples in the dataset
  int64_t slow_preprocess_us = 0;   // planted: per-sample CPU work (wall microseconds)
  bool cpu_normalize = false;       // planted: normalize each sample on the CPU (yields float32)
};

// Sample i is a pure function of (seed, i), so any worker thread can produce it and runs repeat exactly.
//   cnn:         data uint8 [3,H,W] (float32 normalized with cpu_normalize), target int64 [] (class);
//                a class is an oriented stripe pattern plus a colour tint, at a random phase, plus noise.
//                The images come from a pool of min(size, 512) generated in the constructor: sample i is
//                pool image i % 512, so the unplanted data path costs a copy, not a render.
//   mlp:         data float32 [F] raw features (mean 50, std 20 before normalization), target int64 [];
//                the class is argmax(W z) of a fixed random teacher W.
//   transformer: data int64 [T] tokens, target int64 [T] = next tokens of an arithmetic sequence mod V
//                with a per-sample start and stride.
class SyntheticDataset : public torch::data::datasets::Dataset<SyntheticDataset> {
 public:
  explicit SyntheticDataset(DataConfig cfg);
  torch::data::Example<> get(size_t index) override;
  std::optional<size_t> size() const override { return static_cast<size_t>(cfg_.size); }
  const DataConfig& config() const { return cfg_; }

 private:
  struct Tables;  // read-only class templates / teacher weights, shared by the worker copies
  DataConfig cfg_;
  std::shared_ptr<const Tables> tables_;
};

// Stacks samples into a batch and, when asked, pins it (page-locked memory for non_blocking H2D copies).
// Runs in the worker thread that produced the samples, like PyTorch's collate + pin step.
class StackAndPin
    : public torch::data::transforms::BatchTransform<std::vector<torch::data::Example<>>, torch::data::Example<>> {
 public:
  explicit StackAndPin(bool pin) : pin_(pin) {}
  torch::data::Example<> apply_batch(std::vector<torch::data::Example<>> samples) override;

 private:
  bool pin_;
};

using WorkloadDataset = torch::data::datasets::MapDataset<SyntheticDataset, StackAndPin>;
using WorkloadLoader = torch::data::StatelessDataLoader<WorkloadDataset, torch::data::samplers::RandomSampler>;

struct LoaderConfig {
  int64_t batch_size = 32;
  int64_t workers = 0;
  int64_t prefetch = 2;  // jobs in flight per worker
  bool pin_memory = false;  // only honoured when CUDA is available
};

std::unique_ptr<WorkloadLoader> make_loader(SyntheticDataset dataset, const LoaderConfig& cfg);

// A fixed amount of arithmetic that takes `us` microseconds on an idle core of this machine: the planted
// per-sample preprocessing (--slow-preprocess-us, like a decode) and the per-step host work (--host-work-us).
// Fixed work, not a wall-clock deadline: like a real decode it takes longer when it shares a core, so N
// DataLoader workers on C < N cores cannot hide more of it than C cores can run.
void burn_cpu(int64_t us);

// The normalization a well-configured pipeline runs on the device batch: uint8 images or raw features ->
// normalized floating point of `dtype`. Returns `x` converted to `dtype` when the dataset already
// normalized it (cpu_normalize) and `x` unchanged for token ids.
torch::Tensor normalize_on_device(const DataConfig& cfg, const torch::Tensor& x, torch::ScalarType dtype);

}  // namespace profile_train::workload
