// platform::run_process on real child processes (/bin/sh scripts): exit codes, signals, the SIGTERM -> SIGKILL
// escalation, the process group, the log file, the environment and the forwarding of our own SIGINT.
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "profile_train/platform/process.h"

namespace pp = profile_train::platform;
namespace fs = std::filesystem;

namespace {

class Process : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pt_platform_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  pp::ProcessSpec sh(const std::string& script) const {
    pp::ProcessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.env = pp::environment_with({"D=" + dir_.string()});
    spec.log_file = dir_ / "log";
    spec.stdin_from_null = true;
    return spec;
  }
  std::string log() const { return slurp(dir_ / "log"); }
  static std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Waits (up to 10 s) until `file` holds a complete line.
  bool wait_for_line(const fs::path& file) const {
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < until) {
      if (slurp(file).find('\n') != std::string::npos) return true;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return false;
  }
  pid_t pid_in(const std::string& name) const {
    const std::string text = slurp(dir_ / name);
    return text.empty() ? 0 : static_cast<pid_t>(std::stol(text));
  }
  // A process that ended is gone, or a zombie waiting for its (new) parent to reap it.
  static bool running(pid_t pid) {
    if (::kill(pid, 0) != 0) return false;
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    std::string line;
    std::getline(stat, line);
    const auto close = line.rfind(')');
    return close == std::string::npos || line.size() < close + 3 || line[close + 2] != 'Z';
  }

  fs::path dir_;
};

TEST_F(Process, ExitCodeIsTheCommandsExitStatus) {
  auto r = pp::run_process(sh("exit 7"), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 7);
  EXPECT_EQ(r->term_signal, 0);
  EXPECT_FALSE(r->timed_out);
  EXPECT_FALSE(r->interrupted);
}

TEST_F(Process, KilledBySignalIsReportedAsTheSignalAnd128PlusIt) {
  auto r = pp::run_process(sh("kill -SEGV $$"), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->term_signal, SIGSEGV);
  EXPECT_EQ(r->exit_code, 128 + SIGSEGV);
  EXPECT_TRUE(pp::is_crash_signal(r->term_signal));
  EXPECT_EQ(pp::signal_name(r->term_signal), "SIGSEGV");
  EXPECT_FALSE(pp::is_crash_signal(SIGTERM));
}

TEST_F(Process, StdoutAndStderrGoToTheLogFile) {
  auto r = pp::run_process(sh("echo to-stdout; echo to-stderr >&2"), {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(log(), "to-stdout\nto-stderr\n");
}

TEST_F(Process, EnvironmentIsPassedAndOverridesReplaceInheritedValues) {
  ::setenv("PT_PLATFORM_INHERITED", "from-parent", 1);
  ::setenv("PT_PLATFORM_REPLACED", "old", 1);
  pp::ProcessSpec spec = sh("echo \"$PT_PLATFORM_INHERITED $PT_PLATFORM_REPLACED $PT_PLATFORM_ADDED\"");
  spec.env = pp::environment_with({"PT_PLATFORM_REPLACED=new", "PT_PLATFORM_ADDED=added"});
  auto r = pp::run_process(spec, {});
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(log(), "from-parent new added\n");
  int replaced = 0;
  for (const auto& kv : spec.env) replaced += kv.rfind("PT_PLATFORM_REPLACED=", 0) == 0;
  EXPECT_EQ(replaced, 1);
  // The spec's environment is the whole environment: what it leaves out, the child does not get.
  pp::ProcessSpec bare = sh("echo \"[${PT_PLATFORM_INHERITED-unset}]\"");
  bare.env = {"PATH=/usr/bin:/bin"};
  ASSERT_TRUE(pp::run_process(bare, {}).ok());
  EXPECT_EQ(log(), "[unset]\n");
}

TEST_F(Process, TimeoutEscalatesToSigkillForACommandThatIgnoresSigterm) {
  // SIG_IGN is inherited across fork and exec: the shell and its sleeps all ignore SIGTERM.
  pp::StopPolicy policy;
  policy.timeout_s = 0.3;
  policy.grace_s = 0.5;
  const auto t0 = std::chrono::steady_clock::now();
  auto r = pp::run_process(sh("trap '' TERM; echo ready; while :; do sleep 0.05; done"), policy);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->term_signal, SIGKILL) << "SIGTERM was ignored: only the SIGKILL after the grace ends it";
  EXPECT_GE(took, 0.3 + 0.5);
  EXPECT_LT(took, 5);
  EXPECT_EQ(log(), "ready\n");
}

TEST_F(Process, TimeoutStopsAnObedientCommandWithSigtermBeforeTheGrace) {
  pp::StopPolicy policy;
  policy.timeout_s = 0.2;
  policy.grace_s = 20;
  auto r = pp::run_process(sh("echo ready; while :; do sleep 0.05; done"), policy);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->timed_out);
  EXPECT_EQ(r->term_signal, SIGTERM);
  EXPECT_LT(r->duration_s, 10);
}

TEST_F(Process, GrandchildrenAreStoppedWithTheGroupOnTimeout) {
  pp::StopPolicy policy;
  policy.timeout_s = 0.3;
  policy.grace_s = 1;
  auto r = pp::run_process(sh("sleep 30 & echo $! > \"$D/grandchild\"; wait"), policy);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->timed_out);
  const pid_t grandchild = pid_in("grandchild");
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(running(grandchild));
}

