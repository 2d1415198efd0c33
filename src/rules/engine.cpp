// The fired rules of a report in their order, the recommendations and the plan (one rule evaluated:
// evaluate.cpp; explanations and descriptions: explain.cpp).
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
#include "profile_train/model/report_json.h"

#include "engine_internal.h"
#include "rule_set.h"

namespace profile_train::rules {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)

namespace {

// A fix whose bound removes less than this share of the step is "minor": listed apart, never ahead of a
// material one (1 / (1 - 0.03) = 1.031x). Step-to-step noise of a training run is of this order.
constexpr double kMinorShare = 0.03;

constexpr size_t kPlanSteps = 3;

}  // namespace

const char* group_name(Group g) {
  switch (g) {
    case Group::kPrimary: return "primary";
    case Group::kSecondary: return "secondary";
    case Group::kMinor: return "minor";
    case Group::kNote: return "note";
  }
  return "?";
}

std::string verdict_of(const nlohmann::json& report) {
  auto v = report.find("verdict");
  if (v == report.end() || !v->is_object()) return "unknown";
  auto b = v->find("bottleneck");
  return b != v->end() && b->is_string() ? b->get<std::string>() : "unknown";
}

std::string cost_text(const detail::Cost& c) {
  return std::string(detail::level_name(c.effort)) + " effort, " + detail::level_name(c.risk) + " risk";
}

