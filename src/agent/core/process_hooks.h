// Process hooks of the recorder: a pthread_atfork handler that gives a forked child (a DataLoader worker) its own
// file and writer thread, an atexit flush, and SIGINT/SIGTERM handlers that wake the writer before chaining to
// the previous handler. Installed by the injected library's entry point (src/agent/entry.cpp) once the
// recorder started; tests install the ones they exercise. Not installed with the headers.
#pragma once

namespace profile_train::agent {

struct ProcessHooks {
  bool at_fork = true;
  bool at_exit = true;
  bool signals = true;  // SIGINT / SIGTERM: flush, then chain to the previous handler
};

// Once per process (later calls do nothing); only after recorder_start() succeeded.
void install_process_hooks(const ProcessHooks& hooks = {});

}  // namespace profile_train::agent
