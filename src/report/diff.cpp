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
#include "profile_train/common/terminal.h"
#include "profile_train/report/escape.h"
#include "profile_train/report/report_json.h"
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

json opt(std::optional<double> v) { return v ? json(*v) : json(nullptr); }

json pair_entry(std::optional<double> a, std::optional<double> b) {
  json e = {{"a", opt(a)}, {"b", opt(b)}, {"delta", nullptr}};
  if (a && b) e["delta"] = *b - *a;
  return e;
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
    j = json::parse(in);
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

json diff_reports(const Report& a, const Report& b, const std::string& label_a, const std::string& label_b,
                  const DiffOptions& options) {
  json d;
  d["diff_version"] = kDiffVersion;
  d["tool"] = {{"name", "profile-train"}};
  auto side = [](const Report& r, const std::string& label) {
    return json{{"label", label},
                {"bottleneck", name_of(r.verdict.bottleneck)},
                {"confidence", r.verdict.confidence},
                {"summary", r.verdict.summary},
                // a float in diff.json, as diff 1.0 wrote it
                {"steps", static_cast<double>(r.steps.count)},
                {"device", r.device ? r.device->name.value_or("") : std::string()}};
  };
  d["a"] = side(a, label_a);
  d["b"] = side(b, label_b);

  const auto ma = a.steps.mean_ms;
  const auto mb = b.steps.mean_ms;
  json st = {{"a_ms", opt(ma)}, {"b_ms", opt(mb)}, {"delta_ms", nullptr}, {"ratio", nullptr}, {"speedup", nullptr}};
  if (ma && mb) {
    st["delta_ms"] = *mb - *ma;
    // A 0 ms mean step (a trace without a step window) has no meaningful ratio: both stay null.
    if (*ma > 0 && *mb > 0) {
      st["ratio"] = *mb / *ma;
      st["speedup"] = *ma / *mb;
    }
  }
  d["step_time"] = st;
  d["gpu_utilization"] = pair_entry(a.gpu.utilization, b.gpu.utilization);

  json cats = json::array();
  for (Role role : kAllRoles) {
    auto ms_of = [&](const Report& r, std::optional<double> mean) -> std::optional<double> {
      if (auto v = r.breakdown_ms[role]) return v;
      if (auto f = r.breakdown[role]; f && mean) return *f * *mean;
      return std::nullopt;
    };
    const auto am = ms_of(a, ma), bm = ms_of(b, mb);
    json e = {{"category", name_of(role)},
              {"a_ms", opt(am)},
              {"b_ms", opt(bm)},
              {"delta_ms", nullptr},
              {"a_fraction", opt(a.breakdown[role])},
              {"b_fraction", opt(b.breakdown[role])}};
    if (am && bm) e["delta_ms"] = *bm - *am;
    cats.push_back(std::move(e));
  }
  d["breakdown"] = std::move(cats);

  const std::string va = d["a"]["bottleneck"], vb = d["b"]["bottleneck"];
  d["verdict"] = {{"a", va}, {"b", vb}, {"changed", va != vb}};

  // Kernels: union of both top lists, ordered by |change in ms per step|.
  const auto ka = kernel_rows(a), kb = kernel_rows(b);
  std::set<std::string> names;
  for (const auto& [n, _] : ka) names.insert(n);
  for (const auto& [n, _] : kb) names.insert(n);
  struct K {
    std::string name;
    std::optional<double> am, bm, ac, bc;
    double magnitude;
  };
  std::vector<K> ks;
  for (const auto& n : names) {
    K k{n, {}, {}, {}, {}, 0};
    if (auto it = ka.find(n); it != ka.end()) k.am = it->second.ms_per_step, k.ac = it->second.count_per_step;
    if (auto it = kb.find(n); it != kb.end()) k.bm = it->second.ms_per_step, k.bc = it->second.count_per_step;
    // A kernel missing from one top list changed by at least its time in the other.
    k.magnitude = std::fabs(k.bm.value_or(0) - k.am.value_or(0));
    ks.push_back(std::move(k));
  }
  std::stable_sort(ks.begin(), ks.end(), [](const K& x, const K& y) { return x.magnitude > y.magnitude; });
  json kernels = json::array();
  for (size_t i = 0; i < ks.size() && static_cast<int>(i) < options.top; ++i) {
    const K& k = ks[i];
    json e = {{"name", k.name},
              {"a_ms_per_step", opt(k.am)},
              {"b_ms_per_step", opt(k.bm)},
              {"delta_ms_per_step", nullptr},
              {"a_count_per_step", opt(k.ac)},
              {"b_count_per_step", opt(k.bc)},
              {"status", k.am && k.bm ? "in_both" : k.am ? "only_in_a_top" : "only_in_b_top"}};
    if (k.am && k.bm) e["delta_ms_per_step"] = *k.bm - *k.am;
    kernels.push_back(std::move(e));
  }
  d["kernels"] = std::move(kernels);

  json copies = json::array();
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
    auto field = [](const CopyDirection* c, double CopyDirection::*f) { return c ? json(c->*f) : json(nullptr); };
    auto optional_field = [](const CopyDirection* c, std::optional<double> CopyDirection::*f) {
      return c ? opt(c->*f) : json(nullptr);
    };
    json e = {{"direction", dir},
              {"a_ms_per_step", field(ca, &CopyDirection::time_ms_per_step)},
              {"b_ms_per_step", field(cb, &CopyDirection::time_ms_per_step)},
              {"delta_ms_per_step", nullptr},
              {"a_bytes_per_step", field(ca, &CopyDirection::bytes_per_step)},
              {"b_bytes_per_step", field(cb, &CopyDirection::bytes_per_step)},
              {"a_count_per_step", field(ca, &CopyDirection::count_per_step)},
              {"b_count_per_step", field(cb, &CopyDirection::count_per_step)},
              {"a_bandwidth_gbps", optional_field(ca, &CopyDirection::bandwidth_gbps)},
              {"b_bandwidth_gbps", optional_field(cb, &CopyDirection::bandwidth_gbps)},
              {"a_pageable_fraction", optional_field(ca, &CopyDirection::pageable_fraction)},
              {"b_pageable_fraction", optional_field(cb, &CopyDirection::pageable_fraction)}};
    if (e["a_ms_per_step"].is_number() && e["b_ms_per_step"].is_number())
      e["delta_ms_per_step"] = e["b_ms_per_step"].get<double>() - e["a_ms_per_step"].get<double>();
    copies.push_back(std::move(e));
  }
  std::stable_sort(copies.begin(), copies.end(), [](const json& x, const json& y) {
    auto mag = [](const json& e) { return e["delta_ms_per_step"].is_number() ? std::fabs(e["delta_ms_per_step"].get<double>()) : 0.0; };
    return mag(x) > mag(y);
  });
  d["copies"] = std::move(copies);

  auto rec_ids = [](const Report& r) {
    std::vector<std::string> ids;
    for (const auto& rec : r.recommendations) ids.push_back(rec.id);
    return ids;
  };
  const auto ra = rec_ids(a), rb = rec_ids(b);
  json resolved = json::array(), added = json::array();
  for (const auto& id : ra)
    if (std::find(rb.begin(), rb.end(), id) == rb.end()) resolved.push_back(id);
  for (const auto& id : rb)
    if (std::find(ra.begin(), ra.end(), id) == ra.end()) added.push_back(id);
  d["recommendations"] = {{"a", ra}, {"b", rb}, {"resolved", resolved}, {"new", added}};
  return d;
}

