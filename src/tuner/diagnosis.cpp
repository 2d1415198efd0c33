// Diagnosis -> knobs: which tuner knobs a report's recommendations (each rule's `knobs`, rules/*.json) and
// verdict point to, the compact diagnosis kept per trial in tune.json, and the values that cannot act here.
#include <algorithm>
#include <optional>

#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {

std::vector<std::string> knobs_for_recommendation(const analysis::Recommendation& rec) {
  std::vector<std::string> out;
  for (const std::string& name : rec.knobs) {
    const KnobDef* def = find_knob(name);
    if (def != nullptr && std::find(out.begin(), out.end(), def->name) == out.end()) out.push_back(def->name);
  }
  return out;
}

std::vector<std::string> unknown_knobs(const analysis::Recommendation& rec) {
  std::vector<std::string> out;
  for (const std::string& name : rec.knobs) {
    if (find_knob(name) == nullptr) out.push_back(name);
  }
  return out;
}

std::vector<std::string> knobs_for_bottleneck(Bottleneck bottleneck) {
  // A switch without default: a bottleneck added to the vocabulary (common/vocabulary.h) is a -Wswitch warning
  // here until it has its list.
  using K = KnobName;
  switch (bottleneck) {
    case Bottleneck::kInputPipeline: return {K::kNumWorkers, K::kPrefetchFactor, K::kPersistentWorkers, K::kPinMemory};
    case Bottleneck::kHostToDevice: return {K::kPinMemory, K::kNumWorkers};
    case Bottleneck::kCpuOverhead: return {K::kBatchSize, K::kAmp};
    case Bottleneck::kSynchronization: return {K::kBatchSize};
    case Bottleneck::kGpuCompute: return {K::kAmp, K::kChannelsLast, K::kTf32, K::kCudnnBenchmark, K::kBatchSize};
    case Bottleneck::kGpuMemory: return {K::kAmp, K::kBatchSize};
    case Bottleneck::kCommunication: return {K::kBatchSize};
    case Bottleneck::kCpuOnly: return {K::kNumWorkers, K::kBatchSize};
    case Bottleneck::kUnknown: return {};
  }
  return {};
}

std::vector<DiagnosedKnob> diagnosed_knobs(const std::optional<analysis::Report>& report, DiagnosisScope scope) {
  std::vector<DiagnosedKnob> out;
  auto add = [&](const std::string& knob, const std::string& source) {
    for (const DiagnosedKnob& d : out) {
      if (d.knob == knob) return;
    }
    out.push_back({knob, source});
  };
  if (!report) return out;
  for (const analysis::Recommendation& rec : report->recommendations) {
    const std::string source = "recommendation " + (rec.id.empty() ? std::string("?") : rec.id);
    for (const auto& k : knobs_for_recommendation(rec)) add(k, source);
  }
  if (scope == DiagnosisScope::kRecommendationsThenVerdict) {
    const Bottleneck b = report->verdict.bottleneck;
    for (const auto& k : knobs_for_bottleneck(b)) add(k, "verdict " + std::string(name_of(b)));
  }
  return out;
}

Diagnosis summarize_diagnosis(const std::optional<analysis::Report>& report) {
  Diagnosis d;
  if (!report) return d;
  d.from_report = true;
  d.bottleneck = report->verdict.bottleneck;
  d.confidence = report->verdict.confidence;
  d.summary = report->verdict.summary;
  for (const analysis::Recommendation& rec : report->recommendations) {
    if (d.recommendations.size() >= 5) break;
    d.recommendations.push_back({rec.id, rec.title, knobs_for_recommendation(rec)});
  }
  return d;
}

std::vector<SkippedKnob> skipped_values(const KnobSpace& space, const std::optional<analysis::Report>& report,
                                        std::optional<bool> host_bf16_native) {
  std::vector<SkippedKnob> out;
  const std::optional<bool> gpu = ran_on_gpu(report);
  if (gpu.value_or(true)) return out;
  std::optional<bool> bf16 = tuner_facts(*report).cpu_bf16_native;
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
