// Evaluation of loaded rules on a report: recommendations, explanations, descriptions.
#include "profile_train/rules/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "profile_train/common/vocabulary.h"
#include "profile_train/report/report_json.h"

#include "rule_set.h"

namespace profile_train::rules {
namespace detail {

bool is_known_format(const std::string& f) {
  static const char* kFormats[] = {"", "pct", "pct0", "f0", "f1", "f2", "f3", "int", "ms", "us", "bytes", "gbps", "x"};
  return std::any_of(std::begin(kFormats), std::end(kFormats), [&](const char* k) { return f == k; });
}

namespace {
std::string fixed(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}
}  // namespace

std::optional<std::string> format_value(const expr::Value& v, const std::string& f) {
  using expr::ValueKind;
  if (!v.known()) return std::nullopt;
  if (v.kind != ValueKind::kNumber) {
    if (v.kind == ValueKind::kString) return v.string;
    if (v.kind == ValueKind::kBool) return std::string(v.boolean ? "true" : "false");
    if (f.empty() && v.kind == ValueKind::kList) {
      std::string out;
      for (const auto& item : *v.ref) {
        if (!out.empty()) out += ", ";
        out += item.is_string() ? item.get<std::string>() : item.dump();
      }
      return out;
    }
    return std::nullopt;  // a list/object cannot be rendered with a numeric format
  }
  const double n = v.number;
  if (f == "pct") return fixed(n * 100.0, 1) + "%";
  if (f == "pct0") return fixed(n * 100.0, 0) + "%";
  if (f == "f0") return fixed(n, 0);
  if (f == "f1") return fixed(n, 1);
  if (f == "f2") return fixed(n, 2);
  if (f == "f3") return fixed(n, 3);
  if (f == "int") return fixed(std::round(n), 0);
  if (f == "ms") return fixed(n, n >= 100 ? 0 : 1) + " ms";
  if (f == "us") return fixed(n, n >= 100 ? 0 : 1) + " us";
  if (f == "gbps") return fixed(n, 1) + " GB/s";
  if (f == "x") return fixed(n, 2) + "x";
  if (f == "bytes") {
    static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double x = n;
    int u = 0;
    while (std::fabs(x) >= 1024.0 && u < 4) {
      x /= 1024.0;
      ++u;
    }
    return u == 0 ? fixed(x, 0) + " B" : fixed(x, 1) + " " + kUnits[u];
  }
  return v.describe();
}

}  // namespace detail

namespace {

// A fix whose bound removes less than this share of the step is "minor": listed apart, never ahead of a
// material one (1 / (1 - 0.03) = 1.031x). Step-to-step noise of a training run is of this order.
constexpr double kMinorShare = 0.03;
constexpr size_t kPlanSteps = 3;

struct Outcome {
  expr::Value when;
  expr::Value removable;
  double speedup = 1.0;
  double share = 0.0;  // clamped removable share (0 when unknown)
  bool gain_known = false;
  std::vector<std::string> evidence;
  std::vector<std::string> evidence_dropped;  // templates skipped because a value was missing
};

double round3(double x) { return std::round(x * 1000.0) / 1000.0; }
double round6(double x) { return std::round(x * 1e6) / 1e6; }

std::optional<std::string> render(const detail::Template& t, const nlohmann::json& report, const expr::Locals& locals) {
  std::string line;
  for (const auto& part : t.parts) {
    if (!part.expression) {
      line += part.literal;
      continue;
    }
    auto s = detail::format_value(part.expression->Evaluate(report, locals), part.format);
    if (!s) return std::nullopt;
    line += *s;
  }
  return line;
}

Outcome evaluate(const detail::Rule& r, const nlohmann::json& report) {
  Outcome o;
  o.when = r.when.Evaluate(report);
  o.removable = r.removable_share.Evaluate(report);
  if (o.removable.kind == expr::ValueKind::kNumber && std::isfinite(o.removable.number)) {
    o.share = std::clamp(o.removable.number, 0.0, detail::kMaxRemovable);
    o.speedup = round3(1.0 / (1.0 - o.share));
    o.gain_known = true;
  }
  expr::Locals locals;
  locals["speedup_max"] = o.gain_known ? expr::Value::Number(o.speedup) : expr::Value::Unknown();
  locals["removable_share"] = o.removable;
  for (const auto& t : r.evidence) {
    if (t.when && !t.when->Evaluate(report, locals).is_true()) continue;
    auto line = render(t, report, locals);
    if (line) o.evidence.push_back(*line);
    else o.evidence_dropped.push_back(t.source);
  }
  return o;
}

enum class Group { kPrimary = 0, kSecondary = 1, kMinor = 2, kNote = 3 };
const char* group_name(Group g) {
  switch (g) {
    case Group::kPrimary: return "primary";
    case Group::kSecondary: return "secondary";
    case Group::kMinor: return "minor";
    case Group::kNote: return "note";
  }
  return "?";
}

// A fired rule and where it stands.
struct Fired {
  const detail::Rule* rule = nullptr;
  Outcome outcome;
  std::string level = "measured";  // measured | check | note
  std::string level_note;          // why it is a check or a note
  bool addresses = false;          // relieves the verdict's bottleneck
  Group group = Group::kSecondary;
  std::string reason;
};

std::string verdict_of(const nlohmann::json& report) {
  auto v = report.find("verdict");
  if (v == report.end() || !v->is_object()) return "unknown";
  auto b = v->find("bottleneck");
  return b != v->end() && b->is_string() ? b->get<std::string>() : "unknown";
}

std::string cost_text(const detail::Cost& c) {
  return std::string(detail::level_name(c.effort)) + " effort, " + detail::level_name(c.risk) + " risk";
}

void place(Fired& f, const nlohmann::json& report, const std::string& bottleneck) {
  const detail::Rule& r = *f.rule;
  expr::Locals locals;
  locals["speedup_max"] = f.outcome.gain_known ? expr::Value::Number(f.outcome.speedup) : expr::Value::Unknown();
  locals["removable_share"] = f.outcome.removable;
  for (const auto& u : r.unverified) {
    if (!u.when.Evaluate(report, locals).is_true()) continue;
    f.level = u.level;
    f.level_note = render(u.text, report, locals).value_or(u.text.source);
    break;
  }
  if (f.level == "measured" && !f.outcome.gain_known) {
    f.level = "check";
    f.level_note = "The gain cannot be bounded from this report (a metric it needs is missing).";
  }
  f.addresses = std::find(r.addresses.begin(), r.addresses.end(), bottleneck) != r.addresses.end();
  const std::string bound = f.outcome.gain_known ? detail::format_value(expr::Value::Number(f.outcome.speedup), "x").value_or("?")
                                                 : std::string("unknown");
  if (f.level == "note") {
    f.group = Group::kNote;
    f.reason = "a note, not a measured recommendation: " + f.level_note;
  } else if (f.outcome.gain_known && f.outcome.share < kMinorShare) {
    f.group = Group::kMinor;
    f.reason = "minor: its bound (" + bound + ") removes under 3% of the step";
  } else if (f.addresses) {
    f.group = Group::kPrimary;
    f.reason = "addresses the bottleneck (" + bottleneck + "); ordered cheapest first (" + cost_text(r.cost) +
               "), then by bound (" + bound + ")";
  } else {
    f.group = Group::kSecondary;
    f.reason = "does not address the bottleneck (" + bottleneck + ") but its bound (" + bound +
               ") is material (>= 3% of the step); ordered by bound, then cost (" + cost_text(r.cost) + ")";
  }
  if (f.level == "check") f.reason += "; a check, behind measured fixes of its group: " + f.level_note;
}

bool before(const Fired& a, const Fired& b) {
  if (a.group != b.group) return a.group < b.group;
  const bool am = a.level == "measured", bm = b.level == "measured";
  if (am != bm) return am;
  const int ac = a.rule->cost.rank(), bc = b.rule->cost.rank();
  const double as = a.outcome.speedup, bs = b.outcome.speedup;
  if (a.group == Group::kPrimary) {
    if (ac != bc) return ac < bc;
    if (as != bs) return as > bs;
  } else {
    if (as != bs) return as > bs;
    if (ac != bc) return ac < bc;
  }
  return a.rule->id < b.rule->id;
}

nlohmann::json to_json(const Fired& f, int rank) {
  const detail::Rule& r = *f.rule;
  const Outcome& o = f.outcome;
  nlohmann::json rec;
  rec["id"] = r.id;
  rec["title"] = r.title;
  rec["tier"] = r.tier;
  rec["rank"] = rank;
  rec["group"] = group_name(f.group);
  rec["evidence_level"] = f.level;
  rec["check_note"] = f.level_note.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.level_note);
  rec["addresses"] = r.addresses;
  rec["addresses_bottleneck"] = f.addresses;
  rec["cost"] = {{"effort", detail::level_name(r.cost.effort)}, {"risk", detail::level_name(r.cost.risk)}};
  rec["rank_reason"] = f.reason;
  rec["estimated_speedup_max"] = o.speedup;
  rec["removable_share"] = o.gain_known ? nlohmann::json(round6(o.share)) : nlohmann::json(nullptr);
  rec["gain_from"] = r.gain_from;
  rec["evidence"] = o.evidence;
  if (!o.gain_known)
    rec["evidence"].push_back("The gain cannot be bounded from this report (a metric it needs is missing).");
  rec["fix"] = {{"python", r.fix_python}, {"cpp", r.fix_cpp}};
  rec["caveats"] = r.caveats;
  rec["references"] = r.references;
  rec["knobs"] = r.knobs;
  return rec;
}

// A report with zero steps had no usable event (an empty trace, or one whose every event was malformed):
// nothing in it can support a recommendation, whatever facts (a GPU present, ...) it carries. A report that
// does not say how many steps it has (hand-made) is evaluated as usual.
bool has_no_steps(const nlohmann::json& report) {
  auto steps = report.find("steps");
  if (steps == report.end() || !steps->is_object()) return false;
  auto count = steps->find("count");
  return count != steps->end() && count->is_number() && count->get<double>() <= 0;
}

bool supported_report(const nlohmann::json& report) {
  auto it = report.find("schema_version");
  if (it == report.end() || !it->is_string()) return true;  // be lenient with hand-made reports
  const std::string v = it->get<std::string>();
  return v.substr(0, v.find('.')) == "1";
}

std::vector<Fired> rank_rules(const RuleSet& rules, const nlohmann::json& report) {
  std::vector<Fired> fired;
  if (!report.is_object() || !supported_report(report) || has_no_steps(report)) return fired;
  const std::string bottleneck = verdict_of(report);
  for (const auto& r : rules.rules) {
    try {
      Outcome o = evaluate(r, report);
      if (!o.when.is_true()) continue;
      Fired f;
      f.rule = &r;
      f.outcome = std::move(o);
      place(f, report, bottleneck);
      fired.push_back(std::move(f));
    } catch (const std::exception&) {
      // A rule that cannot be evaluated on this report is skipped; the others still run.
    }
  }
  std::sort(fired.begin(), fired.end(), before);
  return fired;
}

// Breakdown shares of the mean step by role (nullopt when the report has no breakdown).
std::optional<std::map<std::string, double>> breakdown_shares(const nlohmann::json& report) {
  auto b = report.find("breakdown");
  if (b == report.end() || !b->is_object()) return std::nullopt;
  std::map<std::string, double> out;
  for (auto role : kBreakdownRoleNames) {
    auto it = b->find(std::string(role));
    if (it == b->end() || !it->is_number()) return std::nullopt;
    out[std::string(role)] = std::max(0.0, it->get<double>());
  }
  return out;
}

}  // namespace

