// tune.json as typed data: what the tuner builds from a session (tuner/tune_report.h), to_json serializes
// (tune_json.cpp, the one serialization) and report::tune_html presents. One struct per section, one member per
// key (the format: tuner/tune_report.h). Plain data: it includes no tuner header; the few tuner types a row
// carries (a configuration, a skipped knob, a trial's diagnosis, a Ray placement) are defined here.
// Conventions, so that tune.json keeps its bytes:
//  - std::optional<T> is a key that is always written and may be null, except members commented "absent
//    when unset" (keys that are left out).
//  - double members are JSON floating-point numbers, integer members JSON integers.
// Owner: model room (namespace profile_train::model).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/vocabulary.h"

namespace profile_train::model {

// A configuration: knob name -> canonical value (the same alias as tuner/knobs.h).
using Config = std::map<std::string, std::string>;

// "knob=value ..." in `order` (the knob space's), then any knob outside it in name order: how a configuration is
// named in tune's log, notes and terminal lines (tune_config.cpp).
std::string describe_config(const Config& config, const std::vector<std::string>& order);

// Values of a knob not tried because they cannot act on this machine (pin_memory without a GPU, ...).
struct SkippedKnob {
  std::string knob;
  std::vector<std::string> values;
  std::string reason;
};

// The compact diagnosis of a trial's last report kept in tune.json: its verdict and first recommendations.
struct DiagnosisRecommendation {
  std::string id, title;
  std::vector<std::string> knobs;  // the catalog's knobs among the recommendation's `knobs`
};
struct Diagnosis {
  bool from_report = false;  // false: no report was read (an empty object in tune.json)
  Bottleneck bottleneck = Bottleneck::kUnknown;
  double confidence = 0;
  std::string summary;
  std::vector<DiagnosisRecommendation> recommendations;  // the first 5
};

// Where one Ray measurement ran and what the Jobs API cost it (seconds); the Ray runner fills it.
struct RayPlacement {
  int trial_index = 0;
  int repeat = 0;
  std::string dir;                  // the driver's trial folder
  std::string submission_id;
  std::string node_id;              // Ray's driver_node_id
  std::string host;                 // the worker's hostname (from the entry point)
  std::string cuda_visible_devices; // as Ray set it for the job ("" without a GPU)
  std::string gpu_name;             // the report's device.name ("" on the CPU)
  std::string final_state;          // SUCCEEDED | FAILED | STOPPED | (none: never submitted)
  double submit_s = 0;              // POST /api/jobs/ round trip
  double queued_s = 0;              // submit -> first RUNNING seen (PENDING: waiting for resources + job start)
  double running_s = 0;             // first RUNNING -> terminal state seen
  double log_fetch_s = 0;           // GET .../logs round trip
  int polls = 0;                    // status requests made
};

struct TuneTool {
  std::string name = "profile-train";
  std::string version;
};

// What was tuned: the built-in workload (model, binary, args) or a command (argv, placeholders).
struct TuneTargetInfo {
  bool workload = false;
  std::string model, binary;             // workload only
  std::vector<std::string> args;         // workload: its extra flags; command: argv
  std::set<std::string> placeholders;    // command only
  std::string applied_through;
};

struct TuneMetric {
  std::string unit;  // "samples/s" | "steps/s"
  std::string note;
};

struct SpaceEntry {
  std::vector<std::string> values;
  bool is_auto = false;
};

struct TuneBudget {
  int max_trials = 0;
  double time_budget_s = 0, trial_timeout_s = 0;
  int repeats = 0, baseline_repeats = 0;
  double min_gain = 0, noise_k = 0;
  int confirm_repeats = 0;
  std::optional<double> max_memory_bytes;  // absent when unset
};

struct TuneStatus {
  bool complete = false, partial = false;
  std::string stop_reason;
  int64_t trials = 0, measurements = 0;
  double elapsed_s = 0;
  int oom_trials = 0, failed_trials = 0;
  int rerun_pairs = 0, unreliable_pairs = 0;  // the load rule (tuner.h)
};

struct TuneNoise {
  double pooled_relative_sd = 0;
  int degrees_of_freedom = 0;
  std::string method;
};

struct RunRow {
  int trial = 0, repeat = 0;
  std::string phase, role, status;
  std::optional<double> throughput, step_ms;  // null when the run failed
  std::string metric;
  int warmup_excluded = 0, trimmed = 0;
  std::vector<double> excluded_ms;
  std::optional<double> load_1m, wall_s, cpu_time_s;  // null without the run's host facts
  std::string excluded;  // "" or why the run was left out (its pair re-run under a changed load)
};

struct PairRow {
  int reference = 0;  // the reference trial's index (1-based)
  double reference_value = 0, value = 0;
  std::string phase;  // "search" | "confirm"
};

// A trial's training loss against the baseline's (quality.h).
struct LossRow {
  std::string status;              // "baseline" | "not recorded" | "not compared" | "same loss" | "changes the loss"
  std::string compared_by;         // "samples seen" | "step" | "" when not compared
  int points = 0, baseline_runs = 0, trial_runs = 0, spread_dof = 0;
  bool non_finite = false;
  std::optional<double> baseline_mean, trial_mean, difference, tolerance, spread;  // null when not compared
  std::string note;
};

// The quality guard of the session and the winner's loss comparison.
struct QualityGuard {
  bool allow_quality_change = false;
  std::string method;
  std::optional<int> winner;       // the best trial's index; null without one
  std::optional<LossRow> loss;     // the best trial's loss against the baseline; null without a best trial
};

struct TrialRow {
  int index = 0;
  Config config;
  std::string reason, status;
  std::optional<double> throughput, stddev, relative_sd;
  std::vector<double> values;
  int measurements = 0;
  bool early_stopped = false, accepted = false, is_baseline = false, is_best = false;
  double duration_s = 0;
  std::optional<double> peak_memory_bytes;
  std::string message;
  std::vector<std::string> dirs;
  std::optional<Diagnosis> diagnosis;          // null: the trial was never diagnosed
  std::vector<PairRow> pairs;
  std::optional<double> vs_baseline;           // absent when unset
  LossRow loss;
  std::optional<std::vector<RayPlacement>> placements;  // absent when unset (Ray execution only)
  std::optional<double> compile_s;  // absent when unset: mean torch.compile seconds per run (facts.compile), not in the rate
};

struct PerKnobRow {
  std::string value;
  int trials = 0;
  std::optional<double> best_throughput, at_best_config;
};

struct TrialRef {
  int trial = 0;
  Config config;
  double throughput = 0, stddev = 0;
  int64_t repeats = 0;
};

struct ConfirmationRow {
  int candidate = 0;  // trial index (1-based)
  bool ran = false;
  std::string status;
  bool claimed = false;
  int pairs = 0;
  std::optional<double> ratio, low, high;
  int degrees_of_freedom = 0;
  std::string method;
  std::optional<double> load_1m, search_load_1m;  // median 1-minute load of the check's / the search's runs
  int cpus = 0;
  bool repeated = false;  // repeated because the load changed since the search
};

struct SpeedupRow {
  double value = 1;
  std::optional<double> low, high;
  bool claimed = false;
  std::string interval;
};

struct KnobChange {
  std::string knob, from, to;
};

struct PythonEdit {
  std::string what, code;
};

// The change that keeps the best configuration.
struct CodeChange {
  std::string summary;
  std::vector<KnobChange> changes;
  std::vector<PythonEdit> python;
  std::optional<std::vector<std::string>> command;  // absent when unset
  std::optional<nlohmann::json> shim_overrides;     // absent when unset: PROFILE_TRAIN_OVERRIDES's document
};

struct RayOverhead {
  int64_t jobs = 0;
  double submit_s = 0, queued_s = 0, log_fetch_s = 0;  // means over the jobs
};

// The Ray keys of `execution` (all of them, or none).
struct RayExecution {
  std::string address, ray_version;
  double trial_gpus = 0, trial_cpus = 0;
  std::set<std::string> nodes, gpu_models;
  bool heterogeneous = false;
  std::optional<std::string> note;  // absent when unset
  RayOverhead overhead;
};

struct Execution {
  std::string executor = "local";  // local | ray
  int parallel = 1;
  double wall_s = 0, sum_measurement_s = 0, saved_s = 0;
  std::optional<double> parallel_speedup;
  std::optional<RayExecution> ray;  // absent when unset (its keys sit directly in `execution`)
};

struct TuneReport {
  std::string schema_version;
  TuneTool tool;
  std::string created_utc;
  TuneTargetInfo target;
  std::string strategy;
  TuneMetric metric;
  std::map<std::string, SpaceEntry> space;
  TuneBudget budget;
  TuneStatus status;
  TuneNoise noise;
  std::vector<SkippedKnob> skipped_knobs;
  std::vector<RunRow> runs;
  std::vector<TrialRow> trials;
  std::map<std::string, std::vector<PerKnobRow>> per_knob;
  std::optional<TrialRef> baseline, best;
  std::optional<ConfirmationRow> confirmation;
  std::optional<SpeedupRow> speedup;
  std::optional<CodeChange> change;
  QualityGuard quality;
  std::vector<std::string> log;
  std::optional<Execution> execution;  // absent when unset
};

// A finished trial as tune's progress line shows it (report::write_tune_trial_line); the tuner fills it from the
// live session (tuner/tune_report.h trial_progress). Not part of tune.json.
struct TrialProgress {
  int index = 0;
  std::string config;  // "knob=value ..." in the space's order
  bool ok = false;
  double mean = 0, stddev = 0;
  bool per_sample = false;  // samples/s, else steps/s
  size_t values = 0;        // measurements behind the mean
  // Against the baseline (set when the baseline was measured and this trial is not it): the paired ratio, the
  // baseline's rate and whether the loss differs.
  std::optional<double> paired_ratio;
  double baseline_mean = 0;
  bool changes_loss = false, loss_non_finite = false;
  bool early_stopped = false;
  std::string status, message;  // status: when not ok
  int measurements = 0;
  double duration_s = 0;
  std::string reason;  // why the strategy chose it
  std::optional<double> compile_s;  // mean torch.compile seconds per run, outside the steady-state rate
};

// tune.json (tune_json.cpp): the one serialization of the document and of a Ray placement.
nlohmann::json to_json(const TuneReport& report);
nlohmann::json to_json(const RayPlacement& placement);

}  // namespace profile_train::model
