// Diagnosis -> knobs: which tuner knobs a report's recommendations (each rule's `knobs`, rules/*.json) and
// verdict point to, the compact diagnosis kept per trial in tune.json, and the values that cannot act here.
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
  if (!rec.is_object()) return out;
  auto it = rec.find("knobs");
  if (it == rec.end() || !it->is_array()) return out;
  for (const auto& el : *it) {
    const KnobDef* def = el.is_string() ? find_knob(el.get<std::string>()) : nullptr;
    if (def != nullptr && std::find(out.begin(), out.end(), def->name) == out.end()) out.push_back(def->name);
  }
  return out;
}

std::vector<std::string> unknown_knobs(const nlohmann::json& rec) {
  std::vector<std::string> out;
  if (!rec.is_object() || !rec.contains("knobs") || !rec["knobs"].is_array()) return out;
  for (const auto& el : rec["knobs"]) {
    const std::string name = el.is_string() ? el.get<std::string>() : el.dump();
    if (find_knob(name) == nullptr) out.push_back(name);
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

std::vector<DiagnosedKnob> diagnosed_knobs(const nlohmann::json& report, DiagnosisScope scope) {
  std::vector<DiagnosedKnob> out;
  auto add = [&](const std::string& knob, const std::string& source) {
    for (const DiagnosedKnob& d : out) {
      if (d.knob == knob) return;
    }
    out.push_back({knob, source});
  };
  if (!report.is_object()) return out;
  if (auto it = report.find("recommendations"); it != report.end() && it->is_array()) {
    for (const auto& rec : *it) {
      if (!rec.is_object()) continue;
      const std::string source = "recommendation " + rec.value("id", std::string("?"));
      for (const auto& k : knobs_for_recommendation(rec)) add(k, source);
    }
  }
  if (scope == DiagnosisScope::kRecommendationsThenVerdict) {
    if (auto it = report.find("verdict"); it != report.end() && it->is_object()) {
      const std::string v = it->value("bottleneck", std::string());
      for (const auto& k : knobs_for_bottleneck(v)) add(k, "verdict " + v);
    }
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
  // Without a GPU: a kGpu value cannot act; a kGpuOrNativeBf16 one only where the CPU has native bf16.
  auto cannot_act = [&](KnobNeeds needs) {
    return needs == KnobNeeds::kGpu || (needs == KnobNeeds::kGpuOrNativeBf16 && bf16.has_value() && !*bf16);
  };
  for (const KnobRange& r : space) {
    if (r.values.empty()) continue;
    const KnobDef& def = *r.def;
    const std::string& base = r.values.front();
    std::vector<std::string> drop;
    for (const auto& v : r.values) {
      if (v != base && cannot_act(needs_of(def, v))) drop.push_back(v);
    }
    if (drop.empty()) continue;
    std::string reason;
    if (cannot_act(def.needs)) reason = def.needs_why + "; " + no_gpu;
    for (const KnobValueNeeds& n : def.value_needs) {  // the reasons in the catalog's order
      if (std::find(drop.begin(), drop.end(), n.value) == drop.end()) continue;
      std::string why = n.why;
      if (n.needs == KnobNeeds::kGpu) {
        why += " (" + no_gpu + ")";
      } else {
        why += std::string(" (") + (bf16_from_report ? "facts.cpu.bf16_native" : "this host's /proc/cpuinfo") +
               " = false), slower than fp32";
      }
      reason += (reason.empty() ? "" : "; ") + why;
    }
    out.push_back({def.name, drop, reason});
  }
  return out;
}

}  // namespace profile_train::tuner
