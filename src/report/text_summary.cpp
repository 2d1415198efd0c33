// Terminal summary of a report: the verdict first, then the figures that support it. A sink: it only reads the
// report JSON (never the trace) and writes to the injected stream. ANSI colors only when options.color.
#include <cmath>
#include <cstdio>
#include <string>

#include "profile_train/report/writers.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/terminal.h"

namespace profile_train::report {

using nlohmann::json;

namespace {

const json* at(const json& j, std::initializer_list<std::string_view> path) { return find_path(j, path); }
bool has_num(const json& j, std::initializer_list<std::string_view> path) { return number_path(j, path).has_value(); }
double num(const json& j, std::initializer_list<std::string_view> path) { return number_path(j, path).value_or(0.0); }
// Strings come from the trace (kernel and range names, device names) or from rule files: made inert for the
// terminal here, so no escape sequence of theirs reaches it.
std::string str(const json& j, std::initializer_list<std::string_view> path, const std::string& dflt = "") {
  return terminal_safe(string_path(j, path).value_or(dflt));
}
std::string text(const json& s) { return terminal_safe(s.get<std::string>()); }

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}
std::string pct(double f) { return fmt("%.1f%%", 100.0 * f); }
std::string opt_pct(const json& r, std::initializer_list<std::string_view> path) {
  return has_num(r, path) ? pct(num(r, path)) : "n/a";
}
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

const char* verdict_color(const std::string& b) {
  if (b == "gpu_compute") return "1;32";  // the GPU is the limit: the expected state
  if (b == "unknown") return "1;37";
  return "1;33";
}

// The plan: the first fixes in order with the combined bound, before any figure.
void write_plan(const json& r, std::ostream& out, const Style& st) {
  const json* plan = at(r, {"plan"});
  if (plan == nullptr || !plan->is_object()) return;
  const json* steps = at(*plan, {"steps"});
  const bool any = steps != nullptr && steps->is_array() && !steps->empty();
  if (any) {
    out << st.bold("PLAN") << "  " << steps->size() << " step(s), together up to "
        << st.bold(fmt("%.2fx", num(*plan, {"combined_speedup_max"}))) << " faster step "
        << st.dim("(bounds, successive Amdahl)") << "\n";
    int i = 0;
    for (const auto& s : *steps)
      out << "  " << ++i << ". [" << str(s, {"id"}) << "] " << str(s, {"title"}) << "  "
          << st.dim("alone up to " + fmt("%.2fx", num(s, {"speedup_max_alone"})) + ", cumulative " +
                    fmt("%.2fx", num(s, {"cumulative_speedup_max"})))
          << "\n";
  }
  if (auto why = string_path(*plan, {"no_fix_reason"})) out << (any ? "  " : "") << st.c("33", "No fix for the bottleneck") << ": " << terminal_safe(*why) << "\n";
  if (any || string_path(*plan, {"no_fix_reason"})) out << "\n";
}

void write_host_idle(const json& r, std::ostream& out) {
  const json* a = at(r, {"host", "idle_activity"});
  if (a == nullptr || !a->is_object() || num(*a, {"fraction"}) <= 0) return;
  static const std::pair<const char*, const char*> kParts[] = {
      {"allocator", "allocator"}, {"memcpy_api", "memcpy API"}, {"sync", "sync"}, {"launch", "launch API"},
      {"other_runtime", "other runtime"}, {"dataloader", "DataLoader"}, {"operators", "operators"}, {"other", "other"}};
  out << "          while the GPU idles (" << pct(num(*a, {"fraction"})) << " of the step) the host is in:";
  std::string sep = " ";
  for (const auto& [key, label] : kParts) {
    const double v = num(*a, {key});
    if (v < 0.0005) continue;
    out << sep << label << " " << pct(v);
    sep = ", ";
  }
  out << "\n";
}

}  // namespace

