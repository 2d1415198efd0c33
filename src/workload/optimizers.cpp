#include "optimizers.h"

#include <torch/optim.h>

#include <unordered_set>

namespace profile_train::workload {
namespace {

// Adds the bytes of `t`'s storage to `total` unless that storage was counted already.
void add_storage(const torch::Tensor& t, std::unordered_set<const void*>& seen, int64_t& total) {
  if (!t.defined()) return;
  const auto& storage = t.storage();
  if (!seen.insert(storage.data()).second) return;
  total += static_cast<int64_t>(storage.nbytes());
}

// The plain per-parameter update of torch::optim (a for-loop of small kernels per parameter).
class TorchOptimizer : public WorkloadOptimizer {
 public:
  TorchOptimizer(OptimizerKind kind, std::vector<torch::Tensor> params) {
    params_ = params;
    switch (kind) {
      case OptimizerKind::kSgd:
        class_name_ = "SGD";
        lr_ = 0.05;
        opt_ = std::make_unique<torch::optim::SGD>(params, torch::optim::SGDOptions(lr_).momentum(0.9));
        break;
      case OptimizerKind::kAdam:
        class_name_ = "Adam";
        lr_ = 2e-3;
        opt_ = std::make_unique<torch::optim::Adam>(params, torch::optim::AdamOptions(lr_).weight_decay(0.0));
        break;
      case OptimizerKind::kAdamW:
        class_name_ = "AdamW";
        lr_ = 2e-3;
        weight_decay_ = 0.01;
        opt_ = std::make_unique<torch::optim::AdamW>(params,
                                                     torch::optim::AdamWOptions(lr_).weight_decay(weight_decay_));
        break;
    }
  }
  void zero_grad() override { opt_->zero_grad(/*set_to_none=*/true); }
  void step(const torch::Tensor*, const torch::Tensor*) override { opt_->step(); }

  int64_t state_bytes() const override {
    std::unordered_set<const void*> seen;
    int64_t total = 0;
    for (const auto& [key, state] : opt_->state()) {
      (void)key;
      if (const auto* s = dynamic_cast<const torch::optim::SGDParamState*>(state.get())) {
        add_storage(s->momentum_buffer(), seen, total);
      } else if (const auto* a = dynamic_cast<const torch::optim::AdamParamState*>(state.get())) {
        add_storage(a->exp_avg(), seen, total);
        add_storage(a->exp_avg_sq(), seen, total);
        add_storage(a->max_exp_avg_sq(), seen, total);
      } else if (const auto* w = dynamic_cast<const torch::optim::AdamWParamState*>(state.get())) {
        add_storage(w->exp_avg(), seen, total);
        add_storage(w->exp_avg_sq(), seen, total);
        add_storage(w->max_exp_avg_sq(), seen, total);
      }
    }
    return total;
  }

 private:
  std::unique_ptr<torch::optim::Optimizer> opt_;
};

// Multi-tensor update: --foreach uses ATen _foreach_* ops (a few kernels per step for all parameters),
// --fused the single-kernel _fused_sgd_ / _fused_adam_ / _fused_adamw_ (CPU and CUDA kernels in 2.11).
class MultiTensorOptimizer : public WorkloadOptimizer {
 public:
  MultiTensorOptimizer(OptimizerKind kind, bool fused, std::vector<torch::Tensor> params) : kind_(kind) {
    params_ = std::move(params);
    fused_ = fused;
    foreach_ = !fused;
    switch (kind) {
      case OptimizerKind::kSgd: class_name_ = "SGD"; lr_ = 0.05; break;
      case OptimizerKind::kAdam: class_name_ = "Adam"; lr_ = 2e-3; break;
      case OptimizerKind::kAdamW: class_name_ = "AdamW"; lr_ = 2e-3; weight_decay_ = 0.01; break;
    }
    torch::NoGradGuard no_grad;
    for (const auto& p : params_) {
      if (kind == OptimizerKind::kSgd) {
        momentum_.push_back(torch::zeros_like(p));
      } else {
        exp_avg_.push_back(torch::zeros_like(p));
        exp_avg_sq_.push_back(torch::zeros_like(p));
        // Fused kernels read the step count from a float32 tensor on the parameter's device.
        if (fused_) steps_.push_back(torch::zeros({}, p.options().dtype(torch::kFloat)));
      }
    }
  }

  void zero_grad() override {
    for (auto& p : params_) {
      if (p.mutable_grad().defined()) p.mutable_grad().reset();
    }
  }

  bool supports_amp_scaling() const override { return fused_; }

