// `profile-train diff A B [--out DIR] [--format text,json,html]`: compares two reports (files or run output
// folders containing report.json). Text goes to stdout; json/html are written as DIR/diff.json, DIR/diff.html.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "commands.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/report/diff.h"

namespace profile_train::cli {
namespace {

struct DiffArgs {
  std::string a, b;
  std::string out_dir;
  std::vector<std::string> formats;
  int top = 10;
};

int fail(const Status& s) {
  std::cerr << "profile-train diff: " << s.message() << "\n";
  return s.exit_code();
}

int run_diff(const DiffArgs& args) {
  std::set<std::string> formats;
  for (const auto& f : args.formats) {
    if (f != "text" && f != "json" && f != "html")
      return fail(InvalidArgument("--format: unknown format '" + f + "' (expected text, json, html)"));
    formats.insert(f);
  }
  if (formats.empty()) {
    formats.insert("text");
    if (!args.out_dir.empty()) formats.insert({"json", "html"});
  }
  if ((formats.count("json") || formats.count("html")) && args.out_dir.empty())
    return fail(InvalidArgument("--format json/html needs --out DIR"));
  auto a = report::load_report(args.a);
  if (!a.ok()) return fail(a.status());
  auto b = report::load_report(args.b);
  if (!b.ok()) return fail(b.status());
  report::DiffOptions options;
  options.top = args.top;
  const nlohmann::json diff = report::diff_reports(*a, *b, args.a, args.b, options);

  if (!args.out_dir.empty()) {
    std::error_code ec;
    std::filesystem::create_directories(args.out_dir, ec);
    if (ec) return fail(IoError(args.out_dir + ": cannot create folder (" + ec.message() + ")"));
    const std::filesystem::path dir(args.out_dir);
    if (formats.count("json")) {
      std::ofstream out(dir / "diff.json", std::ios::binary | std::ios::trunc);
      out << diff.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
      if (!out) return fail(IoError((dir / "diff.json").string() + ": write failed"));
    }
    if (formats.count("html")) {
      if (Status s = report::write_diff_html(diff, dir / "diff.html"); !s.ok()) return fail(s);
    }
  }
  if (formats.count("text")) {
    report::TextOptions text;
    text.color = use_color(STDOUT_FILENO);
    report::write_diff_text(diff, std::cout, text);
    if (!args.out_dir.empty() && (formats.count("json") || formats.count("html")))
      std::cout << "\nwritten to " << args.out_dir << "/"
                << (formats.count("json") ? " diff.json" : "") << (formats.count("html") ? " diff.html" : "") << "\n";
  }
  return kExitOk;
}

}  // namespace

Runner add_diff(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  auto* sub = app.add_subcommand("diff", "Compare two runs or reports (before/after): step time, breakdown, "
                                         "verdict, kernels and copies that changed most");
  sub->add_option("A", args->a, "Baseline: a report.json or a run output folder containing one")->required();
  sub->add_option("B", args->b, "Candidate: a report.json or a run output folder containing one")->required();
  sub->add_option("--out", args->out_dir, "Folder for diff.json / diff.html");
  sub->add_option("--format", args->formats, "Comma-separated: text, json, html (default: text; text,json,html with --out)")
      ->delimiter(',');
  sub->add_option("--top", args->top, "Kernels listed (default 10)")->check(CLI::Range(1, 1000));
  return [args] { return run_diff(*args); };
}

}  // namespace profile_train::cli