nlohmann::json build_plan(const nlohmann::json& recommendations, const nlohmann::json& report) {
  nlohmann::json plan = {{"bottleneck", verdict_of(report)},
                         {"steps", nlohmann::json::array()},
                         {"combined_speedup_max", 1.0},
                         {"no_fix_reason", nullptr},
                         {"method", "successive Amdahl: each step removes its share of what the steps before it left of "
                                    "the breakdown roles it draws on (gain.from), so overlapping shares count once"}};
  try {
    if (!recommendations.is_array()) return plan;
    // The roles of the step that are left after the steps so far (fractions of today's mean step).
    std::map<std::string, double> left = breakdown_shares(report).value_or(std::map<std::string, double>{{"other", 1.0}});
    const bool have_breakdown = breakdown_shares(report).has_value();
    const std::map<std::string, double> original = left;
    double removed_total = 0.0;
    bool any_primary = false;
    for (const auto& rec : recommendations) {
      if (rec.value("group", "") == "primary") any_primary = true;
      if (plan["steps"].size() >= kPlanSteps) continue;
      const std::string group = rec.value("group", "");
      if ((group != "primary" && group != "secondary") || rec.value("evidence_level", "") != "measured") continue;
      if (!rec.contains("removable_share") || !rec["removable_share"].is_number()) continue;
      const double share = rec["removable_share"].get<double>();
      std::vector<std::string> roles;
      if (have_breakdown && rec.contains("gain_from") && rec["gain_from"].is_array())
        for (const auto& g : rec["gain_from"])
          if (g.is_string() && left.count(g.get<std::string>())) roles.push_back(g.get<std::string>());
      if (roles.empty())
        for (const auto& [role, v] : left) roles.push_back(role);
      double orig = 0.0, now = 0.0;
      for (const auto& role : roles) {
        orig += original.at(role);
        now += left.at(role);
      }
      // What is left of its roles scales what the fix can still remove (earlier steps made them shorter).
      double removed = orig > 0 ? std::min(share * now / orig, now) : 0.0;
      removed = std::min(removed, detail::kMaxRemovable - removed_total);
      removed = std::max(0.0, removed);
      if (now > 0)
        for (const auto& role : roles) left[role] -= removed * left[role] / now;
      removed_total += removed;
      plan["steps"].push_back({{"id", rec.value("id", "")},
                               {"title", rec.value("title", "")},
                               {"speedup_max_alone", rec.value("estimated_speedup_max", 1.0)},
                               {"removable_share", round6(share)},
                               {"removed_share", round6(removed)},
                               {"cumulative_speedup_max", round3(1.0 / (1.0 - removed_total))}});
    }
    plan["combined_speedup_max"] = round3(1.0 / (1.0 - removed_total));
    const std::string b = verdict_of(report);
    if (b == "unknown") {
      plan["no_fix_reason"] = "The verdict is unknown, so no fix can be targeted at what limits the step.";
    } else if (!any_primary && b == "gpu_compute" && report.contains("efficiency") &&
               report["efficiency"].is_object() && report["efficiency"].value("at_roof", nlohmann::json()).is_string()) {
      // The leading operators run near their roof (efficiency.at_roof): say so, not "no fix".
      plan["no_fix_reason"] = report["efficiency"]["at_roof"].get<std::string>() + ".";
    } else if (!any_primary) {
      plan["no_fix_reason"] = "No catalogued fix addresses " + b +
                              " on this report: the rules for it do not fire (their conditions are false or their "
                              "facts are missing; `profile-train rules explain ID report.json` shows why).";
    }
  } catch (const std::exception&) {
  }
  return plan;
}

