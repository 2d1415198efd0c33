// Built when cpp-httplib was not found at configure time: the Ray executor says so instead of running.
#include "profile_train/tuner/ray_client.h"

namespace profile_train::tuner {

const bool kRaySupported = false;

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string&, const RayHttpLimits&) {
  return Unsupported("this build has no Ray support (cpp-httplib was not found at configure time: install "
                     "libcpp-httplib-dev and reconfigure)");
}

StatusOr<std::unique_ptr<RayClient>> RayClient::connect(const std::string& address, double) {
  return connect(address, RayHttpLimits{});
}

}  // namespace profile_train::tuner
