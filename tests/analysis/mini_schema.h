// A minimal JSON Schema (draft 2020-12 subset) validator for tests: type (string or list), required,
// properties, additionalProperties (bool or schema), items, enum, const, minimum, maximum, and local "$ref"
// ("#/$defs/name"). Everything else in the schema is ignored. Returns the list of violations with JSON
// pointers; empty means valid. Header-only.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace profile_train::testing {

class MiniSchema {
 public:
  explicit MiniSchema(nlohmann::json schema) : root_(std::move(schema)) {}

  std::vector<std::string> validate(const nlohmann::json& doc) const {
    std::vector<std::string> errors;
    check(root_, doc, "", errors, 0);
    return errors;
  }

 private:
  static bool type_matches(const std::string& type, const nlohmann::json& v) {
    if (type == "null") return v.is_null();
    if (type == "boolean") return v.is_boolean();
    if (type == "object") return v.is_object();
    if (type == "array") return v.is_array();
    if (type == "string") return v.is_string();
    if (type == "integer") return v.is_number_integer() || (v.is_number_float() && v.get<double>() == static_cast<double>(static_cast<long long>(v.get<double>())));
    if (type == "number") return v.is_number();
    return false;
  }

  const nlohmann::json& resolve(const nlohmann::json& s) const {
    if (s.is_object() && s.contains("$ref")) {
      const std::string ref = s["$ref"].get<std::string>();
      if (ref.rfind("#/", 0) == 0) return root_.at(nlohmann::json::json_pointer(ref.substr(1)));
    }
    return s;
  }

  void check(const nlohmann::json& schema_in, const nlohmann::json& v, const std::string& at,
             std::vector<std::string>& errors, int depth) const {
    if (depth > 64) return;
    const nlohmann::json& s = resolve(schema_in);
    if (!s.is_object()) return;
    const std::string where = at.empty() ? "/" : at;
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_string()) ok = type_matches(s["type"].get<std::string>(), v);
      else for (const auto& t : s["type"]) ok = ok || type_matches(t.get<std::string>(), v);
      if (!ok) {
        errors.push_back(where + ": type " + std::string(v.type_name()) + " not allowed by " + s["type"].dump());
        return;
      }
    }
    if (s.contains("enum")) {
      bool found = false;
      for (const auto& e : s["enum"]) found = found || e == v;
      if (!found) errors.push_back(where + ": value " + v.dump() + " not in enum");
    }
    if (s.contains("const") && s["const"] != v) errors.push_back(where + ": value " + v.dump() + " != const");
    if (v.is_number()) {
      if (s.contains("minimum") && v.get<double>() < s["minimum"].get<double>())
        errors.push_back(where + ": " + v.dump() + " < minimum " + s["minimum"].dump());
      if (s.contains("maximum") && v.get<double>() > s["maximum"].get<double>())
        errors.push_back(where + ": " + v.dump() + " > maximum " + s["maximum"].dump());
    }
    if (v.is_object()) {
      if (s.contains("required"))
        for (const auto& k : s["required"])
          if (!v.contains(k.get<std::string>())) errors.push_back(where + ": missing required key " + k.dump());
      for (const auto& [k, sub] : v.items()) {
        if (s.contains("properties") && s["properties"].contains(k)) {
          check(s["properties"][k], sub, at + "/" + k, errors, depth + 1);
        } else if (s.contains("additionalProperties")) {
          const auto& ap = s["additionalProperties"];
          if (ap.is_boolean() && !ap.get<bool>()) errors.push_back(where + ": unexpected key \"" + k + "\"");
          else if (ap.is_object()) check(ap, sub, at + "/" + k, errors, depth + 1);
        }
      }
    }
    if (v.is_array() && s.contains("items"))
      for (size_t i = 0; i < v.size(); ++i) check(s["items"], v[i], at + "/" + std::to_string(i), errors, depth + 1);
  }

  nlohmann::json root_;
};

}  // namespace profile_train::testing
