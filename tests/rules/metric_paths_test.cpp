// The metric paths rules may name: sorted/unique, every key of the report model among them with its type, and
// every one present in the report schema.
#include <gtest/gtest.h>

#include <regex>

#include "profile_train/model/report_keys.h"
#include "profile_train/rules/metric_paths.h"
#include "test_util.h"

namespace profile_train::rules {
namespace {

using nlohmann::json;

TEST(MetricPaths, SortedUniqueAndLookupWorks) {
  const auto paths = metric_paths();
  ASSERT_GT(paths.size(), 100u);
  for (size_t i = 1; i < paths.size(); ++i) EXPECT_LT(paths[i - 1].path, paths[i].path);
  for (const char* p : {"breakdown.data_loading", "gpu.memcpy.h2d.pageable_fraction", "facts.dataloader.num_workers",
                        "device.compute_capability", "breakdown_ms.kernel", "gpu.memcpy.d2d.bandwidth_gbps"})
    EXPECT_NE(find_metric(p), nullptr) << p;
  EXPECT_EQ(find_metric("device.compute_capability")->type, MetricType::kString);
  EXPECT_EQ(find_metric("gpu.memcpy.h2d")->type, MetricType::kObject);
  EXPECT_EQ(find_metric("facts.params.dtypes")->type, MetricType::kList);
  EXPECT_EQ(find_metric("breakdown.dataloading"), nullptr);
  EXPECT_EQ(find_metric("breakdown."), nullptr);
}

// The table is the report model's declaration (model::report_keys()): every key to_json writes, arrays'
// items aside, is a path rules may name, with the type the model gives it.
TEST(MetricPaths, EveryKeyOfTheReportModelIsAMetricPathOfItsType) {
  std::vector<std::string> missing, mistyped;
  for (const auto& key : model::report_keys()) {
    if (key.free_form || key.path.find("[]") != std::string::npos) continue;
    const MetricPath* m = find_metric(key.path);
    if (m == nullptr) {
      missing.push_back(key.path);
      continue;
    }
    MetricType want = MetricType::kObject;
    switch (key.type) {
      case model::KeyType::kNumber:
      case model::KeyType::kInteger: want = MetricType::kNumber; break;
      case model::KeyType::kBoolean: want = MetricType::kBool; break;
      case model::KeyType::kString: want = MetricType::kString; break;
      case model::KeyType::kArray: want = MetricType::kList; break;
      case model::KeyType::kObject: want = MetricType::kObject; break;
    }
    if (m->type != want) mistyped.push_back(key.path + " is " + std::string(metric_type_name(m->type)));
  }
  EXPECT_TRUE(missing.empty()) << "report keys rules cannot name: " << ::testing::PrintToString(missing);
  EXPECT_TRUE(mistyped.empty()) << "report keys of another type in the table: " << ::testing::PrintToString(mistyped);
  EXPECT_EQ(find_metric("data_quality.missing_device_properties")->type, MetricType::kBool);
  EXPECT_EQ(find_metric("steps.per_step_complete")->type, MetricType::kBool);
  EXPECT_EQ(find_metric("steps.per_step[]"), nullptr) << "array items are not metrics";
}

// Resolves "$ref": "#/$defs/x" within the schema document.
const json& deref(const json& root, const json& node) {
  if (node.is_object() && node.contains("$ref")) {
    const std::string ref = node.at("$ref");
    if (ref.rfind("#/", 0) == 0) return deref(root, root.at(json::json_pointer(ref.substr(1))));
  }
  return node;
}

// Does `schema` (object node) allow property `key` with an object/any sub-schema? Follows anyOf/oneOf/allOf
// (e.g. {"anyOf": [{"$ref": ...}, {"type": "null"}]}).
const json* property(const json& root, const json& schema, const std::string& key) {
  const json& s = deref(root, schema);
  if (s.contains("properties") && s.at("properties").contains(key)) return &s.at("properties").at(key);
  for (const char* combo : {"anyOf", "oneOf", "allOf"}) {
    if (!s.contains(combo)) continue;
    for (const auto& alt : s.at(combo))
      if (const json* p = property(root, alt, key)) return p;
  }
  if (s.contains("patternProperties")) {
    for (const auto& [pattern, sub] : s.at("patternProperties").items())
      if (std::regex_match(key, std::regex(pattern))) return &sub;
  }
  return nullptr;
}

TEST(MetricPaths, EveryPathExistsInTheReportSchema) {
  const auto schema_path = std::filesystem::path(PT_SOURCE_DIR) / "reports" / "report.schema.json";
  if (!std::filesystem::exists(schema_path))
    GTEST_SKIP() << schema_path << " does not exist yet (written by the analysis component)";
  const json root = testing::read_json(schema_path);
  std::vector<std::string> missing;
  for (const auto& m : metric_paths()) {
    const json* node = &root;
    std::string path(m.path);
    size_t start = 0;
    while (node != nullptr) {
      const size_t dot = path.find('.', start);
      node = property(root, *node, path.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
      if (dot == std::string::npos) break;
      start = dot + 1;
    }
    if (node == nullptr) missing.push_back(path);
  }
  EXPECT_TRUE(missing.empty()) << "paths in metric_paths.cpp but not in reports/report.schema.json: "
                               << ::testing::PrintToString(missing);
}

}  // namespace
}  // namespace profile_train::rules
