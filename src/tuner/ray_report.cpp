#include "profile_train/tuner/ray_report.h"

#include <algorithm>

#include "profile_train/common/format.h"

namespace profile_train::tuner {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

Execution planned_execution(const ExecutionInfo& info) {
  Execution e;
  e.executor = info.executor;
  e.parallel = info.parallel;
  if (info.executor == "ray") {
    RayExecution& r = e.ray.emplace();
    r.address = info.address;
    r.ray_version = info.ray_version;
    r.trial_gpus = info.trial_gpus;
    r.trial_cpus = info.trial_cpus;
  }
  return e;
}

void add_execution(TuneReport& doc, const TuneResult& result, const ExecutionInfo& info) {
  double sum_s = 0;
  for (const Trial& t : result.trials) sum_s += t.duration_s;
  Execution e = planned_execution(info);
  e.wall_s = result.elapsed_s;
  e.sum_measurement_s = sum_s;
  e.saved_s = std::max(0.0, sum_s - result.elapsed_s);
  if (result.elapsed_s > 0) e.parallel_speedup = sum_s / result.elapsed_s;
  if (e.ray) {
    RayExecution& r = *e.ray;
    double submit = 0, queued = 0, fetch = 0;
    for (const RayPlacement& p : info.placements) {
      if (!p.node_id.empty()) r.nodes.insert(p.node_id);
      if (!p.gpu_name.empty()) r.gpu_models.insert(p.gpu_name);
      submit += p.submit_s;
      queued += p.queued_s;
      fetch += p.log_fetch_s;
    }
    // Trials on different GPU models are not comparable: the noise estimate and every gain mix hardware.
    r.heterogeneous = r.gpu_models.size() > 1;
    if (r.heterogeneous) {
      r.note = "trials ran on " + std::to_string(r.gpu_models.size()) +
               " different GPU models: gains and the noise estimate mix hardware; pin the job to one model "
               "(entrypoint resources / a homogeneous node pool) before trusting small gains";
    }
    const double n = static_cast<double>(std::max<size_t>(1, info.placements.size()));
    r.overhead = {static_cast<int64_t>(info.placements.size()), submit / n, queued / n, fetch / n};
    for (TrialRow& t : doc.trials) {
      std::vector<RayPlacement>& placements = t.placements.emplace();
      for (const RayPlacement& p : info.placements) {
        if (p.trial_index == t.index) placements.push_back(p);
      }
    }
  }
  doc.execution = std::move(e);
}

}  // namespace profile_train::tuner
