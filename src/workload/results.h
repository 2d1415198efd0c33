// What a workload run reports: the facts.* keys of reports/REPORT_FORMAT.md (facts-<pid>.json, read by
// `profile-train run`) and the result JSON written by --result. No LibTorch.
#pragma once

#include <nlohmann/json.hpp>

#include "train.h"

namespace profile_train::workload {

// Statistics of per-step milliseconds (stddev: sample, n - 1).
struct Summary {
  double mean = 0, median = 0, stddev = 0, min = 0, max = 0;
};
Summary summarize(std::vector<double> v);

nlohmann::json facts_json(const WorkloadOptions& options, const TrainResult& r);
// facts.cpu: the fields and the null conventions of the Python shim's cpu_facts().
nlohmann::json cpu_json(const CpuInfo& c);
nlohmann::json result_json(const WorkloadOptions& options, const TrainResult& r);

// The model dimensions in use (defaults with the command-line overrides applied).
nlohmann::json shape_json(const WorkloadOptions& o);

}  // namespace profile_train::workload
