// Values and the Expression facade of the rules' condition language (include/profile_train/rules/expr.h);
// lexer, parser and evaluator live next to this file (expr_internal.h).
#include "profile_train/rules/expr.h"

#include <cmath>
#include <set>
#include <sstream>

#include "expr_internal.h"

namespace profile_train::rules::expr {

// ---------------------------------------------------------------------------------------------- values

Value Value::Number(double n) {
  if (!std::isfinite(n)) return Unknown();
  Value v;
  v.kind = ValueKind::kNumber;
  v.number = n;
  return v;
}

Value Value::FromJson(const nlohmann::json* j) {
  if (j == nullptr || j->is_null()) return Unknown();
  if (j->is_boolean()) return Bool(j->get<bool>());
  if (j->is_number()) return Number(j->get<double>());
  if (j->is_string()) return String(j->get<std::string>());
  Value v;
  v.kind = j->is_array() ? ValueKind::kList : ValueKind::kObject;
  v.ref = j;
  return v;
}

namespace {

std::string format_number(double n) {
  if (n == std::floor(n) && std::fabs(n) < 1e15) {
    std::ostringstream os;
    os << static_cast<long long>(n);
    return os.str();
  }
  std::ostringstream os;
  os.precision(4);
  os << n;
  return os.str();
}

}  // namespace

std::string Value::describe() const {
  switch (kind) {
    case ValueKind::kUnknown: return "missing";
    case ValueKind::kBool: return boolean ? "true" : "false";
    case ValueKind::kNumber: return format_number(number);
    case ValueKind::kString: return "\"" + string + "\"";
    case ValueKind::kList:
    case ValueKind::kObject: {
      std::string s = ref->dump();
      if (s.size() > 60) s = s.substr(0, 57) + "...";
      return s;
    }
  }
  return "?";
}

std::string_view static_type_name(StaticType t) {
  switch (t) {
    case StaticType::kAny: return "any";
    case StaticType::kBool: return "boolean";
    case StaticType::kNumber: return "number";
    case StaticType::kString: return "string";
    case StaticType::kList: return "list";
    case StaticType::kObject: return "object";
  }
  return "?";
}

// -------------------------------------------------------------------------------------------- Expression

StatusOr<Expression> Expression::Parse(std::string_view text,
                                       const std::map<std::string, StaticType, std::less<>>& locals) {
  try {
    std::vector<detail::Token> tokens = detail::lex(text);
    Expression e;
    e.text_ = std::string(text);
    e.root_ = detail::parse(text, std::move(tokens), locals);
    return e;
  } catch (const detail::ParseFailure& f) {
    return BadInput("column " + std::to_string(f.pos + 1) + " near '" + f.token + "': " + f.message);
  } catch (const std::exception& ex) {
    return Internal(std::string("expression parser failed: ") + ex.what());
  }
}

Value Expression::Evaluate(const nlohmann::json& report, const Locals& locals) const {
  if (!root_) return Value::Unknown();
  return detail::evaluate(*root_, report, locals);
}

std::string Expression::Explain(const nlohmann::json& report, const Locals& locals, int indent) const {
  std::string out;
  if (root_) detail::explain(*root_, text_, report, locals, indent, out);
  return out;
}

StaticType Expression::type() const { return root_ ? root_->type : StaticType::kAny; }

std::vector<std::string> Expression::Paths() const {
  std::set<std::string> out;
  if (root_) detail::collect_paths(*root_, out);
  return {out.begin(), out.end()};
}

}  // namespace profile_train::rules::expr
