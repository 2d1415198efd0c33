#include "profile_train/report/tune_html.h"

#include <algorithm>
#include <sstream>

#include "profile_train/common/format.h"
#include "profile_train/report/escape.h"

namespace profile_train::report {

using detail::html_escape;  // the writers' escaping: also replaces invalid UTF-8
using nlohmann::json;

std::string tune_html(const json& tune) {
  auto s = [](const json& j, const char* key) -> std::string {
    if (!j.is_object() || !j.contains(key)) return "";
    const json& v = j[key];
    if (v.is_string()) return v.get<std::string>();
    if (v.is_null()) return "";
    return v.dump(-1, ' ', false, json::error_handler_t::replace);
  };
  auto num = [](const json& v, int prec = 1) -> std::string {
    return v.is_number() ? format_fixed(v.get<double>(), prec) : std::string("–");
  };
  const std::string unit = tune.contains("metric") ? s(tune["metric"], "unit") : "";
  std::ostringstream h;
  h << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
       "<title>profile-train tune</title><style>"
       "body{font-family:system-ui,sans-serif;margin:2em;max-width:1100px;color:#222}"
       "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;padding:3px 7px;text-align:left}"
       "tr.best{background:#e6f6e6}tr.fail{color:#a33}pre{background:#f4f4f4;padding:8px;overflow-x:auto}"
       ".big{font-size:1.4em}.muted{color:#777}svg text{font-size:11px;font-family:sans-serif}"
       "</style></head><body>\n";
  h << "<h1>profile-train tune</h1>\n";
  const json& st = tune.contains("status") ? tune["status"] : json::object();
  h << "<p class=\"muted\">strategy " << html_escape(s(tune, "strategy")) << " · " << html_escape(s(st, "trials"))
    << " trials (" << html_escape(s(st, "measurements")) << " runs) · " << html_escape(s(st, "stop_reason"))
    << (st.value("partial", false) ? " · <b>partial results</b>" : "") << " · metric " << html_escape(unit)
    << "</p>\n";
  const json& target = tune.contains("target") ? tune["target"] : json::object();
  std::string cmd;
  const json& argv = target.contains("argv") ? target["argv"] : (target.contains("args") ? target["args"] : json());
  if (target.contains("model")) cmd = "--workload " + s(target, "model") + " ";
  if (argv.is_array()) {
    for (const auto& a : argv) cmd += (a.is_string() ? a.get<std::string>() : a.dump(-1, ' ', false, json::error_handler_t::replace)) + " ";
  }
  h << "<p>target: <code>" << html_escape(cmd) << "</code> (knobs applied through "
    << html_escape(s(target, "applied_through")) << ")</p>\n";

  // Best vs baseline.
  const json& base = tune.contains("baseline") ? tune["baseline"] : json();
  const json& best = tune.contains("best") ? tune["best"] : json();
  const json& sp = tune.contains("speedup") ? tune["speedup"] : json();
  h << "<h2>Best vs baseline</h2>\n";
  if (base.is_object() && best.is_object()) {
    h << "<p class=\"big\">" << num(best["throughput"]) << " vs " << num(base["throughput"]) << " "
      << html_escape(unit) << ": <b>×" << num(sp.is_object() ? sp["value"] : json(), 2) << "</b>";
    if (sp.is_object() && sp["low"].is_number()) {
      h << " (95% interval ×" << num(sp["low"], 2) << "–×" << num(sp["high"], 2) << ")";
    }
    h << (sp.is_object() && sp.value("claimed", false) ? " confirmed head to head" : "") << "</p>\n";
    if (sp.is_object()) h << "<p class=\"muted\">interval: " << html_escape(s(sp, "interval")) << "</p>\n";
    auto cfg = [&](const json& c) {
      std::string out;
      if (c.is_object()) {
        for (auto it = c.begin(); it != c.end(); ++it) {
          out += it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump(-1, ' ', false, json::error_handler_t::replace)) + " ";
        }
      }
      return out;
    };
    h << "<p>baseline (trial " << html_escape(s(base, "trial")) << "): <code>" << html_escape(cfg(base["config"]))
      << "</code><br>best (trial " << html_escape(s(best, "trial")) << "): <code>"
      << html_escape(cfg(best["config"])) << "</code></p>\n";
  } else {
    h << "<p>No baseline could be measured.</p>\n";
  }

