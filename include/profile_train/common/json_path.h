// Read-only lookups into nested JSON objects (report.json and friends) by a path of keys, and or_null for the
// writers of typed documents (diff.json, tune.json, job.json). Never throws.
#pragma once

#include <cmath>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace profile_train {

// An optional value as JSON: the value, or null when it is unset.
template <class T>
nlohmann::json or_null(const std::optional<T>& v) {
  return v ? nlohmann::json(*v) : nlohmann::json(nullptr);
}

// The value at `path`, or nullptr when a key is missing, an intermediate value is not an object, or the
// value is null.
inline const nlohmann::json* find_path(const nlohmann::json& j, std::initializer_list<std::string_view> path) {
  const nlohmann::json* cur = &j;
  for (auto key : path) {
    if (!cur->is_object()) return nullptr;
    auto it = cur->find(key);
    if (it == cur->end()) return nullptr;
    cur = &*it;
  }
  return cur->is_null() ? nullptr : cur;
}

// A finite number at `path`, else nullopt.
inline std::optional<double> number_path(const nlohmann::json& j, std::initializer_list<std::string_view> path) {
  const nlohmann::json* v = find_path(j, path);
  if (v == nullptr || !v->is_number()) return std::nullopt;
  const double d = v->get<double>();
  if (!std::isfinite(d)) return std::nullopt;
  return d;
}

inline std::optional<std::string> string_path(const nlohmann::json& j, std::initializer_list<std::string_view> path) {
  const nlohmann::json* v = find_path(j, path);
  if (v == nullptr || !v->is_string()) return std::nullopt;
  return v->get<std::string>();
}

inline std::optional<bool> bool_path(const nlohmann::json& j, std::initializer_list<std::string_view> path) {
  const nlohmann::json* v = find_path(j, path);
  if (v == nullptr || !v->is_boolean()) return std::nullopt;
  return v->get<bool>();
}

}  // namespace profile_train
