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

namespace {

// The categories a neutral headline names, with their change per step ("data loading −58.1 ms, ...").
std::string changed_text(const Diff& d) {
  std::string s;
  for (Role role : d.headline.changed_categories)
    for (const DiffCategory& c : d.breakdown)
      if (c.role == role && c.delta_ms) {
        std::string label = style_of(role).label;
        s += (s.empty() ? "" : ", ") + label + " " + sign_ms(*c.delta_ms);
      }
  return s;
}

// "±3.9%"
std::string plus_minus(std::optional<double> fraction) {
  return fraction ? "\xC2\xB1" + format_fixed(100.0 * *fraction, 1) + "%" : std::string("n/a");
}

// "6 steps x 178 ms = 1066 ms" (with the steps left out of the mean when there are any).
std::string window_text(const DiffWindow& w) {
  if (!w.window_ms) return "n/a";
  std::string s = std::to_string(w.steady_steps) + (w.steady_steps == 1 ? " step" : " steps");
  if (w.steps != w.steady_steps) s += " (of " + std::to_string(w.steps) + ")";
  return s + " x " + fmt_ms(w.mean_ms) + " = " + fmt_ms(w.window_ms);
}

// The comparability line's body: windows, spreads and threshold, shared kernel time.
std::string comparability_text(const Diff& d) {
  const DiffWindow& a = d.comparability.a;
  const DiffWindow& b = d.comparability.b;
  std::string s = "window " + window_text(a) + " -> " + window_text(b) + "; step spread " + plus_minus(a.relative_stddev) +
                  " -> " + plus_minus(b.relative_stddev);
  if (d.headline.threshold) s += ", threshold " + plus_minus(d.headline.threshold);
  s += "; ";
  if (!a.kernel_ms && !b.kernel_ms) return s + "no GPU kernels on either side";
  if (!a.kernel_ms || !b.kernel_ms) return s + "no GPU kernels in " + std::string(a.kernel_ms ? "B" : "A");
  return s + "kernels in both top lists: " + fmt_pct(a.shared_kernel_fraction) + " of A's kernel time, " +
         fmt_pct(b.shared_kernel_fraction) + " of B's";
}

void step_line(const Diff& d, const char* label, std::ostream& out, bool color) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const DiffStepTime& st = d.step_time;
  out << bold << label << reset << fmt_ms(st.a_ms) << " -> " << fmt_ms(st.b_ms);
  if (st.delta_ms) {
    out << "  (" << delta_text(st.delta_ms, color && !d.headline.neutral()) << ", B/A = "
        << (st.ratio ? format_fixed(*st.ratio, 3) : std::string("n/a"));
    if (d.headline.neutral()) {
      out << "): no change in step time beyond its spread (" << plus_minus(d.headline.threshold) << ")";
    } else {
      if (st.speedup && *st.speedup > 0) {
        const double s = *st.speedup;
        out << ", " << (s >= 1 ? format_fixed(s, 2) + "x faster" : format_fixed(1 / s, 2) + "x slower");
      }
      out << ")";
    }
  }
  out << "\n";
}

// After a neutral step line: what did change.
void changed_line(const Diff& d, std::ostream& out, bool color) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  if (d.headline.neutral()) {
    const std::string changed = changed_text(d);
    out << bold << "Changed     " << reset
        << (changed.empty() ? "no breakdown category by " + format_fixed(100.0 * kMaterialShare, 0) + "% of A's step or more"
                            : changed + " per step")
        << (d.verdict_changed() ? "; verdict " + std::string(name_of(d.a.bottleneck)) + " -> " + std::string(name_of(d.b.bottleneck)) : "")
        << "\n";
  }
}

void breakdown_table(const Diff& d, const std::string& title, std::ostream& out, bool color) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  out << bold << pad(title, 24) << pad("A", 12, true) << pad("B", 12, true) << pad("change", 14, true) << reset << "\n";
  for (const DiffCategory& c : d.breakdown) {
    out << pad(style_of(c.role).label, 24) << pad(fmt_ms(c.a_ms), 12, true) << pad(fmt_ms(c.b_ms), 12, true)
        << pad("", 2) << delta_text(c.delta_ms, color) << "\n";
  }
}

