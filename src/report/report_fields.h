// The one declaration of report.json's keys: for each struct of analysis/report.h, which member is which
// key. The JSON writer and reader (report_json.cpp) both walk it, so the two cannot disagree.
//
// fields(v, s) calls, per key, one of
//   v("key", member)                 the key is always written (an std::optional member is null when unset)
//   v.absent_if_unset("key", member) an std::optional member whose key is left out when unset
//   v.inline_group(member)           an std::optional struct whose keys sit in the enclosing object
// `s` is the struct, const when writing. Private to the report component.
#pragma once

#include <type_traits>

#include "profile_train/analysis/report.h"

namespace profile_train::report::detail {

using namespace profile_train::analysis;  // NOLINT: the struct names below are the report's

#define PT_REPORT_FIELDS(Type) \
  template <class V, class S>  \
  std::enable_if_t<std::is_same_v<std::remove_const_t<S>, Type>> fields(V& v, S& s)

PT_REPORT_FIELDS(Tool) {
  v("name", s.name);
  v("version", s.version);
}

PT_REPORT_FIELDS(Distributed) {
  v("rank", s.rank);
  v("world_size", s.world_size);
  v("backend", s.backend);
}

PT_REPORT_FIELDS(HostLoad) {
  v("cpus", s.cpus);
  v("load_1m_start", s.load_1m_start);
  v("load_1m_end", s.load_1m_end);
  v("wall_s", s.wall_s);
  v("cpu_time_s", s.cpu_time_s);
  v("cpus_used", s.cpus_used);
  v("oversubscribed", s.oversubscribed);
}

PT_REPORT_FIELDS(RunInfo) {
  v("command", s.command);
  v("exit_code", s.exit_code);
  v("signal", s.signal);
  v("interrupted", s.interrupted);
  v("capture_files", s.capture_files);
  v("leftover_processes", s.leftover_processes);
  v.absent_if_unset("crash", s.crash);
  v.absent_if_unset("host_load", s.host_load);
}

PT_REPORT_FIELDS(Source) {
  v("files", s.files);
  v("format", s.format);
  v("format_version", s.format_version);
  v("producer", s.producer);
  v("step_detection", s.step_detection);
  v("window_start_ns", s.window_start_ns);
  v("window_end_ns", s.window_end_ns);
  v("has_gpu_activity", s.has_gpu_activity);
  v("has_cpu_ops", s.has_cpu_ops);
  v("has_phase_ranges", s.has_phase_ranges);
  v("gpu_capture_status", s.gpu_capture_status);
  v("missing", s.missing);
  v("notes", s.notes);
  v("distributed", s.distributed);
  v.inline_group(s.run);
}

PT_REPORT_FIELDS(Device) {
  v("id", s.id);
  v("name", s.name);
  v("vendor", s.vendor);
  v("compute_capability", s.compute_capability);
  v("num_sms", s.num_sms);
  v("total_memory_bytes", s.total_memory_bytes);
}

PT_REPORT_FIELDS(StepRow) {
  v("index", s.index);
  v("name", s.name);
  v("start_ns", s.start_ns);
  v("duration_ms", s.duration_ms);
  v("breakdown", s.breakdown);
  v("gpu_utilization", s.gpu_utilization);
  v("excluded", s.excluded);
  v.absent_if_unset("phases_ms", s.phases_ms);
}

PT_REPORT_FIELDS(StepHistogram) {
  v("min_ms", s.min_ms);
  v("max_ms", s.max_ms);
  v("bin_width_ms", s.bin_width_ms);
  v("counts", s.counts);
}

PT_REPORT_FIELDS(ExcludedStep) {
  v("index", s.index);
  v("name", s.name);
  v("reason", s.reason);
  v("duration_ms", s.duration_ms);
}

PT_REPORT_FIELDS(SteadyStateSummary) {
  v("count", s.count);
  v("excluded_count", s.excluded_count);
  v("excluded_ms", s.excluded_ms);
  v("excluded", s.excluded);
  v("mean_all_ms", s.mean_all_ms);
  v("median_all_ms", s.median_all_ms);
  v("mad_all_ms", s.mad_all_ms);
}

PT_REPORT_FIELDS(Steps) {
  v("count", s.count);
  v("mean_ms", s.mean_ms);
  v("median_ms", s.median_ms);
  v("min_ms", s.min_ms);
  v("max_ms", s.max_ms);
  v("stddev_ms", s.stddev_ms);
  v("per_step", s.per_step);
  v("per_step_complete", s.per_step_complete);
  v("histogram", s.histogram);
  v("data_wait_floor", s.data_wait_floor);
  v("steady_state", s.steady_state);
}

PT_REPORT_FIELDS(Phases) {
  v("ms_per_step", s.ms_per_step);
  v("fraction", s.fraction);
  v("backward_from", s.backward_from);
}

PT_REPORT_FIELDS(GpuIdle) {
  v("fraction", s.fraction);
  v("host_wait", s.host_wait);
  v("kernel_wait", s.kernel_wait);
  v("other", s.other);
  v("unqueued_fraction", s.unqueued_fraction);
}

PT_REPORT_FIELDS(CopyDirection) {
  v("count_per_step", s.count_per_step);
  v("bytes_per_step", s.bytes_per_step);
  v("time_ms_per_step", s.time_ms_per_step);
  v("fraction", s.fraction);
  v("bandwidth_gbps", s.bandwidth_gbps);
  v("pageable_bytes", s.pageable_bytes);
  v("pinned_bytes", s.pinned_bytes);
  v("pageable_fraction", s.pageable_fraction);
}

PT_REPORT_FIELDS(Memcpy) {
  v("h2d", s.h2d);
  v("d2h", s.d2h);
  v("d2d", s.d2d);
}

PT_REPORT_FIELDS(GpuMemory) {
  v("peak_allocated_bytes", s.peak_allocated_bytes);
  v("capacity_bytes", s.capacity_bytes);
  v("peak_fraction", s.peak_fraction);
  v.absent_if_unset("headroom_bytes", s.headroom_bytes);
  v.absent_if_unset("unused_reserved_at_peak_bytes", s.unused_reserved_at_peak_bytes);
  v.absent_if_unset("alloc_retries", s.alloc_retries);
  v.absent_if_unset("ooms", s.ooms);
}

PT_REPORT_FIELDS(MemoryOperator) {
  v("name", s.name);
  v("calls", s.calls);
  v("increase_bytes", s.increase_bytes);
  v("self_increase_bytes", s.self_increase_bytes);
  v("allocation_count", s.allocation_count);
  v("self_allocation_count", s.self_allocation_count);
  v("allocation_bytes", s.allocation_bytes);
  v("self_allocation_bytes", s.self_allocation_bytes);
}

PT_REPORT_FIELDS(MemoryLive) {
  v("op", s.op);
  v("bytes", s.bytes);
  v("blocks", s.blocks);
}

PT_REPORT_FIELDS(MemoryTimeline) {
  v("t_ms", s.t_ms);
  v("allocated_bytes", s.allocated_bytes);
  v("reserved_bytes", s.reserved_bytes);
}

PT_REPORT_FIELDS(MemoryDevice) {
  v("device", s.device);
  v("device_type", s.device_type);
  v("device_id", s.device_id);
  v("totals", s.totals);
  v("reconstruction", s.reconstruction);
  v("events", s.events);
  v("allocations", s.allocations);
  v("frees", s.frees);
  v("samples_with_totals", s.samples_with_totals);
  v("peak_allocated_bytes", s.peak_allocated_bytes);
  v("peak_reserved_bytes", s.peak_reserved_bytes);
  v("reserved_at_peak_bytes", s.reserved_at_peak_bytes);
  v("unused_reserved_at_peak_bytes", s.unused_reserved_at_peak_bytes);
  v("baseline_bytes", s.baseline_bytes);
  v("capacity_bytes", s.capacity_bytes);
  v("peak_fraction", s.peak_fraction);
  v("peak_time_ms", s.peak_time_ms);
  v("peak_step", s.peak_step);
  v("peak_phase", s.peak_phase);
  v("live_at_peak_bytes", s.live_at_peak_bytes);
  v("live_unattributed_bytes", s.live_unattributed_bytes);
  v("live_at_peak", s.live_at_peak);
  v("growth_per_step_bytes", s.growth_per_step_bytes);
  v("timeline", s.timeline);
  v("operators_total", s.operators_total);
  v("operators", s.operators);
}

PT_REPORT_FIELDS(MemorySpan) {
  v("name", s.name);
  v("start_ms", s.start_ms);
  v("end_ms", s.end_ms);
}

PT_REPORT_FIELDS(Memory) {
  v("devices", s.devices);
  v("rejected_events", s.rejected_events);
  v("steps", s.steps);
  v("phases", s.phases);
}

PT_REPORT_FIELDS(MemoryBudget) {
  v("device", s.device);
  v("batch_size", s.batch_size);
  v("parameter_bytes", s.parameter_bytes);
  v("gradient_bytes", s.gradient_bytes);
  v("optimizer_state_bytes", s.optimizer_state_bytes);
  v("static_bytes", s.static_bytes);
  v("peak_bytes", s.peak_bytes);
  v("peak_source", s.peak_source);
  v("activation_bytes", s.activation_bytes);
  v("activation_per_sample_bytes", s.activation_per_sample_bytes);
  v("activation_source", s.activation_source);
  v("capacity_bytes", s.capacity_bytes);
  v("capacity_source", s.capacity_source);
  v("free_bytes", s.free_bytes);
  v("peak_fraction", s.peak_fraction);
  v("samples_fit", s.samples_fit);
  v("growth_per_step_bytes", s.growth_per_step_bytes);
  v("growth_source", s.growth_source);
  v("fit", s.fit);
  v("caveat", s.caveat);
}

PT_REPORT_FIELDS(TopKernel) {
  v("name", s.name);
  v("count", s.count);
  v("total_ms", s.total_ms);
  v("mean_us", s.mean_us);
  v("share", s.share);
  v("tensor_core", s.tensor_core);
  v("category", s.category);
}

PT_REPORT_FIELDS(Gpu) {
  v("utilization", s.utilization);
  v("sm_efficiency", s.sm_efficiency);
  v("achieved_occupancy", s.achieved_occupancy);
  v("busy_fraction", s.busy_fraction);
  v("kernels_per_step", s.kernels_per_step);
  v("kernel_median_us", s.kernel_median_us);
  v("short_kernel_fraction", s.short_kernel_fraction);
  v("tensor_core_kernel_share", s.tensor_core_kernel_share);
  v("tf32_kernel_share", s.tf32_kernel_share);
  v("fp32_eligible_kernel_share", s.fp32_eligible_kernel_share);
  v("fp64_kernel_share", s.fp64_kernel_share);
  v("conv_kernel_share", s.conv_kernel_share);
  v("optimizer_kernel_share", s.optimizer_kernel_share);
  v("optimizer_kernels_per_step", s.optimizer_kernels_per_step);
  v("memset_per_step", s.memset_per_step);
  v("static_launch_pattern", s.static_launch_pattern);
  v("idle", s.idle);
  v("memcpy", s.memcpy);
  v("memory", s.memory);
  v("top_kernels", s.top_kernels);
}

PT_REPORT_FIELDS(HostSync) {
  v("count_per_step", s.count_per_step);
  v("time_ms_per_step", s.time_ms_per_step);
  v("fraction", s.fraction);
  v("gpu_records_per_step", s.gpu_records_per_step);
}

PT_REPORT_FIELDS(HostAllocator) {
  v("calls_per_step", s.calls_per_step);
  v("time_ms_per_step", s.time_ms_per_step);
  v("fraction", s.fraction);
}

PT_REPORT_FIELDS(HostIdleActivityShares) {
  v("fraction", s.fraction);
  v("allocator", s.allocator);
  v("memcpy_api", s.memcpy_api);
  v("sync", s.sync);
  v("launch", s.launch);
  v("other_runtime", s.other_runtime);
  v("dataloader", s.dataloader);
  v("operators", s.operators);
  v("other", s.other);
}

PT_REPORT_FIELDS(Host) {
  v("launches_per_step", s.launches_per_step);
  v("launch_mean_us", s.launch_mean_us);
  v("launch_delay_median_us", s.launch_delay_median_us);
  v("sync", s.sync);
  v("runtime_outliers", s.runtime_outliers);
  v("cpu_op_fraction", s.cpu_op_fraction);
  v("idle_activity", s.idle_activity);
  v("allocator", s.allocator);
  v("optimizer_step_fraction", s.optimizer_step_fraction);
  v("optimizer_idle_fraction", s.optimizer_idle_fraction);
}

PT_REPORT_FIELDS(Communication) {
  v("kernel_fraction", s.kernel_fraction);
  v("exposed_fraction", s.exposed_fraction);
  v("measured", s.measured);
  v("not_measured_reason", s.not_measured_reason);
}

PT_REPORT_FIELDS(InputShapeGroup) {
  v("shapes", s.shapes);
  v("types", s.types);
  v("calls_per_step", s.calls_per_step);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v("host_self_ms_per_step", s.host_self_ms_per_step);
}

PT_REPORT_FIELDS(OperatorGpuRow) {
  v("name", s.name);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v("gpu_share", s.gpu_share);
  v("calls_per_step", s.calls_per_step);
  v("gpu_activities_per_call", s.gpu_activities_per_call);
  v("host_self_ms_per_step", s.host_self_ms_per_step);
  v.absent_if_unset("input_shapes", s.input_shapes);
  v.absent_if_unset("input_shape_groups", s.input_shape_groups);
}

PT_REPORT_FIELDS(OperatorHostRow) {
  v("name", s.name);
  v("host_self_ms_per_step", s.host_self_ms_per_step);
  v("host_share", s.host_share);
  v("calls_per_step", s.calls_per_step);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v.absent_if_unset("input_shapes", s.input_shapes);
  v.absent_if_unset("input_shape_groups", s.input_shape_groups);
}

PT_REPORT_FIELDS(OperatorIdleRow) {
  v("name", s.name);
  v("idle_ms_per_step", s.idle_ms_per_step);
  v("idle_share", s.idle_share);
}

PT_REPORT_FIELDS(ModuleShare) {
  v("name", s.name);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v("gpu_share", s.gpu_share);
  v.absent_if_unset("backward_gpu_ms_per_step", s.backward_gpu_ms_per_step);
}

PT_REPORT_FIELDS(OperatorLead) {
  v("top_op", s.top_op);
  v("top_op_share", s.top_op_share);
}

PT_REPORT_FIELDS(Fp32Lead) {
  v("top_op", s.top_op);
  v("top_op_share", s.top_op_share);
  v("top_module", s.top_module);
}

PT_REPORT_FIELDS(Operators) {
  v("attributed_fraction", s.attributed_fraction);
  v("unattributed_ms_per_step", s.unattributed_ms_per_step);
  v("in_module_fraction", s.in_module_fraction);
  v("top_by_gpu_time", s.top_by_gpu_time);
  v("top_by_host_time", s.top_by_host_time);
  v("during_gpu_idle", s.during_gpu_idle);
  v("modules", s.modules);
  v("fp32", s.fp32);
  v("conv", s.conv);
  v("idle", s.idle);
  v("h2d", s.h2d);
  v.absent_if_unset("cpu_matmul_conv_fraction", s.cpu_matmul_conv_fraction);
}

PT_REPORT_FIELDS(EfficiencyRow) {
  v("name", s.name);
  v("shapes", s.shapes);
  v("types", s.types);
  v("kind", s.kind);
  v("dtype", s.dtype);
  v("calls_per_step", s.calls_per_step);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v("gflop_per_call", s.gflop_per_call);
  v("mbytes_per_call", s.mbytes_per_call);
  v("intensity", s.intensity);
  v("tflops", s.tflops);
  v("tbps", s.tbps);
  v("bound", s.bound);
  v("peak_tflops", s.peak_tflops);
  v("roof_share", s.roof_share);
}

PT_REPORT_FIELDS(KernelClassTime) {
  v("name", s.name);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v("share", s.share);
}

PT_REPORT_FIELDS(Efficiency) {
  v("flops_known", s.flops_known);
  v("flops_note", s.flops_note);
  v("gpu_spec", s.gpu_spec);
  v("gpu_spec_source", s.gpu_spec_source);
  v("dtype", s.dtype);
  v("peak_tflops", s.peak_tflops);
  v("peak_tbps", s.peak_tbps);
  v("model_tflop_per_step", s.model_tflop_per_step);
  v("achieved_tflops", s.achieved_tflops);
  v("mfu", s.mfu);
  v("shape_coverage", s.shape_coverage);
  v("memory_bound_share", s.memory_bound_share);
  v("fusion_removable_share", s.fusion_removable_share);
  v("headroom_share", s.headroom_share);
  v("top_roof_share", s.top_roof_share);
  v("top_dtype", s.top_dtype);
  v("top_share", s.top_share);
  v("misaligned_gemm_share", s.misaligned_gemm_share);
  v("misaligned_gemm_removable_share", s.misaligned_gemm_removable_share);
  v("unfused_attention_share", s.unfused_attention_share);
  v("matrix16_share", s.matrix16_share);
  v("fp8_eligible_share", s.fp8_eligible_share);
  v("at_roof", s.at_roof);
  v("operators", s.operators);
  v("kernel_classes", s.kernel_classes);
}

PT_REPORT_FIELDS(RunnerUp) {
  v("bottleneck", s.bottleneck);
  v("score", s.score);
}

PT_REPORT_FIELDS(Verdict) {
  v("bottleneck", s.bottleneck);
  v("confidence", s.confidence);
  v("summary", s.summary);
  v("evidence", s.evidence);
  v("runner_up", s.runner_up);
  v("close", s.close);
}

PT_REPORT_FIELDS(Cost) {
  v("effort", s.effort);
  v("risk", s.risk);
}

PT_REPORT_FIELDS(Fix) {
  v("python", s.python);
  v("cpp", s.cpp);
}

PT_REPORT_FIELDS(Recommendation) {
  v("id", s.id);
  v("title", s.title);
  v("tier", s.tier);
  v("rank", s.rank);
  v("group", s.group);
  v("evidence_level", s.evidence_level);
  v("check_note", s.check_note);
  v("addresses", s.addresses);
  v("addresses_bottleneck", s.addresses_bottleneck);
  v("cost", s.cost);
  v("rank_reason", s.rank_reason);
  v("estimated_speedup_max", s.estimated_speedup_max);
  v("removable_share", s.removable_share);
  v("gain_from", s.gain_from);
  v("evidence", s.evidence);
  v("fix", s.fix);
  v("caveats", s.caveats);
  v("references", s.references);
  v("knobs", s.knobs);
}

PT_REPORT_FIELDS(PlanStep) {
  v("id", s.id);
  v("title", s.title);
  v("evidence_level", s.evidence_level);
  v("check_note", s.check_note);
  v("addresses_bottleneck", s.addresses_bottleneck);
  v("removable_share", s.removable_share);
  v("removed_share", s.removed_share);
  v("speedup_max_alone", s.speedup_max_alone);
  v("cumulative_speedup_max", s.cumulative_speedup_max);
}

PT_REPORT_FIELDS(Plan) {
  v("bottleneck", s.bottleneck);
  v("steps", s.steps);
  v("combined_speedup_max", s.combined_speedup_max);
  v("no_fix_reason", s.no_fix_reason);
  v("method", s.method);
}

PT_REPORT_FIELDS(DataQuality) {
  v("events_total", s.events_total);
  v("events_imported", s.events_imported);
  v("malformed_events", s.malformed_events);
  v("unknown_categories", s.unknown_categories);
  v("flow_events_skipped", s.flow_events_skipped);
  v("negative_durations", s.negative_durations);
  v("clock_anomalies", s.clock_anomalies);
  v("unmatched_correlations", s.unmatched_correlations);
  v("dropped_records", s.dropped_records);
  v("missing_device_properties", s.missing_device_properties);
  v.absent_if_unset("agent_internal_errors", s.agent_internal_errors);
  v.absent_if_unset("memory_events_rejected", s.memory_events_rejected);
  v("notes", s.notes);
}

PT_REPORT_FIELDS(Report) {
  v("schema_version", s.schema_version);
  v("tool", s.tool);
  v("source", s.source);
  v("device", s.device);
  v("steps", s.steps);
  v("breakdown", s.breakdown);
  v("breakdown_ms", s.breakdown_ms);
  v("phases", s.phases);
  v("gpu", s.gpu);
  v("host", s.host);
  v("communication", s.communication);
  v("operators", s.operators);
  v("efficiency", s.efficiency);
  v.absent_if_unset("memory", s.memory);
  v.absent_if_unset("memory_budget", s.memory_budget);
  v("facts", s.facts);
  v("data_quality", s.data_quality);
  v("recommendations", s.recommendations);
  v("plan", s.plan);
  v("verdict", s.verdict);
}

#undef PT_REPORT_FIELDS

// Whether T is one of the structs above (only the declarations are looked at, never a body).
struct AnyVisitor {};
template <class T>
concept ReportStruct = requires(AnyVisitor& v, T& t) { fields(v, t); };

}  // namespace profile_train::report::detail
