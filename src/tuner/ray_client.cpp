// RayClient over cpp-httplib (Debian's libcpp-httplib-dev).
#include <httplib.h>

#include <cmath>

#include "profile_train/tuner/ray_client.h"

namespace profile_train::tuner {

const bool kRaySupported = true;

namespace {

// The last line of a body, trimmed to something printable on one line.
std::string one_line(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.pop_back();
  if (const size_t nl = text.rfind('\n'); nl != std::string::npos) text = text.substr(nl + 1);
  if (text.size() > 300) text = text.substr(0, 300) + "...";
  return text;
}

class HttpRayClient : public RayClient {
 public:
  HttpRayClient(std::string address, double timeout_s) : RayClient(address), http_(address) {
    const auto sec = static_cast<time_t>(timeout_s);
    const auto usec = static_cast<time_t>((timeout_s - static_cast<double>(sec)) * 1e6);
    http_.set_connection_timeout(sec, usec);
    http_.set_read_timeout(sec, usec);
    http_.set_write_timeout(sec, usec);
    http_.set_keep_alive(true);
  }

  StatusOr<std::string> check_version() override {
    auto res = http_.Get("/api/version");
    if (!res) return unreachable(res.error());
    if (res->status == 404) {
      return Unsupported("the Ray at " + address_ + " has no Jobs API (GET /api/version: 404; Ray 2.x with the "
                         "dashboard is needed: pip install 'ray[default]')");
    }
    if (res->status != 200) return http_error("GET /api/version", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_object() || !j.contains("ray_version")) {
      return Unsupported("the server at " + address_ + " is not a Ray dashboard with the Jobs API (GET /api/version: " +
                         one_line(res->body) + ")");
    }
    const std::string v = j["ray_version"].is_string() ? j["ray_version"].get<std::string>() : j["ray_version"].dump();
    // The REST Jobs API with entrypoint resources is Ray >= 2.2; the dashboard's own API version is >= 3 then.
    int major = 0;
    try {
      major = std::stoi(v);
    } catch (const std::exception&) {
    }
    if (major < 2) return Unsupported("Ray " + v + " at " + address_ + " is too old for the Jobs API (Ray 2.x needed)");
    auto probe = http_.Get("/api/jobs/");
    if (!probe) return unreachable(probe.error());
    if (probe->status == 404) {
      return Unsupported("Ray " + v + " at " + address_ + " answers but has no Jobs API (GET /api/jobs/: 404)");
    }
    return v;
  }

  StatusOr<std::string> submit(const RayJobSpec& spec) override {
    const std::string body = job_request_body(spec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto res = http_.Post("/api/jobs/", body, "application/json");
    if (!res) return unreachable(res.error());
    if (res->status != 200) return http_error("POST /api/jobs/", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_object() && j.contains("submission_id") && j["submission_id"].is_string()) {
      return j["submission_id"].get<std::string>();
    }
    if (j.is_object() && j.contains("job_id") && j["job_id"].is_string()) return j["job_id"].get<std::string>();
    return BadInput("POST /api/jobs/ at " + address_ + ": unexpected answer " + one_line(res->body));
  }

  StatusOr<RayJobInfo> status(const std::string& id) override {
    auto res = http_.Get("/api/jobs/" + id);
    if (!res) return unreachable(res.error());
    if (res->status == 404) return NotFound("Ray job " + id + " not found at " + address_);
    if (res->status != 200) return http_error("GET /api/jobs/" + id, *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_object()) return BadInput("GET /api/jobs/" + id + ": not JSON: " + one_line(res->body));
    RayJobInfo info = job_info_from_json(j);
    if (info.submission_id.empty()) info.submission_id = id;
    return info;
  }

  StatusOr<std::string> logs(const std::string& id) override {
    auto res = http_.Get("/api/jobs/" + id + "/logs");
    if (!res) return unreachable(res.error());
    if (res->status != 200) return http_error("GET /api/jobs/" + id + "/logs", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_object() || !j.contains("logs") || !j["logs"].is_string()) {
      return BadInput("GET /api/jobs/" + id + "/logs: unexpected answer");
    }
    return j["logs"].get<std::string>();
  }

  Status stop(const std::string& id) override {
    auto res = http_.Post("/api/jobs/" + id + "/stop", "", "application/json");
    if (!res) return unreachable(res.error());
    if (res->status != 200) return http_error("POST /api/jobs/" + id + "/stop", *res);
    return Status::Ok();
  }

  StatusOr<std::vector<RayJobInfo>> list() override {
    auto res = http_.Get("/api/jobs/");
    if (!res) return unreachable(res.error());
    if (res->status != 200) return http_error("GET /api/jobs/", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_array()) return BadInput("GET /api/jobs/: not a JSON array");
    std::vector<RayJobInfo> out;
    for (const auto& e : j) out.push_back(job_info_from_json(e));
    return out;
  }

  StatusOr<std::vector<std::map<std::string, double>>> node_resources() override {
    auto res = http_.Get("/api/cluster_status");
    if (!res) return unreachable(res.error());
    std::vector<std::map<std::string, double>> out;
    if (res->status != 200) return out;
    const nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    const nlohmann::json* types = &j;
    for (const char* key : {"data", "clusterStatus", "loadMetricsReport", "nodeTypes"}) {
      if (!types->is_object() || !types->contains(key)) return out;
      types = &(*types)[key];
    }
    if (!types->is_array()) return out;
    for (const auto& entry : *types) {  // [{resource: amount}, node count]
      if (!entry.is_array() || entry.empty() || !entry[0].is_object()) continue;
      std::map<std::string, double> node;
      for (auto it = entry[0].begin(); it != entry[0].end(); ++it) {
        if (it.value().is_number()) node[it.key()] = it.value().get<double>();
      }
      out.push_back(std::move(node));
    }
    return out;
  }

 private:
  Status unreachable(httplib::Error e) const {
    return IoError("cannot reach the Ray dashboard at " + address_ + " (" + httplib::to_string(e) +
                   "): is the cluster up and is this its dashboard address (default port 8265)?");
  }
  Status http_error(const std::string& what, const httplib::Response& res) const {
    return IoError(what + " at " + address_ + ": HTTP " + std::to_string(res.status) + ": " + one_line(res.body));
  }

  httplib::Client http_;
};

}  // namespace

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string& address, double timeout_s) {
  auto a = normalize_ray_address(address);
  if (!a.ok()) return a.status();
  return std::unique_ptr<RayClient>(new HttpRayClient(*a, timeout_s));
}

}  // namespace profile_train::tuner
