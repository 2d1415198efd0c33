#include "job_summary.h"

#include <cstdio>
#include <iostream>
#include <optional>
#include <set>

#include "profile_train/common/atomic_file.h"
#include "profile_train/common/json_path.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/utf8.h"
#include "profile_train/common/status.h"
#include "profile_train/report/writers.h"

namespace profile_train::cli {

bool is_one_job(const std::vector<analysis::RankReport>& reports) {
  if (reports.size() < 2) return false;
  std::set<int64_t> ranks;
  std::optional<double> world;
  for (const auto& r : reports) {
    const auto rank = number_path(r.report, {"source", "distributed", "rank"});
    const auto ws = number_path(r.report, {"source", "distributed", "world_size"});
    if (!rank || !ws) return false;
    if (world && *world != *ws) return false;
    world = ws;
    if (!ranks.insert(static_cast<int64_t>(*rank)).second) return false;
  }
  return true;
}

int report_job(const std::vector<analysis::RankReport>& reports, const std::filesystem::path& out_dir, bool write_json,
               bool write_html, bool quiet) {
  const nlohmann::json job = analysis::summarize_job(reports);
  if (!quiet) {
    std::cout << "\nJob (" << reports.size() << " ranks): " << terminal_safe(job.value("summary", std::string())) << "\n";
    std::cout << "  rank   step ms   input ms  compute ms  comm wait ms  verdict\n";
    for (const auto& r : job["ranks"]) {
      auto num = [&](const char* k) {
        char buf[32];
        if (!r[k].is_number()) return std::string(std::string(k) == "communication_wait_ms" ? "not measured" : "n/a");
        std::snprintf(buf, sizeof buf, "%.2f", r[k].get<double>());
        return std::string(buf);
      };
      char line[200];
      std::snprintf(line, sizeof line, "  %-5s %9s %10s %11s %13s  %s", r["rank"].dump().c_str(), num("mean_step_ms").c_str(),
                    num("input_ms").c_str(), num("compute_ms").c_str(), num("communication_wait_ms").c_str(),
                    r.value("verdict", std::string()).c_str());
      std::cout << line << (job["straggler"].is_object() && job["straggler"]["rank"] == r["rank"] ? "  <- straggler" : "")
                << "\n";
    }
  }
  if (write_html) {
    const auto html = out_dir / "summary.html";
    if (Status s = report::write_job_html(job, html); !s.ok()) {
      std::cerr << "profile-train: " << terminal_safe(s.message()) << "\n";
      return s.exit_code();
    }
    if (!quiet) std::cout << "Wrote " << terminal_safe(html.string()) << "\n";
  }
  if (!write_json) return kExitOk;
  const auto path = out_dir / "job.json";
  nlohmann::json doc = job;
  repair_utf8(doc);  // file names need not be UTF-8
  if (Status s = write_file_atomic(path, doc.dump(2) + "\n"); !s.ok()) {
    std::cerr << "profile-train: " << terminal_safe(s.message()) << "\n";
    return s.exit_code();
  }
  if (!quiet) std::cout << "Wrote " << terminal_safe(path.string()) << "\n";
  return kExitOk;
}

}  // namespace profile_train::cli
