// The report as typed data: what the analysis produces, the writers present and report.json serializes
// (reports/REPORT_FORMAT.md, reports/report.schema.json). One struct per section, one member per key.
//
// Conventions, so that report.json round-trips exactly (report/report_json.h):
//  - std::optional<T> is a key that is always written and may be null ("cannot be computed").
//  - A member commented "absent when unset" is a key that is left out when unset (the few additive keys).
//  - double members are JSON floating-point numbers, int64_t members JSON integers.
//  - Units are in the key names (_ms, _us, _ns, _bytes); shares and fractions are 0..1.
// Owner: analysis component (the data); report component (JSON).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/vocabulary.h"

namespace profile_train::analysis {

// A value per breakdown role (breakdown, breakdown_ms, steps.per_step[].breakdown).
struct RoleValues {
  std::array<std::optional<double>, kRoleCount> values{};
  std::optional<double>& operator[](Role r) { return values[static_cast<size_t>(r)]; }
  const std::optional<double>& operator[](Role r) const { return values[static_cast<size_t>(r)]; }
  double value_or_zero(Role r) const { return (*this)[r].value_or(0.0); }
};

// A value per phase (phases.ms_per_step, phases.fraction, steps.per_step[].phases_ms); null: the trace has
// no range of that phase.
struct PhaseValues {
  std::array<std::optional<double>, kPhaseCount> values{};
  std::optional<double>& operator[](Phase p) { return values[static_cast<size_t>(p)]; }
  const std::optional<double>& operator[](Phase p) const { return values[static_cast<size_t>(p)]; }
};

struct Tool {
  std::string name;
  std::string version;
};

struct Distributed {
  std::optional<int64_t> rank, world_size;
  std::optional<std::string> backend;
};

// The keys only `run` adds to `source` (all of them, or none).
struct RunInfo {
  std::vector<std::string> command;
  std::optional<int64_t> exit_code;  // null when the command was ended by a signal
  std::optional<std::string> signal;  // "SIGSEGV", ...; null when it exited
  bool interrupted = false;            // profile-train was stopped by SIGINT/SIGTERM
  int64_t capture_files = 0;
  int64_t leftover_processes = 0;
  std::optional<std::string> crash;    // absent when unset (set when the command crashed)
};

struct Source {
  std::vector<std::string> files;
  std::optional<std::string> format, format_version, producer;
  std::string step_detection;  // analysis::to_string(StepSource)
  std::optional<int64_t> window_start_ns, window_end_ns;
  bool has_gpu_activity = false, has_cpu_ops = false, has_phase_ranges = false;
  std::optional<std::string> gpu_capture_status;
  std::vector<std::string> missing, notes;
  std::optional<Distributed> distributed;
  std::optional<RunInfo> run;  // absent when unset (its keys sit directly in `source`)
};

struct Device {
  int64_t id = 0;
  std::optional<std::string> name, vendor, compute_capability;
  std::optional<int64_t> num_sms, total_memory_bytes;
};

struct StepRow {
  int64_t index = 0;
  std::string name;
  int64_t start_ns = 0;
  double duration_ms = 0;
  RoleValues breakdown;  // shares of this step
  std::optional<double> gpu_utilization;
  std::optional<std::string> excluded;   // "warm-up" | "outlier"; null: in the steady state
  std::optional<PhaseValues> phases_ms;  // absent when unset (the trace has no phase ranges)
};

struct StepHistogram {
  double min_ms = 0, max_ms = 0, bin_width_ms = 0;
  std::vector<int64_t> counts;
};

struct ExcludedStep {
  int64_t index = 0;
  std::string name;
  std::string reason;  // "warm-up" | "outlier"
  double duration_ms = 0;
};

struct SteadyStateSummary {
  int64_t count = 0, excluded_count = 0;
  double excluded_ms = 0;
  std::vector<ExcludedStep> excluded;  // the first kPerStepKept
  std::optional<double> mean_all_ms, median_all_ms, mad_all_ms;
};

struct Steps {
  int64_t count = 0;
  std::optional<double> mean_ms, median_ms, min_ms, max_ms, stddev_ms;  // of the steady-state steps
  std::vector<StepRow> per_step;
  bool per_step_complete = true;
  std::optional<StepHistogram> histogram;
  std::optional<double> data_wait_floor;
  SteadyStateSummary steady_state;
};

struct Phases {
  PhaseValues ms_per_step, fraction;
  std::optional<std::string> backward_from;
};

struct GpuIdle {
  double fraction = 0;
  std::optional<double> host_wait, kernel_wait, other;  // shares of the idle time
};

struct CopyDirection {
  double count_per_step = 0, bytes_per_step = 0, time_ms_per_step = 0, fraction = 0;
  std::optional<double> bandwidth_gbps;
  double pageable_bytes = 0, pinned_bytes = 0;  // per step
  std::optional<double> pageable_fraction;
};

struct Memcpy {
  CopyDirection h2d, d2h, d2d;
};

struct GpuMemory {
  std::optional<int64_t> peak_allocated_bytes, capacity_bytes;
  std::optional<double> peak_fraction;
};

struct TopKernel {
  std::string name;
  int64_t count = 0;
  double total_ms = 0, mean_us = 0;
  std::optional<double> share;
  bool tensor_core = false;
  std::string category;
};

struct Gpu {
  std::optional<double> utilization, sm_efficiency, achieved_occupancy, busy_fraction, kernels_per_step,
      kernel_median_us, short_kernel_fraction, tensor_core_kernel_share, tf32_kernel_share,
      fp32_eligible_kernel_share, fp64_kernel_share, conv_kernel_share, optimizer_kernel_share,
      optimizer_kernels_per_step, memset_per_step;
  std::optional<bool> static_launch_pattern;
  std::optional<GpuIdle> idle;
  std::optional<Memcpy> memcpy;
  GpuMemory memory;
  std::vector<TopKernel> top_kernels;
};

struct HostSync {
  std::optional<double> count_per_step, time_ms_per_step, fraction, gpu_records_per_step;
};

struct HostAllocator {
  std::optional<double> calls_per_step, time_ms_per_step, fraction;
};

// Shares of the step while the GPU idles, by what the host does meanwhile (they add up to `fraction`).
struct HostIdleActivityShares {
  double fraction = 0, allocator = 0, memcpy_api = 0, sync = 0, launch = 0, other_runtime = 0, dataloader = 0,
         operators = 0, other = 0;
};

struct Host {
  std::optional<double> launches_per_step, launch_mean_us, launch_delay_median_us;
  HostSync sync;
  std::optional<double> runtime_outliers, cpu_op_fraction;
  std::optional<HostIdleActivityShares> idle_activity;
  HostAllocator allocator;
  std::optional<double> optimizer_step_fraction, optimizer_idle_fraction;
};

struct Communication {
  std::optional<double> kernel_fraction, exposed_fraction;
  bool measured = false;
  std::optional<std::string> not_measured_reason;
};

// An operator's calls with one input signature (Kineto record_shapes): shapes / types as the importer renders
// them (trace::OpInputs), null for calls without recorded inputs.
struct InputShapeGroup {
  std::optional<std::string> shapes, types;
  double calls_per_step = 0, gpu_ms_per_step = 0, host_self_ms_per_step = 0;
};

struct OperatorGpuRow {
  std::string name;
  double gpu_ms_per_step = 0;
  std::optional<double> gpu_share;
  double calls_per_step = 0;
  std::optional<double> gpu_activities_per_call;
  double host_self_ms_per_step = 0;
  // Only when the trace records inputs: the leading groups by GPU time (at most 3), and how many there are.
  std::optional<std::vector<InputShapeGroup>> input_shapes;
  std::optional<int64_t> input_shape_groups;
};

struct OperatorHostRow {
  std::string name;
  double host_self_ms_per_step = 0, host_share = 0, calls_per_step = 0, gpu_ms_per_step = 0;
  // As OperatorGpuRow's, leading by host self time.
  std::optional<std::vector<InputShapeGroup>> input_shapes;
  std::optional<int64_t> input_shape_groups;
};

struct OperatorIdleRow {
  std::string name;
  double idle_ms_per_step = 0;
  std::optional<double> idle_share;
};

struct ModuleShare {
  std::string name;
  double gpu_ms_per_step = 0;  // forward and backward
  std::optional<double> gpu_share;
  // Of gpu_ms_per_step, inside the module's backward range; unset when the trace has no module backward ranges
  // (the key is then absent: the split is unknown, not zero).
  std::optional<double> backward_gpu_ms_per_step;
};

// The operator carrying the most of one removable kind of time (the rules' evidence).
struct OperatorLead {
  std::string top_op;
  double top_op_share = 0;
};
struct Fp32Lead : OperatorLead {
  std::optional<std::string> top_module;
};

struct Operators {
  std::optional<double> attributed_fraction, unattributed_ms_per_step, in_module_fraction;
  std::vector<OperatorGpuRow> top_by_gpu_time;
  std::vector<OperatorHostRow> top_by_host_time;
  std::vector<OperatorIdleRow> during_gpu_idle;
  std::vector<ModuleShare> modules;
  std::optional<Fp32Lead> fp32;
  std::optional<OperatorLead> conv, idle, h2d;
};

struct RunnerUp {
  Bottleneck bottleneck = Bottleneck::kUnknown;
  double score = 0;
};

struct Verdict {
  Bottleneck bottleneck = Bottleneck::kUnknown;
  double confidence = 0;
  std::string summary;
  std::vector<std::string> evidence;
  std::optional<RunnerUp> runner_up;
  bool close = false;
};

struct Cost {
  std::string effort, risk;  // "low" | "medium" | "high"
};

struct Fix {
  std::string python, cpp;
};

struct Recommendation {
  std::string id, title;
  int64_t tier = 0, rank = 0;
  std::string group;           // "primary" | "secondary" | "minor" | "note"
  std::string evidence_level;  // "measured" | "check" | "note"
  std::optional<std::string> check_note;
  std::vector<Bottleneck> addresses;
  bool addresses_bottleneck = false;
  Cost cost;
  std::string rank_reason;
  double estimated_speedup_max = 1;
  std::optional<double> removable_share;  // null: the gain cannot be bounded from this report
  std::vector<Role> gain_from;
  std::vector<std::string> evidence;
  Fix fix;
  std::vector<std::string> caveats, references, knobs;
};

struct PlanStep {
  std::string id, title;
  double removable_share = 0, removed_share = 0, speedup_max_alone = 1, cumulative_speedup_max = 1;
  std::string evidence_level = "measured";  // "measured" or "check" (then check_note says what to confirm)
  std::optional<std::string> check_note;
  bool addresses_bottleneck = false;
};

struct Plan {
  Bottleneck bottleneck = Bottleneck::kUnknown;
  std::vector<PlanStep> steps;
  double combined_speedup_max = 1;
  std::optional<std::string> no_fix_reason;
  std::string method;
};

struct DataQuality {
  int64_t events_total = 0, events_imported = 0, malformed_events = 0, unknown_categories = 0,
          flow_events_skipped = 0, negative_durations = 0, clock_anomalies = 0, unmatched_correlations = 0,
          dropped_records = 0;
  bool missing_device_properties = false;
  std::optional<int64_t> agent_internal_errors;  // absent when unset (native captures only)
  std::vector<std::string> notes;
};

struct Report {
  std::string schema_version;
  Tool tool;
  Source source;
  std::optional<Device> device;
  Steps steps;
  RoleValues breakdown;     // shares of the mean steady-state step
  RoleValues breakdown_ms;  // ms per steady-state step
  std::optional<Phases> phases;
  Gpu gpu;
  Host host;
  Communication communication;
  Operators operators;
  // Recorded facts (the Python shim's facts-<pid>.json, the workload's) merged over inferred ones. Kept as
  // JSON: the shim adds groups and keys over time, rules read them by dotted path, and a fixed struct would
  // drop what it does not know (reports/REPORT_FORMAT.md "facts" lists the known ones).
  nlohmann::json facts = nlohmann::json::object();
  DataQuality data_quality;
  std::vector<Recommendation> recommendations;  // filled by rules::apply_rules
  std::optional<Plan> plan;                     // null before the rules ran
  Verdict verdict;
};

}  // namespace profile_train::analysis
