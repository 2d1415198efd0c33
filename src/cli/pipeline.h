// The shared back half of `analyze`, `run` and `tune`: trace(s) -> report(s) -> rules -> writers.
#pragma once

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/trace/model.h"

namespace profile_train::cli {

struct OutputOptions {
  std::filesystem::path out_dir = "profile-train-out";
  std::vector<std::string> formats = {"text", "json", "html"};  // text = terminal summary
  std::optional<std::filesystem::path> perfetto;               // --perfetto FILE
  std::vector<std::filesystem::path> rules_dirs;                // --rules DIR (added / overriding rules)
  bool quiet = false;
};

// Analyzes one loaded trace, applies the rules, writes report.json / report.html / perfetto into
// out_dir, prints the terminal summary. Returns the report (or a Status through exit code < 0? no:)
// Errors are printed as one line; the return value is the process exit code.
int report_trace(const trace::Trace& trace, const OutputOptions& options, nlohmann::json* report_out = nullptr);

}  // namespace profile_train::cli
