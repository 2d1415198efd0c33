// report.html: where the time goes -- the top operators by GPU time (bar chart and sortable table), by host
// self time, the operators the host runs while the GPU idles, and the annotation / module ranges. Every
// program-supplied string is escaped (Html::text); numeric cells carry data-v for the sort.
#include <algorithm>
#include <string>

#include "html_common.h"

namespace profile_train::report::detail {

using nlohmann::json;

namespace {

struct Column {
  const char* key;
  const char* label;
  std::string (*fmt)(std::optional<double>);
};

void table(Html& h, const json& rows, const char* id, const std::vector<Column>& cols) {
  h.raw("<table class=\"data sortable\" id=\"").raw(id).raw("\"><thead><tr><th>Name</th>");
  for (const auto& c : cols) h.raw("<th class=\"num\">").raw(c.label).raw("</th>");
  h.raw("</tr></thead><tbody>\n");
  for (const auto& r : rows) {
    const std::string name = string_path(r, {"name"}).value_or("?");
    h.raw("<tr><td class=\"kname\" title=\"").text(name).raw("\"><code>").text(truncate_utf8(name, 120)).raw("</code></td>");
    for (const auto& c : cols) {
      const auto v = number_path(r, {c.key});
      h.raw("<td class=\"num\"").raw(v ? " data-v=\"" + format_fixed(*v, 6) + "\"" : "").raw(">").text(c.fmt(v)).raw("</td>");
    }
    h.raw("</tr>\n");
  }
  h.raw("</tbody></table>\n");
}

std::string fmt_plain(std::optional<double> v) { return v ? format_fixed(*v, *v >= 100 ? 0 : 1) : std::string(kDash); }

}  // namespace

void write_operators(Html& h, const json& r) {
  const json* o = find_path(r, {"operators"});
  if (!o || !o->is_object()) return;
  const json* gpu = find_path(*o, {"top_by_gpu_time"});
  const json* host = find_path(*o, {"top_by_host_time"});
  const json* idle = find_path(*o, {"during_gpu_idle"});
  const json* mods = find_path(*o, {"modules"});
  auto has = [](const json* a) { return a && a->is_array() && !a->empty(); };
  if (!has(gpu) && !has(host) && !has(mods)) return;
  h.raw("<section id=\"operators\"><h2>Where the time goes: operators and modules</h2>\n");
  if (auto f = number_path(*o, {"attributed_fraction"})) {
    h.raw("<p class=\"hint\" id=\"operators-attributed\">").text(fmt_pct(f)).raw(" of GPU time is joined to the operator that launched it");
    if (auto u = number_path(*o, {"unattributed_ms_per_step"}); u && *u > 0)
      h.raw("; ").text(fmt_ms(u)).raw(" per step is not (no operator around its launch)");
    h.raw(".</p>\n");
  }
  if (has(gpu)) {
    h.raw("<h3>Top operators by GPU time</h3>\n<div class=\"opbars\" id=\"operators-chart\">\n");
    double max_share = 0;
    for (const auto& row : *gpu) max_share = std::max(max_share, number_path(row, {"gpu_share"}).value_or(0.0));
    for (const auto& row : *gpu) {
      const auto share = number_path(row, {"gpu_share"});
      const std::string name = string_path(row, {"name"}).value_or("?");
      h.raw("<div class=\"opbar\"><code title=\"").text(name).raw("\">").text(truncate_utf8(name, 80))
          .raw("</code><div class=\"bar\"><span style=\"width:")
          .raw(format_fixed(max_share > 0 ? 100.0 * share.value_or(0.0) / max_share : 0.0, 1)).raw("%\"></span></div><span>")
          .text(fmt_pct(share)).raw("</span></div>\n");
    }
    h.raw("</div>\n");
    table(h, *gpu, "operators-gpu-table",
          {{"gpu_ms_per_step", "GPU / step", fmt_ms}, {"gpu_share", "Share of GPU time", fmt_pct},
           {"calls_per_step", "Calls / step", fmt_plain}, {"gpu_activities_per_call", "Kernels / call", fmt_plain},
           {"host_self_ms_per_step", "Host self / step", fmt_ms}});
  }
  if (has(host)) {
    h.raw("<h3>Top operators by host self time</h3>\n");
    table(h, *host, "operators-host-table",
          {{"host_self_ms_per_step", "Host self / step", fmt_ms}, {"host_share", "Share of the step", fmt_pct},
           {"calls_per_step", "Calls / step", fmt_plain}, {"gpu_ms_per_step", "GPU / step", fmt_ms}});
  }
  if (has(idle)) {
    h.raw("<h3>Operators on the host while the GPU idles</h3>\n");
    table(h, *idle, "operators-idle-table",
          {{"idle_ms_per_step", "GPU idle / step", fmt_ms}, {"idle_share", "Share of the idle time", fmt_pct}});
  }
  if (has(mods)) {
    h.raw("<h3>Annotations and modules by GPU time</h3>\n");
    table(h, *mods, "operators-module-table",
          {{"gpu_ms_per_step", "GPU / step", fmt_ms}, {"gpu_share", "Share of GPU time", fmt_pct}});
  }
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
