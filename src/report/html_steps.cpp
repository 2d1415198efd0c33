// report.html: how the steps were found, which steps the figures cover (steady state: the warm-up and outlier
// steps left out, with their times) and the forward / backward / optimizer / data-wait split of the step.
#include <string>

#include "html_common.h"

namespace profile_train::report::detail {

void write_steps(Html& h, const model::Report& r) {
  h.raw("<section id=\"steps\"><h2>Steps</h2>\n<p class=\"hint\">");
  const auto& steady = r.steps.steady_state;
  const double count = static_cast<double>(r.steps.count);
  h.text(fmt_count(count)).raw(" steps, found by <code>").text(r.source.step_detection)
      .raw("</code>. The figures of this report cover the ");
  if (static_cast<double>(steady.count) < count) h.text(fmt_count(static_cast<double>(steady.count))).raw(" steady-state steps");
  else h.raw("steps (none left out as warm-up or outlier)");
  h.raw(".</p>\n");
  const auto& w = r.source.workload;
  h.raw("<p id=\"steps-workload\" data-kind=\"").text(w.kind).raw("\">Workload: <strong>").text(w.kind).raw("</strong>");
  if (!w.evidence.empty()) {
    h.raw(" (");
    for (size_t i = 0; i < w.evidence.size(); ++i) h.text(i ? "; " : "").text(w.evidence[i]);
    h.raw(")");
  }
  h.raw(".</p>\n");
  if (const auto& cold = r.steps.cold_window) {
    h.raw("<div class=\"callout warn\" id=\"steps-cold-window\"><strong>Warm-up window.</strong> ")
        .text(fmt_pct(cold->first_call_share)).raw(" of it is first-call work; bounds computed on it are marked as "
                                                    "checks.<ul>");
    for (const auto& sign : cold->signs) h.raw("<li>").text(sign).raw("</li>");
    h.raw("</ul>Re-capture past the warm-up: <code>").text(cold->recapture).raw("</code></div>\n");
  }
  if (const auto& lacks = r.source.capture.lacks) {
    h.raw("<div class=\"callout warn\" id=\"steps-capture-lacks\"><strong>The capture lacks GPU activity.</strong> ")
        .text(*lacks).raw(".");
    if (const auto& re = r.source.capture.recapture) h.raw(" Re-capture with: <code>").text(*re).raw("</code>");
    h.raw("</div>\n");
  }
  if (!steady.excluded.empty()) {
    h.raw("<p id=\"steps-excluded-summary\">Left out: ").text(fmt_count(static_cast<double>(steady.excluded_count)))
        .raw(" step(s), ").text(fmt_ms(steady.excluded_ms))
        .raw(" in all; the mean over every step is ").text(fmt_ms(steady.mean_all_ms))
        .raw(" (steady state ").text(fmt_ms(r.steps.mean_ms)).raw(").</p>\n");
    h.raw("<table class=\"data\" id=\"steps-excluded\"><thead><tr><th>Step</th><th>Name</th><th>Why</th>"
          "<th class=\"num\">Duration</th></tr></thead><tbody>\n");
    for (const auto& x : steady.excluded) {
      h.raw("<tr><td>").text(fmt_count(static_cast<double>(x.index))).raw("</td><td><code>")
          .text(x.name).raw("</code></td><td>").text(x.reason)
          .raw("</td><td class=\"num\">").text(fmt_ms(x.duration_ms)).raw("</td></tr>\n");
    }
    h.raw("</tbody></table>\n");
  }
  if (r.phases) {
    h.raw("<h3>Phases</h3>\n<p class=\"hint\">Host time of the training thread per steady-state step, from the "
          "forward, backward, optimizer (step and zero_grad) and DataLoader ranges; a dash: the trace has no such "
          "range.</p>\n<table class=\"data\" id=\"phases\"><thead><tr><th>Phase</th><th class=\"num\">Per step</th>"
          "<th class=\"num\">Share of step</th></tr></thead><tbody>\n");
    for (Phase p : kAllPhases) {
      h.raw("<tr data-phase=\"").raw(name_of(p)).raw("\"><td>").raw(name_of(p)).raw("</td><td class=\"num\">")
          .text(fmt_ms(r.phases->ms_per_step[p])).raw("</td><td class=\"num\">")
          .text(fmt_pct(r.phases->fraction[p])).raw("</td></tr>\n");
    }
    h.raw("</tbody></table>\n");
  }
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
