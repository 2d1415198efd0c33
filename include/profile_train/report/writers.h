// Presentation: everything a person or another tool reads. Writers are sinks; they never analyze.
// Owner: report component.
#pragma once

#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/model/job.h"
#include "profile_train/model/report.h"
#include "profile_train/common/status.h"
#include "profile_train/trace/model.h"

namespace profile_train::report {

struct TextOptions {
  bool color = false;   // ANSI colors (on a TTY unless NO_COLOR)
  bool verbose = false;
};

// How `run`'s command ended, from source.run: "exited with code 0", "crashed (SIGSEGV)", "was killed by
// SIGKILL", "stopped by SIGINT/SIGTERM to profile-train; it exited with code 1". The text summary and
// report.html say it after the command, for a clean exit as for a failure.
std::string run_outcome(const model::RunInfo& run);

// Terminal summary: verdict first, then headline figures, breakdown, recommendations.
void write_text_summary(const model::Report& report, std::ostream& out, const TextOptions& options = {});

// Self-contained HTML (no network, no external assets). `trace` may be null (then no timeline).
Status write_html(const model::Report& report, const trace::Trace* trace, const std::filesystem::path& path);
// The same document as a string (write_html writes this). May throw only on allocation failure.
std::string render_html(const model::Report& report, const trace::Trace* trace);

// The job summary in the terminal (after the per-trace lines of `analyze` / `run`): its sentence, then one
// row per rank, the straggler marked. `rank_count`: the ranks analyzed.
void write_job_text(const model::JobSummary& job, size_t rank_count, std::ostream& out);

// One row of `analyze`'s table over several traces; mean_ms / util < 0: not known.
struct TraceRow {
  std::string file, verdict, folder;
  double confidence = 0, mean_ms = -1, util = -1;
};
// That table: one row per report, under its folder name in out_dir.
void write_trace_table(const std::vector<TraceRow>& rows, const std::filesystem::path& out_dir, std::ostream& out);

// summary.html of a multi-rank job (analysis::summarize_job): verdict, per-rank bars and table.
Status write_job_html(const model::JobSummary& job, const std::filesystem::path& path);
std::string render_job_html(const model::JobSummary& job);

// Timeline as Chrome-trace JSON (Perfetto UI / chrome://tracing).
Status write_chrome_trace(const trace::Trace& trace, const std::filesystem::path& path);

}  // namespace profile_train::report
