// Helpers of the output-reliability tests (outputs_test.cpp): run the built binary with an exact argv (any
// bytes, no shell quoting), optionally under a file-size limit, and small inline traces and reports.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace pt_outputs_test {

namespace fs = std::filesystem;

// PT_TEST_PROFILE_TRAIN runs the tests against another build (e.g. main's, to see a regression test fail).
inline const fs::path kBinary = std::getenv("PT_TEST_PROFILE_TRAIN") != nullptr
                                    ? fs::path(std::getenv("PT_TEST_PROFILE_TRAIN"))
                                    : fs::path(PT_BINARY_DIR) / "profile-train";

struct Result {
  int rc = -1;  // exit code, or 128 + signal
  std::string out, err;
};

inline std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void spit(const fs::path& p, const std::string& content) { std::ofstream(p, std::ios::binary) << content; }

inline size_t count_lines(const std::string& s) {
  size_t n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

struct Limits {
  rlim_t max_file_bytes = 0;  // RLIMIT_FSIZE (0: none); SIGXFSZ is ignored so writes fail with EFBIG
};

struct Proc {
  pid_t pid = -1;
  fs::path out, err;
};

// Starts profile-train with `args` (argv[1..]); stdout/stderr go to files `log`.out / `log`.err.
inline Proc start(const std::vector<std::string>& args, const fs::path& log, const Limits& limits = {}) {
  Proc p;
  p.out = log.string() + ".out";
  p.err = log.string() + ".err";
  p.pid = ::fork();
  if (p.pid == 0) {
    const int out = ::open(p.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int err = ::open(p.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(out, 1);
    ::dup2(err, 2);
    ::setenv("NO_COLOR", "1", 1);
    if (limits.max_file_bytes > 0) {
      ::signal(SIGXFSZ, SIG_IGN);
      const rlimit lim{limits.max_file_bytes, limits.max_file_bytes};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    std::vector<char*> argv{const_cast<char*>(kBinary.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return p;
}

inline Result wait(const Proc& p, int timeout_s = 120) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s);
  int status = 0;
  while (::waitpid(p.pid, &status, WNOHANG) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(p.pid, SIGKILL);
      ::waitpid(p.pid, &status, 0);
      ADD_FAILURE() << "profile-train did not finish in " << timeout_s << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  Result r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = slurp(p.out);
  r.err = slurp(p.err);
  return r;
}

// A fresh folder per test, removed afterwards (a tmpfs mounted in it is unmounted first).
class OutputsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pt_outputs_" + std::to_string(::getpid()) + "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (const auto& m : mounts_) ::umount2(m.c_str(), MNT_DETACH);
    fs::remove_all(dir_);
  }

  Result run(const std::vector<std::string>& args, const Limits& limits = {}) {
    return wait(start(args, dir_ / ("log" + std::to_string(++runs_)), limits));
  }

  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    spit(p, content);
    return p;
  }

  // A tmpfs of `bytes` at dir_/name; empty path when mounting is not permitted (not root, no CAP_SYS_ADMIN).
  fs::path small_disk(const std::string& name, size_t bytes) {
    const fs::path m = dir_ / name;
    fs::create_directories(m);
    const std::string opts = "size=" + std::to_string(bytes);
    if (::mount("tmpfs", m.c_str(), "tmpfs", 0, opts.c_str()) != 0) return {};
    mounts_.push_back(m);
    return m;
  }

  // A small valid Kineto trace (one 100 us step on a GPU); `device` names the GPU, `kernel` the kernel.
  fs::path small_trace(const std::string& name, const std::string& device = "Test GPU",
                       const std::string& kernel = "volta_sgemm_128x64_nn") {
    return write(name, R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": ")" + device +
                           R"(", "totalGlobalMem": 1000000, "computeMajor": 8, "computeMinor": 0, "numSms": 80}],
      "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 1000, "dur": 40},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1040, "dur": 2, "args": {"correlation": 7}},
      {"ph": "X", "cat": "kernel", "name": ")" + kernel + R"(", "pid": 0, "tid": 7, "ts": 1043, "dur": 55,
       "args": {"device": 0, "stream": 7, "correlation": 7, "grid": [80, 1, 1], "block": [256, 1, 1]}}
      ]})");
  }

  // A Kineto trace of `steps` CPU steps (ProfilerStep#i); step i lasts 100 us, step `slow` lasts 900 us.
  fs::path many_steps_trace(const std::string& name, int steps, int slow) {
    std::string s = R"({"schemaVersion": 1, "traceEvents": [)";
    int64_t ts = 1000;
    for (int i = 0; i < steps; ++i) {
      const int dur = i == slow ? 900 : 100;
      s += (i ? ",\n" : "\n") + std::string(R"({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#)") +
           std::to_string(i) + R"(", "pid": 1, "tid": 1, "ts": )" + std::to_string(ts) + R"(, "dur": )" +
           std::to_string(dur) + R"(}, {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": )" +
           std::to_string(ts + 1) + R"(, "dur": )" + std::to_string(dur - 2) + "}";
      ts += dur;
    }
    return write(name, s + "]}");
  }

  fs::path dir_;
  std::vector<fs::path> mounts_;
  int runs_ = 0;
};

// The temporary files an AtomicFile leaves behind when a process dies mid-write (".NAME.tmp-PID-N").
inline std::vector<std::string> temp_files(const fs::path& dir) {
  std::vector<std::string> found;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().filename().string().find(".tmp-") != std::string::npos) found.push_back(e.path().filename().string());
  return found;
}

}  // namespace pt_outputs_test
