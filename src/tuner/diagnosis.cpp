// Diagnosis -> knobs: which tuner knobs a report's recommendations (each rule's `knobs`, rules/*.json) and
// verdict point to, the compact diagnosis kept per trial in tune.json, and the values that cannot act here.
#include <algorithm>
#include <optional>
#include <set>

#include "profile_train/common/json_path.h"

#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

std::vector<std::string> knobs_for_recommendation(const model::Recommendation& rec) {
  std::vector<std::string> out;
  for (const std::string& name : rec.knobs) {
    const KnobDef* def = find_knob(name);
    if (def != nullptr && std::find(out.begin(), out.end(), def->name) == out.end()) out.push_back(def->name);
  }
  return out;
}

std::vector<std::string> unknown_knobs(const model::Recommendation& rec) {
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

std::vector<DiagnosedKnob> diagnosed_knobs(const std::optional<model::Report>& report, DiagnosisScope scope) {
  std::vector<DiagnosedKnob> out;
  auto add = [&](const std::string& knob, const std::string& source) {
    for (const DiagnosedKnob& d : out) {
      if (d.knob == knob) return;
    }
    out.push_back({knob, source});
  };
  if (!report) return out;
  for (const model::Recommendation& rec : report->recommendations) {
    const std::string source = "recommendation " + (rec.id.empty() ? std::string("?") : rec.id);
    for (const auto& k : knobs_for_recommendation(rec)) add(k, source);
  }
  if (scope == DiagnosisScope::kRecommendationsThenVerdict) {
    const Bottleneck b = report->verdict.bottleneck;
    for (const auto& k : knobs_for_bottleneck(b)) add(k, "verdict " + std::string(name_of(b)));
  }
  return out;
}

Diagnosis summarize_diagnosis(const std::optional<model::Report>& report) {
  Diagnosis d;
  if (!report) return d;
  d.from_report = true;
  d.bottleneck = report->verdict.bottleneck;
  d.confidence = report->verdict.confidence;
  d.summary = report->verdict.summary;
  for (const model::Recommendation& rec : report->recommendations) {
    if (d.recommendations.size() >= 5) break;
    d.recommendations.push_back({rec.id, rec.title, knobs_for_recommendation(rec)});
  }
  return d;
}

namespace {

// Why `knob` (or one of its values) cannot act on the program the baseline ran, from the shim's facts; "" when
// it can or when the facts cannot tell (no shim facts: the built-in workload, a trace without the shim).
std::string program_cannot_act(const KnobDef& knob, const std::string& value, const nlohmann::json& facts) {
  if (!bool_path(facts, {"capture", "shim"}).value_or(false)) return "";
  auto has = [&](const char* key) { return facts.contains(key) && facts[key].is_object(); };
  switch (knob.program_needs) {
    case KnobProgramNeeds::kNothing: return "";
    case KnobProgramNeeds::kDataLoader:
      return has("dataloader") ? "" : "the program iterates no torch DataLoader (facts.dataloader absent)";
    case KnobProgramNeeds::kConvModel:
      if (!has("model")) return "the shim saw no top-level model (facts.model absent)";
      return bool_path(facts, {"model", "has_conv"}).value_or(true) ? ""
                                                                   : "the model has no convolution (facts.model.has_conv = false)";
    case KnobProgramNeeds::kModel:
      return has("model") ? "" : "the shim saw no top-level model (facts.model absent)";
    case KnobProgramNeeds::kOptimizer: {
      if (!has("optimizer")) return "the program steps no torch.optim optimizer (facts.optimizer absent)";
      const std::string cls = string_path(facts, {"optimizer", "class"}).value_or("?");
      if (value == "foreach" && !bool_path(facts, {"optimizer", "takes_foreach"}).value_or(true)) {
        return cls + " takes no foreach= (facts.optimizer.takes_foreach = false)";
      }
      if (value == "fused" && !bool_path(facts, {"optimizer", "takes_fused"}).value_or(true)) {
        return cls + " has no fused implementation (facts.optimizer.takes_fused = false)";
      }
      return "";
    }
  }
  return "";
}

}  // namespace

std::vector<SkippedKnob> skipped_values(const KnobSpace& space, const std::optional<model::Report>& report,
                                        std::optional<bool> host_bf16_native,
                                        const std::set<std::string>& placeholders) {
  std::vector<SkippedKnob> out;
  if (!report) return out;
  // What the program lacks (facts of the shim): applied through an override only (a {placeholder} in the
  // command is the program's own argument, whatever it does with it).
  std::set<std::string> dropped_for_program;
  for (const KnobRange& r : space) {
    if (r.values.empty() || placeholders.count(r.def->name) || r.def->override_key.empty()) continue;
    const std::string& base = r.values.front();
    std::vector<std::string> drop;
    std::string reason;
    for (const auto& v : r.values) {
      if (v == base) continue;
      const std::string why = program_cannot_act(*r.def, v, report->facts);
      if (why.empty()) continue;
      drop.push_back(v);
      if (reason.find(why) == std::string::npos) reason += (reason.empty() ? "" : "; ") + why;
    }
    if (drop.empty()) continue;
    if (drop.size() + 1 == r.values.size()) dropped_for_program.insert(r.def->name);
    out.push_back({r.def->name, drop, reason});
  }
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
    if (r.values.empty() || dropped_for_program.count(r.def->name)) continue;
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
    // One entry per knob: a knob some of whose values the program already ruled out gets the rest appended.
    auto same = std::find_if(out.begin(), out.end(), [&](const SkippedKnob& k) { return k.knob == def.name; });
    if (same == out.end()) {
      out.push_back({def.name, drop, reason});
      continue;
    }
    for (const auto& v : drop) {
      if (std::find(same->values.begin(), same->values.end(), v) == same->values.end()) same->values.push_back(v);
    }
    same->reason += "; " + reason;
  }
  return out;
}

}  // namespace profile_train::tuner
