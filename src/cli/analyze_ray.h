// `analyze --executor ray`: the rank files of a job analysed where they lie, in shards, each shard one Ray job
// submitted through the Jobs REST API (the client `tune --executor ray` uses: tuner/ray_client.h). A shard's entry
// point runs this binary's own `analyze SHARD_FILES --shard-out shard.json` on the worker and prints shard.json
// between marker lines (tuner/ray_runner.h ray_entrypoint); the driver reads it back from the job's log, writes
// each rank's report.json / report.html with the bytes the worker wrote, and builds the job summary from the ranks'
// compact facts (model::RankFacts), not from their traces: the same job.json as `analyze` on the same files.
// A shard whose job fails, whose node is lost, or a file a worker cannot read: those ranks are missing, with the
// reason, and the summary is of the others. No partial file: every file is written whole or not at all.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"
#include "profile_train/model/job.h"

namespace profile_train::cli {

struct RayAnalyzeOptions {
  std::string address;                   // the dashboard ("http://host:8265"); normalize_ray_address's forms
  int parallel = 2;                      // shards in flight
  size_t shard_size = 0;                 // files per shard; 0: ceil(files / (2 x parallel))
  std::string self_exe;                  // this binary, at the same path on the workers
  std::vector<std::string> shard_args;   // analyze options every shard gets (--rules, --format, limits, ...)
  double pending_timeout_s = 600;        // a shard still PENDING after this long is given up: no free CPU
  double poll_interval_s = 0.25;
  std::string worker_tmp = "/tmp";       // the shard's folder on the worker: WORKER_TMP/profile-train-ray/ID
  std::string session;                   // prefix of the submission ids
};

// One trace of the command, as its shard returned it (in the order of the files given).
struct RayTraceResult {
  std::string file;                      // as the user gave it
  bool ok = false;
  int exit_code = 0;
  std::string error;                     // why it is missing (ok false)
  std::string report_json, report_html;  // the files as the worker wrote them ("" when not asked for)
  nlohmann::json row;                    // {verdict, confidence, mean_ms, util}
  std::optional<model::RankFacts> facts;
};

// Runs the shards and returns one result per file. A Status error only when nothing could be submitted (the address
// does not answer, is not a Ray with the Jobs API); a failed shard makes its files' results, not the call, fail.
// `progress` gets one line per shard as it ends.
StatusOr<std::vector<RayTraceResult>> analyze_on_ray(const std::vector<std::string>& files, const RayAnalyzeOptions& options,
                                                     std::ostream& progress);

// The shard size of `files` files over `parallel` shards in flight (options.shard_size 0).
size_t default_shard_size(size_t files, int parallel);

}  // namespace profile_train::cli
