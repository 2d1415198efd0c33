// Launching and stopping a wrapped command (shared by `run` and the tuner's trial runner). Linux only.
//
// A command is spawned in its own process group (one signal reaches it and every process it started, e.g.
// DataLoader workers), with PR_SET_PDEATHSIG so that it is signalled when the launcher dies, even by SIGKILL.
// The launcher can make itself a child subreaper: processes the command leaves behind (a worker whose parent
// died, a daemonized grandchild) are then re-parented to the launcher instead of init, and
// kill_descendants() finds and ends them.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "profile_train/common/status.h"

namespace profile_train {

// The path exec would run for `name`: itself when it contains '/', else the first executable match in PATH
// (the default path when PATH is unset). NotFound ("command not found: NAME") when there is none;
// InvalidArgument when it exists but cannot be executed.
StatusOr<std::string> find_executable(const std::string& name);

struct SpawnOptions {
  std::vector<std::string> argv;  // argv[0] is looked up with find_executable
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

// SIGKILLs every process that is (or becomes, as their parents die) a child of the calling process, except
// `except`, and reaps them; returns how many were still running (zombies are only reaped). With become_subreaper() this ends whatever a
// command left behind, even in other process groups or sessions. Gives up after about one second.
int kill_descendants(pid_t except = 0);

}  // namespace profile_train
