#include "amp.h"

#include <ATen/autocast_mode.h>

namespace profile_train::workload {

AutocastScope::AutocastScope(c10::DeviceType device, std::optional<at::ScalarType> dtype)
    : device_(device), active_(dtype.has_value()) {
  if (!active_) return;
  prev_enabled_ = at::autocast::is_autocast_enabled(device_);
  prev_dtype_ = at::autocast::get_autocast_dtype(device_);
  at::autocast::set_autocast_enabled(device_, true);
  at::autocast::set_autocast_dtype(device_, *dtype);
  at::autocast::increment_nesting();
}

AutocastScope::~AutocastScope() {
  if (!active_) return;
  if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
  at::autocast::set_autocast_enabled(device_, prev_enabled_);
  at::autocast::set_autocast_dtype(device_, prev_dtype_);
}

DynamicLossScaler::DynamicLossScaler(const torch::Device& device) {
  const auto f32 = torch::TensorOptions(device).dtype(torch::kFloat);
  // 0-d tensors, as torch.amp.GradScaler keeps them (the fused kernels take found_inf as a scalar).
  scale_ = torch::full({}, 65536.0, f32);
  growth_tracker_ = torch::zeros({}, torch::TensorOptions(device).dtype(torch::kInt));
  found_inf_ = torch::zeros({}, f32);
}

void DynamicLossScaler::step_and_update(WorkloadOptimizer& opt) {
  auto grads = opt.grads();
  found_inf_.zero_();
  if (opt.supports_amp_scaling()) {
    // Check only (inverse scale 1); the fused kernel unscales and skips by itself: no host sync.
    auto one = torch::ones_like(scale_);
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, one);
    opt.step(&scale_, &found_inf_);
  } else {
    at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf_, scale_.reciprocal());
    if (found_inf_.item<float>() == 0.0f) opt.step();
  }
  at::_amp_update_scale_(scale_, growth_tracker_, found_inf_, /*growth=*/2.0, /*backoff=*/0.5,
                         /*growth_interval=*/2000);
}

double DynamicLossScaler::current_scale() const { return scale_.item<double>(); }

}  // namespace profile_train::workload
