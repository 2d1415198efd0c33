// The capture window: PROFILE_TRAIN_WARMUP_STEPS / PROFILE_TRAIN_STEPS count ProfilerStep# pushes; the
// capture_start / capture_stop marks switch it by hand. Synchronous records check the recording flag, GPU
// records (which arrive later, from CUPTI) the window's timestamps.
#include "core/recorder_state.h"

namespace profile_train::agent {
namespace detail {

void set_recording(bool on) {
  Global& G = g();
  const bool was = G.recording.exchange(on);
  if (on && !was) G.window_start.store(now_ns());
  if (!on && was) G.window_stop.store(now_ns());
}

void on_step_boundary() {
  Global& G = g();
  const int64_t n = G.steps_seen.fetch_add(1);
  if (G.cfg.warmup_steps > 0 && n == G.cfg.warmup_steps) set_recording(true);
  if (G.cfg.steps > 0 && n == G.cfg.warmup_steps + G.cfg.steps) set_recording(false);
}

}  // namespace detail

using namespace detail;

bool in_capture_window(int64_t start_ns, int64_t end_ns) {
  const Global& G = g();
  const bool ok = end_ns >= G.window_start.load(std::memory_order_relaxed) &&
                  start_ns <= G.window_stop.load(std::memory_order_relaxed);
  if (!ok) g().n_filtered.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

}  // namespace profile_train::agent