// ---- text ---------------------------------------------------------------------------------------------

namespace {
// j[key] for reading documents that may lack it: a null value instead of undefined behaviour.
const json& at(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}
// A string member made inert for the terminal (`dflt` when missing or not a string).
std::string safe(const json& j, const char* key, const char* dflt = "") {
  const json& v = at(j, key);
  return terminal_safe(v.is_string() ? v.get<std::string>() : std::string(dflt));
}
std::string num_or_dash(const json& v, std::string (*f)(std::optional<double>)) {
  return f(v.is_number() ? std::optional<double>(v.get<double>()) : std::nullopt);
}
std::string pad(std::string s, size_t w, bool right = false) {
  // Width in code points (names are UTF-8); good enough for a terminal table.
  size_t cps = 0;
  for (unsigned char c : s) cps += (c & 0xC0) != 0x80;
  if (cps >= w) return s;
  return right ? std::string(w - cps, ' ') + s : s + std::string(w - cps, ' ');
}
std::string delta_text(const json& v, bool color, bool lower_is_better = true) {
  if (!v.is_number()) return "";
  const double d = v.get<double>();
  std::string s = sign_ms(d);
  if (!color || std::fabs(d) < 1e-9) return s;
  const bool good = lower_is_better ? d < 0 : d > 0;
  return std::string(good ? "\x1b[32m" : "\x1b[31m") + s + "\x1b[0m";
}
}  // namespace

