// report.html's memory section (the report's `memory`): per device, allocated and reserved over the capture with
// the steps and phases shaded and the peak marked (inline SVG, like the other charts), what was live at the peak,
// and the per-operator table of the TensorBoard plugin's memory view.
#include <algorithm>
#include <cmath>
#include <string>

#include "html_common.h"

namespace profile_train::report::detail {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

using model::MemoryBudget;
using model::MemoryDevice;
using model::Report;

const char* phase_fill(const std::string& phase) {
  if (phase == "forward") return "#dbeafe";
  if (phase == "backward") return "#fde7d4";
  if (phase == "optimizer") return "#dcf2e0";
  return "#eeeeee";
}


void write_chart(Html& h, const Report& r, const MemoryDevice& d) {
  const auto& tl = d.timeline;
  if (tl.t_ms.empty()) return;
  double t_lo = tl.t_ms.front(), t_hi = tl.t_ms.back();
  for (const auto& s : r.memory->steps) t_lo = std::min(t_lo, s.start_ms), t_hi = std::max(t_hi, s.end_ms);
  if (t_hi <= t_lo) t_hi = t_lo + 1;
  double ymax = static_cast<double>(std::max(d.peak_allocated_bytes, d.peak_reserved_bytes.value_or(0)));
  if (ymax <= 0) ymax = 1;
  const double mag = std::pow(10.0, std::floor(std::log10(ymax)));
  double nice = mag;
  for (double m : {1.0, 2.0, 2.5, 5.0, 10.0})
    if (m * mag >= ymax) { nice = m * mag; break; }
  const double W = 960, H = 260, left = 74, right = 16, top = 14, bottom = 34;
  const double pw = W - left - right, ph = H - top - bottom;
  auto X = [&](double t) { return left + pw * (t - t_lo) / (t_hi - t_lo); };
  auto Y = [&](double b) { return top + ph - ph * b / nice; };
  h.raw("<div class=\"chart-wrap\"><svg class=\"chart mem-chart\" id=\"memory-chart-").text(d.device)
      .raw("\" viewBox=\"0 0 960 260\" role=\"img\" aria-label=\"Allocated and reserved memory on ").text(d.device)
      .raw(" over the capture\">\n");
  for (const auto& s : r.memory->phases) {
    const double x0 = X(std::max(s.start_ms, t_lo)), x1 = X(std::min(s.end_ms, t_hi));
    if (x1 <= x0) continue;
    h.raw("<rect class=\"mem-phase\" x=\"").raw(f1(x0)).raw("\" y=\"").raw(f1(top)).raw("\" width=\"")
        .raw(format_fixed(std::max(0.5, x1 - x0), 2)).raw("\" height=\"").raw(f1(ph)).raw("\" fill=\"")
        .raw(phase_fill(s.name)).raw("\" data-phase=\"").text(s.name).raw("\"><title>").text(s.name).raw("</title></rect>");
  }
  h.raw("\n");
  for (int k = 0; k <= 4; ++k) {
    const double v = nice * k / 4.0, y = Y(v);
    h.raw("<line class=\"grid\" x1=\"").raw(f1(left)).raw("\" x2=\"").raw(f1(W - right)).raw("\" y1=\"").raw(f1(y))
        .raw("\" y2=\"").raw(f1(y)).raw("\"/><text class=\"axis\" x=\"").raw(f1(left - 6)).raw("\" y=\"").raw(f1(y + 4))
        .raw("\" text-anchor=\"end\">").text(fmt_bytes(v)).raw("</text>\n");
  }
  const size_t label_every = std::max<size_t>(1, r.memory->steps.size() / 10);
  for (size_t i = 0; i < r.memory->steps.size(); ++i) {
    const auto& s = r.memory->steps[i];
    const double x = X(s.start_ms);
    h.raw("<line class=\"mem-step\" x1=\"").raw(f1(x)).raw("\" x2=\"").raw(f1(x)).raw("\" y1=\"").raw(f1(top))
        .raw("\" y2=\"").raw(f1(top + ph)).raw("\" stroke=\"#9aa3b2\" stroke-dasharray=\"2,3\"/>");
    if (i % label_every == 0)
      h.raw("<text class=\"axis\" x=\"").raw(f1(x + 3)).raw("\" y=\"").raw(f1(H - 12)).raw("\">")
          .text(truncate_utf8(s.name, 20)).raw("</text>");
  }
  h.raw("\n");
  // Step plots: the value holds until the next sample.
  auto path = [&](auto value_at, const char* cls, const char* stroke, const char* dash) {
    std::string pts;
    bool open = false;
    double last_y = 0;
    for (size_t i = 0; i < tl.t_ms.size(); ++i) {
      const auto v = value_at(i);
      if (!v) { open = false; continue; }
      const double x = X(tl.t_ms[i]), y = Y(static_cast<double>(*v));
      if (!open) pts += (pts.empty() ? "M" : " M") + f1(x) + "," + format_fixed(y, 2);
      else pts += " L" + f1(x) + "," + format_fixed(last_y, 2) + " L" + f1(x) + "," + format_fixed(y, 2);
      open = true;
      last_y = y;
    }
    if (pts.empty()) return;
    h.raw("<path class=\"").raw(cls).raw("\" d=\"").raw(pts).raw("\" fill=\"none\" stroke=\"").raw(stroke)
        .raw("\" stroke-width=\"1.6\"").raw(dash).raw("/>\n");
  };
  path([&](size_t i) { return tl.reserved_bytes[i]; }, "mem-reserved", "#8b5cf6", " stroke-dasharray=\"5,3\"");
  path([&](size_t i) { return std::optional<int64_t>(tl.allocated_bytes[i]); }, "mem-allocated", "#2563eb", "");
  if (d.peak_time_ms) {
    const double x = X(*d.peak_time_ms), y = Y(static_cast<double>(d.peak_allocated_bytes));
    h.raw("<circle class=\"mem-peak\" cx=\"").raw(f1(x)).raw("\" cy=\"").raw(f1(y))
        .raw("\" r=\"4.5\" fill=\"#dc2626\"><title>peak ").text(fmt_bytes(double(d.peak_allocated_bytes)))
        .raw("</title></circle><text class=\"axis\" x=\"").raw(f1(std::min(x + 7, W - 150))).raw("\" y=\"")
        .raw(f1(std::max(y - 6, top + 10))).raw("\" fill=\"#dc2626\">peak ").text(fmt_bytes(double(d.peak_allocated_bytes)))
        .raw("</text>\n");
  }
  h.raw("</svg></div>\n<p class=\"hint\"><span class=\"legend-chip\" style=\"background:#2563eb\"></span>allocated");
  if (d.peak_reserved_bytes) h.raw(" <span class=\"legend-chip\" style=\"background:#8b5cf6\"></span>reserved (dashed)");
  for (const char* phase : {"forward", "backward", "optimizer"}) {
    bool any = false;
    for (const auto& s : r.memory->phases) any |= s.name == phase;
    if (any) h.raw(" <span class=\"legend-chip\" style=\"background:").raw(phase_fill(phase)).raw("\"></span>").raw(phase);
  }
  h.raw("; dotted lines: step starts.</p>\n");
}

void write_device(Html& h, const Report& r, const MemoryDevice& d) {
  h.raw("<h3 id=\"memory-").text(d.device).raw("\">").text(d.device).raw("</h3>\n<p class=\"mem-summary\">Peak allocated <b>")
      .text(fmt_bytes(double(d.peak_allocated_bytes))).raw("</b>");
  if (d.capacity_bytes) h.raw(" of ").text(fmt_bytes(double(*d.capacity_bytes))).raw(" (").text(fmt_pct(d.peak_fraction)).raw(")");
  if (d.reserved_at_peak_bytes) h.raw("; reserved then ").text(fmt_bytes(double(*d.reserved_at_peak_bytes)));
  if (d.unused_reserved_at_peak_bytes)
    h.raw(", of which ").text(fmt_bytes(double(*d.unused_reserved_at_peak_bytes))).raw(" cached but unused");
  if (d.peak_step || d.peak_phase) {
    h.raw("; in ");
    if (d.peak_step) h.text(*d.peak_step);
    if (d.peak_phase) h.raw(d.peak_step ? ", " : "").text(*d.peak_phase);
  }
  h.raw(".");
  if (d.growth_per_step_bytes && *d.growth_per_step_bytes > 0)
    h.raw(" Allocated grows by ").text(fmt_bytes(double(*d.growth_per_step_bytes))).raw(" per step.");
  h.raw("</p>\n");
  if (d.reconstruction) h.raw("<p class=\"hint\">Reconstructed: ").text(*d.reconstruction).raw(".</p>\n");
  write_chart(h, r, d);
  if (!d.live_at_peak.empty()) {
    h.raw("<h4>Live at the peak</h4><table class=\"data mem-live\"><thead><tr><th>Allocated by</th><th class=\"num\">Bytes"
          "</th><th class=\"num\">Blocks</th></tr></thead><tbody>\n");
    for (const auto& l : d.live_at_peak)
      h.raw("<tr><td><code>").text(truncate_utf8(l.op, 120)).raw("</code></td><td class=\"num\">").text(fmt_bytes(double(l.bytes)))
          .raw("</td><td class=\"num\">").raw(std::to_string(l.blocks)).raw("</td></tr>\n");
    if (d.live_unattributed_bytes && *d.live_unattributed_bytes > 0)
      h.raw("<tr><td><i>allocated before the capture</i></td><td class=\"num\">")
          .text(fmt_bytes(double(*d.live_unattributed_bytes))).raw("</td><td></td></tr>\n");
    h.raw("</tbody></table>\n");
  }
  if (d.operators.empty()) return;
  h.raw("<h4>Operators (as the TensorBoard plugin's memory view)</h4><table class=\"data mem-ops\"><thead><tr><th>Operator</th>"
        "<th class=\"num\">Calls</th><th class=\"num\">Size increase</th><th class=\"num\">Self increase</th>"
        "<th class=\"num\">Allocations</th><th class=\"num\">Self allocations</th><th class=\"num\">Allocated</th>"
        "<th class=\"num\">Self allocated</th></tr></thead><tbody>\n");
  const size_t rows = std::min<size_t>(d.operators.size(), 15);
  for (size_t i = 0; i < rows; ++i) {
    const auto& o = d.operators[i];
    h.raw("<tr><td><code>").text(truncate_utf8(o.name, 120)).raw("</code></td><td class=\"num\">").raw(std::to_string(o.calls))
        .raw("</td><td class=\"num\">").text(fmt_bytes(double(o.increase_bytes))).raw("</td><td class=\"num\">")
        .text(fmt_bytes(double(o.self_increase_bytes))).raw("</td><td class=\"num\">").raw(std::to_string(o.allocation_count))
        .raw("</td><td class=\"num\">").raw(std::to_string(o.self_allocation_count)).raw("</td><td class=\"num\">")
        .text(fmt_bytes(double(o.allocation_bytes))).raw("</td><td class=\"num\">").text(fmt_bytes(double(o.self_allocation_bytes)))
        .raw("</td></tr>\n");
  }
  h.raw("</tbody></table>\n");
  if (static_cast<int64_t>(rows) < d.operators_total)
    h.raw("<p class=\"hint\">").raw(std::to_string(rows)).raw(" of ").raw(std::to_string(d.operators_total))
        .raw(" operators; report.json has up to 100.</p>\n");
}

}  // namespace

