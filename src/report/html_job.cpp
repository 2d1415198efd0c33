// summary.html: the job summary of several ranks (analysis/job.h) -- the verdict (straggler or balanced), a
// stacked bar per rank (input, compute, communication wait, in ms per step) and the per-rank table. One
// self-contained page like report.html; every program-supplied string is escaped.
#include <algorithm>
#include <string>

#include "assets.h"
#include "html_common.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/report/writers.h"

namespace profile_train::report {

using detail::fmt_ms;
using detail::Html;
using nlohmann::json;

std::string render_job_html(const json& job) {
  Html h;
  const std::string verdict = job.value("verdict", std::string("unknown"));
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">\n<title>profile-train job summary</title>\n<script>")
      .raw(detail::asset_head_js()).raw("</script>\n<style>").raw(detail::asset_report_css())
      .raw("</style>\n</head>\n<body data-render=\"pending\">\n");
  h.raw("<header class=\"banner ").raw(verdict == "straggler" ? "v-synchronization" : "v-gpu-compute")
      .raw("\" id=\"job-verdict\"><div class=\"brand\">profile-train job summary</div><div class=\"verdict-line\">"
           "<span class=\"verdict-kicker\">Ranks</span><h1 data-verdict=\"").text(verdict).raw("\">")
      .text(verdict == "straggler" ? "Straggler: rank " + job["straggler"]["rank"].dump()
                                   : verdict == "balanced" ? std::string("Balanced") : std::string("Cannot tell"))
      .raw("</h1></div>\n<p class=\"verdict-summary\">").text(job.value("summary", std::string())).raw("</p>\n</header>\n<main>\n");
  const json& ranks = job.contains("ranks") && job["ranks"].is_array() ? job["ranks"] : json::array();
  double max_ms = 0;
  for (const auto& r : ranks) max_ms = std::max(max_ms, detail::number_path(r, {"mean_step_ms"}).value_or(0.0));
  h.raw("<section id=\"job-ranks\"><h2>Per rank (ms per step)</h2>\n<div class=\"opbars\" id=\"job-chart\">\n");
  struct Part {
    const char* key;
    const char* label;
    const char* color;
  };
  const Part parts[] = {{"input_ms", "input", "#eeca3b"}, {"compute_ms", "compute", "#4c78a8"},
                        {"communication_wait_ms", "communication wait", "#72b7b2"}};
  const json straggler = job.value("straggler", json());
  for (const auto& r : ranks) {
    const bool slow = straggler.is_object() && straggler["rank"] == r["rank"];
    h.raw("<div class=\"opbar").raw(slow ? " straggler" : "").raw("\" data-rank=\"").text(r["rank"].dump())
        .raw("\"><code>rank ").text(r["rank"].dump()).raw(slow ? " (straggler)" : "").raw("</code><div class=\"stack\">");
    for (const auto& p : parts) {
      const double v = detail::number_path(r, {p.key}).value_or(0.0);  // null: not measured
      if (v <= 0 || max_ms <= 0) continue;
      h.raw("<span title=\"").raw(p.label).raw(" ").text(fmt_ms(v)).raw("\" style=\"width:")
          .raw(format_fixed(100.0 * v / max_ms, 2)).raw("%;background:").raw(p.color).raw("\"></span>");
    }
    h.raw("</div><span>").text(fmt_ms(r.value("mean_step_ms", json()).is_number() ? std::optional<double>(r["mean_step_ms"].get<double>())
                                                                                  : std::nullopt))
        .raw("</span></div>\n");
  }
  h.raw("</div>\n");
  if (job.contains("communication_measured") && job["communication_measured"].is_boolean() &&
      !job["communication_measured"].get<bool>())
    h.raw("<p class=\"hint\" id=\"comm-not-measured\">Communication was not measured (no GPU activity and no "
          "collective in the traces): each rank's compute includes its wait for the others in collectives, so only "
          "data loading, which stays local to a rank, is compared.</p>\n");
  h.raw("<p class=\"hint\">");
  for (const auto& p : parts) h.raw("<span class=\"swatch\" style=\"background:").raw(p.color).raw("\"></span>").raw(p.label).raw(" &nbsp; ");
  h.raw("</p>\n<table class=\"data sortable\" id=\"job-table\"><thead><tr><th>Rank</th><th class=\"num\">Step</th>"
        "<th class=\"num\">Input</th><th class=\"num\">Compute</th><th class=\"num\">Communication wait</th>"
        "<th class=\"num\">Work</th><th>Verdict</th><th>File</th></tr></thead><tbody>\n");
  for (const auto& r : ranks) {
    h.raw("<tr><td data-v=\"").text(r["rank"].dump()).raw("\">").text(r["rank"].dump()).raw("</td>");
    for (const char* k : {"mean_step_ms", "input_ms", "compute_ms", "communication_wait_ms", "work_ms"}) {
      const auto v = detail::number_path(r, {k});
      h.raw("<td class=\"num\"").raw(v ? " data-v=\"" + format_fixed(*v, 6) + "\"" : "").raw(">").text(fmt_ms(v)).raw("</td>");
    }
    h.raw("<td>").text(detail::bottleneck_label(r.value("verdict", std::string("unknown")))).raw("</td><td><code>")
        .text(r.value("file", std::string())).raw("</code></td></tr>\n");
  }
  h.raw("</tbody></table>\n</section>\n</main>\n<script>").raw(detail::asset_report_js()).raw("</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

Status write_job_html(const json& job, const std::filesystem::path& path) {
  std::string html;
  try {
    html = render_job_html(job);
  } catch (const std::exception& e) {
    return Internal(path.string() + ": cannot render the job summary: " + e.what());
  }
  return write_file_atomic(path, html);
}

}  // namespace profile_train::report
