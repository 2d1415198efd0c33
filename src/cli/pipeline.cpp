// The shared back half of `analyze`, `run` and `tune`: trace -> report -> rules -> writers -> summary.
#include "pipeline.h"

#include <fstream>
#include <iostream>
#include <system_error>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/report/writers.h"
#include "profile_train/rules/engine.h"

namespace profile_train::cli {

namespace {

bool wants(const OutputOptions& o, const char* fmt) {
  for (const auto& f : o.formats)
    if (f == fmt) return true;
  return false;
}

// A writer that is not built yet (Unsupported) only earns a one-line note; other failures are errors.
int handle_writer(const Status& s, const char* what) {
  if (s.ok()) return kExitOk;
  if (s.code() == StatusCode::kUnsupported) {
    std::cerr << "profile-train: note: " << what << " skipped (" << s.message() << ")\n";
    return kExitOk;
  }
  std::cerr << "profile-train: " << s.message() << "\n";
  return s.exit_code();
}

}  // namespace

Status check_writable_dir(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return IoError(dir.string() + ": cannot create output folder: " + ec.message());
  if (!std::filesystem::is_directory(dir, ec)) return IoError(dir.string() + ": not a folder");
  const auto probe = dir / ".profile-train-write-test";
  {
    std::ofstream out(probe);
    if (!out || !(out << "x") || !out.flush()) return IoError(dir.string() + ": output folder is not writable");
  }
  std::filesystem::remove(probe, ec);
  return Status::Ok();
}

int report_trace(const trace::Trace& trace, const OutputOptions& options, nlohmann::json* report_out) {
  nlohmann::json report = analysis::build_report(trace);

  auto rules = rules::load_rules(options.rules_dirs);
  if (!rules.ok()) {
    std::cerr << "profile-train: " << rules.status().message() << "\n";
    return rules.status().exit_code();
  }
  rules::apply_rules(**rules, report);

  if (wants(options, "json") || wants(options, "html") || options.perfetto) {
    if (Status s = check_writable_dir(options.out_dir); !s.ok()) {
      std::cerr << "profile-train: " << s.message() << "\n";
      return s.exit_code();
    }
  }
  std::vector<std::filesystem::path> written;  // listed after the summary, so the user knows where to look
  if (wants(options, "json")) {
    const auto path = options.out_dir / "report.json";
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out << report.dump(2) << "\n";
    if (!out.flush()) {
      std::cerr << "profile-train: " << path.string() << ": cannot write\n";
      return kExitBadInput;
    }
    written.push_back(path);
  }
  if (wants(options, "html")) {
    const auto path = options.out_dir / "report.html";
    if (int rc = handle_writer(report::write_html(report, &trace, path), "HTML report"); rc != 0) return rc;
    if (std::filesystem::exists(path)) written.push_back(path);
  }
  if (options.perfetto) {
    if (int rc = handle_writer(report::write_perfetto(trace, *options.perfetto), "Perfetto trace"); rc != 0) return rc;
    if (std::filesystem::exists(*options.perfetto)) written.push_back(*options.perfetto);
  }
  if (wants(options, "text") && !options.quiet) {
    report::TextOptions text;
    text.color = use_color(1);
    report::write_text_summary(report, std::cout, text);
    for (const auto& p : written) std::cout << "Wrote " << p.string() << "\n";
    std::cout.flush();
  }
  if (report_out != nullptr) *report_out = std::move(report);
  return kExitOk;
}

}  // namespace profile_train::cli
