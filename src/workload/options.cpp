#include "options.h"

#include <algorithm>
#include <charconv>
#include <map>

#include <CLI/CLI.hpp>

#include "model_config.h"

namespace profile_train::workload {
namespace {

// Looks `value` up in `table`; the error names the flag and the accepted values.
template <typename T>
StatusOr<T> pick(const std::string& flag, const std::string& value, const std::map<std::string, T>& table) {
  auto it = table.find(value);
  if (it != table.end()) return it->second;
  std::string accepted;
  for (const auto& [name, unused] : table) accepted += (accepted.empty() ? "" : "|") + name;
  return InvalidArgument(flag + ": '" + value + "' is not one of " + accepted);
}

StatusOr<bool> parse_bool01(const std::string& flag, const std::string& value) {
  if (value == "0") return false;
  if (value == "1") return true;
  return InvalidArgument(flag + ": '" + value + "' is not 0 or 1");
}

Status check_range(const std::string& flag, int64_t v, int64_t lo, int64_t hi) {
  if (v < lo || v > hi) {
    return InvalidArgument(flag + ": " + std::to_string(v) + " is outside [" + std::to_string(lo) + ", " +
                           std::to_string(hi) + "]");
  }
  return Status::Ok();
}

}  // namespace

std::vector<std::string> Planted::names() const {
  std::vector<std::string> out;
  if (slow_preprocess_us > 0) out.push_back("slow-preprocess");
  if (pageable_h2d) out.push_back("pageable-h2d");
  if (host_sync) out.push_back("host-sync");
  if (tiny) out.push_back("tiny");
  if (cpu_tensors) out.push_back("cpu-tensors");
  if (float64) out.push_back("float64");
  if (cpu_normalize) out.push_back("cpu-normalize");
  return out;
}

int64_t WorkloadOptions::effective_batch_size() const {
  return planted.tiny ? std::min<int64_t>(batch_size, 4) : batch_size;
}

std::string to_string(ModelKind m) {
  switch (m) {
    case ModelKind::kCnn: return "cnn";
    case ModelKind::kMlp: return "mlp";
    case ModelKind::kTransformer: return "transformer";
  }
  return "?";
}
std::string to_string(AmpMode a) {
  switch (a) {
    case AmpMode::kOff: return "off";
    case AmpMode::kBf16: return "bf16";
    case AmpMode::kFp16: return "fp16";
  }
  return "?";
}
std::string to_string(OptimizerKind o) {
  switch (o) {
    case OptimizerKind::kSgd: return "sgd";
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
  }
  return "?";
}
std::string to_string(DeviceChoice d) {
  switch (d) {
    case DeviceChoice::kAuto: return "auto";
    case DeviceChoice::kCpu: return "cpu";
    case DeviceChoice::kCuda: return "cuda";
  }
  return "?";
}

StatusOr<ParseOutcome> parse_options(int argc, const char* const* argv) {
  CLI::App app{"profile-train-workload: a real LibTorch training loop on synthetic data, with planted "
               "bottlenecks for profile-train"};
  app.name("profile-train-workload");
  std::string model = "cnn", pin = "0", amp = "off", optimizer = "adamw", fused = "0", foreach = "0";
  std::string optimizer_impl;  // --optimizer-impl: the tuner's knob over --fused / --foreach
  std::string channels_last = "0", cudnn_benchmark = "0", tf32 = "0", device = "auto";
  WorkloadOptions o;
  int64_t seed = 0;
  app.add_option("--model", model, "cnn|mlp|transformer")->capture_default_str();
  app.add_option("--batch-size", o.batch_size, "samples per step")->capture_default_str();
  app.add_option("--image-size", o.shape.image_size, "cnn: image height = width (0 = 32)")->capture_default_str();
  app.add_option("--width", o.shape.width,
                 "cnn: first-stage channels (0 = 16); mlp: hidden units (0 = 512); transformer: d_model (0 = 128)")
      ->capture_default_str();
  app.add_option("--depth", o.shape.depth,
                 "cnn: blocks per stage (0 = 1); mlp: hidden layers (0 = 3); transformer: blocks (0 = 2)")
      ->capture_default_str();
  app.add_option("--seq-len", o.shape.seq_len, "transformer: tokens per sample (0 = 64)")->capture_default_str();
  app.add_option("--heads", o.shape.heads, "transformer: attention heads, dividing --width (0 = 4)")
      ->capture_default_str();
  app.add_option("--workers", o.workers, "DataLoader worker threads")->capture_default_str();
  app.add_option("--pin-memory", pin, "0|1: pinned batches and non_blocking copies (CUDA)")
      ->capture_default_str();
  app.add_option("--prefetch", o.prefetch, "batches in flight per worker")->capture_default_str();
  app.add_option("--amp", amp, "off|bf16|fp16 (fp16 uses a dynamic gradient scaler)")->capture_default_str();
  app.add_option("--optimizer", optimizer, "sgd|adam|adamw")->capture_default_str();
  app.add_option("--fused", fused, "0|1: fused optimizer kernel (ATen _fused_*)")->capture_default_str();
  app.add_option("--foreach", foreach, "0|1: multi-tensor optimizer (ATen _foreach_*)")->capture_default_str();
  app.add_option("--optimizer-impl", optimizer_impl,
                 "default|foreach|fused: one flag for --foreach / --fused (the tuner's optimizer_impl knob)");
  app.add_option("--channels-last", channels_last, "0|1")->capture_default_str();
  app.add_option("--cudnn-benchmark", cudnn_benchmark, "0|1")->capture_default_str();
  app.add_option("--tf32", tf32, "0|1: TF32 for cuBLAS and cuDNN")->capture_default_str();
  app.add_option("--steps", o.steps, "measured steps")->capture_default_str();
  app.add_option("--warmup", o.warmup, "steps before measuring")->capture_default_str();
  app.add_option("--device", device, "auto|cpu|cuda (auto = CUDA when available)")->capture_default_str();
  app.add_option("--seed", seed, "seed of the data and of the model")->capture_default_str();
  app.add_option("--threads", o.threads, "intra-op threads (0 = all cores)")->capture_default_str();
  app.add_option("--result", o.result_path, "write the result JSON here");
  app.add_option("--host-work-us", o.host_work_us,
                 "host work at the end of each step (logging/metrics), wall microseconds")
      ->capture_default_str();
  app.add_option("--slow-preprocess-us", o.planted.slow_preprocess_us,
                 "planted: per-sample CPU preprocessing cost in microseconds (input bound)")
      ->capture_default_str();
  app.add_flag("--pageable-h2d", o.planted.pageable_h2d, "planted: a 2 MiB/sample host input copied to the device each step (pageable unless --pin-memory 1)");
  app.add_flag("--host-sync", o.planted.host_sync, "planted: loss.item() every step");
  app.add_flag("--tiny", o.planted.tiny, "planted: tiny batches and kernels (launch bound)");
  app.add_flag("--cpu-tensors", o.planted.cpu_tensors, "planted: tensors created on the CPU and copied each step");
  app.add_flag("--float64", o.planted.float64, "planted: float64 parameters");
  app.add_flag("--cpu-normalize", o.planted.cpu_normalize, "planted: per-sample normalization on the CPU");

  ParseOutcome outcome;
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    outcome.help_requested = true;
    outcome.help_text = app.help();
    return outcome;
  } catch (const CLI::ParseError& e) {
    std::string msg = e.what();
    std::replace(msg.begin(), msg.end(), '\n', ' ');
    return InvalidArgument(msg);
  }

