// Engine: evidence numbers, Amdahl bound, ordering, explanations, robustness.
#include <gtest/gtest.h>

#include "profile_train/rules/engine.h"
#include "test_util.h"

namespace profile_train::rules {
namespace {

using nlohmann::json;
using testing::rule_text;
using testing::TempDir;

json base() {
  return testing::read_json(std::filesystem::path(PT_RULES_FIXTURES) / "catalog_cases.json").at("base");
}

std::vector<std::string> ids(const json& recs) {
  std::vector<std::string> out;
  for (const auto& r : recs) out.push_back(r.at("id"));
  return out;
}

// A report shaped like a single-process ResNet training on a V100 whose DataLoader runs in the main process
// (FP32 convolutions, no tensor-core kernels, facts only partly known as in a Kineto trace).
json data_bound_v100(double data_loading) {
  json r = base();
  r.merge_patch(json::parse(R"({
    "device": {"name": "Tesla V100-DGXS-32GB", "compute_capability": "7.0"},
    "gpu": {"tensor_core_kernel_share": 0.0, "fp32_eligible_kernel_share": 0.6, "conv_kernel_share": 0.55},
    "facts": {"amp": null, "cudnn": null, "model": null, "tf32": null, "optimizer": null,
              "dataloader": {"num_workers": 0, "pin_memory": null, "batch_size": 32,
                             "prefetch_factor": null, "persistent_workers": null}}
  })"));
  r["breakdown"]["data_loading"] = data_loading;
  r["breakdown"]["kernel"] = 0.555;
  r["gpu"]["idle"]["fraction"] = 1.0 - 0.555 - 0.011;  // the GPU idles while the step waits for data
  // What analysis decides for such a step (the ordering follows the verdict).
  r["verdict"]["bottleneck"] = data_loading >= 0.15 ? "input_pipeline" : "gpu_compute";
  r["breakdown_ms"]["data_loading"] = data_loading * r["steps"]["mean_ms"].get<double>();
  return r;
}

TEST(Engine, DataLoadingBoundStepPutsWorkersFirstWithTheAmdahlBound) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  json report = data_bound_v100(0.334);
  apply_rules(**set, report);
  const json& recs = report.at("recommendations");
  ASSERT_FALSE(recs.empty());
  EXPECT_EQ(recs[0].at("id"), "dataloader-workers") << recs.dump(1);
  EXPECT_NEAR(recs[0].at("estimated_speedup_max").get<double>(), 1.0 / (1.0 - 0.334), 0.002);
  EXPECT_NE(recs[0].at("evidence")[0].get<std::string>().find("33.4%"), std::string::npos) << recs[0].dump(1);
  EXPECT_NE(recs[0].at("evidence")[0].get<std::string>().find("33.4 ms"), std::string::npos) << recs[0].dump(1);
  EXPECT_NE(recs[0].at("evidence")[1].get<std::string>().find("num_workers = 0"), std::string::npos);
  const auto order = ids(recs);
  EXPECT_NE(std::find(order.begin(), order.end(), "amp"), order.end());
  EXPECT_EQ(std::find(order.begin(), order.end(), "tf32"), order.end());  // V100 has no TF32
}

TEST(Engine, NoWorkersAdviceWhenLoadingIsNegligible) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  json report = data_bound_v100(0.008);
  report["facts"]["dataloader"]["num_workers"] = nullptr;  // unknown, as when not inferred
  apply_rules(**set, report);
  const auto order = ids(report.at("recommendations"));
  EXPECT_EQ(std::find(order.begin(), order.end(), "dataloader-workers"), order.end());
  EXPECT_NE(std::find(order.begin(), order.end(), "amp"), order.end());
}

