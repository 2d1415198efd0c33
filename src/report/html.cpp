// report.html: one self-contained file (inline CSS, JS and SVG; a Content-Security-Policy that forbids any
// network access). Static parts (verdict, breakdown chart, tables, recommendations) are rendered here with
// every program-supplied string HTML-escaped; the timeline is drawn by the embedded script from JSON data
// that is escaped for a <script> block. Owner: report component.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "assets.h"
#include "profile_train/model/report.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/common/strings.h"
#include "profile_train/report/escape.h"
#include "html_common.h"
#include "profile_train/report/writers.h"
#include "timeline.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

using detail::fmt_bytes;
using detail::fmt_count;
using detail::fmt_ms;
using detail::fmt_pct;
using detail::fmt_us;
using detail::Html;
using detail::number_path;  // over the report's free-form facts
using detail::string_path;
using detail::style_of;
using detail::value_to_text;
using model::Report;
using nlohmann::json;

std::optional<double> as_number(std::optional<int64_t> v) {
  return v ? std::optional<double>(static_cast<double>(*v)) : std::nullopt;
}


// Axis tick label in ms with as many decimals as the tick spacing needs.
std::string tick_label(double v, double spacing) {
  const int decimals = spacing >= 1 ? 0 : spacing >= 0.1 ? 1 : spacing >= 0.01 ? 2 : 3;
  return format_fixed(v, decimals) + " ms";
}

// A run that used no GPU: no GPU activity in the trace, no device, and the Python shim saw CUDA uninitialized
// (facts.gpu.available false). Its report leaves the GPU panels out (they could only show dashes and zeros), and
// the GPU inputs (gpu_activity, deviceProperties) are not "missing" from it. A trace without that fact (a Kineto
// file) keeps them: there a missing GPU side may be the problem.
bool no_gpu_used(const Report& r) {
  if (r.source.has_gpu_activity || r.device) return false;
  if (!r.facts.is_object() || !r.facts.contains("gpu") || !r.facts["gpu"].is_object()) return false;
  const json& gpu = r.facts["gpu"];
  return gpu.contains("available") && gpu["available"].is_boolean() && !gpu["available"].get<bool>();
}

// `run`'s record of the machine's load, or nullptr.
const model::HostLoad* host_load_of(const Report& r) {
  return r.source.run && r.source.run->host_load ? &*r.source.run->host_load : nullptr;
}

bool is_gpu_input(const std::string& missing) { return missing == "gpu_activity" || missing == "deviceProperties"; }

bool is_gpu_role(Role role) {
  return role == Role::kKernel || role == Role::kMemcpy || role == Role::kMemset || role == Role::kRuntime;
}

// ---- sections -------------------------------------------------------------------------------------------

