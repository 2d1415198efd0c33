// Internal representation of loaded rules. Owner: rules component (not a public header).
#pragma once

#include <cstddef>
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
  std::string level;  // "check" or "note"
};

struct Rule {
  std::string id;
  std::string title;
  int tier = 0;
  std::vector<std::string> addresses;  // verdict bottleneck classes the fix relieves
  Cost cost;
  std::vector<std::string> gain_from;  // breakdown roles the removable share comes out of (empty: any)
  std::vector<Unverified> unverified;
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
