// A client of the Ray Jobs REST API (the dashboard's /api/jobs/, Ray 2.x): submit a job with an entry point,
// resources and a runtime environment, poll its status, fetch its log, stop it. No Ray SDK, no Python: plain
// HTTP through cpp-httplib. Owner: tuner component. Not thread-safe (one connection, used by one thread).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"

namespace profile_train::tuner {

// True when the HTTP client was compiled in (cpp-httplib found at configure time).
extern const bool kRaySupported;

// "http://host:port" from what a user types: "host:port", "http://host:port[/]", "RAY_ADDRESS" style values.
// The Jobs API is served by the dashboard (default port 8265); "ray://" (Ray Client) and "auto" are refused
// with the reason.
StatusOr<std::string> normalize_ray_address(const std::string& address);

struct RayJobSpec {
  std::string submission_id;                  // chosen by the caller (unique per job)
  std::string entrypoint;                     // a shell command line, run by the job's driver on a worker
  double num_cpus = 0;                        // entrypoint_num_cpus (0 = not reserved)
  double num_gpus = 0;                        // entrypoint_num_gpus: Ray sets CUDA_VISIBLE_DEVICES
  std::map<std::string, std::string> env;     // runtime_env.env_vars
  nlohmann::json runtime_env = nlohmann::json::object();  // extra runtime_env fields (working_dir, container, ...)
  std::map<std::string, std::string> metadata;
};

struct RayJobInfo {
  std::string submission_id;
  std::string state;        // PENDING | RUNNING | STOPPED | SUCCEEDED | FAILED
  std::string message;      // Ray's explanation (why it failed, ...)
  std::string node_id;      // driver_node_id: the node the entry point runs on ("" until it starts)
  std::optional<int> exit_code;  // driver_exit_code when Ray reports it
  double start_time_s = 0;  // epoch seconds (0 when unknown)
  double end_time_s = 0;
  bool terminal() const { return state == "STOPPED" || state == "SUCCEEDED" || state == "FAILED"; }
};

// What one answer of the dashboard may cost (a hostile or broken server must not take the driver's memory or
// hang it): the status line and headers, a JSON body, the job log kept (its head and its tail; the middle of
// a longer log is left out and says so), and the time.
struct RayHttpLimits {
  size_t max_header_bytes = 64 << 10;      // status line + headers (+ chunked trailers)
  size_t max_json_bytes = 16 << 20;        // any JSON answer except the job list and the log
  size_t max_list_bytes = 64 << 20;        // GET /api/jobs/ (every job the cluster remembers)
  size_t log_head_bytes = 1 << 20;         // the log kept: its first bytes ...
  size_t log_tail_bytes = 32 << 20;        // ... and its last (the entry point's markers and report.json)
  double io_timeout_s = 10;                // silence on the connection (connect, each read, each write)
  double request_deadline_s = 60;          // one whole request, however the server trickles its bytes
};

class RayClient {
 public:
  // `address` as given to normalize_ray_address; `timeout_s` bounds each connect/read/write, the limits bound
  // each whole request (RayHttpLimits::request_deadline_s) and what it may hold in memory.
  static StatusOr<std::unique_ptr<RayClient>> connect(const std::string& address, double timeout_s = 10);
  static StatusOr<std::unique_ptr<RayClient>> connect(const std::string& address, const RayHttpLimits& limits);
  virtual ~RayClient() = default;

  const std::string& address() const { return address_; }
  // GET /api/version. The Ray version; Unsupported when the server answers but has no Jobs API (Ray before
  // 1.9 / a dashboard without the job module), IoError when nothing answers.
  virtual StatusOr<std::string> check_version() = 0;
  virtual StatusOr<std::string> submit(const RayJobSpec& spec) = 0;  // POST /api/jobs/ -> submission id
  virtual StatusOr<RayJobInfo> status(const std::string& id) = 0;   // GET /api/jobs/{id}
  // GET /api/jobs/{id}/logs, streamed: at most log_head_bytes + log_tail_bytes of it are kept (a line in the
  // middle says how much was left out).
  virtual StatusOr<std::string> logs(const std::string& id) = 0;
  virtual Status stop(const std::string& id) = 0;                   // POST /api/jobs/{id}/stop
  virtual StatusOr<std::vector<RayJobInfo>> list() = 0;             // GET /api/jobs/
  // The total resources of each live node ({"CPU": 2, "GPU": 8, ...}), from GET /api/cluster_status
  // (data.clusterStatus.loadMetricsReport.nodeTypes). Empty when the dashboard does not report them.
  virtual StatusOr<std::vector<std::map<std::string, double>>> node_resources() = 0;

 protected:
  explicit RayClient(std::string address) : address_(std::move(address)) {}
  std::string address_;
};

// The JSON body of POST /api/jobs/ for `spec` (exposed for tests).
nlohmann::json job_request_body(const RayJobSpec& spec);
// A job's details from the API's JSON (exposed for tests).
RayJobInfo job_info_from_json(const nlohmann::json& j);

}  // namespace profile_train::tuner
