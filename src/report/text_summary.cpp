// Terminal summary of a report: the verdict first, then the figures that support it. A sink: it only reads the
// report (never the trace) and writes to the injected stream. ANSI colors only when options.color.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "profile_train/common/format.h"
#include "profile_train/common/strings.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/utf8.h"
#include "profile_train/report/writers.h"
#include "compilation_text.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)


namespace {

// Strings come from the trace (kernel and range names, device names) or from rule files: made inert for the
// terminal here, so no escape sequence of theirs reaches it.
std::string text(const std::string& s) { return terminal_safe(s); }
std::string text(const std::optional<std::string>& s, const std::string& dflt = "") { return terminal_safe(s.value_or(dflt)); }

std::string fmt(const char* f, double v) { return format_printf(f, v); }
std::string pct(double f) { return fmt("%.1f%%", 100.0 * f); }
std::string opt_pct(const std::optional<double>& v) { return v ? pct(*v) : "n/a"; }
std::string bytes(double b) {
  if (b >= 1e9) return fmt("%.2f GB", b / 1e9);
  if (b >= 1e6) return fmt("%.1f MB", b / 1e6);
  if (b >= 1e3) return fmt("%.1f kB", b / 1e3);
  return fmt("%.0f B", b);
}

struct Style {
  bool on;
  std::string c(const char* code, const std::string& s) const { return on ? std::string("\033[") + code + "m" + s + "\033[0m" : s; }
  std::string bold(const std::string& s) const { return c("1", s); }
  std::string dim(const std::string& s) const { return c("2", s); }
};

const char* verdict_color(Bottleneck b) {
  if (b == Bottleneck::kGpuCompute) return "1;32";  // the GPU is the limit: the expected state
  if (b == Bottleneck::kUnknown) return "1;37";
  return "1;33";
}

// The plan: the first fixes in order with the combined bound, before any figure.
void write_plan(const Report& r, std::ostream& out, const Style& st) {
  if (!r.plan) return;
  const Plan& plan = *r.plan;
  const bool any = !plan.steps.empty();
  if (any) {
    out << st.bold("PLAN") << "  " << plan.steps.size() << " step(s), together up to "
        << st.bold(fmt("%.2fx", plan.combined_speedup_max)) << " faster step "
        << st.dim("(bounds, successive Amdahl)") << "\n";
    int i = 0;
    for (const auto& s : plan.steps) {
      out << "  " << ++i << ". [" << text(s.id) << "] " << text(s.title) << "  "
          << st.dim("alone up to " + fmt("%.2fx", s.speedup_max_alone) + ", cumulative " +
                    fmt("%.2fx", s.cumulative_speedup_max));
      if (s.evidence_level == "check") out << "  " << st.c("33", "CHECK");
      out << "\n";
      if (s.evidence_level == "check" && s.check_note) out << "     " << st.dim("check first: " + text(s.check_note)) << "\n";
    }
  }
  if (plan.no_fix_reason)
    out << (any ? "  " : "") << st.c("33", "No fix for the bottleneck") << ": " << text(*plan.no_fix_reason) << "\n";
  if (any || plan.no_fix_reason) out << "\n";
}

void write_host_idle(const Report& r, std::ostream& out) {
  if (!r.host.idle_activity || r.host.idle_activity->fraction <= 0) return;
  const HostIdleActivityShares& a = *r.host.idle_activity;
  const std::pair<double, const char*> parts[] = {
      {a.allocator, "allocator"},         {a.memcpy_api, "memcpy API"}, {a.sync, "sync"},
      {a.launch, "launch API"},           {a.other_runtime, "other runtime"}, {a.dataloader, "DataLoader"},
      {a.operators, "operators"},         {a.other, "other"}};
  out << "          while the GPU idles (" << pct(a.fraction) << " of the step) the host is in:";
  std::string sep = " ";
  for (const auto& [v, label] : parts) {
    if (v < 0.0005) continue;
    out << sep << label << " " << pct(v);
    sep = ", ";
  }
  out << "\n";
}

// The steps left out of the steady state: which, why, how long (the first few, then a count).
void write_excluded_steps(const Report& r, std::ostream& out, const Style& st) {
  const SteadyStateSummary& ss = r.steps.steady_state;
  if (ss.excluded.empty()) return;
  const double n = static_cast<double>(ss.excluded_count);
  out << "          excluded " << fmt("%.0f", n) << " step(s), " << fmt("%.2f", ss.excluded_ms)
      << " ms (mean over all steps " << fmt("%.2f", ss.mean_all_ms.value_or(0.0)) << " ms):";
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < ss.excluded.size() && i < kShown; ++i) {
    const ExcludedStep& x = ss.excluded[i];
    out << (i ? ", " : " ") << "step " << fmt("%.0f", static_cast<double>(x.index)) << " " << text(x.reason) << " "
        << fmt("%.2f", x.duration_ms) << " ms";
  }
  if (n > static_cast<double>(std::min(ss.excluded.size(), kShown))) out << st.dim(", ...");
  out << "\n";
}

