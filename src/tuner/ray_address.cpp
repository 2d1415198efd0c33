// Address parsing and the JSON of the Jobs API: no HTTP here, so it is built with or without cpp-httplib.
#include <cmath>

#include "profile_train/tuner/ray_client.h"

namespace profile_train::tuner {

StatusOr<std::string> normalize_ray_address(const std::string& address) {
  std::string a = address;
  while (!a.empty() && (a.back() == '/' || a.back() == ' ')) a.pop_back();
  if (a.empty()) {
    return InvalidArgument("no Ray address: give --ray-address http://HOST:8265 or set RAY_ADDRESS");
  }
  if (a == "auto" || a.rfind("ray://", 0) == 0) {
    return InvalidArgument("Ray address '" + address +
                           "': the Jobs API is served by the dashboard; give its HTTP address, e.g. http://HOST:8265");
  }
  if (a.rfind("https://", 0) == 0) {
    return InvalidArgument("Ray address '" + address + "': https is not supported; use an http:// address or a tunnel");
  }
  if (a.rfind("http://", 0) != 0) a = "http://" + a;
  const std::string hostport = a.substr(7);
  if (hostport.empty() || hostport.find('/') != std::string::npos) {
    return InvalidArgument("Ray address '" + address + "': expected http://HOST:PORT");
  }
  return a;
}

nlohmann::json job_request_body(const RayJobSpec& spec) {
  nlohmann::json runtime_env = spec.runtime_env.is_object() ? spec.runtime_env : nlohmann::json::object();
  if (!spec.env.empty()) {
    nlohmann::json vars = runtime_env.value("env_vars", nlohmann::json::object());
    for (const auto& [k, v] : spec.env) vars[k] = v;
    runtime_env["env_vars"] = vars;
  }
  nlohmann::json body = {{"entrypoint", spec.entrypoint}, {"runtime_env", runtime_env}};
  if (!spec.submission_id.empty()) body["submission_id"] = spec.submission_id;
  if (spec.num_cpus > 0) body["entrypoint_num_cpus"] = spec.num_cpus;
  if (spec.num_gpus > 0) body["entrypoint_num_gpus"] = spec.num_gpus;
  if (!spec.metadata.empty()) body["metadata"] = spec.metadata;
  return body;
}

RayJobInfo job_info_from_json(const nlohmann::json& j) {
  RayJobInfo info;
  if (!j.is_object()) return info;
  auto str = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
  };
  info.submission_id = str("submission_id");
  if (info.submission_id.empty()) info.submission_id = str("job_id");
  info.state = str("status");
  info.message = str("message");
  info.node_id = str("driver_node_id");
  if (auto it = j.find("driver_exit_code"); it != j.end() && it->is_number_integer()) info.exit_code = it->get<int>();
  // The API gives epoch milliseconds.
  if (auto it = j.find("start_time"); it != j.end() && it->is_number()) info.start_time_s = it->get<double>() / 1000.0;
  if (auto it = j.find("end_time"); it != j.end() && it->is_number()) info.end_time_s = it->get<double>() / 1000.0;
  return info;
}

}  // namespace profile_train::tuner
