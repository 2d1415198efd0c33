#include "profile_train/tuner/trial.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

namespace profile_train::tuner {
namespace {

// Number at a dotted path of a JSON document, or NaN when absent / not a number.
double number_at(const nlohmann::json& doc, std::initializer_list<const char*> path) {
  const nlohmann::json* node = &doc;
  for (const char* key : path) {
    if (!node->is_object()) return NAN;
    auto it = node->find(key);
    if (it == node->end()) return NAN;
    node = &*it;
  }
  return node->is_number() ? node->get<double>() : NAN;
}

}  // namespace

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kOom: return "oom";
    case RunStatus::kOverMemory: return "over_memory";
    case RunStatus::kCrashed: return "crashed";
    case RunStatus::kTimedOut: return "timed_out";
    case RunStatus::kNoMetric: return "no_metric";
    case RunStatus::kInterrupted: return "interrupted";
  }
  return "unknown";
}

long long batch_from_facts(const nlohmann::json& report) {
  const double b = number_at(report, {"facts", "dataloader", "batch_size"});
  return (std::isfinite(b) && b >= 1) ? static_cast<long long>(b) : 0;
}

double Pair::log_ratio() const {
  return value > 0 && reference_value > 0 ? std::log(value / reference_value) : 0.0;
}

Status metric_from_report(const nlohmann::json& report, const Config& config, long long known_batch,
                          Measurement* m) {
  if (!report.is_object()) return BadInput("no report.json");
  const double count = number_at(report, {"steps", "count"});
  const SteadyState steady = steady_state_of(report);
  const double step_ms = steady.step_ms;
  if (!(step_ms > 0)) {
    return BadInput("report.json has no step time (steps.per_step / median_ms / mean_ms missing or not positive)");
  }
  if (std::isfinite(count) && count < 1) return BadInput("report.json measured no steps (steps.count = 0)");
  long long batch = config_int(config, "batch_size", 0);
  if (batch <= 0) batch = batch_from_facts(report);
  if (batch <= 0) batch = known_batch;
  m->step_ms = step_ms;
  m->steady = steady;
  m->steps = std::isfinite(count) ? static_cast<long long>(count) : 0;
  m->per_sample = batch > 0;
  m->throughput = (batch > 0 ? static_cast<double>(batch) : 1.0) * 1000.0 / step_ms;
  // Peak memory: the GPU allocator's peak when captured, else the shim's fact.
  double peak = number_at(report, {"gpu", "memory", "peak_allocated_bytes"});
  if (!std::isfinite(peak)) peak = number_at(report, {"facts", "gpu", "memory_peak_bytes"});
  if (std::isfinite(peak) && peak > 0) m->peak_memory_bytes = peak;
  return Status::Ok();
}

bool looks_like_oom(std::string_view log_text) {
  // Lower-cased search: messages of torch (CUDA caching allocator, OutOfMemoryError), the CUDA runtime,
  // cuBLAS / cuDNN allocation failures and the CPU allocator.
  static constexpr std::array<std::string_view, 7> kNeedles = {
      "cuda out of memory",           "outofmemoryerror",
      "cuda error: out of memory",    "cublas_status_alloc_failed",
      "cudnn_status_alloc_failed",    "defaultcpuallocator: can't allocate memory",
      "hip out of memory",
  };
  std::string text(log_text);
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return std::any_of(kNeedles.begin(), kNeedles.end(),
                     [&](std::string_view n) { return text.find(n) != std::string::npos; });
}

}  // namespace profile_train::tuner