// Forward / backward / optimizer / data wait of the step on the training thread's host side.
void write_phases(const Report& r, std::ostream& out, const Style& st) {
  if (!r.phases) return;
  out << st.bold("Phases") << "    (host, training thread, per step)";
  for (Phase p : kAllPhases) {
    const auto& v = r.phases->ms_per_step[p];
    if (!v) continue;
    out << "  " << name_of(p) << " " << fmt("%.2f", *v) << " ms ("
        << fmt("%.1f", 100.0 * r.phases->fraction[p].value_or(0.0)) << "%)";
  }
  out << "\n";
}

// `run`'s command and how it ended (absent for `analyze`).
void write_run(const Report& r, std::ostream& out, const Style& st) {
  if (!r.source.run) return;
  out << st.bold("Command") << "   " << text(command_line(r.source.run->command)) << "  "
      << st.dim("(" + text(run_outcome(*r.source.run)) + ")") << "\n";
}

void write_steps(const Report& r, std::ostream& out, const Style& st) {
  const Steps& s = r.steps;
  const double count = static_cast<double>(s.count);
  const double steady = static_cast<double>(s.steady_state.count);
  if (s.mean_ms) {
    out << st.bold("Step") << "      " << fmt("%.2f", *s.mean_ms) << " ms mean"
        << " (median " << fmt("%.2f", s.median_ms.value_or(0.0)) << ", min " << fmt("%.2f", s.min_ms.value_or(0.0))
        << ", max " << fmt("%.2f", s.max_ms.value_or(0.0)) << ") over ";
    if (steady < count) out << fmt("%.0f", steady) << " steady-state of ";
    out << fmt("%.0f", count) << " step(s) [" << text(r.source.step_detection) << "]\n";
    write_excluded_steps(r, out, st);
  } else {
    out << st.bold("Step") << "      no step window\n";
  }
  // What the window is: training or inference (source.workload), warm-up (steps.cold_window), what the capture
  // lacks (source.capture).
  const auto& w = r.source.workload;
  out << st.bold("Workload") << "  " << text(w.kind);
  if (!w.evidence.empty()) out << " (" << text(w.evidence.front()) << ")";
  out << "\n";
  if (s.cold_window)
    out << st.bold("Warm-up") << "   " << fmt("%.0f%%", 100.0 * s.cold_window->first_call_share)
        << " of the window is first-call work: bounds below are measured on it\n";
  if (r.source.capture.lacks) out << st.bold("Capture") << "   " << text(*r.source.capture.lacks) << "\n";
  if (r.compilation) out << st.bold("Compile") << "   " << text(compilation_line(*r.compilation)) << "\n";
  if (r.collectives && r.collectives->summary) {
    const auto& c = *r.collectives;
    out << st.bold("Collect") << "   " << text(*c.summary);
    if (c.rows_total > 1) out << "; " << fmt("%.3g", c.calls_per_step) << " calls/step in " << c.rows_total << " groups";
    if (c.exposed_share) out << "; " << fmt("%.1f%%", 100.0 * *c.exposed_share) << " of the step exposed";
    out << "\n";
  }
  write_phases(r, out, st);
}

