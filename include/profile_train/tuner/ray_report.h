// tune.json's `execution` section (where each measurement ran, the Jobs API's overhead, the wall time that
// parallelism saved); its HTML is report::execution_html. Pure functions. Owner: tuner component.
#pragma once

#include <string>
#include <vector>

#include "profile_train/tuner/ray_runner.h"
#include "profile_train/model/tune.h"
#include "profile_train/tuner/tuner.h"

namespace profile_train::tuner {

struct ExecutionInfo {
  std::string executor = "local";   // local | ray
  std::string address;              // ray: the dashboard address
  std::string ray_version;
  int parallel = 1;
  double trial_gpus = 0;
  double trial_cpus = 0;
  std::vector<model::RayPlacement> placements;
};

// Adds to a tune report (tune_report's output):
//   execution{executor, parallel, address?, ray_version?, trial_gpus, trial_cpus, wall_s, sum_measurement_s,
//             saved_s, parallel_speedup, nodes[], gpu_models[], heterogeneous, note?,
//             overhead{submit_s, queued_s, log_fetch_s} (means over jobs, ray only)}
// and, per trial, placements[{trial,repeat,dir,job_id,node_id,host,gpu,gpu_name,final_state,submit_s,
// queued_s,running_s,log_fetch_s,polls}] (ray only). sum_measurement_s is the sum of the measurements'
// durations (Ray: submit -> terminal state, job start-up included): the sweep's wall time had they run one
// after the other; saved_s = sum_measurement_s - wall_s (>= 0).
void add_execution(model::TuneReport& doc, const TuneResult& result, const ExecutionInfo& info);

// Where the trials run, before any ran: executor, parallel and the Ray keys that `info` gives (address, version,
// resources per trial); add_execution starts from it. tune names the cluster from it before the first trial.
model::Execution planned_execution(const ExecutionInfo& info);


}  // namespace profile_train::tuner
