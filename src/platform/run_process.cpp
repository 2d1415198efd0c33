// Supervising one command: wait, stop on timeout / request / forwarded signal with SIGTERM then SIGKILL of its
// group, hand it the terminal when it asks, end what it left behind (README "Stopping a run").
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "profile_train/platform/process.h"

namespace profile_train::platform {
namespace {

using Clock = std::chrono::steady_clock;

// ---- signals, forwarded to the child's process group (forward_signals) -------------------------------
volatile sig_atomic_t g_child_group = 0;
volatile sig_atomic_t g_stop_signal = 0;  // SIGINT / SIGTERM that asked us to stop

void on_stop_signal(int sig) {
  g_stop_signal = sig;
  if (g_child_group > 0) ::kill(-static_cast<pid_t>(g_child_group), sig);
}

class ForwardSignals {
 public:
  explicit ForwardSignals(bool on) : on_(on) {
    if (!on_) return;
    g_stop_signal = 0;
    g_child_group = 0;
    struct sigaction sa {};
    sa.sa_handler = on_stop_signal;
    sa.sa_flags = 0;  // no SA_RESTART: a blocking call returns EINTR and the loop notices
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~ForwardSignals() {
    if (!on_) return;
    g_child_group = 0;
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  ForwardSignals(const ForwardSignals&) = delete;
  ForwardSignals& operator=(const ForwardSignals&) = delete;

 private:
  bool on_;
  struct sigaction old_int_ {}, old_term_ {};
};

// Makes `pgid` the terminal's foreground group. SIGTTOU is blocked meanwhile: changing it from a background
// group would stop us.
bool set_terminal_group(pid_t pgid) {
  sigset_t ttou, old;
  sigemptyset(&ttou);
  sigaddset(&ttou, SIGTTOU);
  ::sigprocmask(SIG_BLOCK, &ttou, &old);
  const bool ok = ::tcsetpgrp(STDIN_FILENO, pgid) == 0;
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  return ok;
}

// Reaps every child of this process that has ended (end_orphans: re-parented leftovers are our children).
void reap_ended_children() {
  int st = 0;
  while (::waitpid(-1, &st, WNOHANG) > 0) {
  }
}

Clock::duration seconds(double s) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, s)));
}

class Fd {
 public:
  explicit Fd(int fd = -1) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

std::string signal_name(int sig) {
  switch (sig) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    default: return "signal " + std::to_string(sig);
  }
}

bool is_crash_signal(int sig) {
  return sig == SIGSEGV || sig == SIGBUS || sig == SIGABRT || sig == SIGILL || sig == SIGFPE;
}

StatusOr<ProcessResult> run_process(const ProcessSpec& spec, const StopPolicy& policy) {
  SpawnOptions spawn;
  spawn.argv = spec.argv;
  spawn.env = spec.env;
  spawn.parent_death_signal = spec.parent_death_signal;
  Fd log(spec.log_file.empty() ? -1 : ::open(spec.log_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (!spec.log_file.empty() && log.get() < 0)
    return IoError("cannot create " + spec.log_file.string() + ": " + std::strerror(errno));
  Fd null_in(spec.stdin_from_null ? ::open("/dev/null", O_RDONLY | O_CLOEXEC) : -1);
  spawn.stdin_fd = null_in.get();
  spawn.stdout_fd = spawn.stderr_fd = log.get();

  ForwardSignals forwarding(policy.forward_signals);
  if (policy.end_orphans) become_subreaper();
  const auto t0 = Clock::now();
  auto spawned = spawn_process(spawn);
  if (!spawned.ok()) return spawned.status();
  const pid_t pid = *spawned;
  ProcessResult r;
  if (policy.forward_signals) {
    g_child_group = pid;
    if (g_stop_signal != 0) ::kill(-pid, g_stop_signal);  // a signal that came while forking
  }

  const Clock::duration grace = seconds(policy.grace_s);
  std::optional<Clock::time_point> stop_at;
  bool killed = false;
  bool gave_terminal = false;
  bool told_stopped = false;
  int status = 0;
  // Polled (20 ms) rather than blocking: a stop signal that lands just before a blocking wait could not
  // start the grace clock.
  for (;;) {
    int st = 0;
    const pid_t w = ::waitpid(pid, &st, (policy.share_terminal ? WUNTRACED : 0) | WNOHANG);
    if (w == pid && WIFSTOPPED(st)) {
      // Reading from (or configuring) the terminal from a background group stops the command: hand it the
      // terminal (Ctrl-C then reaches its group directly) and let it go on.
      const int sig = WSTOPSIG(st);
      if ((sig == SIGTTIN || sig == SIGTTOU) && !gave_terminal) {
        if (::isatty(STDIN_FILENO) && set_terminal_group(pid)) {
          gave_terminal = true;
          ::kill(-pid, SIGCONT);
        } else if (!told_stopped) {
          told_stopped = true;
          static constexpr char kMsg[] =
              "profile-train: the command is stopped waiting for the terminal (run profile-train in the "
              "foreground)\n";
          [[maybe_unused]] ssize_t n = ::write(STDERR_FILENO, kMsg, sizeof kMsg - 1);
        }
      }
      continue;
    }
    if (w == pid) {
      status = st;
      break;
    }
    if (w < 0 && errno != EINTR) break;
    const auto now = Clock::now();
    if (!stop_at) {
      if (policy.forward_signals && g_stop_signal != 0) {
        r.interrupted = true;  // the handler has forwarded the signal already
        stop_at = now;
      } else if (policy.stop != nullptr && policy.stop->load()) {
        r.interrupted = true;
        stop_at = now;
        ::kill(-pid, SIGTERM);
      } else if (policy.timeout_s > 0 && now - t0 > seconds(policy.timeout_s)) {
        r.timed_out = true;
        stop_at = now;
        ::kill(-pid, SIGTERM);
      }
    } else if (!killed && now - *stop_at > grace) {
      ::kill(-pid, SIGKILL);
      killed = true;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  r.duration_s = std::chrono::duration<double>(Clock::now() - t0).count();
  if (policy.forward_signals) {
    g_child_group = 0;
    r.stop_signal = g_stop_signal;
    if (r.stop_signal != 0) r.interrupted = true;  // also when the command ended before the loop saw it
  }
  if (gave_terminal) set_terminal_group(::getpgrp());
  if (WIFEXITED(status)) {
    r.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    r.term_signal = WTERMSIG(status);
    r.exit_code = 128 + r.term_signal;
  }

  // What the command left running was re-parented to us (a subreaper).
  if (policy.end_orphans) {
    reap_ended_children();
    r.leftovers = static_cast<int>(child_pids().size());
  }
  // The rest of its group (DataLoader workers, a backgrounded helper) first: SIGTERM lets their agent flush.
  if (group_running(pid)) {
    ::kill(-pid, SIGTERM);
    // After a stop the group has had its grace already, counted from the stop.
    const auto until = stop_at ? std::max(Clock::now(), *stop_at + grace) : Clock::now() + grace;
    while (group_running(pid) && Clock::now() < until) {
      if (policy.end_orphans) reap_ended_children();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (group_running(pid)) {
      ::kill(-pid, SIGKILL);
      // SIGKILL is delivered asynchronously: return once the group is gone (bounded).
      const auto gone_by = Clock::now() + std::chrono::seconds(1);
      while (group_running(pid) && Clock::now() < gone_by) {
        if (policy.end_orphans) reap_ended_children();
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
      }
    }
  }
  if (policy.end_orphans) kill_descendants();  // those that left the group (setsid, their own group)
  return r;
}

}  // namespace profile_train::platform
