// The training loop of `profile-train-workload`, its optimizers (torch::optim for the plain for-loop update,
// ATen _foreach_* / _fused_* kernels for --foreach / --fused, which torch::optim does not offer in C++) and
// a dynamic loss scaler for fp16 autocast.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>
#include <torch/cuda.h>
#include <torch/nn.h>

#include "data.h"
#include "device_info.h"
#include "models.h"
#include "options.h"

namespace profile_train::workload {

class WorkloadOptimizer {
 public:
  virtual ~WorkloadOptimizer() = default;
  // Gradients set to None (undefined), like zero_grad(set_to_none=True).
  virtual void zero_grad() = 0;
  // One update. `grad_scale`/`found_inf` are given only when supports_amp_scaling(): the kernel divides the
  // gradients by grad_scale and skips the update where found_inf != 0, without a host sync.
  virtual void step(const torch::Tensor* grad_scale = nullptr, const torch::Tensor* found_inf = nullptr) = 0;
  virtual bool supports_amp_scaling() const { return false; }
  // Defined gradients of the parameters, in parameter order.
  std::vector<torch::Tensor> grads() const;

  const std::string& class_name() const { return class_name_; }  // "SGD" | "Adam" | "AdamW"
  bool foreach() const { return foreach_; }
  bool fused() const { return fused_; }
  double weight_decay() const { return weight_decay_; }
  double lr() const { return lr_; }

 protected:
  std::vector<torch::Tensor> params_;
  std::string class_name_;
  bool foreach_ = false;
  bool fused_ = false;
  double weight_decay_ = 0.0;
  double lr_ = 0.0;
};

// sgd: lr 0.05, momentum 0.9; adam: lr 2e-3, no decay; adamw: lr 2e-3, weight decay 0.01.
std::unique_ptr<WorkloadOptimizer> make_optimizer(OptimizerKind kind, bool fused, bool foreach,
                                                  std::vector<torch::Tensor> params);

// Dynamic loss scaling for fp16 (what torch.amp.GradScaler does; LibTorch 2.11 has no C++ GradScaler):
// scale 2^16, x2 after 2000 finite steps, x0.5 and skip the step on inf/NaN. State lives on the device.
class DynamicLossScaler {
 public:
  explicit DynamicLossScaler(const torch::Device& device);
  torch::Tensor scale(const torch::Tensor& loss) const { return loss * scale_; }
  // Unscales (or lets a fused optimizer unscale), steps unless a gradient is not finite, updates the scale.
  // The non-fused path reads found_inf on the host (one sync per step, as torch.amp.GradScaler does).
  void step_and_update(WorkloadOptimizer& opt);
  double current_scale() const;

 private:
  torch::Tensor scale_;           // float32 []
  torch::Tensor growth_tracker_;  // int32 []
  torch::Tensor found_inf_;       // float32 []
};

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
  int64_t peak_memory_bytes = -1;  // CUDA caching allocator peak; -1 when not on CUDA
  GpuInfo gpu;
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

// facts.* keys of reports/REPORT_FORMAT.md for this run, and the result JSON written by --result.
nlohmann::json facts_json(const WorkloadOptions& options, const TrainResult& r);
nlohmann::json result_json(const WorkloadOptions& options, const TrainResult& r);

}  // namespace profile_train::workload
