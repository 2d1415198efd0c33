// `profile-train tune`, parsing: the command's options (TuneArgs) -> what the sweep runs (TuneSetup), and the
// checks made before the first trial. Owner: CLI.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "profile_train/common/status.h"
#include "profile_train/tuner/process_runner.h"
#include "profile_train/tuner/ray_runner.h"
#include "profile_train/tuner/tuner.h"

namespace profile_train::cli {

// The options of `tune` as given on the command line (defaults as --help shows them).
struct TuneArgs {
  std::string strategy = "guided";
  std::vector<std::string> knobs;
  int max_trials = 0;
  double time_budget_s = 0;
  double trial_timeout_s = 900;
  int repeats = 2;
  int baseline_repeats = 3;
  int confirm_repeats = 3;
  bool allow_quality_change = false;
  double min_gain = 0.02;
  std::string max_memory;
  std::string out = "profile-train-tune";
  std::string workload;
  std::string workload_binary;  // default: profile-train-workload next to this binary
  std::vector<std::string> run_args;
  std::vector<std::string> command;
  bool quiet = false;
  // Where the trials run: `local` (one after the other on this machine) or `ray` (one Ray job each).
  std::string executor = "local";
  std::string ray_address;        // else RAY_ADDRESS
  int parallel = 1;               // ray: jobs in flight
  double trial_gpus = -1;         // ray: entrypoint_num_gpus (-1: 1 on a CUDA run, 0 with --device cpu)
  double trial_cpus = 1;          // ray: entrypoint_num_cpus
  double ray_pending_timeout_s = 600;
  bool ray_no_resource_check = false;
  std::string ray_runtime_env;    // ray: runtime_env JSON (working_dir, container, ...)
};

// What the sweep runs: the knob space, the session's options and where the trials run.
struct TuneSetup {
  tuner::KnobSpace space;
  tuner::TuneOptions options;
  tuner::ProcessRunnerOptions runner;
  std::filesystem::path out;
  bool quiet = false;
  bool ray = false;               // --executor ray
  std::string ray_address;
  tuner::RayRunnerOptions ray_options;  // .process is filled from `runner` when the runner is made
};

// The setup for `a` (workload_flags: the arguments after --workload MODEL); `interrupted` is the flag the
// signal handlers set. InvalidArgument / NotFound name the option at fault.
StatusOr<TuneSetup> make_setup(const TuneArgs& a, const std::vector<std::string>& workload_flags,
                               const std::atomic<bool>* interrupted);

// Everything a trial would trip over, checked before the first one (a typo must not cost a sweep): the output
// folder, the command, and `run` with the --run-arg options on the baseline's command line, checked in this
// process as `run` checks it before a launch (validate_run_args: rules, --perfetto, its own options).
Status validate_before_trials(const TuneSetup& s);

// The raw arguments after `--workload MODEL` (CLI11 splits unknown flags from their values, so the order is
// recovered from /proc/self/cmdline). Tune's own options must come before --workload.
StatusOr<std::vector<std::string>> workload_tail();

}  // namespace profile_train::cli
