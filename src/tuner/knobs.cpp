#include "profile_train/tuner/knobs.h"
#include "profile_train/common/strings.h"
#include "profile_train/model/tune.h"

#include <algorithm>
#include <cctype>
#include <charconv>

namespace profile_train::tuner {
namespace {

bool parse_ll(std::string_view s, long long* out) {
  if (s.empty()) return false;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && p == s.data() + s.size();
}

}  // namespace

std::vector<std::string> auto_values_for(const KnobDef& def, unsigned cpu_count) {
  std::vector<std::string> values = def.auto_values;
  if (def.name == KnobName::kNumWorkers) {
    // More workers than 2 x CPUs only adds contention; the ladder stops there.
    const long long cap = std::max(2LL, 2LL * static_cast<long long>(std::max(1u, cpu_count)));
    std::erase_if(values, [&](const std::string& v) { return std::stoll(v) > cap; });
  } else if (def.name == KnobName::kThreads) {
    // 0 (torch's own count, the baseline), then the powers of two up to the cores, and the cores themselves:
    // more threads than cores only oversubscribe them.
    const long long cores = std::max(1u, cpu_count);
    std::erase_if(values, [&](const std::string& v) { return std::stoll(v) > cores; });
    if (std::find(values.begin(), values.end(), std::to_string(cores)) == values.end()) {
      values.push_back(std::to_string(cores));
    }
  }
  return values;
}

StatusOr<KnobRange> parse_knob_arg(std::string_view arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string_view::npos) {
    return InvalidArgument("--knob '" + std::string(arg) + "': expected NAME=V1,V2,... or NAME=auto");
  }
  const KnobDef* def = find_knob_spelling(arg.substr(0, eq));
  if (def == nullptr) {
    return InvalidArgument("--knob '" + std::string(arg) + "': unknown knob (known: " + knob_names() + ")");
  }
  KnobRange range;
  range.def = def;
  const std::string rhs = trim_space(arg.substr(eq + 1));
  if (ascii_lower(rhs) == "auto") {
    range.is_auto = true;
    return range;  // values filled by the caller (auto_values_for) once the host is known
  }
  size_t pos = 0;
  while (pos <= rhs.size()) {
    size_t comma = rhs.find(',', pos);
    if (comma == std::string::npos) comma = rhs.size();
    const std::string item = trim_space(std::string_view(rhs).substr(pos, comma - pos));
    if (!item.empty()) {
      auto v = canonical_value(*def, item);
      if (!v.ok()) return v.status();
      if (std::find(range.values.begin(), range.values.end(), *v) == range.values.end()) {
        range.values.push_back(*v);
      }
    }
    pos = comma + 1;
  }
  if (range.values.empty()) return InvalidArgument("--knob '" + std::string(arg) + "': no values");
  return range;
}

std::string config_key(const Config& config) {
  std::string key;
  for (const auto& [k, v] : config) key += (key.empty() ? "" : ",") + k + "=" + v;
  return key;
}

std::vector<std::string> space_knobs(const KnobSpace& space) {
  std::vector<std::string> names;
  for (const KnobRange& r : space) names.push_back(r.def->name);
  return names;
}

std::string describe_config(const Config& config, const KnobSpace& space) {
  return model::describe_config(config, space_knobs(space));
}

Config baseline_config(const KnobSpace& space) {
  Config c;
  for (const KnobRange& r : space) {
    if (!r.values.empty()) c[r.def->name] = r.values.front();
  }
  return c;
}

long long config_int(const Config& config, const std::string& knob, long long fallback) {
  auto it = config.find(knob);
  if (it == config.end()) return fallback;
  long long x = 0;
  return parse_ll(it->second, &x) ? x : fallback;
}

}  // namespace profile_train::tuner
