// `profile-train run [options] -- CMD ARGS...`: check the options, launch CMD with the capture agent injected
// (CaptureSession), analyze the capture of each rank and report, with the command's outcome in the report.
//
// Exit codes: 0 ok; 2 bad usage, bad --rules, unwritable --out, command not found, nothing captured (the
// command never used NVTX, CUDA or the Python shim); 4 the wrapped command failed (non-zero exit or killed by
// a signal; the report is still written from the partial capture); 130 / 143 stopped by SIGINT / SIGTERM (the
// command was stopped, the report written); 1 internal error (e.g. the agent library is missing).
// Every option is checked before the command is launched.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/capture/capture_session.h"
#include "profile_train/analysis/job.h"
#include "commands.h"
#include "job_summary.h"
#include "pipeline.h"
#include "profile_train/trace/native_reader.h"
#include "profile_train/common/folder_lock.h"
#include "profile_train/common/knobs.h"
#include "profile_train/common/status.h"
#include "profile_train/common/strings.h"
#include "profile_train/common/terminal.h"
#include "profile_train/platform/process.h"
#include "profile_train/rules/engine.h"

namespace profile_train::cli {
namespace {

namespace fs = std::filesystem;
using capture::apply_capture_status;
using capture::CaptureOptions;
using capture::CaptureResult;
using capture::CaptureSession;
using capture::merge_capture_result;
using capture::RankCapture;

struct RunOptions {
  std::string out_dir = "profile-train-out";
  int64_t warmup_steps = 0;
  int64_t steps = 0;
  bool no_python = false;
  bool stop_after_steps = false;  // end the program once --steps are recorded (Python shim: SystemExit(0))
  bool no_cupti = false;
  std::vector<std::string> rules_dirs;
  std::string gpu_spec;  // --gpu-spec FILE: extra GPU peak-table entries
  std::string perfetto;
  bool all_steps = false;
  std::string device;  // --device NAME
  bool quiet = false;
  std::vector<std::string> command;
  double kill_after_s = 10;    // grace between a stop signal (or the command's end) and SIGKILL of what is left
  bool validate_only = false;  // check the options and the command, launch nothing (used by `tune`)
  std::string apply;           // --apply FILE: the shim's overrides (tune's apply.json)
  std::string overrides_json;  // FILE's overrides, checked (validate_run)
  // Read once by validate_run, used for every rank's report.
  std::shared_ptr<const rules::RuleSet> rules;
  std::shared_ptr<const std::vector<analysis::GpuSpec>> gpu_specs;  // null without --gpu-spec
};

Status check_writable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create output directory " + dir.string() + ": " + ec.message());
  const fs::path probe = dir / ".profile-train-write-probe";
  (void)::unlink(probe.c_str());  // never opened through a planted symlink (see check_writable_dir)
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return IoError("output directory " + dir.string() + " is not writable: " + std::strerror(errno));
  ::close(fd);
  fs::remove(probe, ec);
  return Status::Ok();
}

fs::path exe_dir() {
  std::error_code ec;
  fs::path p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? fs::current_path() : p.parent_path();
}

fs::path find_shim_dir() {
  const fs::path next_to = exe_dir() / "profile_train_python";
  std::error_code ec;
  if (fs::exists(next_to / "sitecustomize.py", ec)) return next_to;
#ifdef PT_AGENT_PYTHON_SRC
  const fs::path src = PT_AGENT_PYTHON_SRC;
  if (fs::exists(src / "sitecustomize.py", ec)) return src;
#endif
  return {};
}

// One line per rank on stdout: the verdict and the headline figures (how the command ended is said once, in the
// line above them).
std::string summary_line(const std::string& who, const model::Report& report) {
  std::ostringstream s;
  s << who << ": verdict " << name_of(report.verdict.bottleneck) << ", " << report.steps.count << " steps";
  if (report.steps.mean_ms) s << ", mean step " << *report.steps.mean_ms << " ms";
  if (!report.recommendations.empty()) s << ", first fix: " << report.recommendations.front().id;
  return s.str();
}

// Everything that can be wrong with the options, checked before anything is launched: a typo must not cost
// a training run. The status's exit code is the one `run` ends with (2 for what the user can fix, 1 when the
// agent is missing from the build).
Status validate_run(RunOptions& o, const fs::path& out, const fs::path& agent) {
  auto fail = [](const Status& st, int rc) {
    if (st.exit_code() == rc) return st;
    return rc == kExitBadInput ? InvalidArgument(st.message()) : Internal(st.message());
  };
  if (o.command.empty())
    return fail(InvalidArgument("no command given (usage: profile-train run [options] -- CMD ARGS...)"), kExitBadInput);
  if (!(o.kill_after_s >= 0)) return fail(InvalidArgument("--kill-after must be >= 0 seconds"), kExitBadInput);
  if (o.stop_after_steps && o.steps <= 0)
    return fail(InvalidArgument("--stop-after-steps needs --steps N (the window after which the program ends)"),
                kExitBadInput);
  if (o.stop_after_steps && o.no_python)
    return fail(InvalidArgument("--stop-after-steps ends Python programs through the shim; it cannot be combined "
                                "with --no-python"),
                kExitBadInput);
  if (!o.apply.empty()) {
    if (o.no_python)
      return fail(InvalidArgument("--apply needs the Python shim; it cannot be combined with --no-python"), kExitBadInput);
    std::ifstream in(o.apply);
    if (!in) return fail(IoError("--apply " + o.apply + ": cannot read the file"), kExitBadInput);
    std::ostringstream text;
    text << in.rdbuf();
    auto ov = parse_overrides_document(text.str());
    if (!ov.ok()) return fail(InvalidArgument("--apply " + o.apply + ": " + ov.status().message()), kExitBadInput);
    if (ov->empty()) return fail(InvalidArgument("--apply " + o.apply + ": no override in the file"), kExitBadInput);
    o.overrides_json = ov->dump();
  }
  if (Status st = check_writable(out); !st.ok()) return fail(st, kExitBadInput);
  std::vector<fs::path> rules_dirs(o.rules_dirs.begin(), o.rules_dirs.end());
  auto rules = rules::load_rules(rules_dirs);
  if (!rules.ok()) return fail(rules.status(), rules.status().exit_code());
  o.rules = std::move(*rules);
  if (!o.gpu_spec.empty()) {
    auto specs = analysis::load_gpu_spec_file(o.gpu_spec);
    if (!specs.ok()) return fail(InvalidArgument("--gpu-spec: " + specs.status().message()), kExitBadInput);
    o.gpu_specs = std::make_shared<const std::vector<analysis::GpuSpec>>(std::move(*specs));
  }
  if (!o.perfetto.empty()) {
    const fs::path parent = fs::absolute(o.perfetto).parent_path();
    if (Status st = check_writable_dir(parent); !st.ok())
      return fail(IoError("--perfetto " + o.perfetto + ": " + st.message()), kExitBadInput);
  }
  {
    OutputOptions paths;
    paths.out_dir = out;
    if (!o.perfetto.empty()) paths.perfetto = fs::path(o.perfetto);
    if (Status st = check_perfetto_path(paths, {}); !st.ok()) return fail(st, st.exit_code());
  }
  std::error_code ec;
  if (!fs::exists(agent, ec))
    return fail(Internal("the capture agent " + agent.string() + " is missing (build the profile_train_agent target)"),
                kExitFailure);
  if (auto exe = platform::find_program(o.command[0]); !exe.ok()) return fail(exe.status(), kExitBadInput);
  return Status::Ok();
}

// What the capture session needs from `run`'s options (the shim's folder looked up next to the binary).
CaptureOptions capture_options(const Io& io, const RunOptions& o, const fs::path& out, const fs::path& agent) {
  CaptureOptions capture;
  capture.command = o.command;
  capture.capture_dir = out / "capture";
  capture.agent = agent;
  capture.shim_dir = o.no_python ? fs::path() : find_shim_dir();
  if (!o.no_python && capture.shim_dir.empty())
    *io.err << "profile-train run: warning: the Python shim was not found; only NVTX ranges are recorded\n";
  capture.warmup_steps = o.warmup_steps;
  capture.steps = o.steps;
  capture.stop_after_steps = o.stop_after_steps;
  capture.no_cupti = o.no_cupti;
  capture.kill_after_s = o.kill_after_s;
  capture.overrides_json = o.overrides_json;
  capture.notes = io.err;
  return capture;
}

// How the command ended, said before the reports: processes it left running, a killing signal, an exit code.
void print_capture_outcome(std::ostream& err, const CaptureResult& cr) {
  if (cr.leftover_processes > 0)
    err << "profile-train run: stopped " << cr.leftover_processes << " process"
              << (cr.leftover_processes == 1 ? "" : "es") << " that the command left running\n";
  if (cr.signal)
    err << "profile-train run: the command was killed by " << platform::signal_name(cr.signal)
              << (cr.signal == SIGSEGV || cr.signal == SIGBUS || cr.signal == SIGABRT ? " (crash)" : "")
              << "; analyzing the partial capture\n";
  else if (cr.exit_code && *cr.exit_code != 0)
    err << "profile-train run: the command exited with code " << *cr.exit_code << "\n";
}

// One rank's output options: its folder (rankN/ when the job has several) and its --perfetto file.
OutputOptions rank_output_options(const Io& io, const RunOptions& o, const fs::path& out, const RankCapture& rank,
                                  bool ranked) {
  OutputOptions opts;
  opts.io = io;
  opts.out_dir = ranked ? out / ("rank" + std::to_string(rank.rank)) : out;
  for (const auto& r : o.rules_dirs) opts.rules_dirs.emplace_back(r);
  opts.rules = o.rules;  // loaded once by validate_run
  if (!o.perfetto.empty()) {
    fs::path pf = o.perfetto;
    if (ranked)
      pf.replace_filename(pf.stem().string() + ".rank" + std::to_string(rank.rank) + pf.extension().string());
    opts.perfetto = pf;
  }
  opts.quiet = o.quiet;
  opts.all_steps = o.all_steps;
  opts.gpu_specs = o.gpu_specs;  // read once by validate_run
  if (!o.device.empty()) opts.device_name = o.device;
  return opts;
}

int run_command(RunOptions& o, const Io& io) {
  std::ostream& err = *io.err;
  // fs::absolute("") throws; an empty --out is bad usage, as for `analyze`.
  if (o.out_dir.empty()) {
    err << "profile-train run: --out: empty folder name (nothing was launched)\n";
    return kExitBadInput;
  }
  const fs::path out = fs::absolute(o.out_dir);
  const fs::path agent = exe_dir() / "libprofile_train_agent.so";
  if (Status st = validate_run(o, out, agent); !st.ok()) {
    err << "profile-train run: " << terminal_safe(st.message()) << " (nothing was launched)\n";
    return st.exit_code();
  }
  if (o.validate_only) return kExitOk;
  // Held until the report is written: a second run into the same --out would share capture/.
  auto lock = lock_output_folder(out, "run");
  if (!lock.ok()) {
    err << "profile-train run: " << terminal_safe(lock.status().message()) << " (nothing was launched)\n";
    return lock.status().exit_code();
  }
  const CaptureOptions capture = capture_options(io, o, out, agent);
  auto session = CaptureSession(capture).run();
  if (!session.ok()) {
    // The capture folder is checked and the command started before anything runs: nothing was launched.
    err << "profile-train run: " << terminal_safe(session.status().message()) << " (nothing was launched)\n";
    return kExitBadInput;
  }
  const CaptureResult& cr = *session;
  const int stop_rc = exit_code_for_stop_signal(cr.stop_signal);
  print_capture_outcome(err, cr);
  for (const auto& u : cr.unreadable) err << "profile-train run: skipped " << u << "\n";
  if (cr.ranks.empty()) {
    err << "profile-train run: the capture agent never attached: no capture file in "
              << capture.capture_dir.string()
              << ". NVTX was never used by the command (is it a PyTorch program? was --no-python given to a "
                 "program without NVTX ranges?)\n";
    // Nothing to analyze is the input's problem (not a PyTorch/NVTX/CUDA program), not an internal error.
    return cr.interrupted() ? stop_rc : cr.failed() ? kExitChildFailed : kExitBadInput;
  }
  const bool ranked = cr.ranks.size() > 1;
  int report_rc = kExitOk;
  std::vector<std::string> summaries;
  std::vector<model::RankFacts> rank_facts;
  for (const RankCapture& rank : cr.ranks) {
    auto tr = trace::native::load_captures(rank.files);
    const std::string who = rank.rank >= 0 ? "rank " + std::to_string(rank.rank) : "run";
    if (!tr.ok()) {
      err << "profile-train run: " << who << ": " << tr.status().message() << "\n";
      report_rc = std::max(report_rc, static_cast<int>(tr.status().exit_code()));
      continue;
    }
    trace::Trace& t = *tr;
    apply_capture_status(cr, t);
    OutputOptions opts = rank_output_options(io, o, out, rank, ranked);
    // The command and how it ended are part of the report before report.json, report.html and the summary.
    opts.complete_report = [&](model::Report& report) { merge_capture_result(cr, rank.files.size(), report); };
    if (!t.meta.gpu_capture_attempted) *io.out << who << ": " << t.meta.gpu_capture_status << "\n";
    std::optional<model::Report> report;
    const int rc = report_trace(t, opts, &report);
    if (rc != kExitOk) report_rc = std::max(report_rc, rc);
    if (report) {
      summaries.push_back(summary_line(who, *report));
      if (ranked) rank_facts.push_back(analysis::rank_facts((opts.out_dir / "report.json").string(), std::move(*report)));
    }
  }
  if (ranked || !summaries.empty()) {
    // Named with the command and how it ended: with --quiet this is all that reaches the terminal.
    *io.out << "profile-train run: " << cr.ranks.size() << (ranked ? " traces (one per rank)" : " trace") << " in "
              << terminal_safe(out.string()) << " from " << terminal_safe(command_line(cr.command)) << " ("
              << terminal_safe(cr.outcome()) << ")\n";
    for (const auto& s : summaries) *io.out << "  " << terminal_safe(s) << "\n";
  }
  // The ranks of one job (torchrun, or a launcher of its own): job.json and summary.html beside the rank folders.
  if (analysis::is_one_job(rank_facts))
    report_rc = std::max(report_rc, report_job(io, rank_facts, out, /*write_json=*/true, /*write_html=*/true, o.quiet));
  if (cr.interrupted()) return stop_rc;
  if (cr.failed()) return kExitChildFailed;
  return report_rc;
}

// `run`'s options, registered on `app` into `opts` (the command line of `run` and validate_run_args).
CLI::App* add_run_options(CLI::App& app, const std::shared_ptr<RunOptions>& opts) {
  auto* sub = app.add_subcommand("run", "Run a training command with the capture agent, then analyze and report");
  sub->add_option("--out", opts->out_dir, "Output directory (report.json, report.html, capture/)");
  sub->add_option("--warmup-steps", opts->warmup_steps, "Steps to run before recording")->check(non_negative());
  sub->add_option("--steps", opts->steps, "Steps to record after the warmup (0: all)")->check(non_negative());
  sub->add_flag("--no-python", opts->no_python, "Do not inject the Python shim (NVTX/CUDA capture only)");
  sub->add_flag("--stop-after-steps", opts->stop_after_steps,
                "End a Python program cleanly (SystemExit(0) at the next step boundary) once --warmup-steps + "
                "--steps are recorded");
  sub->add_flag("--no-cupti", opts->no_cupti,
                "Do not inject CUDA/CUPTI capture (NVTX and Python ranges only): for runs that use torch.profiler, "
                "Nsight or another CUPTI client themselves");
  sub->add_option("--rules", opts->rules_dirs, "Extra rules directory (added / overriding rules)");
  sub->add_option("--gpu-spec", opts->gpu_spec,
                  "GPU peak table entries (data/gpu_specs.json's format) matched before the built-in ones");
  sub->add_option("--perfetto", opts->perfetto, "Also write the timeline as Chrome-trace JSON to FILE");
  sub->add_option("--device", opts->device,
                  "GPU model for the report when the capture does not record it (device.name)");
  sub->add_flag("--all-steps", opts->all_steps,
                "List every step in report.json steps.per_step (default: the first, last and slowest 50)");
  sub->add_flag("--quiet,-q", opts->quiet, "Print only the summary lines");
  sub->add_option("--kill-after", opts->kill_after_s,
                  "Seconds the command gets to stop after SIGINT/SIGTERM (forwarded to its process group) before "
                  "what is left of it is SIGKILLed; also the grace for processes it leaves running (default 10)");
  sub->add_flag("--validate-only", opts->validate_only, "Check the options and the command, launch nothing")
      ->group("");  // for `tune`, which checks its --run-arg options this way before its first trial
  sub->add_option("--apply", opts->apply,
                  "Run the Python program with the knob overrides in FILE (tune's apply.json, or a JSON object "
                  "override key -> value); facts.overrides_applied / overrides_failed in the report say what took "
                  "effect. Launchers that take no wrapper: set PROFILE_TRAIN_APPLY=FILE in the environment instead");
  sub->add_option("command", opts->command, "The command to run (after --)")->expected(-1);
  return sub;
}

// The wrapped command: the arguments after `--` (main() splits them off), or InvalidArgument when others came
// before it.
Status take_command(RunOptions& o, const std::vector<std::string>& after_dashes) {
  if (after_dashes.empty()) return Status::Ok();
  if (!o.command.empty())
    return InvalidArgument("unexpected argument '" + o.command[0] + "' before --: the command goes after --");
  o.command = after_dashes;
  return Status::Ok();
}

}  // namespace

