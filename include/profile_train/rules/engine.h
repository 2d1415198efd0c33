// Technique rules as data (rules/*.json), conditions in a small expression language over report metrics
// (dotted paths into report.json), ordered recommendations. Owner: rules component.
//
// Rule files: one JSON object per file, validated against rules/rule.schema.json (format_version "1.x";
// an unknown major version is rejected). Conditions: see expr.h. Valid metric paths: metric_paths.h.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/report.h"
#include "profile_train/common/status.h"

namespace profile_train::rules {

// The rule-file format this build writes and reads (readers accept any 1.x).
inline constexpr const char* kRuleFormatVersion = "1.2";

class RuleSet;  // opaque; defined in src/rules

// The built-in catalog (embedded at build time) plus rules from `user_dirs` (a user rule with the id of a
// built-in one replaces it). Errors name file and line; exit code 2 at the CLI.
StatusOr<std::shared_ptr<const RuleSet>> load_rules(const std::vector<std::filesystem::path>& user_dirs = {});

// Evaluates every rule on `report` and writes report["recommendations"] and report["plan"]. Never throws.
//
// Ordering (rules/README.md, "Ordering"): each fired rule gets a group against the verdict's bottleneck --
// primary (the rule `addresses` it), secondary (it does not, but its bound removes >= 3% of the step), minor
// (bound under 3%), note (the evidence cannot show the fix applies to this job) -- and an evidence level
// (measured, or check when a fact it relies on was not recorded). Groups come in that order; inside a group,
// measured before check; primary by cost (effort + risk), then bound; the others by bound, then cost; then
// id. Each recommendation carries its `rank_reason`.
void apply_rules(const RuleSet& rules, nlohmann::json& report);

// The same over the typed report: the conditions evaluate over its JSON view (model::to_json, once) and the
// engine fills report.recommendations and report.plan directly. Internal only when the view cannot be made
// (allocation failure).
Status apply_rules(const RuleSet& rules, model::Report& report);

// The recommendations of `report` (its JSON view), typed and ranked. Never throws.
std::vector<model::Recommendation> recommendations_of(const RuleSet& rules, const nlohmann::json& report);

// The plan over typed recommendations (below: build_plan, the same over their JSON form). Never throws.
model::Plan plan_of(const std::vector<model::Recommendation>& recommendations, const nlohmann::json& report);

// The plan: the first (at most 3) measured primary/secondary recommendations in order, with the combined bound
// computed by successive Amdahl over the breakdown roles each one draws on (gain.from), so that overlapping
// shares are counted once; `no_fix_reason` when no catalogued fix addresses the bottleneck. Never throws.
nlohmann::json build_plan(const nlohmann::json& recommendations, const nlohmann::json& report);

// The recommendations array apply_rules would write, without touching `report`. Never throws.
nlohmann::json recommend(const RuleSet& rules, const nlohmann::json& report);

// Why rule `id` did or did not fire on `report` (multi-line, human-readable).
std::string explain_rule(const RuleSet& rules, const std::string& id, const nlohmann::json& report);

struct RuleSummary {
  std::string id;
  std::string title;
  int tier = 0;
  std::string file;  // "<built-in>/ID.json" or the user file's path
  bool builtin = false;
  std::vector<std::string> knobs;
};

// All rules, ordered by tier then id.
std::vector<RuleSummary> list_rules(const RuleSet& rules);

// Pretty multi-line description of one rule (`rules show ID`); NotFound when there is no such rule.
StatusOr<std::string> describe_rule(const RuleSet& rules, const std::string& id);

// The rule file as read (JSON) for `rules show --json`; NotFound when there is no such rule.
StatusOr<nlohmann::json> rule_json(const RuleSet& rules, const std::string& id);

// Validates user rules without the built-ins (`rules check`): `path` is a folder of *.json rule files or one
// rule file. Returns the rules found; the first error names FILE:LINE.
StatusOr<std::vector<RuleSummary>> check_rules(const std::filesystem::path& path);

}  // namespace profile_train::rules
