#include "profile_train/tuner/ray_report.h"

#include <algorithm>
#include <set>

#include "profile_train/common/format.h"

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

}  // namespace profile_train::tuner
