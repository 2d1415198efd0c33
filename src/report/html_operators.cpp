// report.html: where the time goes -- the top operators by GPU time (bar chart and sortable table), by host
// self time (both with each operator's leading input shapes when the trace records them), the operators the
// host runs while the GPU idles, and the annotation / module ranges. Every program-supplied string is escaped
// (Html::text); numeric cells carry data-v for the sort.
#include <algorithm>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "html_common.h"

namespace profile_train::report::detail {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

// A numeric column of one operator table: its header, the row's value and how it is shown.
template <class Row>
struct Column {
  const char* label;
  std::optional<double> (*value)(const Row&);
  std::string (*fmt)(std::optional<double>);
};

// A report read from disk may hold any length; the importer writes at most trace::kMaxInputsText (512).
constexpr size_t kMaxShapesTitle = 600;
constexpr size_t kShownShapes = 160;  // longer ones are cut, in full in the title

// Rows that may carry input shapes (Kineto record_shapes): the GPU and host tables.
template <class Row>
constexpr bool kHasShapes = requires(const Row& r) { r.input_shapes; };

// The row's leading input signatures, one line each: shapes, then dtypes and the per-step figures, the one
// the table is ranked by first.
template <class Row>
void shapes_cell(Html& h, const Row& r) {
  h.raw("<td class=\"shapes\">");
  if (r.input_shapes) {
    for (const auto& g : *r.input_shapes) {
      h.raw("<div>");
      if (g.shapes && g.shapes->size() > kShownShapes)
        h.raw("<code title=\"").text(truncate_utf8(*g.shapes, kMaxShapesTitle)).raw("\">").text(truncate_utf8(*g.shapes, kShownShapes)).raw("</code>");
      else if (g.shapes)
        h.raw("<code>").text(*g.shapes).raw("</code>");
      else h.raw("<span class=\"hint\">not recorded</span>");
      h.raw(" <span class=\"hint\">");
      if (g.types) h.text(truncate_utf8(*g.types, 160)).raw(" &middot; ");
      h.text(format_fixed(g.calls_per_step, g.calls_per_step >= 100 ? 0 : 1)).raw(" calls &middot; ");
      if constexpr (std::is_same_v<Row, model::OperatorHostRow>)
        h.text(fmt_ms(g.host_self_ms_per_step)).raw(" host self, ").text(fmt_ms(g.gpu_ms_per_step)).raw(" GPU");
      else
        h.text(fmt_ms(g.gpu_ms_per_step)).raw(" GPU, ").text(fmt_ms(g.host_self_ms_per_step)).raw(" host self");
      h.raw(" / step</span></div>");
    }
    const int64_t more = r.input_shape_groups.value_or(0) - static_cast<int64_t>(r.input_shapes->size());
    if (more > 0) h.raw("<div class=\"hint\">").text(std::to_string(more)).raw(more == 1 ? " more signature" : " more signatures").raw("</div>");
  }
  h.raw("</td>");
}

template <class Row>
void table(Html& h, const std::vector<Row>& rows, const char* id, const std::vector<Column<Row>>& cols) {
  bool shapes = false;
  if constexpr (kHasShapes<Row>)
    for (const Row& r : rows) shapes = shapes || r.input_shapes.has_value();
  h.raw("<table class=\"data sortable\" id=\"").raw(id).raw("\"><thead><tr><th>Name</th>");
  if (shapes) h.raw("<th>Leading input shapes</th>");
  for (const auto& c : cols) h.raw("<th class=\"num\">").raw(c.label).raw("</th>");
  h.raw("</tr></thead><tbody>\n");
  for (const Row& r : rows) {
    h.raw("<tr><td class=\"kname\" title=\"").text(r.name).raw("\"><code>").text(truncate_utf8(r.name, 120)).raw("</code></td>");
    if constexpr (kHasShapes<Row>)
      if (shapes) shapes_cell(h, r);
    for (const auto& c : cols) {
      const auto v = c.value(r);
      h.raw("<td class=\"num\"").raw(v ? " data-v=\"" + format_fixed(*v, 6) + "\"" : "").raw(">").text(c.fmt(v)).raw("</td>");
    }
    h.raw("</tr>\n");
  }
  h.raw("</tbody></table>\n");
}

std::string fmt_plain(std::optional<double> v) { return v ? format_fixed(*v, *v >= 100 ? 0 : 1) : std::string(kDash); }

}  // namespace

