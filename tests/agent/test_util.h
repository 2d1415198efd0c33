// Helpers for the agent tests. A scenario about fork, exit or process-once state runs in a forked child
// (`in_child`) and the test process reads what the child wrote; others run in this process
// (recorder_util.h `in_this_process`, which renews the recorder).
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace pt_agent_test {

namespace fs = std::filesystem;

inline fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("pt_agent_test_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

// Runs `body` in a forked child; returns its exit status (the child's own _exit code, or 128 + signal).
inline int in_child(const std::function<int()>& body) {
  const pid_t pid = fork();
  if (pid == 0) {
    int rc = 1;
    try {
      rc = body();
    } catch (...) {
      rc = 99;
    }
    std::exit(rc);  // runs atexit handlers (the recorder's final flush), like a normal process exit
  }
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  return 128 + WTERMSIG(status);
}

inline std::vector<fs::path> capture_files(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".ptrace") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace pt_agent_test