// Kernels, copies and recommendations (`what`: "" for two reports, ", slowest ranks" for two jobs).
void details(const Diff& d, const std::string& what, std::ostream& out, bool color) {
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  if (!d.kernels.empty()) {
    out << "\n" << bold << "Kernels that changed most" << what << " (ms per step)" << reset << "\n";
    for (const DiffKernel& k : d.kernels) {
      out << "  " << pad(fmt_ms(k.a_ms_per_step), 10, true) << " -> " << pad(fmt_ms(k.b_ms_per_step), 10, true) << "  "
          << pad(delta_text(k.delta_ms_per_step, color), 11) << " " << detail::truncate_utf8(terminal_safe(k.name), 90);
      if (k.presence == KernelPresence::kOnlyInATop) out << "  [not in B's top kernels]";
      if (k.presence == KernelPresence::kOnlyInBTop) out << "  [not in A's top kernels]";
      out << "\n";
    }
  }
  if (!d.copies.empty()) {
    out << "\n" << bold << "Copies" << what << " (per step)" << reset << "\n";
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
  out << "\n" << bold << "Recommendations" << what << reset << "  resolved: " << join(d.recommendations.resolved)
      << "; new: " << join(d.recommendations.added) << "\n";
}

// "rank 3" when paired by rank number, "#3" (the position) when by order.
std::string rank_name(const JobDiff& d, int64_t key) {
  return d.pairing == RankPairing::kByRank ? "rank " + std::to_string(key) : "#" + std::to_string(key);
}

std::string straggler_text(const JobDiffSide& s) {
  if (!s.summary.straggler) return "none";
  const Straggler& st = *s.summary.straggler;
  return "rank " + std::to_string(st.rank) + " (" + std::string(name_of(st.phase)) + ", " + fmt_ms(st.excess_ms) +
         " per step over the others)";
}

std::string only_text(const JobDiff& d, const std::vector<RankOnOneSide>& ranks) {
  std::string s;
  for (const auto& r : ranks) s += (s.empty() ? "" : ", ") + rank_name(d, r.rank) + " (" + terminal_safe(r.label) + ")";
  return s.empty() ? std::string("none") : s;
}

std::string pairing_text(RankPairing p) {
  return p == RankPairing::kByRank ? "by rank number (source.distributed.rank)"
                                   : "by position (job.json's order, else the rank folders' names): the reports do not "
                                     "all record a distinct source.distributed.rank";
}

}  // namespace

void write_diff_text(const Diff& d, std::ostream& out, const TextOptions& options) {
  const bool color = options.color;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  // Every string of the diff comes from the reports (labels are paths, kernel names come from traces):
  // terminal_safe() keeps their escape sequences from reaching the terminal.
  out << bold << "profile-train diff" << reset << "  A: " << terminal_safe(d.a.label) << "  B: "
      << terminal_safe(d.b.label) << "\n";
  step_line(d, "Step time   ", out, color);
  changed_line(d, out, color);
  out << bold << "Verdict     " << reset << name_of(d.a.bottleneck) << " -> " << name_of(d.b.bottleneck)
      << (d.verdict_changed() ? "  (changed)" : "  (unchanged)") << "\n";
  out << bold << "GPU util    " << reset << fmt_pct(d.gpu_utilization.a) << " -> " << fmt_pct(d.gpu_utilization.b) << "\n";
  out << bold << "Comparable  " << reset << comparability_text(d) << "\n\n";
  breakdown_table(d, "Breakdown (per step)", out, color);
  details(d, "", out, color);
}

