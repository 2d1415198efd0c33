// The recorder's capture window part (not installed; only src/agent/core and the agent's tests include it):
// PROFILE_TRAIN_WARMUP_STEPS / PROFILE_TRAIN_STEPS count ProfilerStep# pushes; the capture_start / capture_stop
// marks switch it by hand. Synchronous records check the recording flag, GPU records (which arrive later, from
// CUPTI) the window's timestamps. Lock-free.
#pragma once

#include <atomic>
#include <climits>
#include <cstdint>

#include "profile_train/agent/recorder.h"

namespace profile_train::agent::detail {

struct CaptureWindow {
  std::atomic<bool> recording{true};
  std::atomic<int64_t> start{INT64_MIN};
  std::atomic<int64_t> stop{INT64_MAX};
  std::atomic<int64_t> steps_seen{0};

  // Closed until the warmup steps are over (recorder_start, when cfg.warmup_steps > 0).
  void close_for_warmup();
  // A forked child (a worker process) records whatever it does: the step window is decided in the main process.
  void open_for_fork_child();
  // Switches recording; the window's start / stop take now_ns() when it actually changes.
  void set_recording(bool on);
  // A ProfilerStep# range was pushed: opens the window after cfg.warmup_steps, closes it cfg.steps later.
  void on_step_boundary(const RecorderConfig& cfg);
  // True if [start_ns, end_ns] overlaps the window.
  bool contains(int64_t start_ns, int64_t end_ns) const;
};

}  // namespace profile_train::agent::detail
