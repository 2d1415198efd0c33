#include "profile_train/rules/metric_paths.h"

#include "profile_train/model/report_keys.h"

#include <algorithm>
#include <string>
#include <vector>

namespace profile_train::rules {
namespace {

using T = MetricType;

// The report's own keys come from the model's declaration (model::report_keys(), report_fields.h: what
// to_json writes). `facts` is open JSON (the Python shim adds groups over time): its known leaves are listed
// here, as reports/REPORT_FORMAT.md "facts" documents them.
struct Leaf {
  const char* path;
  T type;
};

constexpr Leaf kFactLeaves[] = {
    {"facts.dataloader.num_workers", T::kNumber},
    {"facts.dataloader.multiprocess", T::kBool},  // multi-process iterator seen in the trace (count unknown)
    {"facts.dataloader.pin_memory", T::kBool},
    {"facts.dataloader.batch_size", T::kNumber},
    {"facts.dataloader.prefetch_factor", T::kNumber},
    {"facts.dataloader.persistent_workers", T::kBool},
    {"facts.optimizer.class", T::kString},
    {"facts.optimizer.foreach", T::kBool},
    {"facts.optimizer.fused", T::kBool},
    {"facts.optimizer.weight_decay", T::kNumber},
    {"facts.optimizer.param_groups", T::kNumber},
    {"facts.amp.autocast_enabled", T::kBool},
    {"facts.amp.dtype", T::kString},
    {"facts.amp.grad_scaler", T::kBool},
    {"facts.params.dtypes", T::kList},
    {"facts.params.device", T::kString},
    {"facts.params.count", T::kNumber},
    {"facts.cudnn.benchmark", T::kBool},
    {"facts.tf32.matmul", T::kBool},
    {"facts.tf32.cudnn", T::kBool},
    {"facts.gpu.available", T::kBool},
    {"facts.gpu.name", T::kString},
    {"facts.gpu.count", T::kNumber},
    {"facts.gpu.memory_total_bytes", T::kNumber},
    {"facts.gpu.memory_peak_bytes", T::kNumber},
    {"facts.gpu.used", T::kBool},
    {"facts.memory.batch_size", T::kNumber},              // the shim's memory facts (see memory_budget)
    {"facts.memory.parameter_bytes", T::kNumber},
    {"facts.memory.gradient_bytes", T::kNumber},
    {"facts.memory.optimizer_state_bytes", T::kNumber},
    {"facts.memory.activation_saved_bytes", T::kNumber},
    {"facts.model.channels_last", T::kBool},
    {"facts.model.has_conv", T::kBool},
    {"facts.model.dataparallel", T::kBool},
    {"facts.distributed.world_size", T::kNumber},
    {"facts.cpu.cores", T::kNumber},
    {"facts.cpu.torch_threads", T::kNumber},
    {"facts.cpu.interop_threads", T::kNumber},
    {"facts.cpu.capability", T::kString},
    {"facts.cpu.bf16_native", T::kBool},
    {"facts.cpu.amx_bf16", T::kBool},
    {"facts.cpu.avx512_bf16", T::kBool},
    {"facts.cpu.omp_num_threads", T::kNumber},  // OMP_NUM_THREADS as the environment set it
    {"facts.cpu.launcher", T::kString},         // "torchrun" when torchelastic started the process
    {"facts.cpu.local_ranks", T::kNumber},      // processes of the job on this host
    {"facts.workload.name", T::kString},
    {"facts.workload.planted", T::kList},
    {"facts.inferred", T::kList},
};

T metric_type(model::KeyType type) {
  switch (type) {
    case model::KeyType::kNumber:
    case model::KeyType::kInteger: return T::kNumber;
    case model::KeyType::kBoolean: return T::kBool;
    case model::KeyType::kString: return T::kString;
    case model::KeyType::kArray: return T::kList;
    case model::KeyType::kObject: return T::kObject;
  }
  return T::kObject;
}

struct Table {
  std::vector<std::string> storage;  // owns the path strings; reserved up front so views stay valid
  std::vector<MetricPath> paths;
};

Table build_table() {
  std::vector<std::pair<std::string, T>> all;
  for (const model::ReportKey& key : model::report_keys()) {
    // Rules name values, not array items; facts' keys are the list above.
    if (key.free_form || key.path.find("[]") != std::string::npos) continue;
    all.emplace_back(key.path, metric_type(key.type));
  }
  for (const Leaf& leaf : kFactLeaves) all.emplace_back(leaf.path, leaf.type);
  // Every proper prefix of a leaf is an object path (usable with exists()).
  std::vector<std::pair<std::string, T>> prefixes;
  for (const auto& [path, type] : all) {
    for (size_t dot = path.find('.'); dot != std::string::npos; dot = path.find('.', dot + 1))
      prefixes.emplace_back(path.substr(0, dot), T::kObject);
  }
  all.insert(all.end(), prefixes.begin(), prefixes.end());
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  all.erase(std::unique(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first == b.first; }),
            all.end());
  Table table;
  table.storage.reserve(all.size());
  for (const auto& [path, type] : all) {
    table.storage.push_back(path);
    table.paths.push_back({table.storage.back(), type});
  }
  return table;
}

const Table& table() {
  static const Table kTable = build_table();
  return kTable;
}

}  // namespace

std::span<const MetricPath> metric_paths() { return table().paths; }

const MetricPath* find_metric(std::string_view path) {
  const auto& paths = table().paths;
  auto it = std::lower_bound(paths.begin(), paths.end(), path,
                             [](const MetricPath& m, std::string_view p) { return m.path < p; });
  if (it == paths.end() || it->path != path) return nullptr;
  return &*it;
}

std::string_view metric_type_name(MetricType type) {
  switch (type) {
    case T::kNumber: return "number";
    case T::kBool: return "boolean";
    case T::kString: return "string";
    case T::kList: return "list";
    case T::kObject: return "object";
  }
  return "?";
}

}  // namespace profile_train::rules