void write_job_diff_text(const JobDiff& d, std::ostream& out, const TextOptions& options) {
  const bool color = options.color;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const Diff& job = d.slowest;
  auto ranks = [](const JobDiffSide& s) { return " (" + std::to_string(s.ranks) + (s.ranks == 1 ? " rank)" : " ranks)"); };
  out << bold << "profile-train diff (jobs)" << reset << "  A: " << terminal_safe(d.a.label) << ranks(d.a)
      << "  B: " << terminal_safe(d.b.label) << ranks(d.b) << "\n";
  step_line(job, "Job step    ", out, color);
  auto slowest = [&](const JobDiffSide& s) {
    return s.slowest_rank ? rank_name(d, *s.slowest_rank) + " (" + terminal_safe(s.slowest_label) + ")" : std::string("none");
  };
  out << "            the slowest rank's mean step: A " << slowest(d.a) << ", B " << slowest(d.b) << "\n";
  changed_line(job, out, color);
  out << bold << "Job verdict " << reset << name_of(d.a.summary.verdict) << " -> " << name_of(d.b.summary.verdict)
      << (d.verdict_changed() ? "  (changed)" : "  (unchanged)") << "\n";
  out << bold << "Straggler   " << reset << straggler_text(d.a) << " -> " << straggler_text(d.b)
      << (d.straggler_changed() ? "  (changed)" : "  (unchanged)") << "\n";
  out << bold << "Ranks       " << reset << d.ranks.size() << " paired " << pairing_text(d.pairing)
      << "; only in A: " << only_text(d, d.only_in_a) << "; only in B: " << only_text(d, d.only_in_b) << "\n";
  out << bold << "Comparable  " << reset << "slowest ranks: " << comparability_text(job) << "\n";
  if (!d.ranks.empty()) {
    out << "\n" << bold << pad("Per rank", 10) << pad("step A", 12, true) << pad("step B", 12, true) << "   " << pad("change", 11)
        << pad("B/A", 6, true) << "  " << pad("step time", 11) << "verdict A -> B" << reset << "\n";
    for (const RankDiff& r : d.ranks) {
      const DiffStepTime& st = r.diff.step_time;
      out << pad(rank_name(d, r.rank), 10) << pad(fmt_ms(st.a_ms), 12, true) << pad(fmt_ms(st.b_ms), 12, true) << "   "
          << pad(delta_text(st.delta_ms, color && !r.diff.headline.neutral()), 11)
          << pad(st.ratio ? format_fixed(*st.ratio, 3) : std::string("n/a"), 6, true) << "  "
          << pad(std::string(name_of(r.diff.headline.step_time)), 11) << name_of(r.diff.a.bottleneck) << " -> "
          << name_of(r.diff.b.bottleneck) << (r.diff.verdict_changed() ? "  (changed)" : "") << "\n";
    }
    for (const RankDiff& r : d.ranks) {
      out << "\n" << bold << rank_name(d, r.rank) << reset << "  A: " << terminal_safe(r.diff.a.label)
          << "  B: " << terminal_safe(r.diff.b.label) << "\n";
      if (r.diff.headline.neutral()) {
        const std::string changed = changed_text(r.diff);
        if (!changed.empty()) out << "  no change in step time beyond its spread; changed: " << changed << " per step\n";
      }
      breakdown_table(r.diff, "Breakdown (per step)", out, color);
    }
  }
  details(job, ", slowest ranks", out, color);
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

void html_head(Html& h) {
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">\n<title>profile-train diff</title>\n<script>")
      .raw(detail::asset_head_js()).raw("</script>\n<style>").raw(detail::asset_report_css()).raw("</style>\n</head>\n<body data-render=\"pending\">\n");
}

void html_foot(Html& h) {
  h.raw("</main>\n<footer>diff format ").text(kDiffVersion).raw("</footer>\n");
  h.raw("<script>document.body.setAttribute('data-render', window.__ptErrors && window.__ptErrors.length ? 'error' : 'ok');"
        "if (window.__ptMarkErrors) window.__ptMarkErrors();</script>\n</body>\n</html>\n");
}

// The banner's opening and its h1: the speedup, or neutral when the step time did not move beyond its spread.
void banner_open(Html& h, const Diff& d, const char* brand) {
  const std::optional<double> speedup = d.step_time.speedup;
  const char* tone = d.headline.neutral() ? "" : speedup && *speedup >= 1.0 ? " v-cpu-only" : " v-synchronization";
  h.raw("<header class=\"banner").raw(tone).raw("\" id=\"diff-summary\"><div class=\"brand\">").raw(brand)
      .raw("</div><div class=\"verdict-line\"><h1>");
  if (d.headline.neutral())
    h.raw("No change in step time beyond its spread");
  else if (speedup)
    h.text(*speedup >= 1 ? format_fixed(*speedup, 2) + "\xC3\x97 faster" : format_fixed(1 / *speedup, 2) + "\xC3\x97 slower");
  else
    h.raw("Step time not comparable");
  h.raw("</h1></div>\n");
}

// Under the h1: B/A against the threshold and, when neutral, what did change.
void headline_line(Html& h, const Diff& d) {
  if (!d.headline.relative_change) return;
  h.raw("<div class=\"verdict-change\" id=\"diff-headline\">B/A = ").text(format_fixed(*d.step_time.ratio, 3))
      .raw(d.headline.neutral() ? ", within " : ", beyond ").text(plus_minus(d.headline.threshold))
      .raw(" (2 \xC3\x97 the standard error of the difference of the mean steps, at least ").text(format_fixed(100.0 * kNeutralFloor, 0)).raw("%)");
  if (d.headline.neutral()) {
    const std::string changed = changed_text(d);
    h.raw(". Changed: ")
        .text(changed.empty() ? "no breakdown category by " + format_fixed(100.0 * kMaterialShare, 0) + "% of A's step or more"
                              : changed + " per step");
    if (d.verdict_changed())
      h.raw("; verdict ").text(arrow(std::string(name_of(d.a.bottleneck)), std::string(name_of(d.b.bottleneck))));
  }
  h.raw("</div>\n");
}

