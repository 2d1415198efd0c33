// Parser and evaluator of the rule condition language: precedence, missing values, errors with positions.
#include <gtest/gtest.h>

#include "profile_train/rules/expr.h"

namespace profile_train::rules::expr {
namespace {

using nlohmann::json;

const json& report() {
  static const json r = json::parse(R"({
    "breakdown": {"data_loading": 0.3, "kernel": 0.5, "cpu": 0.2, "memset": null},
    "device": {"compute_capability": "8.6", "name": "NVIDIA RTX"},
    "facts": {"dataloader": {"num_workers": 0, "pin_memory": false},
              "params": {"dtypes": ["float32", "float64"]}},
    "source": {"has_gpu_activity": true, "missing": ["deviceProperties"]}
  })");
  return r;
}

Value eval(const std::string& text) {
  auto e = Expression::Parse(text);
  EXPECT_TRUE(e.ok()) << text << ": " << e.status().message();
  if (!e.ok()) return Value::Unknown();
  return e->Evaluate(report());
}

double num(const std::string& text) {
  Value v = eval(text);
  EXPECT_EQ(v.kind, ValueKind::kNumber) << text;
  return v.number;
}

// "true" / "false" / "unknown"
std::string tri(const std::string& text) {
  Value v = eval(text);
  if (v.kind == ValueKind::kBool) return v.boolean ? "true" : "false";
  EXPECT_EQ(v.kind, ValueKind::kUnknown) << text;
  return "unknown";
}

std::string error_of(const std::string& text) {
  auto e = Expression::Parse(text);
  EXPECT_FALSE(e.ok()) << "expected a parse error for: " << text;
  return e.ok() ? "" : e.status().message();
}

TEST(ExprArithmetic, PrecedenceAndAssociativity) {
  EXPECT_DOUBLE_EQ(num("1 + 2 * 3"), 7);
  EXPECT_DOUBLE_EQ(num("(1 + 2) * 3"), 9);
  EXPECT_DOUBLE_EQ(num("10 - 4 - 3"), 3);  // left-associative
  EXPECT_DOUBLE_EQ(num("16 / 4 / 2"), 2);
  EXPECT_DOUBLE_EQ(num("-2 * -3"), 6);
  EXPECT_DOUBLE_EQ(num("1e-3 * 1000"), 1);
  EXPECT_DOUBLE_EQ(num(".5 + 0.25"), 0.75);
  EXPECT_NEAR(num("1 / (1 - breakdown.data_loading)"), 1.0 / 0.7, 1e-12);
  EXPECT_DOUBLE_EQ(num("breakdown.kernel - breakdown.cpu"), 0.3);
}

TEST(ExprLogic, PrecedenceOfNotAndOr) {
  EXPECT_EQ(tri("true or false and false"), "true");      // and binds tighter than or
  EXPECT_EQ(tri("(true or false) and false"), "false");
  EXPECT_EQ(tri("not true and false"), "false");           // (not true) and false
  EXPECT_EQ(tri("not (true and false)"), "true");
  EXPECT_EQ(tri("not not true"), "true");
  EXPECT_EQ(tri("1 + 1 == 2 and 3 > 2"), "true");          // arithmetic binds tighter than comparison
  EXPECT_EQ(tri("breakdown.data_loading > 0.05 and facts.dataloader.num_workers < 4"), "true");
}

TEST(ExprCompare, NumbersStringsBooleans) {
  EXPECT_EQ(tri("2 >= 2"), "true");
  EXPECT_EQ(tri("2 > 2"), "false");
  EXPECT_EQ(tri("1 != 2"), "true");
  EXPECT_EQ(tri("'abc' < 'abd'"), "true");
  EXPECT_EQ(tri("device.name == \"NVIDIA RTX\""), "true");
  EXPECT_EQ(tri("facts.dataloader.pin_memory == false"), "true");
  EXPECT_EQ(tri("number(device.compute_capability) >= 8"), "true");
  EXPECT_EQ(tri("number(device.compute_capability) >= 8.9"), "false");
}

TEST(ExprMissing, ThreeValuedLogic) {
  // Absent metric and null metric behave the same.
  EXPECT_EQ(tri("gpu.utilization < 0.5"), "unknown");
  EXPECT_EQ(tri("breakdown.memset < 0.5"), "unknown");
  EXPECT_EQ(tri("not gpu.utilization < 0.5"), "unknown");
  EXPECT_EQ(tri("gpu.utilization < 0.5 and false"), "false");
  EXPECT_EQ(tri("false and gpu.utilization < 0.5"), "false");
  EXPECT_EQ(tri("gpu.utilization < 0.5 and true"), "unknown");
  EXPECT_EQ(tri("gpu.utilization < 0.5 or true"), "true");
  EXPECT_EQ(tri("gpu.utilization < 0.5 or false"), "unknown");
  EXPECT_EQ(tri("gpu.utilization == null"), "unknown");  // null is UNKNOWN, use exists()
  EXPECT_EQ(eval("gpu.utilization + 1").kind, ValueKind::kUnknown);
  EXPECT_EQ(eval("1 / 0").kind, ValueKind::kUnknown);
  EXPECT_EQ(eval("min(1, gpu.utilization)").kind, ValueKind::kUnknown);
}

TEST(ExprFunctions, ExistsCoalesceContainsStartswithLen) {
  EXPECT_EQ(tri("exists(breakdown.kernel)"), "true");
  EXPECT_EQ(tri("exists(breakdown.memset)"), "false");  // null counts as absent
  EXPECT_EQ(tri("exists(gpu.utilization)"), "false");
  EXPECT_EQ(tri("not exists(gpu.utilization)"), "true");
  EXPECT_EQ(tri("exists(device)"), "true");              // object paths
  EXPECT_DOUBLE_EQ(num("coalesce(gpu.utilization, breakdown.kernel, 7)"), 0.5);
  EXPECT_EQ(eval("coalesce(gpu.utilization, gpu.busy_fraction)").kind, ValueKind::kUnknown);
  EXPECT_DOUBLE_EQ(num("min(3, 1, 2)"), 1);
  EXPECT_DOUBLE_EQ(num("max(3, 1, 2)"), 3);
  EXPECT_EQ(tri("contains(facts.params.dtypes, 'float64')"), "true");
  EXPECT_EQ(tri("contains(facts.params.dtypes, 'int8')"), "false");
  EXPECT_EQ(tri("contains(source.missing, 'deviceProperties')"), "true");
  EXPECT_EQ(tri("contains(device.name, 'RTX')"), "true");
  EXPECT_EQ(tri("startswith(device.name, 'NVIDIA')"), "true");
  EXPECT_EQ(tri("startswith(device.name, 'AMD')"), "false");
  EXPECT_EQ(tri("contains(facts.amp.dtype, 'bf')"), "unknown");
  EXPECT_DOUBLE_EQ(num("len(facts.params.dtypes)"), 2);
  EXPECT_EQ(eval("number('8.x')").kind, ValueKind::kUnknown);
}

TEST(ExprLexer, HyphensBelongToPathSegments) {
  // `a-b` is one identifier (so unknown here); subtraction needs spaces.
  EXPECT_NE(error_of("breakdown.kernel-breakdown.cpu").find("unknown metric 'breakdown.kernel-breakdown.cpu'"),
            std::string::npos);
  EXPECT_DOUBLE_EQ(num("breakdown.kernel -breakdown.cpu"), 0.3);
  EXPECT_DOUBLE_EQ(num("breakdown.kernel-0.2"), 0.3);  // a hyphen before a digit is a minus
}

TEST(ExprErrors, NameColumnAndToken) {
  std::string e = error_of("breakdown.data_loading > 0.05 and breakdown.dataloading > 1");
  EXPECT_NE(e.find("column 35"), std::string::npos) << e;
  EXPECT_NE(e.find("'breakdown.dataloading'"), std::string::npos) << e;
  EXPECT_NE(e.find("did you mean 'breakdown.data_loading'"), std::string::npos) << e;

  e = error_of("breakdown.kernel >");
  EXPECT_NE(e.find("column 19"), std::string::npos) << e;
  EXPECT_NE(e.find("incomplete"), std::string::npos) << e;

  e = error_of("(1 + 2");
  EXPECT_NE(e.find("expected ')'"), std::string::npos) << e;

  e = error_of("true && false");
  EXPECT_NE(e.find("column 6"), std::string::npos) << e;
  EXPECT_NE(e.find("use 'and'"), std::string::npos) << e;

  e = error_of("breakdown.kernel = 1");
  EXPECT_NE(e.find("column 18 near '=': unexpected character (use '==')"), std::string::npos) << e;

  e = error_of("x == 1");
  EXPECT_NE(e.find("column 1 near 'x': unknown metric 'x'"), std::string::npos) << e;

  e = error_of("frobnicate(1)");
  EXPECT_NE(e.find("unknown function 'frobnicate'"), std::string::npos) << e;

  e = error_of("min()");
  EXPECT_NE(e.find("at least 1"), std::string::npos) << e;

  e = error_of("exists(1)");
  EXPECT_NE(e.find("exists() takes a metric path"), std::string::npos) << e;

  e = error_of("'abc");
  EXPECT_NE(e.find("unterminated string"), std::string::npos) << e;

  e = error_of("1 < 2 < 3");
  EXPECT_NE(e.find("do not chain"), std::string::npos) << e;

  e = error_of("1 2");
  EXPECT_NE(e.find("column 3"), std::string::npos) << e;

  e = error_of("12abc > 1");
  EXPECT_NE(e.find("malformed number"), std::string::npos) << e;

  e = error_of("$speedup_max > 1");
  EXPECT_NE(e.find("unknown variable '$speedup_max'"), std::string::npos) << e;
}

TEST(ExprErrors, StaticTypeMismatches) {
  std::string e = error_of("device.compute_capability >= 7");
  EXPECT_NE(e.find("cannot order a string against a number"), std::string::npos) << e;
  EXPECT_NE(e.find("column 27"), std::string::npos) << e;
  EXPECT_NE(error_of("facts.dataloader.pin_memory == 1").find("cannot compare a boolean with a number"),
            std::string::npos);
  EXPECT_NE(error_of("breakdown.kernel and true").find("'and' needs a boolean"), std::string::npos);
  EXPECT_NE(error_of("not breakdown.kernel").find("'not' needs a boolean"), std::string::npos);
  EXPECT_NE(error_of("device.name + 1").find("'+' needs a number"), std::string::npos);
  EXPECT_NE(error_of("source.missing < 3").find("orders numbers or strings"), std::string::npos);
  EXPECT_NE(error_of("contains(breakdown.kernel, 1)").find("list or a string"), std::string::npos);
}

TEST(ExprLocals, DeclaredVariablesResolve) {
  auto e = Expression::Parse("$speedup_max * 2", {{"speedup_max", StaticType::kNumber}});
  ASSERT_TRUE(e.ok()) << e.status().message();
  Locals locals;
  locals["speedup_max"] = Value::Number(1.5);
  Value v = e->Evaluate(json::object(), locals);
  ASSERT_EQ(v.kind, ValueKind::kNumber);
  EXPECT_DOUBLE_EQ(v.number, 3.0);
}

TEST(ExprExplain, ShowsEachSubConditionWithValues) {
  auto e = Expression::Parse("breakdown.data_loading > 0.05 and (not exists(facts.dataloader.num_workers) or "
                             "facts.dataloader.num_workers < 4) and gpu.utilization < 0.5");
  ASSERT_TRUE(e.ok());
  const std::string text = e->Explain(report());
  EXPECT_NE(text.find("[true]    breakdown.data_loading > 0.05   (breakdown.data_loading = 0.3)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[false]   not exists(facts.dataloader.num_workers)"), std::string::npos) << text;
  EXPECT_NE(text.find("[true]    facts.dataloader.num_workers < 4   (facts.dataloader.num_workers = 0)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("[unknown] gpu.utilization < 0.5   (gpu.utilization = missing)"), std::string::npos) << text;
  EXPECT_EQ(text.rfind("  [unknown] breakdown.data_loading", 0), 0u) << text;  // whole expression first
}

TEST(ExprPaths, ListsMetricsRead) {
  auto e = Expression::Parse("coalesce(gpu.busy_fraction, gpu.utilization) < 0.5 and exists(device)");
  ASSERT_TRUE(e.ok());
  EXPECT_EQ(e->Paths(), (std::vector<std::string>{"device", "gpu.busy_fraction", "gpu.utilization"}));
}

}  // namespace
}  // namespace profile_train::rules::expr
