#include "profile_train/tuner/trial.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>

#include "profile_train/common/json_path.h"
#include "profile_train/model/report_json.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

std::string_view to_string(RunStatus status) {
  switch (status) {
    case RunStatus::kOk: return "ok";
    case RunStatus::kOom: return "oom";
    case RunStatus::kOverMemory: return "over_memory";
    case RunStatus::kCrashed: return "crashed";
    case RunStatus::kTimedOut: return "timed_out";
    case RunStatus::kNoMetric: return "no_metric";
    case RunStatus::kInterrupted: return "interrupted";
    case RunStatus::kOverrideFailed: return "override_failed";
  }
  return "unknown";
}

StatusOr<model::Report> read_trial_report(std::string_view text) {
  const nlohmann::json doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return BadInput("report.json: not valid JSON");
  auto report = model::report_from_json(doc);
  if (!report.ok()) {
    // report_from_json's messages start "report: "; the file is named instead.
    std::string why = report.status().message();
    if (why.rfind("report: ", 0) == 0) why.erase(0, 8);
    return BadInput("report.json: " + why);
  }
  return std::move(*report);
}

TunerFacts tuner_facts(const model::Report& report) {
  const nlohmann::json& f = report.facts;
  TunerFacts out;
  out.gpu_available = bool_path(f, {"gpu", "available"});
  out.cpu_bf16_native = bool_path(f, {"cpu", "bf16_native"});
  const std::optional<double> batch = number_path(f, {"dataloader", "batch_size"});
  if (batch && *batch >= 1) out.batch_size = static_cast<long long>(*batch);
  out.gpu_memory_peak_bytes = number_path(f, {"gpu", "memory_peak_bytes"});
  return out;
}

std::string overrides_failed(const model::Report& report) {
  const nlohmann::json& f = report.facts;
  if (!f.is_object() || !f.contains("overrides_failed") || !f["overrides_failed"].is_object()) return "";
  std::string out;
  for (const auto& [key, why] : f["overrides_failed"].items()) {
    out += (out.empty() ? "" : "; ") + std::string("override ") + key + " could not apply: " +
           (why.is_string() ? why.get<std::string>() : why.dump());
  }
  return out;
}

long long batch_from_facts(const std::optional<model::Report>& report) {
  return report ? tuner_facts(*report).batch_size : 0;
}

std::optional<bool> ran_on_gpu(const std::optional<model::Report>& report) {
  if (!report) return std::nullopt;
  if (report->device || report->source.has_gpu_activity) return true;
  return tuner_facts(*report).gpu_available;
}

double Pair::log_ratio() const {
  return value > 0 && reference_value > 0 ? std::log(value / reference_value) : 0.0;
}

Status metric_from_report(const std::optional<model::Report>& report, const Config& config,
                          long long known_batch, Measurement* m) {
  if (!report) return BadInput(m->report_error.empty() ? "no report.json" : m->report_error);
  const int64_t count = report->steps.count;
  const SteadyState steady = steady_state_of(*report);
  const double step_ms = steady.step_ms;
  if (!(step_ms > 0)) {
    return BadInput("report.json has no step time (steps.per_step / median_ms / mean_ms missing or not positive)");
  }
  if (count < 1) return BadInput("report.json measured no steps (steps.count = 0)");
  const TunerFacts facts = tuner_facts(*report);
  long long batch = config_int(config, KnobName::kBatchSize, 0);
  if (batch <= 0) batch = facts.batch_size;
  if (batch <= 0) batch = known_batch;
  m->step_ms = step_ms;
  m->steady = steady;
  m->steps = count;
  m->per_sample = batch > 0;
  m->throughput = (batch > 0 ? static_cast<double>(batch) : 1.0) * 1000.0 / step_ms;
  // Peak memory: the GPU allocator's peak when captured, else the shim's fact.
  std::optional<double> peak = facts.gpu_memory_peak_bytes;
  if (const auto& gpu_peak = report->gpu.memory.peak_allocated_bytes) peak = static_cast<double>(*gpu_peak);
  // Else the memory budget's peak (on a CPU: static + the activations saved for backward, a lower bound).
  if (!peak && report->memory_budget && report->memory_budget->peak_bytes)
    peak = static_cast<double>(*report->memory_budget->peak_bytes);
  if (peak && *peak > 0) m->peak_memory_bytes = *peak;
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
