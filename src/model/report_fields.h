// The one declaration of report.json's keys: for each struct of model/report.h, which member is which
// key. The JSON writer and reader (report_json.cpp) both walk it, so the two cannot disagree.
//
// fields(v, s) calls, per key, one of
//   v("key", member)                 the key is always written (an std::optional member is null when unset)
//   v.absent_if_unset("key", member) an std::optional member whose key is left out when unset
//   v.inline_group(member)           an std::optional struct whose keys sit in the enclosing object
// `s` is the struct, const when writing. Private to the model room.
#pragma once

#include <type_traits>

#include "profile_train/model/report.h"
#include "report_fields_sections.h"  // the PT_REPORT_FIELDS macro and the sections' keys

namespace profile_train::model::detail {

using namespace profile_train::model;  // NOLINT: the struct names below are the report's

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

PT_REPORT_FIELDS(Capture) {
  v("gpu_activity", s.gpu_activity);
  v("traced", s.traced);
  v("lacks", s.lacks);
  v("recapture", s.recapture);
  v("cpu_training", s.cpu_training);
}

PT_REPORT_FIELDS(Workload) {
  v("kind", s.kind);
  v("evidence", s.evidence);
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
  v("capture", s.capture);
  v("workload", s.workload);
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

PT_REPORT_FIELDS(ColdWindow) {
  v("signs", s.signs);
  v("first_call_share", s.first_call_share);
  v("recapture", s.recapture);
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
  v("cold_window", s.cold_window);
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
#define PT_DATA_QUALITY_FIELD(name, problem, label) v(#name, s.name);
  PT_DATA_QUALITY_COUNTERS(PT_DATA_QUALITY_FIELD)
#undef PT_DATA_QUALITY_FIELD
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
  v.absent_if_unset("compilation", s.compilation);
  v.absent_if_unset("collectives", s.collectives);
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

}  // namespace profile_train::model::detail
