// libFuzzer target for rule files and the expression language. The first byte picks the mode:
//   even: the rest is a rule file (parse_rule), evaluated and explained on a real report when valid;
//   odd:  the rest is an expression (Expression::Parse), evaluated, explained and its paths listed.
// Build and run: bench/fuzz/fuzz.sh rules [SECONDS] (clang, -DPT_FUZZ=ON).
#include <string_view>

#include "fuzz_common.h"
#include "profile_train/rules/engine.h"
#include "profile_train/rules/expr.h"
#include "rule_set.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace profile_train::rules;
  if (size == 0) return 0;
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const nlohmann::json& report = pt_fuzz::sample_report();
  if (data[0] % 2 == 0) {
    auto rule = detail::parse_rule(text, "fuzz.json");
    if (!rule.ok()) return 0;
    RuleSet set;
    set.rules.push_back(std::move(rule).value());
    (void)recommend(set, report);
    (void)explain_rule(set, set.rules[0].id, report);
  } else {
    auto e = expr::Expression::Parse(text, {{"speedup_max", expr::StaticType::kNumber}});
    if (!e.ok()) return 0;
    (void)e->Evaluate(report, {{"speedup_max", expr::Value::Number(2)}});
    (void)e->Explain(report);
    (void)e->Paths();
  }
  return 0;
}