void write_banner(Html& h, const Report& r) {
  const std::string bottleneck(name_of(r.verdict.bottleneck));
  std::string css = "v-";
  for (char c : bottleneck) css += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  h.raw("<header class=\"banner ").text(css).raw("\" id=\"verdict\">\n<div class=\"brand\">profile-train report</div>\n");
  h.raw("<div class=\"verdict-line\"><span class=\"verdict-kicker\">Bottleneck</span><h1 id=\"verdict-bottleneck\" data-bottleneck=\"")
      .text(bottleneck).raw("\">").text(detail::bottleneck_label(r.verdict.bottleneck)).raw("</h1></div>\n");
  h.raw("<p class=\"verdict-summary\">").text(r.verdict.summary).raw("</p>\n");
  h.raw("<div class=\"kpis\">\n");
  auto kpi = [&](const char* id, const char* label, const std::string& value, const std::string& sub) {
    h.raw("<div class=\"kpi\" id=\"").raw(id).raw("\"><div class=\"kpi-label\">").raw(label)
        .raw("</div><div class=\"kpi-value\">").text(value).raw("</div>");
    if (!sub.empty()) h.raw("<div class=\"kpi-sub\">").text(sub).raw("</div>");
    h.raw("</div>\n");
  };
  const double conf = r.verdict.confidence;
  kpi("kpi-confidence", "Confidence", fmt_pct(conf), conf >= 0.75 ? "high" : conf >= 0.5 ? "medium" : "low");
  const double n = static_cast<double>(r.steps.count);
  std::string steps_sub = fmt_count(n) + " steps";
  if (const double st = static_cast<double>(r.steps.steady_state.count); st < n)
    steps_sub = fmt_count(st) + " steady-state of " + steps_sub;
  if (r.steps.stddev_ms) steps_sub += ", \xC2\xB1" + fmt_ms(r.steps.stddev_ms);
  kpi("kpi-step", "Mean step time", fmt_ms(r.steps.mean_ms), steps_sub);
  const model::HostLoad* host_load = host_load_of(r);
  if (!no_gpu_used(r)) {
    kpi("kpi-gpu-util", "GPU utilization", fmt_pct(r.gpu.utilization), "kernel time / step");
  } else if (host_load && host_load->cpus_used) {
    kpi("kpi-cpu-use", "CPUs busy", format_fixed(*host_load->cpus_used, 1),
        "of " + std::to_string(host_load->cpus) + " (CPU time / wall time)" +
            (host_load->oversubscribed ? "; machine busy with other work" : ""));
  }
  const auto total_memory = r.device ? as_number(r.device->total_memory_bytes) : std::nullopt;
  std::string dev = r.device ? r.device->name.value_or("") : "";
  if (dev.empty()) dev = string_path(r.facts, {"gpu", "name"}).value_or("");
  // No GPU name anywhere: say whether the run had no GPU at all or the trace just does not name it.
  if (dev.empty()) dev = r.source.has_gpu_activity ? "unknown" : "CPU (no GPU activity)";
  kpi("kpi-device", "Device", dev, total_memory ? fmt_bytes(total_memory) : "");
  h.raw("</div>\n");
  if (const auto& run = r.source.run)
    h.raw("<p class=\"hint run-command\" id=\"run-command\">Command <code>").text(command_line(run->command))
        .raw("</code> ").text(run_outcome(*run)).raw("</p>\n");
  if (!r.verdict.evidence.empty()) {
    h.raw("<ul class=\"verdict-evidence\">\n");
    for (const auto& e : r.verdict.evidence) h.raw("<li>").text(e).raw("</li>\n");
    h.raw("</ul>\n");
  }
  h.raw("</header>\n");
}

// Per-step breakdown in ms, by Role, for one per_step entry: its breakdown is fractions of that step (sum ~1)
// or, if a producer wrote milliseconds, taken as is.
std::vector<double> step_breakdown_ms(const model::StepRow& step) {
  std::vector<double> ms(kRoleCount, 0.0);
  double sum = 0;
  for (Role role : kAllRoles) {
    ms[static_cast<size_t>(role)] = step.breakdown.value_or_zero(role);
    sum += step.breakdown.value_or_zero(role);
  }
  if (sum <= 1.0001) for (auto& v : ms) v *= step.duration_ms;
  return ms;
}