// A distributed run whose collectives the trace could not see: said so instead of printing 0%.
bool communication_unmeasured(const Report& r) {
  const auto& d = r.source.distributed;
  return !r.communication.measured && d && d->world_size && *d->world_size > 1;
}

void write_breakdown(const Report& r, std::ostream& out, const Style& st) {
  if (!r.breakdown[Role::kKernel]) return;
  out << st.bold("Breakdown") << " (share of the step, TensorBoard-plugin carving)\n";
  constexpr int kWidth = 30;
  for (Role role : kAllRoles) {
    const std::string label(name_of(role));
    if (role == Role::kCommunication && communication_unmeasured(r)) {
      out << "  communication  not measured (see Comm below)\n";
      continue;
    }
    const double f = r.breakdown.value_or_zero(role);
    const int n = static_cast<int>(std::lround(f * kWidth));
    std::string bar(static_cast<size_t>(std::max(0, std::min(kWidth, n))), '#');
    bar += std::string(static_cast<size_t>(kWidth) - bar.size(), '.');
    char line[160];
    std::snprintf(line, sizeof line, "  %-14s %6.1f%%  ", label.c_str(), 100.0 * f);
    out << line << (f >= 0.15 ? st.c("36", bar) : bar) << "  " << fmt("%.2f ms", r.breakdown_ms.value_or_zero(role)) << "\n";
  }
}

// The memory line from report.memory: the first device (a GPU when there is one), its peak, the headroom to
// its capacity, unused reserve and where the peak happened. False when the report has no memory section.
bool write_memory_line(const Report& r, std::ostream& out) {
  if (!r.memory || r.memory->devices.empty()) return false;
  const MemoryDevice& d = r.memory->devices.front();
  out << "          memory " << d.device << " peak " << bytes(static_cast<double>(d.peak_allocated_bytes));
  if (d.totals != "running_totals") out << " (reconstructed, at least)";
  if (d.capacity_bytes) {
    out << " of " << bytes(static_cast<double>(*d.capacity_bytes)) << " (" << pct(d.peak_fraction.value_or(0.0))
        << "), headroom " << bytes(static_cast<double>(std::max<int64_t>(0, *d.capacity_bytes - d.peak_allocated_bytes)));
  }
  if (d.unused_reserved_at_peak_bytes)
    out << ", " << bytes(static_cast<double>(*d.unused_reserved_at_peak_bytes)) << " reserved unused";
  if (d.peak_step) out << ", in " << *d.peak_step;
  if (d.peak_phase) out << (d.peak_step ? " " : ", in ") << *d.peak_phase;
  if (d.growth_per_step_bytes && *d.growth_per_step_bytes > 0)
    out << ", grows " << bytes(static_cast<double>(*d.growth_per_step_bytes)) << "/step";
  out << "\n";
  return true;
}

// The memory budget line (report.memory_budget): static and activation bytes, what fits, growth.
void write_memory_budget_line(const Report& r, std::ostream& out) {
  if (!r.memory_budget) return;
  const MemoryBudget& b = *r.memory_budget;
  // Binary units throughout, as the fit text (analysis/memory_budget.cpp) and the GPU capacities use.
  out << "          memory budget (" << b.device << "): static " << profile_train::format_bytes_binary(static_cast<double>(b.static_bytes));
  if (b.activation_bytes) out << ", activations " << profile_train::format_bytes_binary(static_cast<double>(*b.activation_bytes));
  if (b.fit) out << "; " << *b.fit;
  if (b.growth_per_step_bytes && *b.growth_per_step_bytes > 0)
    out << "; grows " << profile_train::format_bytes_binary(static_cast<double>(*b.growth_per_step_bytes)) << "/step across steps (a leak?)";
  out << "\n";
}

