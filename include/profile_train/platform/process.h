// Launching, supervising and stopping a child process (shared by `run` and the tuner's trial runner). Linux only.
//
// A command is spawned in its own process group (one signal reaches it and every process it started, e.g.
// DataLoader workers), with PR_SET_PDEATHSIG so that it is signalled when the launcher dies, even by SIGKILL.
// run_process() then waits for it under a StopPolicy: a timeout, an external stop flag, or SIGINT/SIGTERM to
// the launcher (forwarded to the group) stop the group with SIGTERM and, `grace_s` later, SIGKILL. The
// launcher can make itself a child subreaper: processes the command leaves behind (a worker whose parent
// died, a daemonized grandchild) are then re-parented to the launcher instead of init, and are ended too.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <csignal>
#include <filesystem>
#include <string>
#include <vector>

#include "profile_train/common/status.h"

namespace profile_train::platform {

// The path exec would run for `name`: itself when it contains '/', else the first executable match in PATH
// (the default path when PATH is unset). NotFound ("command not found: NAME") when there is none;
// InvalidArgument when it exists but cannot be executed.
StatusOr<std::string> find_executable(const std::string& name);
// find_executable, and for a script whose `#!` interpreter is missing (or, for `#!/usr/bin/env NAME`, NAME is not
// on PATH) NotFound naming that interpreter: exec would fail with ENOENT as if the script itself were missing.
StatusOr<std::string> find_program(const std::string& name);

// This process's environment ("KEY=VALUE") with every entry of `overrides` replacing the one of the same key,
// or added after the others.
std::vector<std::string> environment_with(const std::vector<std::string>& overrides);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up with find_program
  std::vector<std::string> env;   // the whole environment, "KEY=VALUE"
  int stdin_fd = -1;              // -1: inherited
  int stdout_fd = -1;
  int stderr_fd = -1;
  int parent_death_signal = 0;    // e.g. SIGTERM; 0: none. Linux sends it when the *thread* that called
                                  // spawn_process ends: call it from a thread that lives as long as the child
};

// fork + exec, never through a shell. The child gets its own process group (pgid = pid), SIGINT/SIGTERM back
// to their default action and an empty signal mask. Returns the pid once exec has succeeded; an exec failure
// is reported as a Status (the child has been reaped), so no training was started.
StatusOr<pid_t> spawn_process(const SpawnOptions& options);

// prctl(PR_SET_CHILD_SUBREAPER) for the calling process; false where unsupported.
bool become_subreaper();

// Pids of the processes whose parent is the calling process (from /proc), excluding `except` (> 0).
std::vector<pid_t> child_pids(pid_t except = 0);

// True while a process of group `pgid` is running (zombies, which only wait to be reaped, do not count).
bool group_running(pid_t pgid);

// SIGKILLs every process that is (or becomes, as their parents die) a child of the calling process, except
// `except`, and reaps them; returns how many were still running (zombies are only reaped). With
// become_subreaper() this ends whatever a command left behind, even in other process groups or sessions.
// Gives up after about one second.
int kill_descendants(pid_t except = 0);

// What to start (run_process).
struct ProcessSpec {
  std::vector<std::string> argv;         // argv[0] is looked up with find_program
  std::vector<std::string> env;          // the whole environment, "KEY=VALUE" (see environment_with)
  std::filesystem::path log_file;        // non-empty: stdout and stderr go to this file (created, truncated)
  bool stdin_from_null = false;          // else stdin is inherited
  int parent_death_signal = SIGTERM;     // sent to the command when the launcher dies (0: none)
};

// When and how to stop it. Every stop (timeout, `stop`, a forwarded signal) first reaches the whole group as
// SIGTERM (or the forwarded signal itself); what still runs `grace_s` later is SIGKILLed. When the command
// ends by itself, the rest of its group gets SIGTERM, then SIGKILL `grace_s` later (counted from the stop,
// if there was one).
struct StopPolicy {
  double timeout_s = 0;                      // > 0: stop after this long (ProcessResult::timed_out)
  double grace_s = 10;                       // seconds between SIGTERM and SIGKILL of the group
  const std::atomic<bool>* stop = nullptr;   // stop once it becomes true (ProcessResult::interrupted)
  // SIGINT / SIGTERM received by this process while the command runs are forwarded to its group (a terminal's
  // Ctrl-C reaches only us, as the command has its own group) and recorded in ProcessResult::stop_signal. The
  // handlers are process-wide: one such run_process at a time.
  bool forward_signals = false;
  // A command stopped by SIGTTIN/SIGTTOU (it read from, or configured, the terminal from its background
  // group) is given the terminal, as a shell would, and continued; the terminal is taken back at the end.
  bool share_terminal = false;
  // Make this process a subreaper and, once the command ended, count (ProcessResult::leftovers) and SIGKILL
  // what it left running outside its group too (setsid, a daemonized helper). Reaps any child of this
  // process: only for a launcher that supervises one command at a time.
  bool end_orphans = false;
};

struct ProcessResult {
  int exit_code = -1;      // the exit status, or 128 + the signal that ended it (as a shell reports it)
  int term_signal = 0;     // the signal that ended it; 0 when it exited
  bool timed_out = false;  // stopped at StopPolicy::timeout_s
  bool interrupted = false;  // stopped by StopPolicy::stop or a forwarded signal
  int stop_signal = 0;     // SIGINT / SIGTERM this process received and forwarded (forward_signals)
  int leftovers = 0;       // processes still running after the command ended, stopped here (end_orphans)
  double duration_s = 0;   // from the start to the end of the command (not of its leftovers)
};

// Spawns `spec` (spawn_process: own group, no shell) and waits for it under `policy`. A Status only when
// nothing was started: command not found (kNotFound), not executable, an unwritable log file.
StatusOr<ProcessResult> run_process(const ProcessSpec& spec, const StopPolicy& policy);

// "SIGSEGV", "SIGKILL", ... ("signal N" for the others).
std::string signal_name(int sig);
// True for the signals a program raises on itself when it crashes (SIGSEGV, SIGBUS, SIGABRT, SIGILL, SIGFPE).
bool is_crash_signal(int sig);

}  // namespace profile_train::platform
