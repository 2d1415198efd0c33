// The writer thread of the recorder's FileWriter part: streams what the recording threads committed every
// flush_interval_ms, or at once when woken (a signal, a stop). It blocks every signal, so process-directed
// signals reach application threads.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "core/recorder_state.h"

namespace profile_train::agent::detail {
namespace {

void* writer_main(void*) {
  Recorder& rec = recorder();
  uint32_t cycles = 0;
  uint64_t last_dropped = 0;
  while (!rec.file.stop_writer.load(std::memory_order_acquire)) {
    pollfd p{rec.file.wake_pipe[0], POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(rec.cfg.flush_interval_ms));
    if (p.revents & POLLIN) {
      char buf[64];
      while (::read(rec.file.wake_pipe[0], buf, sizeof buf) > 0) {
      }
    }
    if (rec.file.stop_writer.load(std::memory_order_acquire)) break;
    // Refresh the status now and then so a crashed process still reports its drops and internal errors.
    if (++cycles % 20 == 0 && rec.stats.n_dropped.load() + rec.stats.n_internal_errors.load() != last_dropped) {
      last_dropped = rec.stats.n_dropped.load() + rec.stats.n_internal_errors.load();
      std::lock_guard<std::mutex> lock(rec.mu);
      rec.file.status_dirty = true;
    }
    std::lock_guard<std::mutex> io(rec.io_mu);
    flush_locked(false);
  }
  return nullptr;
}

}  // namespace

bool start_writer() {
  Recorder& rec = recorder();
  rec.file.stop_writer.store(false);
  if (rec.file.wake_pipe[0] < 0) {
    if (::pipe2(rec.file.wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    // Both ends above fds 0-2 (above_stdio): with stdout/stderr closed, the program would write into our pipe.
    rec.file.wake_pipe[0] = above_stdio(rec.file.wake_pipe[0]);
    rec.file.wake_pipe[1] = above_stdio(rec.file.wake_pipe[1]);
    if (rec.file.wake_pipe[0] < 0 || rec.file.wake_pipe[1] < 0) {
      if (rec.file.wake_pipe[0] >= 0) ::close(rec.file.wake_pipe[0]);
      if (rec.file.wake_pipe[1] >= 0) ::close(rec.file.wake_pipe[1]);
      rec.file.wake_pipe[0] = rec.file.wake_pipe[1] = -1;
      return false;
    }
  }
  // Block every signal in the writer so that process-directed signals reach application threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&rec.file.writer, nullptr, writer_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  rec.file.writer_running = rc == 0;
  return rec.file.writer_running;
}

void join_writer() {
  Recorder& rec = recorder();
  if (!rec.file.writer_running) return;
  rec.file.stop_writer.store(true, std::memory_order_release);
  rec.file.wake('x');
  pthread_join(rec.file.writer, nullptr);
  rec.file.writer_running = false;
}

}  // namespace profile_train::agent::detail