nlohmann::json recommend(const RuleSet& rules, const nlohmann::json& report) {
  nlohmann::json out = nlohmann::json::array();
  try {
    int rank = 0;
    for (const auto& f : rank_rules(rules, report)) out.push_back(to_json(f, ++rank));
  } catch (const std::exception&) {
    return nlohmann::json::array();
  }
  return out;
}

void apply_rules(const RuleSet& rules, nlohmann::json& report) {
  try {
    if (!report.is_object()) return;
    report["recommendations"] = recommend(rules, report);
    report["plan"] = build_plan(report["recommendations"], report);
  } catch (...) {
    // Never throws: leave the report as it was.
  }
}

Status apply_rules(const RuleSet& rules, analysis::Report& report) {
  nlohmann::json json;
  try {
    json = report::to_json(report);
  } catch (const std::exception& e) {  // allocation failure
    return Internal(std::string("rules: cannot serialize the report: ") + e.what());
  }
  apply_rules(rules, json);
  auto recommendations = report::recommendations_from_json(json.value("recommendations", nlohmann::json::array()));
  if (!recommendations.ok()) return Internal("rules: " + recommendations.status().message());
  auto plan = report::plan_from_json(json.value("plan", nlohmann::json()));
  if (!plan.ok()) return Internal("rules: " + plan.status().message());
  report.recommendations = std::move(*recommendations);
  report.plan = std::move(*plan);
  return Status::Ok();
}

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
    if (o.when.is_true()) {
      os << "  FIRES: the condition is true\n";
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
    for (const auto& e : o.evidence_dropped) os << "    - (not shown, a value is missing) " << e << "\n";
    os << "  addresses: " << (r->addresses.empty() ? std::string("(none declared)") : [&] {
      std::string a;
      for (const auto& x : r->addresses) a += (a.empty() ? "" : ", ") + x;
      return a;
    }()) << "; cost: " << cost_text(r->cost) << "\n";
    if (o.when.is_true()) {
      const auto ranked = rank_rules(rules, report);
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
  os << "evidence (templates):\n";
  for (const auto& t : r->evidence) os << "  - " << t.source << "\n";
  os << "\nestimated gain: speedup_max = 1 / (1 - removable_share)\n    removable_share = " << r->removable_share.text()
     << "\n    " << r->gain_rationale << "\n\n";
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
