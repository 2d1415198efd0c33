// CaptureSession: the injection environment, the supervised launch and the capture files by rank; and the one
// function that merges the typed result into a report.
#include "profile_train/capture/capture_session.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profile_train/trace/native_reader.h"
#include "profile_train/format/protocol.h"
#include "profile_train/common/strings.h"
#include "profile_train/platform/host.h"
#include "profile_train/platform/process.h"

namespace profile_train::capture {
namespace {

namespace fs = std::filesystem;
namespace protocol = agent::protocol;

constexpr const char* kCudaInjection = "CUDA_INJECTION64_PATH";
constexpr const char* kNvtxInjection = "NVTX_INJECTION64_PATH";

// Why GPU activity may be missing, from this machine's point of view (the agent's own reason is kept too).
std::string driver_probe() {
  void* h = ::dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (!h) return "no NVIDIA driver on this machine (libcuda.so.1 not found)";
  ::dlclose(h);
  return "";
}

bool is_capture_file(const fs::path& p) {
  return p.filename().string().rfind(protocol::kCaptureFilePrefix, 0) == 0 &&
         p.extension() == protocol::kCaptureFileExtension;
}

bool is_facts_file(const fs::path& p) {
  return p.filename().string().rfind(protocol::kFactsFilePrefix, 0) == 0 &&
         p.extension() == protocol::kFactsFileExtension;
}

// RANK, else the shim's torch.distributed rank, else the rank of the process that forked it (bounded: a
// worker of a worker at most a few levels deep). -1 stays "not distributed".
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

}  // namespace

bool CaptureResult::crashed() const { return platform::is_crash_signal(signal); }

std::string CaptureResult::outcome() const {
  if (interrupted()) {
    std::string s = "the command was stopped by " + platform::signal_name(stop_signal) + " to profile-train";
    if (signal != 0) s += " (it ended by " + platform::signal_name(signal) + ")";
    else if (exit_code) s += " (it exited with code " + std::to_string(*exit_code) + ")";
    return s;
  }
  if (crashed()) return "the command crashed (" + platform::signal_name(signal) + ")";
  if (signal != 0) return "the command was killed by " + platform::signal_name(signal);
  if (exit_code) return "the command exited with code " + std::to_string(*exit_code);
  return "the command ended";
}

std::vector<std::string> CaptureSession::environment(const std::vector<std::string>& inherited) const {
  const CaptureOptions& o = options_;
  static const std::set<std::string> kOurs = {kCudaInjection,        kNvtxInjection,      protocol::kEnvOut,
                                              protocol::kEnvWarmupSteps, protocol::kEnvSteps, "PYTHONPATH",
                                              protocol::kEnvStopAfterSteps};
  std::vector<std::string> env;
  std::string old_pythonpath;
  for (const std::string& kv : inherited) {
    const std::string key = kv.substr(0, kv.find('='));
    if (key == "PYTHONPATH") old_pythonpath = kv.substr(kv.find('=') + 1);
    // --no-cupti leaves CUDA injection alone: another tool's stays in place.
    const bool keep = o.no_cupti && key == kCudaInjection;
    if (!keep && (key == kCudaInjection || key == kNvtxInjection))
      *o.notes << "profile-train run: note: replacing " << kv << " (another tool's injection)\n";
    if (kOurs.count(key) && !keep) continue;
    // --apply replaces any override the environment carries (the file is the whole configuration).
    if (!o.overrides_json.empty() && (key == protocol::kEnvOverrides || key == protocol::kEnvApply)) continue;
    env.push_back(kv);
  }
  auto var = [](const char* name, const std::string& value) { return std::string(name) + "=" + value; };
  if (!o.no_cupti) env.push_back(var(kCudaInjection, o.agent.string()));
  env.push_back(var(kNvtxInjection, o.agent.string()));
  env.push_back(var(protocol::kEnvOut, o.capture_dir.string()));
  env.push_back(var(protocol::kEnvWarmupSteps, std::to_string(o.warmup_steps)));
  env.push_back(var(protocol::kEnvSteps, std::to_string(o.steps)));
  if (o.stop_after_steps) env.push_back(var(protocol::kEnvStopAfterSteps, "1"));
  if (!o.overrides_json.empty()) env.push_back(var(protocol::kEnvOverrides, o.overrides_json));
  if (!o.shim_dir.empty()) {
    env.push_back("PYTHONPATH=" + o.shim_dir.string() + (old_pythonpath.empty() ? "" : ":" + old_pythonpath));
  } else if (!old_pythonpath.empty()) {
    env.push_back("PYTHONPATH=" + old_pythonpath);
  }
  return env;
}

namespace {

// The capture folder must take new files before the command starts: a file in its place, a full disk or no
// inodes left would otherwise show up only after the whole training run, as "NVTX was never used".
Status check_capture_dir(const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec || !fs::is_directory(dir, ec))
    return IoError("cannot use the capture folder " + dir.string() + ": " +
                   (ec ? ec.message() : std::string("it exists and is not a folder")));
  const fs::path probe = dir / (".probe-" + std::to_string(::getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) {
    const int err = errno;
    return IoError("cannot create files in the capture folder " + dir.string() + ": " + std::strerror(err));
  }
  // One block's worth: a disk with inodes but no free blocks fails here.
  const std::string block(4096, '\0');
  const bool wrote = ::write(fd, block.data(), block.size()) == static_cast<ssize_t>(block.size()) && ::fsync(fd) == 0;
  const int err = errno;
  ::close(fd);
  ::unlink(probe.c_str());
  if (!wrote) return IoError("cannot write to the capture folder " + dir.string() + ": " + std::strerror(err));
  return Status();
}

// The system's 1-minute load average (/proc/loadavg), unset when unreadable.
// User + system CPU seconds of the children waited for so far (ours and, as subreaper, the orphans we reaped).
double children_cpu_s() {
  rusage ru{};
  if (::getrusage(RUSAGE_CHILDREN, &ru) != 0) return 0;
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

}  // namespace

model::HostLoad judge_host_load(model::HostLoad load) {
  load.cpus_used = load.wall_s > 0 ? std::optional<double>(load.cpu_time_s / load.wall_s) : std::nullopt;
  if (load.cpus > 0 && load.load_1m_start && load.load_1m_end) {
    const double low = std::min(*load.load_1m_start, *load.load_1m_end);
    const double cpus = static_cast<double>(load.cpus);
    load.oversubscribed = low > cpus && low - load.cpus_used.value_or(0.0) > 0.5 * cpus;
  }
  return load;
}

namespace {

std::string fixed1(double v) {
  std::ostringstream os;
  os.setf(std::ios::fixed);
  os.precision(1);
  os << v;
  return os.str();
}

}  // namespace

StatusOr<CaptureResult> CaptureSession::run() const {
  if (Status st = check_capture_dir(options_.capture_dir); !st.ok()) return st;
  model::HostLoad load;
  load.cpus = platform::online_cpus();
  load.load_1m_start = platform::load_average_1m();
  const double cpu0 = children_cpu_s();
  const auto t0 = std::chrono::steady_clock::now();
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(options_.capture_dir, ec))  // a previous run's would mix in
    if (is_capture_file(entry.path()) || is_facts_file(entry.path())) fs::remove(entry.path(), ec);