void write_breakdown(Html& h, const Report& r) {
  h.raw("<section id=\"breakdown\"><h2>Step-time breakdown</h2>\n");
  h.raw("<p class=\"hint\">Each step's wall time carved by priority (kernel, memcpy, memset, communication, runtime, "
        "data loading, CPU; the rest is other/idle), as the TensorBoard profiler plugin did.</p>\n");
  struct Bar {
    std::string label;
    std::vector<double> ms;
    double total;
    bool mean;
    std::string excluded;  // why the step is left out of the steady state ("" when it is in)
  };
  std::vector<Bar> bars;
  const auto& per_step = r.steps.per_step;
  const size_t n_steps = per_step.size();
  const size_t max_bars = 48;
  const size_t stride = n_steps > max_bars ? (n_steps + max_bars - 1) / max_bars : 1;
  for (size_t i = 0; i < n_steps; i += stride) {
    const model::StepRow& s = per_step[i];
    bars.push_back(Bar{s.name, step_breakdown_ms(s), s.duration_ms, false, s.excluded.value_or("")});
  }
  // Mean bar: breakdown_ms, else breakdown fractions x mean step time.
  std::vector<double> mean_ms(kRoleCount, 0.0);
  bool have_mean = false;
  const auto mean_step = r.steps.mean_ms;
  for (Role role : kAllRoles) {
    const size_t i = static_cast<size_t>(role);
    if (auto v = r.breakdown_ms[role]) mean_ms[i] = *v, have_mean = true;
    else if (auto f = r.breakdown[role]; f && mean_step) mean_ms[i] = *f * *mean_step, have_mean = true;
  }
  if (have_mean) {
    double total = 0;
    for (double v : mean_ms) total += v;
    bars.push_back(Bar{"mean", mean_ms, mean_step.value_or(total), true, ""});
  }
  if (bars.empty()) {
    h.raw("<p class=\"na\" id=\"breakdown-chart-missing\">No step breakdown in this report.</p></section>\n");
    return;
  }
  double ymax = 0;
  for (const auto& b : bars) {
    double s = 0;
    for (double v : b.ms) s += v;
    ymax = std::max({ymax, s, b.total});
  }
  if (ymax <= 0) ymax = 1;
  // Nice axis maximum: 1, 2 or 5 x 10^k.
  const double mag = std::pow(10.0, std::floor(std::log10(ymax)));
  double nice = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= ymax) { nice = m * mag; break; }
  const double W = 960, H = 300, left = 64, right = 16, top = 14, bottom = 58;
  const double plot_w = W - left - right, plot_h = H - top - bottom;
  const double gap_before_mean = have_mean && bars.size() > 1 ? 24 : 0;
  const double slot = (plot_w - gap_before_mean) / static_cast<double>(bars.size());
  const double bar_w = std::max(2.0, std::min(44.0, slot * 0.72));
  h.raw("<div class=\"chart-wrap\"><svg id=\"breakdown-chart\" class=\"chart\" viewBox=\"0 0 ")
      .raw(format_fixed(W, 0)).raw(" ").raw(format_fixed(H, 0))
      .raw("\" role=\"img\" aria-label=\"Stacked step-time breakdown per step and mean\" data-bars=\"")
      .raw(std::to_string(bars.size())).raw("\">\n");
  for (int t = 0; t <= 5; ++t) {
    const double v = nice * t / 5.0;
    const double y = top + plot_h - plot_h * t / 5.0;
    h.raw("<line class=\"grid\" x1=\"").raw(format_fixed(left, 1)).raw("\" x2=\"").raw(format_fixed(W - right, 1))
        .raw("\" y1=\"").raw(format_fixed(y, 1)).raw("\" y2=\"").raw(format_fixed(y, 1)).raw("\"/>");
    h.raw("<text class=\"axis\" x=\"").raw(format_fixed(left - 6, 1)).raw("\" y=\"").raw(format_fixed(y + 4, 1))
        .raw("\" text-anchor=\"end\">").text(tick_label(v, nice / 5.0)).raw("</text>\n");
  }
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double cx = left + (b.mean ? gap_before_mean : 0) + slot * (static_cast<double>(i) + 0.5);
    const double x = cx - bar_w / 2;
    double y = top + plot_h;
    h.raw("<g class=\"bar").raw(b.mean ? " bar-mean" : "").raw(b.excluded.empty() ? "" : " bar-excluded\" opacity=\"0.4")
        .raw("\" data-step=\"").text(b.label).raw("\">");
    if (!b.excluded.empty()) h.raw("<title>").text(b.label).raw(": left out of the steady state (").text(b.excluded).raw(")</title>");
    for (Role role : kAllRoles) {
      const double ms = b.ms[static_cast<size_t>(role)];
      if (ms <= 0) continue;
      const double hh = plot_h * ms / nice;
      y -= hh;
      const double frac = b.total > 0 ? ms / b.total : 0;
      h.raw("<rect x=\"").raw(format_fixed(x, 1)).raw("\" y=\"").raw(format_fixed(y, 2)).raw("\" width=\"")
          .raw(format_fixed(bar_w, 1)).raw("\" height=\"").raw(format_fixed(hh, 2)).raw("\" fill=\"")
          .raw(style_of(role).color).raw("\" data-cat=\"").raw(name_of(role)).raw("\"><title>")
          .text(b.label).raw(" \xC2\xB7 ").raw(style_of(role).label).raw(": ").text(fmt_ms(ms))
          .raw(" (").text(fmt_pct(frac)).raw(")</title></rect>");
    }
    h.raw("</g>\n");
    // Labels: every bar when few, otherwise every k-th plus the mean.
    const size_t label_every = std::max<size_t>(1, bars.size() / 12);
    if (b.mean || i % label_every == 0) {
      std::string label = b.mean ? std::string("mean") : detail::truncate_utf8(b.label, 18);
      h.raw("<text class=\"axis").raw(b.mean ? " axis-mean" : "").raw("\" transform=\"translate(")
          .raw(format_fixed(cx + 4, 1)).raw(",").raw(format_fixed(top + plot_h + 8, 1))
          .raw(") rotate(-35)\" text-anchor=\"end\">").text(label).raw("</text>\n");
    }
  }
  h.raw("</svg></div>\n");
  if (stride > 1)
    h.raw("<p class=\"hint\">Showing one step in ").raw(std::to_string(stride)).raw(" (")
        .raw(std::to_string((n_steps + stride - 1) / stride)).raw(" of ").raw(std::to_string(n_steps)).raw(" steps).</p>\n");
  // Legend + table of the mean.
  h.raw("<table class=\"data breakdown-table\"><thead><tr><th>Category</th><th class=\"num\">Mean per step</th>"
        "<th class=\"num\">Share of step</th><th class=\"bar-col\"></th></tr></thead><tbody>\n");
  const bool cpu_only = no_gpu_used(r);
  for (Role role : kAllRoles) {
    const auto frac = r.breakdown[role];
    std::optional<double> ms = r.breakdown_ms[role];
    if (!ms && frac && mean_step) ms = *frac * *mean_step;
    // No GPU: its rows (and communication's, with no collective) would be rows of zeros.
    if (cpu_only && (is_gpu_role(role) || role == Role::kCommunication) && frac.value_or(0.0) == 0.0) continue;
    h.raw("<tr><td><span class=\"swatch\" style=\"background:").raw(style_of(role).color).raw("\"></span>")
        .raw(style_of(role).label).raw("</td><td class=\"num\">").text(fmt_ms(ms))
        .raw("</td><td class=\"num\">").text(fmt_pct(frac)).raw("</td><td class=\"bar-col\"><span class=\"hbar\" style=\"width:")
        .raw(format_fixed(std::clamp(frac.value_or(0.0), 0.0, 1.0) * 100.0, 1)).raw("%;background:")
        .raw(style_of(role).color).raw("\"></span></td></tr>\n");
  }
  h.raw("</tbody></table>\n</section>\n");
}

