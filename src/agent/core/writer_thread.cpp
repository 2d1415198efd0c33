// The writer thread: streams what the recording threads committed every flush_interval_ms, or at once when
// woken (a signal, a stop). It blocks every signal, so process-directed signals reach application threads.
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include "core/recorder_state.h"

namespace profile_train::agent::detail {
namespace {

void* writer_main(void*) {
  Global& G = g();
  uint32_t cycles = 0;
  uint64_t last_dropped = 0;
  while (!G.stop_writer.load(std::memory_order_acquire)) {
    pollfd p{G.wake_pipe[0], POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(G.cfg.flush_interval_ms));
    if (p.revents & POLLIN) {
      char buf[64];
      while (::read(G.wake_pipe[0], buf, sizeof buf) > 0) {
      }
    }
    if (G.stop_writer.load(std::memory_order_acquire)) break;
    // Refresh the status now and then so a crashed process still reports its drops and internal errors.
    if (++cycles % 20 == 0 && G.n_dropped.load() + G.n_internal_errors.load() != last_dropped) {
      last_dropped = G.n_dropped.load() + G.n_internal_errors.load();
      std::lock_guard<std::mutex> lock(G.mu);
      G.status_dirty = true;
    }
    std::lock_guard<std::mutex> io(G.io_mu);
    flush_locked(false);
  }
  return nullptr;
}

}  // namespace

bool start_writer() {
  Global& G = g();
  G.stop_writer.store(false);
  if (G.wake_pipe[0] < 0) {
    if (::pipe2(G.wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
    // Both ends above fds 0-2 (above_stdio): with stdout/stderr closed, the program would write into our pipe.
    G.wake_pipe[0] = above_stdio(G.wake_pipe[0]);
    G.wake_pipe[1] = above_stdio(G.wake_pipe[1]);
    if (G.wake_pipe[0] < 0 || G.wake_pipe[1] < 0) {
      if (G.wake_pipe[0] >= 0) ::close(G.wake_pipe[0]);
      if (G.wake_pipe[1] >= 0) ::close(G.wake_pipe[1]);
      G.wake_pipe[0] = G.wake_pipe[1] = -1;
      return false;
    }
  }
  // Block every signal in the writer so that process-directed signals reach application threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&G.writer, nullptr, writer_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  G.writer_running = rc == 0;
  return G.writer_running;
}

void join_writer() {
  Global& G = g();
  if (!G.writer_running) return;
  G.stop_writer.store(true, std::memory_order_release);
  if (G.wake_pipe[1] >= 0) {
    ssize_t ignored = ::write(G.wake_pipe[1], "x", 1);
    (void)ignored;
  }
  pthread_join(G.writer, nullptr);
  G.writer_running = false;
}

}  // namespace profile_train::agent::detail
