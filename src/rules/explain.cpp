// Explanations of a rule on a report (`--explain`), its description (`rules show`) and its JSON.
#include <sstream>
#include <string>

#include "profile_train/rules/engine.h"

#include "engine_internal.h"
#include "rule_set.h"

namespace profile_train::rules {

std::string explain_rule(const RuleSet& rules, const std::string& id, const nlohmann::json& report) {
  try {
    const detail::Rule* r = rules.find(id);
    if (r == nullptr) {
      std::string known;
      for (const auto& x : rules.rules) known += (known.empty() ? "" : ", ") + x.id;
      return "unknown rule '" + id + "' (known: " + known + ")\n";
    }
    const Outcome o = evaluate(*r, report);
    std::ostringstream os;
    os << "rule " << r->id << " (tier " << r->tier << "): " << r->title << "\n";
    os << "  defined in " << r->file << ":" << r->line_when << "\n";
    const auto ranked = rank_rules(rules, report);
    const Fired* fired = nullptr;
    for (const auto& f : ranked)
      if (f.rule == r) fired = &f;
    if (o.when.is_true()) {
      os << "  FIRES: the condition is true\n";
    } else if (fired != nullptr && !fired->assumed_note.empty()) {
      os << "  FIRES AS A CHECK: the condition is unknown on this report but true under the rule's assumptions\n";
      os << "    " << fired->assumed_note << "\n";
      os << "    under them: removable share " << fired->outcome.removable.describe() << " -> estimated_speedup_max "
         << detail::format_value(expr::Value::Number(fired->outcome.speedup), "x").value_or("?") << "\n";
    } else if (o.when.kind == expr::ValueKind::kBool) {
      os << "  does not fire: the condition is false\n";
    } else {
      os << "  does not fire: the condition is unknown (a metric it needs is missing or null in this report)\n";
    }
    if (!supported_report(report)) os << "  note: the report's schema_version is not 1.x; rules are not applied to it\n";
    if (has_no_steps(report))
      os << "  note: the report has no step (no usable event in the trace); no rule is applied to it\n";
    os << "  when: " << r->when.text() << "\n";
    os << r->when.Explain(report, {}, 4);
    os << "  gain: removable share = " << r->removable_share.text() << " = " << o.removable.describe();
    if (o.gain_known)
      os << "  ->  estimated_speedup_max = 1/(1 - share) = " << detail::format_value(expr::Value::Number(o.speedup), "x").value_or("?");
    else
      os << "  ->  gain unknown";
    os << "\n    (" << r->gain_rationale << ")\n";
    os << "  evidence:\n";
    for (const auto& e : o.evidence) os << "    - " << e << "\n";
    if (fired != nullptr && !fired->assumed_note.empty())
      for (const auto& e : fired->outcome.evidence) os << "    - (under the assumption) " << e << "\n";
    for (const auto& e : o.evidence_dropped) os << "    - (not shown, a value is missing) " << e << "\n";
    os << "  addresses: " << (r->addresses.empty() ? std::string("(none declared)") : [&] {
      std::string a;
      for (const auto& x : r->addresses) a += (a.empty() ? "" : ", ") + x;
      return a;
    }()) << "; cost: " << cost_text(r->cost) << "\n";
    if (fired != nullptr) {
      for (size_t i = 0; i < ranked.size(); ++i) {
        if (ranked[i].rule != r) continue;
        os << "  standing: #" << (i + 1) << " of " << ranked.size() << " (" << group_name(ranked[i].group) << ", "
           << ranked[i].level << ") against the verdict '" << verdict_of(report) << "': " << ranked[i].reason << "\n";
        if (i > 0) os << "    ahead of it: " << ranked[i - 1].rule->id << " (" << ranked[i - 1].reason << ")\n";
        if (i + 1 < ranked.size()) os << "    behind it: " << ranked[i + 1].rule->id << " (" << ranked[i + 1].reason << ")\n";
      }
    }
    return os.str();
  } catch (const std::exception& e) {
    return std::string("cannot explain rule '") + id + "': " + e.what() + "\n";
  }
}

StatusOr<std::string> describe_rule(const RuleSet& rules, const std::string& id) {
  const detail::Rule* r = rules.find(id);
  if (r == nullptr) return NotFound("no rule with id '" + id + "' (see `profile-train rules list`)");
  std::ostringstream os;
  auto indent = [](const std::string& text, const char* pad) {
    std::string out = pad;
    for (char c : text) {
      out += c;
      if (c == '\n') out += pad;
    }
    return out;
  };
  os << r->id << " — " << r->title << "\n";
  os << "tier " << r->tier << " · " << (r->builtin ? "built-in" : "user rule") << " · " << r->file << "\n";
  std::string addresses;
  for (const auto& a : r->addresses) addresses += (addresses.empty() ? "" : ", ") + a;
  os << "addresses: " << (addresses.empty() ? "(none declared)" : addresses) << " · cost: " << cost_text(r->cost) << "\n\n";
  os << "fires when:\n    " << r->when.text() << "\n\n";
  if (!r->assume.empty()) {
    os << "when a fact is unknown, assumes (then fires as a check naming the assumption):\n";
    for (const auto& a : r->assume) {
      os << "  - " << a.metric << " = " << a.value.text();
      if (a.when) os << "  if " << a.when->text();
      os << "\n      " << a.text.source << "\n";
      if (!a.confirm.empty()) os << "      confirm: " << a.confirm << "\n";
    }
    os << "\n";
  }
  os << "evidence (templates):\n";
  for (const auto& t : r->evidence) os << "  - " << t.source << "\n";
  os << "\nestimated gain: speedup_max = 1 / (1 - removable_share)\n    removable_share = " << r->removable_share.text()
     << "\n    " << r->gain_rationale << "\n";
  if (r->mechanism == detail::Mechanism::kHost)
    os << "    capped by its mechanism (host): at most the GPU idle share of the step (gpu.idle.fraction)\n";
  else if (r->mechanism == detail::Mechanism::kCommunication)
    os << "    capped by its mechanism (communication): at most the exposed communication (communication.exposed_fraction)\n";
  os << "\n";
  os << "fix (PyTorch):\n" << indent(r->fix_python, "    ") << "\n\n";
  os << "fix (LibTorch C++):\n" << indent(r->fix_cpp, "    ") << "\n\n";
  os << "when not to apply:\n";
  for (const auto& c : r->caveats) os << "  - " << c << "\n";
  os << "\nreferences:\n";
  for (const auto& ref : r->references) os << "  - " << ref << "\n";
  if (!r->knobs.empty()) {
    os << "\ntuner knobs:";
    for (const auto& k : r->knobs) os << " " << k;
    os << "\n";
  }
  return os.str();
}

StatusOr<nlohmann::json> rule_json(const RuleSet& rules, const std::string& id) {
  const detail::Rule* r = rules.find(id);
  if (r == nullptr) return NotFound("no rule with id '" + id + "' (see `profile-train rules list`)");
  return r->json;
}

}  // namespace profile_train::rules