TEST_F(Process, WhatTheCommandLeavesInItsGroupIsStoppedWhenItEnds) {
  // The grandchild ignores SIGTERM too: it is SIGKILLed once the grace is over.
  pp::StopPolicy policy;
  policy.grace_s = 0.3;
  const auto t0 = std::chrono::steady_clock::now();
  // The command exits only once the grandchild ignores SIGTERM: otherwise the group's SIGTERM could reach the
  // subshell before its trap and end it at once (a race seen about 1 run in 9).
  auto r = pp::run_process(sh("(trap '' TERM; : > \"$D/ready\"; exec sleep 30) & echo $! > \"$D/grandchild\"; "
                              "while [ ! -e \"$D/ready\" ]; do sleep 0.01; done; exit 3"),
                           policy);
  const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 3);
  const pid_t grandchild = pid_in("grandchild");
  ASSERT_GT(grandchild, 0);
  EXPECT_FALSE(running(grandchild));
  EXPECT_GE(took, 0.3);
  EXPECT_LT(took, 5);
}

TEST_F(Process, StopRequestEndsTheCommand) {
  std::atomic<bool> stop{false};
  std::thread t([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
  });
  pp::StopPolicy policy;
  policy.stop = &stop;
  policy.grace_s = 1;
  auto r = pp::run_process(sh("sleep 30"), policy);
  t.join();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_TRUE(r->interrupted);
  EXPECT_FALSE(r->timed_out);
  EXPECT_LT(r->duration_s, 5);
}

TEST_F(Process, OurSigintIsForwardedToTheCommandsGroupAndRecorded) {
  pp::StopPolicy policy;
  policy.forward_signals = true;
  policy.grace_s = 5;
  // The signal reaches the group: the shell's foreground sleep dies of it, then the trap runs.
  std::thread t([&] {
    if (wait_for_line(dir_ / "log")) ::kill(::getpid(), SIGINT);
  });
  auto r = pp::run_process(sh("trap 'echo got-sigint; exit 5' INT; echo ready; while :; do sleep 0.05; done"), policy);
  t.join();
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->stop_signal, SIGINT);
  EXPECT_TRUE(r->interrupted);
  EXPECT_EQ(r->exit_code, 5);
  EXPECT_EQ(log(), "ready\ngot-sigint\n");
  // Our own handler is gone again: SIGINT's disposition is back to what it was.
  struct sigaction now {};
  ::sigaction(SIGINT, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);
}

TEST_F(Process, LaunchFailuresAreAStatusAndStartNothing) {
  pp::ProcessSpec missing = sh("");
  missing.argv = {"/nonexistent/binary"};
  auto r = pp::run_process(missing, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), profile_train::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("/nonexistent/binary"), std::string::npos);
  pp::ProcessSpec bad_log = sh("touch \"$D/ran\"");
  bad_log.log_file = dir_ / "no-such-folder" / "log";
  auto l = pp::run_process(bad_log, {});
  ASSERT_FALSE(l.ok());
  EXPECT_NE(l.status().message().find("no-such-folder"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir_ / "ran"));
}

// A script whose #! interpreter is missing: exec fails with ENOENT as if the script were missing; the error names
// the interpreter (issue 29, item 16), also for `#!/usr/bin/env NAME` with NAME not on PATH.
TEST_F(Process, AScriptWhoseInterpreterIsMissingNamesTheInterpreter) {
  const fs::path script = dir_ / "train.sh";
  std::ofstream(script) << "#!/nonexistent/python9 -u\nprint('hi')\n";
  fs::permissions(script, fs::perms::owner_all);
  pp::ProcessSpec spec = sh("");
  spec.argv = {script.string()};
  auto r = pp::run_process(spec, {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), profile_train::StatusCode::kNotFound);
  EXPECT_NE(r.status().message().find("interpreter /nonexistent/python9"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("command not found"), std::string::npos) << r.status().message();
  const fs::path via_env = dir_ / "train_env.sh";
  std::ofstream(via_env) << "#!/usr/bin/env pt-no-such-interpreter-xyz\n";
  fs::permissions(via_env, fs::perms::owner_all);
  auto e = pp::find_program(via_env.string());
  ASSERT_FALSE(e.ok());
  EXPECT_NE(e.status().message().find("interpreter pt-no-such-interpreter-xyz"), std::string::npos)
      << e.status().message();
  // A script whose interpreter exists, and a binary, are found as before.
  const fs::path fine = dir_ / "fine.sh";
  std::ofstream(fine) << "#!/bin/sh\nexit 0\n";
  fs::permissions(fine, fs::perms::owner_all);
  EXPECT_TRUE(pp::find_program(fine.string()).ok());
  EXPECT_TRUE(pp::find_program("sh").ok());
}

// Last: it makes the test process a subreaper for good.
TEST_F(Process, ProcessesThatLeftTheGroupAreCountedAndStopped) {
  pp::StopPolicy policy;
  policy.end_orphans = true;
  policy.grace_s = 1;
  auto r = pp::run_process(sh("setsid sh -c 'echo $$ > \"$D/escaped\"; exec sleep 30' & "
                              "while [ ! -s \"$D/escaped\" ]; do sleep 0.01; done; exit 0"),
                           policy);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->exit_code, 0);
  EXPECT_EQ(r->leftovers, 1);
  const pid_t escaped = pid_in("escaped");
  ASSERT_GT(escaped, 0);
  EXPECT_FALSE(running(escaped));
}

}  // namespace