// The steps left out of the steady state: which, why, how long (the first few, then a count).
void write_excluded_steps(const json& r, std::ostream& out, const Style& st) {
  const json* ex = at(r, {"steps", "steady_state", "excluded"});
  if (ex == nullptr || !ex->is_array() || ex->empty()) return;
  const double n = num(r, {"steps", "steady_state", "excluded_count"});
  out << "          excluded " << fmt("%.0f", n) << " step(s), " << fmt("%.2f", num(r, {"steps", "steady_state", "excluded_ms"}))
      << " ms (mean over all steps " << fmt("%.2f", num(r, {"steps", "steady_state", "mean_all_ms"})) << " ms):";
  constexpr size_t kShown = 5;
  for (size_t i = 0; i < ex->size() && i < kShown; ++i) {
    const json& x = (*ex)[i];
    out << (i ? ", " : " ") << "step " << fmt("%.0f", num(x, {"index"})) << " " << text(x.value("reason", std::string()))
        << " " << fmt("%.2f", num(x, {"duration_ms"})) << " ms";
  }
  if (n > static_cast<double>(std::min(ex->size(), kShown))) out << st.dim(", ...");
  out << "\n";
}

// Forward / backward / optimizer / data wait of the step on the training thread's host side.
void write_phases(const json& r, std::ostream& out, const Style& st) {
  const json* p = at(r, {"phases", "ms_per_step"});
  if (p == nullptr || !p->is_object()) return;
  out << st.bold("Phases") << "    (host, training thread, per step)";
  for (const char* k : {"forward", "backward", "optimizer", "data_wait", "other"}) {
    if (!has_num(r, {"phases", "ms_per_step", k})) continue;
    out << "  " << k << " " << fmt("%.2f", num(r, {"phases", "ms_per_step", k})) << " ms ("
        << fmt("%.1f", 100.0 * num(r, {"phases", "fraction", k})) << "%)";
  }
  out << "\n";
}

