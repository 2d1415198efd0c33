// Evaluation of loaded rules on a report: recommendations, explanations, descriptions.
#include "profile_train/rules/engine.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string_view>

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

const std::map<std::string, expr::StaticType, std::less<>>& assume_locals() {
  static const std::map<std::string, expr::StaticType, std::less<>> k = {{"kernel_arch_min", expr::StaticType::kNumber}};
  return k;
}

}  // namespace detail

namespace {

// The least compute capability the GPU kernel names allow: cuBLAS/cuDNN/CUTLASS kernels carry the architecture
// they were built for (a kernel built for sm_90 does not run on an older GPU), so the highest one named is a
// lower bound on the device. Unknown (nullopt) when no top kernel's name tells.
std::optional<double> kernel_arch_min(const nlohmann::json& report) {
  static const std::pair<const char*, double> kPrefixes[] = {
      {"volta_", 7.0}, {"turing_", 7.5}, {"ampere_", 8.0}, {"sm80_", 8.0}, {"sm86_", 8.6}, {"sm89_", 8.9},
      {"hopper_", 9.0}, {"sm90_", 9.0}, {"sm90a_", 9.0}, {"sm100_", 10.0}, {"sm120_", 12.0}};
  std::optional<double> best;
  auto gpu = report.find("gpu");
  if (gpu == report.end() || !gpu->is_object()) return best;
  auto top = gpu->find("top_kernels");
  if (top == gpu->end() || !top->is_array()) return best;
  for (const auto& k : *top) {
    if (!k.is_object() || !k.contains("name") || !k["name"].is_string()) continue;
    std::string_view name = k["name"].get_ref<const std::string&>();
    if (name.starts_with("void ")) name.remove_prefix(5);
    for (const auto& [prefix, cc] : kPrefixes)
      if (name.starts_with(prefix)) best = std::max(best.value_or(0.0), cc);
  }
  return best;
}

// A fix whose bound removes less than this share of the step is "minor": listed apart, never ahead of a
// material one (1 / (1 - 0.03) = 1.031x). Step-to-step noise of a training run is of this order.
constexpr double kMinorShare = 0.03;
constexpr size_t kPlanSteps = 3;

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

std::optional<double> number_at(const nlohmann::json& report, std::initializer_list<const char*> path) {
  const nlohmann::json* j = &report;
  for (const char* key : path) {
    if (!j->is_object()) return std::nullopt;
    auto it = j->find(key);
    if (it == j->end()) return std::nullopt;
    j = &*it;
  }
  if (!j->is_number()) return std::nullopt;
  const double v = j->get<double>();
  return std::isfinite(v) ? std::optional<double>(v) : std::nullopt;
}

std::string pct_text(double share) { return detail::format_value(expr::Value::Number(share), "pct").value_or("?"); }

// The most the rule's mechanism can free, as a share of the step, and why (nullopt: no cap known).
// A host-side fix (gain.mechanism "host") cannot make the step shorter than the GPU's busy time: it frees at most
// the GPU idle share (on steps with GPU activity). A communication fix frees at most the exposed communication.
// Every fix frees at most the breakdown roles its share comes out of (gain.from).
std::optional<std::pair<double, std::string>> mechanism_cap(const detail::Rule& r, const nlohmann::json& report) {
  std::optional<std::pair<double, std::string>> cap;
  auto lower = [&](double v, std::string why) {
    v = std::max(0.0, v);
    if (!cap || v < cap->first) cap = std::make_pair(v, std::move(why));
  };
  if (!r.gain_from.empty()) {
    if (auto b = report.find("breakdown"); b != report.end() && b->is_object()) {
      double sum = 0;
      bool all = true;
      for (const auto& role : r.gain_from) {
        auto it = b->find(role);
        if (it == b->end() || !it->is_number()) all = false;
        else sum += std::max(0.0, it->get<double>());
      }
      std::string roles;
      for (const auto& role : r.gain_from) roles += (roles.empty() ? "" : " + ") + role;
      if (all) lower(sum, "the breakdown roles it acts on (" + roles + ") are " + pct_text(sum) + " of the step");
    }
  }
  if (r.mechanism == detail::Mechanism::kHost) {
    auto has_gpu = report.find("source");
    const bool gpu = has_gpu != report.end() && has_gpu->is_object() && has_gpu->value("has_gpu_activity", false) == true;
    if (auto idle = number_at(report, {"gpu", "idle", "fraction"}); gpu && idle)
      lower(*idle, "a host-side fix can free only the GPU idle time it causes, and the GPU idles " + pct_text(*idle) +
                       " of the step");
  } else if (r.mechanism == detail::Mechanism::kCommunication) {
    auto exposed = number_at(report, {"communication", "exposed_fraction"});
    if (!exposed) exposed = number_at(report, {"breakdown", "communication"});
    if (exposed)
      lower(*exposed, "a communication fix can free only the exposed communication, " + pct_text(*exposed) +
                          " of the step");
  }
  return cap;
}

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
    double share = std::clamp(o.removable.number, 0.0, detail::kMaxRemovable);
    if (auto cap = mechanism_cap(r, report); cap && share > cap->first + 1e-9) {
      share = cap->first;
      o.cap_note = "Bound capped at " + pct_text(share) + " of the step (the rule's estimate was " +
                   pct_text(std::min(o.removable.number, detail::kMaxRemovable)) + "): " + cap->second;
      o.removable = expr::Value::Number(share);
    }
    // One rounding, used by the recommendation and the plan alike: both show the same bound.
    o.share = round6(share);
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
  if (!o.cap_note.empty()) o.evidence.push_back(o.cap_note);
  return o;
}

