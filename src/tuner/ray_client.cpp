// RayClient: the Jobs REST API over a small HTTP/1.1 client of its own (one connection per request,
// `Connection: close`). Its own rather than cpp-httplib's, whose client (Debian's 0.11) bounds neither a
// header nor a body nor a whole request: an endless header reached 4.2 GB, an endless chunked body 2.1 GB, a
// server trickling a byte every 2 s kept `tune` waiting forever (issue 29). Here every answer is bounded by
// RayHttpLimits: header bytes, body bytes, the log kept (streamed), inactivity and an overall deadline.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>

#include "profile_train/tuner/ray_client.h"
#include "ray_http.h"

namespace profile_train::tuner {

const bool kRaySupported = true;

namespace ray_http {
namespace {

class HttpRayClient : public RayClient {
 public:
  HttpRayClient(std::string address, const RayHttpLimits& limits) : RayClient(std::move(address)), limits_(limits) {
    // "http://HOST[:PORT]" (normalize_ray_address); HOST may be a bracketed IPv6 address.
    const std::string hp = address_.substr(7);
    if (!hp.empty() && hp[0] == '[') {
      const size_t close = hp.find(']');
      host_ = hp.substr(1, close == std::string::npos ? std::string::npos : close - 1);
      if (close != std::string::npos && close + 1 < hp.size() && hp[close + 1] == ':') port_ = hp.substr(close + 2);
    } else if (const size_t colon = hp.rfind(':'); colon != std::string::npos) {
      host_ = hp.substr(0, colon);
      port_ = hp.substr(colon + 1);
    } else {
      host_ = hp;
    }
    if (port_.empty()) port_ = "80";
  }

