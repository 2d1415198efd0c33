// One trial = one configuration measured one or more times. The TrialRunner seam runs ONE measurement
// (one process: `profile-train run -- CMD` in production, a synthetic response surface in tests); the tuner
// aggregates repeats, estimates noise and decides. Owner: tuner component.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
#include "profile_train/model/tune.h"
#include "profile_train/common/status.h"
#include "profile_train/tuner/knobs.h"
#include "profile_train/tuner/quality.h"
#include "profile_train/tuner/statistics.h"

namespace profile_train::tuner {

enum class RunStatus {
  kOk,
  kOom,          // out of memory (CUDA OOM message, torch OutOfMemoryError, or killed by the kernel OOM killer)
  kOverMemory,   // finished, but its peak memory is above --max-memory
  kCrashed,      // non-zero exit for another reason, or it could not be started
  kTimedOut,     // hit the per-trial timeout, or stopped early as clearly slower than the best trial
  kNoMetric,     // exited 0 but no step time could be read (no report.json / no steps)
  kInterrupted,  // Ctrl-C during the measurement
  kOverrideFailed,  // an override of the Python shim could not apply to this program (facts.overrides_failed)
};
std::string_view to_string(RunStatus status);

// What the runner needs to know about the measurement it is asked for.
struct RunContext {
  int trial_index = 0;      // 1-based trial number (stable across repeats of one trial)
  int repeat = 0;           // 0-based repeat within the trial
  double timeout_s = 0;     // kill the measurement after this many seconds (0 = no limit)
  std::string timeout_reason;  // why this limit (shown when the trial is stopped by it)
};

// One measurement (one process run).
struct Measurement {
  RunStatus status = RunStatus::kCrashed;
  double throughput = 0;       // samples/s when per_sample, else steps/s; > 0 only when status == kOk
  bool per_sample = false;
  double step_ms = 0;          // steady-state step time (statistics.h: median of the post-warm-up steps)
  long long steps = 0;         // steps in the report's measured window
  SteadyState steady;          // how step_ms was taken: method, warm-up steps left out
  std::optional<double> peak_memory_bytes;
  double duration_s = 0;       // wall time of the whole process
  int exit_code = 0;           // process exit status (128 + signal when killed)
  std::string message;         // one line: why it failed (last log line, OOM text, ...)
  std::string dir;             // folder with report.json / trial.log ("" for fake runners)
  std::optional<model::Report> report;  // the run's report.json (none when none was written or readable)
  std::string report_error;    // why report.json could not be read ("" when it was, or there was none)
};

// The seam between the search and the world. Implementations must not throw.
class TrialRunner {
 public:
  virtual ~TrialRunner() = default;
  virtual Measurement run(const model::Config& config, const RunContext& context) = 0;
  // Independent measurements, results in the order asked. A runner that can run several at once (the Ray
  // executor: up to --parallel in flight) overrides this; the default runs them one after the other.
  virtual std::vector<Measurement> run_batch(const std::vector<std::pair<model::Config, RunContext>>& items) {
    std::vector<Measurement> out;
    out.reserve(items.size());
    for (const auto& [config, context] : items) out.push_back(run(config, context));
    return out;
  }
  // Measurements this runner keeps in flight at once (the strategies batch only when > 1).
  virtual int parallelism() const { return 1; }
};

// A trial's report.json text as a typed report (model::report_from_json). BadInput, one line starting
// "report.json: ", when it is not JSON or not a report this build reads.
StatusOr<model::Report> read_trial_report(std::string_view text);

// Fills throughput / per_sample / step_ms / steady / steps / peak memory of `m` from its report: the metric
// is batch_size / steady-state step time (samples/s) where the batch size is known (config's batch_size, else
// facts.dataloader.batch_size, else `known_batch` when > 0), otherwise 1000 / step time (steps/s).
// BadInput when there is no report (m->report_error says why, when set) or it has no usable step time.
Status metric_from_report(const std::optional<model::Report>& report, const model::Config& config,
                          long long known_batch, Measurement* m);

// The recorded facts the tuner uses (the report keeps `facts` as JSON; these are read from it here only).
struct TunerFacts {
  std::optional<bool> gpu_available;           // facts.gpu.available
  std::optional<bool> cpu_bf16_native;         // facts.cpu.bf16_native
  long long batch_size = 0;                    // facts.dataloader.batch_size; 0 when unknown
  std::optional<double> gpu_memory_peak_bytes; // facts.gpu.memory_peak_bytes
};
TunerFacts tuner_facts(const model::Report& report);

// "override KEY could not apply: REASON; ..." from facts.overrides_failed (the shim ran the program without
// them); "" when every override applied. Such a run measured something else than its configuration.
std::string overrides_failed(const model::Report& report);

// The batch size a report's facts record (facts.dataloader.batch_size), or 0 (also without a report).
long long batch_from_facts(const std::optional<model::Report>& report);

// Whether the run trained on a GPU: yes when the report saw one (a device, GPU activity, facts.gpu.available),
// no only when the facts say none was available and nothing of a GPU was recorded; unknown otherwise (also
// without a report).
std::optional<bool> ran_on_gpu(const std::optional<model::Report>& report);

// True when a process log shows an out-of-memory failure (CUDA OOM, torch.OutOfMemoryError, the CPU
// allocator failing, CUBLAS/cuDNN allocation failures).
bool looks_like_oom(std::string_view log_text);

// One candidate run and the run of its reference that immediately preceded it (ABAB interleaving).
struct Pair {
  int reference = -1;        // index of the reference trial
  double reference_value = 0;
  double value = 0;          // the candidate's throughput
  bool confirm = false;      // measured by the final head-to-head check
  double log_ratio() const;  // ln(value / reference_value)
};

// Diagnosis (the compact diagnosis of a trial's last report kept in tune.json) is in model/tune.h.

// All measurements of one configuration, aggregated.
struct Trial {
  int index = 0;                 // 1-based
  model::Config config;
  std::string reason;            // why the search tried it ("baseline", "recommendation dataloader-workers", ...)
  RunStatus status = RunStatus::kCrashed;  // kOk when at least one measurement succeeded and none failed
  std::vector<double> values;    // throughput of each successful measurement (its own and as a reference)
  std::vector<Pair> pairs;       // its runs against a reference, each right after a run of that reference
  double mean = 0;               // mean of values
  double stddev = 0;             // sample standard deviation of values (0 with one value)
  bool per_sample = false;
  bool early_stopped = false;    // repeats skipped: clearly slower than the best after the first measurement
  int unreliable_pairs = 0;      // pairs whose runs kept seeing different load (TuneOptions' load rule): unused
  bool accepted = false;         // became the new best (guided) / is a new running best (grid)
  int measurements = 0;          // processes run for this trial
  double duration_s = 0;         // sum over its measurements
  std::optional<double> peak_memory_bytes;
  std::string message;
  std::vector<std::string> dirs; // per-measurement output folders
  std::optional<model::Diagnosis> diagnosis;  // none until the trial is finished
  std::optional<model::Report> report;  // last report.json read (in memory only; not written into tune.json)
  std::vector<LossCurve> losses; // the loss each successful run recorded (facts.loss; in memory only)
  std::vector<double> compile_s; // torch.compile's compile time of each run that recorded it (facts.compile)
  LossComparison loss;           // against the baseline (quality.h); "not recorded" for the baseline itself
  bool ok() const { return status == RunStatus::kOk && !values.empty(); }
  // Mean compile seconds per run: spent outside the steady-state steps the rate is measured on.
  std::optional<double> mean_compile_s() const {
    if (compile_s.empty()) return std::nullopt;
    double sum = 0;
    for (double v : compile_s) sum += v;
    return sum / static_cast<double>(compile_s.size());
  }
};

}  // namespace profile_train::tuner
