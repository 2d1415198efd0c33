// describe_config (model/tune.h): one naming of a configuration for the tuner's notes and tune's terminal lines.
#include <algorithm>

#include "profile_train/model/tune.h"

namespace profile_train::model {

std::string describe_config(const Config& config, const std::vector<std::string>& order) {
  std::string out;
  for (const std::string& knob : order) {
    auto it = config.find(knob);
    if (it != config.end()) out += (out.empty() ? "" : " ") + it->first + "=" + it->second;
  }
  for (const auto& [k, v] : config) {  // knobs outside the space (should not happen; shown anyway)
    if (std::find(order.begin(), order.end(), k) == order.end()) out += (out.empty() ? "" : " ") + k + "=" + v;
  }
  return out;
}

}  // namespace profile_train::model
