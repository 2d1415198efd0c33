// Tuning knobs: what `profile-train tune` may change in a training run, how each knob's values are written,
// and how a knob reaches the target (workload flag, argv placeholder, or Python-shim override key).
// Owner: tuner component.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "profile_train/common/status.h"

namespace profile_train::tuner {

enum class KnobKind {
  kInteger,  // ordered numeric values (batch size, workers, prefetch factor)
  kBool,     // canonical values "0" / "1"
  kChoice,   // unordered named values (amp: off / bf16 / fp16)
};

struct KnobDef {
  std::string name;                      // canonical name, also the placeholder: {batch_size}
  KnobKind kind = KnobKind::kInteger;
  std::vector<std::string> auto_values;  // the list used for `NAME=auto` (first value = baseline)
  std::string override_key;              // key in PROFILE_TRAIN_OVERRIDES; "" when the shim cannot apply it
  std::string workload_flag;             // flag of the built-in workload, e.g. "--batch-size"
  bool in_default_space = false;         // searched without an explicit --knob
  std::vector<std::string> aliases;      // accepted spellings (--knob workers=..., {workers})
};

// The knob catalog, cheapest / lowest-risk knob first (this order breaks ties in the guided search).
const std::vector<KnobDef>& knob_catalog();
// Finds a knob by canonical name, alias or override key ("dataloader.num_workers"); nullptr if unknown.
const KnobDef* find_knob(std::string_view name);

// Normalizes a value for `knob`: integers in decimal, booleans "0"/"1" (accepts true/false/on/off/yes/no),
// amp one of off/bf16/fp16 (accepts none/fp32/bfloat16/float16). InvalidArgument names the knob and value.
StatusOr<std::string> canonical_value(const KnobDef& knob, std::string_view value);

// One knob of a search space with its ordered candidate values. values[0] is the baseline value.
struct KnobRange {
  const KnobDef* def = nullptr;
  std::vector<std::string> values;
  bool is_auto = false;  // values came from `auto` (the batch-size search may refine between them)
};

// The searched knobs in catalog order.
using KnobSpace = std::vector<KnobRange>;

// Parses one --knob argument "NAME=V1,V2,..." or "NAME=auto". Integer lists are kept in the given order
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

// The baseline: values[0] of every knob in the space.
Config baseline_config(const KnobSpace& space);

// Integer value of a knob in `config`, or `fallback` when absent or not an integer.
long long config_int(const Config& config, const std::string& knob, long long fallback);

}  // namespace profile_train::tuner