  auto m = pick<ModelKind>("--model", model,
                           {{"cnn", ModelKind::kCnn}, {"mlp", ModelKind::kMlp},
                            {"transformer", ModelKind::kTransformer}});
  if (!m.ok()) return m.status();
  o.model = *m;
  auto a = pick<AmpMode>("--amp", amp, {{"off", AmpMode::kOff}, {"bf16", AmpMode::kBf16}, {"fp16", AmpMode::kFp16}});
  if (!a.ok()) return a.status();
  o.amp = *a;
  auto op = pick<OptimizerKind>("--optimizer", optimizer,
                                {{"sgd", OptimizerKind::kSgd}, {"adam", OptimizerKind::kAdam},
                                 {"adamw", OptimizerKind::kAdamW}});
  if (!op.ok()) return op.status();
  o.optimizer = *op;
  auto d = pick<DeviceChoice>("--device", device,
                              {{"auto", DeviceChoice::kAuto}, {"cpu", DeviceChoice::kCpu}, {"cuda", DeviceChoice::kCuda}});
  if (!d.ok()) return d.status();
  o.device = *d;

  struct BoolFlag {
    const char* name;
    const std::string* text;
    bool* target;
  } bools[] = {{"--pin-memory", &pin, &o.pin_memory},           {"--fused", &fused, &o.fused},
               {"--foreach", &foreach, &o.foreach},             {"--channels-last", &channels_last, &o.channels_last},
               {"--cudnn-benchmark", &cudnn_benchmark, &o.cudnn_benchmark}, {"--tf32", &tf32, &o.tf32}};
  for (const auto& b : bools) {
    auto v = parse_bool01(b.name, *b.text);
    if (!v.ok()) return v.status();
    *b.target = *v;
  }

