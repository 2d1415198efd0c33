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
  Recorder& rec = recorder();
  const int saved_errno = errno;
  const uint64_t before = rec.file.flush_seq.load(std::memory_order_acquire);
  rec.file.wake('s');
  struct sigaction& old = sig == SIGINT ? rec.signals.old_int : rec.signals.old_term;
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) old.sa_sigaction(sig, info, uctx);
  } else if (old.sa_handler == SIG_IGN) {
  } else if (old.sa_handler == SIG_DFL) {
    // The default action ends the process: give the writer up to 500 ms to flush, then re-raise.
    if (rec.file.writer_running) {
      for (int i = 0; i < 100 && rec.file.flush_seq.load(std::memory_order_acquire) <= before + 1; ++i) {
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
  Recorder& rec = recorder();
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &rec.signals.old_int);
  sigaction(SIGTERM, &sa, &rec.signals.old_term);
  rec.signals.installed = true;
}

void fork_prepare() {
  Recorder& rec = recorder();
  rec.io_mu.lock();
  rec.mu.lock();
}

void fork_parent() {
  Recorder& rec = recorder();
  rec.mu.unlock();
  rec.io_mu.unlock();
}

void fork_child() {
  Recorder& rec = recorder();
  rec.proc.fork_parent = rec.proc.pid;
  rec.proc.pid = getpid();
  rec.proc.is_fork_child = true;
  rec.pre_stop_hook.store(nullptr);  // CUPTI state does not survive fork; the parent flushes its own
  rec.gen.fetch_add(1);
  rec.pool.forget_in_flight();  // the parent writes the chunks in flight
  rec.strings.written = 0;
  rec.file.side_chunks.clear();
  rec.file.status_dirty = true;
  if (rec.file.fd >= 0) ::close(rec.file.fd);
  rec.file.fd = -1;  // opened on the first flush with data: a fork followed by exec leaves no empty file
  rec.file.failed = false;
  rec.file.path.clear();
  rec.file.writer_running = false;
  rec.stats.n_records = 0;
  rec.stats.n_dropped = 0;
  rec.stats.n_filtered = 0;
  rec.stats.n_written = 0;
  rec.window.open_for_fork_child();  // workers record whatever they do; the main process decides the steps
  if (rec.file.wake_pipe[0] >= 0) {
    ::close(rec.file.wake_pipe[0]);
    ::close(rec.file.wake_pipe[1]);
    rec.file.wake_pipe[0] = rec.file.wake_pipe[1] = -1;
  }
  rec.mu.unlock();
  rec.io_mu.unlock();
  if (rec.accepting.load()) start_writer();
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
