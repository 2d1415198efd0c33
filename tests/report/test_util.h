// Helpers shared by the report tests.
#pragma once

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile_train/model/report_json.h"

namespace profile_train::report::testing {

using namespace profile_train::model;  // the documents' types

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline nlohmann::json fixture(const std::string& name) {
  return nlohmann::json::parse(read_file(std::filesystem::path(PT_REPORT_FIXTURES) / name));
}

// A report document (a fixture, possibly edited) as the typed report the writers take; a document that does
// not read as a report fails the test.
inline model::Report typed_report(const nlohmann::json& j) {
  auto r = report_from_json(j);
  if (!r.ok()) {
    ADD_FAILURE() << "not a report: " << r.status().message();
    return {};
  }
  return std::move(*r);
}

inline size_t count_of(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = hay.find(needle); pos != std::string::npos; pos = hay.find(needle, pos + needle.size())) ++n;
  return n;
}

// A fresh, empty temporary folder (not removed: tests may inspect it after a failure).
inline std::filesystem::path temp_dir(const std::string& tag) {
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() /
             ("pt-report-" + tag + "-" + std::to_string(rd()) + std::to_string(rd()));
  std::filesystem::create_directories(dir);
  return dir;
}

// The JSON text inside <script type="application/json" id="pt-data">...</script>.
inline std::optional<std::string> embedded_data(const std::string& html) {
  const std::string open = "<script type=\"application/json\" id=\"pt-data\">";
  auto a = html.find(open);
  if (a == std::string::npos) return std::nullopt;
  a += open.size();
  auto b = html.find("</script>", a);
  if (b == std::string::npos) return std::nullopt;
  return html.substr(a, b - a);
}

}  // namespace profile_train::report::testing