void write_diff_text(const json& d, std::ostream& out, const TextOptions& options) {
  const bool color = options.color;
  const char* bold = color ? "\x1b[1m" : "";
  const char* reset = color ? "\x1b[0m" : "";
  const json& st = d.value("step_time", json::object());
  // Every string of the document comes from the reports (labels are paths, kernel names come from traces):
  // terminal_safe() keeps their escape sequences from reaching the terminal.
  out << bold << "profile-train diff" << reset << "  A: " << safe(at(d, "a"), "label") << "  B: "
      << safe(at(d, "b"), "label") << "\n";
  out << bold << "Step time   " << reset << num_or_dash(st.value("a_ms", json()), fmt_ms) << " -> "
      << num_or_dash(st.value("b_ms", json()), fmt_ms);
  const json& ratio = at(st, "ratio");
  const json& speedup = at(st, "speedup");
  if (at(st, "delta_ms").is_number()) {
    out << "  (" << delta_text(at(st, "delta_ms"), color) << ", B/A = "
        << (ratio.is_number() ? format_fixed(ratio.get<double>(), 3) : std::string("n/a"));
    if (speedup.is_number() && speedup.get<double>() > 0) {
      const double s = speedup.get<double>();
      out << ", " << (s >= 1 ? format_fixed(s, 2) + "x faster" : format_fixed(1 / s, 2) + "x slower");
    }
    out << ")";
  }
  out << "\n";
  const json& v = d.value("verdict", json::object());
  out << bold << "Verdict     " << reset << safe(v, "a", "?") << " -> " << safe(v, "b", "?")
      << (v.value("changed", false) ? "  (changed)" : "  (unchanged)") << "\n";
  const json& gu = d.value("gpu_utilization", json::object());
  out << bold << "GPU util    " << reset << num_or_dash(gu.value("a", json()), fmt_pct) << " -> "
      << num_or_dash(gu.value("b", json()), fmt_pct) << "\n\n";
  out << bold << pad("Breakdown (per step)", 24) << pad("A", 12, true) << pad("B", 12, true) << pad("change", 14, true)
      << reset << "\n";
  for (const auto& c : d.value("breakdown", json::array())) {
    std::string label = safe(c, "category");
    if (const auto role = role_from_name(label)) label = style_of(*role).label;
    out << pad(label, 24) << pad(num_or_dash(at(c, "a_ms"), fmt_ms), 12, true) << pad(num_or_dash(at(c, "b_ms"), fmt_ms), 12, true)
        << pad("", 2) << delta_text(at(c, "delta_ms"), color) << "\n";
  }
  const json& ks = d.value("kernels", json::array());
  if (!ks.empty()) {
    out << "\n" << bold << "Kernels that changed most (ms per step)" << reset << "\n";
    for (const auto& k : ks) {
      out << "  " << pad(num_or_dash(at(k, "a_ms_per_step"), fmt_ms), 10, true) << " -> "
          << pad(num_or_dash(at(k, "b_ms_per_step"), fmt_ms), 10, true) << "  "
          << pad(delta_text(at(k, "delta_ms_per_step"), color), 11) << " "
          << detail::truncate_utf8(safe(k, "name"), 90);
      const std::string s = k.value("status", "");
      if (s == "only_in_a_top") out << "  [not in B's top kernels]";
      if (s == "only_in_b_top") out << "  [not in A's top kernels]";
      out << "\n";
    }
  }
  const json& cs = d.value("copies", json::array());
  if (!cs.empty()) {
    out << "\n" << bold << "Copies (per step)" << reset << "\n";
    for (const auto& c : cs) {
      out << "  " << pad(safe(c, "direction"), 4) << " " << pad(num_or_dash(at(c, "a_ms_per_step"), fmt_ms), 10, true)
          << " -> " << pad(num_or_dash(at(c, "b_ms_per_step"), fmt_ms), 10, true) << "  "
          << pad(delta_text(at(c, "delta_ms_per_step"), color), 11) << " bandwidth "
          << num_or_dash(at(c, "a_bandwidth_gbps"), fmt_gbps) << " -> " << num_or_dash(at(c, "b_bandwidth_gbps"), fmt_gbps)
          << ", pageable " << num_or_dash(at(c, "a_pageable_fraction"), fmt_pct) << " -> "
          << num_or_dash(at(c, "b_pageable_fraction"), fmt_pct) << "\n";
    }
  }
  const json& recs = d.value("recommendations", json::object());
  auto join = [](const json& arr) {
    std::string s;
    for (const auto& x : arr) s += (s.empty() ? "" : ", ") + terminal_safe(x.is_string() ? x.get<std::string>() : x.dump());
    return s.empty() ? std::string("none") : s;
  };
  out << "\n" << bold << "Recommendations" << reset << "  resolved: " << join(recs.value("resolved", json::array()))
      << "; new: " << join(recs.value("new", json::array())) << "\n";
}

