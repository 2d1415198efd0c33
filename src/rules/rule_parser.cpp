// Rule files -> validated Rule objects: one rule file's text parsed and checked (the catalog of built-ins and
// user folders: loader.cpp).
#include <algorithm>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <system_error>

#include "json_lines.h"
#include "profile_train/common/knobs.h"
#include "profile_train/common/vocabulary.h"
#include "profile_train/rules/metric_paths.h"
#include "rule_set.h"

namespace profile_train::rules {

using namespace profile_train::model;  // the documents' types (report, job, diff, tune)
namespace detail {
namespace {

using nlohmann::json;

const std::set<std::string>& known_keys() {
  static const std::set<std::string> k = {"$schema", "format_version", "id",    "title",      "tier",
                                          "when",    "evidence",       "gain",  "fix",        "caveats",
                                          "references", "knobs",       "description", "addresses",
                                          "cost",    "unverified", "assume", "skews"};
  return k;
}

// Builds "FILE:LINE: rule 'ID': message" errors with the line of a JSON pointer.
class Errors {
 public:
  Errors(const std::string& file, std::map<std::string, int> lines) : file_(file), lines_(std::move(lines)) {}
  void set_id(const std::string& id) { id_ = id; }
  int line(const std::string& pointer) const {
    // Fall back to the closest enclosing pointer that has a line (e.g. a missing key -> its object).
    std::string p = pointer;
    while (true) {
      auto it = lines_.find(p);
      if (it != lines_.end()) return it->second;
      if (p.empty()) return 1;
      p = p.substr(0, p.rfind('/'));
    }
  }
  Status at(const std::string& pointer, const std::string& message, StatusCode code = StatusCode::kBadInput) const {
    std::string m = file_ + ":" + std::to_string(line(pointer)) + ": ";
    if (!id_.empty()) m += "rule '" + id_ + "': ";
    return {code, m + message};
  }