void write_gpu(const Report& r, std::ostream& out, const Style& st) {
  const Gpu& g = r.gpu;
  if (!g.utilization) {
    out << st.bold("GPU") << "       no GPU activity in the trace\n";
    write_memory_line(r, out);
    return;
  }
  std::string dev = r.device ? text(r.device->name, "GPU") : "GPU";
  const std::string cc = r.device ? text(r.device->compute_capability) : "";
  if (!cc.empty()) dev += " (sm " + cc + ")";
  const auto idle = [&](auto member) { return g.idle ? std::optional<double>((*g.idle).*member) : std::nullopt; };
  const auto idle_share = [&](auto member) { return g.idle ? (*g.idle).*member : std::nullopt; };
  const bool amd = r.device && r.device->vendor && *r.device->vendor == "amd";
  const char* units = amd ? "matrix-core" : "tensor-core";
  out << st.bold("GPU") << "       " << dev << ": utilization " << pct(*g.utilization) << ", est. SM efficiency "
      << opt_pct(g.sm_efficiency) << ", occupancy " << opt_pct(g.achieved_occupancy) << ", " << units << " kernels "
      << opt_pct(g.tensor_core_kernel_share) << "\n";
  // What the kernels compute (gpu.kernel_classes): the largest kinds with their precision.
  if (!g.kernel_classes.empty()) {
    std::string line;
    int shown = 0;
    for (const auto& c : g.kernel_classes) {
      if (shown == 5 || (shown > 0 && c.share < 0.01)) break;
      line += (shown++ ? ", " : "") + text(c.kind) + " " + pct(c.share) + " " +
              (c.precision == "unknown" ? std::string("precision unknown") : text(c.precision));
      if (c.matrix_unit_share >= 0.5) line += std::string(" on ") + (amd ? "matrix" : "tensor") + " cores";
    }
    out << "          kernel time: " << line << "\n";
  }
  out << "          " << fmt("%.0f", g.kernels_per_step.value_or(0.0)) << " kernels/step (median "
      << fmt("%.1f us", g.kernel_median_us.value_or(0.0)) << "), FP32 TC-eligible "
      << opt_pct(g.fp32_eligible_kernel_share) << ", idle " << opt_pct(idle(&GpuIdle::fraction))
      << " of the step (host wait " << opt_pct(idle_share(&GpuIdle::host_wait)) << ", kernel wait "
      << opt_pct(idle_share(&GpuIdle::kernel_wait)) << ", other " << opt_pct(idle_share(&GpuIdle::other)) << ")\n";
  if (g.memcpy) {
    const std::pair<const char*, const CopyDirection*> dirs[] = {
        {"h2d", &g.memcpy->h2d}, {"d2h", &g.memcpy->d2h}, {"d2d", &g.memcpy->d2d}};
    for (const auto& [dir, d] : dirs) {
      if (d->count_per_step <= 0) continue;
      out << "          " << dir << ": " << fmt("%.1f", d->count_per_step) << " copies/step, "
          << bytes(d->bytes_per_step) << "/step, " << fmt("%.2f ms", d->time_ms_per_step);
      if (d->bandwidth_gbps) out << ", " << fmt("%.1f GB/s", *d->bandwidth_gbps);
      if (d->pageable_fraction) out << ", " << pct(*d->pageable_fraction) << " pageable";
      out << "\n";
    }
  }
  if (!write_memory_line(r, out) && g.memory.peak_allocated_bytes) {
    out << "          memory peak " << bytes(static_cast<double>(*g.memory.peak_allocated_bytes));
    if (g.memory.peak_fraction) out << " (" << pct(*g.memory.peak_fraction) << " of the device)";
    out << "\n";
  }
}