  for (const Status& s : {check_range("--batch-size", o.batch_size, 1, 1 << 20),
                          check_range("--workers", o.workers, 0, 256),
                          check_range("--prefetch", o.prefetch, 1, 1024),
                          check_range("--steps", o.steps, 1, 10'000'000),
                          check_range("--warmup", o.warmup, 0, 10'000'000),
                          check_range("--threads", o.threads, 0, 4096),
                          check_range("--seed", seed, 0, INT64_MAX),
                          check_range("--slow-preprocess-us", o.planted.slow_preprocess_us, 0, 10'000'000),
                          check_range("--host-work-us", o.host_work_us, 0, 10'000'000),
                          check_range("--image-size", o.shape.image_size, 0, 1024),
                          check_range("--width", o.shape.width, 0, 16384),
                          check_range("--depth", o.shape.depth, 0, 256),
                          check_range("--seq-len", o.shape.seq_len, 0, 65536),
                          check_range("--heads", o.shape.heads, 0, 256)}) {
    if (!s.ok()) return s;
  }
  o.seed = static_cast<uint64_t>(seed);
  if (!optimizer_impl.empty()) {
    if (optimizer_impl == "foreach" || optimizer_impl == "fused") {
      if ((optimizer_impl == "foreach" ? o.fused : o.foreach)) {
        return InvalidArgument("--optimizer-impl " + optimizer_impl + " contradicts --" +
                               (optimizer_impl == "foreach" ? "fused" : "foreach") + " 1");
      }
      (optimizer_impl == "foreach" ? o.foreach : o.fused) = true;
    } else if (optimizer_impl != "default") {
      return InvalidArgument("--optimizer-impl '" + optimizer_impl + "': expected default, foreach or fused");
    }
  }
  if (o.fused && o.foreach) return InvalidArgument("--fused 1 and --foreach 1 are exclusive: pick one");
  if (o.shape.image_size != 0 && o.shape.image_size < 8) {
    return InvalidArgument("--image-size must be at least 8 (the cnn halves the resolution twice)");
  }
  if (o.model != ModelKind::kCnn && o.shape.image_size != 0) return InvalidArgument("--image-size applies to --model cnn");
  if (o.model != ModelKind::kTransformer && (o.shape.seq_len != 0 || o.shape.heads != 0)) {
    return InvalidArgument("--seq-len and --heads apply to --model transformer");
  }
  if (o.model == ModelKind::kTransformer) {
    const ModelConfig mc = ModelConfig::for_options(o);
    if (mc.d_model % mc.heads != 0) {
      return InvalidArgument("--heads " + std::to_string(mc.heads) + " must divide the transformer width " +
                             std::to_string(mc.d_model));
    }
  }
  if (o.planted.cpu_normalize && o.model == ModelKind::kTransformer) {
    return InvalidArgument("--cpu-normalize applies to --model cnn|mlp (the transformer reads token ids)");
  }
  outcome.options = o;
  return outcome;
}

}  // namespace profile_train::workload
