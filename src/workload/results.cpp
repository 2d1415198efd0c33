#include "results.h"

#include <algorithm>
#include <cmath>

namespace profile_train::workload {

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

namespace {

nlohmann::json summary_json(const Summary& s) {
  return {{"mean", s.mean}, {"median", s.median}, {"stddev", s.stddev}, {"min", s.min}, {"max", s.max}};
}

}  // namespace

nlohmann::json shape_json(const WorkloadOptions& o) {
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

nlohmann::json cpu_json(const CpuInfo& c) {
  using nlohmann::json;
  auto opt = [](const std::optional<bool>& b) { return b ? json(*b) : json(nullptr); };
  json bf16 = nullptr;
  if (c.amx_bf16 && c.avx512_bf16) bf16 = *c.amx_bf16 || *c.avx512_bf16;
  return {{"cores", c.cores},
          {"torch_threads", c.torch_threads},
          {"interop_threads", c.interop_threads},
          {"capability", c.capability.empty() ? json(nullptr) : json(c.capability)},
          {"amx_bf16", opt(c.amx_bf16)},
          {"avx512_bf16", opt(c.avx512_bf16)},
          {"bf16_native", bf16},
          {"omp_num_threads", c.omp_num_threads ? json(*c.omp_num_threads) : json(nullptr)},
          {"launcher", nullptr},
          {"local_ranks", c.local_ranks}};
}

// facts.loss, as the shim writes it for tune's quality guard: the loss of every step (warm-up included), steps
// numbered from 1 so that steps <= warmup_steps are the warm-up; a non-finite loss as the string "nan" / "inf" /
// "-inf" (JSON has neither). Read back once, after the run (train.cpp): no host sync per step.
nlohmann::json loss_json(const WorkloadOptions& o, const TrainResult& r) {
  using nlohmann::json;
  json steps = json::array(), values = json::array();
  for (size_t i = 0; i < r.losses.size(); ++i) {
    const double v = r.losses[i];
    steps.push_back(static_cast<int64_t>(i) + 1);
    if (std::isfinite(v)) {
      values.push_back(v);
    } else {
      values.push_back(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    }
  }
  return {{"recorded", !r.losses.empty()}, {"steps", steps}, {"values", values},
          {"backward_calls", static_cast<int64_t>(r.losses.size())}, {"not_scalar_calls", 0},
          {"warmup_steps", o.warmup}};
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
  json facts = {
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
      {"cpu", cpu_json(r.cpu)},
      {"model", {{"channels_last", o.channels_last}, {"has_conv", r.has_conv}, {"dataparallel", false}}},
      {"distributed", {{"world_size", 1}}},
      {"workload", {{"name", to_string(o.model)}, {"shape", shape_json(o)}, {"planted", o.planted.names()}}},
      {"memory", memory_facts_json(r.memory)},
      {"inferred", json::array()},
  };
  if (!r.losses.empty()) facts["loss"] = loss_json(o, r);
  return facts;
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

}  // namespace profile_train::workload
