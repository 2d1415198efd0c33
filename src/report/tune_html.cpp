#include "profile_train/report/tune_html.h"

#include <algorithm>
#include <sstream>

#include "profile_train/common/format.h"
#include "profile_train/report/escape.h"
#include "profile_train/model/tune.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

using detail::html_escape;  // the writers' escaping: also replaces invalid UTF-8
using model::TuneReport;

namespace {

// Rates below 10 keep two significant digits ("0.12 steps/s", not "0.1").
std::string num(std::optional<double> v, int prec = 1) {
  if (!v) return "–";
  return prec == 1 && std::fabs(*v) < 10 && *v != 0 ? format_significant(*v, 2) : format_fixed(*v, prec);
}

std::string config_text(const model::Config& c) {
  std::string out;
  for (const auto& [k, v] : c) out += k + "=" + v + " ";
  return out;
}

std::string words(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += a + " ";
  return out;
}

}  // namespace

std::string tune_html(const TuneReport& tune) {
  const std::string& unit = tune.metric.unit;
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<title>profile-train tune</title><style>"
       "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}"
       "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left}"
       "tr.best{background:#e6f6e6}tr.fail{color:#a33}pre{background:#f4f4f4;padding:8px;overflow-x:auto}"
       ".big{font-size:1.4em}.muted{color:#777}svg text{font-size:11px;font-family:sans-serif}"
       "</style></head><body>\n";
  h << "<h1>profile-train tune</h1>\n";
  const model::TuneStatus& st = tune.status;
  h << "<p class=\"muted\">strategy " << html_escape(tune.strategy) << " · " << st.trials << " trials ("
    << st.measurements << " runs) · " << html_escape(st.stop_reason)
    << (st.partial ? " · <b>partial results</b>" : "") << " · metric " << html_escape(unit) << "</p>\n";
  std::string cmd;
  if (tune.target.workload) cmd = "--workload " + tune.target.model + " ";
  cmd += words(tune.target.args);
  h << "<p>target: <code>" << html_escape(cmd) << "</code> (knobs applied through "
    << html_escape(tune.target.applied_through) << ")</p>\n";

  // Best vs baseline.
  h << "<h2>Best vs baseline</h2>\n";
  if (tune.baseline && tune.best) {
    const auto& sp = tune.speedup;
    h << "<p class=\"big\">" << num(tune.best->throughput) << " vs " << num(tune.baseline->throughput) << " "
      << html_escape(unit) << ": <b>×" << num(sp ? std::optional<double>(sp->value) : std::nullopt, 2) << "</b>";
    if (sp && sp->low) h << " (95% interval ×" << num(sp->low, 2) << "–×" << num(sp->high, 2) << ")";
    h << (sp && sp->claimed ? " confirmed head to head" : "") << "</p>\n";
    if (sp) h << "<p class=\"muted\">interval: " << html_escape(sp->interval) << "</p>\n";
    if (tune.confirmation && tune.confirmation->load_1m) {
      h << "<p class=\"muted\">head-to-head measured at a 1-minute load of " << num(tune.confirmation->load_1m, 2)
        << " on " << tune.confirmation->cpus << " CPUs (search: " << num(tune.confirmation->search_load_1m, 2) << ")"
        << (tune.confirmation->repeated ? "; repeated because the load changed since the search" : "") << "</p>\n";
    }
    if (tune.status.rerun_pairs > 0 || tune.status.unreliable_pairs > 0) {
      h << "<p class=\"muted\">" << tune.status.rerun_pairs << " pair(s) re-run and " << tune.status.unreliable_pairs
        << " left out as unreliable: their two runs saw different load</p>\n";
    }
    h << "<p>baseline (trial " << tune.baseline->trial << "): <code>" << html_escape(config_text(tune.baseline->config))
      << "</code><br>best (trial " << tune.best->trial << "): <code>" << html_escape(config_text(tune.best->config))
      << "</code></p>\n";
    // The quality guard: the winner's training loss against the baseline's.
    if (const auto& l = tune.quality.loss) {
      h << "<p>training loss of the best (trial " << tune.best->trial << ") vs the baseline: <b>" << html_escape(l->status)
        << "</b>";
      if (l->trial_mean && l->baseline_mean) {
        h << " (" << num(l->trial_mean, 4) << " vs " << num(l->baseline_mean, 4) << ", difference "
          << num(l->difference, 4) << ", bar " << num(l->tolerance, 4) << ", per "
          << html_escape(l->compared_by == "step" ? "step" : "sample seen") << ", " << l->points << " steps, "
          << l->baseline_runs << " baseline runs)";
      }
      h << (tune.quality.allow_quality_change ? " · --allow-quality-change" : "") << "</p>\n";
      if (!l->note.empty()) h << "<p class=\"muted\">" << html_escape(l->note) << "</p>\n";
    }
    std::string changed;
    for (const auto& t : tune.trials) {
      if (t.loss.status == "changes the loss") changed += (changed.empty() ? "" : ", ") + std::to_string(t.index);
    }
    if (!changed.empty()) {
      h << "<p>trials that change the loss" << (tune.quality.allow_quality_change ? "" : " (not eligible as the winner)")
        << ": " << html_escape(changed) << "</p>\n";
    }
  } else {
    h << "<p>No baseline could be measured.</p>\n";
  }

  if (!tune.skipped_knobs.empty()) {
    h << "<h2>Not tried on this machine</h2>\n<ul>\n";
    for (const auto& k : tune.skipped_knobs) {
      std::string values;
      for (const auto& v : k.values) values += (values.empty() ? "" : ",") + v;
      h << "<li><code>" << html_escape(k.knob) << "=" << html_escape(values) << "</code>: " << html_escape(k.reason)
        << "</li>\n";
    }
    h << "</ul>\n";
  }

  // The change to apply.
  h << "<h2>The change to apply</h2>\n";
  if (const auto& change = tune.change) {
    h << "<p>" << html_escape(change->summary) << "</p>\n";
    for (const auto& e : change->python) {
      h << "<p>" << html_escape(e.what) << ":</p><pre>" << html_escape(e.code) << "</pre>\n";
    }
    if (change->command) h << "<p>command:</p><pre>" << html_escape(words(*change->command)) << "</pre>\n";
    if (change->shim_overrides) {
      h << "<p>or, without editing the script:</p><pre>PROFILE_TRAIN_OVERRIDES='"
        << html_escape(change->shim_overrides->dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        << "' profile-train run -- ...</pre>\n";
    }
  } else {
    h << "<p>–</p>\n";
  }

  // Throughput per knob value: one small SVG bar chart per knob.
  h << "<h2>Throughput per knob value</h2>\n<p class=\"muted\">dark bar: best trial with that value; light bar: "
       "the best configuration with only this knob changed (when measured)</p>\n";
  for (const auto& [knob, rows] : tune.per_knob) {
    if (rows.empty()) continue;
    double maxv = 0;
    for (const auto& r : rows) {
      for (const auto& v : {r.best_throughput, r.at_best_config}) {
        if (v) maxv = std::max(maxv, *v);
      }
    }
    const int row_h = 22, label_w = 70, bar_w = 300, w = label_w + bar_w + 90;
    const int height = static_cast<int>(rows.size()) * row_h + 6;
    h << "<h3>" << html_escape(knob) << "</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w
      << "\" height=\"" << height << "\" role=\"img\">\n";
    int y = 3;
    for (const auto& r : rows) {
      const double bv = r.best_throughput.value_or(0);
      const double av = r.at_best_config.value_or(0);
      const int bw = maxv > 0 ? static_cast<int>(bar_w * bv / maxv) : 0;
      const int aw = maxv > 0 ? static_cast<int>(bar_w * av / maxv) : 0;
      h << "<text x=\"0\" y=\"" << y + 14 << "\">" << html_escape(r.value) << "</text>";
      h << "<rect x=\"" << label_w << "\" y=\"" << y + 2 << "\" width=\"" << bw << "\" height=\"9\" fill=\"#3b6ea8\"/>";
      if (aw > 0) {
        h << "<rect x=\"" << label_w << "\" y=\"" << y + 11 << "\" width=\"" << aw
          << "\" height=\"7\" fill=\"#9cc0e6\"/>";
      }
      h << "<text x=\"" << label_w + std::max(bw, aw) + 4 << "\" y=\"" << y + 14 << "\">"
        << (bv > 0 ? format_fixed(bv) : std::string("failed")) << "</text>\n";
      y += row_h;
    }
    h << "</svg>\n";
  }

  // Trial table.
  h << "<h2>Trials</h2>\n<table><tr><th>#</th><th>config</th><th>why</th><th>status</th><th>" << html_escape(unit)
    << "</th><th>± sd</th><th>runs</th><th>vs baseline</th><th>diagnosis</th><th>message</th></tr>\n";
  for (const auto& t : tune.trials) {
    const bool ok = t.status == "ok";
    const std::string cls = t.is_best ? "best" : (ok ? "" : "fail");
    std::string status = t.status;
    if (t.early_stopped) status += " (early stop)";
    if (t.accepted) status += " ✓";
    std::string diag;
    if (t.diagnosis && t.diagnosis->from_report) {
      diag = std::string(name_of(t.diagnosis->bottleneck));
      if (!t.diagnosis->recommendations.empty()) diag += ": " + t.diagnosis->recommendations.front().id;
    }
    h << "<tr class=\"" << cls << "\"><td>" << t.index << "</td><td><code>" << html_escape(config_text(t.config))
      << "</code></td><td>" << html_escape(t.reason) << "</td><td>" << html_escape(status) << "</td><td>"
      << num(t.throughput) << (t.compile_s ? " (+" + num(t.compile_s, 1) + " s compiling per run)" : std::string())
      << "</td><td>" << num(t.stddev) << "</td><td>" << t.measurements << "</td><td>"
      << (t.vs_baseline ? "×" + num(t.vs_baseline, 2) : std::string("–")) << "</td><td>" << html_escape(diag)
      << "</td><td>" << html_escape(t.message) << "</td></tr>\n";
  }
  h << "</table>\n";
  h << execution_html(tune);
  h << "<p class=\"muted\">measured noise: pooled relative sd " << num(100.0 * tune.noise.pooled_relative_sd, 1)
    << "% (" << tune.noise.degrees_of_freedom << " degrees of freedom). A change is kept only when its "
       "gain exceeds both the minimum gain and the noise.</p>\n";
  h << "<h2>Search log</h2>\n<ol>\n";
  for (const auto& l : tune.log) h << "<li>" << html_escape(l) << "</li>\n";
  h << "</ol>\n";
  h << "</body></html>\n";
  return h.str();
}

std::string execution_html(const TuneReport& doc) {
  if (!doc.execution) return "";
  const model::Execution& e = *doc.execution;
  std::ostringstream h;
  h << "<h2>Where the trials ran</h2>\n<p>executor <b>" << html_escape(e.executor) << "</b>, " << e.parallel
    << " in flight";
  if (e.ray) {
    h << " · Ray " << html_escape(e.ray->ray_version) << " at <code>" << html_escape(e.ray->address) << "</code> · "
      << num(e.ray->trial_gpus, 0) << " GPU / " << num(e.ray->trial_cpus, 0) << " CPU per trial";
  }
  h << "<br>wall time " << num(e.wall_s, 1) << " s for " << num(e.sum_measurement_s, 1)
    << " s of measurements: <b>" << num(e.saved_s, 1) << " s saved</b> by parallelism (×"
    << num(e.parallel_speedup, 2) << ")</p>\n";
  if (e.ray && e.ray->note) h << "<p class=\"fail\">" << html_escape(*e.ray->note) << "</p>\n";
  if (e.ray) {
    const model::RayOverhead& o = e.ray->overhead;
    h << "<p class=\"muted\">Jobs API per job (mean over " << o.jobs << "): submit " << num(o.submit_s, 3)
      << " s, submitted → running " << num(o.queued_s, 2) << " s, log fetch " << num(o.log_fetch_s, 3) << " s</p>\n";
  }
  bool any = false;
  std::ostringstream rows;
  auto or_dash = [](const std::string& s) { return s.empty() ? std::string("–") : s; };
  for (const auto& t : doc.trials) {
    if (!t.placements) continue;
    for (const model::RayPlacement& p : *t.placements) {
      any = true;
      rows << "<tr><td>" << t.index << "</td><td>" << p.repeat + 1 << "</td><td><code>"
           << html_escape(p.submission_id) << "</code></td><td>" << html_escape(p.host) << " <span class=\"muted\">"
           << html_escape(p.node_id.substr(0, 12)) << "</span></td><td>" << html_escape(or_dash(p.cuda_visible_devices))
           << " " << html_escape(or_dash(p.gpu_name)) << "</td><td>" << html_escape(p.final_state) << "</td><td>"
           << num(p.queued_s, 2) << "</td><td>" << num(p.running_s, 1) << "</td></tr>\n";
    }
  }
  if (any) {
    h << "<table><tr><th>#</th><th>run</th><th>Ray job</th><th>node</th><th>GPU</th><th>state</th>"
         "<th>queued s</th><th>ran s</th></tr>\n"
      << rows.str() << "</table>\n";
  }
  return h.str();
}

}  // namespace profile_train::report