// The ordering (rules/README.md, "Ordering"): fixes that address the verdict's bottleneck first, cheapest
// first, then by bound; then the others with a material bound, by bound; minor fixes (bound < 3%) last.
TEST(Engine, OrderedByGroupThenCostThenGainThenId) {
  TempDir dir;
  auto make = [&](const std::string& id, const std::string& share, const std::string& standing) {
    std::string t = rule_text(id, "true");
    t.replace(t.find("\"removable_share\": \"breakdown.data_loading\""),
              std::string("\"removable_share\": \"breakdown.data_loading\"").size(),
              "\"removable_share\": \"" + share + "\"");
    if (!standing.empty()) t.replace(t.find("  \"knobs\""), 9, "  " + standing + ",\n  \"knobs\"");
    dir.write(id + ".json", t);
  };
  const std::string cheap = R"("addresses": ["input_pipeline"], "cost": {"effort": "low", "risk": "low"})";
  const std::string dear = R"("addresses": ["input_pipeline"], "cost": {"effort": "high", "risk": "high"})";
  make("cheap-small", "0.1", cheap);
  make("cheap-small-b", "0.1", cheap);  // same cost and gain: by id
  make("dear-big", "0.5", dear);
  make("other-big", "0.6", "");
  make("other-mid", "0.2", "");
  make("minor-one", "0.01", cheap);
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto mine = [](const json& recs) {
    std::vector<std::string> out;
    for (const auto& id : ids(recs))
      if (id.find('-') != std::string::npos && (id.rfind("cheap", 0) == 0 || id.rfind("dear", 0) == 0 ||
                                                id.rfind("other", 0) == 0 || id.rfind("minor", 0) == 0))
        out.push_back(id);
    return out;
  };
  const json input_bound = {{"verdict", {{"bottleneck", "input_pipeline"}}}};
  // minor-one addresses the bottleneck, but material fixes for it exist: it is listed with the minor ones.
  EXPECT_EQ(mine(recommend(**set, input_bound)),
            (std::vector<std::string>{"cheap-small", "cheap-small-b", "dear-big", "other-big", "other-mid", "minor-one"}));
  // The only fix for the bottleneck is minor: still minor, behind every material fix, and no plan step (issue 38
  // item 4: a bound under 1.03x is within step-to-step noise; issue 23 item 5 had let it lead).
  const json cpu_bound = {{"verdict", {{"bottleneck", "cpu_overhead"}}}};
  {
    TempDir only;
    std::string t = rule_text("tiny-fix", "true");
    t.replace(t.find("\"removable_share\": \"breakdown.data_loading\""),
              std::string("\"removable_share\": \"breakdown.data_loading\"").size(), "\"removable_share\": \"0.01\"");
    t.replace(t.find("  \"knobs\""), 9, "  \"addresses\": [\"cpu_overhead\"],\n  \"knobs\"");
    only.write("tiny-fix.json", t);
    auto with_tiny = load_rules({dir.path(), only.path()});
    ASSERT_TRUE(with_tiny.ok()) << with_tiny.status().message();
    const json recs = recommend(**with_tiny, cpu_bound);
    ASSERT_FALSE(recs.empty());
    EXPECT_NE(recs[0].at("id"), "tiny-fix") << recs.dump(1);
    const json* tiny = nullptr;
    for (const auto& r : recs)
      if (r.at("id") == "tiny-fix") tiny = &r;
    ASSERT_NE(tiny, nullptr);
    EXPECT_EQ(tiny->at("group"), "minor");
    EXPECT_EQ(tiny->at("addresses_bottleneck"), true);
    EXPECT_NE(tiny->at("rank_reason").get<std::string>().find("within step-to-step noise"), std::string::npos);
    for (const auto& r : recs)
      if (r.at("group") != "minor" && r.at("group") != "note") EXPECT_NE(r.at("group"), "primary") << r.at("id");
  }
  // Without a verdict nothing is primary: material fixes by bound, the minor one still last.
  EXPECT_EQ(mine(recommend(**set, json::object())),
            (std::vector<std::string>{"other-big", "dear-big", "other-mid", "cheap-small", "cheap-small-b", "minor-one"}));
  const json recs = recommend(**set, input_bound);
  for (const auto& r : recs) {
    if (r.at("id") == "dear-big") {
      EXPECT_DOUBLE_EQ(r.at("estimated_speedup_max").get<double>(), 2.0);
      EXPECT_EQ(r.at("group"), "primary");
      EXPECT_EQ(r.at("cost").at("effort"), "high");
      EXPECT_NE(r.at("rank_reason").get<std::string>().find("addresses the bottleneck (input_pipeline)"), std::string::npos);
    }
    if (r.at("id") == "minor-one") EXPECT_EQ(r.at("group"), "minor");
    if (r.at("id") == "other-big") EXPECT_EQ(r.at("group"), "secondary");
  }
}

