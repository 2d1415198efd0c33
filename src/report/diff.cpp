// Diff of two reports: document (diff.json), terminal text and self-contained HTML. Owner: report component.
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
#include "profile_train/common/json_bounded.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/terminal.h"
#include "profile_train/report/escape.h"
#include "profile_train/model/report_json.h"
#include "html_common.h"

namespace profile_train::report {
namespace {

using detail::fmt_bytes;
using detail::fmt_gbps;
using detail::fmt_ms;
using detail::fmt_pct;
using analysis::Report;
using detail::style_of;
using nlohmann::json;

DiffPair pair_of(std::optional<double> a, std::optional<double> b) {
  return {a, b, a && b ? std::optional<double>(*b - *a) : std::nullopt};
}

// Kernel name -> ms per step and calls per step, from one report's top list.
struct KernelRow {
  double ms_per_step = 0;
  std::optional<double> count_per_step;
};
std::map<std::string, KernelRow> kernel_rows(const Report& r) {
  std::map<std::string, KernelRow> rows;
  // top_kernels cover the steady-state steps (all steps in reports without steady_state: count 0 there).
  const int64_t steady = r.steps.steady_state.count > 0 ? r.steps.steady_state.count : r.steps.count;
  const double steps = std::max(1.0, static_cast<double>(steady));
  for (const auto& k : r.gpu.top_kernels) {
    KernelRow& row = rows[k.name];  // duplicates (should not happen) are summed
    row.ms_per_step += k.total_ms / steps;
    row.count_per_step = row.count_per_step.value_or(0) + static_cast<double>(k.count) / steps;
  }
  return rows;
}

const analysis::CopyDirection* copy_direction(const Report& r, analysis::CopyDirection analysis::Memcpy::*dir) {
  return r.gpu.memcpy ? &((*r.gpu.memcpy).*dir) : nullptr;
}

std::string sign_ms(double d) { return (d >= 0 ? "+" : "\xE2\x88\x92") + fmt_ms(std::fabs(d)); }

}  // namespace

StatusOr<Report> load_report(const std::filesystem::path& input) {
  std::error_code ec;
  std::filesystem::path file = input;
  if (std::filesystem::is_directory(input, ec)) file = input / "report.json";
  if (!std::filesystem::exists(file, ec))
    return NotFound(file.string() + (file == input ? ": no such file" : ": no report.json in this folder"));
  std::ifstream in(file, std::ios::binary);
  if (!in) return IoError(file.string() + ": cannot open");
  json j;
  try {
    j = parse_json_bounded(in);
  } catch (const JsonTooDeep& e) {
    return ResourceExhausted(file.string() + ": not a report (" + e.what() + ")");
  } catch (const json::exception& e) {
    return BadInput(file.string() + ": not valid JSON (" + e.what() + ")");
  }
  if (!j.is_object()) return BadInput(file.string() + ": not a report (top level is not an object)");
  auto version = detail::string_path(j, {"schema_version"});
  if (!version) return BadInput(file.string() + ": not a report.json (no schema_version)");
  if (version->rfind("1.", 0) != 0 && *version != "1")
    return Unsupported(file.string() + ": report schema_version " + *version + " is not supported (this build reads 1.x)");
  auto report = report_from_json(j);
  if (!report.ok()) {
    std::string why = report.status().message();
    if (why.rfind("report: ", 0) == 0) why.erase(0, 8);
    return Status(report.status().code(), file.string() + ": not a report (" + why + ")");
  }
  return std::move(*report);
}

Diff diff_reports(const Report& a, const Report& b, const std::string& label_a, const std::string& label_b,
                  const DiffOptions& options) {
  Diff d;
  auto side = [](const Report& r, const std::string& label) {
    return DiffSide{label, r.verdict.bottleneck, r.verdict.confidence, r.verdict.summary, r.steps.count,
                    r.device ? r.device->name.value_or("") : std::string()};
  };
  d.a = side(a, label_a);
  d.b = side(b, label_b);

  const auto ma = a.steps.mean_ms;
  const auto mb = b.steps.mean_ms;
  d.step_time.a_ms = ma;
  d.step_time.b_ms = mb;
  if (ma && mb) {
    d.step_time.delta_ms = *mb - *ma;
    // A 0 ms mean step (a trace without a step window) has no meaningful ratio: both stay null.
    if (*ma > 0 && *mb > 0) {
      d.step_time.ratio = *mb / *ma;
      d.step_time.speedup = *ma / *mb;
    }
  }
  d.gpu_utilization = pair_of(a.gpu.utilization, b.gpu.utilization);

  for (Role role : kAllRoles) {
    auto ms_of = [&](const Report& r, std::optional<double> mean) -> std::optional<double> {
      if (auto v = r.breakdown_ms[role]) return v;
      if (auto f = r.breakdown[role]; f && mean) return *f * *mean;
      return std::nullopt;
    };
    const DiffPair ms = pair_of(ms_of(a, ma), ms_of(b, mb));
    d.breakdown.push_back({role, ms.a, ms.b, ms.delta, a.breakdown[role], b.breakdown[role]});
  }

  // Kernels: union of both top lists, ordered by |change in ms per step|.
  const auto ka = kernel_rows(a), kb = kernel_rows(b);
  std::set<std::string> names;
  for (const auto& [n, _] : ka) names.insert(n);
  for (const auto& [n, _] : kb) names.insert(n);
  std::vector<std::pair<double, DiffKernel>> ks;
  for (const auto& n : names) {
    DiffKernel k;
    k.name = n;
    if (auto it = ka.find(n); it != ka.end()) k.a_ms_per_step = it->second.ms_per_step, k.a_count_per_step = it->second.count_per_step;
    if (auto it = kb.find(n); it != kb.end()) k.b_ms_per_step = it->second.ms_per_step, k.b_count_per_step = it->second.count_per_step;
    k.delta_ms_per_step = pair_of(k.a_ms_per_step, k.b_ms_per_step).delta;
    k.presence = k.a_ms_per_step && k.b_ms_per_step ? KernelPresence::kInBoth
                 : k.a_ms_per_step                  ? KernelPresence::kOnlyInATop
                                                    : KernelPresence::kOnlyInBTop;
    // A kernel missing from one top list changed by at least its time in the other.
    const double magnitude = std::fabs(k.b_ms_per_step.value_or(0) - k.a_ms_per_step.value_or(0));
    ks.emplace_back(magnitude, std::move(k));
  }
  std::stable_sort(ks.begin(), ks.end(), [](const auto& x, const auto& y) { return x.first > y.first; });
  for (size_t i = 0; i < ks.size() && static_cast<int>(i) < options.top; ++i) d.kernels.push_back(std::move(ks[i].second));

  using analysis::CopyDirection;
  using analysis::Memcpy;
  static const std::pair<const char*, CopyDirection Memcpy::*> kDirections[] = {
      {"h2d", &Memcpy::h2d}, {"d2h", &Memcpy::d2h}, {"d2d", &Memcpy::d2d}};
  for (const auto& [dir, member] : kDirections) {
    const CopyDirection* ca = copy_direction(a, member);
    const CopyDirection* cb = copy_direction(b, member);
    if (!ca && !cb) continue;
    // A direction without copies in either run is noise in a "what changed" list.
    auto none = [](const CopyDirection* c) { return !c || c->count_per_step == 0.0; };
    if (none(ca) && none(cb)) continue;
    // A side without the direction (no memcpy section) is null, not 0.
    auto field = [](const CopyDirection* c, double CopyDirection::*f) { return c ? std::optional<double>(c->*f) : std::nullopt; };
    auto optional_field = [](const CopyDirection* c, std::optional<double> CopyDirection::*f) {
      return c ? c->*f : std::nullopt;
    };
    DiffCopy e;
    e.direction = dir;
    e.a_ms_per_step = field(ca, &CopyDirection::time_ms_per_step);
    e.b_ms_per_step = field(cb, &CopyDirection::time_ms_per_step);
    e.delta_ms_per_step = pair_of(e.a_ms_per_step, e.b_ms_per_step).delta;
    e.a_bytes_per_step = field(ca, &CopyDirection::bytes_per_step);
    e.b_bytes_per_step = field(cb, &CopyDirection::bytes_per_step);
    e.a_count_per_step = field(ca, &CopyDirection::count_per_step);
    e.b_count_per_step = field(cb, &CopyDirection::count_per_step);
    e.a_bandwidth_gbps = optional_field(ca, &CopyDirection::bandwidth_gbps);
    e.b_bandwidth_gbps = optional_field(cb, &CopyDirection::bandwidth_gbps);
    e.a_pageable_fraction = optional_field(ca, &CopyDirection::pageable_fraction);
    e.b_pageable_fraction = optional_field(cb, &CopyDirection::pageable_fraction);
    d.copies.push_back(std::move(e));
  }
  std::stable_sort(d.copies.begin(), d.copies.end(), [](const DiffCopy& x, const DiffCopy& y) {
    return std::fabs(x.delta_ms_per_step.value_or(0)) > std::fabs(y.delta_ms_per_step.value_or(0));
  });

  auto rec_ids = [](const Report& r) {
    std::vector<std::string> ids;
    for (const auto& rec : r.recommendations) ids.push_back(rec.id);
    return ids;
  };
  DiffRecommendations& recs = d.recommendations;
  recs.a = rec_ids(a);
  recs.b = rec_ids(b);
  for (const auto& id : recs.a)
    if (std::find(recs.b.begin(), recs.b.end(), id) == recs.b.end()) recs.resolved.push_back(id);
  for (const auto& id : recs.b)
    if (std::find(recs.a.begin(), recs.a.end(), id) == recs.a.end()) recs.added.push_back(id);
  return d;
}

// ---- diff.json ----------------------------------------------------------------------------------------

namespace {
const char* presence_name(KernelPresence p) {
  switch (p) {
    case KernelPresence::kInBoth: return "in_both";
    case KernelPresence::kOnlyInATop: return "only_in_a_top";
    case KernelPresence::kOnlyInBTop: return "only_in_b_top";
  }
  return "in_both";
}
}  // namespace

json to_json(const Diff& d) {
  auto side = [](const DiffSide& s) {
    return json{{"label", s.label},
                {"bottleneck", name_of(s.bottleneck)},
                {"confidence", s.confidence},
                {"summary", s.summary},
                // a float in diff.json, as diff 1.0 wrote it
                {"steps", static_cast<double>(s.steps)},
                {"device", s.device}};
  };
  json out;
  out["diff_version"] = kDiffVersion;
  out["tool"] = {{"name", "profile-train"}};
  out["a"] = side(d.a);
  out["b"] = side(d.b);
  const DiffStepTime& st = d.step_time;
  out["step_time"] = {{"a_ms", or_null(st.a_ms)},   {"b_ms", or_null(st.b_ms)},       {"delta_ms", or_null(st.delta_ms)},
                      {"ratio", or_null(st.ratio)}, {"speedup", or_null(st.speedup)}};
  out["gpu_utilization"] = {
      {"a", or_null(d.gpu_utilization.a)}, {"b", or_null(d.gpu_utilization.b)}, {"delta", or_null(d.gpu_utilization.delta)}};
  json cats = json::array();
  for (const DiffCategory& c : d.breakdown)
    cats.push_back({{"category", name_of(c.role)},
                    {"a_ms", or_null(c.a_ms)},
                    {"b_ms", or_null(c.b_ms)},
                    {"delta_ms", or_null(c.delta_ms)},
                    {"a_fraction", or_null(c.a_fraction)},
                    {"b_fraction", or_null(c.b_fraction)}});
  out["breakdown"] = std::move(cats);
  const std::string va(name_of(d.a.bottleneck)), vb(name_of(d.b.bottleneck));
  out["verdict"] = {{"a", va}, {"b", vb}, {"changed", d.verdict_changed()}};
  json kernels = json::array();
  for (const DiffKernel& k : d.kernels)
    kernels.push_back({{"name", k.name},
                       {"a_ms_per_step", or_null(k.a_ms_per_step)},
                       {"b_ms_per_step", or_null(k.b_ms_per_step)},
                       {"delta_ms_per_step", or_null(k.delta_ms_per_step)},
                       {"a_count_per_step", or_null(k.a_count_per_step)},
                       {"b_count_per_step", or_null(k.b_count_per_step)},
                       {"status", presence_name(k.presence)}});
  out["kernels"] = std::move(kernels);
  json copies = json::array();
  for (const DiffCopy& c : d.copies)
    copies.push_back({{"direction", c.direction},
                      {"a_ms_per_step", or_null(c.a_ms_per_step)},
                      {"b_ms_per_step", or_null(c.b_ms_per_step)},
                      {"delta_ms_per_step", or_null(c.delta_ms_per_step)},
                      {"a_bytes_per_step", or_null(c.a_bytes_per_step)},
                      {"b_bytes_per_step", or_null(c.b_bytes_per_step)},
                      {"a_count_per_step", or_null(c.a_count_per_step)},
                      {"b_count_per_step", or_null(c.b_count_per_step)},
                      {"a_bandwidth_gbps", or_null(c.a_bandwidth_gbps)},
                      {"b_bandwidth_gbps", or_null(c.b_bandwidth_gbps)},
                      {"a_pageable_fraction", or_null(c.a_pageable_fraction)},
                      {"b_pageable_fraction", or_null(c.b_pageable_fraction)}});
  out["copies"] = std::move(copies);
  const DiffRecommendations& r = d.recommendations;
  out["recommendations"] = {{"a", r.a}, {"b", r.b}, {"resolved", r.resolved}, {"new", r.added}};
  return out;
}

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
