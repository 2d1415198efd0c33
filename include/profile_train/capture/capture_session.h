// One captured run of a command (`profile-train run`): the injection environment, the launch under the stop
// protocol (platform::run_process), and the capture files grouped by rank, returned as a typed CaptureResult
// that is merged into each rank's report before anything is written (merge_capture_result).
#pragma once

#include <cstdint>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "profile_train/model/report.h"
#include "profile_train/common/status.h"
#include "profile_train/trace/model.h"

namespace profile_train::capture {

struct CaptureOptions {
  std::vector<std::string> command;
  std::filesystem::path capture_dir;  // OUT/capture: the agent's and the shim's files
  std::filesystem::path agent;        // libprofile_train_agent.so
  std::filesystem::path shim_dir;     // folder of the Python shim's sitecustomize.py; empty: no shim
  int64_t warmup_steps = 0;
  int64_t steps = 0;                  // 0: no limit
  bool stop_after_steps = false;      // the shim ends the program once the window is recorded
  bool no_cupti = false;              // leave CUDA injection (CUPTI) to another tool
  double kill_after_s = 10;           // grace between a stop (or the command's end) and SIGKILL of what is left
  std::string overrides_json;         // --apply: PROFILE_TRAIN_OVERRIDES for the shim ("": the environment's own)
  std::ostream* notes = &std::cerr;   // one line per injection of another tool that the capture replaces
};

// The capture files of one rank (-1: not distributed), sorted by path.
struct RankCapture {
  int32_t rank = -1;
  std::vector<std::filesystem::path> files;
};

struct CaptureResult {
  std::vector<std::string> command;
  std::optional<int> exit_code;  // when the command exited (not when a signal ended it)
  int signal = 0;                // the signal that ended it; 0 when it exited
  int stop_signal = 0;           // SIGINT / SIGTERM that stopped profile-train (forwarded to the command)
  int leftover_processes = 0;    // processes the command left running, stopped by us
  std::vector<RankCapture> ranks;
  std::vector<std::string> unreadable;  // capture files skipped, each with the reason
  // Why GPU activity may be missing, for the reports: --no-cupti, or this machine has no NVIDIA driver
  // ("" when neither; the agent's own reason, per file, is kept in the trace).
  std::string gpu_capture_note;
  bool no_cupti = false;
  // The machine's load and the command's CPU time against its wall time (report.json source.host_load).
  std::optional<model::HostLoad> host_load;

  bool interrupted() const { return stop_signal != 0; }
  bool crashed() const;
  bool failed() const { return signal != 0 || (exit_code && *exit_code != 0); }
  // "the command exited with code 3", "the command crashed (SIGSEGV)", "the command was stopped (SIGINT)", ...
  std::string outcome() const;
};

// `load` with cpus_used and oversubscribed filled in from its samples: oversubscribed when both load samples
// exceed the CPUs online and, less the CPUs the command itself kept busy, still exceed half of them (other
// processes competed for the CPU during the run).
model::HostLoad judge_host_load(model::HostLoad load);

class CaptureSession {
 public:
  explicit CaptureSession(CaptureOptions options) : options_(std::move(options)) {}

  // The command's environment from `inherited` ("KEY=VALUE"): the agent injected for CUDA (unless no_cupti)
  // and NVTX, the capture folder and window, the shim first on PYTHONPATH. Another tool's injection is
  // replaced, with a note on stderr.
  std::vector<std::string> environment(const std::vector<std::string>& inherited) const;

  // Removes a previous run's capture files, runs the command to its end (README "Stopping a run") and groups
  // what was captured by rank. A Status only when nothing was started (command not found: kNotFound).
  StatusOr<CaptureResult> run() const;

 private:
  CaptureOptions options_;
};

// The capture files in `capture_dir`, grouped by rank: RANK from the environment the agent saw at start-up;
// else the rank torch.distributed gave the process (the shim's facts-<pid>.json); else, for a process forked
// from another captured one (a DataLoader worker), its parent's. Fills result.ranks and result.unreadable.
void collect_capture_files(const std::filesystem::path& capture_dir, CaptureResult& result);

// GPU capture status of one rank's trace: why GPU activity is missing, when the result knows better.
void apply_capture_status(const CaptureResult& result, trace::Trace& trace);

// Merges the result into one rank's report before anything is written: source.run (report.json's `source`
// keys command, exit_code, signal, interrupted, capture_files, leftover_processes, crash), and a data_quality
// note naming the command and its outcome when it did not end normally. `rank_files`: the number of capture
// files of that rank.
void merge_capture_result(const CaptureResult& result, size_t rank_files, model::Report& report);

}  // namespace profile_train::capture
