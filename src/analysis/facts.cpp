// Configuration facts inferred from the trace when the capture did not record them. Recorded facts
// (trace.facts) always win; `inferred` lists the dotted paths this file filled.
#include <set>
#include <string>

#include "profile_train/analysis/analyzers.h"

namespace profile_train::analysis {

using trace::Category;
using nlohmann::json;

namespace {

bool has_path(const json& j, const std::string& group, const std::string& key) {
  return j.is_object() && j.contains(group) && j[group].is_object() && j[group].contains(key) &&
         !j[group][key].is_null();
}

}  // namespace

json infer_facts(const trace::Trace& t, const TraceIndex& idx) {
  json inferred = json::object();
  std::set<std::string> paths;
  auto put = [&](const std::string& group, const std::string& key, json value) {
    inferred[group][key] = std::move(value);
    paths.insert(group + "." + key);
  };

  bool single_iter = false, multi_iter = false, dp = false, ddp = false, conv_op = false, cuda_host = false;
  std::string optimizer;
  for (const auto& e : t.events) {
    if (e.is_gpu || (e.cat != Category::kCpuOp && e.cat != Category::kUserAnnotation)) continue;
    const std::string& n = t.name(e);
    // Host operators that only exist in GPU jobs: NCCL collectives, CUDA stream bookkeeping, cuDNN ops.
    if (!cuda_host && (n.rfind("nccl:", 0) == 0 || n == "aten::record_stream" || n.find("cudnn") != std::string::npos ||
                       n.find("cuda") != std::string::npos))
      cuda_host = true;
    if (is_dataloader_annotation(n)) {
      if (n.find("_SingleProcessDataLoaderIter") != std::string::npos) single_iter = true;
      if (n.find("_MultiProcessingDataLoaderIter") != std::string::npos) multi_iter = true;
    } else if (optimizer.empty() && is_optimizer_step_annotation(n)) {
      // "Optimizer.step#SGD.step" -> "SGD"
      const auto hash = n.find('#');
      const auto dot = n.find('.', hash);
      if (hash != std::string::npos && dot != std::string::npos && dot > hash + 1)
        optimizer = n.substr(hash + 1, dot - hash - 1);
    } else if (n == "DataParallel.forward") {
      dp = true;
    } else if (n == "DistributedDataParallel.forward") {
      ddp = true;
    } else if (!conv_op && n.find("conv") != std::string::npos && n.rfind("aten::", 0) == 0) {
      conv_op = true;
    }
  }
  if (single_iter && !multi_iter) {
    put("dataloader", "num_workers", 0);
    put("dataloader", "multiprocess", false);
  } else if (multi_iter) {
    put("dataloader", "num_workers", nullptr);  // >= 1, count unknown
    put("dataloader", "multiprocess", true);
  }
  if (!optimizer.empty()) put("optimizer", "class", optimizer);

  bool conv_kernel = false;
  for (size_t p = 0; p < idx.kernels.size() && !conv_kernel; ++p)
    conv_kernel = idx.kernel_class(p).kind == KernelKind::kConv;
  if (conv_kernel || conv_op) put("model", "has_conv", true);
  else if (idx.has_cpu_ops || !idx.kernels.empty()) put("model", "has_conv", false);
  if (dp) put("model", "dataparallel", true);
  if (ddp) put("distributed", "ddp", true);

  // gpu.used: the job used a GPU (GPU activity, CUDA/HIP API calls, or GPU-only host operators), even when
  // the trace lost the GPU timeline (trimmed traces).
  if (idx.has_gpu_activity || !idx.runtimes.empty() || cuda_host) put("gpu", "used", true);
  else if (idx.has_cpu_ops) put("gpu", "used", false);
  if (idx.has_gpu_activity) {
    put("gpu", "available", true);
    if (const auto* d = t.device(idx.main_device)) {
      if (!d->name.empty()) put("gpu", "name", d->name);
      if (d->total_memory_bytes > 0) put("gpu", "memory_total_bytes", d->total_memory_bytes);
    }
  } else if (!t.devices.empty()) {
    put("gpu", "available", true);  // devices visible, none used
    if (!t.devices.front().name.empty()) put("gpu", "name", t.devices.front().name);
  }
  if (!t.devices.empty()) put("gpu", "count", static_cast<int64_t>(t.devices.size()));
  if (t.meta.world_size > 0) put("distributed", "world_size", t.meta.world_size);

  // Merge: recorded facts win key by key; a recorded key removes it from `inferred`.
  json facts = t.facts.is_object() ? t.facts : json::object();
  for (auto& [group, obj] : inferred.items()) {
    for (auto& [key, value] : obj.items()) {
      if (has_path(facts, group, key)) {
        paths.erase(group + "." + key);
        continue;
      }
      if (!facts.contains(group) || !facts[group].is_object()) facts[group] = json::object();
      facts[group][key] = value;
    }
  }
  json list = json::array();
  if (facts.contains("inferred") && facts["inferred"].is_array())
    for (const auto& p : facts["inferred"])
      if (p.is_string()) paths.insert(p.get<std::string>());
  for (const auto& p : paths) list.push_back(p);
  facts["inferred"] = list;
  return facts;
}

}  // namespace profile_train::analysis
