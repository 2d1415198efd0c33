#include "train.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <optional>
#include <thread>

#include <ATen/Parallel.h>
#include <ATen/Version.h>
#include <torch/cuda.h>

#include <unordered_set>

#include "amp.h"
#include "data.h"
#include "models.h"
#include "nvtx_range.h"
#include "optimizers.h"

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
  // Default: one intra-op thread per core this process may run on (its affinity, as under taskset or a
  // container's cpuset), not per core of the machine: more threads than cores only contend.
  const int64_t threads = o.threads > 0 ? o.threads : affinity_cores();
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
  r.cpu.cores = affinity_cores();
  r.cpu.torch_threads = at::get_num_threads();
  r.cpu.interop_threads = static_cast<int64_t>(at::get_num_interop_threads());
  r.cpu.capability = at::get_cpu_capability();
  read_cpu_flags(r.cpu);
  r.cpu.omp_num_threads = omp_num_threads_env();
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
  r.memory.device = r.device;
  r.memory.batch_size = r.batch_size;
  r.memory.parameter_bytes = 0;
  for (const auto& p : net->parameters()) {
    r.param_count += p.numel();
    const auto name = dtype_name(p.scalar_type());
    const auto bytes = static_cast<int64_t>(p.storage().nbytes());  // each parameter owns its storage
    r.memory.parameter_bytes += bytes;
    r.memory.parameter_bytes_by_dtype[name] += bytes;
    if (std::find(r.param_dtypes.begin(), r.param_dtypes.end(), name) == r.param_dtypes.end()) {
      r.param_dtypes.push_back(name);
    }
  }
  auto opt = make_optimizer(o.optimizer, o.fused, o.foreach, net->parameters());
  r.optimizer_class = opt->class_name();
  r.memory.optimizer_class = r.optimizer_class;
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
  // facts.memory per step (the first kMaxMemorySteps steps, as the shim): CUDA allocator counters or the C
  // heap (host-side counters: no device sync); the forward's heap growth on the CPU, per measured step.
  constexpr int64_t kMaxMemorySteps = 512;
  std::vector<int64_t> forward_heap_growth;
  int64_t heap_before_forward = -1;
  if (use_cuda) reset_gpu_peak();

  for (int64_t s = 0; s < total_steps; ++s) {
    const bool measured = s >= o.warmup;
    if (s == o.warmup) {
      if (use_cuda) torch::cuda::synchronize();
      measure_start = Clock::now();
    }
    StepTiming t;
    const bool memory_sample = s < kMaxMemorySteps;
    if (memory_sample) {
      if (use_cuda) {
        r.memory.allocated_at_start_bytes.push_back(gpu_allocated_bytes());
      } else if (const int64_t heap = heap_in_use_bytes(); heap >= 0) {
        r.memory.heap_in_use_at_start_bytes.push_back(heap);
      }
    }
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
      if (measured && !use_cuda) heap_before_forward = heap_in_use_bytes();
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
      if (measured && !use_cuda && heap_before_forward >= 0) {
        if (const int64_t heap = heap_in_use_bytes(); heap >= 0) forward_heap_growth.push_back(heap - heap_before_forward);
      }
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
      if (s == o.warmup) {  // the first measured update: gradients and optimizer state exist now
        std::unordered_set<const void*> seen;
        r.memory.gradient_bytes = 0;
        for (const auto& g : opt->grads()) {
          if (seen.insert(g.storage().data()).second) r.memory.gradient_bytes += static_cast<int64_t>(g.storage().nbytes());
        }
        r.memory.optimizer_state_bytes = opt->state_bytes();
      }
      if (use_cuda && memory_sample) {
        const int64_t peak = gpu_peak_allocated_bytes();
        r.memory.peak_allocated_bytes.push_back(peak);
        r.peak_memory_bytes = std::max(r.peak_memory_bytes, peak);
        reset_gpu_peak();
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
  if (use_cuda) r.peak_memory_bytes = std::max(r.peak_memory_bytes, gpu_peak_allocated_bytes());
  if (!forward_heap_growth.empty()) r.memory.activation_heap_bytes = std::max<int64_t>(0, median_bytes(forward_heap_growth));
  read_host_memory(r.memory);
  return r;
}

}  // namespace

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

}  // namespace profile_train::workload