void write_operators(Html& h, const model::Report& r) {
  using model::ModuleShare;
  using model::OperatorGpuRow;
  using model::OperatorHostRow;
  using model::OperatorIdleRow;
  const model::Operators& o = r.operators;
  if (o.top_by_gpu_time.empty() && o.top_by_host_time.empty() && o.modules.empty()) return;
  h.raw("<section id=\"operators\"><h2>Where the time goes: operators and modules</h2>\n");
  if (const auto f = o.attributed_fraction) {
    h.raw("<p class=\"hint\" id=\"operators-attributed\">").text(fmt_pct(f)).raw(" of GPU time is joined to the operator that launched it");
    if (const auto u = o.unattributed_ms_per_step; u && *u > 0)
      h.raw("; ").text(fmt_ms(u)).raw(" per step is not (no operator around its launch)");
    h.raw(".</p>\n");
  }
  if (!o.top_by_gpu_time.empty()) {
    h.raw("<h3>Top operators by GPU time</h3>\n<div class=\"opbars\" id=\"operators-chart\">\n");
    double max_share = 0;
    for (const auto& row : o.top_by_gpu_time) max_share = std::max(max_share, row.gpu_share.value_or(0.0));
    for (const auto& row : o.top_by_gpu_time) {
      h.raw("<div class=\"opbar\"><code title=\"").text(row.name).raw("\">").text(truncate_utf8(row.name, 80))
          .raw("</code><div class=\"bar\"><span style=\"width:")
          .raw(format_fixed(max_share > 0 ? 100.0 * row.gpu_share.value_or(0.0) / max_share : 0.0, 1)).raw("%\"></span></div><span>")
          .text(fmt_pct(row.gpu_share)).raw("</span></div>\n");
    }
    h.raw("</div>\n");
    table<OperatorGpuRow>(
        h, o.top_by_gpu_time, "operators-gpu-table",
        {{"GPU / step", [](const OperatorGpuRow& x) -> std::optional<double> { return x.gpu_ms_per_step; }, fmt_ms},
         {"Share of GPU time", [](const OperatorGpuRow& x) { return x.gpu_share; }, fmt_pct},
         {"Calls / step", [](const OperatorGpuRow& x) -> std::optional<double> { return x.calls_per_step; }, fmt_plain},
         {"Kernels / call", [](const OperatorGpuRow& x) { return x.gpu_activities_per_call; }, fmt_plain},
         {"Host self / step", [](const OperatorGpuRow& x) -> std::optional<double> { return x.host_self_ms_per_step; },
          fmt_ms}});
  }
  if (!o.top_by_host_time.empty()) {
    h.raw("<h3>Top operators by host self time</h3>\n");
    table<OperatorHostRow>(
        h, o.top_by_host_time, "operators-host-table",
        {{"Host self / step", [](const OperatorHostRow& x) -> std::optional<double> { return x.host_self_ms_per_step; },
          fmt_ms},
         {"Share of the step", [](const OperatorHostRow& x) -> std::optional<double> { return x.host_share; }, fmt_pct},
         {"Calls / step", [](const OperatorHostRow& x) -> std::optional<double> { return x.calls_per_step; }, fmt_plain},
         {"GPU / step", [](const OperatorHostRow& x) -> std::optional<double> { return x.gpu_ms_per_step; }, fmt_ms}});
  }
  if (!o.during_gpu_idle.empty()) {
    h.raw("<h3>Operators on the host while the GPU idles</h3>\n");
    table<OperatorIdleRow>(
        h, o.during_gpu_idle, "operators-idle-table",
        {{"GPU idle / step", [](const OperatorIdleRow& x) -> std::optional<double> { return x.idle_ms_per_step; }, fmt_ms},
         {"Share of the idle time", [](const OperatorIdleRow& x) { return x.idle_share; }, fmt_pct}});
  }
  if (!o.modules.empty()) {
    h.raw("<h3>Annotations and modules by GPU time</h3>\n");
    std::vector<Column<ModuleShare>> cols = {
        {"GPU / step", [](const ModuleShare& x) -> std::optional<double> { return x.gpu_ms_per_step; }, fmt_ms},
        {"Share of GPU time", [](const ModuleShare& x) { return x.gpu_share; }, fmt_pct}};
    // With the shim's module backward ranges, the forward / backward split (a dash for rows the split does not
    // cover); the GPU time is their sum.
    const bool split = std::any_of(o.modules.begin(), o.modules.end(),
                                   [](const ModuleShare& m) { return m.backward_gpu_ms_per_step.has_value(); });
    if (split) {
      cols.insert(cols.begin() + 1,
                  {{"Forward / step",
                    [](const ModuleShare& x) -> std::optional<double> {
                      if (!x.backward_gpu_ms_per_step) return std::nullopt;
                      return std::max(0.0, x.gpu_ms_per_step - *x.backward_gpu_ms_per_step);
                    },
                    fmt_ms},
                   {"Backward / step", [](const ModuleShare& x) { return x.backward_gpu_ms_per_step; }, fmt_ms}});
    }
    table<ModuleShare>(h, o.modules, "operators-module-table", cols);
  }
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