// MFU and the operators with the most GPU time below their roof (efficiency).
void write_efficiency(const Report& r, std::ostream& out, const Style& st) {
  const Efficiency& e = r.efficiency;
  if (!r.gpu.utilization || (!e.flops_known && !e.flops_note)) return;
  out << st.bold("Roofline") << "  ";
  if (!e.flops_known) {
    out << text(e.flops_note) << "\n";
    return;
  }
  if (e.mfu)
    out << "MFU " << pct(*e.mfu) << " (" << fmt("%.1f", e.achieved_tflops.value_or(0)) << " of "
        << fmt("%.0f", e.peak_tflops.value_or(0)) << " TFLOP/s " << text(e.precision ? e.precision : e.dtype) << ", "
        << text(e.gpu_spec) << ")";
  else
    out << fmt("%.1f", e.achieved_tflops.value_or(0)) << " TFLOP/s; no peak-table entry for this device (--gpu-spec FILE)";
  out << "; FLOPs known for " << opt_pct(e.shape_coverage) << " of GPU time\n";
  // Most time below the roof: time x (1 - roof share).
  std::vector<const EfficiencyRow*> rows;
  for (const auto& row : e.operators)
    if (row.roof_share && *row.roof_share < 1) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const EfficiencyRow* a, const EfficiencyRow* b) {
    return a->gpu_ms_per_step * (1 - *a->roof_share) > b->gpu_ms_per_step * (1 - *b->roof_share);
  });
  for (size_t i = 0; i < rows.size() && i < 3; ++i)
    out << "          " << text(rows[i]->name) << " " << text(truncate_utf8(rows[i]->shapes.value_or(""), 60)) << " "
        << text(rows[i]->dtype) << ": " << fmt("%.3f ms/step", rows[i]->gpu_ms_per_step) << " at "
        << pct(*rows[i]->roof_share) << " of its " << text(rows[i]->bound) << " roof\n";
  if (e.at_roof) out << "          " << text(e.at_roof) << "\n";
}

void write_host_and_comm(const Report& r, std::ostream& out, const Style& st) {
  const Host& h = r.host;
  if (h.launches_per_step) {
    out << st.bold("Host") << "      " << fmt("%.0f", *h.launches_per_step) << " launches/step";
    if (h.launch_mean_us) out << " (mean " << fmt("%.1f us", *h.launch_mean_us) << ")";
    if (h.launch_delay_median_us) out << ", median launch->start " << fmt("%.1f us", *h.launch_delay_median_us);
    out << ", " << fmt("%.1f", h.sync.count_per_step.value_or(0.0)) << " syncs/step ("
        << pct(h.sync.fraction.value_or(0.0)) << ")";
    if (h.allocator.calls_per_step.value_or(0.0) > 0)
      out << ", " << fmt("%.1f", *h.allocator.calls_per_step) << " allocator calls/step ("
          << fmt("%.2f ms", h.allocator.time_ms_per_step.value_or(0.0)) << ")";
    out << "\n";
    write_host_idle(r, out);
  }
  const Communication& c = r.communication;
  if (c.kernel_fraction.value_or(0.0) > 0)
    out << st.bold("Comm") << "      collectives " << pct(*c.kernel_fraction) << " of the step, exposed "
        << pct(c.exposed_fraction.value_or(0.0)) << "\n";
  else if (communication_unmeasured(r))
    out << st.bold("Comm") << "      not measured: " << text(c.not_measured_reason) << "\n";
}

