// Where one Ray measurement ran and what the Jobs API cost it: plain data, shared by the Ray runner that fills
// it (ray_runner.h) and the tune document that carries it (tune_report_data.h), so that the document does not
// include the runner. to_json is defined in ray_runner.cpp. Owner: tuner component.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace profile_train::tuner {

// Where one measurement ran and what the Jobs API cost it (seconds).
struct RayPlacement {
  int trial_index = 0;
  int repeat = 0;
  std::string dir;                  // the driver's trial folder
  std::string submission_id;
  std::string node_id;              // Ray's driver_node_id
  std::string host;                 // the worker's hostname (from the entry point)
  std::string cuda_visible_devices; // as Ray set it for the job ("" without a GPU)
  std::string gpu_name;             // the report's device.name ("" on the CPU)
  std::string final_state;          // SUCCEEDED | FAILED | STOPPED | (none: never submitted)
  double submit_s = 0;              // POST /api/jobs/ round trip
  double queued_s = 0;              // submit -> first RUNNING seen (PENDING: waiting for resources + job start)
  double running_s = 0;             // first RUNNING -> terminal state seen
  double log_fetch_s = 0;           // GET .../logs round trip
  int polls = 0;                    // status requests made
};
nlohmann::json to_json(const RayPlacement& p);

}  // namespace profile_train::tuner
