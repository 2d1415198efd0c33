// The shared back half of `analyze`, `run` and `tune`: trace -> report -> rules -> writers -> summary.
#include "pipeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <future>
#include <sstream>
#include <system_error>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/model/report_json.h"
#include "profile_train/report/writers.h"
#include "profile_train/rules/engine.h"

namespace profile_train::cli {

namespace fs = std::filesystem;

namespace {

// A writer that is not built yet (Unsupported) only earns a one-line note; other failures are errors.
Status writer_status(std::ostream& err, const Status& s, const char* what) {
  if (s.code() == StatusCode::kUnsupported) {
    err << "profile-train: note: " << what << " skipped (" << terminal_safe(s.message()) << ")\n";
    return Status::Ok();
  }
  return s;
}

// `p` with symlinks and `..` resolved as far as it exists (the rest kept lexically).
fs::path resolved(const fs::path& p) {
  std::error_code ec;
  fs::path r = fs::weakly_canonical(fs::absolute(p, ec), ec);
  return ec ? fs::absolute(p, ec).lexically_normal() : r;
}

bool same_file(const fs::path& a, const fs::path& b) {
  std::error_code ec;
  if (fs::exists(a, ec) && fs::exists(b, ec)) {
    const bool eq = fs::equivalent(a, b, ec);  // also catches hard links
    if (!ec) return eq;
  }
  return resolved(a) == resolved(b);
}

// The command's rules (loaded once), else the built-in ones and --rules folders, applied to `report`.
Status apply_rules(const OutputOptions& options, model::Report& report) {
  std::shared_ptr<const rules::RuleSet> rules = options.rules;
  if (!rules) {
    auto loaded = rules::load_rules(options.rules_dirs);
    if (!loaded.ok()) return loaded.status();
    rules = std::move(*loaded);
  }
  return rules::apply_rules(*rules, report);
}

}  // namespace

StatusOr<Formats> parse_formats(const std::vector<std::string>& names) {
  Formats f{false, false, false};
  for (const auto& n : names) {
    if (n == "text") f.text = true;
    else if (n == "json") f.json = true;
    else if (n == "html") f.html = true;
    else return InvalidArgument("--format: unknown format '" + n + "' (use text, json, html)");
  }
  return f;
}

Status check_writable_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError(dir.string() + ": cannot create output folder: " + ec.message());
  if (!fs::is_directory(dir, ec)) return IoError(dir.string() + ": not a folder");
  const fs::path probe = dir / ".profile-train-write-test";
  // Whatever is there is removed, never opened: a symlink planted under this name would otherwise have its
  // target truncated (O_EXCL | O_NOFOLLOW create a new file or fail).
  (void)::unlink(probe.c_str());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return IoError(dir.string() + ": output folder is not writable: " + std::strerror(errno));
  const bool wrote = ::write(fd, "x", 1) == 1;
  const int err = wrote ? 0 : errno;
  ::close(fd);
  fs::remove(probe, ec);
  if (!wrote) return IoError(dir.string() + ": cannot write in the output folder: " + std::strerror(err));
  return Status::Ok();
}

Status check_perfetto_path(const OutputOptions& options, const std::vector<fs::path>& inputs) {
  if (!options.perfetto) return Status::Ok();
  const fs::path& pf = *options.perfetto;
  for (const auto& in : inputs)
    if (same_file(pf, in))
      return InvalidArgument("--perfetto " + pf.string() + ": is the input trace " + in.string() +
                             " (it would be overwritten); choose another file");
  for (const char* name : {"report.json", "report.html"})
    if (same_file(pf, options.out_dir / name))
      return InvalidArgument("--perfetto " + pf.string() + ": is the report " + (options.out_dir / name).string() +
                             " (it would be overwritten); choose another file");
  // A FIFO, a device or a symlink (to /dev/full, to /proc/self/fd/1) would be replaced by the atomic rename.
  if (Status s = check_replaceable(pf); !s.ok()) return InvalidArgument("--perfetto " + s.message());
  return Status::Ok();
}

