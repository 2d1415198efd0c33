// job.json: the typed job summary as JSON. Every key is always written (null when unknown) except
// communication_measured, which is absent when fewer than two ranks have a step time.
#include "profile_train/model/job_json.h"

#include <string>

#include "profile_train/common/atomic_file.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/utf8.h"

namespace profile_train::model {

using nlohmann::json;

namespace {

json rank_json(const JobRank& r) {
  return {{"rank", r.rank},
          {"file", r.file},
          {"verdict", std::string(name_of(r.verdict))},
          {"mean_step_ms", or_null(r.mean_step_ms)},
          {"input_ms", or_null(r.input_ms)},
          {"compute_ms", or_null(r.compute_ms)},
          {"communication_wait_ms", or_null(r.communication_wait_ms)},
          {"work_ms", or_null(r.work_ms)}};
}

json straggler_json(const Straggler& s) {
  return {{"rank", s.rank},
          {"file", s.file},
          {"phase", std::string(name_of(s.phase))},
          {"excess_ms", s.excess_ms},
          {"phase_excess_ms", s.phase_excess_ms},
          {"others_wait_ms", or_null(s.others_wait_ms)}};
}

}  // namespace

json to_json(const JobSummary& job) {
  json out = {{"ranks", json::array()},
              {"slowest_rank", or_null(job.slowest_rank)},
              {"slowdown", or_null(job.slowdown)},
              {"step_skew", or_null(job.step_skew)},
              {"communication_skew_ms", or_null(job.communication_skew_ms)},
              {"straggler", job.straggler ? straggler_json(*job.straggler) : json(nullptr)},
              {"verdict", std::string(name_of(job.verdict))},
              {"straggler_threshold", job.straggler_threshold},
              {"summary", job.summary}};
  for (const auto& r : job.ranks) out["ranks"].push_back(rank_json(r));
  if (job.communication_measured) out["communication_measured"] = *job.communication_measured;
  return out;
}

Status write_job_json(const std::filesystem::path& path, const JobSummary& job) {
  json doc = to_json(job);
  repair_utf8(doc);  // file names need not be UTF-8
  return write_file_atomic(path, doc.dump(2) + "\n");
}

}  // namespace profile_train::model
