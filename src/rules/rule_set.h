// Internal representation of loaded rules. Owner: rules component (not a public header).
#pragma once

#include <cstddef>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"
#include "profile_train/rules/engine.h"
#include "profile_train/rules/expr.h"

namespace profile_train::rules {
namespace detail {

// One `{expression|format}` placeholder or a literal run of text in an evidence template.
struct TemplatePart {
  std::string literal;
  std::optional<expr::Expression> expression;
  std::string format;  // "" = default rendering
};

struct Template {
  std::string source;
  std::vector<TemplatePart> parts;
  std::optional<expr::Expression> when;  // shown only when true (evidence items written as {text, when})
};

// What applying a fix costs the user: effort (how much code and time) and risk (to convergence, numerics or
// stability), each 1 = low, 2 = medium, 3 = high. The ordering key inside a group; tier stays the ladder shown.
struct Cost {
  int effort = 1;
  int risk = 1;
  int rank() const { return effort + risk; }
};
// Cost implied by a tier when a (user) rule declares none: 1 -> low/low, 2 -> low/medium, 3 -> medium/medium,
// 4 -> high/high.
Cost cost_for_tier(int tier);
const char* level_name(int level);  // 1 -> "low", 2 -> "medium", 3 -> "high"

// A condition under which the rule's evidence is incomplete: the rule still fires, at a lower standing.
// level "check": a fact it relies on was not recorded (verify before applying); "note": the evidence cannot
// show that the fix applies to this job at all (no gain counted, never in the plan).
struct Unverified {
  expr::Expression when;
  Template text;
  std::string level;    // "check" or "note"
  std::string confirm;  // how to confirm the missing fact first (a command, a one-line print); "" = none
};

// What to assume when a fact is unknown (format 1.2): when `metric` is absent or null in the report and the
// rule's condition is UNKNOWN (or its gain cannot be bounded), the engine evaluates the rule again with the
// metric set to `value` (the first item per metric whose `when` is true and whose value is known) and, if it
// fires then, lists it as a check (never measured) whose note names the assumption; its bound is the one
// under the assumption. `value`, `when` and `text` may use the engine's locals (kAssumeLocals).
struct Assumption {
  std::string metric;  // dotted report path, e.g. "device.compute_capability"
  expr::Expression value;
  std::optional<expr::Expression> when;
  Template text;        // names the assumption; may use $assumed (the value)
  std::string confirm;  // how to confirm it, e.g. `python -c "import torch; print(torch.cuda.get_device_capability())"`
};

// How the fix acts (format 1.2): the engine caps the removable share by what that mechanism can free.
// "host": the host-side cause of GPU idle time (sync, launch, allocator, data wait): at most the GPU idle share
// of the step when the step has GPU activity. "communication": at most the exposed communication share. "gpu":
// kernel-side (no cap beyond gain.from). "" = none declared. Every share is also capped by the breakdown roles
// of gain.from.
enum class Mechanism { kNone, kHost, kCommunication, kGpu };

struct Rule {
  std::string id;
  std::string title;
  int tier = 0;
  std::vector<std::string> addresses;  // verdict bottleneck classes the fix relieves
  Cost cost;
  std::vector<std::string> gain_from;  // breakdown roles the removable share comes out of (empty: any)
  std::vector<Unverified> unverified;
  std::vector<Assumption> assume;
  Mechanism mechanism = Mechanism::kNone;
  // Format 1.3: breakdown roles whose measured shares the condition this rule fixes inflates (e.g. an
  // oversubscribed CPU slows the operators and the DataLoader workers alike): when it fires, it ranks ahead of
  // the fixes of its group whose gain comes from those roles, since their bounds were measured under it.
  std::vector<std::string> skews;
  std::string skews_text;  // why
  expr::Expression when;
  std::vector<Template> evidence;
  expr::Expression removable_share;  // gain: speedup_max = 1 / (1 - clamp(removable_share, 0, kMaxRemovable))
  std::string gain_rationale;
  std::string fix_python;
  std::string fix_cpp;
  std::vector<std::string> caveats;
  std::vector<std::string> references;
  std::vector<std::string> knobs;
  std::string file;      // where it came from: "<built-in>/dataloader-workers.json" or a user path
  bool builtin = false;
  int line_id = 1;       // line of the "id" key (duplicate-id errors)
  int line_when = 1;     // line of the "when" key
  nlohmann::json json;   // the rule file as read (for `rules show --json`)
};

// Built-in catalog embedded at build time (generated from rules/*.json by CMake).
struct EmbeddedRuleFile {
  const char* name;  // file name, e.g. "dataloader-workers.json"
  const char* text;
};
extern const EmbeddedRuleFile kEmbeddedRules[];
extern const std::size_t kEmbeddedRuleCount;

inline constexpr const char* kRuleFormatMajor = "1";
inline constexpr double kMaxRemovable = 0.99;  // caps a bound at 100x

// Locals the engine gives to `assume` expressions and texts: $kernel_arch_min, the least compute capability
// the GPU kernel names allow (volta_ 7.0, turing_ 7.5, ampere_/sm80_ 8.0, sm86_ 8.6, sm89_ 8.9, hopper_/sm90_
// 9.0, sm100_ 10.0; UNKNOWN when no name tells), and $assumed, the assumed value (texts only).
const std::map<std::string, expr::StaticType, std::less<>>& assume_locals();

// Parses and validates one rule file's text. `file` is used in messages ("FILE:LINE: ...").
StatusOr<Rule> parse_rule(std::string_view text, const std::string& file);

// Renders a number/string for evidence with one of the template formats; nullopt when the value is unknown.
std::optional<std::string> format_value(const expr::Value& v, const std::string& format);
bool is_known_format(const std::string& format);

}  // namespace detail

class RuleSet {
 public:
  std::vector<detail::Rule> rules;  // sorted by id, ids unique
  const detail::Rule* find(const std::string& id) const {
    for (const auto& r : rules)
      if (r.id == id) return &r;
    return nullptr;
  }
};

}  // namespace profile_train::rules
