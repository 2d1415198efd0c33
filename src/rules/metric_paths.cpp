#include "profile_train/rules/metric_paths.h"

#include "profile_train/common/vocabulary.h"

#include <algorithm>
#include <string>
#include <vector>

namespace profile_train::rules {
namespace {

using T = MetricType;

// Leaf metrics of report format 1.x, in the order of reports/REPORT_FORMAT.md. Groups that repeat
// (breakdown keys, memcpy directions) are expanded in build_table().
struct Leaf {
  const char* path;
  T type;
};

constexpr Leaf kLeaves[] = {
    {"schema_version", T::kString},
    {"tool.name", T::kString},
    {"tool.version", T::kString},
    {"source.files", T::kList},
    {"source.format", T::kString},
    {"source.format_version", T::kString},
    {"source.producer", T::kString},
    {"source.step_detection", T::kString},
    {"source.window_start_ns", T::kNumber},
    {"source.window_end_ns", T::kNumber},
    {"source.has_gpu_activity", T::kBool},
    {"source.has_cpu_ops", T::kBool},
    {"source.gpu_capture_status", T::kString},
    {"source.missing", T::kList},
    {"source.notes", T::kList},
    {"source.distributed.rank", T::kNumber},
    {"source.distributed.world_size", T::kNumber},
    {"source.distributed.backend", T::kString},
    {"device.id", T::kNumber},
    {"device.name", T::kString},
    {"device.vendor", T::kString},
    {"device.compute_capability", T::kString},
    {"device.num_sms", T::kNumber},
    {"device.total_memory_bytes", T::kNumber},
    {"steps.count", T::kNumber},
    {"steps.mean_ms", T::kNumber},
    {"steps.median_ms", T::kNumber},
    {"steps.min_ms", T::kNumber},
    {"steps.max_ms", T::kNumber},
    {"steps.stddev_ms", T::kNumber},
    {"steps.per_step", T::kList},
    {"steps.data_wait_floor", T::kNumber},
    {"steps.steady_state.count", T::kNumber},
    {"steps.steady_state.excluded_count", T::kNumber},
    {"steps.steady_state.excluded_ms", T::kNumber},
    {"steps.steady_state.mean_all_ms", T::kNumber},
    {"steps.steady_state.median_all_ms", T::kNumber},
    {"gpu.utilization", T::kNumber},
    {"gpu.sm_efficiency", T::kNumber},
    {"gpu.achieved_occupancy", T::kNumber},
    {"gpu.busy_fraction", T::kNumber},
    {"gpu.kernels_per_step", T::kNumber},
    {"gpu.kernel_median_us", T::kNumber},
    {"gpu.short_kernel_fraction", T::kNumber},
    {"gpu.tensor_core_kernel_share", T::kNumber},
    {"gpu.tf32_kernel_share", T::kNumber},
    {"gpu.fp32_eligible_kernel_share", T::kNumber},
    {"gpu.fp64_kernel_share", T::kNumber},
    {"gpu.conv_kernel_share", T::kNumber},
    {"gpu.optimizer_kernel_share", T::kNumber},
    {"gpu.optimizer_kernels_per_step", T::kNumber},
    {"gpu.memset_per_step", T::kNumber},
    {"gpu.static_launch_pattern", T::kBool},
    {"gpu.idle.fraction", T::kNumber},
    {"gpu.idle.host_wait", T::kNumber},
    {"gpu.idle.kernel_wait", T::kNumber},
    {"gpu.idle.other", T::kNumber},
    {"gpu.memory.peak_allocated_bytes", T::kNumber},
    {"gpu.memory.capacity_bytes", T::kNumber},
    {"gpu.memory.peak_fraction", T::kNumber},
    {"gpu.top_kernels", T::kList},
    {"host.launches_per_step", T::kNumber},
    {"host.launch_mean_us", T::kNumber},
    {"host.launch_delay_median_us", T::kNumber},
    {"host.sync.count_per_step", T::kNumber},
    {"host.sync.time_ms_per_step", T::kNumber},
    {"host.sync.fraction", T::kNumber},
    {"host.sync.gpu_records_per_step", T::kNumber},
    {"host.runtime_outliers", T::kNumber},
    {"host.cpu_op_fraction", T::kNumber},
    {"host.allocator.calls_per_step", T::kNumber},
    {"host.allocator.time_ms_per_step", T::kNumber},
    {"host.allocator.fraction", T::kNumber},
    {"host.optimizer_step_fraction", T::kNumber},
    {"host.optimizer_idle_fraction", T::kNumber},
    {"operators.attributed_fraction", T::kNumber},
    {"operators.unattributed_ms_per_step", T::kNumber},
    {"operators.in_module_fraction", T::kNumber},
    {"operators.top_by_gpu_time", T::kList},
    {"operators.top_by_host_time", T::kList},
    {"operators.during_gpu_idle", T::kList},
    {"operators.modules", T::kList},
    {"operators.fp32.top_module", T::kString},
    {"communication.kernel_fraction", T::kNumber},
    {"communication.exposed_fraction", T::kNumber},
    {"verdict.bottleneck", T::kString},
    {"verdict.confidence", T::kNumber},
    {"verdict.summary", T::kString},
    {"verdict.evidence", T::kList},
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
    {"facts.workload.name", T::kString},
    {"facts.workload.planted", T::kList},
    {"facts.inferred", T::kList},
    {"data_quality.events_total", T::kNumber},
    {"data_quality.events_imported", T::kNumber},
    {"data_quality.malformed_events", T::kNumber},
    {"data_quality.unknown_categories", T::kNumber},
    {"data_quality.flow_events_skipped", T::kNumber},
    {"data_quality.negative_durations", T::kNumber},
    {"data_quality.clock_anomalies", T::kNumber},
    {"data_quality.unmatched_correlations", T::kNumber},
    {"data_quality.dropped_records", T::kNumber},
    {"data_quality.missing_device_properties", T::kNumber},
    {"data_quality.agent_internal_errors", T::kNumber},
    {"data_quality.notes", T::kList},
};

constexpr const char* kIdleActivityKeys[] = {"fraction",      "allocator",  "memcpy_api", "sync",  "launch",
                                             "other_runtime", "dataloader", "operators",  "other"};
constexpr const char* kMemcpyKinds[] = {"h2d", "d2h", "d2d"};
constexpr const char* kMemcpyFields[] = {"count_per_step", "bytes_per_step", "time_ms_per_step", "fraction",
                                         "bandwidth_gbps", "pageable_bytes", "pinned_bytes", "pageable_fraction"};

struct Table {
  std::vector<std::string> storage;  // owns the path strings; reserved up front so views stay valid
  std::vector<MetricPath> paths;
};

Table build_table() {
  std::vector<std::pair<std::string, T>> all;
  for (const Leaf& leaf : kLeaves) all.emplace_back(leaf.path, leaf.type);
  for (std::string_view key : kBreakdownRoleNames) {
    all.emplace_back("breakdown." + std::string(key), T::kNumber);
    all.emplace_back("breakdown_ms." + std::string(key), T::kNumber);
  }
  for (std::string_view key : kPhaseNames) {
    all.emplace_back("phases.ms_per_step." + std::string(key), T::kNumber);
    all.emplace_back("phases.fraction." + std::string(key), T::kNumber);
  }
  for (const char* key : kIdleActivityKeys) all.emplace_back(std::string("host.idle_activity.") + key, T::kNumber);
  for (const char* kind : {"fp32", "conv", "idle", "h2d"}) {  // the operator carrying most of each kind of time
    all.emplace_back(std::string("operators.") + kind + ".top_op", T::kString);
    all.emplace_back(std::string("operators.") + kind + ".top_op_share", T::kNumber);
  }
  for (const char* kind : kMemcpyKinds)
    for (const char* field : kMemcpyFields)
      all.emplace_back(std::string("gpu.memcpy.") + kind + "." + field, T::kNumber);
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
