// Internal to the rules engine (src/rules): a rule evaluated on a report (evaluate.cpp) and the fired rules in
// their order (engine.cpp), shared with the explanations (explain.cpp). Not part of the public API.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/rules/expr.h"
#include "rule_set.h"

namespace profile_train::rules {

// ---- one rule on one report (evaluate.cpp) ----------------------------------------------------------------------
struct Outcome {
  expr::Value when;
  expr::Value removable;
  double speedup = 1.0;
  double share = 0.0;  // removable share after the clamp and the mechanism caps, rounded to 1e-6 (0 when unknown)
  bool gain_known = false;
  std::string cap_note;  // set when a mechanism or role cap lowered the share: what capped it
  std::vector<std::string> evidence;
  std::vector<std::string> evidence_dropped;  // templates skipped because a value was missing
};

// A rule evaluated under its assumptions: the report with the unknown facts set, and the texts naming them.
struct AssumedEval {
  std::shared_ptr<const nlohmann::json> report;
  std::string note;  // "Assumed: ... Confirm first: ..."
};

double round3(double x);
double round6(double x);
std::optional<std::string> render(const detail::Template& t, const nlohmann::json& report, const expr::Locals& locals);
Outcome evaluate(const detail::Rule& r, const nlohmann::json& report);
// The report with the rule's assumptions applied to the facts it lacks; nullopt when none applies.
std::optional<AssumedEval> assume(const detail::Rule& r, const nlohmann::json& report);

// ---- the fired rules in their order (engine.cpp) ------------------------------------------------------------------
enum class Group { kPrimary = 0, kSecondary = 1, kMinor = 2, kNote = 3 };
const char* group_name(Group g);

// A fired rule and where it stands.
struct Fired {
  const detail::Rule* rule = nullptr;
  Outcome outcome;
  std::shared_ptr<const nlohmann::json> assumed_report;  // the report under the rule's assumptions (or null)
  std::string assumed_note;                               // names the assumptions; "" = none made
  std::string level = "measured";  // measured | check | note
  std::string level_note;          // why it is a check or a note
  bool addresses = false;          // relieves the verdict's bottleneck
  bool skews_others = false;       // its condition inflates shares other fixes of its group are bounded on
  Group group = Group::kSecondary;
  std::string reason;
};

std::string verdict_of(const nlohmann::json& report);
std::string cost_text(const detail::Cost& c);
// A report with zero steps had no usable event (an empty trace, or one whose every event was malformed):
// nothing in it can support a recommendation, whatever facts (a GPU present, ...) it carries. A report that
// does not say how many steps it has (hand-made) is evaluated as usual.
bool has_no_steps(const nlohmann::json& report);
bool supported_report(const nlohmann::json& report);
std::vector<Fired> rank_rules(const RuleSet& rules, const nlohmann::json& report);

}  // namespace profile_train::rules
