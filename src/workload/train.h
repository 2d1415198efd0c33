// The training loop of `profile-train-workload`: warm-up and measured steps with per-phase host timings.
// Torch-free header (the loop itself, train.cpp, is LibTorch); optimizers.h, amp.h, models.h and data.h are
// the loop's parts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu_info.h"
#include "device_info.h"
#include "memory_facts.h"
#include "model_config.h"
#include "options.h"
#include "profile_train/common/status.h"

namespace profile_train::workload {

struct StepTiming {  // host wall milliseconds of one measured step and of its phases
  double step_ms = 0, data_ms = 0, h2d_ms = 0, forward_ms = 0, backward_ms = 0, optimizer_ms = 0;
};

struct TrainResult {
  std::string device;           // "cpu" or "cuda:0"
  int64_t batch_size = 0;       // effective
  std::vector<StepTiming> timings;  // measured steps only
  std::vector<float> losses;    // every step, warm-up included
  double measured_s = 0;        // wall time of the measured steps (device drained at both ends)
  double samples_per_s = 0;
  int64_t param_count = 0;
  std::vector<std::string> param_dtypes;
  int64_t peak_memory_bytes = -1;  // CUDA caching allocator peak over the run; -1 when not on CUDA
  MemoryFacts memory;              // facts.memory: static bytes, activations, per-step figures
  GpuInfo gpu;
  CpuInfo cpu;
  std::string optimizer_class;
  bool optimizer_foreach = false, optimizer_fused = false;
  double weight_decay = 0;
  bool grad_scaler = false;
  bool tf32_matmul = false, tf32_cudnn = false, cudnn_benchmark = false;
  bool has_conv = false;
  bool pin_memory_effective = false;
  double data_wait_fraction = 0;  // sum(data wait) / sum(step) over measured steps
};

// Called after each measured step with its index among the measured steps (0-based).
using StepCallback = std::function<void(int64_t measured_index, const StepTiming&)>;
// Called once, before the first step, with the set-up part of the result (device, optimizer, dtypes...).
using ReadyCallback = std::function<void(const TrainResult& setup)>;

// Runs warm-up + measured steps. Errors: kInvalidArgument for unusable settings (e.g. --device cuda
// without a GPU); LibTorch exceptions become kInternal with their first line.
StatusOr<TrainResult> train(const WorkloadOptions& options, const ModelConfig& model_config,
                            const StepCallback& on_step = {}, const ReadyCallback& on_ready = {});

}  // namespace profile_train::workload