// Recommendations: the material ones in order, minor fixes and notes folded to one line each.
void write_recommendations(const Report& r, std::ostream& out, const Style& st) {
  if (r.recommendations.empty()) {
    if (r.verdict.bottleneck != Bottleneck::kUnknown)
      out << "\n" << st.bold("Recommendations") << "\n  none: no rule of the catalog fires on this report\n";
    return;
  }
  out << "\n" << st.bold("Recommendations") << "\n";
  int i = 0;
  std::string minor, notes;
  for (const auto& rec : r.recommendations) {
    const std::string id = text(rec.id);
    if (rec.group == "minor") {
      minor += (minor.empty() ? "" : ", ") + id + " " +
               (rec.removable_share ? fmt("%.2fx", rec.estimated_speedup_max) : std::string("bound unknown"));
      continue;
    }
    if (rec.group == "note") {
      notes += "  note [" + id + "] " + text(rec.check_note) + "\n";
      continue;
    }
    out << "  " << ++i << ". [" << id << "] " << text(rec.title);
    // An unknown bound is said so, never shown as "up to 1.00x".
    out << (rec.removable_share ? "  (up to " + fmt("%.2fx", rec.estimated_speedup_max) + ")" : std::string("  (bound unknown)"));
    if (rec.evidence_level == "check") out << "  " << st.c("33", "CHECK");
    out << "\n";
    if (!rec.evidence.empty()) out << "     " << st.dim(text(rec.evidence[0])) << "\n";
    if (rec.evidence_level == "check") out << "     " << st.dim("check: " + text(rec.check_note)) << "\n";
    if (rec.group == "secondary") out << "     " << st.dim("does not address the bottleneck; listed for its bound") << "\n";
  }
  if (!minor.empty()) out << "  " << st.dim("minor (each under 3% of the step): " + minor) << "\n";
  if (!notes.empty()) out << st.dim(notes);
}

// Data quality: never silent.
void write_data_quality(const Report& r, std::ostream& out, const Style& st, bool verbose) {
  const DataQuality& q = r.data_quality;
  std::string dq;
  auto add = [&](int64_t v, const char* label) {
    if (v > 0) dq += (dq.empty() ? "" : ", ") + fmt("%.0f ", static_cast<double>(v)) + label;
  };
  for (const auto& c : model::kDataQualityCounters)
    if (c.label != nullptr) add(q.*c.member, c.label);
  std::string missing;
  for (const auto& s : r.source.missing) missing += (missing.empty() ? "" : ", ") + text(s);
  if (!dq.empty() || !missing.empty()) out << "\n";
  if (!dq.empty()) out << st.c("33", "Data quality") << ": " << dq << "\n";
  if (!missing.empty()) out << st.c("33", "Missing") << ": " << missing << "\n";
  if (verbose)
    for (const auto& s : q.notes) out << "  note: " << text(s) << "\n";
}

}  // namespace

std::string run_outcome(const RunInfo& run) {
  std::string ended;
  if (run.crash) ended = "crashed (" + run.signal.value_or("?") + ")";
  else if (run.signal) ended = "was killed by " + *run.signal;
  else if (run.exit_code) ended = "exited with code " + std::to_string(*run.exit_code);
  else ended = "ended";
  if (run.interrupted) return "stopped by SIGINT/SIGTERM to profile-train; it " + ended;
  return ended;
}

void write_text_summary(const Report& r, std::ostream& out, const TextOptions& options) {
  const Style st{options.color};
  const Bottleneck bottleneck = r.verdict.bottleneck;
  out << st.bold("VERDICT") << "  " << st.c(verdict_color(bottleneck), std::string(name_of(bottleneck))) << "  "
      << st.dim("(confidence " + fmt("%.2f", r.verdict.confidence) + ")") << "\n";
  if (!r.verdict.summary.empty()) out << "  " << text(r.verdict.summary) << "\n";
  for (const auto& e : r.verdict.evidence) out << "  - " << text(e) << "\n";
  out << "\n";
  write_plan(r, out, st);
  write_run(r, out, st);
  write_steps(r, out, st);
  write_breakdown(r, out, st);
  write_gpu(r, out, st);
  write_memory_budget_line(r, out);
  write_efficiency(r, out, st);
  write_host_and_comm(r, out, st);
  write_recommendations(r, out, st);
  write_data_quality(r, out, st, options.verbose);
}

}  // namespace profile_train::report
