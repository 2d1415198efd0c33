// Evaluation of loaded rules on a report: recommendations, explanations, descriptions.
#include "profile_train/rules/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

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

struct Outcome {
  expr::Value when;
  expr::Value removable;
  double speedup = 1.0;
  bool gain_known = false;
  std::vector<std::string> evidence;
  std::vector<std::string> evidence_dropped;  // templates skipped because a value was missing
};

double round3(double x) { return std::round(x * 1000.0) / 1000.0; }

Outcome evaluate(const detail::Rule& r, const nlohmann::json& report) {
  Outcome o;
  o.when = r.when.Evaluate(report);
  o.removable = r.removable_share.Evaluate(report);
  if (o.removable.kind == expr::ValueKind::kNumber) {
    const double share = std::clamp(o.removable.number, 0.0, detail::kMaxRemovable);
    o.speedup = round3(1.0 / (1.0 - share));
    o.gain_known = true;
  }
  expr::Locals locals;
  locals["speedup_max"] = o.gain_known ? expr::Value::Number(o.speedup) : expr::Value::Unknown();
  locals["removable_share"] = o.removable;
  for (const auto& t : r.evidence) {
    if (t.when && !t.when->Evaluate(report, locals).is_true()) continue;
    std::string line;
    bool complete = true;
    for (const auto& part : t.parts) {
      if (!part.expression) {
        line += part.literal;
        continue;
      }
      auto s = detail::format_value(part.expression->Evaluate(report, locals), part.format);
      if (!s) {
        complete = false;
        break;
      }
      line += *s;
    }
    (complete ? o.evidence : o.evidence_dropped).push_back(complete ? line : t.source);
  }
  return o;
}

nlohmann::json to_json(const detail::Rule& r, const Outcome& o) {
  nlohmann::json rec;
  rec["id"] = r.id;
  rec["title"] = r.title;
  rec["tier"] = r.tier;
  rec["estimated_speedup_max"] = o.speedup;
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

}  // namespace

nlohmann::json recommend(const RuleSet& rules, const nlohmann::json& report) {
  nlohmann::json out = nlohmann::json::array();
  try {
    if (!report.is_object() || !supported_report(report) || has_no_steps(report)) return out;
    struct Fired {
      const detail::Rule* rule;
      Outcome outcome;
    };
    std::vector<Fired> fired;
    for (const auto& r : rules.rules) {
      try {
        Outcome o = evaluate(r, report);
        if (o.when.is_true()) fired.push_back({&r, std::move(o)});
      } catch (const std::exception&) {
        // A rule that cannot be evaluated on this report is skipped; the others still run.
      }
    }
    std::sort(fired.begin(), fired.end(), [](const Fired& a, const Fired& b) {
      if (a.rule->tier != b.rule->tier) return a.rule->tier < b.rule->tier;
      if (a.outcome.speedup != b.outcome.speedup) return a.outcome.speedup > b.outcome.speedup;
      return a.rule->id < b.rule->id;
    });
    for (const auto& f : fired) out.push_back(to_json(*f.rule, f.outcome));
  } catch (const std::exception&) {
    return nlohmann::json::array();
  }
  return out;
}

void apply_rules(const RuleSet& rules, nlohmann::json& report) {
  try {
    if (!report.is_object()) return;
    report["recommendations"] = recommend(rules, report);
  } catch (...) {
    // Never throws: leave the report as it was.
  }
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
  os << "tier " << r->tier << " · " << (r->builtin ? "built-in" : "user rule") << " · " << r->file << "\n\n";
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
