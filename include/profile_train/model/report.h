// The report as typed data: what the analysis produces, the writers present and report.json serializes
// (reports/REPORT_FORMAT.md, reports/report.schema.json). One struct per section, one member per key.
//
// Conventions, so that report.json round-trips exactly (model/report_json.h):
//  - std::optional<T> is a key that is always written and may be null ("cannot be computed").
//  - A member commented "absent when unset" is a key that is left out when unset (the few additive keys).
//  - double members are JSON floating-point numbers, int64_t members JSON integers.
//  - Units are in the key names (_ms, _us, _ns, _bytes); shares and fractions are 0..1.
// Owner: model room (the data and its JSON); the analysis fills it.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/data_quality_counters.h"
#include "profile_train/common/vocabulary.h"

namespace profile_train::model {

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

// How busy the machine was while `run`'s command ran (source.host_load): the system's 1-minute load average when
// the command started and when it ended, the CPUs online, and the command's CPU time (user + system, with the
// descendants it waited for) against its wall time. A load well above the CPUs that the command's own CPU use
// does not explain means other processes competed for the CPU: step times are then longer than on a quiet
// machine (a data-quality note says so).
struct HostLoad {
  int64_t cpus = 0;
  std::optional<double> load_1m_start, load_1m_end;
  double wall_s = 0, cpu_time_s = 0;
  std::optional<double> cpus_used;  // cpu_time_s / wall_s: the CPUs the command kept busy on average
  bool oversubscribed = false;
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
  std::optional<HostLoad> host_load;   // absent when unset (reports from before schema 1.2)
};

// What the capture traced (1.3; reports/REPORT_FORMAT.md "Absent is not zero"): a kind of activity the capture did
// not trace is unknown, never "none happened".
struct Capture {
  std::string gpu_activity = "unknown";      // "traced" | "not_traced" | "unknown": whether the source traced it
  std::optional<std::string> traced;         // what the source says it traced
  // Set when the machine has a GPU and the steps hold no GPU activity without positive evidence of CPU training:
  // one line saying what the capture lacks, and the command that captures it.
  std::optional<std::string> lacks, recapture;
  // Positive evidence that the model trains on the CPU (the shim's parameter device, CPU kernels in the
  // operators, CPU matrix operators while a traced GPU ran nothing); null when nothing shows it.
  std::optional<std::string> cpu_training;
};

// Training or inference (1.3): from backward and optimizer evidence in the trace.
struct Workload {
  std::string kind = "unknown";  // "training" | "inference" | "unknown"
  std::vector<std::string> evidence;
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
  Capture capture;    // 1.3
  Workload workload;  // 1.3
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

// A window that is warm-up (1.3, steps.cold_window): one step or none and first-call signs (module loading,
// handle creation, compilation, launch calls far above their steady cost). Bounds computed on it are marked.
struct ColdWindow {
  std::vector<std::string> signs;        // each with its figures
  double first_call_share = 0;           // share of the window in first-call work (excess launch time included)
  std::string recapture;                 // the profiler schedule that skips the warm-up
};

struct Steps {
  int64_t count = 0;
  std::optional<double> mean_ms, median_ms, min_ms, max_ms, stddev_ms;  // of the steady-state steps
  std::vector<StepRow> per_step;
  bool per_step_complete = true;
  std::optional<StepHistogram> histogram;
  std::optional<double> data_wait_floor;
  SteadyStateSummary steady_state;
  std::optional<ColdWindow> cold_window;  // 1.3: null unless the window is warm-up
};

struct Phases {
  PhaseValues ms_per_step, fraction;
  std::optional<std::string> backward_from;
};

struct GpuIdle {
  double fraction = 0;
  std::optional<double> host_wait, kernel_wait, other;  // shares of the idle time
  // Share of the step the GPU idles with no work queued: the idle time outside HTA's kernel-wait and other gaps
  // (host-wait gaps, and the idle before the first / after the last GPU activity of a step, which HTA's
  // between-kernel classes do not see). The verdict's host-bound test reads it (1.2).
  std::optional<double> unqueued_fraction;
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
  // From the memory section's main GPU (and the shim's allocator counters); absent when unset.
  std::optional<int64_t> headroom_bytes;                 // capacity - peak allocated
  std::optional<int64_t> unused_reserved_at_peak_bytes;  // reserved - allocated at the peak
  std::optional<int64_t> alloc_retries, ooms;            // facts.gpu.alloc_retries / facts.gpu.ooms
};

// memory: the allocator's picture per device, from the trace's memory samples (reports/REPORT_FORMAT.md,
// "Memory"). Absent when the trace has none.
struct MemoryOperator {  // one row of the per-operator table, as the TensorBoard plugin's memory view counts it
  std::string name;
  int64_t calls = 0;
  int64_t increase_bytes = 0, self_increase_bytes = 0;      // allocations minus frees (inclusive of children)
  int64_t allocation_count = 0, self_allocation_count = 0;
  int64_t allocation_bytes = 0, self_allocation_bytes = 0;  // allocations only, frees not subtracted
};
struct MemoryLive {  // blocks outstanding at the peak, by the operator that allocated them
  std::string op;
  int64_t bytes = 0, blocks = 0;
};
struct MemoryTimeline {  // at most kMemoryTimelinePoints points; t_ms since the trace's first event
  std::vector<double> t_ms;
  std::vector<int64_t> allocated_bytes;
  std::vector<std::optional<int64_t>> reserved_bytes;
};
struct MemoryDevice {
  std::string device;          // "CPU", "GPU0", ...
  int64_t device_type = 0, device_id = -1;
  std::string totals;          // "running_totals" | "reconstructed_from_deltas"
  std::optional<std::string> reconstruction;  // how, when reconstructed
  int64_t events = 0, allocations = 0, frees = 0, samples_with_totals = 0;
  int64_t peak_allocated_bytes = 0;
  std::optional<int64_t> peak_reserved_bytes, reserved_at_peak_bytes, unused_reserved_at_peak_bytes;
  std::optional<int64_t> baseline_bytes;      // reconstructed: bytes live before the capture (a lower bound)
  std::optional<int64_t> capacity_bytes;
  std::optional<double> peak_fraction, peak_time_ms;
  std::optional<std::string> peak_step, peak_phase;
  std::optional<int64_t> live_at_peak_bytes, live_unattributed_bytes;
  std::vector<MemoryLive> live_at_peak;
  std::optional<int64_t> growth_per_step_bytes;  // least-squares slope of the per-step allocated maximum
  MemoryTimeline timeline;
  int64_t operators_total = 0;
  std::vector<MemoryOperator> operators;  // by self_increase_bytes, largest first; at most kMemoryOperatorRows
};
struct MemorySpan {  // a step or a phase range on the timeline's clock
  std::string name;
  double start_ms = 0, end_ms = 0;
};
struct Memory {
  std::vector<MemoryDevice> devices;  // GPUs first (by id), then the CPU
  int64_t rejected_events = 0;        // also in data_quality.notes
  std::vector<MemorySpan> steps;      // every step window (at most kMemorySpans)
  std::vector<MemorySpan> phases;     // forward / backward / optimizer ranges, by phase name (at most kMemorySpans)
};

// memory_budget: static (parameters, gradients, optimizer state) and activation memory, and the batch that
// fits (analysis/memory_budget.h). Absent when the shim recorded no parameter bytes.
struct MemoryBudget {
  std::string device;  // "GPU" | "CPU"
  std::optional<int64_t> batch_size;
  int64_t parameter_bytes = 0;
  std::optional<int64_t> gradient_bytes, optimizer_state_bytes;
  int64_t static_bytes = 0;  // parameters + gradients + optimizer state (those recorded)
  std::optional<int64_t> peak_bytes;
  std::optional<std::string> peak_source;
  std::optional<int64_t> activation_bytes, activation_per_sample_bytes;
  std::optional<std::string> activation_source;
  std::optional<int64_t> capacity_bytes;
  std::optional<std::string> capacity_source;
  std::optional<int64_t> free_bytes;
  std::optional<double> peak_fraction;  // peak / capacity
  std::optional<int64_t> samples_fit;   // batch + free / activations per sample
  std::optional<int64_t> growth_per_step_bytes;
  std::optional<std::string> growth_source;
  std::optional<std::string> fit;  // "batch 64 fits with 31 GiB free; about 120 samples would fit"
  std::optional<std::string> caveat;
};

struct TopKernel {
  std::string name;
  int64_t count = 0;
  double total_ms = 0, mean_us = 0;
  std::optional<double> share;
  bool tensor_core = false;
  std::string category;
  // 1.3: the kernel's class (analysis/kernel_class.h): its precision ("unknown" when nothing says), what decided it
  // ("operator_inputs" | "kernel_name" | "none"), the library its name belongs to (null when no family matched).
  std::string precision = "unknown", precision_from = "none";
  std::optional<std::string> library;
};

// One precision's share of a kernel class's time (gpu.kernel_classes[].precisions).
struct PrecisionShare {
  std::string precision;
  double share = 0;
};
// What the kernels compute (gpu.kernel_classes, 1.3): one row per kind, from the one kernel classification.
struct KernelClassRow {
  std::string kind;                       // "gemm" | "conv" | "attention" | "communication" | ... | "other"
  double gpu_ms_per_step = 0;
  double share = 0;                       // of all kernel time in the steps (communication included)
  std::string precision = "unknown";      // the precision of most of its time ("unknown" when none is known)
  std::vector<PrecisionShare> precisions;  // largest share first; "unknown" is one of them
  double matrix_unit_share = 0;           // of its time on tensor / matrix cores
  std::string kind_from, precision_from;  // the evidence that decided most of its time's kind / precision
};

struct Gpu {
  std::optional<double> utilization, sm_efficiency, achieved_occupancy, busy_fraction, kernels_per_step,
      kernel_median_us, short_kernel_fraction, tensor_core_kernel_share, tf32_kernel_share,
      fp32_eligible_kernel_share, fp64_kernel_share, conv_kernel_share, optimizer_kernel_share,
      optimizer_kernels_per_step, memset_per_step;
  // 1.3: of compute-kernel time, GEMM/conv/attention in 16-bit or 8-bit precision, and GEMM/conv/attention whose
  // precision nothing in the trace tells (no operator inputs, no dtype in the name).
  std::optional<double> low_precision_matrix_share, matrix_precision_unknown_share;
  std::optional<bool> static_launch_pattern;
  std::optional<GpuIdle> idle;
  std::optional<Memcpy> memcpy;
  GpuMemory memory;
  std::vector<TopKernel> top_kernels;
  std::vector<KernelClassRow> kernel_classes;  // 1.3: by time, largest first
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
  // Without GPU activity: the share of the step in the self time of matrix-multiply / convolution operators
  // (is_cpu_matmul_conv_op); unset (the key absent) with GPU activity or without CPU operators.
  std::optional<double> cpu_matmul_conv_fraction;
};

// One (operator, input signature) group on the roofline (reports/REPORT_FORMAT.md, "Efficiency").
struct EfficiencyRow {
  std::string name;
  std::optional<std::string> shapes, types;
  std::string kind;   // OpKind: "gemm" | "conv" | "attention" | "elementwise" | "reduction" | "norm"
  std::string dtype;  // "fp64" | "fp32" | "fp16" | "bf16" | "fp8" | "int"
  // 1.3: the precision its kernels compute in (the kernel classification: "tf32" for FP32 inputs on TF32 tensor
  // cores, else the dtype's); the roof uses it.
  std::string precision;
  double calls_per_step = 0, gpu_ms_per_step = 0;
  double gflop_per_call = 0, mbytes_per_call = 0;  // 1e9 FLOPs, 1e6 bytes
  std::optional<double> intensity;          // FLOPs per byte; null when bytes are 0
  std::optional<double> tflops, tbps;       // achieved over the kernels' time
  std::optional<std::string> bound;         // "compute" | "memory"; null without a peak table entry
  std::optional<double> peak_tflops;        // the compute roof used for this row
  std::optional<double> roof_share;         // achieved / attainable at its intensity
};

// A kernel class (gpu.top_kernels' categories) and its GPU time: what the section says without shapes.
struct KernelClassTime {
  std::string name;
  double gpu_ms_per_step = 0, share = 0;
};

struct Efficiency {
  bool flops_known = false;                     // some operator's FLOPs come from recorded shapes
  std::optional<std::string> flops_note;        // why FLOPs are unknown / partial
  std::optional<std::string> gpu_spec;          // the peak-table entry the device matched
  std::optional<std::string> gpu_spec_source;
  std::optional<std::string> dtype;             // the dtype carrying most matrix FLOPs
  std::optional<std::string> precision;         // 1.3: what that dtype computes in: "tf32" on TF32 tensor cores, else dtype
  std::optional<double> peak_tflops, peak_tbps; // the device's roofs (peak_tflops at `dtype`)
  std::optional<double> model_tflop_per_step;   // FLOPs of the modelled operators per step / 1e12
  std::optional<double> achieved_tflops;        // model FLOPs per step / step time
  std::optional<double> mfu;                    // achieved_tflops / peak_tflops
  std::optional<double> shape_coverage;         // share of GPU time launched by operators with known FLOPs
  std::optional<double> memory_bound_share;     // share of GPU time in memory-bound elementwise/norm/reduction rows
  std::optional<double> fusion_removable_share; // of GPU time: what fusing those can remove at best
  std::optional<double> headroom_share;         // of GPU time: sum of row time x (1 - roof_share)
  std::optional<double> top_roof_share;         // time-weighted roof share of the leading matrix rows
  std::optional<std::string> top_dtype;         // their dtype
  std::optional<double> top_share;              // their share of GPU time
  std::optional<double> misaligned_gemm_share;  // 16-bit GEMM time with M, N or K not a multiple of 8
  std::optional<double> misaligned_gemm_removable_share;  // that time x (1 - its roof share)
  std::optional<double> unfused_attention_share;  // bmm + softmax time when no fused attention runs
  std::optional<double> matrix16_share;         // 16-bit GEMM/conv/attention time, whatever the device
  std::optional<double> fp8_eligible_share;     // 16-bit matrix time on a device with FP8 math
  std::optional<std::string> at_roof;           // set when the leading operators are near their roof
  std::vector<EfficiencyRow> operators;         // by GPU time, at most 20
  std::vector<KernelClassTime> kernel_classes;  // by GPU time
};

// One Inductor-generated kernel (a Triton kernel on the GPU, a C++ one on the CPU), by name: what it fuses.
struct InductorKernel {
  std::string name;
  std::string kind;                     // pointwise | reduction | persistent_reduction | template | foreach | cpp | other
  std::optional<std::string> fused_ops; // the ATen ops Inductor named it after ("add_cos_sin"); null without descriptive names
  std::string on = "gpu";               // "gpu" (kernel time) or "cpu" (host ranges)
  double calls_per_step = 0;
  double ms_per_step = 0;
  double share = 0;                     // of GPU kernel time (on gpu) or of the step (on cpu)
};

// One graph break or recompile the shim recorded (facts.compile), with where it happened.
struct CompileEvent {
  std::string reason;
  std::optional<std::string> where;  // "file:line" of the user code
  int64_t count = 1;
};

// The compiled program (reports/REPORT_FORMAT.md "Compilation"): torch.compile regions and graphs, Inductor
// kernels and CUDA-graph replays as the trace shows them, and dynamo's own counters when the shim recorded them.
// Absent when neither the trace nor the facts show compilation.
struct Compilation {
  std::vector<std::string> evidence;                // what showed it, with counts
  std::optional<double> frames_per_step;            // Torch-Compiled Region ranges (dynamo frames entered)
  std::optional<double> forward_graphs_per_step;    // compiled forward graph calls (CompiledFunction, else CompiledFxGraph)
  std::optional<double> backward_graphs_per_step;   // CompiledFunctionBackward calls
  std::optional<int64_t> distinct_graphs;           // distinct CompiledFxGraph keys (else region ids) in the window
  std::optional<double> graph_breaks_per_step;      // forward graphs run inside one compiled frame, minus one
  std::optional<double> host_compiled_share;        // of the step: host time inside compiled graph calls
  std::optional<double> eager_in_frames_share;      // of the step: host time in compiled frames outside their graphs
  std::optional<double> gpu_compiled_share;         // of GPU kernel time: kernels launched from compiled graph calls
  std::optional<double> inductor_kernel_share;      // of GPU kernel time: Inductor's Triton kernels
  std::vector<InductorKernel> inductor_kernels;     // by time, at most 10
  std::optional<double> cuda_graph_launches_per_step;
  std::optional<double> cuda_graph_share;           // of GPU kernel time: kernels replayed by graph launches
  std::optional<double> compile_in_window_ms;       // torch.compile work (dynamo_timed ranges) in the steady steps
  std::optional<double> compile_in_window_share;    // the same, of the steady steps' time
  // The shim's (facts.compile: torch._dynamo's counters and compilation metrics); null when not recorded.
  std::optional<int64_t> unique_graphs;
  std::vector<std::string> modes;  // 1.5: torch.compile's modes as called ("default", "reduce-overhead", ...)
  std::optional<int64_t> graph_breaks;
  std::optional<int64_t> recompiles;
  std::optional<double> compile_time_s;
  std::vector<CompileEvent> breaks;
  std::optional<std::string> breaks_summary;  // the first three breaks, "where: reason" joined by "; " (rule evidence)
  std::vector<CompileEvent> recompile_reasons;
  std::optional<std::string> recompiles_summary;  // the first two guard failures, "where: reason" (rule evidence)
  bool compiled = false;  // graphs run in the window (false: compilation seen, but no compiled code ran in it)
};

// One collective a rank ran in the steady steps (reports/REPORT_FORMAT.md "Collectives"). Kept in memory for the
// job summary, which matches them across ranks; not written to report.json.
struct CollectiveInstance {
  std::string kind;                 // all_reduce, all_gather, reduce_scatter, all_to_all, broadcast, reduce, send_recv, ...
  std::string process_group;        // the process group's name ("0"); "" when not recorded
  int64_t seq = -1;                 // the collective's sequence number in its group (args, the shim); -1 unknown
  int64_t ordinal = 0;              // its position among the window's collectives of the group (and kind when the
                                    // group is unknown), counted within its step
  std::string step;                 // the step's name ("ProfilerStep#12"), for matching across ranks
  int64_t step_index = 0;           // its steady step (0-based)
  int64_t start_ns = 0, dur_ns = 0; // trace clock
  int64_t exposed_ns = 0;           // not overlapped by compute
  std::optional<int64_t> bytes;     // nccl-tests' S
  int32_t group_size = -1;
};

// One row of the collectives table: the calls of one kind, process group, dtype and message-size bucket.
struct CollectiveRow {
  std::string kind;
  std::optional<std::string> process_group;  // "0 (default_pg)"; null when not recorded
  std::optional<int64_t> group_size;         // ranks in the group; null when not recorded
  std::optional<std::string> dtype;          // torch dtype name (float32, bfloat16, ...)
  std::optional<int64_t> bytes;              // nccl-tests' S per call (the mean when the row's calls differ)
  std::string size_bucket;                   // "1-10 MB", ..., "unknown"
  double calls_per_step = 0;
  double ms_per_step = 0;                    // the calls' summed duration on this rank (waiting for peers included)
  double mean_ms = 0;
  std::optional<double> algbw_gbps;          // bytes / duration, GB/s (1e9 B/s)
  std::optional<double> bus_factor;          // nccl-tests' factor for the kind and group size
  std::optional<double> busbw_gbps;          // algbw x bus_factor
  std::optional<double> peak_share;          // busbw / the link's peak
  std::optional<double> exposed_ms_per_step; // not overlapped by compute
  std::optional<double> exposed_share;       // of the row's time
  std::string evidence;                      // collective_args | operator | annotation | kernel_name | shim
};

// The interconnect a device's collectives run over, from the GPU table (data/gpu_specs.json "link").
struct LinkPeak {
  std::string name;       // "NVLink 4"
  double gbps = 0;        // per direction per GPU, GB/s (what nccl-tests' busbw compares with)
  std::string source;
};

// Small collectives that one larger call would replace (DDP buckets, FSDP wrapping): the rule's inputs.
struct SmallCollectives {
  double calls_per_step = 0;
  double exposed_ms_per_step = 0;
  double merged_ms_per_step = 0;   // the least one call moving their bytes could take (latency or best bandwidth)
  double removable_share = 0;      // of the step: (exposed - merged) / step, >= 0
};

// The collectives a rank ran (reports/REPORT_FORMAT.md "Collectives"): a table per kind, process group, dtype and
// size, bandwidth with nccl-tests' factors against the link's peak, the exposed part. Absent when the window has
// no collective.
struct Collectives {
  std::string timing;                        // "gpu_kernels" | "host_ranges" | "shim"
  double calls_per_step = 0;
  double ms_per_step = 0;
  std::optional<double> exposed_ms_per_step; // not overlapped by compute
  std::optional<double> exposed_share;       // of the step
  std::optional<LinkPeak> link;
  std::vector<CollectiveRow> rows;           // by ms_per_step, descending; at most kMaxCollectiveRows
  int64_t rows_total = 0;
  double unknown_size_calls_per_step = 0;
  std::optional<std::string> summary;        // the top row in one line (terminal, rule evidence)
  std::optional<std::string> exposed_summary;// the most exposed rows, "all_reduce float32 25 MB: 3.1 ms/step exposed; ..."
  std::optional<double> fp32_allreduce_exposed_share;  // of the step: exposed float32 all_reduce time
  std::optional<double> allgather_exposed_share;       // of the step: exposed all_gather + reduce_scatter time
  bool sharded_pattern = false;  // all_gather and reduce_scatter both run every step (FSDP / ZeRO-3)
  std::optional<SmallCollectives> small;     // calls under kSmallCollectiveBytes, when their sizes are known
  std::optional<double> best_peak_share;     // the highest busbw / peak of a row with >= 1 MB messages
  std::vector<std::string> notes;
  std::vector<CollectiveInstance> instances; // in memory only (the job summary); capped at kMaxCollectiveInstances
};
inline constexpr size_t kMaxCollectiveRows = 20;
inline constexpr size_t kMaxCollectiveInstances = 50000;
inline constexpr int64_t kSmallCollectiveBytes = 1000000;  // 1 MB

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
  PT_DATA_QUALITY_COUNTERS(PT_DATA_QUALITY_DECLARE_COUNTER)  // events_total, ..., dropped_records
  // Memory samples left out of every figure (analysis/memory.h); absent when unset (no memory samples).
  std::optional<int64_t> memory_events_rejected;
  bool missing_device_properties = false;
  std::optional<int64_t> agent_internal_errors;  // absent when unset (native captures only)
  std::vector<std::string> notes;
};

// The counters of DataQuality in report.json's order, for the writers' lists.
struct DataQualityCounter {
  const char* key;
  int64_t DataQuality::*member;
  bool problem;       // a non-zero count is a data problem
  const char* label;  // the terminal summary's words; nullptr: not listed there
};
#define PT_DATA_QUALITY_ENTRY(name, problem, label) DataQualityCounter{#name, &DataQuality::name, problem, label},
inline constexpr DataQualityCounter kDataQualityCounters[] = {PT_DATA_QUALITY_COUNTERS(PT_DATA_QUALITY_ENTRY)};
#undef PT_DATA_QUALITY_ENTRY

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
  Efficiency efficiency;
  std::optional<Compilation> compilation;  // 1.4: absent when unset (no compiled code seen)
  std::optional<Collectives> collectives;  // 1.5: absent when unset (no collective in the window)
  std::optional<Memory> memory;  // absent when unset (the trace has no usable memory sample)
  std::optional<MemoryBudget> memory_budget;  // absent when unset (no shim memory facts)
  // Recorded facts (the Python shim's facts-<pid>.json, the workload's) merged over inferred ones. Kept as
  // JSON: the shim adds groups and keys over time, rules read them by dotted path, and a fixed struct would
  // drop what it does not know (reports/REPORT_FORMAT.md "facts" lists the known ones).
  nlohmann::json facts = nlohmann::json::object();
  DataQuality data_quality;
  std::vector<Recommendation> recommendations;  // filled by rules::apply_rules
  std::optional<Plan> plan;                     // null before the rules ran
  Verdict verdict;
};

}  // namespace profile_train::model