// ---- HTML ---------------------------------------------------------------------------------------------

namespace {
class Html {
 public:
  Html& raw(std::string_view s) { return out_.append(s), *this; }
  Html& text(std::string_view s) { return detail::append_html_escaped(out_, s), *this; }
  std::string& str() { return out_; }

 private:
  std::string out_;
};

void delta_cell(Html& h, const json& v) {
  if (!v.is_number()) {
    h.raw("<td class=\"num\">").raw(detail::kDash).raw("</td>");
    return;
  }
  const double d = v.get<double>();
  h.raw("<td class=\"num ").raw(d > 1e-9 ? "delta-up" : d < -1e-9 ? "delta-down" : "").raw("\">").text(sign_ms(d)).raw("</td>");
}
}  // namespace

std::string render_diff_html(const json& d) {
  Html h;
  const json& st = d.value("step_time", json::object());
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">\n<title>profile-train diff</title>\n<script>")
      .raw(detail::asset_head_js()).raw("</script>\n<style>").raw(detail::asset_report_css()).raw("</style>\n</head>\n<body data-render=\"pending\">\n");
  const std::optional<double> speedup = st.value("speedup", json()).is_number() ? std::optional<double>(at(st, "speedup").get<double>()) : std::nullopt;
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
  kpi("Step time A", num_or_dash(st.value("a_ms", json()), fmt_ms), at(d, "a").value("label", ""));
  kpi("Step time B", num_or_dash(st.value("b_ms", json()), fmt_ms), at(d, "b").value("label", ""));
  const json& gu = d.value("gpu_utilization", json::object());
  kpi("GPU utilization", num_or_dash(gu.value("a", json()), fmt_pct) + " \xE2\x86\x92 " + num_or_dash(gu.value("b", json()), fmt_pct), "kernel time / step");
  h.raw("</div>\n<div class=\"verdict-change\" id=\"diff-verdict\">Bottleneck: <b>")
      .text(detail::bottleneck_label(at(d, "verdict").value("a", "unknown"))).raw("</b> \xE2\x86\x92 <b>")
      .text(detail::bottleneck_label(at(d, "verdict").value("b", "unknown"))).raw("</b>")
      .raw(at(d, "verdict").value("changed", false) ? " (changed)" : " (unchanged)").raw("</div>\n</header>\n<main>\n");

  h.raw("<section id=\"diff-breakdown\"><h2>Step-time breakdown (mean per step)</h2><table class=\"data\"><thead><tr>"
        "<th>Category</th><th class=\"num\">A</th><th class=\"num\">B</th><th class=\"num\">Change</th>"
        "<th class=\"num\">Share A</th><th class=\"num\">Share B</th></tr></thead><tbody>\n");
  for (const auto& c : d.value("breakdown", json::array())) {
    const std::string key = c.value("category", "");
    const auto role = role_from_name(key);
    h.raw("<tr><td>");
    if (role) h.raw("<span class=\"swatch\" style=\"background:").raw(style_of(*role).color).raw("\"></span>").raw(style_of(*role).label);
    else h.text(key);
    h.raw("</td><td class=\"num\">").text(num_or_dash(at(c, "a_ms"), fmt_ms)).raw("</td><td class=\"num\">")
        .text(num_or_dash(at(c, "b_ms"), fmt_ms)).raw("</td>");
    delta_cell(h, at(c, "delta_ms"));
    h.raw("<td class=\"num\">").text(num_or_dash(at(c, "a_fraction"), fmt_pct)).raw("</td><td class=\"num\">")
        .text(num_or_dash(at(c, "b_fraction"), fmt_pct)).raw("</td></tr>\n");
  }
  h.raw("<tr><td><b>Step time</b></td><td class=\"num\"><b>").text(num_or_dash(st.value("a_ms", json()), fmt_ms))
      .raw("</b></td><td class=\"num\"><b>").text(num_or_dash(st.value("b_ms", json()), fmt_ms)).raw("</b></td>");
  delta_cell(h, st.value("delta_ms", json()));
  h.raw("<td></td><td></td></tr>\n</tbody></table></section>\n");

  h.raw("<section id=\"diff-kernels\"><h2>Kernels that changed most</h2>");
  const json& ks = d.value("kernels", json::array());
  if (ks.empty()) {
    h.raw("<p class=\"na\">Neither report lists GPU kernels.</p>");
  } else {
    h.raw("<table class=\"data\"><thead><tr><th>Kernel</th><th class=\"num\">A ms/step</th><th class=\"num\">B ms/step</th>"
          "<th class=\"num\">Change</th><th>Note</th></tr></thead><tbody>\n");
    for (const auto& k : ks) {
      const std::string name = k.value("name", "");
      h.raw("<tr><td class=\"kname\" title=\"").text(name).raw("\"><code>").text(detail::truncate_utf8(name, 160))
          .raw("</code></td><td class=\"num\">").text(num_or_dash(at(k, "a_ms_per_step"), fmt_ms)).raw("</td><td class=\"num\">")
          .text(num_or_dash(at(k, "b_ms_per_step"), fmt_ms)).raw("</td>");
      delta_cell(h, at(k, "delta_ms_per_step"));
      const std::string s = k.value("status", "");
      h.raw("<td>").raw(s == "only_in_a_top" ? "not in B's top kernels" : s == "only_in_b_top" ? "not in A's top kernels" : "")
          .raw("</td></tr>\n");
    }
    h.raw("</tbody></table>");
  }
  h.raw("</section>\n<section id=\"diff-copies\"><h2>Copies</h2>");
  const json& cs = d.value("copies", json::array());
  if (cs.empty()) {
    h.raw("<p class=\"na\">Neither report has memory copies.</p>");
  } else {
    h.raw("<table class=\"data\"><thead><tr><th>Direction</th><th class=\"num\">A ms/step</th><th class=\"num\">B ms/step</th>"
          "<th class=\"num\">Change</th><th class=\"num\">Bytes/step A \xE2\x86\x92 B</th><th class=\"num\">Bandwidth A \xE2\x86\x92 B</th>"
          "<th class=\"num\">Pageable A \xE2\x86\x92 B</th></tr></thead><tbody>\n");
    for (const auto& c : cs) {
      h.raw("<tr><td>").text(c.value("direction", "")).raw("</td><td class=\"num\">").text(num_or_dash(at(c, "a_ms_per_step"), fmt_ms))
          .raw("</td><td class=\"num\">").text(num_or_dash(at(c, "b_ms_per_step"), fmt_ms)).raw("</td>");
      delta_cell(h, at(c, "delta_ms_per_step"));
      h.raw("<td class=\"num\">").text(num_or_dash(at(c, "a_bytes_per_step"), fmt_bytes) + " \xE2\x86\x92 " + num_or_dash(at(c, "b_bytes_per_step"), fmt_bytes))
          .raw("</td><td class=\"num\">").text(num_or_dash(at(c, "a_bandwidth_gbps"), fmt_gbps) + " \xE2\x86\x92 " + num_or_dash(at(c, "b_bandwidth_gbps"), fmt_gbps))
          .raw("</td><td class=\"num\">").text(num_or_dash(at(c, "a_pageable_fraction"), fmt_pct) + " \xE2\x86\x92 " + num_or_dash(at(c, "b_pageable_fraction"), fmt_pct))
          .raw("</td></tr>\n");
    }
    h.raw("</tbody></table>");
  }
  h.raw("</section>\n<section id=\"diff-recs\"><h2>Recommendations</h2><table class=\"data compact\"><tbody>");
  const json& recs = d.value("recommendations", json::object());
  auto list = [&](const char* label, const char* key) {
    std::string s;
    for (const auto& x : recs.value(key, json::array())) s += (s.empty() ? "" : ", ") + (x.is_string() ? x.get<std::string>() : x.dump());
    h.raw("<tr><th>").raw(label).raw("</th><td>").text(s.empty() ? std::string(detail::kDash) : s).raw("</td></tr>");
  };
  list("Resolved (in A, not in B)", "resolved");
  list("New in B", "new");
  list("All in A", "a");
  list("All in B", "b");
  h.raw("</tbody></table></section>\n</main>\n<footer>diff format ").text(d.value("diff_version", "")).raw("</footer>\n");
  h.raw("<script>document.body.setAttribute('data-render', window.__ptErrors && window.__ptErrors.length ? 'error' : 'ok');"
        "if (window.__ptMarkErrors) window.__ptMarkErrors();</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

Status write_diff_html(const json& diff, const std::filesystem::path& path) {
  std::string html;
  try {
    html = render_diff_html(diff);
  } catch (const std::exception& e) {
    return Internal(path.string() + ": cannot render the diff: " + e.what());
  }
  return write_file_atomic(path, html);
}

}  // namespace profile_train::report
