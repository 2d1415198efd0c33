// `profile-train run [options] -- CMD ARGS...`: launch CMD with the capture agent injected, wait, merge the
// per-process capture files per rank, analyze and report.
//
// Exit codes: 0 ok; 2 bad usage, bad --rules, unwritable --out, command not found, nothing captured (the
// command never used NVTX, CUDA or the Python shim); 4 the wrapped command failed (non-zero exit or killed by
// a signal; the report is still written from the partial capture); 130 / 143 stopped by SIGINT / SIGTERM (the
// command was stopped, the report written); 1 internal error (e.g. the agent library is missing).
// Every option is checked before the command is launched.
#include <dlfcn.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "job_summary.h"
#include "pipeline.h"
#include "profile_train/agent/native_reader.h"
#include "profile_train/agent/protocol.h"
#include "profile_train/common/folder_lock.h"
#include "profile_train/common/status.h"
#include "profile_train/common/terminal.h"
#include "profile_train/platform/process.h"
#include "profile_train/rules/engine.h"

extern char** environ;

namespace profile_train::cli {
namespace {

namespace fs = std::filesystem;
namespace protocol = agent::protocol;

struct RunOptions {
  std::string out_dir = "profile-train-out";
  int64_t warmup_steps = 0;
  int64_t steps = 0;
  bool no_python = false;
  bool stop_after_steps = false;  // end the program once --steps are recorded (Python shim: SystemExit(0))
  bool no_cupti = false;
  std::vector<std::string> rules_dirs;
  std::string perfetto;
  bool all_steps = false;
  bool quiet = false;
  std::vector<std::string> command;
  double kill_after_s = 10;    // grace between a stop signal (or the command's end) and SIGKILL of what is left
  bool validate_only = false;  // check the options and the command, launch nothing (used by `tune`)
};

Status check_writable(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return IoError("cannot create output directory " + dir.string() + ": " + ec.message());
  const fs::path probe = dir / ".profile-train-write-probe";
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
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

// Why GPU activity may be missing, from this machine's point of view (the agent's own reason is kept too).
std::string driver_probe() {
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return "no NVIDIA driver on this machine (libcuda.so.1 not found)";
  ::dlclose(h);
  return "";
}

struct ChildResult {
  int exit_code = -1;  // when exited
  int signal = 0;      // when killed
  int leftovers = 0;   // processes of the command still running after it ended, stopped by us
};

std::vector<std::string> build_env(const RunOptions& o, const fs::path& agent, const fs::path& capture,
                                   const fs::path& shim) {
  static const std::set<std::string> kOurs = {"CUDA_INJECTION64_PATH",       "NVTX_INJECTION64_PATH",
                                              protocol::kEnvOut,             protocol::kEnvWarmupSteps,
                                              protocol::kEnvSteps,           "PYTHONPATH",
                                              protocol::kEnvStopAfterSteps};
  std::vector<std::string> env;
  std::string old_pythonpath;
  for (char** e = environ; e && *e; ++e) {
    std::string kv = *e;
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "PYTHONPATH") old_pythonpath = kv.substr(kv.find('=') + 1);
    // --no-cupti leaves CUDA injection alone: another tool's stays in place.
    const bool keep = o.no_cupti && key == "CUDA_INJECTION64_PATH";
    if (!keep && (key == "CUDA_INJECTION64_PATH" || key == "NVTX_INJECTION64_PATH"))
      std::cerr << "profile-train run: note: replacing " << kv << " (another tool's injection)\n";
    if (kOurs.count(key) && !keep) continue;
    env.push_back(std::move(kv));
  }
  if (!o.no_cupti) env.push_back("CUDA_INJECTION64_PATH=" + agent.string());
  env.push_back("NVTX_INJECTION64_PATH=" + agent.string());
  auto var = [](const char* name, const std::string& value) { return std::string(name) + "=" + value; };
  env.push_back(var(protocol::kEnvOut, capture.string()));
  env.push_back(var(protocol::kEnvWarmupSteps, std::to_string(o.warmup_steps)));
  env.push_back(var(protocol::kEnvSteps, std::to_string(o.steps)));
  if (o.stop_after_steps) env.push_back(var(protocol::kEnvStopAfterSteps, "1"));
  if (!o.no_python && !shim.empty()) {
    env.push_back("PYTHONPATH=" + shim.string() + (old_pythonpath.empty() ? "" : ":" + old_pythonpath));
  } else if (!old_pythonpath.empty()) {
    env.push_back("PYTHONPATH=" + old_pythonpath);
  }
  return env;
}

// Adds run-specific keys to a written report.json (additive keys of REPORT_FORMAT.md `source`).
Status annotate_report(const fs::path& report_path, const nlohmann::json& extra, nlohmann::json* report) {
  std::ifstream in(report_path);
  if (!in) return Status::Ok();
  std::stringstream ss;
  ss << in.rdbuf();
  auto j = nlohmann::json::parse(ss.str(), nullptr, false);
  if (!j.is_object()) return Status::Ok();
  auto& src = j["source"];
  if (!src.is_object()) src = nlohmann::json::object();
  for (auto it = extra.begin(); it != extra.end(); ++it) src[it.key()] = it.value();
  // The command's arguments need not be UTF-8; the previous report.json stays intact if this write fails.
  Status written = write_report_json(report_path, j);
  if (report) *report = std::move(j);
  return written;
}

// The rank of each capture file: RANK from the environment the agent saw at start-up; else the rank
// torch.distributed gave the process (the shim's facts-<pid>.json: launchers other than torchrun, such as
// Lightning's own DDP launcher or mp.spawn, set RANK late or not at all); else, for a process forked from
// another captured one (a DataLoader worker), its parent's rank. -1 stays "not distributed".
void resolve_ranks(const fs::path& capture, std::vector<trace::native::CaptureFileInfo>& infos) {
  for (auto& info : infos) {
    if (info.rank >= 0) continue;
    std::ifstream in(capture / (std::string(protocol::kFactsFilePrefix) + std::to_string(info.pid) +
                                std::string(protocol::kFactsFileExtension)));
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    const auto j = nlohmann::json::parse(ss.str(), nullptr, false);
    if (!j.is_object() || !j.contains("distributed") || !j["distributed"].is_object()) continue;
    const auto& d = j["distributed"];
    if (d.contains("rank") && d["rank"].is_number_integer() && d["rank"].get<int64_t>() >= 0)
      info.rank = static_cast<int32_t>(d["rank"].get<int64_t>());
  }
  std::map<int64_t, int32_t> rank_of_pid;
  for (const auto& info : infos) rank_of_pid[info.pid] = info.rank;
  for (auto& info : infos) {
    // Follow the fork chain up (bounded: a worker of a worker at most a few levels deep).
    int64_t parent = info.ppid;
    for (int hops = 0; info.rank < 0 && info.fork_child && hops < 8; ++hops) {
      const auto it = rank_of_pid.find(parent);
      if (it == rank_of_pid.end()) break;
      if (it->second >= 0) info.rank = it->second;
      const auto up = std::find_if(infos.begin(), infos.end(), [&](const auto& o) { return o.pid == parent; });
      if (up == infos.end() || !up->fork_child) break;
      parent = up->ppid;
    }
  }
}

std::string summary_line(const std::string& who, const nlohmann::json& report) {
  std::ostringstream s;
  s << who << ": ";
  const auto v = report.value("/verdict/bottleneck"_json_pointer, nlohmann::json());
  s << "verdict " << (v.is_string() ? v.get<std::string>() : "?");
  const auto steps = report.value("/steps/count"_json_pointer, nlohmann::json());
  const auto mean = report.value("/steps/mean_ms"_json_pointer, nlohmann::json());
  if (steps.is_number()) s << ", " << steps.get<int64_t>() << " steps";
  if (mean.is_number()) s << ", mean step " << mean.get<double>() << " ms";
  const auto recs = report.find("recommendations");
  if (recs != report.end() && recs->is_array() && !recs->empty() && (*recs)[0].contains("id"))
    s << ", first fix: " << (*recs)[0]["id"].get<std::string>();
  return s.str();
}

// Everything that can be wrong with the options, checked before anything is launched: a typo must not cost
// a training run. Prints one line and returns the exit code, or kExitOk.
int validate_before_launch(const RunOptions& o, const fs::path& out, const fs::path& agent) {
  auto fail = [](const Status& st, int rc) {
    std::cerr << "profile-train run: " << terminal_safe(st.message()) << " (nothing was launched)\n";
    return rc;
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
  if (Status st = check_writable(out); !st.ok()) return fail(st, kExitBadInput);
  std::vector<fs::path> rules_dirs(o.rules_dirs.begin(), o.rules_dirs.end());
  if (auto rules = rules::load_rules(rules_dirs); !rules.ok()) return fail(rules.status(), rules.status().exit_code());
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
  if (auto exe = platform::find_executable(o.command[0]); !exe.ok()) return fail(exe.status(), kExitBadInput);
  return kExitOk;
}

int run_command(const RunOptions& o) {
  const fs::path out = fs::absolute(o.out_dir);
  const fs::path agent = exe_dir() / "libprofile_train_agent.so";
  if (int rc = validate_before_launch(o, out, agent); rc != kExitOk || o.validate_only) return rc;
  // Held until the report is written: a second run into the same --out would share capture/.
  auto lock = lock_output_folder(out, "run");
  if (!lock.ok()) {
    std::cerr << "profile-train run: " << terminal_safe(lock.status().message()) << " (nothing was launched)\n";
    return lock.status().exit_code();
  }
  const fs::path capture = out / "capture";
  std::error_code ec;
  fs::create_directories(capture, ec);
  for (const auto& entry : fs::directory_iterator(capture, ec)) {  // a previous run's files would mix in
    const std::string n = entry.path().filename().string();
    const std::string ext = entry.path().extension().string();
    if ((n.rfind(protocol::kCaptureFilePrefix, 0) == 0 && ext == protocol::kCaptureFileExtension) ||
        (n.rfind(protocol::kFactsFilePrefix, 0) == 0 && ext == protocol::kFactsFileExtension))
      fs::remove(entry.path(), ec);
  }
  const fs::path shim = o.no_python ? fs::path() : find_shim_dir();
  if (!o.no_python && shim.empty())
    std::cerr << "profile-train run: warning: the Python shim was not found; only NVTX ranges are recorded\n";

  // Stop protocol (README "Stopping a run"): SIGINT / SIGTERM are forwarded to the command's group; what is
  // still running --kill-after seconds later is SIGKILLed. When the command ends, the rest of its group gets
  // SIGTERM, then SIGKILL after --kill-after; what it left in other groups (re-parented to us) is SIGKILLed.
  platform::ProcessSpec spec;
  spec.argv = o.command;
  spec.env = build_env(o, agent, capture, shim);
  spec.parent_death_signal = SIGTERM;  // a SIGKILLed profile-train does not leave the training running
  platform::StopPolicy policy;
  policy.grace_s = o.kill_after_s;
  policy.forward_signals = true;
  policy.share_terminal = true;
  policy.end_orphans = true;
  auto child = platform::run_process(spec, policy);
  if (!child.ok()) {
    std::cerr << "profile-train run: " << child.status().message() << "\n";
    return kExitBadInput;
  }
  ChildResult cr;
  cr.exit_code = child->term_signal != 0 ? -1 : child->exit_code;
  cr.signal = child->term_signal;
  cr.leftovers = child->leftovers;
  const bool interrupted = child->stop_signal != 0;
  const int stop_rc = exit_code_for_stop_signal(child->stop_signal);
  const bool failed = cr.signal != 0 || cr.exit_code != 0;
  if (cr.leftovers > 0)
    std::cerr << "profile-train run: stopped " << cr.leftovers << " process" << (cr.leftovers == 1 ? "" : "es")
              << " that the command left running\n";
  if (cr.signal)
    std::cerr << "profile-train run: the command was killed by " << platform::signal_name(cr.signal)
              << (cr.signal == SIGSEGV || cr.signal == SIGBUS || cr.signal == SIGABRT ? " (crash)" : "")
              << "; analyzing the partial capture\n";
  else if (cr.exit_code != 0)
    std::cerr << "profile-train run: the command exited with code " << cr.exit_code << "\n";

  // Capture files, grouped by rank (see resolve_ranks: RANK, else the shim's torch.distributed rank, else
  // the process that forked it).
  std::vector<trace::native::CaptureFileInfo> infos;
  std::vector<std::string> unreadable;
  for (const auto& entry : fs::directory_iterator(capture, ec)) {
    if (entry.path().extension() != protocol::kCaptureFileExtension) continue;
    auto info = trace::native::read_capture_info(entry.path());
    if (!info.ok()) {
      unreadable.push_back(info.status().message());
      continue;
    }
    infos.push_back(std::move(*info));
  }
  resolve_ranks(capture, infos);
  std::map<int32_t, std::vector<fs::path>> by_rank;
  for (const auto& info : infos) by_rank[info.rank].push_back(info.path);
  for (const auto& u : unreadable) std::cerr << "profile-train run: skipped " << u << "\n";
  if (by_rank.empty()) {
    std::cerr << "profile-train run: the capture agent never attached: no capture file in " << capture.string()
              << ". NVTX was never used by the command (is it a PyTorch program? was --no-python given to a "
                 "program without NVTX ranges?)\n";
    // Nothing to analyze is the input's problem (not a PyTorch/NVTX/CUDA program), not an internal error.
    return interrupted ? stop_rc : failed ? kExitChildFailed : kExitBadInput;
  }
  const std::string probe = driver_probe();
  nlohmann::json cmd = o.command;
  int report_rc = kExitOk;
  std::vector<std::string> summaries;
  std::vector<analysis::RankReport> rank_reports;
  for (auto& [rank, files] : by_rank) {
    std::sort(files.begin(), files.end());
    auto tr = trace::native::load_captures(files);
    const std::string who = rank >= 0 ? "rank " + std::to_string(rank) : "run";
    if (!tr.ok()) {
      std::cerr << "profile-train run: " << who << ": " << tr.status().message() << "\n";
      report_rc = std::max(report_rc, static_cast<int>(tr.status().exit_code()));
      continue;
    }
    trace::Trace& t = *tr;
    if (o.no_cupti)
      t.meta.gpu_capture_status = "GPU activity was not recorded: --no-cupti was given (CUPTI left to other tools); "
                                  "NVTX and Python ranges only";
    else if (!t.meta.gpu_capture_attempted && !probe.empty())
      t.meta.gpu_capture_status = "GPU activity was not recorded: " + probe + "; NVTX and Python ranges only";
    OutputOptions opts;
    opts.out_dir = by_rank.size() > 1 ? out / ("rank" + std::to_string(rank)) : out;
    for (const auto& r : o.rules_dirs) opts.rules_dirs.emplace_back(r);
    if (!o.perfetto.empty()) {
      fs::path pf = o.perfetto;
      if (by_rank.size() > 1) pf.replace_filename(pf.stem().string() + ".rank" + std::to_string(rank) +
                                                  pf.extension().string());
      opts.perfetto = pf;
    }
    opts.quiet = o.quiet;
    opts.all_steps = o.all_steps;
    if (!t.meta.gpu_capture_attempted) std::cout << who << ": " << t.meta.gpu_capture_status << "\n";
    nlohmann::json report;
    const int rc = report_trace(t, opts, &report);
    if (rc != kExitOk) report_rc = std::max(report_rc, rc);
    nlohmann::json extra = {{"command", cmd}, {"exit_code", cr.signal ? nlohmann::json() : nlohmann::json(cr.exit_code)},
                            {"signal", cr.signal ? nlohmann::json(platform::signal_name(cr.signal)) : nlohmann::json()},
                            {"interrupted", interrupted}, {"capture_files", files.size()},
                            {"leftover_processes", cr.leftovers}};
    if (cr.signal == SIGSEGV || cr.signal == SIGBUS || cr.signal == SIGABRT || cr.signal == SIGILL ||
        cr.signal == SIGFPE)
      extra["crash"] = "the command crashed (" + platform::signal_name(cr.signal) + "); the report covers the capture up "
                       "to the crash";
    if (Status st = annotate_report(opts.out_dir / "report.json", extra, &report); !st.ok()) {
      std::cerr << "profile-train run: " << terminal_safe(st.message()) << "\n";
      report_rc = std::max(report_rc, st.exit_code());
    }
    if (!report.is_null()) {
      summaries.push_back(summary_line(who, report));
      if (by_rank.size() > 1) rank_reports.push_back({(opts.out_dir / "report.json").string(), report});
    }
  }
  if (by_rank.size() > 1 || !summaries.empty()) {
    std::cout << "profile-train run: " << by_rank.size() << (by_rank.size() == 1 ? " trace" : " traces (one per rank)")
              << " in " << out.string() << "\n";
    for (const auto& s : summaries) std::cout << "  " << s << "\n";
  }
  // The ranks of one job (torchrun, or a launcher of its own): job.json and summary.html beside the rank folders.
  if (is_one_job(rank_reports))
    report_rc = std::max(report_rc, report_job(rank_reports, out, /*write_json=*/true, /*write_html=*/true, o.quiet));
  if (interrupted) return stop_rc;
  if (failed) return kExitChildFailed;
  return report_rc;
}

}  // namespace

Runner add_run(CLI::App& app, std::vector<std::string> command) {
  auto opts = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "Run a training command with the capture agent, then analyze and report");
  sub->add_option("--out", opts->out_dir, "Output directory (report.json, report.html, capture/)");
  sub->add_option("--warmup-steps", opts->warmup_steps, "Steps to run before recording")->check(CLI::NonNegativeNumber);
  sub->add_option("--steps", opts->steps, "Steps to record after the warmup (0: all)")->check(CLI::NonNegativeNumber);
  sub->add_flag("--no-python", opts->no_python, "Do not inject the Python shim (NVTX/CUDA capture only)");
  sub->add_flag("--stop-after-steps", opts->stop_after_steps,
                "End a Python program cleanly (SystemExit(0) at the next step boundary) once --warmup-steps + "
                "--steps are recorded");
  sub->add_flag("--no-cupti", opts->no_cupti,
                "Do not inject CUDA/CUPTI capture (NVTX and Python ranges only): for runs that use torch.profiler, "
                "Nsight or another CUPTI client themselves");
  sub->add_option("--rules", opts->rules_dirs, "Extra rules directory (added / overriding rules)");
  sub->add_option("--perfetto", opts->perfetto, "Also write the timeline as Chrome-trace JSON to FILE");
  sub->add_flag("--all-steps", opts->all_steps,
                "List every step in report.json steps.per_step (default: the first, last and slowest 50)");
  sub->add_flag("--quiet,-q", opts->quiet, "Print only the summary lines");
  sub->add_option("--kill-after", opts->kill_after_s,
                  "Seconds the command gets to stop after SIGINT/SIGTERM (forwarded to its process group) before "
                  "what is left of it is SIGKILLed; also the grace for processes it leaves running (default 10)");
  sub->add_flag("--validate-only", opts->validate_only, "Check the options and the command, launch nothing")
      ->group("");  // for `tune`, which checks its --run-arg options this way before its first trial
  sub->add_option("command", opts->command, "The command to run (after --)")->expected(-1);
  auto after_dashes = std::make_shared<std::vector<std::string>>(std::move(command));
  sub->footer("Exit codes: 0 ok, 2 bad usage / bad rules / unwritable --out / command not found / nothing captured, "
              "4 the command failed (report still written), 130 / 143 stopped by SIGINT / SIGTERM (report written), "
              "1 internal error.");
  return [opts, after_dashes] {
    if (!after_dashes->empty()) {
      if (!opts->command.empty()) {
        std::cerr << "profile-train run: unexpected argument '" << opts->command[0]
                  << "' before --: the command goes after --\n";
        return static_cast<int>(kExitBadInput);
      }
      opts->command = *after_dashes;
    }
    return run_command(*opts);
  };
}

}  // namespace profile_train::cli
