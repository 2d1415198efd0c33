// The Ray executor of `tune`: each measurement is one Ray job submitted through the Jobs REST API, with
// entrypoint_num_gpus / entrypoint_num_cpus so that each trial gets its own GPU. The job's entry point runs
// `profile-train run --out DIR -- CMD` on the worker, then prints DIR/report.json between marker lines; the
// driver reads the report back from the job's log (a worker does not share the driver's filesystem on a real
// cluster) and stores it, with the log, in the driver's trial folder. Up to `parallel` jobs are in flight.
// Owner: tuner component. Single-threaded: one polling loop drives all jobs of a batch.
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/tuner/process_runner.h"
#include "profile_train/model/tune.h"
#include "profile_train/tuner/ray_client.h"
#include "profile_train/tuner/trial.h"

namespace profile_train::tuner {

struct RayRunnerOptions {
  ProcessRunnerOptions process;     // how a trial's command is built (self_exe, run_args, target, out_dir, interrupted)
  int parallel = 1;                 // jobs in flight at once
  double trial_gpus = 0;            // entrypoint_num_gpus of each job
  double trial_cpus = 1;            // entrypoint_num_cpus of each job
  double pending_timeout_s = 600;   // a job still PENDING after this long is stopped: no free resources
  double poll_interval_s = 0.25;    // GET /api/jobs/{id} period per job
  double stop_wait_s = 30;          // after POST .../stop, how long to wait for a terminal state
  std::string worker_tmp = "/tmp";  // the trial's run folder on the worker: WORKER_TMP/profile-train-ray/ID
  nlohmann::json runtime_env = nlohmann::json::object();  // extra runtime_env (working_dir, container, ...)
  std::string session;              // prefix of submission ids (unique per tune session)
  // Before the first trial, refuse resources no live node has (a job asking for them would stay PENDING, and
  // Ray cannot stop a PENDING job until it starts). Off for autoscaling clusters that add nodes on demand.
  bool check_resources = true;
};

// The shell entry point of a job: runs `argv` (each element single-quoted), then prints the markers and the
// `files` of `worker_dir` that exist, and removes the folder.
std::string ray_entrypoint(const std::vector<std::string>& argv, const std::string& worker_dir, const std::string& token,
                           const std::vector<std::string>& files = {"report.json", "workload_result.json"});

// What the entry point printed: the exit status, host, CUDA_VISIBLE_DEVICES and the files, by name.
struct EntrypointOutput {
  bool finished = false;            // the exit marker was seen: the command ran to its end
  int exit_code = 0;
  std::string host;
  std::string cuda_visible_devices;
  std::map<std::string, std::string> files;  // "report.json" -> its text
  std::string log;                  // the job's log without the marker sections
};
EntrypointOutput parse_entrypoint_output(const std::string& job_log, const std::string& token);

class RayTrialRunner : public TrialRunner {
 public:
  // Connects to `address` and checks that it serves the Jobs API (before any trial). IoError when nothing
  // answers, Unsupported when it is not a Ray with the Jobs API.
  static StatusOr<std::unique_ptr<RayTrialRunner>> create(RayRunnerOptions options, const std::string& address);
  // For tests: an already connected client.
  RayTrialRunner(RayRunnerOptions options, std::unique_ptr<RayClient> client, std::string ray_version);
  ~RayTrialRunner() override;  // stops every job still live

  Measurement run(const model::Config& config, const RunContext& context) override;
  std::vector<Measurement> run_batch(const std::vector<std::pair<model::Config, RunContext>>& items) override;
  int parallelism() const override { return options_.parallel; }

  const std::vector<model::RayPlacement>& placements() const { return placements_; }
  const std::string& ray_version() const { return ray_version_; }
  const std::string& address() const { return client_->address(); }
  // Stops every job submitted and not yet seen terminal; waits (bounded) until Ray reports them stopped.
  void stop_all();
  // Jobs given up while still PENDING (--ray-pending-timeout): their stop is queued by Ray until they could
  // start, so they may still show as PENDING for a while after tune exits.
  const std::set<std::string>& abandoned() const { return abandoned_; }

 private:
  struct Slot;
  void submit(Slot& slot);
  void poll(Slot& slot);
  void finish(Slot& slot);
  void request_stop(Slot& slot, int why);
  void send_stop(Slot& slot);  // POST .../stop (the first request, and the retries while unconfirmed)

  RayRunnerOptions options_;
  std::unique_ptr<RayClient> client_;
  std::string ray_version_;
  ProcessTrialRunner commands_;     // builds each trial's `profile-train run` command line
  std::vector<model::RayPlacement> placements_;
  std::set<std::string> live_;      // submitted, not yet seen terminal
  std::set<std::string> abandoned_;
  long long known_batch_ = 0;
  int seq_ = 0;
};

}  // namespace profile_train::tuner