void write_timeline(Html& h, const Report& r, const trace::Trace* trace, json* timeline_out) {
  h.raw("<section id=\"timeline-section\"><h2>Timeline of a representative step</h2>\n");
  if (!trace) {
    h.raw("<p class=\"na\">No trace was given to the writer, so there is no timeline.</p></section>\n");
    return;
  }
  json tl = detail::build_timeline(r, *trace);
  if (tl.is_null()) {
    h.raw("<p class=\"na\">The trace has no CPU or GPU events to draw.</p></section>\n");
    return;
  }
  h.raw("<p class=\"hint\" id=\"timeline-caption\">").text(tl["window"]["label"].get<std::string>()).raw(" \xC2\xB7 ")
      .text(fmt_ms(static_cast<double>(tl["window"]["end_ns"].get<int64_t>() - tl["window"]["start_ns"].get<int64_t>()) / 1e6))
      .raw(" \xC2\xB7 ").text(fmt_count(static_cast<double>(tl["total"].get<int64_t>()))).raw(" events");
  if (tl["merged_blocks"].get<int64_t>() > 0)
    h.raw(", short neighbours merged into ").text(fmt_count(static_cast<double>(tl["merged_blocks"].get<int64_t>())))
        .raw(" blocks (").text(fmt_count(static_cast<double>(tl["merged_events"].get<int64_t>()))).raw(" events)");
  const int64_t dropped = tl["dropped_depth"].get<int64_t>() + tl["dropped_track_events"].get<int64_t>() +
                          tl["dropped_budget"].get<int64_t>();
  if (dropped > 0) h.raw(", ").text(fmt_count(static_cast<double>(dropped))).raw(" not drawn (deep nesting / too many tracks)");
  h.raw(". Wheel to zoom, drag to pan, double-click to reset, hover for details.</p>\n");
  h.raw("<div class=\"tl-toolbar\"><button type=\"button\" id=\"tl-reset\">Reset zoom</button>"
        "<span id=\"tl-range\" class=\"hint\"></span><span class=\"tl-legend\" id=\"tl-legend\"></span></div>\n");
  h.raw("<div id=\"timeline\" class=\"timeline\" data-drawn=\"").raw(std::to_string(tl["drawn"].get<int64_t>()))
      .raw("\"><canvas id=\"tl-canvas\"></canvas><div id=\"tl-tip\" class=\"tl-tip\" hidden></div></div>\n");
  h.raw("<noscript><p class=\"na\">The timeline needs JavaScript.</p></noscript>\n</section>\n");
  *timeline_out = std::move(tl);
}

