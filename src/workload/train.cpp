#include "train.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <thread>

#include <ATen/autocast_mode.h>
#include <torch/cuda.h>
#include <torch/optim.h>

#include "nvtx_range.h"
#include "workload_main.h"

namespace profile_train::workload {
namespace {

using Clock = std::chrono::steady_clock;

double ms_between(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

std::string first_line(const std::string& s) { return s.substr(0, s.find('\n')); }

std::string dtype_name(torch::ScalarType t) {
  switch (t) {
    case torch::kFloat: return "float32";
    case torch::kDouble: return "float64";
    case torch::kHalf: return "float16";
    case torch::kBFloat16: return "bfloat16";
    default: return std::string(c10::toString(t));
  }
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

 private:
  OptimizerKind kind_;
  int64_t step_count_ = 0;
  std::vector<torch::Tensor> momentum_, exp_avg_, exp_avg_sq_, steps_;
};

// RAII autocast region for one device type (LibTorch 2.11 has the device-typed setters in
// ATen/autocast_mode.h but no guard). Mirrors torch.autocast.__enter__/__exit__.
class AutocastScope {
 public:
  AutocastScope(c10::DeviceType device, std::optional<at::ScalarType> dtype)
      : device_(device), active_(dtype.has_value()) {
    if (!active_) return;
    prev_enabled_ = at::autocast::is_autocast_enabled(device_);
    prev_dtype_ = at::autocast::get_autocast_dtype(device_);
    at::autocast::set_autocast_enabled(device_, true);
    at::autocast::set_autocast_dtype(device_, *dtype);
    at::autocast::increment_nesting();
  }
  ~AutocastScope() {
    if (!active_) return;
    if (at::autocast::decrement_nesting() == 0) at::autocast::clear_cache();
    at::autocast::set_autocast_enabled(device_, prev_enabled_);
    at::autocast::set_autocast_dtype(device_, prev_dtype_);
  }
  AutocastScope(const AutocastScope&) = delete;
  AutocastScope& operator=(const AutocastScope&) = delete;

 private:
  c10::DeviceType device_;
  bool active_;
  bool prev_enabled_ = false;
  at::ScalarType prev_dtype_ = at::kFloat;
};

// Small tensors of the input and loss computation, made every step. A well-written loop creates them on the
// device; the planted --cpu-tensors creates them with CPU defaults and copies each one: 7 small H2D copies
// per step for cnn/mlp (6 for the transformer), besides the batch. All are neutral (ones/zeros) except
// the noise, so both ways compute the same thing.
struct StepTensors {
  torch::Tensor temperature, class_weight, sample_weight;        // every model
  torch::Tensor input_scale, input_shift, noise_scale, noise;    // cnn, mlp
  torch::Tensor positions, token_weight, logit_bias;             // transformer
};

StepTensors make_step_tensors(const ModelConfig& mc, const torch::Tensor& x, torch::ScalarType dtype,
                              const torch::Device& device, bool on_cpu) {
  const auto opts = on_cpu ? torch::TensorOptions().dtype(dtype) : torch::TensorOptions(device).dtype(dtype);
  auto place = [&](torch::Tensor t) { return on_cpu ? t.to(device) : t; };
  const bool lm = mc.kind == ModelKind::kTransformer;
  const int64_t batch = x.size(0);
  StepTensors s;
  s.temperature = place(torch::ones({}, opts));
  s.class_weight = place(torch::ones({lm ? mc.vocab : mc.num_classes}, opts));
  s.sample_weight = place(torch::ones({batch}, opts));
  if (lm) {
    s.positions = place(torch::arange(mc.seq_len, opts.dtype(torch::kLong)));
    s.token_weight = place(torch::ones({batch, mc.seq_len}, opts));
    s.logit_bias = place(torch::zeros({mc.vocab}, opts));
  } else {
    s.input_scale = place(torch::ones({1}, opts));
    s.input_shift = place(torch::zeros({1}, opts));
    s.noise_scale = place(torch::full({}, 0.01, opts));
    s.noise = place(torch::randn(x.sizes(), opts));
  }
  return s;
}

// Floats per sample of the planted pageable side input: 512 Ki floats = 2 MiB per sample (64 MiB at 32).
constexpr int64_t kAuxFloatsPerSample = 512 * 1024;

StatusOr<TrainResult> train_impl(const WorkloadOptions& o, const ModelConfig& mc, const StepCallback& on_step,
                                 const ReadyCallback& on_ready) {
  const bool cuda_available = torch::cuda::is_available();
  if (o.device == DeviceChoice::kCuda && !cuda_available) {
    return InvalidArgument("--device cuda: LibTorch sees no CUDA device on this machine");
  }
  const bool use_cuda = o.device == DeviceChoice::kCuda || (o.device == DeviceChoice::kAuto && cuda_available);
  const torch::Device device = use_cuda ? torch::Device(torch::kCUDA, 0) : torch::Device(torch::kCPU);
  const int64_t threads = o.threads > 0 ? o.threads : std::max<int64_t>(1, std::thread::hardware_concurrency());
  torch::set_num_threads(static_cast<int>(threads));
  torch::manual_seed(o.seed);
  if (use_cuda) torch::cuda::manual_seed_all(o.seed);

  auto& ctx = at::globalContext();
  ctx.setBenchmarkCuDNN(o.cudnn_benchmark);
  ctx.setAllowTF32CuBLAS(o.tf32);
  ctx.setAllowTF32CuDNN(o.tf32);

  TrainResult r;
  r.device = use_cuda ? "cuda:0" : "cpu";
  r.batch_size = o.effective_batch_size();
  r.gpu = query_gpu();
  r.tf32_matmul = ctx.allowTF32CuBLAS();
  r.tf32_cudnn = ctx.allowTF32CuDNN();
  r.cudnn_benchmark = ctx.benchmarkCuDNN();

  const int64_t total_steps = o.warmup + o.steps;
  DataConfig dc;
  dc.model = mc;
  dc.seed = o.seed;
  dc.size = total_steps * r.batch_size;
  dc.slow_preprocess_us = o.planted.slow_preprocess_us;
  dc.cpu_normalize = o.planted.cpu_normalize;
  LoaderConfig lc;
  lc.batch_size = r.batch_size;
  lc.workers = o.workers;
  lc.prefetch = o.prefetch;
  lc.pin_memory = o.pin_memory && use_cuda;
  r.pin_memory_effective = lc.pin_memory;

  auto net = make_model(mc);
  const auto param_dtype = o.planted.float64 ? torch::kDouble : torch::kFloat;
  // Module::to(dtype) would also cast integer buffers (BatchNorm's num_batches_tracked): only ask for it
  // when the planted float64 needs it.
  if (param_dtype == torch::kFloat) {
    net->to(device);
  } else {
    net->to(device, param_dtype);
  }
  if (o.channels_last) to_channels_last(*net);
  net->train();
  r.has_conv = net->has_conv();
  for (const auto& p : net->parameters()) {
    r.param_count += p.numel();
    const auto name = dtype_name(p.scalar_type());
    if (std::find(r.param_dtypes.begin(), r.param_dtypes.end(), name) == r.param_dtypes.end()) {
      r.param_dtypes.push_back(name);
    }
  }
  auto opt = make_optimizer(o.optimizer, o.fused, o.foreach, net->parameters());
  r.optimizer_class = opt->class_name();
  r.optimizer_foreach = opt->foreach();
  r.optimizer_fused = opt->fused();
  r.weight_decay = opt->weight_decay();
  std::optional<DynamicLossScaler> scaler;
  if (o.amp == AmpMode::kFp16) scaler.emplace(device);
  r.grad_scaler = scaler.has_value();
  std::optional<at::ScalarType> autocast_dtype;
  if (o.amp == AmpMode::kBf16) autocast_dtype = at::kBFloat16;
  if (o.amp == AmpMode::kFp16) autocast_dtype = at::kHalf;

  // planted: a large side input, copied in full every step; pageable unless --pin-memory 1 (the pin-memory fix
  // pins it and copies it asynchronously, as it does the batches).
  torch::Tensor aux_host;
  if (o.planted.pageable_h2d) {
    aux_host = torch::rand({r.batch_size, kAuxFloatsPerSample}) * 2.0 - 1.0;
    if (lc.pin_memory) aux_host = aux_host.pin_memory();
  }

  const std::string step_name = "Optimizer.step#" + r.optimizer_class + ".step";
  const std::string zero_grad_name = "Optimizer.zero_grad#" + r.optimizer_class + ".zero_grad";
  const bool non_blocking = lc.pin_memory;

  if (on_ready) on_ready(r);

  auto loader = make_loader(SyntheticDataset(dc), lc);
  std::optional<torch::data::Iterator<torch::data::Example<>>> it;
  std::vector<torch::Tensor> loss_history;
  loss_history.reserve(static_cast<size_t>(total_steps));
  double host_sync_sink = 0.0;
  Clock::time_point measure_start = Clock::now();

  for (int64_t s = 0; s < total_steps; ++s) {
    const bool measured = s >= o.warmup;
    if (s == o.warmup) {
      if (use_cuda) torch::cuda::synchronize();
      measure_start = Clock::now();
    }
    StepTiming t;
    const auto t0 = Clock::now();
    Clock::time_point t1, t2, t3, t4;
    {
      NvtxRange step_range("ProfilerStep#" + std::to_string(s), measured);
      torch::data::Example<> batch;
      {
        NvtxRange range(kRangeDataWait, measured);
        if (!it) {
          it.emplace(loader->begin());
        } else {
          ++*it;
        }
        if (*it == loader->end()) return Internal("the DataLoader ran out of batches at step " + std::to_string(s));
        batch = **it;
      }
      t1 = Clock::now();
      torch::Tensor x, y, aux;
      {
        NvtxRange range(kRangeH2d, measured);
        x = batch.data.to(device, non_blocking);
        y = batch.target.to(device, non_blocking);
        // Pageable: a synchronous staged copy; pinned: an asynchronous DMA.
        if (aux_host.defined()) aux = aux_host.to(device, non_blocking);
      }
      t2 = Clock::now();
      {
        NvtxRange range(zero_grad_name, measured);
        opt->zero_grad();
      }
      torch::Tensor loss;
      {
        NvtxRange range(kRangeForward, measured);
        AutocastScope autocast(device.type(), autocast_dtype);
        x = normalize_on_device(dc, x, param_dtype);
        const StepTensors st = make_step_tensors(mc, x, param_dtype, device, o.planted.cpu_tensors);
        if (mc.kind == ModelKind::kTransformer) {
          set_transformer_positions(*net, st.positions);
        } else {
          x = x * st.input_scale + st.input_shift + st.noise * st.noise_scale;  // input jitter
        }
        if (o.channels_last && x.dim() == 4) x = x.contiguous(at::MemoryFormat::ChannelsLast);
        auto logits = net->forward(x);
        if (st.logit_bias.defined()) logits = logits + st.logit_bias;
        logits = logits / st.temperature;
        namespace F = torch::nn::functional;
        const auto ce = F::CrossEntropyFuncOptions().weight(st.class_weight);
        if (mc.kind == ModelKind::kTransformer) {
          loss = F::cross_entropy(logits.reshape({-1, logits.size(-1)}), y.reshape({-1}), ce) * st.token_weight.mean();
        } else {
          loss = F::cross_entropy(logits, y, ce);
        }
        loss = loss * st.sample_weight.mean();
        if (aux.defined()) loss = loss * (1.0 + 1e-3 * aux.mean());
      }
      t3 = Clock::now();
      {
        NvtxRange range(kRangeBackward, measured);
        (scaler ? scaler->scale(loss) : loss).backward();
      }
      t4 = Clock::now();
      {
        NvtxRange range(step_name, measured);
        if (scaler) {
          scaler->step_and_update(*opt);
        } else {
          opt->step();
        }
      }
      loss_history.push_back(loss.detach());
      if (o.planted.host_sync) host_sync_sink += loss.item<double>();  // planted: device->host sync each step
      // Per-step host bookkeeping (logging, metrics): overlaps the GPU's queue unless the step just synced.
      burn_cpu(o.host_work_us);
    }
    const auto t5 = Clock::now();
    if (measured) {
      t.data_ms = ms_between(t0, t1);
      t.h2d_ms = ms_between(t1, t2);
      t.forward_ms = ms_between(t2, t3);
      t.backward_ms = ms_between(t3, t4);
      t.optimizer_ms = ms_between(t4, t5);
      t.step_ms = ms_between(t0, t5);
      r.timings.push_back(t);
      if (on_step) on_step(s - o.warmup, t);
    }
  }
  if (use_cuda) torch::cuda::synchronize();
  const auto measure_end = Clock::now();
  loader.reset();  // joins the worker threads
  (void)host_sync_sink;

  r.measured_s = std::chrono::duration<double>(measure_end - measure_start).count();
  r.samples_per_s = r.measured_s > 0 ? static_cast<double>(o.steps * r.batch_size) / r.measured_s : 0.0;
  auto losses = torch::stack(loss_history).to(torch::kCPU, torch::kFloat).contiguous();
  r.losses.assign(losses.data_ptr<float>(), losses.data_ptr<float>() + losses.numel());
  double wait = 0, total = 0;
  for (const auto& t : r.timings) wait += t.data_ms, total += t.step_ms;
  r.data_wait_fraction = total > 0 ? wait / total : 0.0;
  if (use_cuda) r.peak_memory_bytes = gpu_peak_allocated_bytes();
  return r;
}

struct Summary {
  double mean = 0, median = 0, stddev = 0, min = 0, max = 0;
};

Summary summarize(std::vector<double> v) {
  Summary s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  s.mean = sum / static_cast<double>(v.size());
  const size_t n = v.size();
  s.median = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
  double sq = 0;
  for (double x : v) sq += (x - s.mean) * (x - s.mean);
  s.stddev = n > 1 ? std::sqrt(sq / static_cast<double>(n - 1)) : 0.0;
  s.min = v.front();
  s.max = v.back();
  return s;
}

nlohmann::json summary_json(const Summary& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"stddev", s.stddev}, {"min", s.min}, {"max", s.max}};
}

Status write_json_atomically(const std::filesystem::path& path, const nlohmann::json& j) {
  std::error_code ec;
  if (path.has_parent_path()) std::filesystem::create_directories(path.parent_path(), ec);
  const auto tmp = path.string() + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    if (!out) return IoError(tmp + ": cannot open for writing");
    out << j.dump(2) << "\n";
    if (!out) return IoError(tmp + ": write failed");
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) return IoError(path.string() + ": " + ec.message());
  return Status::Ok();
}

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