namespace {

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
  // A bound measured on a window that cannot show the steady step is a check: a warm-up window
  // (steps.cold_window: first-call work inflates the shares) or a GPU machine's capture without GPU activity
  // (source.capture.lacks: the host work it measures may have overlapped GPU work the capture did not record).
  auto object_at = [&](const char* a, const char* b) -> const nlohmann::json* {
    if (!given.contains(a) || !given[a].is_object() || !given[a].contains(b) || !given[a][b].is_object()) return nullptr;
    return &given[a][b];
  };
  auto string_in = [](const nlohmann::json& o, const char* key, std::string fallback) {
    return o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : fallback;
  };
  std::string window_note;
  if (const auto* cold = object_at("steps", "cold_window")) {
    window_note = "Computed on a warm-up window (steps.cold_window): its bound reflects first-call work. "
                  "Confirm first: re-capture past the warm-up (" + string_in(*cold, "recapture", "profile later steps") + ")";
  } else if (const auto* cap = object_at("source", "capture"); cap != nullptr && cap->contains("lacks") &&
                                                                (*cap)["lacks"].is_string()) {
    window_note = "Computed on a capture without GPU activity (source.capture.lacks): the host work it measures may "
                  "have overlapped GPU work the capture did not record. Confirm first: re-capture with the GPU traced (" +
                  string_in(*cap, "recapture", "trace the GPU") + ")";
  }
  if (!window_note.empty()) {
    if (f.level == "measured") {
      f.level = "check";
      f.level_note = window_note;
    } else if (f.level == "check") {
      f.level_note = window_note + ". " + f.level_note;
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
  } else if (f.outcome.gain_known && f.outcome.share < kMinorShare) {
    // Under 3% of the step is within a training run's step-to-step noise: minor whatever it addresses, never
    // ahead of a material fix (and never a plan step).
    f.group = Group::kMinor;
    f.reason = "minor: its bound (" + bound + ") removes under 3% of the step" +
               (f.addresses ? " (it addresses the bottleneck, " + bottleneck + ", but within step-to-step noise)"
                            : std::string());
  } else if (f.addresses) {
    // What limits the step leads, measured or check: a fix that does not address the bottleneck never stands
    // ahead of a material one that does.
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

// The recommendation a fired rule makes, typed (report.json's "recommendations" entries). The rule's names
// (addresses, gain.from) were checked against the vocabulary when it was loaded.
model::Recommendation to_recommendation(const Fired& f, int rank) {
  const detail::Rule& r = *f.rule;
  const Outcome& o = f.outcome;
  model::Recommendation rec;
  rec.id = r.id;
  rec.title = r.title;
  rec.tier = r.tier;
  rec.rank = rank;
  rec.group = group_name(f.group);
  rec.evidence_level = f.level;
  if (!f.level_note.empty()) rec.check_note = f.level_note;
  for (const auto& name : r.addresses)
    if (auto b = bottleneck_from_name(name)) rec.addresses.push_back(*b);
  rec.addresses_bottleneck = f.addresses;
  rec.cost = {detail::level_name(r.cost.effort), detail::level_name(r.cost.risk)};
  rec.rank_reason = f.reason;
  rec.estimated_speedup_max = o.speedup;
  if (o.gain_known) rec.removable_share = o.share;
  for (const auto& name : r.gain_from)
    if (auto role = role_from_name(name)) rec.gain_from.push_back(*role);
  rec.evidence = o.evidence;
  if (!o.gain_known) rec.evidence.push_back("The gain cannot be bounded from this report (a metric it needs is missing).");
  rec.fix = {r.fix_python, r.fix_cpp};
  rec.caveats = r.caveats;
  rec.references = r.references;
  rec.knobs = r.knobs;
  return rec;
}

// A hand-made recommendations array (build_plan's JSON form) read leniently: only what the plan uses, each key
// at its default when absent or of another type.
std::vector<model::Recommendation> plan_inputs(const nlohmann::json& recommendations) {
  std::vector<model::Recommendation> out;
  if (!recommendations.is_array()) return out;
  auto text = [](const nlohmann::json& j, const char* key, const std::string& fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_string() ? it->get<std::string>() : fallback;
  };
  for (const auto& j : recommendations) {
    if (!j.is_object()) continue;
    model::Recommendation rec;
    rec.id = text(j, "id", "");
    rec.title = text(j, "title", "");
    rec.group = text(j, "group", "");
    rec.evidence_level = text(j, "evidence_level", "measured");
    if (auto it = j.find("check_note"); it != j.end() && it->is_string()) rec.check_note = it->get<std::string>();
    if (auto it = j.find("addresses_bottleneck"); it != j.end() && it->is_boolean())
      rec.addresses_bottleneck = it->get<bool>();
    if (auto it = j.find("removable_share"); it != j.end() && it->is_number()) rec.removable_share = it->get<double>();
    if (auto it = j.find("estimated_speedup_max"); it != j.end() && it->is_number())
      rec.estimated_speedup_max = it->get<double>();
    if (auto it = j.find("gain_from"); it != j.end() && it->is_array())
      for (const auto& g : *it)
        if (g.is_string())
          if (auto role = role_from_name(g.get<std::string>())) rec.gain_from.push_back(*role);
    out.push_back(std::move(rec));
  }
  return out;
}

}  // namespace

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

namespace {

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

namespace {
// o[key] when it is a string, else the fallback (a null or absent key never throws).
std::string string_or(const nlohmann::json& o, const char* key, const char* fallback) {
  return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string(fallback);
}
}  // namespace

model::Plan plan_of(const std::vector<model::Recommendation>& recommendations, const nlohmann::json& report) {
  using model::Recommendation;
  const std::string b = verdict_of(report);
  model::Plan plan;
  plan.bottleneck = bottleneck_from_name(b).value_or(Bottleneck::kUnknown);
  plan.method = "successive Amdahl: each step removes its share of what the steps before it left of the breakdown "
                "roles it draws on (gain.from), so overlapping shares count once, and at most its own share of what "
                "is left of the step (host-side and GPU-side removals overlap in time), so the combined bound never "
                "exceeds the product of the steps' bounds";
  try {
    // Which recommendations go in, in order: the first one that addresses the bottleneck leads (measured or a
    // check: what limits the step comes first), then the material measured ones and the material checks that
    // address the bottleneck (primary), in rank order, up to kPlanSteps.
    std::vector<const Recommendation*> chosen;
    bool any_primary = false;
    for (const auto& rec : recommendations) {
      if (rec.group != "primary") continue;
      any_primary = true;
      if (rec.removable_share && *rec.removable_share >= kMinorShare && rec.evidence_level != "note") {
        chosen.push_back(&rec);
        break;
      }
    }
    for (const auto& rec : recommendations) {
      if (chosen.size() >= kPlanSteps) break;
      if (!chosen.empty() && chosen.front() == &rec) continue;
      if (!rec.removable_share || *rec.removable_share < kMinorShare) continue;
      const bool measured = rec.evidence_level == "measured", check = rec.evidence_level == "check";
      if ((rec.group == "primary" && (measured || check)) || (rec.group == "secondary" && measured))
        chosen.push_back(&rec);
    }
    // The roles of the step that are left after the steps so far (fractions of today's mean step).
    const auto shares = breakdown_shares(report);
    std::map<std::string, double> left = shares.value_or(std::map<std::string, double>{{"other", 1.0}});
    const bool have_breakdown = shares.has_value();
    const std::map<std::string, double> original = left;
    double removed_total = 0.0;
    for (const Recommendation* recp : chosen) {
      const Recommendation& rec = *recp;
      const double share = *rec.removable_share;
      std::vector<std::string> roles;
      if (have_breakdown)
        for (Role g : rec.gain_from)
          if (left.count(std::string(name_of(g)))) roles.emplace_back(name_of(g));
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
      const double alone = rec.estimated_speedup_max;
      model::PlanStep step;
      step.id = rec.id;
      step.title = rec.title;
      step.evidence_level = rec.evidence_level;
      step.check_note = rec.check_note;
      step.addresses_bottleneck = rec.addresses_bottleneck;
      step.speedup_max_alone = alone;
      step.removable_share = round6(share);
      step.removed_share = round6(removed);
      // The first step's cumulative bound is its own bound (the same number, not a re-rounding of it).
      step.cumulative_speedup_max = recp == chosen.front() && std::fabs(removed - share) < 1e-12
                                        ? alone : round3(1.0 / (1.0 - removed_total));
      plan.steps.push_back(std::move(step));
    }
    plan.combined_speedup_max = plan.steps.empty() ? 1.0 : plan.steps.back().cumulative_speedup_max;
    const auto efficiency = report.find("efficiency");
    const bool at_roof = efficiency != report.end() && efficiency->is_object() &&
                         efficiency->value("at_roof", nlohmann::json()).is_string();
    const auto* steps = report.contains("steps") ? &report["steps"] : nullptr;
    const bool cold = steps != nullptr && steps->is_object() && steps->contains("cold_window") &&
                      (*steps)["cold_window"].is_object();
    if (b == "unknown" && cold) {
      plan.no_fix_reason = "This window is warm-up (steps.cold_window): it shows first-call cost, not what limits a "
                           "steady step; re-capture past the warm-up (" +
                           string_or((*steps)["cold_window"], "recapture", "profile later steps") + ").";
    } else if (const auto* src = report.contains("source") ? &report["source"] : nullptr;
               b == "unknown" && src != nullptr && src->is_object() && src->contains("capture") &&
               (*src)["capture"].is_object() && (*src)["capture"].value("lacks", nlohmann::json()).is_string()) {
      plan.no_fix_reason = "The capture lacks the GPU's activity (source.capture.lacks), so what limits the step "
                           "cannot be told; re-capture with the GPU traced (" +
                           string_or((*src)["capture"], "recapture", "trace the GPU") + ").";
    } else if (b == "unknown") {
      plan.no_fix_reason = "The verdict is unknown, so no fix can be targeted at what limits the step.";
    } else if (!any_primary && b == "gpu_compute" && at_roof) {
      // The leading operators run near their roof (efficiency.at_roof): say so, not "no fix".
      plan.no_fix_reason = (*efficiency)["at_roof"].get<std::string>() + ".";
    } else if (any_primary && (chosen.empty() || chosen.front()->group != "primary")) {
      plan.no_fix_reason = "The fixes that address " + b +
                           " fire, but their gain cannot be bounded from this report (a metric they need is "
                           "missing); they are listed as checks.";
    } else if (chosen.empty() && std::any_of(recommendations.begin(), recommendations.end(),
                                             [](const Recommendation& rec) { return rec.group == "minor"; })) {
      std::string minors;
      for (const auto& rec : recommendations)
        if (rec.group == "minor")
          minors += (minors.empty() ? "" : ", ") + rec.id + " " +
                    detail::format_value(expr::Value::Number(rec.estimated_speedup_max), "x").value_or("?");
      plan.no_fix_reason = "Every fix that fires removes under 3% of the step (" + minors +
                           "): within a training run's step-to-step noise, so none is planned" +
                           (any_primary ? "" : "; no catalogued fix addresses " + b + " on this report") + ".";
    } else if (!any_primary) {
      plan.no_fix_reason = "No catalogued fix addresses " + b +
                           " on this report: the rules for it do not fire (their conditions are false or their "
                           "facts are missing; `profile-train rules explain ID report.json` shows why).";
    }
  } catch (const std::exception&) {
  }
  return plan;
}

nlohmann::json build_plan(const nlohmann::json& recommendations, const nlohmann::json& report) {
  try {
    return model::to_json(plan_of(plan_inputs(recommendations), report));
  } catch (const std::exception&) {  // allocation failure
    return nlohmann::json::object();
  }
}

std::vector<model::Recommendation> recommendations_of(const RuleSet& rules, const nlohmann::json& report) {
  std::vector<model::Recommendation> out;
  try {
    int rank = 0;
    for (const auto& f : rank_rules(rules, report)) out.push_back(to_recommendation(f, ++rank));
  } catch (const std::exception&) {
    return {};
  }
  return out;
}

nlohmann::json recommend(const RuleSet& rules, const nlohmann::json& report) {
  try {
    return model::to_json(recommendations_of(rules, report));
  } catch (const std::exception&) {
    return nlohmann::json::array();
  }
}

void apply_rules(const RuleSet& rules, nlohmann::json& report) {
  try {
    if (!report.is_object()) return;
    auto recommendations = recommendations_of(rules, report);
    nlohmann::json plan = model::to_json(plan_of(recommendations, report));
    report["recommendations"] = model::to_json(recommendations);
    report["plan"] = std::move(plan);
  } catch (...) {
    // Never throws: leave the report as it was.
  }
}

Status apply_rules(const RuleSet& rules, model::Report& report) {
  // The conditions read the report's JSON view (dotted metric paths); what the rules make comes back typed.
  nlohmann::json view;
  try {
    view = model::to_json(report);
  } catch (const std::exception& e) {  // allocation failure
    return Internal(std::string("rules: cannot serialize the report: ") + e.what());
  }
  auto recommendations = recommendations_of(rules, view);
  report.plan = plan_of(recommendations, view);
  report.recommendations = std::move(recommendations);
  return Status::Ok();
}

}  // namespace profile_train::rules
