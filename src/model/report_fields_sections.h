// The report.json keys of the report's larger sections (memory, GPU, host, operators, efficiency): part of
// report_fields.h, which says how to read them and is the header to include. Private to the model room.
#pragma once

#include <type_traits>

#include "profile_train/model/report.h"

namespace profile_train::model::detail {

using namespace profile_train::model;  // NOLINT: the struct names below are the report's

// One fields() overload per struct of model/report.h (report_fields.h explains the visitor).
#define PT_REPORT_FIELDS(Type) \
  template <class V, class S>  \
  std::enable_if_t<std::is_same_v<std::remove_const_t<S>, Type>> fields(V& v, S& s)

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

PT_REPORT_FIELDS(InductorKernel) {
  v("name", s.name);
  v("kind", s.kind);
  v("fused_ops", s.fused_ops);
  v("on", s.on);
  v("calls_per_step", s.calls_per_step);
  v("ms_per_step", s.ms_per_step);
  v("share", s.share);
}

PT_REPORT_FIELDS(CompileEvent) {
  v("reason", s.reason);
  v("where", s.where);
  v("count", s.count);
}

PT_REPORT_FIELDS(Compilation) {
  v("compiled", s.compiled);
  v("evidence", s.evidence);
  v("frames_per_step", s.frames_per_step);
  v("forward_graphs_per_step", s.forward_graphs_per_step);
  v("backward_graphs_per_step", s.backward_graphs_per_step);
  v("distinct_graphs", s.distinct_graphs);
  v("graph_breaks_per_step", s.graph_breaks_per_step);
  v("host_compiled_share", s.host_compiled_share);
  v("eager_in_frames_share", s.eager_in_frames_share);
  v("gpu_compiled_share", s.gpu_compiled_share);
  v("inductor_kernel_share", s.inductor_kernel_share);
  v("inductor_kernels", s.inductor_kernels);
  v("cuda_graph_launches_per_step", s.cuda_graph_launches_per_step);
  v("cuda_graph_share", s.cuda_graph_share);
  v("compile_in_window_ms", s.compile_in_window_ms);
  v("compile_in_window_share", s.compile_in_window_share);
  v("unique_graphs", s.unique_graphs);
  v("modes", s.modes);
  v("graph_breaks", s.graph_breaks);
  v("recompiles", s.recompiles);
  v("compile_time_s", s.compile_time_s);
  v("breaks", s.breaks);
  v("breaks_summary", s.breaks_summary);
  v("recompile_reasons", s.recompile_reasons);
  v("recompiles_summary", s.recompiles_summary);
}

PT_REPORT_FIELDS(CollectiveRow) {
  v("kind", s.kind);
  v("process_group", s.process_group);
  v("group_size", s.group_size);
  v("dtype", s.dtype);
  v("bytes", s.bytes);
  v("size_bucket", s.size_bucket);
  v("calls_per_step", s.calls_per_step);
  v("ms_per_step", s.ms_per_step);
  v("mean_ms", s.mean_ms);
  v("algbw_gbps", s.algbw_gbps);
  v("bus_factor", s.bus_factor);
  v("busbw_gbps", s.busbw_gbps);
  v("peak_share", s.peak_share);
  v("exposed_ms_per_step", s.exposed_ms_per_step);
  v("exposed_share", s.exposed_share);
  v("evidence", s.evidence);
}

PT_REPORT_FIELDS(LinkPeak) {
  v("name", s.name);
  v("gbps", s.gbps);
  v("source", s.source);
}

PT_REPORT_FIELDS(SmallCollectives) {
  v("calls_per_step", s.calls_per_step);
  v("exposed_ms_per_step", s.exposed_ms_per_step);
  v("merged_ms_per_step", s.merged_ms_per_step);
  v("removable_share", s.removable_share);
}

PT_REPORT_FIELDS(Collectives) {
  v("timing", s.timing);
  v("calls_per_step", s.calls_per_step);
  v("ms_per_step", s.ms_per_step);
  v("exposed_ms_per_step", s.exposed_ms_per_step);
  v("exposed_share", s.exposed_share);
  v("link", s.link);
  v("rows", s.rows);
  v("rows_total", s.rows_total);
  v("unknown_size_calls_per_step", s.unknown_size_calls_per_step);
  v("summary", s.summary);
  v("exposed_summary", s.exposed_summary);
  v("fp32_allreduce_exposed_share", s.fp32_allreduce_exposed_share);
  v("allgather_exposed_share", s.allgather_exposed_share);
  v("sharded_pattern", s.sharded_pattern);
  v("small", s.small);
  v("best_peak_share", s.best_peak_share);
  v("notes", s.notes);
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
  v("precision", s.precision);
  v("precision_from", s.precision_from);
  v("library", s.library);
}

PT_REPORT_FIELDS(PrecisionShare) {
  v("precision", s.precision);
  v("share", s.share);
}

PT_REPORT_FIELDS(KernelClassRow) {
  v("kind", s.kind);
  v("gpu_ms_per_step", s.gpu_ms_per_step);
  v("share", s.share);
  v("precision", s.precision);
  v("precisions", s.precisions);
  v("matrix_unit_share", s.matrix_unit_share);
  v("kind_from", s.kind_from);
  v("precision_from", s.precision_from);
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
  v("low_precision_matrix_share", s.low_precision_matrix_share);
  v("matrix_precision_unknown_share", s.matrix_precision_unknown_share);
  v("static_launch_pattern", s.static_launch_pattern);
  v("idle", s.idle);
  v("memcpy", s.memcpy);
  v("memory", s.memory);
  v("top_kernels", s.top_kernels);
  v("kernel_classes", s.kernel_classes);
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
  v("precision", s.precision);
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
  v("precision", s.precision);
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

}  // namespace profile_train::model::detail
