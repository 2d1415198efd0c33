// Diagnosis -> knobs: which tuner knobs a report's recommendations and verdict point to, and the compact
// diagnosis kept per trial in tune.json.
#include <algorithm>
#include <map>
#include <optional>

#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {
namespace {

// true / false when the report says, nullopt when it does not.
std::optional<bool> bool_at(const nlohmann::json& doc, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &doc;
  for (const char* key : path) {
    if (!node->is_object()) return std::nullopt;
    auto it = node->find(key);
    if (it == node->end()) return std::nullopt;
    node = &*it;
  }
  return node->is_boolean() ? std::optional<bool>(node->get<bool>()) : std::nullopt;
}

// Whether the run trained on a GPU: yes when the report saw one (a device, GPU activity, facts.gpu.available),
// no only when the facts say none was available and nothing of a GPU was recorded; unknown otherwise.
std::optional<bool> ran_on_gpu(const nlohmann::json& report) {
  if (!report.is_object()) return std::nullopt;
  if (report.contains("device") && report["device"].is_object()) return true;
  if (bool_at(report, {"source", "has_gpu_activity"}).value_or(false)) return true;
  return bool_at(report, {"facts", "gpu", "available"});
}

}  // namespace

std::vector<std::string> knobs_for_recommendation(const nlohmann::json& rec) {
  std::vector<std::string> out;
  auto add = [&](const std::string& name) {
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(name);
  };
  if (!rec.is_object()) return out;
  if (auto it = rec.find("knobs"); it != rec.end() && it->is_array()) {
    for (const auto& el : *it) {
      std::string name;
      if (el.is_string()) {
        name = el.get<std::string>();
      } else if (el.is_object()) {
        for (const char* key : {"name", "knob", "path", "key"}) {
          if (el.contains(key) && el[key].is_string()) {
            name = el[key].get<std::string>();
            break;
          }
        }
      }
      const KnobDef* def = find_knob(name);
      if (def == nullptr && name.find('.') != std::string::npos) def = find_knob(name.substr(name.rfind('.') + 1));
      if (def != nullptr) add(def->name);
    }
    if (!out.empty()) return out;
  }
  // By rule id (the catalog in PRODUCT.md): only the rules a knob can act on.
  static const std::map<std::string, std::vector<std::string>> kById = {
      {"dataloader-workers", {"num_workers"}},
      {"prefetch-persistent-workers", {"prefetch_factor", "persistent_workers", "num_workers"}},
      {"pin-memory", {"pin_memory"}},
      {"gpu-preprocessing", {"num_workers"}},
      {"amp", {"amp"}},
      {"channels-last", {"channels_last"}},
      {"cudnn-benchmark", {"cudnn_benchmark"}},
      {"tf32", {"tf32"}},
      {"batch-size", {"batch_size"}},
      {"cuda-graphs", {"batch_size"}},  // fewer, larger kernels per sample
  };
  const std::string id = rec.value("id", std::string());
  if (auto it = kById.find(id); it != kById.end()) {
    for (const auto& k : it->second) add(k);
  }
  return out;
}

std::vector<std::string> knobs_for_bottleneck(std::string_view bottleneck) {
  static const std::map<std::string, std::vector<std::string>, std::less<>> kByVerdict = {
      {"input_pipeline", {"num_workers", "prefetch_factor", "persistent_workers", "pin_memory"}},
      {"host_to_device", {"pin_memory", "num_workers"}},
      {"cpu_overhead", {"batch_size", "amp"}},
      {"synchronization", {"batch_size"}},
      {"gpu_compute", {"amp", "channels_last", "tf32", "cudnn_benchmark", "batch_size"}},
      {"gpu_memory", {"amp", "batch_size"}},
      {"communication", {"batch_size"}},
      {"cpu_only", {"num_workers", "batch_size"}},
  };
  auto it = kByVerdict.find(bottleneck);
  return it == kByVerdict.end() ? std::vector<std::string>{} : it->second;
}