// A rule evaluated under its assumptions: the report with the unknown facts set, and the texts naming them.
struct AssumedEval {
  std::shared_ptr<const nlohmann::json> report;
  std::string note;  // "Assumed: ... Confirm first: ..."
};

void set_path(nlohmann::json& root, const std::string& dotted, const expr::Value& v) {
  nlohmann::json* cur = &root;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    if (!cur->is_object()) *cur = nlohmann::json::object();
    cur = &(*cur)[dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start)];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  switch (v.kind) {
    case expr::ValueKind::kNumber: *cur = v.number; break;
    case expr::ValueKind::kBool: *cur = v.boolean; break;
    case expr::ValueKind::kString: *cur = v.string; break;
    default: *cur = v.ref != nullptr ? *v.ref : nlohmann::json(nullptr); break;
  }
}

bool path_known(const nlohmann::json& report, const std::string& dotted) {
  const nlohmann::json* cur = &report;
  size_t start = 0;
  while (true) {
    const size_t dot = dotted.find('.', start);
    if (!cur->is_object()) return false;
    auto it = cur->find(dotted.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (it == cur->end()) return false;
    cur = &*it;
    if (dot == std::string::npos) return !cur->is_null();
    start = dot + 1;
  }
}

// The report with the rule's assumptions applied to the facts it lacks; nullopt when none applies.
std::optional<AssumedEval> assume(const detail::Rule& r, const nlohmann::json& report) {
  if (r.assume.empty()) return std::nullopt;
  expr::Locals locals;
  const auto arch = kernel_arch_min(report);
  locals["kernel_arch_min"] = arch ? expr::Value::Number(*arch) : expr::Value::Unknown();
  auto out = std::make_shared<nlohmann::json>();
  std::vector<std::string> done;
  std::string note;
  for (const auto& a : r.assume) {
    if (std::find(done.begin(), done.end(), a.metric) != done.end() || path_known(report, a.metric)) continue;
    if (a.when && !a.when->Evaluate(report, locals).is_true()) continue;
    const expr::Value v = a.value.Evaluate(report, locals);
    if (!v.known()) continue;
    if (done.empty()) *out = report;
    set_path(*out, a.metric, v);
    done.push_back(a.metric);
    expr::Locals text_locals = locals;
    text_locals["assumed"] = v;
    note += (note.empty() ? "Assumed, since the trace does not record " : "; and, since it does not record ") +
            a.metric + ": " + render(a.text, report, text_locals).value_or(a.text.source) + ".";
    if (!a.confirm.empty()) note += " Confirm first: " + a.confirm;
  }
  if (done.empty()) return std::nullopt;
  return AssumedEval{std::move(out), note};
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
  std::shared_ptr<const nlohmann::json> assumed_report;  // the report under the rule's assumptions (or null)
  std::string assumed_note;                               // names the assumptions; "" = none made
  std::string level = "measured";  // measured | check | note
  std::string level_note;          // why it is a check or a note
  bool addresses = false;          // relieves the verdict's bottleneck
  bool skews_others = false;       // its condition inflates shares other fixes of its group are bounded on
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

void place(Fired& f, const nlohmann::json& given, const std::string& bottleneck) {
  const detail::Rule& r = *f.rule;
  const nlohmann::json& report = f.assumed_report ? *f.assumed_report : given;
  expr::Locals locals;
  locals["speedup_max"] = f.outcome.gain_known ? expr::Value::Number(f.outcome.speedup) : expr::Value::Unknown();
  locals["removable_share"] = f.outcome.removable;
  for (const auto& u : r.unverified) {
    if (!u.when.Evaluate(report, locals).is_true()) continue;
    f.level = u.level;
    f.level_note = render(u.text, report, locals).value_or(u.text.source);
    if (!u.confirm.empty()) f.level_note += ". Confirm first: " + u.confirm;
    break;
  }
  if (!f.assumed_note.empty()) {
    // Fired only under an assumption: a check at best (a note stays a note), never measured.
    if (f.level == "measured") {
      f.level = "check";
      f.level_note = f.assumed_note;
    } else {
      f.level_note = f.assumed_note + " " + f.level_note;
    }
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
  } else if (f.addresses) {
    // What limits the step leads, measured or check, whatever its bound: a fix that does not address the
    // bottleneck never stands ahead of one that does (rank_rules moves a minor one down to the minor group
    // when a material fix for the bottleneck exists).
    f.group = Group::kPrimary;
    f.reason = "addresses the bottleneck (" + bottleneck + "); ordered cheapest first (" + cost_text(r.cost) +
               "), then by bound (" + bound + ")";
    if (f.outcome.gain_known && f.outcome.share < kMinorShare)
      f.reason += "; its bound removes under 3% of the step, but no material fix addresses the bottleneck";
  } else if (f.outcome.gain_known && f.outcome.share < kMinorShare) {
    f.group = Group::kMinor;
    f.reason = "minor: its bound (" + bound + ") removes under 3% of the step";
  } else {
    f.group = Group::kSecondary;
    f.reason = "does not address the bottleneck (" + bottleneck + ") but its bound (" + bound +
               ") is material (>= 3% of the step); ordered by bound, then cost (" + cost_text(r.cost) + ")";
  }
  if (f.level == "check") f.reason += "; a check, behind measured fixes of its group: " + f.level_note;
}

bool material(const Fired& f) { return !f.outcome.gain_known || f.outcome.share >= kMinorShare; }

bool before(const Fired& a, const Fired& b) {
  if (a.group != b.group) return a.group < b.group;
  if (a.group == Group::kPrimary && material(a) != material(b)) return material(a);
  if (a.skews_others != b.skews_others) return a.skews_others;
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
  rec["removable_share"] = o.gain_known ? nlohmann::json(o.share) : nlohmann::json(nullptr);
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
      Fired f;
      f.rule = &r;
      // A fact the rule needs is unknown: evaluate it again under the rule's assumptions (a check at best).
      if (!o.when.is_true() && o.when.known()) continue;
      if (!o.when.is_true() || !o.gain_known) {
        auto a = assume(r, report);
        if (a) {
          Outcome under = evaluate(r, *a->report);
          if (under.when.is_true() && (!o.when.is_true() || under.gain_known)) {
            o = std::move(under);
            f.assumed_report = a->report;
            f.assumed_note = a->note;
          }
        }
      }
      if (!o.when.is_true()) continue;
      f.outcome = std::move(o);
      place(f, report, bottleneck);
      fired.push_back(std::move(f));
    } catch (const std::exception&) {
      // A rule that cannot be evaluated on this report is skipped; the others still run.
    }
  }
  // A fix for the bottleneck whose bound is under 3% of the step stays primary (and leads) only when no material
  // fix addresses the bottleneck; otherwise it is listed with the minor ones.
  const bool material_primary = std::any_of(fired.begin(), fired.end(), [](const Fired& f) {
    return f.group == Group::kPrimary && material(f);
  });
  for (auto& f : fired) {
    if (f.group != Group::kPrimary || material(f) || !material_primary) continue;
    f.group = Group::kMinor;
    f.reason = "minor: its bound (" +
               detail::format_value(expr::Value::Number(f.outcome.speedup), "x").value_or("?") +
               ") removes under 3% of the step (it addresses the bottleneck, behind the material fixes that do)" +
               (f.level == "check" ? "; a check: " + f.level_note : std::string());
  }
  // A fix whose condition inflates the measured shares of roles (rule "skews") goes ahead of the fixes of its
  // group whose gain comes from those roles: their bounds were measured under that condition, and whether they
  // still hold shows only after it is fixed.
  for (auto& f : fired) {
    if (f.rule->skews.empty()) continue;
    std::vector<std::string> after;
    for (const auto& g : fired) {
      if (&g == &f || g.group != f.group || !g.rule->skews.empty()) continue;
      const bool drawn = std::any_of(g.rule->gain_from.begin(), g.rule->gain_from.end(), [&](const std::string& role) {
        return std::find(f.rule->skews.begin(), f.rule->skews.end(), role) != f.rule->skews.end();
      });
      if (drawn) after.push_back(g.rule->id);
    }
    if (after.empty()) continue;
    f.skews_others = true;
    const std::string behind = "; a check, behind measured fixes of its group: ";
    if (auto at = f.reason.find(behind); at != std::string::npos) f.reason.replace(at, behind.size(), "; a check: ");
    std::sort(after.begin(), after.end());
    std::string names;
    for (const auto& id : after) names += (names.empty() ? "" : ", ") + id;
    f.reason += "; ahead of " + names + ": " + f.rule->skews_text;
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
                                    "the breakdown roles it draws on (gain.from), so overlapping shares count once, and "
                                    "at most its own share of what is left of the step (host-side and GPU-side "
                                    "removals overlap in time), so the combined bound never exceeds the product of "
                                    "the steps' bounds"}};
  try {
    if (!recommendations.is_array()) return plan;
    // Which recommendations go in, in order: the first one that addresses the bottleneck leads (measured or a
    // check: what limits the step comes first), then the material measured ones and the material checks that
    // address the bottleneck (primary), in rank order, up to kPlanSteps.
    auto gain_known = [](const nlohmann::json& rec) {
      return rec.contains("removable_share") && rec["removable_share"].is_number();
    };
    auto addresses = [](const nlohmann::json& rec) { return rec.value("addresses_bottleneck", false) == true; };
    std::vector<const nlohmann::json*> chosen;
    bool any_primary = false;
    for (const auto& rec : recommendations) {
      if (rec.value("group", "") != "primary") continue;
      any_primary = true;
      if (gain_known(rec) && rec.value("evidence_level", "") != "note") {
        chosen.push_back(&rec);
        break;
      }
    }
    for (const auto& rec : recommendations) {
      if (chosen.size() >= kPlanSteps) break;
      if (!chosen.empty() && chosen.front() == &rec) continue;
      if (!gain_known(rec) || rec["removable_share"].get<double>() < kMinorShare) continue;
      const std::string group = rec.value("group", ""), level = rec.value("evidence_level", "");
      const bool measured = level == "measured", check = level == "check";
      if ((group == "primary" && (measured || check)) || (group == "secondary" && measured))
        chosen.push_back(&rec);
    }
    // The roles of the step that are left after the steps so far (fractions of today's mean step).
    std::map<std::string, double> left = breakdown_shares(report).value_or(std::map<std::string, double>{{"other", 1.0}});
    const bool have_breakdown = breakdown_shares(report).has_value();
    const std::map<std::string, double> original = left;
    double removed_total = 0.0;
    for (const nlohmann::json* recp : chosen) {
      const nlohmann::json& rec = *recp;
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
      // What is left of its roles scales what the fix can still remove (earlier steps made them shorter), and
      // it removes at most its own share of what is left of the step: then 1 - removed_total >= the product of
      // (1 - share) over the steps, so the combined bound is at most the product of the bounds.
      double removed = orig > 0 ? std::min(share * now / orig, now) : 0.0;
      removed = std::min(removed, share * (1.0 - removed_total));
      removed = std::min(removed, detail::kMaxRemovable - removed_total);
      removed = std::max(0.0, removed);
      if (now > 0)
        for (const auto& role : roles) left[role] -= removed * left[role] / now;
      removed_total += removed;
      const double alone = rec.value("estimated_speedup_max", 1.0);
      // The first step's cumulative bound is its own bound (the same number, not a re-rounding of it).
      const double cumulative = recp == chosen.front() && std::fabs(removed - share) < 1e-12
                                    ? alone : round3(1.0 / (1.0 - removed_total));
      plan["steps"].push_back({{"id", rec.value("id", "")},
                               {"title", rec.value("title", "")},
                               {"evidence_level", rec.value("evidence_level", "measured")},
                               {"check_note", rec.contains("check_note") ? rec["check_note"] : nlohmann::json(nullptr)},
                               {"addresses_bottleneck", addresses(rec)},
                               {"speedup_max_alone", alone},
                               {"removable_share", round6(share)},
                               {"removed_share", round6(removed)},
                               {"cumulative_speedup_max", cumulative}});
    }
    plan["combined_speedup_max"] =
        plan["steps"].empty() ? 1.0 : plan["steps"].back()["cumulative_speedup_max"].get<double>();
    const std::string b = verdict_of(report);
    if (b == "unknown") {
      plan["no_fix_reason"] = "The verdict is unknown, so no fix can be targeted at what limits the step.";
    } else if (!any_primary && b == "gpu_compute" && report.contains("efficiency") &&
               report["efficiency"].is_object() && report["efficiency"].value("at_roof", nlohmann::json()).is_string()) {
      // The leading operators run near their roof (efficiency.at_roof): say so, not "no fix".
      plan["no_fix_reason"] = report["efficiency"]["at_roof"].get<std::string>() + ".";
    } else if (any_primary && (chosen.empty() || chosen.front()->value("group", "") != "primary")) {
      plan["no_fix_reason"] = "The fixes that address " + b +
                              " fire, but their gain cannot be bounded from this report (a metric they need is "
                              "missing); they are listed as checks.";
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
