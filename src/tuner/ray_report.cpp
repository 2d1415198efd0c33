#include "profile_train/tuner/ray_report.h"

#include <algorithm>
#include <set>
#include <sstream>

#include "profile_train/common/format.h"
#include "profile_train/report/escape.h"

namespace profile_train::tuner {

using nlohmann::json;

void add_execution(json& doc, const TuneResult& result, const ExecutionInfo& info) {
  double sum_s = 0;
  for (const Trial& t : result.trials) sum_s += t.duration_s;
  json e = {{"executor", info.executor}, {"parallel", info.parallel}, {"wall_s", result.elapsed_s},
            {"sum_measurement_s", sum_s}};
  e["saved_s"] = std::max(0.0, sum_s - result.elapsed_s);
  e["parallel_speedup"] = result.elapsed_s > 0 ? json(sum_s / result.elapsed_s) : json(nullptr);
  if (info.executor == "ray") {
    e["address"] = info.address;
    e["ray_version"] = info.ray_version;
    e["trial_gpus"] = info.trial_gpus;
    e["trial_cpus"] = info.trial_cpus;
    std::set<std::string> nodes, gpus;
    double submit = 0, queued = 0, fetch = 0;
    for (const RayPlacement& p : info.placements) {
      if (!p.node_id.empty()) nodes.insert(p.node_id);
      if (!p.gpu_name.empty()) gpus.insert(p.gpu_name);
      submit += p.submit_s;
      queued += p.queued_s;
      fetch += p.log_fetch_s;
    }
    e["nodes"] = nodes;
    e["gpu_models"] = gpus;
    // Trials on different GPU models are not comparable: the noise estimate and every gain mix hardware.
    e["heterogeneous"] = gpus.size() > 1;
    if (gpus.size() > 1) {
      e["note"] = "trials ran on " + std::to_string(gpus.size()) +
                  " different GPU models: gains and the noise estimate mix hardware; pin the job to one model "
                  "(entrypoint resources / a homogeneous node pool) before trusting small gains";
    }
    const double n = static_cast<double>(std::max<size_t>(1, info.placements.size()));
    e["overhead"] = {{"jobs", info.placements.size()}, {"submit_s", submit / n}, {"queued_s", queued / n},
                     {"log_fetch_s", fetch / n}};
    if (doc.contains("trials") && doc["trials"].is_array()) {
      for (json& t : doc["trials"]) {
        json placements = json::array();
        const int index = t.value("index", 0);
        for (const RayPlacement& p : info.placements) {
          if (p.trial_index == index) placements.push_back(to_json(p));
        }
        t["placements"] = placements;
      }
    }
  }
  doc["execution"] = e;
}

std::string execution_html(const json& doc) {
  if (!doc.contains("execution") || !doc["execution"].is_object()) return "";
  const json& e = doc["execution"];
  using report::detail::html_escape;
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

}  // namespace profile_train::tuner