void write_memory_budget(Html& h, const Report& r) {
  if (!r.memory_budget) return;
  const MemoryBudget& b = *r.memory_budget;
  h.raw("<section id=\"memory-budget\"><h2>Memory budget (").text(b.device).raw(")</h2>\n");
  h.raw("<table class=\"data mem-budget\"><tbody>\n");
  // Binary units, as the fit line (analysis/memory_budget.cpp) writes them: "22.5 GiB free" next to "24.1 GB"
  // would read as two different figures.
  auto row = [&](const char* label, std::optional<int64_t> v, const std::optional<std::string>& note) {
    if (!v) return;
    h.raw("<tr><td>").raw(label).raw("</td><td class=\"num\">").text(profile_train::format_bytes_binary(double(*v))).raw("</td><td class=\"hint\">");
    if (note) h.text(*note);
    h.raw("</td></tr>\n");
  };
  row("Parameters", b.parameter_bytes, std::nullopt);
  row("Gradients", b.gradient_bytes, std::nullopt);
  row("Optimizer state", b.optimizer_state_bytes, std::nullopt);
  row("Static (sum)", b.static_bytes, std::nullopt);
  row("Activations", b.activation_bytes, b.activation_source);
  row("Activations per sample", b.activation_per_sample_bytes,
      b.batch_size ? std::optional<std::string>("batch " + std::to_string(*b.batch_size)) : std::nullopt);
  row("Peak", b.peak_bytes, b.peak_source);
  row("Capacity", b.capacity_bytes, b.capacity_source);
  row("Free", b.free_bytes, std::nullopt);
  h.raw("</tbody></table>\n");
  if (b.fit) h.raw("<p class=\"mem-fit\"><b>").text(*b.fit).raw("</b>");
  if (b.fit && b.caveat) h.raw(" (").text(*b.caveat).raw(")");
  if (b.fit) h.raw("</p>\n");
  if (b.growth_per_step_bytes && *b.growth_per_step_bytes > 0 && b.growth_source)
    h.raw("<p class=\"mem-growth\">Memory grows by ").text(profile_train::format_bytes_binary(double(*b.growth_per_step_bytes)))
        .raw(" per step (").text(*b.growth_source).raw("): tensors kept from step to step?</p>\n");
  h.raw("</section>\n");
}

void write_memory_timeline(Html& h, const Report& r) {
  if (!r.memory || r.memory->devices.empty()) return;
  h.raw("<section id=\"memory-timeline\"><h2>Memory over the capture</h2>\n");
  size_t shown = 0;
  for (const auto& d : r.memory->devices) {
    if (shown == 3) break;  // the GPUs come first; a capture with many shows the first ones
    write_device(h, r, d);
    ++shown;
  }
  if (r.memory->rejected_events > 0)
    h.raw("<p class=\"hint\">").raw(std::to_string(r.memory->rejected_events))
        .raw(" memory events with impossible sizes were left out (data quality).</p>\n");
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
