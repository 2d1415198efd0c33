// report.html: the compiled program (report.compilation): the summary line, what showed it, the graph breaks
// and recompiles with where they are, and what each Inductor kernel fuses. Nothing when the section is absent.
#include <string>

#include "compilation_text.h"
#include "html_common.h"

namespace profile_train::report::detail {

namespace {

void write_events(Html& h, const char* id, const char* title, const std::vector<model::CompileEvent>& events) {
  if (events.empty()) return;
  h.raw("<h3>").text(title).raw("</h3>\n<table class=\"data\" id=\"").raw(id)
      .raw("\"><thead><tr><th>Where</th><th>Reason</th><th class=\"num\">Count</th></tr></thead><tbody>\n");
  for (const auto& e : events) {
    h.raw("<tr><td><code>").text(e.where.value_or("?")).raw("</code></td><td>").text(e.reason)
        .raw("</td><td class=\"num\">").text(std::to_string(e.count)).raw("</td></tr>\n");
  }
  h.raw("</tbody></table>\n");
}

}  // namespace

void write_compilation(Html& h, const model::Report& r) {
  if (!r.compilation) return;
  const auto& c = *r.compilation;
  h.raw("<section id=\"compilation\"><h2>Compilation</h2>\n<p id=\"compilation-summary\" data-compiled=\"")
      .raw(c.compiled ? "true" : "false").raw("\"><strong>").text(compilation_line(c)).raw("</strong></p>\n");
  if (!c.evidence.empty()) {
    h.raw("<p class=\"hint\">Seen: ");
    for (size_t i = 0; i < c.evidence.size(); ++i) h.text(i ? "; " : "").text(c.evidence[i]);
    h.raw(".");
    if (c.eager_in_frames_share)
      h.raw(" Host time inside compiled frames but outside their graphs (guards, the eager code at each graph "
            "break): ").text(fmt_pct(c.eager_in_frames_share)).raw(" of the step.");
    h.raw("</p>\n");
  }
  write_events(h, "compilation-breaks", "Graph breaks", c.breaks);
  write_events(h, "compilation-recompiles", "Recompiles", c.recompile_reasons);
  if (!c.inductor_kernels.empty()) {
    const bool gpu = c.inductor_kernels.front().on == "gpu";
    h.raw("<h3>Inductor kernels</h3>\n<table class=\"data\" id=\"compilation-kernels\"><thead><tr><th>Kernel</th>"
          "<th>Kind</th><th>Fuses</th><th class=\"num\">Calls/step</th><th class=\"num\">Per step</th>"
          "<th class=\"num\">")
        .raw(gpu ? "Share of GPU time" : "Share of step").raw("</th></tr></thead><tbody>\n");
    for (const auto& k : c.inductor_kernels) {
      h.raw("<tr><td><code>").text(k.name).raw("</code></td><td>").text(k.kind).raw("</td><td>")
          .text(k.fused_ops.value_or("(not in the name)")).raw("</td><td class=\"num\">").text(fmt_count(k.calls_per_step))
          .raw("</td><td class=\"num\">").text(fmt_ms(k.ms_per_step)).raw("</td><td class=\"num\">")
          .text(fmt_pct(k.share)).raw("</td></tr>\n");
    }
    h.raw("</tbody></table>\n");
  }
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
