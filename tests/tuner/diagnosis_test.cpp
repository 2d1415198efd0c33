// Diagnosis -> knobs: which knobs the tuner tries for a report. The built-in rules name their knobs in their
// data (rules/*.json "knobs"); the picks over every golden report of the corpus are kept in
// tests/golden/tuner_knobs.json, so a change of rule data or of the tuner that changes what the tuner tries
// shows up here (regenerate with PT_UPDATE_GOLDEN=1 after checking the difference is intended).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "profile_train/common/vocabulary.h"
#include "profile_train/model/report_json.h"
#include "profile_train/rules/engine.h"
#include "profile_train/tuner/tuner.h"

namespace model = profile_train::model;
namespace pt = profile_train::tuner;
namespace fs = std::filesystem;

namespace {

nlohmann::json read_json(const fs::path& p) {
  std::ifstream in(p);
  return nlohmann::json::parse(in, nullptr, false);
}

// What the tuner picks for one report: the ordered knobs, and each recommendation's knobs.
nlohmann::json picks(const nlohmann::json& doc) {
  const auto report = model::report_from_json(doc);
  EXPECT_TRUE(report.ok()) << report.status().message();
  if (!report.ok()) return nullptr;
  nlohmann::json by_rec = nlohmann::json::object();
  for (const auto& rec : report->recommendations) by_rec[rec.id] = pt::knobs_for_recommendation(rec);
  nlohmann::json diagnosed = nlohmann::json::array();
  for (const pt::DiagnosedKnob& d : pt::diagnosed_knobs(*report)) diagnosed.push_back(d.knob);
  return {{"diagnosed", diagnosed}, {"by_recommendation", by_rec}};
}

}  // namespace

TEST(DiagnosisKnobs, GoldenReportsPickTheRecordedKnobs) {
  const fs::path golden = fs::path(PT_GOLDEN_DIR) / "reports";
  const fs::path expected_file = fs::path(PT_GOLDEN_DIR) / "tuner_knobs.json";
  nlohmann::json got = nlohmann::json::object();
  for (const auto& e : fs::directory_iterator(golden)) {
    if (e.path().extension() != ".json") continue;
    const nlohmann::json report = read_json(e.path());
    ASSERT_TRUE(report.is_object()) << e.path();
    got[e.path().stem().string()] = picks(report);
  }
  ASSERT_FALSE(got.empty());
  // Every built-in rule, fired or not: a recommendation as the rule engine writes it (its id and knobs).
  auto rules = profile_train::rules::load_rules();
  ASSERT_TRUE(rules.ok()) << rules.status().message();
  nlohmann::json by_rule = nlohmann::json::object();
  for (const auto& r : profile_train::rules::list_rules(**rules)) {
    model::Recommendation rec;
    rec.id = r.id;
    rec.knobs = r.knobs;
    by_rule[r.id] = pt::knobs_for_recommendation(rec);
  }
  got["<built-in rules>"] = by_rule;
  if (std::getenv("PT_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(expected_file) << got.dump(1) << "\n";
    GTEST_SKIP() << "updated " << expected_file;
  }
  const nlohmann::json expected = read_json(expected_file);
  ASSERT_TRUE(expected.is_object()) << expected_file;
  EXPECT_EQ(got, expected) << nlohmann::json::diff(expected, got).dump(1);
}

// The verdict's lists name knobs of the catalog, for bottleneck classes of the report vocabulary.
TEST(DiagnosisKnobs, VerdictListsNameCatalogKnobs) {
  int with_knobs = 0;
  for (size_t i = 0; i < profile_train::kBottleneckNames.size(); ++i) {
    const auto b = static_cast<profile_train::Bottleneck>(i);
    const auto knobs = pt::knobs_for_bottleneck(b);
    with_knobs += knobs.empty() ? 0 : 1;
    for (const auto& k : knobs) EXPECT_NE(profile_train::find_knob(k), nullptr) << profile_train::kBottleneckNames[i] << ": " << k;
  }
  EXPECT_EQ(with_knobs, static_cast<int>(profile_train::kBottleneckNames.size()) - 1);  // all but "unknown"
  EXPECT_TRUE(pt::knobs_for_bottleneck(profile_train::Bottleneck::kUnknown).empty());
}
