// build_typed_report(): runs the analyzers and assembles the report exactly as reports/REPORT_FORMAT.md says.
// Every contract key is present; a value that cannot be computed is null and source.missing says why.
#include "profile_train/analysis/analyze.h"

#include <algorithm>
#include <array>
#include <future>
#include <map>
#include <unordered_map>
#include <set>
#include <string>

#include "profile_train/analysis/analyzers.h"
#include "profile_train/analysis/collectives.h"
#include "profile_train/analysis/compilation.h"
#include "profile_train/analysis/efficiency.h"
#include "profile_train/analysis/memory.h"
#include "profile_train/analysis/memory_budget.h"
#include "profile_train/analysis/window.h"
#include "profile_train/common/version.h"
#include "report_context.h"
#include "steps_section.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using trace::Category;
using trace::Event;

namespace {

// Merged busy intervals (kernel | copy | memset) of the main device.
Intervals device_busy(const trace::Trace& t, const TraceIndex& idx) {
  Intervals busy;
  for (const auto* list : {&idx.kernels, &idx.memcpys, &idx.memsets})
    for (size_t i : *list)
      if (device_of(t.events[i]) == idx.main_device) busy.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  return merge_intervals(std::move(busy));
}

// Merged Optimizer.step host ranges.
Intervals optimizer_ranges(const trace::Trace& t) {
  Intervals opt;
  for (const auto& e : t.events)
    if (!e.is_gpu && (e.cat == Category::kUserAnnotation || e.cat == Category::kCpuOp) && is_optimizer_step_annotation(t.name(e)))
      opt.push_back({e.start_ns, e.end_ns()});
  return merge_intervals(std::move(opt));
}

// Kernel time per kind (the kernel classification, kernel_class.h) of the main device in the windows.
std::vector<std::pair<std::string, TimeNs>> kernel_class_times(const Ctx& c) {
  std::array<TimeNs, kKernelKinds> by_kind{};
  for (size_t p = 0; p < c.idx.kernels.size(); ++p) {
    const Event& k = c.t.events[c.idx.kernels[p]];
    if (device_of(k) != c.idx.main_device || !c.in_window(k.start_ns)) continue;
    by_kind[static_cast<size_t>(c.idx.kernel_class(p).kind)] += k.dur_ns;
  }
  std::vector<std::pair<std::string, TimeNs>> out;
  for (size_t i = 0; i < by_kind.size(); ++i)
    if (by_kind[i] > 0) out.emplace_back(to_string(static_cast<KernelKind>(i)), by_kind[i]);
  return out;
}

// Fills the device facts the trace lacks (no deviceProperties, a name from elsewhere) from the peak table.
void fill_device_from_spec(Device& d, const GpuSpec& spec, std::vector<std::string>& notes) {
  std::vector<std::string> filled;
  if (!d.compute_capability && !spec.compute_capability.empty()) {
    d.compute_capability = spec.compute_capability;
    filled.push_back("compute capability " + spec.compute_capability);
  }
  if (!d.total_memory_bytes && spec.memory_gb > 0) {
    d.total_memory_bytes = static_cast<int64_t>(spec.memory_gb * 1073741824.0);
    filled.push_back("memory " + std::to_string(static_cast<int64_t>(spec.memory_gb)) + " GiB");
  }
  if (!d.vendor && !spec.vendor.empty()) {
    d.vendor = spec.vendor;
    filled.push_back("vendor " + spec.vendor);
  }
  if (filled.empty()) return;
  std::string text = "device facts the trace lacks come from the GPU peak table entry \"" + spec.name + "\": ";
  for (size_t i = 0; i < filled.size(); ++i) text += (i ? ", " : "") + filled[i];
  notes.push_back(text);
}

}  // namespace