TEST(Engine, GainIsClampedAndUnknownGainIsOne) {
  TempDir dir;
  std::string t = rule_text("always", "true");
  t.replace(t.find("breakdown.data_loading\", \"rationale"), std::string("breakdown.data_loading").size(), "2 - 0.5");
  dir.write("a.json", t);
  dir.write("b.json", rule_text("unknown-gain", "true"));
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  json recs = recommend(**set, json::object());
  bool a = false, b = false;
  for (const auto& r : recs) {
    if (r.at("id") == "always") {
      a = true;
      EXPECT_DOUBLE_EQ(r.at("estimated_speedup_max").get<double>(), 100.0);  // share clamped to 0.99
    }
    if (r.at("id") == "unknown-gain") {
      b = true;
      EXPECT_DOUBLE_EQ(r.at("estimated_speedup_max").get<double>(), 1.0);
      // The evidence template needs breakdown.data_loading, missing here: left out, and the gain says why.
      ASSERT_EQ(r.at("evidence").size(), 1u);
      EXPECT_NE(r.at("evidence")[0].get<std::string>().find("cannot be bounded"), std::string::npos);
    }
  }
  EXPECT_TRUE(a && b);
}

// Format 1.2 "assume": a fact the report lacks is assumed, and the rule fires as a check naming the assumption.
std::string assuming_rule(const std::string& assume_json, const std::string& when) {
  std::string t = rule_text("needs-cc", when, "1.2");
  t.replace(t.find("  \"knobs\""), 0, "  \"assume\": " + assume_json + ",\n");
  return t;
}

TEST(Assume, AnUnknownFactIsAssumedAndTheRuleFiresAsACheckThatNamesIt) {
  TempDir dir;
  dir.write("r.json", assuming_rule(
      R"J([{"metric": "device.compute_capability", "value": "$kernel_arch_min", "text": "at least {$assumed|f1} by the kernel names", "confirm": "print(torch.cuda.get_device_capability())"},
          {"metric": "device.compute_capability", "value": "7.0", "when": "source.has_gpu_activity == true", "text": "a Volta"}])J",
      "number(device.compute_capability) >= 7 and breakdown.data_loading > 0.1"));
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto fired = [&](const json& report) -> json {
    for (const auto& r : recommend(**set, report))
      if (r["id"] == "needs-cc") return r;
    return json();
  };
  json report = {{"source", {{"has_gpu_activity", true}}},
                 {"device", nullptr},
                 {"breakdown", {{"data_loading", 0.4}}},
                 {"gpu", {{"top_kernels", json::array({{{"name", "sm90_xmma_gemm_bf16bf16_bf16f32"}},
                                                       {{"name", "volta_sgemm_128x64_nn"}}})}}}};
  // The highest architecture a kernel was built for: sm90_ -> 9.0 (fires, as a check).
  json rec = fired(report);
  ASSERT_TRUE(rec.is_object());
  EXPECT_EQ(rec["evidence_level"], "check");
  const std::string note = rec["check_note"];
  EXPECT_NE(note.find("Assumed"), std::string::npos) << note;
  EXPECT_NE(note.find("at least 9.0 by the kernel names"), std::string::npos) << note;
  EXPECT_NE(note.find("Confirm first: print(torch.cuda.get_device_capability())"), std::string::npos) << note;
  EXPECT_NEAR(rec["estimated_speedup_max"].get<double>(), 1.0 / 0.6, 1e-3);  // the bound under the assumption
  // No kernel name tells: the next item (7.0, allowed by GPU activity) applies.
  report["gpu"]["top_kernels"] = json::array({{{"name", "void at::native::elementwise_kernel"}}});
  rec = fired(report);
  ASSERT_TRUE(rec.is_object());
  EXPECT_NE(rec["check_note"].get<std::string>().find("a Volta"), std::string::npos);
  // Its `when` is false (no GPU activity): nothing is assumed, the rule stays silent.
  report["source"]["has_gpu_activity"] = false;
  EXPECT_TRUE(fired(report).is_null());
  // A recorded fact is never replaced: 6.1 recorded, the rule is false (not a check).
  report["source"]["has_gpu_activity"] = true;
  report["device"] = {{"compute_capability", "6.1"}};
  EXPECT_TRUE(fired(report).is_null());
  report["device"] = {{"compute_capability", "8.6"}};
  rec = fired(report);
  ASSERT_TRUE(rec.is_object());
  EXPECT_EQ(rec["evidence_level"], "measured");
  // A condition false for another reason is not turned into a check.
  report["device"] = nullptr;
  report["breakdown"]["data_loading"] = 0.0;
  EXPECT_TRUE(fired(report).is_null());
}

