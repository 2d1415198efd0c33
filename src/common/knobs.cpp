#include "profile_train/common/knobs.h"
#include "profile_train/common/strings.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace profile_train {
namespace {

// Integers above this are not a batch size, a worker count or a prefetch factor (and stay far from overflow).
constexpr long long kMaxInteger = 1LL << 30;

}  // namespace

const std::vector<KnobDef>& knob_catalog() {
  // Order = cheapest / lowest-risk first (ties in the guided search are broken by it). batch_size's auto
  // list is the doubling ladder; the guided search stops climbing it at an OOM or a plateau.
  static const std::vector<KnobDef> kCatalog = [] {
    std::vector<KnobDef> c;
    auto add = [&c](std::string name, KnobKind kind) -> KnobDef& {
      c.push_back({});
      c.back().name = std::move(name);
      c.back().kind = kind;
      return c.back();
    };
    KnobDef* k = &add(KnobName::kNumWorkers, KnobKind::kInteger);
    k->auto_values = {"0", "1", "2", "4", "8"};
    k->override_key = "dataloader.num_workers";
    k->workload_flag = "--workers";
    k->in_default_space = true;
    k->program_needs = KnobProgramNeeds::kDataLoader;
    k->aliases = {"workers", "dataloader.num_workers"};

    k = &add(KnobName::kPinMemory, KnobKind::kBool);
    k->auto_values = {"0", "1"};
    k->override_key = "dataloader.pin_memory";
    k->workload_flag = "--pin-memory";
    k->in_default_space = true;
    k->needs = KnobNeeds::kGpu;
    k->needs_why = "pinned host memory only speeds up copies to a GPU";
    k->program_needs = KnobProgramNeeds::kDataLoader;
    k->aliases = {"pin", "dataloader.pin_memory"};

    k = &add(KnobName::kPrefetchFactor, KnobKind::kInteger);
    k->auto_values = {"2", "4", "8"};
    k->override_key = "dataloader.prefetch_factor";
    k->workload_flag = "--prefetch";
    k->program_needs = KnobProgramNeeds::kDataLoader;
    k->aliases = {"prefetch", "dataloader.prefetch_factor"};

    k = &add(KnobName::kPersistentWorkers, KnobKind::kBool);
    k->auto_values = {"0", "1"};
    k->override_key = "dataloader.persistent_workers";
    k->program_needs = KnobProgramNeeds::kDataLoader;
    k->aliases = {"persistent", "dataloader.persistent_workers"};

    k = &add(KnobName::kAmp, KnobKind::kChoice);
    k->choices = {{"off", {"none", "fp32", "float32", "0"}}, {"bf16", {"bfloat16"}}, {"fp16", {"float16", "half"}}};
    k->auto_values = {"off", "bf16", "fp16"};
    k->override_key = "amp.dtype";
    k->workload_flag = "--amp";
    k->in_default_space = true;
    k->value_needs = {{"fp16", KnobNeeds::kGpu, "fp16 autocast needs a GPU"},
                      {"bf16", KnobNeeds::kGpuOrNativeBf16,
                       "bf16 autocast is emulated on a CPU without AMX or AVX512-BF16"}};
    k->aliases = {"autocast", "amp.dtype"};

    k = &add(KnobName::kBatchSize, KnobKind::kInteger);
    k->min_value = 1;
    k->auto_values = {"16", "32", "64", "128", "256", "512", "1024", "2048"};
    k->override_key = "dataloader.batch_size";
    k->workload_flag = "--batch-size";
    k->in_default_space = true;
    k->program_needs = KnobProgramNeeds::kDataLoader;
    k->aliases = {"bs", "batch", "dataloader.batch_size"};

    // The shim's overrides below act on the process as a whole (threads, backend flags) or on the top-level
    // model / the optimizers (profile_train_patches.py, apply_* functions); one that cannot act on this
    // program fails its trial with the reason (facts.overrides_failed) and leaves the program as it was.
    k = &add(KnobName::kChannelsLast, KnobKind::kBool);
    k->auto_values = {"0", "1"};
    k->override_key = "model.channels_last";  // the top-level model and the 4-D tensors passed to it
    k->workload_flag = "--channels-last";
    k->in_guided_space = true;
    k->program_needs = KnobProgramNeeds::kConvModel;

    k = &add(KnobName::kCudnnBenchmark, KnobKind::kBool);
    k->auto_values = {"0", "1"};
    k->override_key = "backends.cudnn_benchmark";  // torch.backends.cudnn.benchmark
    k->workload_flag = "--cudnn-benchmark";
    k->in_guided_space = true;
    k->needs = KnobNeeds::kGpu;
    k->needs_why = "the cuDNN autotuner acts on the GPU only";
    k->aliases = {"cudnn.benchmark", "cudnn"};

    k = &add(KnobName::kTf32, KnobKind::kBool);
    k->auto_values = {"0", "1"};
    k->override_key = "backends.tf32";  // cuda.matmul.allow_tf32 + cudnn.allow_tf32
    k->workload_flag = "--tf32";
    k->in_guided_space = true;
    k->needs = KnobNeeds::kGpu;
    k->needs_why = "TF32 acts on the GPU only";
    k->aliases = {"tf32.matmul"};

    // 0 = leave torch's own thread count (the baseline); auto_values_for caps the ladder at the cores.
    k = &add(KnobName::kThreads, KnobKind::kInteger);
    k->auto_values = {"0", "1", "2", "4", "8", "16", "32", "64"};
    k->override_key = "torch.threads";  // torch.set_num_threads (and the inter-op pool, where still possible)
    k->workload_flag = "--threads";
    k->in_guided_space = true;
    k->aliases = {"num_threads", "torch_threads", "intra_op_threads"};

    k = &add(KnobName::kOptimizerImpl, KnobKind::kChoice);
    k->choices = {{"default", {"auto", "none"}}, {"foreach", {}}, {"fused", {}}};
    k->auto_values = {"default", "foreach", "fused"};
    k->override_key = "optimizer.impl";  // foreach= / fused= of the torch.optim optimizers that take them
    k->workload_flag = "--optimizer-impl";
    k->in_guided_space = true;
    k->program_needs = KnobProgramNeeds::kOptimizer;
    k->aliases = {"optimizer", "fused"};

    // torch.compile of the top-level model (nn.Module.compile, in place). Its first steps compile: the tuner
    // excludes them as warm-up like any slow leading step. Not in any default space: compiling costs
    // tens of seconds to minutes per trial; --knob compile=auto.
    k = &add(KnobName::kCompile, KnobKind::kChoice);
    k->choices = {{"off", {"none", "0", "false"}},
                  {"default", {"1", "true", "on"}},
                  {"reduce-overhead", {"reduce_overhead", "cudagraphs", "cuda_graphs"}},
                  {"max-autotune-no-cudagraphs", {"max_autotune_no_cudagraphs"}}};
    k->auto_values = {"off", "default", "reduce-overhead", "max-autotune-no-cudagraphs"};
    k->override_key = "model.compile";  // the built-in workload (LibTorch, no TorchInductor) has no equivalent
    k->program_needs = KnobProgramNeeds::kModel;
    k->value_needs = {{"reduce-overhead", KnobNeeds::kGpu, "reduce-overhead captures CUDA graphs, a GPU only"}};
    k->aliases = {"torch_compile", "torch.compile"};
    return c;
  }();
  return kCatalog;
}