namespace {

std::optional<std::string> text_or_null(const std::string& s) {
  return s.empty() ? std::nullopt : std::optional<std::string>(s);
}

std::optional<Device> device_section(const trace::Trace& t, const TraceIndex& idx) {
  const trace::DeviceInfo* dev = t.device(idx.main_device);
  if (dev == nullptr && !idx.has_gpu_activity && !t.devices.empty()) dev = &t.devices.front();
  // One device's properties under another id than the activity's (ROCm traces: deviceProperties id 0 of the
  // only visible device, kernels on the physical id): the same device.
  const bool renumbered = dev == nullptr && idx.has_gpu_activity && t.devices.size() == 1;
  if (renumbered) dev = &t.devices.front();
  if (dev != nullptr) {
    Device d;
    d.id = renumbered ? idx.main_device : dev->id;
    d.name = text_or_null(dev->name);
    d.vendor = text_or_null(dev->vendor);
    if (dev->compute_major >= 0)
      d.compute_capability = std::to_string(dev->compute_major) + "." + std::to_string(std::max(0, dev->compute_minor));
    if (dev->num_sms > 0) d.num_sms = dev->num_sms;
    if (dev->total_memory_bytes > 0) d.total_memory_bytes = dev->total_memory_bytes;
    return d;
  }
  if (idx.has_gpu_activity) return Device{idx.main_device, {}, {}, {}, {}, {}};
  return std::nullopt;
}

DataQuality data_quality_section(const trace::Trace& t, const TraceIndex& idx, std::set<std::string>& missing) {
  int64_t unmatched = 0, gpu_without_corr = 0;
  for (const auto* list : {&idx.kernels, &idx.memcpys, &idx.memsets}) {
    for (size_t i : *list) {
      const Event& e = t.events[i];
      if (e.correlation < 0) { ++gpu_without_corr; continue; }
      if (idx.runtime_of(e.correlation) == TraceIndex::Correlation::kNone) ++unmatched;
    }
  }
  std::vector<int8_t> launch_name(t.strings.size(), -1);  // by StringId: -1 unknown, 0 no, 1 a launch call
  for (size_t i : idx.runtimes) {
    const Event& e = t.events[i];
    if (e.correlation < 0) continue;
    const TraceIndex::Correlation* c = idx.correlation(e.correlation);
    if (c != nullptr && c->gpu_count > 0) continue;  // matched: the name need not be looked at
    int8_t& launch = launch_name[e.name];
    if (launch < 0) launch = is_launch_call(runtime_base_name(t.name(e))) ? 1 : 0;
    if (launch) ++unmatched;
  }
  if (gpu_without_corr > 0) missing.insert("correlation_ids");
  const auto& q = t.quality;
  DataQuality d;
#define PT_DATA_QUALITY_COPY(name, problem, label) d.name = q.name;
  PT_DATA_QUALITY_COUNTERS(PT_DATA_QUALITY_COPY)
#undef PT_DATA_QUALITY_COPY
  d.unmatched_correlations += unmatched;
  d.missing_device_properties = q.missing_device_properties || (t.devices.empty() && idx.has_gpu_activity);
  if (q.agent_internal_errors >= 0) d.agent_internal_errors = q.agent_internal_errors;
  d.notes.assign(q.notes.begin(), q.notes.end());
  if (unmatched > 0)
    d.notes.push_back(std::to_string(unmatched) + " GPU activities / launch calls without a matching correlation id");
  return d;
}

// `missing` is complete when this runs (every other section has added to it).
Source source_section(const trace::Trace& t, const TraceIndex& idx, const StepInfo& si, std::set<std::string>& missing) {
  if (!idx.has_gpu_activity) missing.insert("gpu_activity");
  if (si.source != StepSource::kProfilerStep && si.source != StepSource::kNvtxStep) missing.insert("profiler_steps");
  if (!idx.has_cpu_ops) missing.insert("cpu_ops");
  if (idx.runtimes.empty() && idx.has_gpu_activity) missing.insert("runtime_calls");
  Source src;
  src.files.assign(t.meta.source_files.begin(), t.meta.source_files.end());
  src.format = text_or_null(t.meta.format);
  src.format_version = text_or_null(t.meta.format_version);
  src.producer = text_or_null(t.meta.producer);
  src.step_detection = to_string(si.source);
  if (!si.steps.empty()) {
    src.window_start_ns = si.steps.front().start;
    src.window_end_ns = si.steps.back().end;
  }
  src.has_gpu_activity = idx.has_gpu_activity;
  src.has_cpu_ops = idx.has_cpu_ops;
  src.has_phase_ranges = idx.has_phase_ranges;
  std::string cap = t.meta.gpu_capture_status;
  if (cap.empty() && !t.meta.gpu_capture_attempted) cap = "GPU activity was not captured";
  src.gpu_capture_status = text_or_null(cap);
  src.missing.assign(missing.begin(), missing.end());
  src.notes.assign(si.notes.begin(), si.notes.end());
  if (t.meta.rank >= 0 || t.meta.world_size > 0 || !t.meta.distributed_backend.empty()) {
    Distributed& d = src.distributed.emplace();
    if (t.meta.rank >= 0) d.rank = t.meta.rank;
    if (t.meta.world_size > 0) d.world_size = t.meta.world_size;
    d.backend = text_or_null(t.meta.distributed_backend);
  }
  return src;
}

}  // namespace

