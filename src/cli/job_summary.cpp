#include "job_summary.h"

#include "pipeline.h"

#include <string>

#include "profile_train/common/status.h"
#include "profile_train/analysis/job.h"
#include "profile_train/common/terminal.h"
#include "profile_train/model/job_json.h"
#include "profile_train/report/writers.h"

namespace profile_train::cli {

int report_job(const Io& io, const std::vector<model::RankFacts>& reports, const std::filesystem::path& out_dir,
               bool write_json, bool write_html, bool quiet, const std::vector<model::MissingRank>& missing) {
  model::JobSummary job = analysis::summarize_job(reports);
  job.missing = missing;
  if (!quiet) {
    report::write_job_text(job, reports.size(), *io.out);
    for (const auto& m : missing)
      *io.out << "  missing: " << terminal_safe(m.file) << ": " << terminal_safe(m.reason) << "\n";
  }
  if (write_html) {
    const auto html = out_dir / "summary.html";
    if (Status s = report::write_job_html(job, html); !s.ok()) return print_failure(*io.err, "profile-train", s);
    if (!quiet) *io.out << "Wrote " << terminal_safe(html.string()) << "\n";
  }
  if (!write_json) return kExitOk;
  const auto path = out_dir / "job.json";
  if (Status s = model::write_job_json(path, job); !s.ok()) return print_failure(*io.err, "profile-train", s);
  if (!quiet) *io.out << "Wrote " << terminal_safe(path.string()) << "\n";
  return kExitOk;
}

}  // namespace profile_train::cli
