// The tuner's memory prediction (issue 24): from the baseline's memory budget (static bytes and activations per
// sample, analysis/memory_budget.h), which batch sizes would go over the memory limit. Those values are skipped
// before any run, with the prediction as the reason, and the guided search's refinements check it too.
#include <cstdlib>
#include <string>

#include "profile_train/common/format.h"
#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

std::string mib_text(double bytes) { return format_fixed(bytes / 1048576.0, 1) + " MiB"; }  // one unit for a comparison

}  // namespace

std::optional<MemoryFit> memory_fit(const std::optional<model::Report>& report,
                                    std::optional<double> max_memory_bytes) {
  if (!report || !report->memory_budget) return std::nullopt;
  const model::MemoryBudget& b = *report->memory_budget;
  if (!b.activation_per_sample_bytes || *b.activation_per_sample_bytes <= 0 || b.static_bytes <= 0)
    return std::nullopt;
  MemoryFit fit;
  fit.static_bytes = static_cast<double>(b.static_bytes);
  fit.per_sample_bytes = static_cast<double>(*b.activation_per_sample_bytes);
  fit.device = b.device;
  fit.measured_batch = b.batch_size.value_or(0);
  if (max_memory_bytes && *max_memory_bytes > 0) {
    fit.limit_bytes = *max_memory_bytes;
    fit.limit_source = "--max-memory";
    if (b.capacity_bytes && *b.capacity_bytes > 0 && *b.capacity_bytes < fit.limit_bytes) {
      fit.limit_bytes = static_cast<double>(*b.capacity_bytes);
      fit.limit_source = "the " + b.device + "'s capacity (" + b.capacity_source.value_or("memory_budget") + ")";
    }
  } else if (b.capacity_bytes && *b.capacity_bytes > 0) {
    fit.limit_bytes = static_cast<double>(*b.capacity_bytes);
    fit.limit_source = "the " + b.device + "'s capacity (" + b.capacity_source.value_or("memory_budget") + ")";
  } else {
    return std::nullopt;
  }
  return fit;
}

std::optional<SkippedKnob> batch_values_that_do_not_fit(const KnobSpace& space, const MemoryFit& fit) {
  for (const KnobRange& r : space) {
    if (r.def->name != KnobName::kBatchSize || r.values.empty()) continue;
    std::vector<std::string> drop;
    std::string predictions;
    for (size_t i = 1; i < r.values.size(); ++i) {  // the baseline's value (first) always runs
      char* end = nullptr;
      const long long batch = std::strtoll(r.values[i].c_str(), &end, 10);
      if (end == r.values[i].c_str() || *end != '\0' || batch <= 0) continue;
      if (!fit.fits(batch)) {
        drop.push_back(r.values[i]);
        predictions += (predictions.empty() ? "" : ", ") + r.values[i] + ": " + mib_text(fit.predicted_bytes(batch));
      }
    }
    if (drop.empty()) return std::nullopt;
    std::string reason = "predicted not to fit in " + mib_text(fit.limit_bytes) + " (" + fit.limit_source +
                         "): peak = static " + mib_text(fit.static_bytes) + " + batch x " +
                         format_fixed(fit.per_sample_bytes / 1024.0, 1) + " KiB of activations per sample";
    if (fit.measured_batch > 0) reason += " (the baseline's memory budget at batch " + std::to_string(fit.measured_batch) + ")";
    reason += "; predicted peak " + predictions +
              ". The prediction is for the baseline's other knobs (autocast or compile change the activations)";
    return SkippedKnob{r.def->name, drop, reason};
  }
  return std::nullopt;
}

}  // namespace profile_train::tuner
