// The terminal tables over several reports (report/writers.h): the job summary, the traces of one `analyze`.
#include <cstdio>
#include <iomanip>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "profile_train/common/format.h"
#include "profile_train/common/terminal.h"
#include "profile_train/report/writers.h"

namespace profile_train::report {
namespace {

std::string cell(const std::optional<double>& v, const char* missing) { return v ? format_fixed(*v, 2) : missing; }

}  // namespace

void write_job_text(const model::JobSummary& job, size_t rank_count, std::ostream& out) {
  out << "\nJob (" << rank_count << " ranks): " << terminal_safe(job.summary) << "\n";
  out << "  rank   step ms   input ms  compute ms  comm wait ms  verdict\n";
  for (const auto& r : job.ranks) {
    char line[200];
    std::snprintf(line, sizeof line, "  %-5s %9s %10s %11s %13s  %s", std::to_string(r.rank).c_str(),
                  cell(r.mean_step_ms, "n/a").c_str(), cell(r.input_ms, "n/a").c_str(),
                  cell(r.compute_ms, "n/a").c_str(), cell(r.communication_wait_ms, "not measured").c_str(),
                  std::string(name_of(r.verdict)).c_str());
    out << line << (job.straggler && job.straggler->rank == r.rank ? "  <- straggler" : "") << "\n";
  }
  if (job.collectives) {
    const auto& c = *job.collectives;
    out << "  comm   " << terminal_safe(c.summary) << "\n";
    for (size_t i = 0; i < c.rows.size() && i < 5; ++i) {
      const auto& r = c.rows[i];
      char line[300];
      const std::string last =
          r.last_rank < 0 ? std::string("none: the ranks arrive together")
                          : "rank " + std::to_string(r.last_rank) +
                                (r.last_rank_phase ? std::string(" (") +
                                                         (*r.last_rank_phase == model::StragglerPhase::kInput ? "data loading" : "compute") + ")"
                                                   : std::string());
      std::snprintf(line, sizeof line, "         %-14s %-11s x%-6s transfer %8s ms  wait %8s ms (%3.0f%%)  last: %s",
                    r.kind.c_str(), r.size_bucket.c_str(), format_fixed(r.calls_per_step, 2).c_str(),
                    format_fixed(r.transfer_ms, 3).c_str(), format_fixed(r.wait_ms, 3).c_str(), 100.0 * r.wait_share,
                    last.c_str());
      out << line << "\n";
    }
  }
}

void write_trace_table(const std::vector<TraceRow>& rows, const std::filesystem::path& out_dir, std::ostream& out) {
  out << "Summary (" << rows.size() << " trace(s), reports under " << terminal_safe(out_dir.string()) << "/<name>/)\n";
  out << "  " << std::left << std::setw(40) << "trace" << std::setw(18) << "verdict" << std::setw(6) << "conf"
      << std::setw(12) << "step ms" << "GPU util\n";
  for (const auto& r : rows) {
    out << "  " << std::left << std::setw(40) << r.folder << std::setw(18) << terminal_safe(r.verdict) << std::setw(6)
        << format_fixed(r.confidence, 2) << std::setw(12) << (r.mean_ms >= 0 ? format_fixed(r.mean_ms, 2) : "n/a")
        << (r.util >= 0 ? format_fixed(100.0 * r.util, 1) + "%" : "n/a") << "\n";
  }
}

}  // namespace profile_train::report
