// `profile-train rules list | show ID | check PATH | explain ID REPORT`: the technique catalog.
#include <algorithm>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "pipeline.h"
#include "profile_train/common/json_bounded.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/rules/engine.h"

namespace profile_train::cli {
namespace {

struct RulesArgs {
  std::vector<std::string> rules_dirs;  // --rules DIR (added / overriding rules)
  std::string id;
  std::string path;
  std::string report;
  bool json = false;
};

int rules_failed(const Io& io, const Status& s) { return print_failure(*io.err, "profile-train rules", s); }

StatusOr<std::shared_ptr<const rules::RuleSet>> load(const RulesArgs& a) {
  std::vector<std::filesystem::path> dirs(a.rules_dirs.begin(), a.rules_dirs.end());
  return rules::load_rules(dirs);
}

int run_list(const RulesArgs& a, const Io& io) {
  auto set = load(a);
  if (!set.ok()) return rules_failed(io, set.status());
  const auto all = rules::list_rules(**set);
  if (a.json) {
    nlohmann::json out = nlohmann::json::array();
    for (const auto& r : all)
      out.push_back({{"id", r.id}, {"title", r.title}, {"tier", r.tier}, {"file", r.file}, {"builtin", r.builtin},
                     {"knobs", r.knobs}});
    *io.out << out.dump(2) << "\n";
    return kExitOk;
  }
  *io.out << "tier  id                             title\n";
  for (const auto& r : all) {
    *io.out << "  " << r.tier << "   " << std::left << std::setw(30) << terminal_safe(r.id) << " " << terminal_safe(r.title);
    if (!r.builtin) *io.out << "   [" << terminal_safe(r.file) << "]";
    *io.out << "\n";
  }
  *io.out << all.size() << " rules (tier 1 = cheapest, lowest risk; `profile-train rules show ID` for details)\n";
  return kExitOk;
}

int run_show(const RulesArgs& a, const Io& io) {
  auto set = load(a);
  if (!set.ok()) return rules_failed(io, set.status());
  if (a.json) {
    auto j = rules::rule_json(**set, a.id);
    if (!j.ok()) return rules_failed(io, j.status());
    *io.out << j->dump(2) << "\n";
    return kExitOk;
  }
  auto text = rules::describe_rule(**set, a.id);
  if (!text.ok()) return rules_failed(io, text.status());
  *io.out << terminal_safe(*text, true);
  return kExitOk;
}

int run_check(const RulesArgs& a, const Io& io) {
  auto found = rules::check_rules(a.path);
  if (!found.ok()) return rules_failed(io, found.status());
  // A user folder is also checked together with the built-ins (ids that replace built-ins are reported).
  auto set = rules::load_rules({std::filesystem::path(a.path)});
  if (!set.ok()) return rules_failed(io, set.status());
  std::vector<std::string> builtin_ids;
  if (auto builtins = rules::load_rules({}); builtins.ok())
    for (const auto& r : rules::list_rules(**builtins)) builtin_ids.push_back(r.id);
  *io.out << "OK: " << found->size() << " rule(s) in " << terminal_safe(a.path) << "\n";
  for (const auto& r : *found) {
    const bool replaces = std::find(builtin_ids.begin(), builtin_ids.end(), r.id) != builtin_ids.end();
    *io.out << "  " << terminal_safe(r.id) << " (tier " << r.tier << ")" << (replaces ? " replaces the built-in rule" : "") << "\n";
  }
  return kExitOk;
}

int run_explain(const RulesArgs& a, const Io& io) {
  auto set = load(a);
  if (!set.ok()) return rules_failed(io, set.status());
  if (auto known = rules::rule_json(**set, a.id); !known.ok()) return rules_failed(io, known.status());  // exit 2
  std::ifstream in(a.report);
  if (!in) return rules_failed(io, IoError(a.report + ": cannot read the report"));
  nlohmann::json report;
  try {
    report = parse_json_bounded(in);  // nesting limit: a hostile report must not cost GBs
  } catch (const std::exception& e) {
    return rules_failed(io, BadInput(a.report + ": not a JSON report: " + e.what()));
  }
  // The explanation quotes the report's values and the rule's text: both may carry escape sequences.
  *io.out << terminal_safe(rules::explain_rule(**set, a.id, report), true);
  return kExitOk;
}

}  // namespace

Runner add_rules(CLI::App& app, Io io) {
  auto args = std::make_shared<RulesArgs>();
  auto* sub = app.add_subcommand("rules", "List, show and check technique rules (the recommendation catalog)");
  sub->require_subcommand(1);
  auto* list = sub->add_subcommand("list", "List the rules (built-in catalog plus --rules folders)");
  list->add_option("--rules", args->rules_dirs, "Folder of extra rule files (*.json); same id replaces a built-in");
  list->add_flag("--json", args->json, "Print JSON");
  auto* show = sub->add_subcommand("show", "Show one rule: condition, evidence, gain, fixes, caveats");
  show->add_option("id", args->id, "Rule id")->required();
  show->add_option("--rules", args->rules_dirs, "Folder of extra rule files (*.json)");
  show->add_flag("--json", args->json, "Print the rule file as JSON");
  auto* check = sub->add_subcommand("check", "Validate user rule files (a folder of *.json or one file)");
  check->add_option("path", args->path, "Folder or rule file")->required();
  auto* explain = sub->add_subcommand("explain", "Why a rule does or does not fire on a report.json");
  explain->add_option("id", args->id, "Rule id")->required();
  explain->add_option("report", args->report, "report.json written by analyze/run")->required();
  explain->add_option("--rules", args->rules_dirs, "Folder of extra rule files (*.json)");
  return [args, list, show, check, explain, io]() -> int {
    if (list->parsed()) return run_list(*args, io);
    if (show->parsed()) return run_show(*args, io);
    if (check->parsed()) return run_check(*args, io);
    if (explain->parsed()) return run_explain(*args, io);
    return kExitBadInput;
  };
}

}  // namespace profile_train::cli