  if (tune.contains("skipped_knobs") && tune["skipped_knobs"].is_array() && !tune["skipped_knobs"].empty()) {
    h << "<h2>Not tried on this machine</h2>\n<ul>\n";
    for (const auto& k : tune["skipped_knobs"]) {
      std::string values;
      if (k.contains("values") && k["values"].is_array()) {
        for (const auto& v : k["values"]) values += (values.empty() ? "" : ",") + (v.is_string() ? v.get<std::string>() : v.dump());
      }
      h << "<li><code>" << html_escape(s(k, "knob")) << "=" << html_escape(values) << "</code>: "
        << html_escape(s(k, "reason")) << "</li>\n";
    }
    h << "</ul>\n";
  }

  // The change to apply.
  const json& change = tune.contains("change") ? tune["change"] : json();
  h << "<h2>The change to apply</h2>\n";
  if (change.is_object()) {
    h << "<p>" << html_escape(s(change, "summary")) << "</p>\n";
    if (change.contains("python") && change["python"].is_array()) {
      for (const auto& e : change["python"]) {
        h << "<p>" << html_escape(s(e, "what")) << ":</p><pre>" << html_escape(s(e, "code")) << "</pre>\n";
      }
    }
    if (change.contains("command") && change["command"].is_array()) {
      std::string c;
      for (const auto& a : change["command"]) c += (a.is_string() ? a.get<std::string>() : a.dump(-1, ' ', false, json::error_handler_t::replace)) + " ";
      h << "<p>command:</p><pre>" << html_escape(c) << "</pre>\n";
    }
    if (change.contains("shim_overrides")) {
      h << "<p>or, without editing the script:</p><pre>PROFILE_TRAIN_OVERRIDES='"
        << html_escape(change["shim_overrides"].dump(-1, ' ', false, json::error_handler_t::replace)) << "' profile-train run -- ...</pre>\n";
    }
  } else {
    h << "<p>–</p>\n";
  }