Status validate_run_args(const std::vector<std::string>& args) {
  std::vector<std::string> options = args, command;
  if (auto dashes = std::find(options.begin(), options.end(), "--"); dashes != options.end()) {
    command.assign(dashes + 1, options.end());
    options.erase(dashes, options.end());
  }
  auto opts = std::make_shared<RunOptions>();
  CLI::App app;
  add_run_options(app, opts);
  options.insert(options.begin(), "run");
  std::reverse(options.begin(), options.end());  // CLI11 takes the arguments last first
  try {
    app.parse(options);
  } catch (const CLI::ParseError& e) {
    return InvalidArgument(e.what());
  }
  if (Status st = take_command(*opts, command); !st.ok()) return st;
  if (opts->out_dir.empty()) return InvalidArgument("--out: empty folder name");
  return validate_run(*opts, fs::absolute(opts->out_dir), exe_dir() / "libprofile_train_agent.so");
}

Runner add_run(CLI::App& app, std::vector<std::string> command, Io io) {
  auto opts = std::make_shared<RunOptions>();
  auto* sub = add_run_options(app, opts);
  auto after_dashes = std::make_shared<std::vector<std::string>>(std::move(command));
  sub->footer("Exit codes: 0 ok, 2 bad usage / bad rules / unwritable --out / command not found / nothing captured, "
              "4 the command failed (report still written), 130 / 143 stopped by SIGINT / SIGTERM (report written), "
              "1 internal error.");
  return [opts, after_dashes, io] {
    if (Status st = take_command(*opts, *after_dashes); !st.ok()) {
      *io.err << "profile-train run: " << terminal_safe(st.message()) << "\n";
      return st.exit_code();
    }
    return run_command(*opts, io);
  };
}

}  // namespace profile_train::cli