void write_metrics(Html& h, const Report& r) {
  struct M {
    const char* label;
    std::optional<double> value;
    std::string (*fmt)(std::optional<double>);
    bool gpu;  // about the GPU or CUDA calls: left out of a run that used no GPU
  };
  const M metrics[] = {
      {"GPU busy (kernel | copy | memset)", r.gpu.busy_fraction, fmt_pct, true},
      {"GPU idle", r.gpu.idle ? std::optional<double>(r.gpu.idle->fraction) : std::nullopt, fmt_pct, true},
      {"SM efficiency", r.gpu.sm_efficiency, fmt_pct, true},
      {"Achieved occupancy", r.gpu.achieved_occupancy, fmt_pct, true},
      {"Kernels per step", r.gpu.kernels_per_step, fmt_count, true},
      {"Median kernel", r.gpu.kernel_median_us, fmt_us, true},
      {"Short kernels (< 10 µs)", r.gpu.short_kernel_fraction, fmt_pct, true},
      {"Tensor-core kernel time", r.gpu.tensor_core_kernel_share, fmt_pct, true},
      {"FP32 tensor-core-eligible time", r.gpu.fp32_eligible_kernel_share, fmt_pct, true},
      {"Launches per step", r.host.launches_per_step, fmt_count, true},
      {"Mean launch call", r.host.launch_mean_us, fmt_us, true},
      {"Host syncs per step", r.host.sync.count_per_step, fmt_count, true},
      {"Host sync time / step", r.host.sync.time_ms_per_step, fmt_ms, true},
      {"Exposed communication", r.communication.exposed_fraction, fmt_pct, false},
  };
  const bool cpu_only = no_gpu_used(r);
  const model::HostLoad* host_load = host_load_of(r);
  if (cpu_only && !host_load && !r.communication.exposed_fraction) return;  // nothing to show
  h.raw("<section id=\"metrics\"><h2>Key metrics</h2><dl class=\"metrics\">\n");
  if (cpu_only && host_load) {
    // What a run on the CPU has instead: how busy the machine was, and the command's share of it.
    const auto dd = [&](const char* label, const std::string& value, bool warn) {
      h.raw("<div").raw(warn ? " class=\"warn\"" : "").raw("><dt>").raw(label).raw("</dt><dd>").text(value).raw("</dd></div>\n");
    };
    dd("CPUs online", std::to_string(host_load->cpus), false);
    dd("CPUs busy with the command", host_load->cpus_used ? format_fixed(*host_load->cpus_used, 2) : "\xE2\x80\x94", false);
    dd("Load average (1 min), start \xE2\x86\x92 end",
       (host_load->load_1m_start ? format_fixed(*host_load->load_1m_start, 2) : "\xE2\x80\x94") + " \xE2\x86\x92 " +
           (host_load->load_1m_end ? format_fixed(*host_load->load_1m_end, 2) : "\xE2\x80\x94"),
       host_load->oversubscribed);
  }
  for (const auto& m : metrics) {
    const auto& v = m.value;
    if (cpu_only && (m.gpu || !v)) continue;
    h.raw("<div").raw(v ? "" : " class=\"na\"").raw("><dt>").raw(m.label).raw("</dt><dd>").text(m.fmt(v)).raw("</dd></div>\n");
  }
  h.raw("</dl></section>\n");
}

