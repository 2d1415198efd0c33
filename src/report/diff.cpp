// The diff of two reports for people: terminal text and self-contained HTML (the document: model/diff.h).
#include "profile_train/report/diff.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <vector>

#include "assets.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/common/terminal.h"
#include "profile_train/report/escape.h"
#include "html_common.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace {

using detail::fmt_bytes;
using detail::fmt_gbps;
using detail::fmt_ms;
using detail::fmt_pct;
using detail::style_of;
using nlohmann::json;

std::string sign_ms(double d) { return (d >= 0 ? "+" : "\xE2\x88\x92") + fmt_ms(std::fabs(d)); }

}  // namespace

// ---- text ---------------------------------------------------------------------------------------------

namespace {
std::string pad(std::string s, size_t w, bool right = false) {
  // Width in code points (names are UTF-8); good enough for a terminal table.
  size_t cps = 0;
  for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
  if (cps >= w) return s;
  return right ? std::string(w - cps, ' ') + s : s + std::string(w - cps, ' ');
}
std::string delta_text(std::optional<double> v, bool color, bool lower_is_better = true) {
  if (!v) return "";
  const double d = *v;
  std::string s = sign_ms(d);
  if (!color || std::fabs(d) < 1e-9) return s;
  const bool good = lower_is_better ? d < 0 : d > 0;
  return std::string(good ? "\x1b[32m" : "\x1b[31m") + s + "\x1b[0m";
}
}  // namespace

void write_diff_text(const Diff& d, std::ostream& out, const TextOptions& options) {
  const bool color = options.color;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const DiffStepTime& st = d.step_time;
  // Every string of the diff comes from the reports (labels are paths, kernel names come from traces):
  // terminal_safe() keeps their escape sequences from reaching the terminal.
  out << bold << "profile-train diff" << reset << "  A: " << terminal_safe(d.a.label) << "  B: "
      << terminal_safe(d.b.label) << "\n";
  out << bold << "Step time   " << reset << fmt_ms(st.a_ms) << " -> " << fmt_ms(st.b_ms);
  if (st.delta_ms) {
    out << "  (" << delta_text(st.delta_ms, color) << ", B/A = "
        << (st.ratio ? format_fixed(*st.ratio, 3) : std::string("n/a"));
    if (st.speedup && *st.speedup > 0) {
      const double s = *st.speedup;
      out << ", " << (s >= 1 ? format_fixed(s, 2) + "x faster" : format_fixed(1 / s, 2) + "x slower");
    }
    out << ")";
  }
  out << "\n";
  out << bold << "Verdict     " << reset << name_of(d.a.bottleneck) << " -> " << name_of(d.b.bottleneck)
      << (d.verdict_changed() ? "  (changed)" : "  (unchanged)") << "\n";
  out << bold << "GPU util    " << reset << fmt_pct(d.gpu_utilization.a) << " -> " << fmt_pct(d.gpu_utilization.b)
      << "\n\n";
  out << bold << pad("Breakdown (per step)", 24) << pad("A", 12, true) << pad("B", 12, true) << pad("change", 14, true)
      << reset << "\n";
  for (const DiffCategory& c : d.breakdown) {
    out << pad(style_of(c.role).label, 24) << pad(fmt_ms(c.a_ms), 12, true) << pad(fmt_ms(c.b_ms), 12, true)
        << pad("", 2) << delta_text(c.delta_ms, color) << "\n";
  }
  if (!d.kernels.empty()) {
    out << "\n" << bold << "Kernels that changed most (ms per step)" << reset << "\n";
    for (const DiffKernel& k : d.kernels) {
      out << "  " << pad(fmt_ms(k.a_ms_per_step), 10, true) << " -> " << pad(fmt_ms(k.b_ms_per_step), 10, true) << "  "
          << pad(delta_text(k.delta_ms_per_step, color), 11) << " " << detail::truncate_utf8(terminal_safe(k.name), 90);
      if (k.presence == KernelPresence::kOnlyInATop) out << "  [not in B's top kernels]";
      if (k.presence == KernelPresence::kOnlyInBTop) out << "  [not in A's top kernels]";
      out << "\n";
    }
  }
  if (!d.copies.empty()) {
    out << "\n" << bold << "Copies (per step)" << reset << "\n";
    for (const DiffCopy& c : d.copies) {
      out << "  " << pad(terminal_safe(c.direction), 4) << " " << pad(fmt_ms(c.a_ms_per_step), 10, true) << " -> "
          << pad(fmt_ms(c.b_ms_per_step), 10, true) << "  " << pad(delta_text(c.delta_ms_per_step, color), 11)
          << " bandwidth " << fmt_gbps(c.a_bandwidth_gbps) << " -> " << fmt_gbps(c.b_bandwidth_gbps) << ", pageable "
          << fmt_pct(c.a_pageable_fraction) << " -> " << fmt_pct(c.b_pageable_fraction) << "\n";
    }
  }
  auto join = [](const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& x : ids) s += (s.empty() ? "" : ", ") + terminal_safe(x);
    return s.empty() ? std::string("none") : s;
  };
  out << "\n" << bold << "Recommendations" << reset << "  resolved: " << join(d.recommendations.resolved)
      << "; new: " << join(d.recommendations.added) << "\n";
}

