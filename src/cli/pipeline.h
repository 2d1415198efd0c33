// The shared back half of `analyze`, `run` and `tune`: trace(s) -> report(s) -> rules -> writers.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/efficiency.h"
#include "profile_train/model/report.h"
#include "profile_train/common/status.h"
#include "profile_train/model/report_json.h"
#include "profile_train/trace/model.h"
#include "io.h"

namespace profile_train::rules {
class RuleSet;  // rules/engine.h
}

namespace profile_train::cli {

// The outputs of a report, from `--format text,json,html` (parse_formats): text = the terminal summary.
struct Formats {
  bool text = true, json = true, html = true;
  bool writes_files() const { return json || html; }
};

// --format's names as flags; InvalidArgument naming the first unknown one. An empty list leaves every flag off.
StatusOr<Formats> parse_formats(const std::vector<std::string>& names);

struct OutputOptions {
  std::filesystem::path out_dir = "profile-train-out";
  Formats formats;
  std::optional<std::filesystem::path> perfetto;               // --perfetto FILE
  std::vector<std::filesystem::path> rules_dirs;                // --rules DIR (added / overriding rules)
  bool all_steps = false;                                       // --all-steps: every step in steps.per_step
  std::optional<std::string> device_name;                       // --device NAME: the GPU model a trace lacks
  bool quiet = false;
  // `analyze --max-analysis-seconds`: past this, the analysis of one trace is given up with one error line and
  // exit 2 (the process ends: a running analysis cannot be interrupted). 0 = no limit.
  double max_analysis_seconds = 0;
  std::shared_ptr<const std::vector<analysis::GpuSpec>> gpu_specs;  // --gpu-spec FILE (null: built-in table only)
  // Called on the finished report (after the rules) before any file is written or the summary printed: what
  // only the caller knows goes in here (`run`: the command and how it ended, merge_capture_result).
  std::function<void(model::Report&)> complete_report;
  // The rules, loaded once by the command (null: report_trace loads the built-in ones and rules_dirs).
  std::shared_ptr<const rules::RuleSet> rules;
  // The command already created out_dir and probed that it is writable (report_trace does not probe again;
  // the --perfetto path is still compared with the files the trace was read from, known only once loaded).
  bool outputs_checked = false;
  // Where the summary, the "Wrote" lines, notes and the error line go.
  Io io;
};

// Analyzes one loaded trace into a typed report, applies the rules (options.rules, else built-in + rules_dirs) and
// complete_report to it, repairs its text (UTF-8), then feeds that one report to every writer: report.json,
// report.html, the terminal summary on stdout (formats has "text", not quiet); the Perfetto timeline is the
// trace's. The summary is printed even when a file cannot be written (full disk): the analysis is not lost.
// Errors are printed as one line on options.io.err; the return value is the process exit code (0 on success). A
// writer that is not available (Unsupported) only prints a one-line note. `report_out` receives the finished
// report (the one report.json holds) once it exists, also when a file could not be written.
int report_trace(const trace::Trace& trace, const OutputOptions& options,
                 std::optional<model::Report>* report_out = nullptr);

// Prints "WHO: message" (terminal-safe) as the one error line on `err`; returns the status's exit code.
int print_failure(std::ostream& err, std::string_view who, const Status& status);

// Creates `dir` if needed and checks that a file can be written there (IoError naming the folder and the
// reason, e.g. "No space left on device", if not).
Status check_writable_dir(const std::filesystem::path& dir);

// Refuses (InvalidArgument, exit 2) a --perfetto file that would overwrite one of `inputs` or the
// report.json / report.html of out_dir. Paths are compared after resolving symlinks and `..`.
Status check_perfetto_path(const OutputOptions& options, const std::vector<std::filesystem::path>& inputs);

}  // namespace profile_train::cli
