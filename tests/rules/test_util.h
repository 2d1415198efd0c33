// Helpers shared by the rules tests.
#pragma once

#include <atomic>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>
#include <gtest/gtest.h>

#include "profile_train/rules/engine.h"
#include <unistd.h>

namespace profile_train::rules::testing {

// A fresh temporary folder, removed at destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ = std::filesystem::temp_directory_path() /
            ("pt_rules_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }
  std::filesystem::path write(const std::string& name, const std::string& text) const {
    auto p = path_ / name;
    std::ofstream(p) << text;
    return p;
  }

 private:
  std::filesystem::path path_;
};

inline std::string read_file(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline nlohmann::json read_json(const std::filesystem::path& p) { return nlohmann::json::parse(read_file(p)); }

// A minimal valid rule file; `when` goes on line 6.
inline std::string rule_text(const std::string& id, const std::string& when = "breakdown.data_loading > 0.5",
                             const std::string& version = "1.0", const std::string& title = "A test rule") {
  return "{\n"
         "  \"format_version\": \"" + version + "\",\n"
         "  \"id\": \"" + id + "\",\n"
         "  \"title\": \"" + title + "\",\n"
         "  \"tier\": 1,\n"
         "  \"when\": \"" + when + "\",\n"
         "  \"evidence\": [\"Data loading takes {breakdown.data_loading|pct} of the step\"],\n"
         "  \"gain\": {\"removable_share\": \"breakdown.data_loading\", \"rationale\": \"all of it\"},\n"
         "  \"fix\": {\"python\": \"pass\", \"cpp\": [\"// nothing\"]},\n"
         "  \"caveats\": [\"none\"],\n"
         "  \"references\": [\"https://pytorch.org/docs/stable/data.html\"],\n"
         "  \"knobs\": [\"num_workers\"]\n"
         "}\n";
}

// The built-in catalog, loaded once per test binary (a load failure fails the calling test).
inline std::shared_ptr<const RuleSet> builtin_catalog() {
  static std::shared_ptr<const RuleSet> set = [] {
    auto s = load_rules();
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? *s : nullptr;
  }();
  return set;
}

}  // namespace profile_train::rules::testing