TEST(Mechanism, AHostSideFixIsCappedByTheGpuIdleShareAndACommunicationFixByTheExposedShare) {
  TempDir dir;
  std::string host = rule_text("host-fix", "true", "1.2");
  host.replace(host.find("\"rationale\""), 0, "\"mechanism\": \"host\", ");
  std::string comm = rule_text("comm-fix", "true", "1.2");
  comm.replace(comm.find("\"rationale\""), 0, "\"mechanism\": \"communication\", ");
  dir.write("h.json", host);
  dir.write("c.json", comm);
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  json report = {{"source", {{"has_gpu_activity", true}}},
                 {"gpu", {{"idle", {{"fraction", 0.02}}}}},
                 {"communication", {{"exposed_fraction", 0.1}}},
                 {"breakdown", {{"data_loading", 0.5}}}};
  bool seen_host = false, seen_comm = false;
  for (const auto& r : recommend(**set, report)) {
    if (r["id"] == "host-fix") {
      seen_host = true;
      EXPECT_DOUBLE_EQ(r["removable_share"].get<double>(), 0.02);  // not 0.5: the GPU idles only 2% of the step
      EXPECT_DOUBLE_EQ(r["estimated_speedup_max"].get<double>(), 1.02);
      bool said = false;
      for (const auto& e : r["evidence"]) said |= e.get<std::string>().find("Bound capped at 2.0%") != std::string::npos;
      EXPECT_TRUE(said) << r["evidence"].dump(1);
    }
    if (r["id"] == "comm-fix") {
      seen_comm = true;
      EXPECT_DOUBLE_EQ(r["removable_share"].get<double>(), 0.1);
    }
  }
  EXPECT_TRUE(seen_host && seen_comm);
  // A CPU-only step (no GPU activity): the host is the compute, no idle-time cap.
  report["source"]["has_gpu_activity"] = false;
  for (const auto& r : recommend(**set, report))
    if (r["id"] == "host-fix") EXPECT_DOUBLE_EQ(r["removable_share"].get<double>(), 0.5);
}

