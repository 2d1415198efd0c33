// report.html sections about what to do: the plan (the first fixes, with their combined bound), what the host
// does while the GPU idles (the host side of "why is the GPU idle"), and the ordered recommendations, with
// minor fixes and notes folded away. Every program-supplied string is HTML-escaped (Html::text).
#include <algorithm>
#include <string>
#include <vector>

#include "html_common.h"

namespace profile_train::report::detail {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using nlohmann::json;

std::string value_to_text(const json& v) {
  if (v.is_string()) return v.get<std::string>();
  if (v.is_null()) return kDash;
  if (v.is_boolean()) return v.get<bool>() ? "true" : "false";
  if (v.is_number_integer()) return std::to_string(v.get<int64_t>());
  if (v.is_number()) return format_fixed(v.get<double>(), 4);
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

namespace {

std::string speedup_text(std::optional<double> s) {
  if (!s) return "";
  if (*s >= 1.0) return "up to " + format_fixed(*s, 2) + "\xC3\x97 faster step";
  if (*s > 0) return "up to " + fmt_pct(*s) + " less step time";
  return "";
}

std::string times(std::optional<double> s) { return s ? format_fixed(*s, 2) + "\xC3\x97" : std::string(kDash); }

void write_code_block(Html& h, const char* lang, const char* label, const std::string& code) {
  h.raw("<div class=\"fix\"><div class=\"fix-head\"><span>").raw(label)
      .raw("</span><button type=\"button\" class=\"copy\">Copy</button></div><pre><code class=\"lang-").raw(lang)
      .raw("\">").text(code).raw("</code></pre></div>\n");
}

// The language of the program the report is about: a LibTorch program (the built-in workload, or a native
// capture without the Python shim) gets the C++ snippet first; everything else is a Python program.
bool cpp_program(const model::Report& r) {
  if (find_path(r.facts, {"workload", "name"}) != nullptr) return true;
  const bool native = r.source.format.value_or("") == "native";
  const bool shim = bool_path(r.facts, {"capture", "shim"}).value_or(false) ||
                    find_path(r.facts, {"versions", "python"}) != nullptr;
  return native && !shim;
}

void write_list(Html& h, const std::vector<std::string>& items, const char* cls, const char* title) {
  if (items.empty()) return;
  h.raw("<div class=\"").raw(cls).raw("\"><h4>").raw(title).raw("</h4><ul>");
  for (const auto& e : items) h.raw("<li>").text(e).raw("</li>");
  h.raw("</ul></div>\n");
}

void write_one(Html& h, const model::Recommendation& rec, bool open, bool cpp_first) {
  const std::string& id = rec.id;
  const std::string& group = rec.group;
  const std::string& level = rec.evidence_level;
  h.raw("<li class=\"rec rec-").text(group).raw("\" id=\"rec-").text(id).raw("\" data-rule=\"").text(id).raw("\" data-group=\"").text(group)
      .raw("\" data-level=\"").text(level).raw("\"><details").raw(open ? " open" : "")
      .raw("><summary class=\"rec-head\"><h3>").text(rec.title).raw("</h3>");
  const std::string tier = std::to_string(rec.tier);
  h.raw("<span class=\"tier tier-").raw(tier).raw("\">tier ").raw(tier).raw("</span>");
  if (group == "primary") h.raw("<span class=\"badge addresses\">addresses the bottleneck</span>");
  if (level == "check") h.raw("<span class=\"badge check\">check</span>");
  if (!id.empty()) h.raw("<code class=\"rule-id\">").text(id).raw("</code>");
  const std::string gain = rec.removable_share ? speedup_text(rec.estimated_speedup_max) : std::string("bound unknown");
  if (!gain.empty() && group != "note") h.raw("<span class=\"gain\">").text(gain).raw("</span>");
  h.raw("</summary>\n");
  h.raw("<p class=\"rank-reason\"><b>Why here:</b> ").text(rec.rank_reason).raw("</p>\n");
  if (rec.check_note && level != "measured") h.raw("<p class=\"check-note\">").text(*rec.check_note).raw("</p>\n");
  write_list(h, rec.evidence, "evidence", "Evidence");
  {
    // The program's own language in full; the other one folded below it.
    struct Snippet {
      const char* lang;
      const char* label;
      const std::string* code;
    };
    const Snippet a{"python", "PyTorch (Python)", &rec.fix.python}, b{"cpp", "LibTorch (C++)", &rec.fix.cpp};
    const Snippet& first = cpp_first ? b : a;
    const Snippet& second = cpp_first ? a : b;
    h.raw("<div class=\"fixes single\" data-first=\"").raw(first.lang).raw("\">\n");
    write_code_block(h, first.lang, first.label, *first.code);
    h.raw("<details class=\"fix-other\"><summary>").raw(second.label).raw(" version</summary>\n");
    write_code_block(h, second.lang, second.label, *second.code);
    h.raw("</details>\n");
    h.raw("</div>\n");
  }
  write_list(h, rec.caveats, "caveats", "When not to apply it");
  if (!rec.references.empty()) {
    h.raw("<div class=\"refs\"><h4>References</h4><ul>");
    for (const std::string& t : rec.references) {
      // Only plain https links become anchors; anything else (javascript:, data:) stays text.
      if (t.rfind("https://", 0) == 0)
        h.raw("<li><a rel=\"noreferrer noopener\" target=\"_blank\" href=\"").text(t).raw("\">").text(t).raw("</a></li>");
      else
        h.raw("<li>").text(t).raw("</li>");
    }
    h.raw("</ul></div>\n");
  }
  h.raw("</details></li>\n");
}

}  // namespace

void write_plan(Html& h, const model::Report& r) {
  if (!r.plan) return;
  const model::Plan& plan = *r.plan;
  const auto& reason = plan.no_fix_reason;
  const bool any = !plan.steps.empty();
  if (!any && !reason) return;
  h.raw("<section id=\"plan\" class=\"plan\"><h2>Plan</h2>\n");
  if (any) {
    const std::optional<double> combined = plan.combined_speedup_max;
    h.raw("<p class=\"plan-total\">Do these first, in this order: together <b id=\"plan-combined\">up to ")
        .text(times(combined)).raw("</b> faster step.</p>\n<ol class=\"plan-steps\" id=\"plan-steps\">\n");
    // Bars: the cumulative bound of each step on one scale (the combined bound = full width).
    const double full = combined && *combined > 1.0 ? *combined - 1.0 : 1.0;
    for (const auto& s : plan.steps) {
      const double cum = s.cumulative_speedup_max;
      const double w = std::max(2.0, 100.0 * (cum - 1.0) / full);
      h.raw("<li data-rule=\"").text(s.id).raw("\"><a href=\"#rec-").text(s.id).raw("\">").text(s.title)
          .raw("</a><div class=\"plan-bar\"><span style=\"width:").raw(format_fixed(w, 1)).raw("%\"></span></div>")
          .raw("<span class=\"plan-figs\">alone up to ").text(times(s.speedup_max_alone))
          .raw(" \xC2\xB7 cumulative up to ").text(times(cum)).raw("</span>");
      if (s.evidence_level == "check")
        h.raw("<p class=\"plan-check\"><b>Check first:</b> ").text(s.check_note.value_or("a fact it relies on was not recorded"))
            .raw("</p>");
      h.raw("</li>\n");
    }
    h.raw("</ol>\n");
    h.raw("<p class=\"hint\">Bounds, not promises: ").text(plan.method).raw(".</p>\n");
  }
  if (reason) h.raw("<p class=\"plan-none\" id=\"plan-no-fix\">").text(*reason).raw("</p>\n");
  h.raw("</section>\n");
}

void write_host_idle(Html& h, const model::Report& r) {
  if (!r.host.idle_activity) return;
  using model::HostIdleActivityShares;
  const HostIdleActivityShares& a = *r.host.idle_activity;
  const std::optional<double> idle = a.fraction;
  if (*idle <= 0) return;
  struct Part {
    const char* key;  // host.idle_activity.<key> of report.json
    const char* label;
    const char* color;
    double HostIdleActivityShares::*share;
  };
  static const Part kParts[] = {
      {"allocator", "Allocator (malloc/free)", "#e45756", &HostIdleActivityShares::allocator},
      {"memcpy_api", "Memcpy API", "#f58518", &HostIdleActivityShares::memcpy_api},
      {"sync", "Synchronization", "#b279a2", &HostIdleActivityShares::sync},
      {"launch", "Kernel-launch API", "#4c78a8", &HostIdleActivityShares::launch},
      {"other_runtime", "Other runtime/driver", "#9d755d", &HostIdleActivityShares::other_runtime},
      {"dataloader", "DataLoader wait", "#eeca3b", &HostIdleActivityShares::dataloader},
      {"operators", "Operators / Python", "#54a24b", &HostIdleActivityShares::operators},
      {"other", "Other (untraced)", "#bab0ac", &HostIdleActivityShares::other}};
  h.raw("<section id=\"host-idle\"><h2>What the host does while the GPU idles</h2>\n<p class=\"hint\">The GPU idles ")
      .text(fmt_pct(idle)).raw(" of the step; during that time the host is in:</p>\n<div class=\"stack\" id=\"host-idle-bar\">");
  for (const auto& p : kParts) {
    const double v = a.*p.share;
    if (v <= 0) continue;
    h.raw("<span title=\"").raw(p.label).raw(" ").text(fmt_pct(v)).raw("\" style=\"width:")
        .raw(format_fixed(100.0 * v / *idle, 2)).raw("%;background:").raw(p.color).raw("\"></span>");
  }
  h.raw("</div>\n<table class=\"data compact\" id=\"host-idle-table\"><thead><tr><th>Host activity</th><th>Share of the step</th>"
        "<th>Share of the idle time</th></tr></thead><tbody>\n");
  for (const auto& p : kParts) {
    const std::optional<double> v = a.*p.share;
    h.raw("<tr data-part=\"").raw(p.key).raw("\"><th><span class=\"swatch\" style=\"background:").raw(p.color).raw("\"></span>")
        .raw(p.label).raw("</th><td>").text(fmt_pct(v)).raw("</td><td>")
        .text(v ? fmt_pct(*v / *idle) : std::string(kDash)).raw("</td></tr>\n");
  }
  h.raw("</tbody></table>\n</section>\n");
}

void write_recommendations(Html& h, const model::Report& r) {
  h.raw("<section id=\"recommendations\"><h2>Recommendations</h2>\n");
  if (r.recommendations.empty()) {
    h.raw("<p class=\"na\" id=\"no-recommendations\">No rule fired: nothing cheap to recommend for this trace.</p></section>\n");
    return;
  }
  const bool cpp_first = cpp_program(r);
  std::vector<const model::Recommendation*> main, minor, notes;
  for (const auto& rec : r.recommendations)
    (rec.group == "minor" ? minor : rec.group == "note" ? notes : main).push_back(&rec);
  auto anchor_list = [&](const std::vector<const model::Recommendation*>& items, const char* id, size_t open_first) {
    h.raw("<ol class=\"recs\" id=\"").raw(id).raw("\">\n");
    for (size_t i = 0; i < items.size(); ++i) write_one(h, *items[i], i < open_first, cpp_first);
    h.raw("</ol>\n");
  };
  if (main.empty()) h.raw("<p class=\"na\">Only minor fixes and notes fired.</p>\n");
  else anchor_list(main, "recs-list", 3);  // the first three open; the rest collapse to their title line
  if (!minor.empty()) {
    h.raw("<details class=\"folded\" id=\"minor-recs\"><summary>").text(std::to_string(minor.size()))
        .raw(" minor fix(es): each removes under 3% of the step</summary>\n");
    anchor_list(minor, "minor-list", 0);
    h.raw("</details>\n");
  }
  if (!notes.empty()) {
    h.raw("<details class=\"folded\" id=\"note-recs\"><summary>").text(std::to_string(notes.size()))
        .raw(" note(s): the trace cannot show these apply to this job</summary>\n");
    anchor_list(notes, "note-list", 0);
    h.raw("</details>\n");
  }
  h.raw("</section>\n");
}

}  // namespace profile_train::report::detail
