// `profile-train diff A B [--out DIR] [--format text,json,html]`: compares two reports (files or run output
// folders containing report.json) or two job folders (one report per rank, job.json: `analyze` of several rank
// files, `run` of a multi-process job). Text goes to stdout; json/html are written as DIR/diff.json, DIR/diff.html.
#include <filesystem>
#include <iostream>
#include <optional>
#include <set>
#include <string>
#include <vector>


#include "commands.h"
#include "pipeline.h"
#include "profile_train/common/atomic_file.h"
#include "profile_train/common/folder_lock.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/analysis/diff.h"
#include "profile_train/model/job_json.h"
#include "profile_train/model/report_json.h"
#include "profile_train/report/diff.h"

namespace profile_train::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  std::string out_dir;
  std::vector<std::string> formats;
  int top = 10;
};

// A job folder of one rank compares as that rank's report (labelled with its folder).
void single_rank_as_report(model::DiffInput& in, std::string& label) {
  if (!in.job || in.job->ranks.size() != 1) return;
  label = in.job->ranks[0].file;
  in.report = std::move(in.job->ranks[0].report);
  in.job.reset();
}

std::string describe(const model::DiffInput& in) {
  if (in.report) return "a report";
  const size_t n = in.job->ranks.size();
  return "a job folder of " + std::to_string(n) + " rank" + (n == 1 ? "" : "s");
}

int run_diff(const DiffArgs& args, const Io& io) {
  auto diff_failed = [&io](const Status& s) { return print_failure(*io.err, "profile-train diff", s); };
  std::set<std::string> formats;
  for (const auto& f : args.formats) {
    if (f != "text" && f != "json" && f != "html")
      return diff_failed(InvalidArgument("--format: unknown format '" + f + "' (expected text, json, html)"));
    formats.insert(f);
  }
  if (formats.empty()) {
    formats.insert("text");
    if (!args.out_dir.empty()) formats.insert({"json", "html"});
  }
  if ((formats.count("json") || formats.count("html")) && args.out_dir.empty())
    return diff_failed(InvalidArgument("--format json/html needs --out DIR"));
  auto a = model::load_diff_input(args.a);
  if (!a.ok()) return diff_failed(a.status());
  auto b = model::load_diff_input(args.b);
  if (!b.ok()) return diff_failed(b.status());
  std::string label_a = args.a, label_b = args.b;
  if (a->report.has_value() != b->report.has_value()) {
    single_rank_as_report(*a, label_a);
    single_rank_as_report(*b, label_b);
  }
  if (a->report.has_value() != b->report.has_value())
    return diff_failed(InvalidArgument("A (" + args.a + ") is " + describe(*a) + " and B (" + args.b + ") is " +
                                       describe(*b) + ": compare two reports or two job folders"));
  model::DiffOptions options;
  options.top = args.top;
  std::optional<model::Diff> diff;    // two reports
  std::optional<model::JobDiff> job;  // two job folders
  if (a->report) diff = analysis::diff_reports(*a->report, *b->report, label_a, label_b, options);
  else job = analysis::diff_jobs(*a->job, *b->job, label_a, label_b, options);

  // Files first (the first failure stops the writing), then the text, printed whatever happened to them.
  Status failed;
  FolderLock lock;
  if (!args.out_dir.empty() && (formats.count("json") || formats.count("html"))) {
    std::error_code ec;
    std::filesystem::create_directories(args.out_dir, ec);
    if (ec) return diff_failed(IoError(args.out_dir + ": cannot create folder (" + ec.message() + ")"));
    auto locked = lock_output_folder(args.out_dir, "diff");
    if (!locked.ok()) return diff_failed(locked.status());
    lock = std::move(*locked);
    const std::filesystem::path dir(args.out_dir);
    // Labels are the paths given: not necessarily UTF-8, replaced (U+FFFD) rather than throwing.
    if (formats.count("json"))
      failed = write_file_atomic(dir / "diff.json", (diff ? model::to_json(*diff) : model::to_json(*job))
                                                            .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                                                        "\n");
    if (failed.ok() && formats.count("html"))
      failed = diff ? report::write_diff_html(*diff, dir / "diff.html") : report::write_job_diff_html(*job, dir / "diff.html");
  }
  if (formats.count("text")) {
    report::TextOptions text;
    text.color = io.color;
    if (diff) report::write_diff_text(*diff, *io.out, text);
    else report::write_job_diff_text(*job, *io.out, text);
    if (failed.ok() && !args.out_dir.empty() && (formats.count("json") || formats.count("html")))
      *io.out << "\nwritten to " << terminal_safe(args.out_dir) << "/"
                << (formats.count("json") ? " diff.json" : "") << (formats.count("html") ? " diff.html" : "") << "\n";
  }
  if (!failed.ok()) return diff_failed(failed);
  return kExitOk;
}

}  // namespace

Runner add_diff(CLI::App& app, Io io) {
  auto args = std::make_shared<DiffArgs>();
  auto* sub = app.add_subcommand("diff", "Compare two runs or reports (before/after): step time, breakdown, "
                                         "verdict, kernels and copies that changed most; or two jobs, rank by rank");
  sub->add_option("A", args->a, "Baseline: a report.json, a run output folder containing one, or a job folder")->required();
  sub->add_option("B", args->b, "Candidate: a report.json, a run output folder containing one, or a job folder")->required();
  sub->add_option("--out", args->out_dir, "Folder for diff.json / diff.html");
  sub->add_option("--format", args->formats, "Comma-separated: text, json, html (default: text; text,json,html with --out)")
      ->delimiter(',');
  sub->add_option("--top", args->top, "Kernels listed (default 10)")->check(CLI::Range(1, 1000));
  return [args, io] { return run_diff(*args, io); };
}

}  // namespace profile_train::cli