Report build_typed_report(const trace::Trace& t, const AnalysisOptions& options) {
  // The analyzers are pure functions of the trace and what they are given: independent ones run on other cores
  // (std::async) while this thread does the others; the report is the same. The costliest half of the memory
  // section and of the operator attribution read only the trace: they start first, beside the index.
  auto memory_prep_job = std::async(std::launch::async, [&t] { return prepare_memory(t); });
  auto operator_tree_job = std::async(std::launch::async, [&t] { return build_operator_tree(t); });
  const TraceIndex idx = build_index(t);
  // What reads only the trace and the index: the facts, the workload, the data-quality counts.
  struct Side {
    nlohmann::json facts;
    Workload workload;
    DataQuality data_quality;
    std::set<std::string> missing;
  };
  auto side_job = std::async(std::launch::async, [&t, &idx] {
    Side out;
    out.facts = infer_facts(t, idx);
    out.workload = detect_workload(t, idx);
    out.data_quality = data_quality_section(t, idx, out.missing);
    return out;
  });
  auto steps_job = std::async(std::launch::async, [&t, &idx] {
    std::pair<StepInfo, LoopRanges> out;
    out.first = detect_steps(t, idx);
    out.second = loop_ranges(t, out.first.main_pid, out.first.main_tid);  // the steps section's
    return out;
  });
  const RoleRanges roles = build_role_ranges(t, idx);
  Intervals kern_main;
  for (size_t i : idx.kernels)
    if (device_of(t.events[i]) == idx.main_device) kern_main.push_back({t.events[i].start_ns, t.events[i].end_ns()});
  kern_main = merge_intervals(std::move(kern_main));
  Intervals busy = device_busy(t, idx);
  Intervals optimizer = optimizer_ranges(t);
  const std::pair<StepInfo, LoopRanges> steps_found = steps_job.get();
  const StepInfo& si = steps_found.first;
  const LoopRanges& loop = steps_found.second;
  StepsSection sec = steps_section(idx, si, loop, roles, kern_main, options);
  // Every section below covers the steady-state steps (steps.steady_state says which were left out).
  StepInfo steady = si;
  steady.steps = sec.steady;
  Ctx c{t, idx, steady, {}, std::move(busy), std::move(optimizer), 0, 0};
  Intervals w;
  for (const auto& s : steady.steps) {
    w.push_back({s.start, s.end});
    c.total_ns += s.duration();
  }
  c.windows = merge_intervals(std::move(w));
  c.nsteps = static_cast<double>(steady.steps.size());
  std::set<std::string> missing;

  // The operator attribution and the memory section read only the trace, the index and the step windows: each
  // runs on a thread of its own while this one builds the GPU, host and communication sections (same results).
  auto attribution_job = std::async(std::launch::async, [&t, &idx, &c, &operator_tree_job] {
    return attribute_operators(t, idx, operator_tree_job.get(), c.windows, idx.main_device, c.busy);
  });
  auto memory_job = std::async(std::launch::async, [&t, &si, &sec, &memory_prep_job] {
    // The memory section covers the whole capture (every step, not only the steady ones), with the steps
    // section's phase ranges of the main thread (computed once there).
    std::pair<std::optional<Memory>, int64_t> m;
    m.first = memory_section(t, memory_prep_job.get(), si.steps, sec.phase_ranges ? &*sec.phase_ranges : nullptr,
                             &m.second);
    return m;
  });

  Report r;
  r.schema_version = kReportSchemaVersion;
  r.tool = {"profile-train", kVersion};
  r.steps = std::move(sec.steps);
  r.breakdown = sec.breakdown;
  r.breakdown_ms = sec.breakdown_ms;
  r.phases = std::move(sec.phases);
  r.device = device_section(t, idx);
  std::vector<std::string> device_notes;  // added to source.notes once that section exists
  if (options.device_name && !options.device_name->empty()) {
    // `--device NAME`: the GPU model the trace does not record (a trace's own name wins).
    if (!r.device && idx.has_gpu_activity) r.device = Device{idx.main_device, {}, {}, {}, {}, {}};
    if (r.device && !r.device->name) {
      r.device->name = *options.device_name;
      device_notes.push_back("device.name \"" + *options.device_name +
                               "\" comes from --device: the trace does not record the GPU model");
    } else if (r.device && *r.device->name != *options.device_name) {
      device_notes.push_back("--device \"" + *options.device_name + "\" ignored: the trace records the GPU as \"" +
                               *r.device->name + "\"");
    } else if (!r.device) {
      device_notes.push_back("--device \"" + *options.device_name + "\" ignored: the trace shows no GPU activity");
    }
  }
  if (t.devices.empty()) missing.insert("deviceProperties");
  // The host section beside the GPU section and the attribution; then this thread does the facts and the
  // compiled program while the others finish.
  auto host_job = std::async(std::launch::async, [&c, &roles] { return host_section(c, roles); });
  r.gpu = gpu_section(c, missing);
  r.communication = communication_section(c, roles);
  Side side = side_job.get();
  r.facts = std::move(side.facts);
  if (sec.accumulation > 0) {
    // Counted in the trace: backward passes per optimizer step. It replaces what the shim counted from
    // DataLoader fetches, which a prefetching loader inflates.
    r.facts["training"] = {{"gradient_accumulation_steps", sec.accumulation}, {"step_boundary", "optimizer step"}};
    auto& inferred = r.facts["inferred"];
    if (inferred.is_array() && std::find(inferred.begin(), inferred.end(), "training.gradient_accumulation_steps") == inferred.end())
      inferred.push_back("training.gradient_accumulation_steps");
  }
  // The compiled program: torch.compile's ranges and kernels, graph replays, the shim's dynamo counters.
  r.compilation = compilation_section(c, r.facts);
  r.host = host_job.get();
  const OperatorAttribution attribution = attribution_job.get();
  auto [memory, memory_rejected] = memory_job.get();
  r.operators = operators_section(c, attribution);
  const GpuSpec* spec = nullptr;
  if (r.device && r.device->name) {
    static const std::vector<GpuSpec> kNone;
    spec = match_gpu_spec(*r.device->name, options.gpu_specs ? *options.gpu_specs : kNone);
  }
  std::vector<std::string> spec_notes;  // device facts filled from the GPU spec table (data_quality.notes)
  if (spec) fill_device_from_spec(*r.device, *spec, spec_notes);
  r.efficiency = efficiency_section({attribution, c.nsteps, c.total_ns, spec, t.has_input_shapes(),
                                     idx.has_gpu_activity, kernel_class_times(c)});
  {
    r.memory = std::move(memory);
    // gpu.memory takes the main GPU's figures from it (a reconstructed peak includes the baseline).
    if (r.memory) {
      const MemoryDevice* main = nullptr;  // the main device's, else the first GPU's
      for (const auto& d : r.memory->devices)
        if (d.device_type != 0 && (main == nullptr || (d.device_id == idx.main_device && main->device_id != idx.main_device)))
          main = &d;
      if (main != nullptr) {
        GpuMemory& g = r.gpu.memory;
        g.peak_allocated_bytes = main->peak_allocated_bytes;
        if (main->capacity_bytes) {
          g.capacity_bytes = main->capacity_bytes;
          g.peak_fraction = main->peak_fraction;
          g.headroom_bytes = std::max<int64_t>(0, *main->capacity_bytes - main->peak_allocated_bytes);
        }
        g.unused_reserved_at_peak_bytes = main->unused_reserved_at_peak_bytes;
      }
    }
  }
  // The shim's allocator counters (torch.cuda.memory_stats): retries after a failed cudaMalloc, OOMs.
  if (const auto* gf = r.facts.contains("gpu") ? &r.facts["gpu"] : nullptr; gf != nullptr && gf->is_object()) {
    if (gf->contains("alloc_retries") && (*gf)["alloc_retries"].is_number_integer())
      r.gpu.memory.alloc_retries = (*gf)["alloc_retries"].get<int64_t>();
    if (gf->contains("ooms") && (*gf)["ooms"].is_number_integer()) r.gpu.memory.ooms = (*gf)["ooms"].get<int64_t>();
  }
  // Collectives: what each moves, at what bandwidth, how much of it is exposed (the job summary matches them).
  r.collectives = collectives_section(c, roles, r.facts, spec);
  if (r.collectives && r.collectives->timing != "gpu_kernels" && r.collectives->exposed_share &&
      !r.communication.exposed_fraction) {
    // Without GPU activity the collectives' own timing (gloo's host ranges, the shim's calls) measures what the
    // ranks wait in them: the communication figures every other section reads.
    r.communication.measured = true;
    r.communication.not_measured_reason.reset();
    r.communication.exposed_fraction = r.collectives->exposed_share;
  }
  if (auto it = r.facts.find("collectives"); it != r.facts.end() && it->is_object() && it->contains("instances")) {
    // The shim's per-call records are in the section; the facts keep their count, not 20,000 objects.
    const auto& inst = (*it)["instances"];
    (*it)["instances_recorded"] = inst.is_array() ? inst.size() : 0;
    it->erase("instances");
  }
  // Static and activation memory, and the batch that fits (the shim's facts.memory).
  r.memory_budget = memory_budget_section(r.facts, r.device);
  r.data_quality = std::move(side.data_quality);
  missing.insert(side.missing.begin(), side.missing.end());
  r.data_quality.notes.insert(r.data_quality.notes.end(), spec_notes.begin(), spec_notes.end());
  if (!t.memory.empty()) {
    r.data_quality.memory_events_rejected = memory_rejected;
    if (memory_rejected > 0)
      r.data_quality.notes.push_back(std::to_string(memory_rejected) +
                                     " memory events with sizes or running totals no device can have were left out");
  }
  r.source = source_section(t, idx, si, missing);
  r.source.notes.insert(r.source.notes.end(), device_notes.begin(), device_notes.end());
  // What the window is, before the verdict reads it: what the capture traced, training or inference, warm or cold.
  r.source.capture = capture_section(t, idx, r);
  r.source.workload = std::move(side.workload);
  r.steps.cold_window = cold_window(t, idx, si, c.busy);
  // recommendations and plan are written with the rules (rules::apply_rules).
  r.verdict = decide_verdict(r);
  return r;
}

}  // namespace profile_train::analysis