TEST(Engine, ConditionalEvidenceLinesAreShownOnlyWhenTrue) {
  TempDir dir;
  std::string t = rule_text("cond", "true");
  const std::string plain = "[\"Data loading takes {breakdown.data_loading|pct} of the step\"]";
  t.replace(t.find(plain), plain.size(),
            "[\"always {breakdown.data_loading|pct}\", {\"text\": \"big {breakdown.data_loading|pct0}\", "
            "\"when\": \"breakdown.data_loading > 0.5\"}]");
  dir.write("cond.json", t);
  auto set = load_rules({dir.path()});
  ASSERT_TRUE(set.ok()) << set.status().message();
  auto evidence_for = [&](double share) {
    json report = {{"breakdown", {{"data_loading", share}}}};
    for (const auto& r : recommend(**set, report))
      if (r.at("id") == "cond") return r.at("evidence");
    return json();
  };
  EXPECT_EQ(evidence_for(0.2), json({"always 20.0%"}));
  EXPECT_EQ(evidence_for(0.75), json({"always 75.0%", "big 75%"}));
}

TEST(Engine, NeverThrowsOnOddReports) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  for (const char* text : {"{}", "[]", "null", "{\"breakdown\": 3}", "{\"breakdown\": {\"data_loading\": \"x\"}}",
                           "{\"gpu\": {\"memcpy\": []}}", "{\"facts\": {\"params\": {\"dtypes\": 5}}}"}) {
    json report = json::parse(text);
    EXPECT_NO_THROW(apply_rules(**set, report)) << text;
    EXPECT_NO_THROW(explain_rule(**set, "amp", report)) << text;
    if (report.is_object()) {
      EXPECT_TRUE(report.at("recommendations").is_array()) << text;
    }
  }
}

TEST(Engine, UnknownReportMajorVersionGetsNoRecommendations) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  json report = data_bound_v100(0.4);
  report["schema_version"] = "2.0";
  apply_rules(**set, report);
  EXPECT_TRUE(report.at("recommendations").empty());
}

TEST(Explain, SaysWhyARuleFiresOrNot) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  json report = data_bound_v100(0.334);
  std::string text = explain_rule(**set, "dataloader-workers", report);
  EXPECT_NE(text.find("FIRES"), std::string::npos) << text;
  EXPECT_NE(text.find("breakdown.data_loading = 0.334"), std::string::npos) << text;
  EXPECT_NE(text.find("1.50x"), std::string::npos) << text;
  EXPECT_NE(text.find("Data loading takes 33.4% of the step"), std::string::npos) << text;

  report["breakdown"]["data_loading"] = 0.01;
  text = explain_rule(**set, "dataloader-workers", report);
  EXPECT_NE(text.find("does not fire: the condition is false"), std::string::npos) << text;
  EXPECT_NE(text.find("[false]   breakdown.data_loading > 0.05"), std::string::npos) << text;

  report["breakdown"].erase("data_loading");
  text = explain_rule(**set, "dataloader-workers", report);
  EXPECT_NE(text.find("condition is unknown"), std::string::npos) << text;
  EXPECT_NE(text.find("breakdown.data_loading = missing"), std::string::npos) << text;

  text = explain_rule(**set, "no-such-rule", report);
  EXPECT_NE(text.find("unknown rule 'no-such-rule'"), std::string::npos);
  EXPECT_NE(text.find("dataloader-workers"), std::string::npos);
}

TEST(Describe, ShowsEverySection) {
  auto set = load_rules();
  ASSERT_TRUE(set.ok());
  auto text = describe_rule(**set, "amp");
  ASSERT_TRUE(text.ok());
  for (const char* s : {"amp — ", "tier 2", "fires when:", "estimated gain", "fix (PyTorch):", "GradScaler",
                        "fix (LibTorch C++):", "at::autocast", "when not to apply:", "references:", "tuner knobs: amp"})
    EXPECT_NE(text->find(s), std::string::npos) << s;
  EXPECT_FALSE(describe_rule(**set, "nope").ok());
  EXPECT_EQ(describe_rule(**set, "nope").status().exit_code(), 2);
  auto j = rule_json(**set, "tf32");
  ASSERT_TRUE(j.ok());
  EXPECT_EQ(j->at("id"), "tf32");
}

}  // namespace
}  // namespace profile_train::rules