std::vector<std::string> diagnosed_knobs(const nlohmann::json& report) {
  std::vector<std::string> out;
  auto add = [&](const std::string& k) {
    if (std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  if (!report.is_object()) return out;
  if (auto it = report.find("recommendations"); it != report.end() && it->is_array()) {
    for (const auto& rec : *it) {
      for (const auto& k : knobs_for_recommendation(rec)) add(k);
    }
  }
  if (auto it = report.find("verdict"); it != report.end() && it->is_object()) {
    for (const auto& k : knobs_for_bottleneck(it->value("bottleneck", std::string()))) add(k);
  }
  return out;
}

nlohmann::json summarize_diagnosis(const nlohmann::json& report) {
  nlohmann::json d = nlohmann::json::object();
  if (!report.is_object()) return d;
  if (auto it = report.find("verdict"); it != report.end() && it->is_object()) {
    d["bottleneck"] = it->value("bottleneck", std::string("unknown"));
    if (it->contains("confidence") && (*it)["confidence"].is_number()) d["confidence"] = (*it)["confidence"];
    d["summary"] = it->value("summary", std::string());
  }
  nlohmann::json recs = nlohmann::json::array();
  if (auto it = report.find("recommendations"); it != report.end() && it->is_array()) {
    for (const auto& rec : *it) {
      if (recs.size() >= 5) break;
      if (!rec.is_object()) continue;
      recs.push_back({{"id", rec.value("id", std::string())},
                      {"title", rec.value("title", std::string())},
                      {"knobs", knobs_for_recommendation(rec)}});
    }
  }
  d["recommendations"] = recs;
  return d;
}

std::vector<SkippedKnob> skipped_values(const KnobSpace& space, const nlohmann::json& report,
                                        std::optional<bool> host_bf16_native) {
  std::vector<SkippedKnob> out;
  const std::optional<bool> gpu = ran_on_gpu(report);
  if (gpu.value_or(true)) return out;
  std::optional<bool> bf16 = bool_at(report, {"facts", "cpu", "bf16_native"});
  const bool bf16_from_report = bf16.has_value();
  if (!bf16) bf16 = host_bf16_native;
  const std::string no_gpu = "the baseline ran without a GPU (facts.gpu.available = false)";
  for (const KnobRange& r : space) {
    if (r.values.empty()) continue;
    const std::string& name = r.def->name;
    const std::string& base = r.values.front();
    std::vector<std::string> drop;
    std::string reason;
    if (name == "pin_memory") {
      reason = "pinned host memory only speeds up copies to a GPU; " + no_gpu;
      for (const auto& v : r.values) if (v != base) drop.push_back(v);
    } else if (name == "cudnn_benchmark" || name == "tf32") {
      reason = std::string(name == "tf32" ? "TF32" : "the cuDNN autotuner") + " acts on the GPU only; " + no_gpu;
      for (const auto& v : r.values) if (v != base) drop.push_back(v);
    } else if (name == "amp") {
      for (const auto& v : r.values) {
        if (v == base) continue;
        if (v == "fp16" || (v == "bf16" && bf16.has_value() && !*bf16)) drop.push_back(v);
      }
      auto dropped = [&](const char* v) { return std::find(drop.begin(), drop.end(), v) != drop.end(); };
      if (dropped("fp16")) reason = "fp16 autocast needs a GPU (" + no_gpu + ")";
      if (dropped("bf16")) {
        reason += std::string(reason.empty() ? "" : "; ") + "bf16 autocast is emulated on a CPU without AMX or " +
                  "AVX512-BF16 (" + (bf16_from_report ? "facts.cpu.bf16_native" : "this host's /proc/cpuinfo") +
                  " = false), slower than fp32";
      }
    }
    if (!drop.empty()) out.push_back({name, drop, reason});
  }
  return out;
}

}  // namespace profile_train::tuner
