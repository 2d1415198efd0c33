// Starting the recorder in a test the way the injected library does (src/agent/entry.cpp), in this process or in
// a forked child.
#pragma once

#include <functional>

#include "core/process_hooks.h"
#include "core/recorder_state.h"
#include "profile_train/agent/recorder.h"
#include "test_util.h"

namespace pt_agent_test {

// The hooks the injected library installs, minus the signal handlers (the test runner's own stay in place).
inline const profile_train::agent::ProcessHooks kTestHooks{.at_fork = true, .at_exit = true, .signals = false};

inline bool start_recorder(const profile_train::agent::RecorderConfig& c) {
  if (!profile_train::agent::recorder_start(c)) return false;
  profile_train::agent::install_process_hooks(kTestHooks);
  return true;
}

// A recorder starts once: one that already ran in this process (an earlier scenario, or the parent of this
// child) is replaced by a fresh one. False when the current one is still recording.
inline bool fresh_recorder() {
  namespace detail = profile_train::agent::detail;
  return !detail::recorder().started.load() || detail::renew_recorder();
}

// in_child, the child starting with a fresh recorder (the NVTX injection starts the recorder through
// recorder_start itself).
inline int in_fresh_child(const std::function<int()>& body) {
  return in_child([&] { return fresh_recorder() ? body() : 98; });
}

// Runs a scenario in this process (no fork): `body` starts the recorder and records; the recorder is stopped
// afterwards, so its capture is complete (flushed, closed) when this returns. Returns body's code. Scenarios
// about fork, exit or process-once state (NVTX injection) still run in a child (in_child).
inline int in_this_process(const std::function<int()>& body) {
  if (!fresh_recorder()) return 98;
  int rc = 1;
  try {
    rc = body();
  } catch (...) {
    rc = 99;
  }
  profile_train::agent::recorder_stop();
  return rc;
}

}  // namespace pt_agent_test