  // Stop protocol (README "Stopping a run"): SIGINT / SIGTERM are forwarded to the command's group; what is
  // still running kill_after_s later is SIGKILLed. When the command ends, the rest of its group gets SIGTERM,
  // then SIGKILL after kill_after_s; what it left in other groups (re-parented to us) is SIGKILLed.
  platform::ProcessSpec spec;
  spec.argv = options_.command;
  spec.env = environment(platform::environment_with({}));
  spec.parent_death_signal = SIGTERM;  // a SIGKILLed profile-train does not leave the training running
  platform::StopPolicy policy;
  policy.grace_s = options_.kill_after_s;
  policy.forward_signals = true;
  policy.share_terminal = true;
  policy.end_orphans = true;
  auto done = platform::run_process(spec, policy);
  if (!done.ok()) return done.status();
  load.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  load.cpu_time_s = std::max(0.0, children_cpu_s() - cpu0);
  load.load_1m_end = platform::load_average_1m();

  CaptureResult r;
  r.host_load = judge_host_load(load);
  r.command = options_.command;
  if (done->term_signal == 0) r.exit_code = done->exit_code;
  r.signal = done->term_signal;
  r.stop_signal = done->stop_signal;
  r.leftover_processes = done->leftovers;
  r.no_cupti = options_.no_cupti;
  r.gpu_capture_note = options_.no_cupti ? "" : driver_probe();
  collect_capture_files(options_.capture_dir, r);
  return r;
}

void collect_capture_files(const fs::path& capture_dir, CaptureResult& result) {
  std::vector<trace::native::CaptureFileInfo> infos;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(capture_dir, ec)) {
    if (entry.path().extension() != protocol::kCaptureFileExtension) continue;
    auto info = trace::native::read_capture_info(entry.path());
    if (!info.ok()) {
      result.unreadable.push_back(info.status().message());
      continue;
    }
    infos.push_back(std::move(*info));
  }
  resolve_ranks(capture_dir, infos);
  std::map<int32_t, std::vector<fs::path>> by_rank;
  for (const auto& info : infos) by_rank[info.rank].push_back(info.path);
  result.ranks.clear();
  for (auto& [rank, files] : by_rank) {
    std::sort(files.begin(), files.end());
    result.ranks.push_back({rank, std::move(files)});
  }
}

