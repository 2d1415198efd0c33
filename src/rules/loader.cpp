// The catalog: the built-in rules and the user folders' rule files, loaded and parsed (one file: rule_parser.cpp).
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <system_error>

#include "rule_set.h"

namespace profile_train::rules {

namespace {

StatusOr<std::vector<detail::Rule>> load_path(const std::filesystem::path& path) {
  std::error_code ec;
  std::vector<std::filesystem::path> files;
  if (std::filesystem::is_directory(path, ec)) {
    for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
      const auto& p = entry.path();
      const std::string name = p.filename().string();
      if (p.extension() != ".json" || name.ends_with(".schema.json")) continue;
      if (!entry.is_regular_file(ec)) continue;
      files.push_back(p);
    }
    if (ec) return IoError(path.string() + ": cannot list the folder: " + ec.message());
    std::sort(files.begin(), files.end());
    if (files.empty()) return NotFound(path.string() + ": no rule files (*.json) in this folder");
  } else if (std::filesystem::is_regular_file(path, ec)) {
    files.push_back(path);
  } else {
    return NotFound(path.string() + ": no such rules folder or file");
  }
  std::vector<detail::Rule> out;
  std::map<std::string, std::pair<std::string, int>> seen;  // id -> (file, line)
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    if (!in) return IoError(f.string() + ": cannot read the rule file");
    std::stringstream buf;
    buf << in.rdbuf();
    auto rule = detail::parse_rule(buf.str(), f.string());
    if (!rule.ok()) return rule.status();
    if (auto it = seen.find(rule->id); it != seen.end())
      return BadInput(f.string() + ":" + std::to_string(rule->line_id) + ": duplicate rule id '" + rule->id +
                      "' (first defined at " + it->second.first + ":" + std::to_string(it->second.second) + ")");
    seen[rule->id] = {f.string(), rule->line_id};
    out.push_back(std::move(rule).value());
  }
  return out;
}

StatusOr<std::vector<detail::Rule>> load_builtins() {
  std::vector<detail::Rule> out;
  for (size_t i = 0; i < detail::kEmbeddedRuleCount; ++i) {
    const auto& file = detail::kEmbeddedRules[i];
    auto rule = detail::parse_rule(file.text, std::string("<built-in>/") + file.name);
    if (!rule.ok()) return Internal("built-in rule catalog is invalid: " + rule.status().message());
    rule->builtin = true;
    out.push_back(std::move(rule).value());
  }
  return out;
}

RuleSummary summarize(const detail::Rule& r) { return {r.id, r.title, r.tier, r.file, r.builtin, r.knobs}; }

}  // namespace

StatusOr<std::shared_ptr<const RuleSet>> load_rules(const std::vector<std::filesystem::path>& user_dirs) {
  try {
    auto builtins = load_builtins();
    if (!builtins.ok()) return builtins.status();
    std::map<std::string, detail::Rule> by_id;
    for (auto& r : *builtins) by_id[r.id] = std::move(r);
    // Ids defined by user folders so far: the same id twice among user rules is an error, a user rule
    // with a built-in id replaces the built-in.
    std::map<std::string, std::pair<std::string, int>> user_ids;
    for (const auto& dir : user_dirs) {
      auto rules = load_path(dir);
      if (!rules.ok()) return rules.status();
      for (auto& r : *rules) {
        if (auto it = user_ids.find(r.id); it != user_ids.end())
          return BadInput(r.file + ":" + std::to_string(r.line_id) + ": duplicate rule id '" + r.id +
                          "' (first defined at " + it->second.first + ":" + std::to_string(it->second.second) + ")");
        user_ids[r.id] = {r.file, r.line_id};
        by_id[r.id] = std::move(r);
      }
    }
    auto set = std::make_shared<RuleSet>();
    for (auto& [id, r] : by_id) set->rules.push_back(std::move(r));
    return std::shared_ptr<const RuleSet>(std::move(set));
  } catch (const std::exception& e) {
    return Internal(std::string("loading rules failed: ") + e.what());
  }
}

StatusOr<std::vector<RuleSummary>> check_rules(const std::filesystem::path& path) {
  try {
    auto rules = load_path(path);
    if (!rules.ok()) return rules.status();
    std::vector<RuleSummary> out;
    for (const auto& r : *rules) out.push_back(summarize(r));
    return out;
  } catch (const std::exception& e) {
    return Internal(std::string("checking rules failed: ") + e.what());
  }
}

std::vector<RuleSummary> list_rules(const RuleSet& rules) {
  std::vector<RuleSummary> out;
  for (const auto& r : rules.rules) out.push_back(summarize(r));
  std::stable_sort(out.begin(), out.end(), [](const RuleSummary& a, const RuleSummary& b) {
    return a.tier != b.tier ? a.tier < b.tier : a.id < b.id;
  });
  return out;
}

}  // namespace profile_train::rules
