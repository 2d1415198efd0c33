// Mixed precision for the workload: an autocast region and, for fp16, a dynamic loss scaler.
#pragma once

#include <optional>

#include <torch/nn.h>

#include "optimizers.h"

namespace profile_train::workload {

// RAII autocast region for one device type (LibTorch 2.11 has the device-typed setters in
// ATen/autocast_mode.h but no guard). Mirrors torch.autocast.__enter__/__exit__. No region without a dtype.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, std::optional<at::ScalarType> dtype);
  ~AutocastScope();
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kFloat;
};

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

}  // namespace profile_train::workload
