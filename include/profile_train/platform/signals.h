// A stop request by signal, for a command that ends its own work cleanly (tune writes its results first):
// while a StopSignals lives, SIGINT and SIGTERM set a flag the work polls and record which signal arrived,
// instead of ending the process; the previous handlers come back when it ends. One at a time per process.
#pragma once

#include <atomic>

namespace profile_train::platform {

class StopSignals {
 public:
  explicit StopSignals(std::atomic<bool>* stop);  // *stop is set (never cleared) when a signal arrives
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The last SIGINT / SIGTERM received while one lived (0: none), e.g. for exit code 128 + signal.
  static int last_signal();
};

}  // namespace profile_train::platform
