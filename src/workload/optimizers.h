// The workload's optimizers: torch::optim for the plain for-loop update, ATen _foreach_* / _fused_* kernels
// for --foreach / --fused (which torch::optim does not offer in C++).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <torch/nn.h>

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
  // Bytes of every tensor the optimizer keeps between steps (momentum buffers; Adam/AdamW's two moments, and
  // the fused kernels' step counters), each storage once: facts.memory.optimizer_state_bytes. torch::optim
  // keeps its step count as an integer, not a tensor.
  virtual int64_t state_bytes() const = 0;

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

}  // namespace profile_train::workload