StatusOr<TrainResult> train(const WorkloadOptions& options, const ModelConfig& model_config,
                            const StepCallback& on_step, const ReadyCallback& on_ready) {
  try {
    return train_impl(options, model_config, on_step, on_ready);
  } catch (const c10::Error& e) {
    return Internal("LibTorch: " + first_line(e.what_without_backtrace()));
  } catch (const std::exception& e) {
    return Internal(first_line(e.what()));
  }
}

// The model dimensions in use (defaults with the command-line overrides applied).
static nlohmann::json shape_json(const WorkloadOptions& o) {
  const ModelConfig mc = ModelConfig::for_options(o);
  switch (o.model) {
    case ModelKind::kCnn:
      return {{"image_size", mc.image_size}, {"width", mc.channels}, {"depth", mc.blocks_per_stage}};
    case ModelKind::kMlp: return {{"features", mc.features}, {"width", mc.hidden}, {"depth", mc.mlp_layers}};
    case ModelKind::kTransformer:
      return {{"seq_len", mc.seq_len}, {"width", mc.d_model}, {"depth", mc.layers}, {"heads", mc.heads}};
  }
  return nullptr;
}

nlohmann::json facts_json(const WorkloadOptions& o, const TrainResult& r) {
  using nlohmann::json;
  json amp_dtype = nullptr;
  if (o.amp == AmpMode::kBf16) amp_dtype = "bfloat16";
  if (o.amp == AmpMode::kFp16) amp_dtype = "float16";
  json gpu = {{"available", r.gpu.available},
              {"count", r.gpu.count},
              {"name", r.gpu.available ? json(r.gpu.name) : json(nullptr)},
              {"memory_total_bytes", r.gpu.available ? json(r.gpu.memory_total_bytes) : json(nullptr)},
              {"memory_peak_bytes", r.peak_memory_bytes >= 0 ? json(r.peak_memory_bytes) : json(nullptr)}};
  return {
      {"dataloader",
       {{"num_workers", o.workers},
        {"pin_memory", o.pin_memory},
        {"batch_size", r.batch_size},
        {"prefetch_factor", o.workers > 0 ? json(o.prefetch) : json(nullptr)},
        // LibTorch worker threads live as long as the loader: persistent across epochs.
        {"persistent_workers", o.workers > 0}}},
      {"optimizer",
       {{"class", r.optimizer_class},
        {"foreach", r.optimizer_foreach},
        {"fused", r.optimizer_fused},
        {"weight_decay", r.weight_decay}}},
      {"amp", {{"autocast_enabled", o.amp != AmpMode::kOff}, {"dtype", amp_dtype}, {"grad_scaler", r.grad_scaler}}},
      {"params", {{"dtypes", r.param_dtypes}, {"device", r.device}, {"count", r.param_count}}},
      {"cudnn", {{"benchmark", r.cudnn_benchmark}}},
      {"tf32", {{"matmul", r.tf32_matmul}, {"cudnn", r.tf32_cudnn}}},
      {"gpu", gpu},
      {"model", {{"channels_last", o.channels_last}, {"has_conv", r.has_conv}, {"dataparallel", false}}},
      {"distributed", {{"world_size", 1}}},
      {"workload", {{"name", to_string(o.model)}, {"shape", shape_json(o)}, {"planted", o.planted.names()}}},
      {"inferred", json::array()},
  };
}

