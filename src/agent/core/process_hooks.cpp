// Fork, exit and signal handling of the recorder (see process_hooks.h).
#include "core/process_hooks.h"

#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <mutex>

#include "core/recorder_state.h"

namespace profile_train::agent {
namespace detail {
namespace {

void on_signal(int sig, siginfo_t* info, void* uctx) {
  Global& G = g();
  const int saved_errno = errno;
  const uint64_t before = G.flush_seq.load(std::memory_order_acquire);
  if (G.wake_pipe[1] >= 0) {
    ssize_t ignored = ::write(G.wake_pipe[1], "s", 1);
    (void)ignored;
  }
  struct sigaction& old = sig == SIGINT ? G.old_int : G.old_term;
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) old.sa_sigaction(sig, info, uctx);
  } else if (old.sa_handler == SIG_IGN) {
  } else if (old.sa_handler == SIG_DFL) {
    // The default action ends the process: give the writer up to 500 ms to flush, then re-raise.
    if (G.writer_running) {
      for (int i = 0; i < 100 && G.flush_seq.load(std::memory_order_acquire) <= before + 1; ++i) {
        timespec ts{0, 5 * 1000 * 1000};
        nanosleep(&ts, nullptr);
      }
    }
    sigaction(sig, &old, nullptr);
    raise(sig);
  } else if (old.sa_handler) {
    old.sa_handler(sig);
  }
  errno = saved_errno;
}

void install_signals() {
  Global& G = g();
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &G.old_int);
  sigaction(SIGTERM, &sa, &G.old_term);
  G.signals_installed = true;
}

void fork_prepare() {
  g().io_mu.lock();
  g().mu.lock();
}

void fork_parent() {
  g().mu.unlock();
  g().io_mu.unlock();
}

void fork_child() {
  Global& G = g();
  G.fork_parent = G.pid;
  G.pid = getpid();
  G.is_fork_child = true;
  G.pre_stop_hook.store(nullptr);  // CUPTI state does not survive fork; the parent flushes its own
  G.gen.fetch_add(1);
  G.threads.clear();
  G.full.clear();  // the parent writes these
  // Chunks held by the parent's other threads are forgotten here (the parent writes them).
  G.records_allocated = free_records_locked();
  G.chunks_total = 0;
  for (const auto& pool : G.free_chunks) G.chunks_total += static_cast<uint32_t>(pool.size());
  G.strings_written = 0;
  G.side_chunks.clear();
  G.status_dirty = true;
  if (G.fd >= 0) ::close(G.fd);
  G.fd = -1;  // opened on the first flush with data: a fork followed by exec leaves no empty file
  G.file_failed = false;
  G.path.clear();
  G.writer_running = false;
  G.n_records = 0;
  G.n_dropped = 0;
  G.n_filtered = 0;
  G.n_written = 0;
  // Worker processes record whatever they do; the step window is decided in the main process.
  G.recording.store(true);
  G.window_start.store(INT64_MIN);
  G.window_stop.store(INT64_MAX);
  if (G.wake_pipe[0] >= 0) {
    ::close(G.wake_pipe[0]);
    ::close(G.wake_pipe[1]);
    G.wake_pipe[0] = G.wake_pipe[1] = -1;
  }
  G.mu.unlock();
  G.io_mu.unlock();
  if (G.accepting.load()) start_writer();
}

void at_exit_handler() { recorder_stop(); }

}  // namespace
}  // namespace detail

void install_process_hooks(const ProcessHooks& hooks) {
  static std::once_flag once;
  std::call_once(once, [&hooks] {
    if (hooks.at_fork) pthread_atfork(detail::fork_prepare, detail::fork_parent, detail::fork_child);
    if (hooks.at_exit) std::atexit(detail::at_exit_handler);
    if (hooks.signals) detail::install_signals();
  });
}

}  // namespace profile_train::agent