  StatusOr<std::string> check_version() override {
    auto res = call("GET", "/api/version", "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
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
    auto probe = call("GET", "/api/jobs/", "", limits_.max_list_bytes);
    if (!probe.ok()) return probe.status();
    if (probe->status == 404) {
      return Unsupported("Ray " + v + " at " + address_ + " answers but has no Jobs API (GET /api/jobs/: 404)");
    }
    return v;
  }

  StatusOr<std::string> submit(const RayJobSpec& spec) override {
    const std::string body = job_request_body(spec).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    auto res = call("POST", "/api/jobs/", body, limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status != 200) return http_error("POST /api/jobs/", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (j.is_object() && j.contains("submission_id") && j["submission_id"].is_string()) {
      return j["submission_id"].get<std::string>();
    }
    if (j.is_object() && j.contains("job_id") && j["job_id"].is_string()) return j["job_id"].get<std::string>();
    return BadInput("POST /api/jobs/ at " + address_ + ": unexpected answer " + one_line(res->body));
  }

  StatusOr<RayJobInfo> status(const std::string& id) override {
    auto res = call("GET", "/api/jobs/" + id, "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status == 404) return NotFound("Ray job " + id + " not found at " + address_);
    if (res->status != 200) return http_error("GET /api/jobs/" + id, *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_object()) return BadInput("GET /api/jobs/" + id + ": not JSON: " + one_line(res->body));
    RayJobInfo info = job_info_from_json(j);
    if (info.submission_id.empty()) info.submission_id = id;
    return info;
  }

  StatusOr<std::string> logs(const std::string& id) override {
    // Streamed through the extractor: only the log's head and tail are held, never the whole answer.
    const std::string what = "GET /api/jobs/" + id + "/logs";
    LogExtractor log(limits_.log_head_bytes, limits_.log_tail_bytes);
    std::string start;  // the answer's first bytes, for an error message
    auto res = exchange("GET", "/api/jobs/" + id + "/logs", "", [&](std::string_view d) {
      if (start.size() < 4096) start.append(d.substr(0, 4096 - start.size()));
      return log.feed(d);
    });
    if (!res.ok()) {
      if (log.failed()) return BadInput(what + ": unexpected answer");
      return res.status();
    }
    if (*res != 200) return http_error(what, Answer{*res, start});
    if (log.failed() || !log.complete()) return BadInput(what + ": unexpected answer");
    return log.result();
  }

  Status stop(const std::string& id) override {
    auto res = call("POST", "/api/jobs/" + id + "/stop", "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
    if (res->status != 200) return http_error("POST /api/jobs/" + id + "/stop", *res);
    return Status::Ok();
  }

  StatusOr<std::vector<RayJobInfo>> list() override {
    auto res = call("GET", "/api/jobs/", "", limits_.max_list_bytes);
    if (!res.ok()) return res.status();
    if (res->status != 200) return http_error("GET /api/jobs/", *res);
    nlohmann::json j = nlohmann::json::parse(res->body, nullptr, false);
    if (!j.is_array()) return BadInput("GET /api/jobs/: not a JSON array");
    std::vector<RayJobInfo> out;
    for (const auto& e : j) out.push_back(job_info_from_json(e));
    return out;
  }

  StatusOr<std::vector<std::map<std::string, double>>> node_resources() override {
    auto res = call("GET", "/api/cluster_status", "", limits_.max_json_bytes);
    if (!res.ok()) return res.status();
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
  struct Answer {
    int status = 0;
    std::string body;
  };

  // One request; the HTTP status once the whole answer was read into `sink`. A sink that stops (its own
  // limit) ends the request with ResourceExhausted naming the request.
  StatusOr<int> exchange(const std::string& method, const std::string& path, const std::string& body, const BodySink& sink) {
    const std::string what = method + " " + path;
    Connection c(limits_);
    HttpFailure f;
    if (!c.open(host_, port_, &f)) return unreachable(f.why);
    std::string req = method + " " + path + " HTTP/1.1\r\nHost: " + (host_.find(':') != std::string::npos ? "[" + host_ + "]" : host_) +
                      ":" + port_ + "\r\nConnection: close\r\nAccept: application/json\r\nUser-Agent: profile-train\r\n";
    if (method == "POST") req += "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
    req += "\r\n";
    req += body;
    if (!c.send_all(req, &f)) return IoError(what + " at " + address_ + ": " + f.why);
    const int st = read_answer(c, limits_, sink, &f);
    if (st < 0) return ResourceExhausted(what + " at " + address_ + ": the answer was refused (too large or malformed)");
    if (st == 0) return IoError(what + " at " + address_ + ": " + f.why);
    return st;
  }

  // One request whose answer is kept whole, up to `max_body` bytes.
  StatusOr<Answer> call(const std::string& method, const std::string& path, const std::string& body, size_t max_body) {
    Answer a;
    bool too_large = false;
    auto st = exchange(method, path, body, [&](std::string_view d) {
      if (a.body.size() + d.size() > max_body) {
        too_large = true;
        return false;
      }
      a.body.append(d);
      return true;
    });
    if (too_large)
      return ResourceExhausted(method + " " + path + " at " + address_ + ": the answer is larger than " + mib(max_body) +
                               " (not a Ray dashboard?)");
    if (!st.ok()) return st.status();
    a.status = *st;
    return a;
  }

  Status unreachable(const std::string& why) const {
    return IoError("cannot reach the Ray dashboard at " + address_ + " (" + why +
                   "): is the cluster up and is this its dashboard address (default port 8265)?");
  }
  Status http_error(const std::string& what, const Answer& res) const {
    return IoError(what + " at " + address_ + ": HTTP " + std::to_string(res.status) + ": " + one_line(res.body));
  }

  RayHttpLimits limits_;
  std::string host_, port_;
};

}  // namespace
}  // namespace ray_http

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string& address, const RayHttpLimits& limits) {
  auto a = normalize_ray_address(address);
  if (!a.ok()) return a.status();
  return std::unique_ptr<RayClient>(new ray_http::HttpRayClient(*a, limits));
}

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string& address, double timeout_s) {
  RayHttpLimits limits;
  limits.io_timeout_s = timeout_s;
  return connect(address, limits);
}

}  // namespace profile_train::tuner