int print_failure(std::ostream& err, std::string_view who, const Status& status) {
  err << who << ": " << terminal_safe(status.message()) << "\n";
  return status.exit_code();
}

int report_trace(const trace::Trace& trace, const OutputOptions& options, std::optional<model::Report>* report_out) {
  const Io& io = options.io;
  auto print_error = [&](const Status& s) { print_failure(*io.err, "profile-train", s); };
  analysis::AnalysisOptions analysis_options;
  analysis_options.all_steps = options.all_steps;
  analysis_options.device_name = options.device_name;
  analysis_options.gpu_specs = options.gpu_specs.get();
  model::Report report;
  const double limit_s = options.max_analysis_seconds;
  if (limit_s > 0 && limit_s < 1e9) {  // beyond 1e9 s (31 years) the deadline would overflow: no limit
    // The analysis runs on a worker; the bound is checked from here. Past it the process ends at once
    // (_Exit: the worker cannot be interrupted, and no output file is open at this point, only the folder lock,
    // which the kernel releases).
    auto job = std::async(std::launch::async, [&] { return analysis::build_typed_report(trace, analysis_options); });
    if (job.wait_for(std::chrono::duration<double>(limit_s)) == std::future_status::timeout) {
      const std::string name = trace.meta.source_files.empty() ? std::string("the trace") : trace.meta.source_files[0];
      std::ostringstream line;
      line << name << ": analysis still running after " << limit_s
           << " s (--max-analysis-seconds; 0 = no limit); no report written";
      io.out->flush();
      print_error(ResourceExhausted(line.str()));
      io.err->flush();
      std::_Exit(kExitBadInput);
    }
    report = job.get();
  } else {
    report = analysis::build_typed_report(trace, analysis_options);
  }

  if (Status s = apply_rules(options, report); !s.ok()) {
    print_error(s);
    return s.exit_code();
  }
  if (options.complete_report) options.complete_report(report);
  model::repair_report_utf8(report);  // every writer gets valid text; data_quality.notes says how much

  std::vector<fs::path> inputs(trace.meta.source_files.begin(), trace.meta.source_files.end());
  if (Status s = check_perfetto_path(options, inputs); !s.ok()) {  // against the files the trace was read from
    print_error(s);
    return s.exit_code();
  }

  // Files first, then the summary, which is printed whatever happened to the files: on a full disk the
  // analysis still reaches the user. The first failure stops the writing and is the one error line.
  Status failed;
  std::vector<fs::path> written;  // listed after the summary, so the user knows where to look
  const Formats& formats = options.formats;
  if ((formats.writes_files() || options.perfetto) && !options.outputs_checked) failed = check_writable_dir(options.out_dir);
  if (failed.ok() && formats.json) {
    const fs::path path = options.out_dir / "report.json";
    failed = model::write_report_json(path, report);
    if (failed.ok()) written.push_back(path);
  }
  if (failed.ok() && formats.html) {
    const fs::path path = options.out_dir / "report.html";
    failed = writer_status(*io.err, report::write_html(report, &trace, path), "HTML report");
    std::error_code ec;
    if (failed.ok() && fs::exists(path, ec)) written.push_back(path);
  }
  if (failed.ok() && options.perfetto) {
    failed = writer_status(*io.err, report::write_chrome_trace(trace, *options.perfetto), "Perfetto trace");
    std::error_code ec;
    if (failed.ok() && fs::exists(*options.perfetto, ec)) written.push_back(*options.perfetto);
  }
  if (formats.text && !options.quiet) {
    report::TextOptions text;
    text.color = io.color;
    report::write_text_summary(report, *io.out, text);
    for (const auto& p : written) *io.out << "Wrote " << terminal_safe(p.string()) << "\n";
    io.out->flush();
  }
  if (report_out != nullptr) *report_out = std::move(report);
  if (!failed.ok()) {
    print_error(failed);
    return failed.exit_code();
  }
  return kExitOk;
}

}  // namespace profile_train::cli
