// Starting the recorder in a test the way the injected library does (src/agent/entry.cpp).
#pragma once

#include "core/process_hooks.h"
#include "profile_train/agent/recorder.h"

namespace pt_agent_test {

// The hooks the injected library installs, minus the signal handlers (the test runner's own stay in place).
inline const profile_train::agent::ProcessHooks kTestHooks{.at_fork = true, .at_exit = true, .signals = false};

inline bool start_recorder(const profile_train::agent::RecorderConfig& c) {
  if (!profile_train::agent::recorder_start(c)) return false;
  profile_train::agent::install_process_hooks(kTestHooks);
  return true;
}

}  // namespace pt_agent_test