  void step(const torch::Tensor* grad_scale, const torch::Tensor* found_inf) override {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> p, g, a, b, s;
    for (size_t i = 0; i < params_.size(); ++i) {
      const auto& grad = params_[i].grad();
      if (!grad.defined()) continue;
      p.push_back(params_[i]);
      g.push_back(grad);
      if (kind_ == OptimizerKind::kSgd) {
        a.push_back(momentum_[i]);
      } else {
        a.push_back(exp_avg_[i]);
        b.push_back(exp_avg_sq_[i]);
        if (fused_) s.push_back(steps_[i]);
      }
    }
    if (p.empty()) return;
    std::optional<torch::Tensor> gs, fi;
    if (grad_scale) gs = *grad_scale;
    if (found_inf) fi = *found_inf;
    constexpr double kMomentum = 0.9, kBeta1 = 0.9, kBeta2 = 0.999, kEps = 1e-8;

    if (kind_ == OptimizerKind::kSgd) {
      if (fused_) {
        at::_fused_sgd_(p, g, a, weight_decay_, kMomentum, lr_, /*dampening=*/0.0, /*nesterov=*/false,
                        /*maximize=*/false, /*is_first_step=*/step_count_ == 0, gs, fi);
      } else {
        if (step_count_ == 0) {
          for (size_t i = 0; i < a.size(); ++i) a[i].copy_(g[i]);
        } else {
          at::_foreach_mul_(a, kMomentum);
          at::_foreach_add_(a, g, 1.0);
        }
        at::_foreach_add_(p, a, -lr_);
      }
      ++step_count_;
      return;
    }

    const bool decoupled = kind_ == OptimizerKind::kAdamW;
    if (fused_) {
      at::_foreach_add_(s, 1.0);
      if (decoupled) {
        at::_fused_adamw_(p, g, a, b, /*max_exp_avg_sqs=*/{}, s, lr_, kBeta1, kBeta2, weight_decay_, kEps,
                          /*amsgrad=*/false, /*maximize=*/false, gs, fi);
      } else {
        at::_fused_adam_(p, g, a, b, /*max_exp_avg_sqs=*/{}, s, lr_, kBeta1, kBeta2, weight_decay_, kEps,
                         /*amsgrad=*/false, /*maximize=*/false, gs, fi);
      }
      if (fi) {
        // A skipped step (inf/NaN gradients) must not advance the bias correction.
        for (auto& step : s) step.sub_(*fi);
      }
      ++step_count_;
      return;
    }

    ++step_count_;
    const double t = static_cast<double>(step_count_);
    const double bias1 = 1.0 - std::pow(kBeta1, t);
    const double bias2_sqrt = std::sqrt(1.0 - std::pow(kBeta2, t));
    if (decoupled && weight_decay_ != 0.0) at::_foreach_mul_(p, 1.0 - lr_ * weight_decay_);
    if (!decoupled && weight_decay_ != 0.0) g = at::_foreach_add(g, p, weight_decay_);
    at::_foreach_lerp_(a, g, 1.0 - kBeta1);
    at::_foreach_mul_(b, kBeta2);
    at::_foreach_addcmul_(b, g, g, 1.0 - kBeta2);
    auto denom = at::_foreach_sqrt(b);
    at::_foreach_div_(denom, bias2_sqrt);
    at::_foreach_add_(denom, kEps);
    at::_foreach_addcdiv_(p, a, denom, -lr_ / bias1);
  }

  int64_t state_bytes() const override {
    std::unordered_set<const void*> seen;
    int64_t total = 0;
    for (const auto* list : {&momentum_, &exp_avg_, &exp_avg_sq_, &steps_}) {
      for (const auto& t : *list) add_storage(t, seen, total);
    }
    return total;
  }

 private:
  OptimizerKind kind_;
  int64_t step_count_ = 0;
  std::vector<torch::Tensor> momentum_, exp_avg_, exp_avg_sq_, steps_;
};

}  // namespace

std::vector<torch::Tensor> WorkloadOptimizer::grads() const {
  std::vector<torch::Tensor> out;
  for (const auto& p : params_) {
    if (p.grad().defined()) out.push_back(p.grad());
  }
  return out;
}

std::unique_ptr<WorkloadOptimizer> make_optimizer(OptimizerKind kind, bool fused, bool foreach,
                                                  std::vector<torch::Tensor> params) {
  if (fused || foreach) return std::make_unique<MultiTensorOptimizer>(kind, fused, std::move(params));
  return std::make_unique<TorchOptimizer>(kind, std::move(params));
}

}  // namespace profile_train::workload
