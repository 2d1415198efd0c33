// reports/report.schema.json against the report model's declared keys (model::report_keys(), from
// report_fields.h): every key the model writes is in the schema with a compatible type, and every key the
// schema defines for the report's own sections is one the model writes. `facts` is open JSON on both sides.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/report_keys.h"

namespace profile_train::report {

using namespace profile_train::model;  // the documents' types
namespace {

using nlohmann::json;

json schema() {
  std::ifstream in(std::filesystem::path(PT_SOURCE_DIR) / "reports" / "report.schema.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return json::parse(ss.str());
}

// "steps.per_step[].index" -> {"steps", "per_step", "[]", "index"}.
std::vector<std::string> segments(const std::string& path) {
  std::vector<std::string> out;
  std::string cur;
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '.') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (path.compare(i, 2, "[]") == 0) {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
      out.push_back("[]");
      ++i;
    } else {
      cur += path[i];
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

// The schema node of `path` (its parent in *parent, the last segment in *key), or nullptr.
const json* node_of(const json& root, const std::string& path, const json** parent = nullptr) {
  const json* node = &root;
  for (const std::string& seg : segments(path)) {
    if (parent) *parent = node;
    const char* child = seg == "[]" ? "items" : "properties";
    if (!node->contains(child)) return nullptr;
    node = seg == "[]" ? &(*node)[child] : (*node)[child].contains(seg) ? &(*node)[child][seg] : nullptr;
    if (node == nullptr) return nullptr;
  }
  return node;
}

std::set<std::string> types_of(const json& node) {
  std::set<std::string> out;
  if (!node.contains("type")) return out;
  if (node["type"].is_string()) out.insert(node["type"].get<std::string>());
  else
    for (const auto& t : node["type"]) out.insert(t.get<std::string>());
  return out;
}

const char* schema_type(KeyType t) {
  switch (t) {
    case KeyType::kNumber: return "number";
    case KeyType::kInteger: return "integer";
    case KeyType::kBoolean: return "boolean";
    case KeyType::kString: return "string";
    case KeyType::kArray: return "array";
    case KeyType::kObject: return "object";
  }
  return "?";
}

TEST(ReportKeys, TheDeclarationListsTheKeysToJsonWrites) {
  const auto& keys = report_keys();
  std::set<std::string> paths;
  for (const auto& k : keys) EXPECT_TRUE(paths.insert(k.path).second) << "declared twice: " << k.path;
  for (const char* p : {"schema_version", "steps.per_step[].breakdown.kernel", "gpu.memcpy.h2d.pageable_fraction",
                        "source.command", "source.crash", "recommendations[].gain_from[]", "phases.fraction.data_wait"})
    EXPECT_TRUE(paths.count(p)) << p;
  auto find = [&](const std::string& p) {
    for (const auto& k : keys)
      if (k.path == p) return k;
    ADD_FAILURE() << p;
    return ReportKey{};
  };
  EXPECT_EQ(find("steps.count").type, KeyType::kInteger);
  EXPECT_EQ(find("steps.mean_ms").type, KeyType::kNumber);
  EXPECT_TRUE(find("steps.mean_ms").nullable);
  EXPECT_FALSE(find("source.crash").always) << "absent unless the command crashed";
  EXPECT_FALSE(find("source.command").always) << "run's keys come only with run";
  EXPECT_TRUE(find("facts").free_form);
}

TEST(ReportKeys, EveryDeclaredKeyIsInTheSchemaWithACompatibleType) {
  const json root = schema();
  std::vector<std::string> missing, mismatched;
  for (const ReportKey& k : report_keys()) {
    const json* parent = nullptr;
    const json* node = node_of(root, k.path, &parent);
    if (node == nullptr) {
      missing.push_back(k.path);
      continue;
    }
    const std::set<std::string> types = types_of(*node);
    const std::string want = schema_type(k.type);
    // A declared integer may be a schema number; a declared number must not be a schema integer.
    const bool type_ok = types.empty() || types.count(want) || (k.type == KeyType::kInteger && types.count("number"));
    const bool null_ok = !k.nullable || types.empty() || types.count("null");
    // A key the model may leave out must not be required by the schema.
    bool required_ok = true;
    if (!k.always && parent != nullptr && parent->contains("required")) {
      const std::string last = segments(k.path).back();
      for (const auto& r : (*parent)["required"]) required_ok &= r != last;
    }
    if (!type_ok || !null_ok || !required_ok)
      mismatched.push_back(k.path + " (declared " + want + (k.nullable ? "|null" : "") +
                           (k.always ? "" : ", may be absent") + "; schema " + node->value("type", json()).dump() + ")");
  }
  EXPECT_TRUE(missing.empty()) << "declared in report_fields.h, not in reports/report.schema.json: "
                               << ::testing::PrintToString(missing);
  EXPECT_TRUE(mismatched.empty()) << "declared and schema types disagree: " << ::testing::PrintToString(mismatched);
}

void schema_paths(const json& node, const std::string& path, std::vector<std::string>& out) {
  if (node.contains("properties"))
    for (const auto& [key, child] : node["properties"].items()) {
      const std::string p = path.empty() ? key : path + "." + key;
      out.push_back(p);
      if (p != "facts") schema_paths(child, p, out);
    }
  if (node.contains("items") && node["items"].is_object()) {
    out.push_back(path + "[]");
    schema_paths(node["items"], path + "[]", out);
  }
}

TEST(ReportKeys, EverySchemaKeyOfTheReportsOwnSectionsIsDeclared) {
  std::set<std::string> declared;
  for (const ReportKey& k : report_keys()) declared.insert(k.path);
  std::vector<std::string> all, undeclared;
  schema_paths(schema(), "", all);
  ASSERT_GT(all.size(), 200u);
  for (const auto& p : all)
    if (!declared.count(p)) undeclared.push_back(p);
  EXPECT_TRUE(undeclared.empty()) << "in reports/report.schema.json, not declared in report_fields.h: "
                                  << ::testing::PrintToString(undeclared);
}

}  // namespace
}  // namespace profile_train::report
