// The capture window (capture_window.h's CaptureWindow) and the recorder's uses of it.
#include "core/recorder_state.h"

namespace profile_train::agent {
namespace detail {

// ---- CaptureWindow ---------------------------------------------------------------------------------------------

void CaptureWindow::close_for_warmup() {
  recording.store(false);
  start.store(INT64_MAX);
}

void CaptureWindow::open_for_fork_child() {
  recording.store(true);
  start.store(INT64_MIN);
  stop.store(INT64_MAX);
}

void CaptureWindow::set_recording(bool on) {
  const bool was = recording.exchange(on);
  if (on && !was) start.store(now_ns());
  if (!on && was) stop.store(now_ns());
}

void CaptureWindow::on_step_boundary(const RecorderConfig& cfg) {
  const int64_t n = steps_seen.fetch_add(1);
  if (cfg.warmup_steps > 0 && n == cfg.warmup_steps) set_recording(true);
  if (cfg.steps > 0 && n == cfg.warmup_steps + cfg.steps) set_recording(false);
}

bool CaptureWindow::contains(int64_t start_ns, int64_t end_ns) const {
  return end_ns >= start.load(std::memory_order_relaxed) && start_ns <= stop.load(std::memory_order_relaxed);
}

// ---- the recorder's window -------------------------------------------------------------------------------------

void set_recording(bool on) { recorder().window.set_recording(on); }

void on_step_boundary() {
  Recorder& rec = recorder();
  rec.window.on_step_boundary(rec.cfg);
}

}  // namespace detail

using namespace detail;

bool in_capture_window(int64_t start_ns, int64_t end_ns) {
  Recorder& rec = recorder();
  const bool ok = rec.window.contains(start_ns, end_ns);
  if (!ok) rec.stats.n_filtered.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

}  // namespace profile_train::agent