void kpi(Html& h, const char* label, const std::string& value, const std::string& sub) {
  h.raw("<div class=\"kpi\"><div class=\"kpi-label\">").raw(label).raw("</div><div class=\"kpi-value\">").text(value)
      .raw("</div><div class=\"kpi-sub\">").text(sub).raw("</div></div>");
}

void breakdown_section(Html& h, const Diff& d, const std::string& id, const std::string& title) {
  const DiffStepTime& st = d.step_time;
  h.raw("<section id=\"").text(id).raw("\"><h2>").text(title).raw("</h2><table class=\"data\"><thead><tr>"
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
}

void comparability_section(Html& h, const Diff& d, const std::string& title) {
  const DiffWindow& a = d.comparability.a;
  const DiffWindow& b = d.comparability.b;
  h.raw("<section id=\"diff-comparability\"><h2>").text(title).raw("</h2><table class=\"data compact\"><thead><tr><th></th>"
        "<th class=\"num\">A</th><th class=\"num\">B</th></tr></thead><tbody>");
  auto row = [&](const char* label, const std::string& x, const std::string& y) {
    h.raw("<tr><th>").raw(label).raw("</th><td class=\"num\">").text(x).raw("</td><td class=\"num\">").text(y).raw("</td></tr>");
  };
  row("Window (steady steps \xC3\x97 mean step)", window_text(a), window_text(b));
  row("Steps", std::to_string(a.steps), std::to_string(b.steps));
  row("Step-time spread (stddev / mean)", plus_minus(a.relative_stddev), plus_minus(b.relative_stddev));
  row("Kernel time in kernels of both top lists", fmt_pct(a.shared_kernel_fraction), fmt_pct(b.shared_kernel_fraction));
  h.raw("</tbody></table><p class=\"na\">A step-time change within ").text(plus_minus(d.headline.threshold))
      .raw(" (2 \xC3\x97 the standard error of the difference of the mean steps, at least ").text(format_fixed(100.0 * kNeutralFloor, 0))
      .raw("%) is no change.</p></section>\n");
}

void detail_sections(Html& h, const Diff& d, const std::string& what) {
  h.raw("<section id=\"diff-kernels\"><h2>Kernels that changed most").text(what).raw("</h2>");
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
  h.raw("</section>\n<section id=\"diff-copies\"><h2>Copies").text(what).raw("</h2>");
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
  h.raw("</section>\n<section id=\"diff-recs\"><h2>Recommendations").text(what).raw("</h2><table class=\"data compact\"><tbody>");
  auto list = [&](const char* label, const std::vector<std::string>& ids) {
    std::string s;
    for (const auto& x : ids) s += (s.empty() ? "" : ", ") + x;
    h.raw("<tr><th>").raw(label).raw("</th><td>").text(s.empty() ? std::string(detail::kDash) : s).raw("</td></tr>");
  };
  list("Resolved (in A, not in B)", d.recommendations.resolved);
  list("New in B", d.recommendations.added);
  list("All in A", d.recommendations.a);
  list("All in B", d.recommendations.b);
  h.raw("</tbody></table></section>\n");
}

}  // namespace

std::string render_diff_html(const Diff& d) {
  Html h;
  const DiffStepTime& st = d.step_time;
  html_head(h);
  banner_open(h, d, "profile-train diff");
  headline_line(h, d);
  h.raw("<div class=\"kpis\">");
  kpi(h, "Step time A", fmt_ms(st.a_ms), d.a.label);
  kpi(h, "Step time B", fmt_ms(st.b_ms), d.b.label);
  kpi(h, "GPU utilization", arrow(fmt_pct(d.gpu_utilization.a), fmt_pct(d.gpu_utilization.b)), "kernel time / step");
  h.raw("</div>\n<div class=\"verdict-change\" id=\"diff-verdict\">Bottleneck: <b>")
      .text(detail::bottleneck_label(d.a.bottleneck)).raw("</b> \xE2\x86\x92 <b>")
      .text(detail::bottleneck_label(d.b.bottleneck)).raw("</b>")
      .raw(d.verdict_changed() ? " (changed)" : " (unchanged)").raw("</div>\n</header>\n<main>\n");
  breakdown_section(h, d, "diff-breakdown", "Step-time breakdown (mean per step)");
  comparability_section(h, d, "Comparability");
  detail_sections(h, d, "");
  html_foot(h);
  return std::move(h.str());
}