nlohmann::json result_json(const WorkloadOptions& o, const TrainResult& r) {
  using nlohmann::json;
  std::vector<double> step, data, h2d, fwd, bwd, optim;
  for (const auto& t : r.timings) {
    step.push_back(t.step_ms);
    data.push_back(t.data_ms);
    h2d.push_back(t.h2d_ms);
    fwd.push_back(t.forward_ms);
    bwd.push_back(t.backward_ms);
    optim.push_back(t.optimizer_ms);
  }
  json config = {{"model", to_string(o.model)},
                 {"batch_size", o.batch_size},
                 {"effective_batch_size", r.batch_size},
                 {"workers", o.workers},
                 {"pin_memory", o.pin_memory},
                 {"pin_memory_effective", r.pin_memory_effective},
                 {"prefetch", o.prefetch},
                 {"amp", to_string(o.amp)},
                 {"optimizer", to_string(o.optimizer)},
                 {"fused", o.fused},
                 {"foreach", o.foreach},
                 {"channels_last", o.channels_last},
                 {"cudnn_benchmark", o.cudnn_benchmark},
                 {"tf32", o.tf32},
                 {"steps", o.steps},
                 {"warmup", o.warmup},
                 {"device", to_string(o.device)},
                 {"seed", o.seed},
                 {"threads", o.threads},
                 {"slow_preprocess_us", o.planted.slow_preprocess_us},
                 {"host_work_us", o.host_work_us},
                 {"shape", shape_json(o)},
                 {"planted", o.planted.names()}};
  return {{"schema", "profile-train-workload-result/1"},
          {"samples_per_s", r.samples_per_s},
          {"measured_s", r.measured_s},
          {"steps_measured", static_cast<int64_t>(r.timings.size())},
          {"step_ms", summary_json(summarize(step))},
          // Host wall time per phase; on CUDA these are launch times (the GPU runs asynchronously).
          {"phase_ms",
           {{"data_wait", summarize(data).mean},
            {"h2d", summarize(h2d).mean},
            {"forward", summarize(fwd).mean},
            {"backward", summarize(bwd).mean},
            {"optimizer", summarize(optim).mean}}},
          {"data_wait_fraction", r.data_wait_fraction},
          {"loss_first", r.losses.empty() ? json(nullptr) : json(r.losses.front())},
          {"loss_last", r.losses.empty() ? json(nullptr) : json(r.losses.back())},
          {"device", r.device},
          {"gpu_name", r.gpu.available ? json(r.gpu.name) : json(nullptr)},
          {"peak_memory_bytes", r.peak_memory_bytes >= 0 ? json(r.peak_memory_bytes) : json(nullptr)},
          {"param_count", r.param_count},
          {"config", config}};
}