void write_text_summary(const json& r, std::ostream& out, const TextOptions& options) {
  const Style st{options.color};
  const std::string bottleneck = str(r, {"verdict", "bottleneck"}, "unknown");
  out << st.bold("VERDICT") << "  " << st.c(verdict_color(bottleneck), bottleneck) << "  "
      << st.dim("(confidence " + fmt("%.2f", num(r, {"verdict", "confidence"})) + ")") << "\n";
  const std::string summary = str(r, {"verdict", "summary"});
  if (!summary.empty()) out << "  " << summary << "\n";
  if (const json* ev = at(r, {"verdict", "evidence"}); ev != nullptr && ev->is_array())
    for (const auto& e : *ev)
      if (e.is_string()) out << "  - " << text(e) << "\n";
  out << "\n";
  write_plan(r, out, st);

  // Steps.
  const double count = num(r, {"steps", "count"});
  const double steady = has_num(r, {"steps", "steady_state", "count"}) ? num(r, {"steps", "steady_state", "count"}) : count;
  if (has_num(r, {"steps", "mean_ms"})) {
    out << st.bold("Step") << "      " << fmt("%.2f", num(r, {"steps", "mean_ms"})) << " ms mean"
        << " (median " << fmt("%.2f", num(r, {"steps", "median_ms"})) << ", min " << fmt("%.2f", num(r, {"steps", "min_ms"}))
        << ", max " << fmt("%.2f", num(r, {"steps", "max_ms"})) << ") over ";
    if (steady < count) out << fmt("%.0f", steady) << " steady-state of ";
    out << fmt("%.0f", count) << " step(s) [" << str(r, {"source", "step_detection"}) << "]\n";
    write_excluded_steps(r, out, st);
  } else {
    out << st.bold("Step") << "      no step window\n";
  }
  write_phases(r, out, st);

  // A distributed run whose collectives the trace could not see: say so instead of printing 0%.
  const json* measured = at(r, {"communication", "measured"});
  const json* world = at(r, {"source", "distributed", "world_size"});
  const bool comm_unmeasured = measured != nullptr && measured->is_boolean() && !measured->get<bool>() &&
                               world != nullptr && world->is_number() && world->get<double>() > 1;
  // Breakdown bar chart.
  if (has_num(r, {"breakdown", "kernel"})) {
    out << st.bold("Breakdown") << " (share of the step, TensorBoard-plugin carving)\n";
    static const char* kRoles[] = {"kernel", "memcpy", "memset", "communication", "runtime", "data_loading", "cpu", "other"};
    constexpr int kWidth = 30;
    for (const char* role : kRoles) {
      if (std::string(role) == "communication" && comm_unmeasured) {
        out << "  communication  not measured (see Comm below)\n";
        continue;
      }
      const double f = num(r, {"breakdown", role});
      const int n = static_cast<int>(std::lround(f * kWidth));
      std::string bar(static_cast<size_t>(std::max(0, std::min(kWidth, n))), '#');
      bar += std::string(static_cast<size_t>(kWidth) - bar.size(), '.');
      char line[160];
      std::snprintf(line, sizeof line, "  %-14s %6.1f%%  ", role, 100.0 * f);
      out << line << (f >= 0.15 ? st.c("36", bar) : bar) << "  " << fmt("%.2f ms", num(r, {"breakdown_ms", role})) << "\n";
    }
  }

  // GPU.
  if (has_num(r, {"gpu", "utilization"})) {
    std::string dev = str(r, {"device", "name"}, "GPU");
    const std::string cc = str(r, {"device", "compute_capability"});
    if (!cc.empty()) dev += " (sm " + cc + ")";
    out << st.bold("GPU") << "       " << dev << ": utilization " << pct(num(r, {"gpu", "utilization"}))
        << ", est. SM efficiency " << opt_pct(r, {"gpu", "sm_efficiency"}) << ", occupancy "
        << opt_pct(r, {"gpu", "achieved_occupancy"}) << ", tensor-core kernels " << opt_pct(r, {"gpu", "tensor_core_kernel_share"})
        << "\n";
    out << "          " << fmt("%.0f", num(r, {"gpu", "kernels_per_step"})) << " kernels/step (median "
        << fmt("%.1f us", num(r, {"gpu", "kernel_median_us"})) << "), FP32 TC-eligible "
        << opt_pct(r, {"gpu", "fp32_eligible_kernel_share"}) << ", idle " << opt_pct(r, {"gpu", "idle", "fraction"})
        << " of the step (host wait " << opt_pct(r, {"gpu", "idle", "host_wait"}) << ", kernel wait "
        << opt_pct(r, {"gpu", "idle", "kernel_wait"}) << ", other " << opt_pct(r, {"gpu", "idle", "other"}) << ")\n";
    for (const char* dir : {"h2d", "d2h", "d2d"}) {
      if (num(r, {"gpu", "memcpy", dir, "count_per_step"}) <= 0) continue;
      out << "          " << dir << ": " << fmt("%.1f", num(r, {"gpu", "memcpy", dir, "count_per_step"})) << " copies/step, "
          << bytes(num(r, {"gpu", "memcpy", dir, "bytes_per_step"})) << "/step, "
          << fmt("%.2f ms", num(r, {"gpu", "memcpy", dir, "time_ms_per_step"}));
      if (has_num(r, {"gpu", "memcpy", dir, "bandwidth_gbps"}))
        out << ", " << fmt("%.1f GB/s", num(r, {"gpu", "memcpy", dir, "bandwidth_gbps"}));
      if (has_num(r, {"gpu", "memcpy", dir, "pageable_fraction"}))
        out << ", " << pct(num(r, {"gpu", "memcpy", dir, "pageable_fraction"})) << " pageable";
      out << "\n";
    }
    if (has_num(r, {"gpu", "memory", "peak_allocated_bytes"})) {
      out << "          memory peak " << bytes(num(r, {"gpu", "memory", "peak_allocated_bytes"}));
      if (has_num(r, {"gpu", "memory", "peak_fraction"})) out << " (" << pct(num(r, {"gpu", "memory", "peak_fraction"})) << " of the device)";
      out << "\n";
    }
  } else {
    out << st.bold("GPU") << "       no GPU activity in the trace\n";
  }
  if (has_num(r, {"host", "launches_per_step"})) {
    out << st.bold("Host") << "      " << fmt("%.0f", num(r, {"host", "launches_per_step"})) << " launches/step";
    if (has_num(r, {"host", "launch_mean_us"})) out << " (mean " << fmt("%.1f us", num(r, {"host", "launch_mean_us"})) << ")";
    if (has_num(r, {"host", "launch_delay_median_us"}))
      out << ", median launch->start " << fmt("%.1f us", num(r, {"host", "launch_delay_median_us"}));
    out << ", " << fmt("%.1f", num(r, {"host", "sync", "count_per_step"})) << " syncs/step ("
        << pct(num(r, {"host", "sync", "fraction"})) << ")";
    if (num(r, {"host", "allocator", "calls_per_step"}) > 0)
      out << ", " << fmt("%.1f", num(r, {"host", "allocator", "calls_per_step"})) << " allocator calls/step ("
          << fmt("%.2f ms", num(r, {"host", "allocator", "time_ms_per_step"})) << ")";
    out << "\n";
    write_host_idle(r, out);
  }
  if (has_num(r, {"communication", "kernel_fraction"}) && num(r, {"communication", "kernel_fraction"}) > 0)
    out << st.bold("Comm") << "      collectives " << pct(num(r, {"communication", "kernel_fraction"})) << " of the step, exposed "
        << pct(num(r, {"communication", "exposed_fraction"})) << "\n";
  else if (comm_unmeasured)
    out << st.bold("Comm") << "      not measured: " << str(r, {"communication", "not_measured_reason"})
        << "\n";

  // Recommendations: the material ones in order, minor fixes and notes folded to one line each.
  if (const json* recs = at(r, {"recommendations"}); recs != nullptr && recs->is_array() && !recs->empty()) {
    out << "\n" << st.bold("Recommendations") << "\n";
    int i = 0;
    std::string minor, notes;
    for (const auto& rec : *recs) {
      const std::string group = str(rec, {"group"});
      const std::string id = str(rec, {"id"});
      if (group == "minor") {
        minor += (minor.empty() ? "" : ", ") + id + (has_num(rec, {"estimated_speedup_max"}) ? " " + fmt("%.2fx", num(rec, {"estimated_speedup_max"})) : "");
        continue;
      }
      if (group == "note") {
        notes += "  note [" + id + "] " + str(rec, {"check_note"}) + "\n";
        continue;
      }
      out << "  " << ++i << ". [" << id << "] " << str(rec, {"title"});
      if (has_num(rec, {"estimated_speedup_max"})) out << "  (up to " << fmt("%.2fx", num(rec, {"estimated_speedup_max"})) << ")";
      if (str(rec, {"evidence_level"}) == "check") out << "  " << st.c("33", "CHECK");
      out << "\n";
      if (const json* ev = at(rec, {"evidence"}); ev != nullptr && ev->is_array() && !ev->empty() && (*ev)[0].is_string())
        out << "     " << st.dim(text((*ev)[0])) << "\n";
      if (str(rec, {"evidence_level"}) == "check") out << "     " << st.dim("check: " + str(rec, {"check_note"})) << "\n";
      if (group == "secondary") out << "     " << st.dim("does not address the bottleneck; listed for its bound") << "\n";
    }
    if (!minor.empty()) out << "  " << st.dim("minor (each under 3% of the step): " + minor) << "\n";
    if (!notes.empty()) out << st.dim(notes);
  } else if (str(r, {"verdict", "bottleneck"}, "unknown") != "unknown") {
    out << "\n" << st.bold("Recommendations") << "\n  none: no rule of the catalog fires on this report\n";
  }

  // Data quality: never silent.
  std::string dq;
  auto add = [&](const char* key, const char* label) {
    const double v = num(r, {"data_quality", key});
    if (v > 0) dq += (dq.empty() ? "" : ", ") + fmt("%.0f ", v) + label;
  };
  add("malformed_events", "malformed events");
  add("unknown_categories", "unknown categories");
  add("negative_durations", "negative durations");
  add("clock_anomalies", "clock anomalies");
  add("unmatched_correlations", "unmatched correlations");
  add("dropped_records", "dropped records");
  std::string missing;
  if (const json* m = at(r, {"source", "missing"}); m != nullptr && m->is_array())
    for (const auto& s : *m)
      if (s.is_string()) missing += (missing.empty() ? "" : ", ") + text(s);
  if (!dq.empty() || !missing.empty()) out << "\n";
  if (!dq.empty()) out << st.c("33", "Data quality") << ": " << dq << "\n";
  if (!missing.empty()) out << st.c("33", "Missing") << ": " << missing << "\n";
  if (options.verbose)
    if (const json* n = at(r, {"data_quality", "notes"}); n != nullptr && n->is_array())
      for (const auto& s : *n)
        if (s.is_string()) out << "  note: " << text(s) << "\n";
}

}  // namespace profile_train::report
