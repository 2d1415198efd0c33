// The shared back half of `analyze`, `run` and `tune`: trace(s) -> report(s) -> rules -> writers.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/status.h"
#include "profile_train/trace/model.h"

namespace profile_train::cli {

struct OutputOptions {
  std::filesystem::path out_dir = "profile-train-out";
  std::vector<std::string> formats = {"text", "json", "html"};  // text = terminal summary
  std::optional<std::filesystem::path> perfetto;               // --perfetto FILE
  std::vector<std::filesystem::path> rules_dirs;                // --rules DIR (added / overriding rules)
  bool quiet = false;
};

// Analyzes one loaded trace, applies the rules (built-in + rules_dirs), writes report.json / report.html /
// the Perfetto timeline into out_dir, prints the terminal summary on stdout (formats has "text", not quiet).
// Errors are printed as one line on stderr; the return value is the process exit code (0 on success). A
// writer that is not available (Unsupported) only prints a one-line note. `report_out` receives the report.
int report_trace(const trace::Trace& trace, const OutputOptions& options, nlohmann::json* report_out = nullptr);

// Creates `dir` if needed and checks that a file can be written there (IoError naming the folder if not).
Status check_writable_dir(const std::filesystem::path& dir);

}  // namespace profile_train::cli