  // Throughput per knob value: one small SVG bar chart per knob.
  h << "<h2>Throughput per knob value</h2>\n<p class=\"muted\">dark bar: best trial with that value; light bar: "
       "the best configuration with only this knob changed (when measured)</p>\n";
  if (tune.contains("per_knob") && tune["per_knob"].is_object()) {
    for (auto it = tune["per_knob"].begin(); it != tune["per_knob"].end(); ++it) {
      const json& rows = it.value();
      if (!rows.is_array() || rows.empty()) continue;
      double maxv = 0;
      for (const auto& r : rows) {
        for (const char* k : {"best_throughput", "at_best_config"}) {
          if (r.contains(k) && r[k].is_number()) maxv = std::max(maxv, r[k].get<double>());
        }
      }
      const int row_h = 22, label_w = 70, bar_w = 300, w = label_w + bar_w + 90;
      const int height = static_cast<int>(rows.size()) * row_h + 6;
      h << "<h3>" << html_escape(it.key()) << "</h3>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << w
        << "\" height=\"" << height << "\" role=\"img\">\n";
      int y = 3;
      for (const auto& r : rows) {
        const double bv = r.contains("best_throughput") && r["best_throughput"].is_number() ? r["best_throughput"].get<double>() : 0;
        const double av = r.contains("at_best_config") && r["at_best_config"].is_number() ? r["at_best_config"].get<double>() : 0;
        const int bw = maxv > 0 ? static_cast<int>(bar_w * bv / maxv) : 0;
        const int aw = maxv > 0 ? static_cast<int>(bar_w * av / maxv) : 0;
        h << "<text x=\"0\" y=\"" << y + 14 << "\">" << html_escape(s(r, "value")) << "</text>";
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
  }

  // Trial table.
  h << "<h2>Trials</h2>\n<table><tr><th>#</th><th>config</th><th>why</th><th>status</th><th>" << html_escape(unit)
    << "</th><th>± sd</th><th>runs</th><th>vs baseline</th><th>diagnosis</th><th>message</th></tr>\n";
  if (tune.contains("trials") && tune["trials"].is_array()) {
    for (const auto& t : tune["trials"]) {
      std::string cfg;
      if (t.contains("config") && t["config"].is_object()) {
        for (auto it = t["config"].begin(); it != t["config"].end(); ++it) {
          cfg += it.key() + "=" + (it.value().is_string() ? it.value().get<std::string>() : it.value().dump(-1, ' ', false, json::error_handler_t::replace)) + " ";
        }
      }
      const bool ok = s(t, "status") == "ok";
      std::string cls = t.value("is_best", false) ? "best" : (ok ? "" : "fail");
      std::string status = s(t, "status");
      if (t.value("early_stopped", false)) status += " (early stop)";
      if (t.value("accepted", false)) status += " ✓";
      std::string diag;
      if (t.contains("diagnosis") && t["diagnosis"].is_object()) {
        diag = s(t["diagnosis"], "bottleneck");
        if (t["diagnosis"].contains("recommendations") && t["diagnosis"]["recommendations"].is_array() &&
            !t["diagnosis"]["recommendations"].empty()) {
          diag += ": " + s(t["diagnosis"]["recommendations"][0], "id");
        }
      }
      h << "<tr class=\"" << cls << "\"><td>" << html_escape(s(t, "index")) << "</td><td><code>" << html_escape(cfg)
        << "</code></td><td>" << html_escape(s(t, "reason")) << "</td><td>" << html_escape(status) << "</td><td>"
        << num(t.contains("throughput") ? t["throughput"] : json()) << "</td><td>"
        << num(t.contains("stddev") ? t["stddev"] : json()) << "</td><td>" << html_escape(s(t, "measurements"))
        << "</td><td>" << (t.contains("vs_baseline") ? "×" + num(t["vs_baseline"], 2) : std::string("–"))
        << "</td><td>" << html_escape(diag) << "</td><td>" << html_escape(s(t, "message")) << "</td></tr>\n";
    }
  }
  h << "</table>\n";
  h << execution_html(tune);
  const json& noise = tune.contains("noise") ? tune["noise"] : json::object();
  h << "<p class=\"muted\">measured noise: pooled relative sd " << num(noise.contains("pooled_relative_sd") ? json(100.0 * noise["pooled_relative_sd"].get<double>()) : json(), 1)
    << "% (" << html_escape(s(noise, "degrees_of_freedom")) << " degrees of freedom). A change is kept only when its "
       "gain exceeds both the minimum gain and the noise.</p>\n";
  if (tune.contains("log") && tune["log"].is_array()) {
    h << "<h2>Search log</h2>\n<ol>\n";
    for (const auto& l : tune["log"]) h << "<li>" << html_escape(l.is_string() ? l.get<std::string>() : l.dump(-1, ' ', false, json::error_handler_t::replace)) << "</li>\n";
    h << "</ol>\n";
  }
  h << "</body></html>\n";
  return h.str();
}

std::string execution_html(const json& doc) {
  if (!doc.contains("execution") || !doc["execution"].is_object()) return "";
  const json& e = doc["execution"];
  auto num = [](const json& v, int digits) {
    return v.is_number() ? format_fixed(v.get<double>(), digits) : std::string("–");
  };
  std::ostringstream h;
  h << "<h2>Where the trials ran</h2>\n<p>executor <b>" << html_escape(e.value("executor", std::string()))
    << "</b>, " << e.value("parallel", 1) << " in flight";
  if (e.contains("address")) {
    h << " · Ray " << html_escape(e.value("ray_version", std::string())) << " at <code>"
      << html_escape(e.value("address", std::string())) << "</code> · " << num(e["trial_gpus"], 0) << " GPU / "
      << num(e["trial_cpus"], 0) << " CPU per trial";
  }
  h << "<br>wall time " << num(e["wall_s"], 1) << " s for " << num(e["sum_measurement_s"], 1)
    << " s of measurements: <b>" << num(e["saved_s"], 1) << " s saved</b> by parallelism (×"
    << num(e["parallel_speedup"], 2) << ")</p>\n";
  if (e.contains("note")) h << "<p class=\"fail\">" << html_escape(e.value("note", std::string())) << "</p>\n";
  if (e.contains("overhead") && e["overhead"].is_object()) {
    const json& o = e["overhead"];
    h << "<p class=\"muted\">Jobs API per job (mean over " << o.value("jobs", 0) << "): submit " << num(o["submit_s"], 3)
      << " s, submitted → running " << num(o["queued_s"], 2) << " s, log fetch " << num(o["log_fetch_s"], 3) << " s</p>\n";
  }
  if (!doc.contains("trials") || !doc["trials"].is_array()) return h.str();
  bool any = false;
  std::ostringstream rows;
  for (const json& t : doc["trials"]) {
    if (!t.contains("placements") || !t["placements"].is_array()) continue;
    for (const json& p : t["placements"]) {
      any = true;
      auto str = [&](const char* k) { return p.contains(k) && p[k].is_string() ? p[k].get<std::string>() : std::string("–"); };
      rows << "<tr><td>" << t.value("index", 0) << "</td><td>" << p.value("repeat", 0) << "</td><td><code>"
           << html_escape(str("job_id")) << "</code></td><td>" << html_escape(str("host")) << " <span class=\"muted\">"
           << html_escape(str("node_id").substr(0, 12)) << "</span></td><td>" << html_escape(str("gpu")) << " "
           << html_escape(str("gpu_name")) << "</td><td>" << html_escape(str("final_state")) << "</td><td>"
           << num(p["queued_s"], 2) << "</td><td>" << num(p["running_s"], 1) << "</td></tr>\n";
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
