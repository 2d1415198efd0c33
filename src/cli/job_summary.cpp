#include "job_summary.h"

#include "pipeline.h"

#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/model/job_json.h"
#include "profile_train/report/writers.h"

namespace profile_train::cli {

namespace {

std::string cell(const std::optional<double>& v, const char* missing) {
  if (!v) return missing;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", *v);
  return buf;
}

void print_job(const analysis::JobSummary& job, size_t rank_count) {
  std::cout << "\nJob (" << rank_count << " ranks): " << terminal_safe(job.summary) << "\n";
  std::cout << "  rank   step ms   input ms  compute ms  comm wait ms  verdict\n";
  for (const auto& r : job.ranks) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-5s %9s %10s %11s %13s  %s", std::to_string(r.rank).c_str(),
                  cell(r.mean_step_ms, "n/a").c_str(), cell(r.input_ms, "n/a").c_str(),
                  cell(r.compute_ms, "n/a").c_str(), cell(r.communication_wait_ms, "not measured").c_str(),
                  std::string(name_of(r.verdict)).c_str());
    std::cout << line << (job.straggler && job.straggler->rank == r.rank ? "  <- straggler" : "") << "\n";
  }
}

}  // namespace

int report_job(const std::vector<analysis::RankReport>& reports, const std::filesystem::path& out_dir, bool write_json,
               bool write_html, bool quiet) {
  const analysis::JobSummary job = analysis::summarize_job(reports);
  if (!quiet) print_job(job, reports.size());
  if (write_html) {
    const auto html = out_dir / "summary.html";
    if (Status s = report::write_job_html(job, html); !s.ok()) return print_failure("profile-train", s);
    if (!quiet) std::cout << "Wrote " << terminal_safe(html.string()) << "\n";
  }
  if (!write_json) return kExitOk;
  const auto path = out_dir / "job.json";
  if (Status s = report::write_job_json(path, job); !s.ok()) return print_failure("profile-train", s);
  if (!quiet) std::cout << "Wrote " << terminal_safe(path.string()) << "\n";
  return kExitOk;
}

}  // namespace profile_train::cli
