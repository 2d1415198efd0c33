// The tuner's search space over the knobs of common/knobs.h: --knob arguments, ranges and configurations.
// Owner: tuner component.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/common/knobs.h"
#include "profile_train/common/status.h"

namespace profile_train::tuner {

// The knob vocabulary (names, override keys, workload flags, value domains) is common/knobs.h.
using profile_train::canonical_value;
using profile_train::find_knob;
using profile_train::find_knob_spelling;
using profile_train::knob_catalog;
using profile_train::KnobDef;
using profile_train::KnobKind;
using profile_train::KnobNeeds;

// One knob of a search space with its ordered candidate values. values[0] is the baseline value.
struct KnobRange {
  const KnobDef* def = nullptr;
  std::vector<std::string> values;
  bool is_auto = false;  // values came from `auto` (the batch-size search may refine between them)
};

// The searched knobs in catalog order.
using KnobSpace = std::vector<KnobRange>;

// Parses one --knob argument "NAME=V1,V2,..." or "NAME=auto" (NAME: any command-line spelling,
// find_knob_spelling). Integer lists are kept in the given order
// after de-duplication (the first value is the baseline).
StatusOr<KnobRange> parse_knob_arg(std::string_view arg);

// auto values for `def` on a host with `cpu_count` CPUs (num_workers is capped at 2 x cpu_count).
std::vector<std::string> auto_values_for(const KnobDef& def, unsigned cpu_count);

// A configuration: knob name -> canonical value. Knobs absent from the map are left as the target has them.
using Config = std::map<std::string, std::string>;

// Stable text key of a config ("amp=off,batch_size=32"), used to avoid measuring one config twice.
std::string config_key(const Config& config);
// Human form in space order: "batch_size=32 num_workers=2 amp=off".
std::string describe_config(const Config& config, const KnobSpace& space);
// The space's knob names, in its order.
std::vector<std::string> space_knobs(const KnobSpace& space);

// The baseline: values[0] of every knob in the space.
Config baseline_config(const KnobSpace& space);

// Integer value of a knob in `config`, or `fallback` when absent or not an integer.
long long config_int(const Config& config, const std::string& knob, long long fallback);

}  // namespace profile_train::tuner
