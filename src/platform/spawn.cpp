// Starting a command and finding the processes it left: fork/exec, PATH lookup, /proc scans.
#include "profile_train/platform/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstdio>
#include <cstring>
#include <thread>

extern char** environ;

namespace profile_train::platform {

namespace {

// A script's `#!` line names its interpreter; when that is missing, exec fails with ENOENT as if the script
// itself were missing. Returns the error naming the interpreter, or OK (no #! line, or the interpreter exists).
// `#!/usr/bin/env NAME` looks NAME up on PATH, as env will.
Status check_interpreter(const std::string& script) {
  char buf[256];
  const int fd = ::open(script.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status();
  ssize_t n;
  do {
    n = ::read(fd, buf, sizeof buf - 1);
  } while (n < 0 && errno == EINTR);
  ::close(fd);
  if (n < 2 || buf[0] != '#' || buf[1] != '!') return Status();
  const std::string line(buf + 2, static_cast<size_t>(n) - 2);
  const std::string first = line.substr(0, line.find('\n'));
  std::vector<std::string> words;
  size_t i = 0;
  while (i < first.size()) {
    while (i < first.size() && (first[i] == ' ' || first[i] == '\t' || first[i] == '\r')) ++i;
    const size_t b = i;
    while (i < first.size() && first[i] != ' ' && first[i] != '\t' && first[i] != '\r') ++i;
    if (i > b) words.push_back(first.substr(b, i - b));
  }
  if (words.empty()) return Status();
  struct stat st {};
  if (::stat(words[0].c_str(), &st) != 0)
    return NotFound("cannot run " + script + ": its interpreter " + words[0] + " (from its #! line) does not exist");
  if (words[0].size() >= 4 && words[0].compare(words[0].size() - 4, 4, "/env") == 0) {
    for (size_t k = 1; k < words.size(); ++k) {
      if (words[k][0] == '-' || words[k].find('=') != std::string::npos) continue;
      if (!find_executable(words[k]).ok())
        return NotFound("cannot run " + script + ": its interpreter " + words[k] + " (from its #! line, " +
                        words[0] + " " + words[k] + ") is not on PATH");
      break;
    }
  }
  return Status();
}

}  // namespace

StatusOr<std::string> find_program(const std::string& name) {
  auto exe = find_executable(name);
  if (!exe.ok()) return exe;
  if (Status st = check_interpreter(*exe); !st.ok()) return st;
  return exe;
}

StatusOr<std::string> find_executable(const std::string& name) {
  if (name.empty()) return InvalidArgument("empty command");
  auto check = [](const std::string& path) -> int {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return ENOENT;
    if (S_ISDIR(st.st_mode)) return EISDIR;
    return ::access(path.c_str(), X_OK) == 0 ? 0 : EACCES;
  };
  if (name.find('/') != std::string::npos) {
    const int err = check(name);
    if (err == ENOENT) return NotFound("command not found: " + name);
    if (err != 0) return InvalidArgument("cannot run " + name + ": " + std::strerror(err));
    return name;
  }
  const char* env_path = std::getenv("PATH");
  const std::string path = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  int first_error = ENOENT;
  size_t begin = 0;
  while (begin <= path.size()) {
    size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    // An empty PATH entry is the current folder, as for execvp.
    const std::string dir = end > begin ? path.substr(begin, end - begin) : std::string(".");
    const std::string candidate = dir + "/" + name;
    const int err = check(candidate);
    if (err == 0) return candidate;
    if (err != ENOENT && first_error == ENOENT) first_error = err;
    begin = end + 1;
  }
  if (first_error == ENOENT) return NotFound("command not found: " + name);
  return InvalidArgument("cannot run " + name + ": " + std::strerror(first_error));
}

std::vector<std::string> environment_with(const std::vector<std::string>& overrides) {
  auto key_of = [](const std::string& kv) { return kv.substr(0, kv.find('=')); };
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string kv(*e);
    const std::string key = key_of(kv);
    const bool replaced =
        std::any_of(overrides.begin(), overrides.end(), [&](const std::string& o) { return key_of(o) == key; });
    if (!replaced) env.push_back(kv);
  }
  env.insert(env.end(), overrides.begin(), overrides.end());
  return env;
}

StatusOr<pid_t> spawn_process(const SpawnOptions& o) {
  if (o.argv.empty()) return InvalidArgument("empty command");
  auto exe = find_program(o.argv[0]);
  if (!exe.ok()) return exe.status();
  // Everything the child needs is prepared before fork(): only async-signal-safe calls happen after it.
  std::vector<char*> argv, envp;
  for (const auto& a : o.argv) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  for (const auto& e : o.env) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(nullptr);
  // A pipe closed on exec tells the parent whether exec succeeded (errno travels through it otherwise).
  int status_pipe[2];
  if (::pipe2(status_pipe, O_CLOEXEC) != 0) return Internal(std::string("pipe: ") + std::strerror(errno));
  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(status_pipe[0]);
    ::close(status_pipe[1]);
    return Internal(std::string("fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    if (o.parent_death_signal != 0) {
      ::prctl(PR_SET_PDEATHSIG, o.parent_death_signal);
      if (::getppid() != parent) ::_exit(127);  // the launcher died before prctl took effect
    }
    if (o.stdin_fd >= 0) ::dup2(o.stdin_fd, STDIN_FILENO);
    if (o.stdout_fd >= 0) ::dup2(o.stdout_fd, STDOUT_FILENO);
    if (o.stderr_fd >= 0) ::dup2(o.stderr_fd, STDERR_FILENO);
    struct sigaction sa {};
    sa.sa_handler = SIG_DFL;
    ::sigaction(SIGINT, &sa, nullptr);
    ::sigaction(SIGTERM, &sa, nullptr);
    // profile-train ignores these two (main.cpp); an ignored disposition survives exec, the command's must not.
    ::sigaction(SIGPIPE, &sa, nullptr);
    ::sigaction(SIGXFSZ, &sa, nullptr);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execve(exe->c_str(), argv.data(), envp.data());
    const int err = errno;
    [[maybe_unused]] ssize_t n = ::write(status_pipe[1], &err, sizeof(err));
    ::_exit(127);
  }
  ::setpgid(pid, pid);  // also from the parent: no race with a first kill(-pid, ...)
  ::close(status_pipe[1]);
  int exec_errno = 0;
  ssize_t got;
  do {
    got = ::read(status_pipe[0], &exec_errno, sizeof(exec_errno));
  } while (got < 0 && errno == EINTR);
  ::close(status_pipe[0]);
  if (got == static_cast<ssize_t>(sizeof(exec_errno))) {
    int st = 0;
    while (::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
    if (exec_errno == ENOENT) return NotFound("command not found: " + o.argv[0]);
    return InvalidArgument("cannot run " + o.argv[0] + ": " + std::strerror(exec_errno));
  }
  return pid;
}

bool become_subreaper() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0; }

namespace {

struct ProcStat {
  char state = 0;
  long ppid = 0;
  long pgrp = 0;
};

// Calls fn(pid, stat) for every process in /proc whose stat could be read.
template <typename Fn>
void for_each_process(Fn fn) {
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    const int fd = ::open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) continue;
    char buf[512];
    const ssize_t n = ::read(fd, buf, sizeof buf - 1);
    ::close(fd);
    if (n <= 0) continue;
    buf[n] = '\0';
    // "pid (comm) state ppid pgrp ...": comm may hold spaces and parentheses, so parse after the last ')'.
    const char* close_paren = std::strrchr(buf, ')');
    if (close_paren == nullptr) continue;
    ProcStat st;
    if (std::sscanf(close_paren + 1, " %c %ld %ld", &st.state, &st.ppid, &st.pgrp) == 3)
      fn(static_cast<pid_t>(pid), st);
  }
  ::closedir(d);
}

}  // namespace

