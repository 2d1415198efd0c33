// summary.html: the typed job summary of several ranks (model/job.h) -- the verdict (straggler or balanced), a
// stacked bar per rank (input, compute, communication wait, in ms per step) and the per-rank table. One
// self-contained page like report.html; every program-supplied string is escaped.
#include <algorithm>
#include <string>
#include <vector>

#include "assets.h"
#include "html_common.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/report/writers.h"

namespace profile_train::report {

using detail::fmt_ms;
using detail::Html;

std::string render_job_html(const model::JobSummary& job) {
  Html h;
  const std::string_view verdict = name_of(job.verdict);
  const bool straggler = job.verdict == model::JobVerdict::kStraggler && job.straggler;
  h.raw("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; "
        "script-src 'unsafe-inline'\">\n<title>profile-train job summary</title>\n<script>")
      .raw(detail::asset_head_js()).raw("</script>\n<style>").raw(detail::asset_report_css())
      .raw("</style>\n</head>\n<body data-render=\"pending\">\n");
  h.raw("<header class=\"banner ").raw(straggler ? "v-synchronization" : "v-gpu-compute")
      .raw("\" id=\"job-verdict\"><div class=\"brand\">profile-train job summary</div><div class=\"verdict-line\">"
           "<span class=\"verdict-kicker\">Ranks</span><h1 data-verdict=\"").text(verdict).raw("\">")
      .text(straggler ? "Straggler: rank " + std::to_string(job.straggler->rank)
            : job.verdict == model::JobVerdict::kBalanced ? std::string("Balanced")
                                                          : std::string("Cannot tell"))
      .raw("</h1></div>\n<p class=\"verdict-summary\">").text(job.summary).raw("</p>\n</header>\n<main>\n");
  double max_ms = 0;
  for (const auto& r : job.ranks) max_ms = std::max(max_ms, r.mean_step_ms.value_or(0.0));
  h.raw("<section id=\"job-ranks\"><h2>Per rank (ms per step)</h2>\n<div class=\"opbars\" id=\"job-chart\">\n");
  struct Part {
    std::optional<double> model::JobRank::*value;
    const char* label;
    const char* color;
  };
  const Part parts[] = {{&model::JobRank::input_ms, "input", "#eeca3b"},
                        {&model::JobRank::compute_ms, "compute", "#4c78a8"},
                        {&model::JobRank::communication_wait_ms, "communication wait", "#72b7b2"}};
  for (const auto& r : job.ranks) {
    const bool slow = job.straggler && job.straggler->rank == r.rank;
    const std::string rank = std::to_string(r.rank);
    h.raw("<div class=\"opbar").raw(slow ? " straggler" : "").raw("\" data-rank=\"").text(rank)
        .raw("\"><code>rank ").text(rank).raw(slow ? " (straggler)" : "").raw("</code><div class=\"stack\">");
    for (const auto& p : parts) {
      const double v = (r.*p.value).value_or(0.0);  // null: not measured
      if (v <= 0 || max_ms <= 0) continue;
      h.raw("<span title=\"").raw(p.label).raw(" ").text(fmt_ms(v)).raw("\" style=\"width:")
          .raw(format_fixed(100.0 * v / max_ms, 2)).raw("%;background:").raw(p.color).raw("\"></span>");
    }
    h.raw("</div><span>").text(fmt_ms(r.mean_step_ms)).raw("</span></div>\n");
  }
  h.raw("</div>\n");
  if (!job.missing.empty()) {
    h.raw("<p class=\"hint\" id=\"job-missing\">").text(std::to_string(job.missing.size()) +
                                                       " rank file(s) could not be analysed; the summary is of the others: ");
    for (size_t i = 0; i < job.missing.size(); ++i)
      h.text((i ? "; " : "") + job.missing[i].file + ": " + job.missing[i].reason);
    h.raw("</p>\n");
  }
  if (job.communication_measured == false)
    h.raw("<p class=\"hint\" id=\"comm-not-measured\">Communication was not measured (no GPU activity and no "
          "collective in the traces): each rank's compute includes its wait for the others in collectives, so only "
          "data loading, which stays local to a rank, is compared.</p>\n");
  h.raw("<p class=\"hint\">");
  for (const auto& p : parts) h.raw("<span class=\"swatch\" style=\"background:").raw(p.color).raw("\"></span>").raw(p.label).raw(" &nbsp; ");
  h.raw("</p>\n<table class=\"data sortable\" id=\"job-table\"><thead><tr><th>Rank</th><th class=\"num\">Step</th>"
        "<th class=\"num\">Input</th><th class=\"num\">Compute</th><th class=\"num\">Communication wait</th>"
        "<th class=\"num\">Work</th><th>Verdict</th><th>File</th></tr></thead><tbody>\n");
  for (const auto& r : job.ranks) {
    const std::string rank = std::to_string(r.rank);
    h.raw("<tr><td data-v=\"").text(rank).raw("\">").text(rank).raw("</td>");
    for (const auto& v : {r.mean_step_ms, r.input_ms, r.compute_ms, r.communication_wait_ms, r.work_ms})
      h.raw("<td class=\"num\"").raw(v ? " data-v=\"" + format_fixed(*v, 6) + "\"" : "").raw(">").text(fmt_ms(v)).raw("</td>");
    h.raw("<td>").text(detail::bottleneck_label(r.verdict)).raw("</td><td><code>").text(r.file).raw("</code></td></tr>\n");
  }
  h.raw("</tbody></table>\n</section>\n");
  if (job.collectives) {
    // Per collective: how long each rank waits for the last one to arrive, against the transfer itself.
    const auto& c = *job.collectives;
    h.raw("<section id=\"job-collectives\"><h2>Collectives across ranks</h2>\n<p>").text(c.summary)
        .raw("</p>\n<p class=\"hint\">Matched by ").text(c.matched_by).raw(": ").text(std::to_string(c.matched))
        .raw(" collectives on two ranks or more, ").text(std::to_string(c.unmatched))
        .raw(" seen on one rank only. Transfer: the shortest duration among the ranks (the last rank to arrive waits "
             "for nobody); wait: each rank's duration minus it.</p>\n");
    for (size_t ri = 0; ri < c.rows.size() && ri < 5; ++ri) {
      const auto& r = c.rows[ri];
      double top = r.transfer_ms;
      for (double w : r.wait_ms_by_rank) top = std::max(top, w + r.transfer_ms);
      h.raw("<h3>").text(r.kind + " " + r.size_bucket + (r.process_group ? " (group " + *r.process_group + ")" : ""))
          .raw("</h3>\n<p class=\"hint\">").text(format_fixed(r.calls_per_step, 2) + " calls/step, transfer " +
                                                  format_fixed(r.transfer_ms, 3) + " ms, waiting " +
                                                  format_fixed(100.0 * r.wait_share, 0) + "% of the time; " +
                                                  (r.last_rank < 0 ? std::string("the ranks arrive together")
                                                                   : "rank " + std::to_string(r.last_rank) + " arrives last in " +
                                                                         format_fixed(100.0 * r.last_rank_share, 0) + "% of them") +
                                                  (r.busbw_gbps ? ", busbw " + format_fixed(*r.busbw_gbps, 2) + " GB/s" : ""))
          .raw("</p>\n<div class=\"opbars\">\n");
      // At most 16 bars: the ranks that wait most, and the one they wait for.
      std::vector<size_t> shown;
      for (size_t i = 0; i < r.wait_ms_by_rank.size() && i < job.ranks.size(); ++i) shown.push_back(i);
      if (shown.size() > 16) {
        std::stable_sort(shown.begin(), shown.end(), [&](size_t a, size_t b) {
          const bool la = job.ranks[a].rank == r.last_rank, lb = job.ranks[b].rank == r.last_rank;
          return la != lb ? la : r.wait_ms_by_rank[a] > r.wait_ms_by_rank[b];
        });
        shown.resize(16);
        std::sort(shown.begin(), shown.end());
      }
      for (size_t i : shown) {
        const std::string rank = std::to_string(job.ranks[i].rank);
        const double w = r.wait_ms_by_rank[i];
        h.raw("<div class=\"opbar").raw(job.ranks[i].rank == r.last_rank ? " straggler" : "").raw("\"><code>rank ").text(rank)
            .raw("</code><div class=\"stack\">");
        if (top > 0) {
          h.raw("<span title=\"wait ").text(format_fixed(w, 3)).raw(" ms\" style=\"width:").raw(format_fixed(100.0 * w / top, 2))
              .raw("%;background:#e45756\"></span><span title=\"transfer ").text(format_fixed(r.transfer_ms, 3))
              .raw(" ms\" style=\"width:").raw(format_fixed(100.0 * r.transfer_ms / top, 2)).raw("%;background:#72b7b2\"></span>");
        }
        h.raw("</div><span>").text(format_fixed(w, 3) + " ms").raw("</span></div>\n");
      }
      h.raw("</div>\n");
      if (shown.size() < std::min(r.wait_ms_by_rank.size(), job.ranks.size()))
        h.raw("<p class=\"hint\">").text(std::to_string(std::min(r.wait_ms_by_rank.size(), job.ranks.size()) - shown.size()) +
                                         " ranks that wait less are not drawn (job.json lists every rank).").raw("</p>\n");
    }
    h.raw("<p class=\"hint\"><span class=\"swatch\" style=\"background:#e45756\"></span>wait for the last rank &nbsp; "
          "<span class=\"swatch\" style=\"background:#72b7b2\"></span>transfer</p>\n</section>\n");
  }
  h.raw("</main>\n<script>").raw(detail::asset_report_js()).raw("</script>\n</body>\n</html>\n");
  return std::move(h.str());
}

Status write_job_html(const model::JobSummary& job, const std::filesystem::path& path) {
  std::string html;
  try {
    html = render_job_html(job);
  } catch (const std::exception& e) {
    return Internal(path.string() + ": cannot render the job summary: " + e.what());
  }
  return write_file_atomic(path, html);
}

}  // namespace profile_train::report
