// report.html: how the steps were found, which steps the figures cover (steady state: the warm-up and outlier
// steps left out, with their times) and the forward / backward / optimizer / data-wait split of the step.
#include <string>

#include "html_common.h"

namespace profile_train::report::detail {

using nlohmann::json;

void write_steps(Html& h, const json& r) {
  h.raw("<section id=\"steps\"><h2>Steps</h2>\n<p class=\"hint\">");
  const auto count = number_path(r, {"steps", "count"});
  const auto steady = number_path(r, {"steps", "steady_state", "count"});
  h.text(fmt_count(count)).raw(" steps, found by <code>").text(string_path(r, {"source", "step_detection"}).value_or("?"))
      .raw("</code>. The figures of this report cover the ");
  if (steady && count && *steady < *count) h.text(fmt_count(steady)).raw(" steady-state steps");
  else h.raw("steps (none left out as warm-up or outlier)");
  h.raw(".</p>\n");
  const json* ex = find_path(r, {"steps", "steady_state", "excluded"});
  if (ex != nullptr && ex->is_array() && !ex->empty()) {
    h.raw("<p id=\"steps-excluded-summary\">Left out: ").text(fmt_count(number_path(r, {"steps", "steady_state", "excluded_count"})))
        .raw(" step(s), ").text(fmt_ms(number_path(r, {"steps", "steady_state", "excluded_ms"})))
        .raw(" in all; the mean over every step is ").text(fmt_ms(number_path(r, {"steps", "steady_state", "mean_all_ms"})))
        .raw(" (steady state ").text(fmt_ms(number_path(r, {"steps", "mean_ms"}))).raw(").</p>\n");
    h.raw("<table class=\"data\" id=\"steps-excluded\"><thead><tr><th>Step</th><th>Name</th><th>Why</th>"
          "<th class=\"num\">Duration</th></tr></thead><tbody>\n");
    for (const auto& x : *ex) {
      h.raw("<tr><td>").text(fmt_count(number_path(x, {"index"}))).raw("</td><td><code>")
          .text(string_path(x, {"name"}).value_or("")).raw("</code></td><td>").text(string_path(x, {"reason"}).value_or(""))
          .raw("</td><td class=\"num\">").text(fmt_ms(number_path(x, {"duration_ms"}))).raw("</td></tr>\n");
    }
    h.raw("</tbody></table>\n");
  }
  const json* ph = find_path(r, {"phases", "ms_per_step"});
  if (ph != nullptr && ph->is_object()) {
    h.raw("<h3>Phases</h3>\n<p class=\"hint\">Host time of the training thread per steady-state step, from the "
          "forward, backward, optimizer (step and zero_grad) and DataLoader ranges; a dash: the trace has no such "
          "range.</p>\n<table class=\"data\" id=\"phases\"><thead><tr><th>Phase</th><th class=\"num\">Per step</th>"
          "<th class=\"num\">Share of step</th></tr></thead><tbody>\n");
    for (const char* k : {"forward", "backward", "optimizer", "data_wait", "other"}) {
      h.raw("<tr data-phase=\"").raw(k).raw("\"><td>").raw(k).raw("</td><td class=\"num\">")
          .text(fmt_ms(number_path(r, {"phases", "ms_per_step", k}))).raw("</td><td class=\"num\">")
          .text(fmt_pct(number_path(r, {"phases", "fraction", k}))).raw("</td></tr>\n");
    }
    h.raw("</tbody></table>\n");
  }
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