const KnobDef* find_knob(std::string_view name) {
  for (const KnobDef& k : knob_catalog()) {
    if (k.name == name) return &k;
  }
  return nullptr;
}

const KnobDef* find_knob_spelling(std::string_view spelling) {
  const std::string n = ascii_lower(trim_space(spelling));
  for (const KnobDef& k : knob_catalog()) {
    if (k.name == n || k.override_key == n) return &k;
    if (std::find(k.aliases.begin(), k.aliases.end(), n) != k.aliases.end()) return &k;
  }
  return nullptr;
}

std::string knob_names() {
  std::string names;
  for (const KnobDef& k : knob_catalog()) names += (names.empty() ? "" : ", ") + k.name;
  return names;
}

StatusOr<std::string> canonical_value(const KnobDef& knob, std::string_view value) {
  const std::string v = ascii_lower(trim_space(value));
  switch (knob.kind) {
    case KnobKind::kInteger: {
      long long x = 0;
      auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), x);
      if (v.empty() || ec != std::errc() || p != v.data() + v.size() || x < 0 || x > kMaxInteger) {
        return InvalidArgument("knob " + knob.name + ": '" + std::string(value) +
                               "' is not a non-negative integer");
      }
      if (x < knob.min_value) {
        return InvalidArgument("knob " + knob.name + ": " + std::to_string(x) + " is below its minimum " +
                               std::to_string(knob.min_value));
      }
      return std::to_string(x);
    }
    case KnobKind::kBool:
      if (v == "1" || v == "true" || v == "on" || v == "yes") return std::string("1");
      if (v == "0" || v == "false" || v == "off" || v == "no") return std::string("0");
      return InvalidArgument("knob " + knob.name + ": '" + std::string(value) + "' is not a boolean (0/1)");
    case KnobKind::kChoice: {
      std::string domain;
      for (const KnobChoice& c : knob.choices) {
        if (c.value == v || std::find(c.synonyms.begin(), c.synonyms.end(), v) != c.synonyms.end()) return c.value;
        domain += (domain.empty() ? "" : ", ") + c.value;
      }
      return InvalidArgument("knob " + knob.name + ": '" + std::string(value) + "' is not one of " + domain);
    }
  }
  return InvalidArgument("knob " + knob.name + ": bad value");
}

KnobNeeds needs_of(const KnobDef& knob, std::string_view value) {
  for (const KnobValueNeeds& n : knob.value_needs) {
    if (n.value == value) return n.needs;
  }
  return knob.needs;
}

StatusOr<nlohmann::json> parse_overrides_document(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidArgument("not a JSON object");
  const nlohmann::json& ov = doc.contains("overrides") ? doc["overrides"] : doc;
  if (!ov.is_object()) return InvalidArgument("\"overrides\" is not a JSON object");
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [key, value] : ov.items()) {
    const KnobDef* def = nullptr;
    for (const KnobDef& k : knob_catalog()) {
      if (!k.override_key.empty() && k.override_key == key) def = &k;
    }
    if (def == nullptr) {
      std::string known;
      for (const KnobDef& k : knob_catalog()) {
        if (!k.override_key.empty()) known += (known.empty() ? "" : ", ") + k.override_key;
      }
      return InvalidArgument("unknown override '" + key + "' (known: " + known + ")");
    }
    std::string v;
    if (value.is_boolean()) v = value.get<bool>() ? "1" : "0";
    else if (value.is_number_integer()) v = std::to_string(value.get<long long>());
    else if (value.is_string()) v = value.get<std::string>();
    else return InvalidArgument("override '" + key + "': " + value.dump() + " is not a number, boolean or string");
    auto cv = canonical_value(*def, v);
    if (!cv.ok()) return InvalidArgument("override '" + key + "': " + cv.status().message());
    switch (def->kind) {
      case KnobKind::kInteger: out[key] = std::stoll(*cv); break;
      case KnobKind::kBool: out[key] = (*cv == "1"); break;
      case KnobKind::kChoice: out[key] = *cv; break;
    }
  }
  return out;
}

}  // namespace profile_train