std::string render_job_diff_html(const JobDiff& d) {
  Html h;
  const Diff& job = d.slowest;
  html_head(h);
  banner_open(h, job, "profile-train diff of two jobs");
  headline_line(h, job);
  auto slowest = [&](const JobDiffSide& s) {
    return s.slowest_rank ? "slowest: " + rank_name(d, *s.slowest_rank) : std::string("no step time");
  };
  h.raw("<div class=\"kpis\">");
  kpi(h, "Job step A", fmt_ms(d.a.step_ms), slowest(d.a) + " of " + std::to_string(d.a.ranks) + ", " + d.a.label);
  kpi(h, "Job step B", fmt_ms(d.b.step_ms), slowest(d.b) + " of " + std::to_string(d.b.ranks) + ", " + d.b.label);
  kpi(h, "Straggler", arrow(straggler_text(d.a), straggler_text(d.b)), d.straggler_changed() ? "changed" : "unchanged");
  h.raw("</div>\n<div class=\"verdict-change\" id=\"diff-verdict\">Job: <b>").text(std::string(name_of(d.a.summary.verdict)))
      .raw("</b> \xE2\x86\x92 <b>").text(std::string(name_of(d.b.summary.verdict))).raw("</b>")
      .raw(d.verdict_changed() ? " (changed)" : " (unchanged)").raw("</div>\n</header>\n<main>\n");

  h.raw("<section id=\"diff-ranks\"><h2>Ranks</h2><p>").text(std::to_string(d.ranks.size()) + " paired " + pairing_text(d.pairing))
      .raw(".</p><table class=\"data\"><thead><tr><th>Rank</th><th class=\"num\">Step A</th><th class=\"num\">Step B</th>"
           "<th class=\"num\">Change</th><th class=\"num\">B/A</th><th>Step time</th><th>Verdict A \xE2\x86\x92 B</th>"
           "</tr></thead><tbody>\n");
  for (const RankDiff& r : d.ranks) {
    const DiffStepTime& st = r.diff.step_time;
    h.raw("<tr><td title=\"").text(r.diff.a.label + " / " + r.diff.b.label).raw("\">").text(rank_name(d, r.rank))
        .raw("</td><td class=\"num\">").text(fmt_ms(st.a_ms)).raw("</td><td class=\"num\">").text(fmt_ms(st.b_ms)).raw("</td>");
    delta_cell(h, st.delta_ms);
    h.raw("<td class=\"num\">").text(st.ratio ? format_fixed(*st.ratio, 3) : std::string(detail::kDash)).raw("</td><td>")
        .text(std::string(name_of(r.diff.headline.step_time))).raw("</td><td>")
        .text(arrow(std::string(name_of(r.diff.a.bottleneck)), std::string(name_of(r.diff.b.bottleneck))))
        .raw(r.diff.verdict_changed() ? " (changed)" : "").raw("</td></tr>\n");
  }
  h.raw("</tbody></table><table class=\"data compact\"><tbody><tr><th>Only in A</th><td>").text(only_text(d, d.only_in_a))
      .raw("</td></tr><tr><th>Only in B</th><td>").text(only_text(d, d.only_in_b)).raw("</td></tr></tbody></table></section>\n");
  for (const RankDiff& r : d.ranks)
    breakdown_section(h, r.diff, "diff-breakdown-" + std::to_string(r.rank),
                      rank_name(d, r.rank) + ": step-time breakdown (" + r.diff.a.label + " \xE2\x86\x92 " + r.diff.b.label + ")");
  comparability_section(h, job, "Comparability (slowest ranks)");
  detail_sections(h, job, ", slowest ranks");
  html_foot(h);
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

Status write_job_diff_html(const JobDiff& diff, const std::filesystem::path& path) {
  std::string html;
  try {
    html = render_job_diff_html(diff);
  } catch (const std::exception& e) {
    return Internal(path.string() + ": cannot render the diff: " + e.what());
  }
  return write_file_atomic(path, html);
}

}  // namespace profile_train::report
