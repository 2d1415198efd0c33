// Technique rules as data (rules/*.json), conditions in a small expression language over report metrics
// (dotted paths into report.json), ordered recommendations. Owner: rules component.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"

namespace profile_train::rules {

class RuleSet;  // opaque; defined in src/rules

// The built-in catalog (embedded at build time) plus rules from `user_dirs` (a user rule with the id of a
// built-in one replaces it). Errors name file and line; exit code 2 at the CLI.
StatusOr<std::shared_ptr<const RuleSet>> load_rules(const std::vector<std::filesystem::path>& user_dirs = {});

// Evaluates every rule on `report` and writes report["recommendations"] (ordered by tier, then estimated
// gain). Never throws.
void apply_rules(const RuleSet& rules, nlohmann::json& report);

// Why rule `id` did or did not fire on `report` (multi-line, human-readable).
std::string explain_rule(const RuleSet& rules, const std::string& id, const nlohmann::json& report);

}  // namespace profile_train::rules