// ---- HTML ---------------------------------------------------------------------------------------------

namespace {
using detail::Html;

void delta_cell(Html& h, std::optional<double> v) {
  if (!v) {
    h.raw("<td class=\"num\">").raw(detail::kDash).raw("</td>");
    return;
  }
  const double d = *v;
  h.raw("<td class=\"num ").raw(d > 1e-9 ? "delta-up" : d < -1e-9 ? "delta-down" : "").raw("\">").text(sign_ms(d)).raw("</td>");
}
std::string arrow(const std::string& a, const std::string& b) { return a + " \xE2\x86\x92 " + b; }
}  // namespace

std::string render_diff_html(const Diff& d) {
  Html h;
  const DiffStepTime& st = d.step_time;
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">\n<title>profile-train diff</title>\n<script>")
      .raw(detail::asset_head_js()).raw("</script>\n<style>").raw(detail::asset_report_css()).raw("</style>\n</head>\n<body data-render=\"pending\">\n");
  const std::optional<double> speedup = st.speedup;
  h.raw("<header class=\"banner ").raw(speedup && *speedup >= 1.0 ? "v-cpu-only" : "v-synchronization")
      .raw("\" id=\"diff-summary\"><div class=\"brand\">profile-train diff</div><div class=\"verdict-line\"><h1>");
  if (speedup)
    h.text(*speedup >= 1 ? format_fixed(*speedup, 2) + "\xC3\x97 faster" : format_fixed(1 / *speedup, 2) + "\xC3\x97 slower");
  else
    h.raw("Step time not comparable");
  h.raw("</h1></div>\n<div class=\"kpis\">");
  auto kpi = [&](const char* label, const std::string& value, const std::string& sub) {
    h.raw("<div class=\"kpi\"><div class=\"kpi-label\">").raw(label).raw("</div><div class=\"kpi-value\">").text(value)
        .raw("</div><div class=\"kpi-sub\">").text(sub).raw("</div></div>");
  };
  kpi("Step time A", fmt_ms(st.a_ms), d.a.label);
  kpi("Step time B", fmt_ms(st.b_ms), d.b.label);
  kpi("GPU utilization", arrow(fmt_pct(d.gpu_utilization.a), fmt_pct(d.gpu_utilization.b)), "kernel time / step");
  h.raw("</div>\n<div class=\"verdict-change\" id=\"diff-verdict\">Bottleneck: <b>")
      .text(detail::bottleneck_label(d.a.bottleneck)).raw("</b> \xE2\x86\x92 <b>")
      .text(detail::bottleneck_label(d.b.bottleneck)).raw("</b>")
      .raw(d.verdict_changed() ? " (changed)" : " (unchanged)").raw("</div>\n</header>\n<main>\n");

  h.raw("<section id=\"diff-breakdown\"><h2>Step-time breakdown (mean per step)</h2><table class=\"data\"><thead><tr>"
        "<th>Category</th><th class=\"num\">A</th><th class=\"num\">B</th><th class=\"num\">Change</th>"
        "<th class=\"num\">Share A</th><th class=\"num\">Share B</th></tr></thead><tbody>\n");
  for (const DiffCategory& c : d.breakdown) {
    const auto& style = style_of(c.role);
    h.raw("<tr><td><span class=\"swatch\" style=\"background:").raw(style.color).raw("\"></span>").raw(style.label);
    h.raw("</td><td class=\"num\">").text(fmt_ms(c.a_ms)).raw("</td><td class=\"num\">").text(fmt_ms(c.b_ms)).raw("</td>");
    delta_cell(h, c.delta_ms);
    h.raw("<td class=\"num\">").text(fmt_pct(c.a_fraction)).raw("</td><td class=\"num\">").text(fmt_pct(c.b_fraction))
        .raw("</td></tr>\n");
  }
  h.raw("<tr><td><b>Step time</b></td><td class=\"num\"><b>").text(fmt_ms(st.a_ms)).raw("</b></td><td class=\"num\"><b>")
      .text(fmt_ms(st.b_ms)).raw("</b></td>");
  delta_cell(h, st.delta_ms);
  h.raw("<td></td><td></td></tr>\n</tbody></table></section>\n");

  h.raw("<section id=\"diff-kernels\"><h2>Kernels that changed most</h2>");
  if (d.kernels.empty()) {
    h.raw("<p class=\"na\">Neither report lists GPU kernels.</p>");
  } else {
    h.raw("<table class=\"data\"><thead><tr><th>Kernel</th><th class=\"num\">A ms/step</th><th class=\"num\">B ms/step</th>"
          "<th class=\"num\">Change</th><th>Note</th></tr></thead><tbody>\n");
    for (const DiffKernel& k : d.kernels) {
      h.raw("<tr><td class=\"kname\" title=\"").text(k.name).raw("\"><code>").text(detail::truncate_utf8(k.name, 160))
          .raw("</code></td><td class=\"num\">").text(fmt_ms(k.a_ms_per_step)).raw("</td><td class=\"num\">")
          .text(fmt_ms(k.b_ms_per_step)).raw("</td>");
      delta_cell(h, k.delta_ms_per_step);
      h.raw("<td>")
          .raw(k.presence == KernelPresence::kOnlyInATop   ? "not in B's top kernels"
               : k.presence == KernelPresence::kOnlyInBTop ? "not in A's top kernels"
                                                           : "")
          .raw("</td></tr>\n");
    }
    h.raw("</tbody></table>");
  }
  h.raw("</section>\n<section id=\"diff-copies\"><h2>Copies</h2>");
  if (d.copies.empty()) {
    h.raw("<p class=\"na\">Neither report has memory copies.</p>");
  } else {
    h.raw("<table class=\"data\"><thead><tr><th>Direction</th><th class=\"num\">A ms/step</th><th class=\"num\">B ms/step</th>"
          "<th class=\"num\">Change</th><th class=\"num\">Bytes/step A \xE2\x86\x92 B</th><th class=\"num\">Bandwidth A \xE2\x86\x92 B</th>"
          "<th class=\"num\">Pageable A \xE2\x86\x92 B</th></tr></thead><tbody>\n");
    for (const DiffCopy& c : d.copies) {
      h.raw("<tr><td>").text(c.direction).raw("</td><td class=\"num\">").text(fmt_ms(c.a_ms_per_step))
          .raw("</td><td class=\"num\">").text(fmt_ms(c.b_ms_per_step)).raw("</td>");
      delta_cell(h, c.delta_ms_per_step);
      h.raw("<td class=\"num\">").text(arrow(fmt_bytes(c.a_bytes_per_step), fmt_bytes(c.b_bytes_per_step)))
          .raw("</td><td class=\"num\">").text(arrow(fmt_gbps(c.a_bandwidth_gbps), fmt_gbps(c.b_bandwidth_gbps)))
          .raw("</td><td class=\"num\">").text(arrow(fmt_pct(c.a_pageable_fraction), fmt_pct(c.b_pageable_fraction)))
          .raw("</td></tr>\n");
    }
    h.raw("</tbody></table>");
  }
  h.raw("</section>\n<section id=\"diff-recs\"><h2>Recommendations</h2><table class=\"data compact\"><tbody>");
  auto list = [&](const char* label, const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& x : ids) s += (s.empty() ? "" : ", ") + x;
    h.raw("<tr><th>").raw(label).raw("</th><td>").text(s.empty() ? std::string(detail::kDash) : s).raw("</td></tr>");
  };
  list("Resolved (in A, not in B)", d.recommendations.resolved);
  list("New in B", d.recommendations.added);
  list("All in A", d.recommendations.a);
  list("All in B", d.recommendations.b);
  h.raw("</tbody></table></section>\n</main>\n<footer>diff format ").text(kDiffVersion).raw("</footer>\n");
  h.raw("<script>document.body.setAttribute('data-render', window.__ptErrors && window.__ptErrors.length ? 'error' : 'ok');"
        "if (window.__ptMarkErrors) window.__ptMarkErrors();</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

Status write_diff_html(const Diff& diff, const std::filesystem::path& path) {
  std::string html;
  try {
    html = render_diff_html(diff);
  } catch (const std::exception& e) {
    return Internal(path.string() + ": cannot render the diff: " + e.what());
  }
  return write_file_atomic(path, html);
}

}  // namespace profile_train::report