void apply_capture_status(const CaptureResult& result, trace::Trace& t) {
  if (result.no_cupti) {
    t.meta.gpu_capture_status = "GPU activity was not recorded: --no-cupti was given (CUPTI left to other tools); "
                                "NVTX and Python ranges only";
    t.meta.gpu_traced = trace::TraceMeta::Traced::kNo;
    t.meta.traced = "profile-train agent with --no-cupti: NVTX and Python ranges only";
  }
  else if (!t.meta.gpu_capture_attempted && !result.gpu_capture_note.empty())
    t.meta.gpu_capture_status =
        "GPU activity was not recorded: " + result.gpu_capture_note + "; NVTX and Python ranges only";
}

void merge_capture_result(const CaptureResult& r, size_t rank_files, model::Report& report) {
  model::RunInfo& run = report.source.run.emplace();
  run.command = r.command;
  if (r.exit_code) run.exit_code = *r.exit_code;
  if (r.signal != 0) run.signal = platform::signal_name(r.signal);
  run.interrupted = r.interrupted();
  run.capture_files = static_cast<int64_t>(rank_files);
  run.leftover_processes = r.leftover_processes;
  if (r.crashed())
    run.crash = "the command crashed (" + platform::signal_name(r.signal) + "); the report covers the capture up to "
                "the crash";
  if (r.failed() || r.interrupted())
    report.data_quality.notes.push_back("run: " + r.outcome() + ": " + command_line(r.command) +
                                        "; the report covers what was captured until then");
  run.host_load = r.host_load;
  if (const auto& l = r.host_load; l && l->oversubscribed)
    report.data_quality.notes.push_back(
        "run: the machine was busy with other processes during the run: 1-minute load average " +
        fixed1(*l->load_1m_start) + " at the start and " + fixed1(*l->load_1m_end) + " at the end on " +
        std::to_string(l->cpus) + " CPUs, while the command kept " + fixed1(l->cpus_used.value_or(0.0)) +
        " CPUs busy on average (CPU time " + fixed1(l->cpu_time_s) + " s over " + fixed1(l->wall_s) +
        " s): step times are longer than on a quiet machine; measure again when it is idle");
}

}  // namespace profile_train::capture