 private:
  std::string file_;
  std::string id_;
  std::map<std::string, int> lines_;
};

// A string or an array of strings (lines), joined with '\n'.
bool read_text(const json& j, std::string& out) {
  if (j.is_string()) {
    out = j.get<std::string>();
    return true;
  }
  if (!j.is_array()) return false;
  out.clear();
  for (size_t i = 0; i < j.size(); ++i) {
    if (!j[i].is_string()) return false;
    if (i) out += "\n";
    out += j[i].get<std::string>();
  }
  return true;
}

Status read_string_list(const json& obj, const char* key, const Errors& err, std::vector<std::string>& out,
                        bool non_empty) {
  auto it = obj.find(key);
  if (it == obj.end()) return err.at("", std::string("missing required key \"") + key + "\"");
  if (!it->is_array()) return err.at(std::string("/") + key, std::string("\"") + key + "\" must be an array of strings");
  for (size_t i = 0; i < it->size(); ++i) {
    const json& item = (*it)[i];
    if (!item.is_string() || item.get<std::string>().empty())
      return err.at(std::string("/") + key + "/" + std::to_string(i),
                    std::string("\"") + key + "\" items must be non-empty strings");
    out.push_back(item.get<std::string>());
  }
  if (non_empty && out.empty()) return err.at(std::string("/") + key, std::string("\"") + key + "\" must not be empty");
  return Status::Ok();
}

Status parse_template(const std::string& source, const std::string& pointer, const Errors& err, Template& out,
                      const std::map<std::string, expr::StaticType, std::less<>>* extra_locals = nullptr) {
  out.source = source;
  std::map<std::string, expr::StaticType, std::less<>> locals = {
      {"speedup_max", expr::StaticType::kNumber}, {"removable_share", expr::StaticType::kNumber}};
  if (extra_locals != nullptr) locals.insert(extra_locals->begin(), extra_locals->end());
  std::string literal;
  for (size_t i = 0; i < source.size(); ++i) {
    const char c = source[i];
    if ((c == '{' || c == '}') && i + 1 < source.size() && source[i + 1] == c) {
      literal.push_back(c);
      ++i;
      continue;
    }
    if (c == '}') return err.at(pointer, "evidence template has an unmatched '}' at character " + std::to_string(i + 1) + " (write '}}' for a literal brace)");
    if (c != '{') {
      literal.push_back(c);
      continue;
    }
    const size_t close = source.find('}', i + 1);
    if (close == std::string::npos)
      return err.at(pointer, "evidence template has an unclosed '{' at character " + std::to_string(i + 1));
    std::string inner = source.substr(i + 1, close - i - 1);
    std::string format;
    if (const size_t bar = inner.rfind('|'); bar != std::string::npos) {
      format = inner.substr(bar + 1);
      inner = inner.substr(0, bar);
      format.erase(0, format.find_first_not_of(' '));
      format.erase(format.find_last_not_of(' ') + 1);
    }
    if (!is_known_format(format))
      return err.at(pointer, "evidence placeholder {" + source.substr(i + 1, close - i - 1) + "}: unknown format '" +
                                 format + "' (known: pct, pct0, f0, f1, f2, f3, int, ms, us, bytes, gbps, x, or none)");
    auto parsed = expr::Expression::Parse(inner, locals);
    if (!parsed.ok())
      return err.at(pointer, "evidence placeholder {" + source.substr(i + 1, close - i - 1) + "}: " +
                                 parsed.status().message());
    if (!literal.empty()) out.parts.push_back({literal, std::nullopt, ""});
    literal.clear();
    out.parts.push_back({"", std::move(parsed).value(), format});
    i = close;
  }
  if (!literal.empty()) out.parts.push_back({literal, std::nullopt, ""});
  return Status::Ok();
}

int parse_level(const json& j) {
  if (!j.is_string()) return 0;
  const std::string s = j.get<std::string>();
  return s == "low" ? 1 : s == "medium" ? 2 : s == "high" ? 3 : 0;
}

StatusOr<expr::Expression> parse_condition(const json& j, const std::string& pointer, const char* what,
                                           const Errors& err,
                                           const std::map<std::string, expr::StaticType, std::less<>>& locals = {}) {
  if (!j.is_string() || j.get<std::string>().empty())
    return err.at(pointer, std::string(what) + " must be a non-empty condition string");
  auto parsed = expr::Expression::Parse(j.get<std::string>(), locals);
  if (!parsed.ok()) return err.at(pointer, std::string("in ") + what + ", " + parsed.status().message());
  if (parsed->type() != expr::StaticType::kBool && parsed->type() != expr::StaticType::kAny)
    return err.at(pointer, std::string(what) + " must be a condition (boolean)");
  return parsed;
}

// "addresses", "cost" and "unverified" (format 1.1): where the rule stands in the ordering.
Status read_standing(const json& j, const Errors& err, Rule& r) {
  r.cost = cost_for_tier(r.tier);
  if (j.contains("addresses")) {
    PT_RETURN_IF_ERROR(read_string_list(j, "addresses", err, r.addresses, false));
    for (size_t i = 0; i < r.addresses.size(); ++i) {
      if (!is_bottleneck_name(r.addresses[i]) || r.addresses[i] == "unknown") {
        std::string known;
        for (auto b : kBottleneckNames)
          if (b != "unknown") known += (known.empty() ? "" : ", ") + std::string(b);
        return err.at("/addresses/" + std::to_string(i),
                      "unknown bottleneck class \"" + r.addresses[i] + "\" (known: " + known + ")");
      }
    }
  }
  if (auto c = j.find("cost"); c != j.end()) {
    if (!c->is_object()) return err.at("/cost", "\"cost\" must be an object {effort, risk}");
    for (auto it = c->begin(); it != c->end(); ++it)
      if (it.key() != "effort" && it.key() != "risk")
        return err.at("/cost/" + it.key(), "unknown key \"" + it.key() + "\" in \"cost\" (effort, risk)");
    for (const char* k : {"effort", "risk"}) {
      auto v = c->find(k);
      const int level = v == c->end() ? 0 : parse_level(*v);
      if (level == 0)
        return err.at(std::string("/cost") + (v == c->end() ? "" : std::string("/") + k),
                      std::string("\"cost.") + k + "\" must be \"low\", \"medium\" or \"high\"");
      (std::string(k) == "effort" ? r.cost.effort : r.cost.risk) = level;
    }
  }
  if (auto u = j.find("unverified"); u != j.end()) {
    if (!u->is_array()) return err.at("/unverified", "\"unverified\" must be an array of {when, text, level}");
    for (size_t i = 0; i < u->size(); ++i) {
      const json& item = (*u)[i];
      const std::string pointer = "/unverified/" + std::to_string(i);
      if (!item.is_object()) return err.at(pointer, "an \"unverified\" item must be an object {when, text, level}");
      for (auto it = item.begin(); it != item.end(); ++it)
        if (it.key() != "when" && it.key() != "text" && it.key() != "level" && it.key() != "confirm")
          return err.at(pointer + "/" + it.key(),
                        "unknown key \"" + it.key() + "\" in an \"unverified\" item (when, text, level, confirm)");
      if (!item.contains("when") || !item.contains("text"))
        return err.at(pointer, "an \"unverified\" item needs \"when\" and \"text\"");
      Unverified out;
      auto cond = parse_condition(item.at("when"), pointer + "/when", "\"unverified.when\"", err);
      if (!cond.ok()) return cond.status();
      out.when = std::move(cond).value();
      if (!item.at("text").is_string() || item.at("text").get<std::string>().empty())
        return err.at(pointer + "/text", "\"unverified.text\" must be a non-empty template string");
      PT_RETURN_IF_ERROR(parse_template(item.at("text").get<std::string>(), pointer + "/text", err, out.text));
      out.level = item.value("level", std::string("check"));
      if (out.level != "check" && out.level != "note")
        return err.at(pointer + "/level", "\"unverified.level\" must be \"check\" or \"note\"");
      if (item.contains("confirm") && !read_text(item.at("confirm"), out.confirm))
        return err.at(pointer + "/confirm", "\"unverified.confirm\" must be a string (how to confirm the fact first)");
      r.unverified.push_back(std::move(out));
    }
  }
  return Status::Ok();
}

// "skews" (format 1.3): {"roles": [breakdown roles], "text": why}: the condition the rule fixes inflates the
// measured shares of those roles, so fixes bounded on them come after it (the engine's ranking).
Status read_skews(const json& j, const Errors& err, Rule& r) {
  auto s = j.find("skews");
  if (s == j.end()) return Status::Ok();
  if (!s->is_object()) return err.at("/skews", "\"skews\" must be an object {roles, text}");
  for (auto it = s->begin(); it != s->end(); ++it)
    if (it.key() != "roles" && it.key() != "text")
      return err.at("/skews/" + it.key(), "unknown key \"" + it.key() + "\" in \"skews\" (roles, text)");
  auto roles = s->find("roles");
  if (roles == s->end() || !roles->is_array() || roles->empty())
    return err.at("/skews", "\"skews.roles\" must be a non-empty array of breakdown roles");
  for (size_t i = 0; i < roles->size(); ++i) {
    if (!(*roles)[i].is_string() || !is_breakdown_role((*roles)[i].get<std::string>()))
      return err.at("/skews/roles/" + std::to_string(i),
                    "\"skews.roles\" items must be breakdown roles (kernel, memcpy, memset, communication, runtime, "
                    "data_loading, cpu, other)");
    r.skews.push_back((*roles)[i].get<std::string>());
  }
  if (!s->contains("text") || !read_text(s->at("text"), r.skews_text) || r.skews_text.empty())
    return err.at("/skews", "\"skews.text\" must be a non-empty string (why the other fixes' shares are inflated)");
  return Status::Ok();
}

// "assume" (format 1.2): [{metric, value, when?, text, confirm?}], what to assume when a fact is unknown.
Status read_assumptions(const json& j, const Errors& err, Rule& r) {
  auto a = j.find("assume");
  if (a == j.end()) return Status::Ok();
  if (!a->is_array()) return err.at("/assume", "\"assume\" must be an array of {metric, value, when, text, confirm}");
  for (size_t i = 0; i < a->size(); ++i) {
    const json& item = (*a)[i];
    const std::string pointer = "/assume/" + std::to_string(i);
    if (!item.is_object()) return err.at(pointer, "an \"assume\" item must be an object {metric, value, when, text, confirm}");
    for (auto it = item.begin(); it != item.end(); ++it)
      if (it.key() != "metric" && it.key() != "value" && it.key() != "when" && it.key() != "text" && it.key() != "confirm")
        return err.at(pointer + "/" + it.key(),
                      "unknown key \"" + it.key() + "\" in an \"assume\" item (metric, value, when, text, confirm)");
    for (const char* k : {"metric", "value", "text"})
      if (!item.contains(k) || !item.at(k).is_string() || item.at(k).get<std::string>().empty())
        return err.at(item.contains(k) ? pointer + "/" + k : pointer,
                      std::string("an \"assume\" item needs \"") + k + "\" (a non-empty string)");
    Assumption out;
    out.metric = item.at("metric").get<std::string>();
    if (find_metric(out.metric) == nullptr)
      return err.at(pointer + "/metric", "\"assume.metric\": unknown metric path \"" + out.metric + "\"");
    auto value = expr::Expression::Parse(item.at("value").get<std::string>(), assume_locals());
    if (!value.ok()) return err.at(pointer + "/value", "in \"assume.value\", " + value.status().message());
    out.value = std::move(value).value();
    if (item.contains("when")) {
      auto cond = parse_condition(item.at("when"), pointer + "/when", "\"assume.when\"", err, assume_locals());
      if (!cond.ok()) return cond.status();
      out.when = std::move(cond).value();
    }
    auto locals = assume_locals();
    locals["assumed"] = expr::StaticType::kAny;
    PT_RETURN_IF_ERROR(parse_template(item.at("text").get<std::string>(), pointer + "/text", err, out.text, &locals));
    if (item.contains("confirm") && !read_text(item.at("confirm"), out.confirm))
      return err.at(pointer + "/confirm", "\"assume.confirm\" must be a string (how to confirm the assumption)");
    r.assume.push_back(std::move(out));
  }
  return Status::Ok();
}

}  // namespace

Cost cost_for_tier(int tier) {
  switch (tier) {
    case 1: return {1, 1};
    case 2: return {1, 2};
    case 3: return {2, 2};
    default: return {3, 3};
  }
}

const char* level_name(int level) { return level <= 1 ? "low" : level == 2 ? "medium" : "high"; }

StatusOr<Rule> parse_rule(std::string_view text, const std::string& file) {
  if (const size_t at = json_depth_exceeded_at(text, kMaxRuleJsonDepth); at != std::string_view::npos)
    return BadInput(file + ":" + std::to_string(line_column(text, at).first) + ": JSON nesting deeper than " +
                    std::to_string(kMaxRuleJsonDepth) + " levels (limit)");
  json j;
  try {
    j = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    // e.byte is the offset just after the offending token; its line is the one to report.
    const int line = line_column(text, e.byte > 0 ? e.byte - 1 : 0).first;
    std::string what = e.what();
    // nlohmann prefixes "[json.exception.parse_error.101] parse error at line L, column C: "; keep the reason.
    if (auto p = what.find(": "); p != std::string::npos) what = what.substr(p + 2);
    return BadInput(file + ":" + std::to_string(line) + ": JSON syntax error: " + what);
  } catch (const json::exception& e) {
    // e.g. out_of_range "number overflow parsing '1e999'": no offset, so find the quoted token's line.
    std::string what = e.what();
    if (auto p = what.find("] "); p != std::string::npos) what = what.substr(p + 2);
    int line = 1;
    if (const size_t q = what.find('\''), q2 = what.rfind('\''); q != std::string::npos && q2 > q)
      if (const size_t at = text.find(what.substr(q + 1, q2 - q - 1)); at != std::string_view::npos)
        line = line_column(text, at).first;
    return BadInput(file + ":" + std::to_string(line) + ": JSON error: " + what);
  }
  Errors err(file, json_value_lines(text));
  if (!j.is_object()) return err.at("", "a rule file must hold one JSON object");

  // format_version first: a file of an unknown major version is rejected before anything else is read.
  auto fv = j.find("format_version");
  if (fv == j.end()) return err.at("", "missing required key \"format_version\" (this build reads \"1.x\")");
  if (!fv->is_string() || !std::regex_match(fv->get<std::string>(), std::regex(R"(\d+\.\d+)")))
    return err.at("/format_version", "\"format_version\" must be a string \"MAJOR.MINOR\" such as \"1.0\"");
  const std::string version = fv->get<std::string>();
  if (version.substr(0, version.find('.')) != kRuleFormatMajor)
    return err.at("/format_version", "unsupported rule format_version \"" + version + "\" (this build reads \"1.x\")",
                  StatusCode::kUnsupported);

  Rule r;
  r.file = file;
  r.json = j;
  r.line_id = err.line("/id");
  r.line_when = err.line("/when");

  auto id = j.find("id");
  if (id == j.end()) return err.at("", "missing required key \"id\"");
  if (!id->is_string() || !std::regex_match(id->get<std::string>(), std::regex(R"([a-z0-9][a-z0-9-]*)")))
    return err.at("/id", "\"id\" must be a lower-case string of letters, digits and '-' (e.g. \"pin-memory\")");
  r.id = id->get<std::string>();
  err.set_id(r.id);

  for (auto it = j.begin(); it != j.end(); ++it)
    if (!known_keys().count(it.key()) && it.key().rfind("x-", 0) != 0)
      return err.at("/" + it.key(), "unknown key \"" + it.key() + "\" (extensions must start with \"x-\")");

  auto title = j.find("title");
  if (title == j.end() || !title->is_string() || title->get<std::string>().empty())
    return err.at("/title", "\"title\" must be a non-empty string");
  r.title = title->get<std::string>();

  auto tier = j.find("tier");
  if (tier == j.end() || !tier->is_number_integer() || tier->get<int>() < 1 || tier->get<int>() > 4)
    return err.at("/tier", "\"tier\" must be an integer 1..4 (1 = cheapest, lowest risk)");
  r.tier = tier->get<int>();
  PT_RETURN_IF_ERROR(read_standing(j, err, r));
  PT_RETURN_IF_ERROR(read_assumptions(j, err, r));
  PT_RETURN_IF_ERROR(read_skews(j, err, r));

  auto when = j.find("when");
  if (when == j.end() || !when->is_string() || when->get<std::string>().empty())
    return err.at("/when", "\"when\" must be a non-empty condition string");
  {
    auto parsed = expr::Expression::Parse(when->get<std::string>());
    if (!parsed.ok()) return err.at("/when", "in \"when\", " + parsed.status().message());
    if (parsed->type() != expr::StaticType::kBool && parsed->type() != expr::StaticType::kAny)
      return err.at("/when", "\"when\" must be a condition (boolean), not a " +
                                 std::string(expr::static_type_name(parsed->type())));
    r.when = std::move(parsed).value();
  }

  // Evidence items: "template" or {"text": "template", "when": "condition"} (shown only when true).
  auto evidence = j.find("evidence");
  if (evidence == j.end()) return err.at("", "missing required key \"evidence\"");
  if (!evidence->is_array() || evidence->empty())
    return err.at("/evidence", "\"evidence\" must be a non-empty array of templates");
  for (size_t i = 0; i < evidence->size(); ++i) {
    const json& item = (*evidence)[i];
    const std::string pointer = "/evidence/" + std::to_string(i);
    Template t;
    const json* text = &item;
    if (item.is_object()) {
      for (auto it = item.begin(); it != item.end(); ++it)
        if (it.key() != "text" && it.key() != "when")
          return err.at(pointer + "/" + it.key(), "unknown key \"" + it.key() + "\" in an evidence item (text, when)");
      if (!item.contains("text")) return err.at(pointer, "an evidence item object needs \"text\"");
      text = &item.at("text");
      if (item.contains("when")) {
        if (!item.at("when").is_string()) return err.at(pointer + "/when", "evidence \"when\" must be a condition string");
        auto cond = expr::Expression::Parse(item.at("when").get<std::string>());
        if (!cond.ok()) return err.at(pointer + "/when", "in evidence \"when\", " + cond.status().message());
        if (cond->type() != expr::StaticType::kBool && cond->type() != expr::StaticType::kAny)
          return err.at(pointer + "/when", "evidence \"when\" must be a condition (boolean)");
        t.when = std::move(cond).value();
      }
    }
    if (!text->is_string() || text->get<std::string>().empty())
      return err.at(pointer, "evidence items must be non-empty strings or {text, when} objects");
    PT_RETURN_IF_ERROR(parse_template(text->get<std::string>(), pointer, err, t));
    r.evidence.push_back(std::move(t));
  }

  auto gain = j.find("gain");
  if (gain == j.end() || !gain->is_object()) return err.at("/gain", "\"gain\" must be an object {removable_share, rationale}");
  for (auto it = gain->begin(); it != gain->end(); ++it)
    if (it.key() != "removable_share" && it.key() != "rationale" && it.key() != "from" && it.key() != "mechanism")
      return err.at("/gain/" + it.key(),
                    "unknown key \"" + it.key() + "\" in \"gain\" (removable_share, from, mechanism, rationale)");
  if (auto m = gain->find("mechanism"); m != gain->end()) {
    const std::string v = m->is_string() ? m->get<std::string>() : std::string();
    if (v == "host") r.mechanism = Mechanism::kHost;
    else if (v == "communication") r.mechanism = Mechanism::kCommunication;
    else if (v == "gpu") r.mechanism = Mechanism::kGpu;
    else return err.at("/gain/mechanism", "\"gain.mechanism\" must be \"host\", \"communication\" or \"gpu\"");
  }
  if (gain->contains("from")) {
    const json& from = gain->at("from");
    if (!from.is_array() || from.empty())
      return err.at("/gain/from", "\"gain.from\" must be a non-empty array of breakdown roles");
    for (size_t i = 0; i < from.size(); ++i) {
      if (!from[i].is_string() || !is_breakdown_role(from[i].get<std::string>()))
        return err.at("/gain/from/" + std::to_string(i),
                      "\"gain.from\" items must be breakdown roles (kernel, memcpy, memset, communication, runtime, "
                      "data_loading, cpu, other)");
      r.gain_from.push_back(from[i].get<std::string>());
    }
  }
  auto share = gain->find("removable_share");
  if (share == gain->end() || !share->is_string() || share->get<std::string>().empty())
    return err.at("/gain", "\"gain.removable_share\" must be an expression string (the share of step time the fix can remove)");
  {
    auto parsed = expr::Expression::Parse(share->get<std::string>());
    if (!parsed.ok()) return err.at("/gain/removable_share", "in \"gain.removable_share\", " + parsed.status().message());
    if (parsed->type() != expr::StaticType::kNumber && parsed->type() != expr::StaticType::kAny)
      return err.at("/gain/removable_share", "\"gain.removable_share\" must be a number expression, not a " +
                                                 std::string(expr::static_type_name(parsed->type())));
    r.removable_share = std::move(parsed).value();
  }
  auto rationale = gain->find("rationale");
  if (rationale == gain->end() || !rationale->is_string() || rationale->get<std::string>().empty())
    return err.at("/gain", "\"gain.rationale\" must be a non-empty string (why this share, which assumption)");
  r.gain_rationale = rationale->get<std::string>();

  auto fix = j.find("fix");
  if (fix == j.end() || !fix->is_object()) return err.at("/fix", "\"fix\" must be an object {python, cpp}");
  for (auto it = fix->begin(); it != fix->end(); ++it)
    if (it.key() != "python" && it.key() != "cpp")
      return err.at("/fix/" + it.key(), "unknown key \"" + it.key() + "\" in \"fix\" (python, cpp)");
  for (const char* lang : {"python", "cpp"}) {
    auto f = fix->find(lang);
    std::string code;
    if (f == fix->end() || !read_text(*f, code) || code.empty())
      return err.at(std::string("/fix/") + lang, std::string("\"fix.") + lang + "\" must be a string or an array of lines");
    (std::string(lang) == "python" ? r.fix_python : r.fix_cpp) = code;
  }

  PT_RETURN_IF_ERROR(read_string_list(j, "caveats", err, r.caveats, true));
  PT_RETURN_IF_ERROR(read_string_list(j, "references", err, r.references, true));
  for (size_t i = 0; i < r.references.size(); ++i)
    if (r.references[i].rfind("https://", 0) != 0 && r.references[i].rfind("http://", 0) != 0)
      return err.at("/references/" + std::to_string(i), "references must be URLs (http:// or https://)");
  if (j.contains("knobs")) {
    PT_RETURN_IF_ERROR(read_string_list(j, "knobs", err, r.knobs, false));
    for (size_t i = 0; i < r.knobs.size(); ++i)
      if (find_knob(r.knobs[i]) == nullptr) {
        // Rule files use the canonical name only; a command-line spelling gets its canonical name suggested.
        const KnobDef* meant = find_knob_spelling(r.knobs[i]);
        return err.at("/knobs/" + std::to_string(i),
                      "unknown tuner knob \"" + r.knobs[i] + "\" (" +
                          (meant != nullptr ? "did you mean \"" + meant->name + "\"? " : std::string()) +
                          "known: " + knob_names() + ")");
      }
  }
  return r;
}

}  // namespace detail

}  // namespace profile_train::rules