int workload_main(int argc, const char* const* argv) {
  auto parsed = parse_options(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "profile-train-workload: " << parsed.status().message() << "\n";
    return kExitBadInput;
  }
  if (parsed->help_requested) {
    std::cout << parsed->help_text;
    return kExitOk;
  }
  const WorkloadOptions& o = parsed->options;
  if (o.device == DeviceChoice::kCuda && !torch::cuda::is_available()) {
    std::cerr << "profile-train-workload: --device cuda: LibTorch sees no CUDA device on this machine\n";
    return kExitBadInput;
  }
  const ModelConfig mc = ModelConfig::for_options(o);
  std::cout << "profile-train-workload: model=" << to_string(o.model) << " " << shape_json(o).dump()
            << " batch=" << o.effective_batch_size()
            << " workers=" << o.workers << " amp=" << to_string(o.amp) << " optimizer=" << to_string(o.optimizer)
            << (o.fused ? " (fused)" : o.foreach ? " (foreach)" : "") << " steps=" << o.steps
            << " warmup=" << o.warmup;
  const auto planted = o.planted.names();
  if (!planted.empty()) {
    std::cout << " planted=";
    for (size_t i = 0; i < planted.size(); ++i) std::cout << (i ? "," : "") << planted[i];
  }
  std::cout << std::endl;

  // Facts for `profile-train run` (PROFILE_TRAIN_OUT is its capture folder): written once set up, so a run
  // cut short still has them, and again at the end with the memory peak.
  const char* facts_dir = std::getenv("PROFILE_TRAIN_OUT");
  const std::filesystem::path facts_path =
      facts_dir != nullptr && *facts_dir != '\0'
          ? std::filesystem::path(facts_dir) / ("facts-" + std::to_string(::getpid()) + ".json")
          : std::filesystem::path();
  auto write_facts = [&](const TrainResult& r) {
    if (facts_path.empty()) return Status::Ok();
    return write_json_atomically(facts_path, facts_json(o, r));
  };

  const int64_t every = std::max<int64_t>(1, o.steps / 5);
  auto result = train(
      o, mc,
      [&](int64_t i, const StepTiming& t) {
    if ((i + 1) % every == 0 || i + 1 == o.steps) {
      char line[160];
      std::snprintf(line, sizeof line, "  step %lld/%lld  %.2f ms (data wait %.2f ms)\n",
                    static_cast<long long>(i + 1), static_cast<long long>(o.steps), t.step_ms, t.data_ms);
      std::cout << line << std::flush;
    }
      },
      [&](const TrainResult& setup) {
        if (Status st = write_facts(setup); !st.ok()) std::cerr << "profile-train-workload: " << st.message() << "\n";
      });
  if (!result.ok()) {
    std::cerr << "profile-train-workload: " << result.status().message() << "\n";
    return result.status().exit_code();
  }
  const TrainResult& r = *result;
  const auto steps = summarize([&] {
    std::vector<double> v;
    for (const auto& t : r.timings) v.push_back(t.step_ms);
    return v;
  }());
  char line[256];
  std::snprintf(line, sizeof line,
                "device %s: %.1f samples/s, step %.2f ms median, data wait %.1f%% of the step, loss %.4f -> %.4f\n",
                r.device.c_str(), r.samples_per_s, steps.median, 100.0 * r.data_wait_fraction,
                r.losses.empty() ? 0.0 : r.losses.front(), r.losses.empty() ? 0.0 : r.losses.back());
  std::cout << line << std::flush;

  int rc = kExitOk;
  if (!o.result_path.empty()) {
    Status s = write_json_atomically(o.result_path, result_json(o, r));
    if (!s.ok()) {
      std::cerr << "profile-train-workload: " << s.message() << "\n";
      rc = s.exit_code();
    }
  }
  if (Status st = write_facts(r); !st.ok()) {
    std::cerr << "profile-train-workload: " << st.message() << "\n";
    rc = st.exit_code();
  }
  return rc;
}

}  // namespace profile_train::workload
