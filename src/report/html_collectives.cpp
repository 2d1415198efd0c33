// report.html: the collectives (report.collectives): the summary line, the table by kind, process group, dtype
// and size with each row's bus bandwidth drawn against the link's peak, and how much of it compute hides.
#include <algorithm>
#include <string>

#include "html_common.h"

namespace profile_train::report::detail {

namespace {

std::string size_text(int64_t b) {
  const double v = static_cast<double>(b);
  if (v >= 1e9) return format_fixed(v / 1e9, 2) + " GB";
  if (v >= 1e6) return format_fixed(v / 1e6, 2) + " MB";
  if (v >= 1e3) return format_fixed(v / 1e3, 1) + " KB";
  return std::to_string(b) + " B";
}

}  // namespace

void write_collectives(Html& h, const model::Report& r) {
  if (!r.collectives) return;
  const auto& c = *r.collectives;
  h.raw("<section id=\"collectives\"><h2>Collectives</h2>\n<p id=\"collectives-summary\"><strong>")
      .text(c.summary.value_or("collectives ran")).raw("</strong></p>\n<p class=\"hint\">")
      .text(fmt_count(c.calls_per_step) + " calls and " + fmt_ms(c.ms_per_step) + " per step");
  if (c.exposed_ms_per_step)
    h.text(", of which " + fmt_ms(*c.exposed_ms_per_step) + " (" + fmt_pct(c.exposed_share) + " of the step) not hidden by compute");
  h.text(". Bus bandwidth as nccl-tests computes it (algbw = bytes / time; busbw = algbw x 2(n-1)/n for all_reduce, "
         "(n-1)/n for all_gather, reduce_scatter and all_to_all, 1 for broadcast and send/recv)");
  if (c.link) h.text(", against " + c.link->name + "'s " + format_fixed(c.link->gbps, 0) + " GB/s per direction");
  h.raw(".</p>\n");
  double bar_top = c.link ? c.link->gbps : 0;
  for (const auto& row : c.rows) bar_top = std::max(bar_top, row.busbw_gbps.value_or(row.algbw_gbps.value_or(0.0)));
  h.raw("<table class=\"data sortable\" id=\"collectives-table\"><thead><tr><th>Collective</th><th>Group</th>"
        "<th>Dtype</th><th class=\"num\">Size</th><th class=\"num\">Calls/step</th><th class=\"num\">Per step</th>"
        "<th class=\"num\">Mean</th><th class=\"num\">busbw GB/s</th><th>Against the peak</th>"
        "<th class=\"num\">Exposed</th></tr></thead><tbody>\n");
  for (const auto& row : c.rows) {
    const double bw = row.busbw_gbps.value_or(row.algbw_gbps.value_or(0.0));
    h.raw("<tr><td>").text(row.kind).raw("</td><td>").text(row.process_group.value_or("?"))
        .text(row.group_size ? " (" + std::to_string(*row.group_size) + " ranks)" : "").raw("</td><td>")
        .text(row.dtype.value_or("?")).raw("</td><td class=\"num\"")
        .raw(row.bytes ? " data-v=\"" + std::to_string(*row.bytes) + "\"" : "").raw(">")
        .text(row.bytes ? size_text(*row.bytes) : row.size_bucket)
        .raw("</td><td class=\"num\">").text(fmt_count(row.calls_per_step)).raw("</td><td class=\"num\" data-v=\"")
        .raw(format_fixed(row.ms_per_step, 6)).raw("\">").text(fmt_ms(row.ms_per_step)).raw("</td><td class=\"num\">")
        .text(fmt_ms(row.mean_ms)).raw("</td><td class=\"num\">")
        .text(row.busbw_gbps ? format_fixed(*row.busbw_gbps, 2) : row.algbw_gbps ? format_fixed(*row.algbw_gbps, 2) + " (algbw)" : "n/a")
        .raw("</td><td><div class=\"stack\" style=\"min-width:8em\">");
    if (bar_top > 0 && bw > 0)
      h.raw("<span title=\"").text(row.peak_share ? fmt_pct(row.peak_share) + " of the peak" : std::string("no peak known"))
          .raw("\" style=\"width:").raw(format_fixed(100.0 * bw / bar_top, 2)).raw("%;background:#4c78a8\"></span>");
    h.raw("</div>").text(row.peak_share ? " " + fmt_pct(row.peak_share) : std::string()).raw("</td><td class=\"num\">")
        .text(row.exposed_share ? fmt_pct(row.exposed_share) : std::string("n/a")).raw("</td></tr>\n");
  }
  h.raw("</tbody></table>\n");
  if (c.rows_total > static_cast<int64_t>(c.rows.size()))
    h.raw("<p class=\"hint\">").text(std::to_string(c.rows_total - static_cast<int64_t>(c.rows.size())) + " smaller rows not shown.").raw("</p>\n");
  for (const auto& n : c.notes) h.raw("<p class=\"hint\">").text(n).raw("</p>\n");
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