void flatten_facts(const json& j, const std::string& prefix, std::vector<std::pair<std::string, std::string>>* out) {
  if (j.is_object()) {
    for (auto it = j.begin(); it != j.end(); ++it)
      flatten_facts(it.value(), prefix.empty() ? it.key() : prefix + "." + it.key(), out);
  } else {
    out->emplace_back(prefix, value_to_text(j));
  }
}

// data_quality's counters and flags as report.json names them, in the order of the keys there (sorted).
// `problem`: a non-zero count or a true flag is highlighted; totals and skipped flow events (joins use
// correlation ids instead) are informational.
struct QualityItem {
  const char* key;
  std::optional<int64_t> count;  // unset for the flag, and for agent_internal_errors when absent
  std::optional<bool> flag;
  bool problem;
};

std::vector<QualityItem> quality_items(const model::DataQuality& q) {
  std::vector<QualityItem> items;
  for (const auto& c : model::kDataQualityCounters) items.push_back({c.key, q.*c.member, {}, c.problem});
  if (q.agent_internal_errors) items.push_back({"agent_internal_errors", q.agent_internal_errors, {}, true});
  items.push_back({"missing_device_properties", {}, q.missing_device_properties, true});
  std::sort(items.begin(), items.end(),
            [](const QualityItem& a, const QualityItem& b) { return std::string_view(a.key) < std::string_view(b.key); });
  return items;
}

void write_facts_and_quality(Html& h, const Report& r) {
  h.raw("<section id=\"facts\"><h2>Configuration facts</h2>\n");
  std::vector<std::pair<std::string, std::string>> facts;
  flatten_facts(r.facts, "", &facts);
  if (facts.empty()) {
    h.raw("<p class=\"na\">No configuration facts were recorded or inferred.</p>\n");
  } else {
    h.raw("<table class=\"data compact\" id=\"facts-table\"><tbody>\n");
    for (const auto& [k, v] : facts)
      h.raw("<tr><th>").text(k).raw("</th><td><code>").text(detail::truncate_utf8(v, 400)).raw("</code></td></tr>\n");
    h.raw("</tbody></table>\n");
  }
  h.raw("</section>\n<section id=\"data-quality\"><h2>Data quality</h2>\n");
  h.raw("<dl class=\"metrics dq\">\n");
  const bool cpu_only = no_gpu_used(r);
  for (const QualityItem& item : quality_items(r.data_quality)) {
    if (cpu_only && std::string_view(item.key) == "missing_device_properties") continue;  // no GPU to describe
    const bool warn = item.problem && (item.count ? *item.count > 0 : item.flag.value_or(false));
    h.raw("<div").raw(warn ? " class=\"warn\"" : "").raw("><dt>").text(item.key).raw("</dt><dd>")
        .text(item.count ? fmt_count(static_cast<double>(*item.count)) : *item.flag ? "true" : "false")
        .raw("</dd></div>\n");
  }
  h.raw("</dl>\n");
  std::vector<std::string> notes = r.data_quality.notes;
  for (const auto& e : r.source.missing)
    if (!cpu_only || !is_gpu_input(e)) notes.push_back("Missing from the input: " + e);
  if (const auto& g = r.source.gpu_capture_status; g && !g->empty()) notes.push_back("GPU capture: " + *g);
  if (notes.empty()) {
    h.raw("<p class=\"hint\">No data-quality notes.</p>\n");
  } else {
    h.raw("<ul class=\"notes\" id=\"dq-notes\">");
    for (const auto& n : notes) h.raw("<li>").text(n).raw("</li>");
    h.raw("</ul>\n");
  }
  h.raw("</section>\n");
}

