// The condition language of rules (`when`, `gain.removable_share`, evidence placeholders): a small,
// recursive-descent parsed expression language over report metrics.
//
// Syntax (lowest to highest precedence):
//   or  ->  and  ->  not  ->  comparison (== != < <= > >=, non-associative)  ->  + -  ->  * /  ->  unary -
//   primary: number (1, 0.5, 1e-3) | string ('..' or "..") | true | false | null | metric path
//            (dotted identifiers, segments [A-Za-z_][A-Za-z0-9_]* with inner hyphens before a letter:
//            `breakdown.data_loading`, `facts.dataloader.num_workers`) | $local | function call | ( expr ).
//   Write subtraction with spaces (`a - b`): `a-b` lexes as the single identifier "a-b".
// Functions: exists(path), min(a, b, ...), max(a, b, ...), coalesce(a, b, ...), contains(list_or_string, x),
//   startswith(string, prefix), number(x) (string such as "8.0" -> 8.0), len(list_or_string).
//
// Missing values (three-valued, Kleene logic): a metric that is absent from the report or null, the
// `null` literal, a division by zero and an operand of the wrong runtime type all evaluate to UNKNOWN.
//   - arithmetic, comparisons, min/max, contains/startswith/number/len with an UNKNOWN operand -> UNKNOWN
//   - `not UNKNOWN` -> UNKNOWN;  `false and UNKNOWN` -> false;  `true or UNKNOWN` -> true;
//     otherwise and/or with an UNKNOWN operand -> UNKNOWN
//   - exists(path) is true iff the path is present and not null: never UNKNOWN
//   - coalesce() returns its first operand that is not UNKNOWN (UNKNOWN when all are)
// A rule fires only when its `when` evaluates to true; UNKNOWN does not fire.
//
// Load-time checks: syntax errors, unknown metric paths (checked against metric_paths.h), unknown
// functions, wrong arity and statically visible type mismatches (e.g. comparing the string
// `device.compute_capability` with a number: use number(device.compute_capability)) are errors with the
// 1-based column and the offending token.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"

namespace profile_train::rules::expr {

enum class ValueKind { kUnknown, kBool, kNumber, kString, kList, kObject };

// A runtime value. Lists and objects point into the report being evaluated (valid while it lives).
struct Value {
  ValueKind kind = ValueKind::kUnknown;
  bool boolean = false;
  double number = 0.0;
  std::string string;
  const nlohmann::json* ref = nullptr;  // kList / kObject

  static Value Unknown() { return {}; }
  static Value Bool(bool b) { Value v; v.kind = ValueKind::kBool; v.boolean = b; return v; }
  static Value Number(double n);  // non-finite -> Unknown
  static Value String(std::string s) { Value v; v.kind = ValueKind::kString; v.string = std::move(s); return v; }
  static Value FromJson(const nlohmann::json* j);  // nullptr / null -> Unknown

  bool known() const { return kind != ValueKind::kUnknown; }
  bool is_true() const { return kind == ValueKind::kBool && boolean; }
  // Short human form for explanations: 0.334, true, "7.0", [..], missing.
  std::string describe() const;
};

// Static type for load-time checks; kAny = no static information (null literal, coalesce of mixed types).
enum class StaticType { kAny, kBool, kNumber, kString, kList, kObject };
std::string_view static_type_name(StaticType t);

// Values the evaluator resolves besides report paths, e.g. "$speedup_max" in evidence templates.
using Locals = std::map<std::string, Value, std::less<>>;

struct Node;  // AST node, defined in expr.cpp

class Expression {
 public:
  // `locals` names the $variables the expression may use (with their static types).
  // Errors: "column C near 'TOKEN': what" (the caller adds FILE:LINE).
  static StatusOr<Expression> Parse(std::string_view text,
                                    const std::map<std::string, StaticType, std::less<>>& locals = {});

  Value Evaluate(const nlohmann::json& report, const Locals& locals = {}) const;

  // One line per sub-condition (and/or/not are expanded), indented by depth, each with its value and the
  // values of the metrics it reads, e.g. "[true] breakdown.data_loading > 0.05   (breakdown.data_loading = 0.334)".
  std::string Explain(const nlohmann::json& report, const Locals& locals = {}, int indent = 2) const;

  const std::string& text() const { return text_; }
  StaticType type() const;
  // Metric paths read by the expression, sorted and unique.
  std::vector<std::string> Paths() const;

 private:
  std::string text_;
  std::shared_ptr<const Node> root_;
};

}  // namespace profile_train::rules::expr