std::vector<pid_t> child_pids(pid_t except) {
  std::vector<pid_t> out;
  const pid_t self = ::getpid();
  for_each_process([&](pid_t pid, const ProcStat& st) {
    if (pid != except && st.ppid == self) out.push_back(pid);
  });
  return out;
}

bool group_running(pid_t pgid) {
  if (pgid <= 0 || (::kill(-pgid, 0) != 0 && errno != EPERM)) return false;
  bool running = false;
  for_each_process([&](pid_t, const ProcStat& st) { running |= st.pgrp == pgid && st.state != 'Z' && st.state != 'X'; });
  return running;
}

int kill_descendants(pid_t except) {
  int killed = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  // A killed process's own children are re-parented to us (subreaper) a moment later: repeat until none.
  for (;;) {
    const std::vector<pid_t> kids = child_pids(except);
    if (kids.empty() || std::chrono::steady_clock::now() > deadline) break;
    for (const pid_t p : kids) {
      int st = 0;
      if (::waitpid(p, &st, WNOHANG) == p) continue;  // had already ended
      if (::kill(p, SIGKILL) == 0) ++killed;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    for (const pid_t p : kids) {
      int st = 0;
      ::waitpid(p, &st, WNOHANG);
    }
  }
  return killed;
}

}  // namespace profile_train::platform