void write_footer(Html& h, const Report& r) {
  h.raw("<footer><div>Generated by ").text(r.tool.name).raw(" ").text(r.tool.version).raw(" \xC2\xB7 report schema ")
      .text(r.schema_version);
  if (const auto& f = r.source.format) h.raw(" \xC2\xB7 input format ").text(*f);
  if (const auto& p = r.source.producer; p && !p->empty()) h.raw(" (").text(*p).raw(")");
  h.raw(" \xC2\xB7 steps by ").text(r.source.step_detection);
  h.raw("</div><div class=\"files\">");
  for (const auto& f : r.source.files) h.raw("<code>").text(f).raw("</code> ");
  h.raw("</div></footer>\n");
}

}  // namespace

std::string render_html(const Report& report, const trace::Trace* trace) {
  Html h;
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        // No network: everything is inline; the policy makes any stray URL fail instead of fetching.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'; img-src data:\">\n<title>profile-train \xE2\x80\x94 ")
      .text(detail::bottleneck_label(report.verdict.bottleneck)).raw("</title>\n<script>")
      .raw(detail::asset_head_js()).raw("</script>\n<style>").raw(detail::asset_report_css()).raw("</style>\n</head>\n");
  h.raw("<body data-render=\"pending\">\n");
  write_banner(h, report);
  // A run that used no GPU has no kernels, copies, efficiency or GPU memory panels (no_gpu_used).
  const bool gpu_panels = !no_gpu_used(report);
  h.raw("<nav class=\"toc\"><a href=\"#plan\">Plan</a><a href=\"#breakdown\">Breakdown</a><a href=\"#steps\">Steps</a><a href=\"#timeline-section\">Timeline</a>");
  if (gpu_panels) h.raw("<a href=\"#kernels\">Kernels</a>");
  if (report.compilation) h.raw("<a href=\"#compilation\">Compilation</a>");
  if (report.collectives) h.raw("<a href=\"#collectives\">Collectives</a>");
  h.raw("<a href=\"#operators\">Operators</a>");
  if (gpu_panels) h.raw("<a href=\"#efficiency\">Efficiency</a><a href=\"#copies\">Copies</a><a href=\"#memory\">Memory</a>");
  if (report.memory_budget) h.raw("<a href=\"#memory-budget\">Memory budget</a>");
  h.raw("<a href=\"#recommendations\">Recommendations</a><a href=\"#data-quality\">Data quality</a></nav>\n<main>\n");
  detail::write_plan(h, report);
  write_breakdown(h, report);
  detail::write_steps(h, report);
  detail::write_compilation(h, report);
  detail::write_collectives(h, report);
  detail::write_host_idle(h, report);
  detail::write_recommendations(h, report);
  json timeline;
  write_timeline(h, report, trace, &timeline);
  if (gpu_panels) {
    h.raw("<div class=\"two-col\">\n");
    write_metrics(h, report);
    detail::write_memory(h, report);
    h.raw("</div>\n");
  } else {
    write_metrics(h, report);
  }
  detail::write_memory_timeline(h, report);
  detail::write_memory_budget(h, report);
  if (gpu_panels) {
    detail::write_copies(h, report);
    detail::write_kernels(h, report);
  }
  detail::write_operators(h, report);
  detail::write_efficiency(h, report);
  write_facts_and_quality(h, report);
  h.raw("</main>\n");
  write_footer(h, report);
  json data = {{"timeline", timeline}};
  h.raw("<script type=\"application/json\" id=\"pt-data\">").raw(detail::script_safe_json(data)).raw("</script>\n");
  h.raw("<script>").raw(detail::asset_report_js()).raw("</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

Status write_html(const Report& report, const trace::Trace* trace, const std::filesystem::path& path) {
  std::string html;
  try {
    html = render_html(report, trace);
  } catch (const std::exception& e) {
    return Internal(path.string() + ": cannot render the HTML report: " + e.what());
  }
  return write_file_atomic(path, html);
}

}  // namespace profile_train::report
