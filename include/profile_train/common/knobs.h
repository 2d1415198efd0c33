// The knob vocabulary, defined once: every setting `profile-train tune` can change in a training run, with
// each spelling its consumers use -- the canonical name (rules/*.json "knobs", report.json
// recommendations[].knobs, tune.json configs, {placeholders}), the key the Python shim reads from
// PROFILE_TRAIN_OVERRIDES (format/protocol.h), the built-in workload's flag --, its value domain and what it needs to act.
// The rule loader, the tuner, the workload's option parser and (checked by tests/common/knobs_test.cpp)
// the Python shim take their names from here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/format/protocol.h"
#include "profile_train/common/status.h"

namespace profile_train {

// The environment variable the Python shim reads its overrides from: a JSON object, override_key -> value
// (integers as numbers, booleans as true/false, choices as strings).
inline constexpr std::string_view kOverridesEnv = agent::protocol::kEnvOverrides;

// The canonical knob names, for code that means one particular knob (the catalog, knobs.cpp, is built from them;
// everything else looks knobs up by name).
struct KnobName {
  static constexpr char kNumWorkers[] = "num_workers";
  static constexpr char kPinMemory[] = "pin_memory";
  static constexpr char kPrefetchFactor[] = "prefetch_factor";
  static constexpr char kPersistentWorkers[] = "persistent_workers";
  static constexpr char kAmp[] = "amp";
  static constexpr char kBatchSize[] = "batch_size";
  static constexpr char kChannelsLast[] = "channels_last";
  static constexpr char kCudnnBenchmark[] = "cudnn_benchmark";
  static constexpr char kTf32[] = "tf32";
  static constexpr char kThreads[] = "threads";
  static constexpr char kOptimizerImpl[] = "optimizer_impl";
  static constexpr char kCompile[] = "compile";
};

enum class KnobKind {
  kInteger,  // ordered numeric values (batch size, workers, prefetch factor)
  kBool,     // canonical values "0" / "1"
  kChoice,   // unordered named values (amp: off / bf16 / fp16)
};

// What a value of a knob needs to have any effect (values that cannot act are not tried; see
// tuner::skipped_values).
enum class KnobNeeds {
  kNothing,
  kGpu,              // acts on a GPU only
  kGpuOrNativeBf16,  // a GPU, or a CPU that computes bf16 natively (AMX / AVX512-BF16); emulated otherwise
};

// What the training program must have for a knob's override to act on it at all, read from the baseline's
// facts (values that cannot act are not tried; see tuner::skipped_values).
enum class KnobProgramNeeds {
  kNothing,
  kDataLoader,   // a torch DataLoader (facts.dataloader): the DataLoader knobs
  kConvModel,    // a model with a 2-D convolution (facts.model.has_conv): channels_last
  kOptimizer,    // a torch.optim optimizer that steps (facts.optimizer): optimizer_impl
  kModel,        // a top-level nn.Module called by the training loop (facts.model): compile
};

// A value with needs of its own (amp's fp16 and bf16), and why, in words.
struct KnobValueNeeds {
  std::string value;
  KnobNeeds needs = KnobNeeds::kNothing;
  std::string why;  // "fp16 autocast needs a GPU"
};

// A kChoice value and the other spellings a user may write for it ("bf16": "bfloat16").
struct KnobChoice {
  std::string value;
  std::vector<std::string> synonyms;
};

struct KnobDef {
  std::string name;                      // canonical name: the one spelling of every format we own
  KnobKind kind = KnobKind::kInteger;
  long long min_value = 0;               // kInteger: the smallest valid value
  std::vector<KnobChoice> choices;       // kChoice: the value domain
  std::vector<std::string> auto_values;  // the list used for `--knob NAME=auto` (first value = baseline)
  std::string override_key;              // key in PROFILE_TRAIN_OVERRIDES; "" when the shim cannot apply it
  std::string workload_flag;             // flag of the built-in workload, e.g. "--batch-size"
  bool in_default_space = false;         // searched without an explicit --knob
  // Also searched without an explicit --knob by the guided strategy (which tries what the diagnosis points to
  // first and drops what cannot act on this program), not by the grid (whose size is the product of the space).
  bool in_guided_space = false;
  KnobProgramNeeds program_needs = KnobProgramNeeds::kNothing;  // only with an override (shim targets)
  // What every value other than the target's own needs (kGpu: pinned memory, cuDNN, TF32), and why.
  KnobNeeds needs = KnobNeeds::kNothing;
  std::string needs_why;                 // "pinned host memory only speeds up copies to a GPU"
  std::vector<KnobValueNeeds> value_needs;  // values with needs of their own, in the order reasons are given
  // Other spellings accepted on the command line only (`--knob workers=...`, `{bs}` in a tuned command).
  std::vector<std::string> aliases;
};

// The knob catalog, cheapest / lowest-risk knob first (this order breaks ties in the guided search).
const std::vector<KnobDef>& knob_catalog();

// The knob with this canonical name (exact); nullptr if there is none. Formats we own (rule files, reports,
// tune.json) use only this spelling.
const KnobDef* find_knob(std::string_view name);

// A knob as a user may write it on the command line: its name, an alias or its override key, any case,
// surrounding blanks ignored; nullptr if unknown.
const KnobDef* find_knob_spelling(std::string_view spelling);

// "batch_size, num_workers, ..." in catalog order (for error messages and help texts).
std::string knob_names();

// Normalizes a value for `knob`: integers in decimal (at least min_value), booleans "0"/"1" (accepts
// true/false/on/off/yes/no), choices by value or synonym. InvalidArgument names the knob and value.
StatusOr<std::string> canonical_value(const KnobDef& knob, std::string_view value);

// What `value` of `knob` needs to act: its value_needs entry, else the knob's needs.
KnobNeeds needs_of(const KnobDef& knob, std::string_view value);

// The file of overrides `tune` writes next to tune.json (apply.json: {"overrides": {KEY: VALUE}, ...}) or a bare
// {KEY: VALUE} object, as `profile-train run --apply FILE` reads it: every key an override key of the catalog,
// every value in its knob's domain. Returns the object for PROFILE_TRAIN_OVERRIDES, values typed (integers as
// numbers, booleans as true/false, choices as their canonical strings); InvalidArgument names the bad entry.
StatusOr<nlohmann::json> parse_overrides_document(std::string_view text);

}  // namespace profile_train
