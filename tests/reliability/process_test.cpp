// `run` and `tune` as a careless or hostile user drives them, end to end through the built binary (issue 16):
// the wrapped command's flags stay its own, nothing is launched when an option is wrong, no process outlives
// profile-train, and every exit code of the README table is what the binary returns.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

const std::string kBinary = std::string(PT_BINARY_DIR) + "/profile-train";

struct Result {
  int rc = -1;  // exit status, or -signal
  std::string out, err;
};

// A running profile-train (no shell between us and it, so signals reach it and nothing else).
class Proc {
 public:
  Proc(const std::vector<std::string>& args, const fs::path& dir, const std::string& binary = kBinary)
      : out_(dir / "stdout.txt"), err_(dir / "stderr.txt") {
    std::vector<std::string> argv = {binary};
    argv.insert(argv.end(), args.begin(), args.end());
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, err_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (posix_spawn(&pid_, cargv[0], &fa, nullptr, cargv.data(), environ) != 0) pid_ = -1;
    posix_spawn_file_actions_destroy(&fa);
  }
  ~Proc() {
    if (pid_ > 0 && !done_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void signal(int sig) const { ::kill(pid_, sig); }
  // Waits up to `limit`; a process still running then is SIGKILLed and reported as rc = -SIGKILL.
  Result wait(std::chrono::seconds limit = std::chrono::seconds(60)) {
    Result r;
    const auto until = clock_type::now() + limit;
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (clock_type::now() > until) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    done_ = true;
    r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
    r.out = slurp(out_);
    r.err = slurp(err_);
    return r;
  }

 private:
  fs::path out_, err_;
  pid_t pid_ = -1;
  bool done_ = false;
};

bool alive(pid_t pid) {
  if (::kill(pid, 0) != 0) return errno == EPERM;
  // A zombie is not running any more (it waits for a parent to reap it).
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string s((std::istreambuf_iterator<char>(stat)), {});
  const size_t paren = s.rfind(')');
  return paren == std::string::npos || paren + 2 >= s.size() || s[paren + 2] != 'Z';
}

// True once `pid` has stopped running, polling up to `limit`.
bool gone_within(pid_t pid, std::chrono::milliseconds limit) {
  const auto until = clock_type::now() + limit;
  while (alive(pid)) {
    if (clock_type::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// The pid a command wrote into `file`, waiting up to 10 s for it to appear.
pid_t wait_for_pid_file(const fs::path& file) {
  const auto until = clock_type::now() + std::chrono::seconds(10);
  while (clock_type::now() < until) {
    std::ifstream in(file);
    long pid = 0;
    if (in >> pid && pid > 0) return static_cast<pid_t>(pid);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return -1;
}

int count_lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

class Reliability : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("pt_rel_proc_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    for (pid_t p : strays_) ::kill(p, SIGKILL);
    fs::remove_all(dir_);
  }

  Result run(const std::vector<std::string>& args, std::chrono::seconds limit = std::chrono::seconds(60)) {
    Proc p(args, dir_);
    return p.wait(limit);
  }

  fs::path write(const std::string& name, const std::string& content) {
    const fs::path p = dir_ / name;
    fs::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p;
  }

  // A rules folder holding one file that is not valid JSON.
  fs::path bad_rules() { return write("bad-rules/broken.json", "{\n  \"id\": \"broken\",\n  oops\n}\n").parent_path(); }

  // A rules folder holding a valid rule (a copy of a built-in one).
  fs::path good_rules() {
    const fs::path d = dir_ / "good-rules";
    fs::create_directories(d);
    fs::copy_file(fs::path(PT_SOURCE_DIR) / "rules" / "amp.json", d / "amp.json");
    return d;
  }

  // A small valid Kineto trace whose verdict is input_pipeline.
  fs::path input_bound_trace() {
    return write("small.json", R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 1000000,
      "computeMajor": 8, "computeMinor": 0, "numSms": 80, "maxThreadsPerMultiprocessor": 2048}],
      "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 1000, "dur": 40},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1040, "dur": 2, "args": {"correlation": 7, "External id": 3}},
      {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1043, "dur": 55,
       "args": {"device": 0, "stream": 7, "correlation": 7, "External id": 3, "grid": [80, 1, 1], "block": [256, 1, 1]}}
      ]})");
  }

  std::string out() const { return (dir_ / "out").string(); }

  fs::path dir_;
  std::vector<pid_t> strays_;  // killed at the end whatever happens
};

// ---- item 8: everything after `--` belongs to the command ------------------------------------------------

TEST_F(Reliability, RunGivesTheCommandItsFlagsAfterAMultiValueOption) {
  const fs::path mark = dir_ / "mark.txt";
  const auto r = run({"run", "--out", out(), "--rules", good_rules().string(), "--", "sh", "-c",
                      "echo hi > '" + mark.string() + "'"});
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(mark), "hi\n") << r.err;
}

TEST_F(Reliability, TuneGivesTheCommandItsFlagsAfterAMultiValueOption) {
  const fs::path mark = dir_ / "mark.txt";
  const auto r = run({"tune", "--knob", "num_workers=0", "--max-trials", "1", "--repeats", "1", "--baseline-repeats",
                      "1", "--out", out(), "--quiet", "--", "sh", "-c",
                      "echo {num_workers} >> '" + mark.string() + "'"});
  EXPECT_EQ(r.err.find("not expected"), std::string::npos) << r.err;
  EXPECT_EQ(slurp(mark).substr(0, 2), "0\n") << r.err;  // the trial ran the command with its own -c
}

// ---- item 2: a typo costs nothing --------------------------------------------------------------------------

TEST_F(Reliability, BadRulesAreRejectedBeforeTheCommandRuns) {
  const fs::path mark = dir_ / "ran";
  const auto r = run({"run", "--out", out(), "--rules", bad_rules().string(), "--", "touch", mark.string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(mark)) << "the command ran before --rules was checked";
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
}

TEST_F(Reliability, MissingRulesFolderIsRejectedBeforeTheCommandRuns) {
  const fs::path mark = dir_ / "ran";
  const auto r = run({"run", "--out", out(), "--rules", (dir_ / "no-such-rules").string(), "--", "touch", mark.string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(mark));
  EXPECT_NE(r.err.find("no-such-rules"), std::string::npos) << r.err;
}

TEST_F(Reliability, UnwritablePerfettoPathIsRejectedBeforeTheCommandRuns) {
  const fs::path mark = dir_ / "ran";
  const fs::path file = write("a-file", "x");
  const auto r = run({"run", "--out", out(), "--perfetto", (file / "sub" / "t.json").string(), "--", "touch",
                      mark.string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(mark));
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--perfetto"), std::string::npos) << r.err;
}

TEST_F(Reliability, TuneChecksItsRunArgumentsBeforeTheFirstTrial) {
  const fs::path mark = dir_ / "ran";
  const auto r = run({"tune", "--run-arg=--rules=" + bad_rules().string(), "--knob", "num_workers=0,1", "--out", out(),
                      "--quiet", "--", "touch", mark.string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(mark)) << "a trial ran before --run-arg was checked";
  EXPECT_NE(r.err.find("broken.json"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "tune.json")) << "no sweep should have started";
}

// The trial command is checked in tune's own process (validate_run_args), with run's own parser: an option
// `run` does not know is one line naming it, before any trial.
TEST_F(Reliability, TuneRejectsARunArgumentThatRunDoesNotKnow) {
  const fs::path mark = dir_ / "ran";
  const auto r = run({"tune", "--run-arg=--no-such-option", "--knob", "num_workers=0,1", "--out", out(), "--quiet",
                      "--", "touch", mark.string()});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_FALSE(fs::exists(mark)) << "a trial ran before --run-arg was checked";
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("--no-such-option"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the trial command (--run-arg options"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "out" / "trials" / "validate")) << "the check's folder is removed";
}

TEST_F(Reliability, TuneRejectsAnUnwritableOutFolder) {
  const fs::path file = write("a-file", "x");
  const auto r = run({"tune", "--knob", "num_workers=0", "--out", (file / "tune").string(), "--", "true"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

// ---- item 10: nothing outlives profile-train -----------------------------------------------------------------

// SIGTERM to profile-train reaches the command's whole process group; what ignores it is SIGKILLed after
// --kill-after, grandchildren included.
TEST_F(Reliability, SigtermStopsACommandThatIgnoresItAndItsGrandchild) {
  const fs::path pid_file = dir_ / "grandchild.pid";
  Proc p({"run", "--out", out(), "--kill-after", "1", "--", "sh", "-c",
          "trap '' INT TERM; sleep 300 & echo $! > '" + pid_file.string() + "'; wait"},
         dir_);
  const pid_t grandchild = wait_for_pid_file(pid_file);
  ASSERT_GT(grandchild, 0);
  strays_.push_back(grandchild);
  p.signal(SIGTERM);
  const auto t0 = clock_type::now();
  const Result r = p.wait(std::chrono::seconds(15));
  const double waited = std::chrono::duration<double>(clock_type::now() - t0).count();
  EXPECT_EQ(r.rc, 143) << r.err;
  EXPECT_LT(waited, 8.0) << "--kill-after 1 should bound the stop";
  EXPECT_TRUE(gone_within(grandchild, std::chrono::milliseconds(2000))) << "the grandchild outlived profile-train";
}

// A worker started by the command (like a DataLoader worker) stops with it on SIGTERM, not seconds later.
TEST_F(Reliability, SigtermStopsTheCommandsWorkersAtOnce) {
  const fs::path pid_file = dir_ / "worker.pid";
  Proc p({"run", "--out", out(), "--", "sh", "-c", "sleep 300 & echo $! > '" + pid_file.string() + "'; exec sleep 300"},
         dir_);
  const pid_t worker = wait_for_pid_file(pid_file);
  ASSERT_GT(worker, 0);
  strays_.push_back(worker);
  p.signal(SIGTERM);
  const Result r = p.wait(std::chrono::seconds(15));
  EXPECT_EQ(r.rc, 143) << r.err;
  EXPECT_TRUE(gone_within(worker, std::chrono::milliseconds(500))) << "the worker outlived profile-train";
}

// A process the command left behind in another session (re-parented to profile-train, a subreaper) is
// stopped when the command ends, and the user is told.
TEST_F(Reliability, ProcessLeftInAnotherSessionIsStopped) {
  const fs::path pid_file = dir_ / "daemon.pid";
  Proc p({"run", "--out", out(), "--kill-after", "1", "--", "sh", "-c",
          "setsid sleep 300 & echo $! > '" + pid_file.string() + "'; sleep 0.2"},
         dir_);
  const pid_t daemon = wait_for_pid_file(pid_file);
  ASSERT_GT(daemon, 0);
  strays_.push_back(daemon);
  const Result r = p.wait(std::chrono::seconds(15));
  EXPECT_TRUE(gone_within(daemon, std::chrono::milliseconds(2000))) << "the daemonized process outlived run: " << r.err;
  EXPECT_NE(r.err.find("left running"), std::string::npos) << r.err;
}

// Pids whose parent is `parent` (from /proc).
std::vector<pid_t> children_of(pid_t parent) {
  std::vector<pid_t> out;
  for (const auto& e : fs::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::ifstream stat(e.path() / "stat");
    std::string s((std::istreambuf_iterator<char>(stat)), {});
    const size_t paren = s.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream rest(s.substr(paren + 1));
    char state = 0;
    long ppid = 0;
    if (rest >> state >> ppid && ppid == parent) out.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return out;
}

// The issue's case with a real PyTorch DataLoader: its worker processes were still alive 4-8 s after
// profile-train had exited on SIGTERM. They must stop with the training.
TEST_F(Reliability, DataLoaderWorkersStopWithTheTrainingOnSigterm) {
  const fs::path python = PT_PYTHON;
  if (python.empty() || !fs::exists(python)) GTEST_SKIP() << "no Python with torch (PT_PYTHON)";
  const fs::path script = fs::path(PT_SOURCE_DIR) / "tests" / "agent" / "data" / "train_slow_loader.py";
  Proc p({"run", "--out", out(), "--", python.string(), script.string(), "--workers", "2", "--steps", "100000",
          "--sample-ms", "1"},
         dir_);
  std::vector<pid_t> workers;
  const auto until = clock_type::now() + std::chrono::seconds(60);
  while (workers.size() < 2 && clock_type::now() < until) {
    workers.clear();
    for (pid_t trainer : children_of(p.pid()))
      for (pid_t w : children_of(trainer)) workers.push_back(w);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_GE(workers.size(), 2u) << "the DataLoader workers never started";
  for (pid_t w : workers) strays_.push_back(w);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a few steps
  p.signal(SIGTERM);
  const Result r = p.wait(std::chrono::seconds(40));
  EXPECT_EQ(r.rc, 143) << r.err;
  for (pid_t w : workers) EXPECT_TRUE(gone_within(w, std::chrono::milliseconds(300))) << "worker " << w << " outlived run";
  EXPECT_TRUE(fs::exists(dir_ / "out" / "report.json")) << r.err;
}

// profile-train SIGKILLed (no chance to clean up): the kernel sends the command SIGTERM (PR_SET_PDEATHSIG).
TEST_F(Reliability, SigkilledProfileTrainDoesNotLeaveTheCommandRunning) {
  const fs::path pid_file = dir_ / "command.pid";
  Proc p({"run", "--out", out(), "--", "sh", "-c", "echo $$ > '" + pid_file.string() + "'; exec sleep 300"}, dir_);
  const pid_t command = wait_for_pid_file(pid_file);
  ASSERT_GT(command, 0);
  strays_.push_back(command);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the exec of sleep
  p.signal(SIGKILL);
  p.wait(std::chrono::seconds(5));
  EXPECT_TRUE(gone_within(command, std::chrono::milliseconds(2000))) << "the command kept running unobserved";
}

// profile-train on a terminal, as a user runs it: the command is in its own process group, so the terminal's
// Ctrl-C reaches only profile-train, which must forward it (and a command that reads the terminal must get
// it). Returns the exit code, -1 on a timeout; `feed` is typed on the terminal once `ready` exists.
struct PtyRun {
  int rc = -1;
  std::string screen;
};
PtyRun run_on_terminal(const std::vector<std::string>& args, const fs::path& ready, const std::string& feed) {
  PtyRun r;
  int master = -1;
  std::vector<std::string> argv = {kBinary};
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> cargv;
  for (auto& a : argv) cargv.push_back(a.data());
  cargv.push_back(nullptr);
  const pid_t pid = ::forkpty(&master, nullptr, nullptr, nullptr);
  if (pid < 0) return r;
  if (pid == 0) {
    ::execv(cargv[0], cargv.data());
    ::_exit(127);
  }
  ::fcntl(master, F_SETFL, O_NONBLOCK);
  const auto until = clock_type::now() + std::chrono::seconds(20);
  bool fed = false;
  int status = 0;
  char buf[4096];
  for (;;) {
    ssize_t n;
    while ((n = ::read(master, buf, sizeof buf)) > 0) r.screen.append(buf, static_cast<size_t>(n));
    if (!fed && fs::exists(ready)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the command reaches its read / sleep
      [[maybe_unused]] ssize_t w = ::write(master, feed.data(), feed.size());
      fed = true;
    }
    if (::waitpid(pid, &status, WNOHANG) == pid) {
      r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
      break;
    }
    if (clock_type::now() > until) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::close(master);
  return r;
}

TEST_F(Reliability, CtrlCOnTheTerminalStopsTheCommand) {
  const fs::path ready = dir_ / "ready";
  const auto r = run_on_terminal({"run", "--out", out(), "--", "sh", "-c", "touch '" + ready.string() + "'; sleep 300"},
                                 ready, "\x03");
  EXPECT_EQ(r.rc, 130) << r.screen;
}

TEST_F(Reliability, ACommandThatReadsTheTerminalGetsIt) {
  const fs::path ready = dir_ / "ready", got = dir_ / "got.txt";
  const auto r = run_on_terminal({"run", "--out", out(), "--", "sh", "-c",
                                  "touch '" + ready.string() + "'; read line; echo \"$line\" > '" + got.string() + "'"},
                                 ready, "hello\n");
  EXPECT_NE(r.rc, -1) << "the command never got the terminal: " << r.screen;
  EXPECT_EQ(slurp(got), "hello\n") << r.screen;
}

// tune stopped by SIGTERM stops its trial (and the trial's command) and says so with 143.
TEST_F(Reliability, SigtermStopsTuneAndItsTrial) {
  const fs::path pid_file = dir_ / "trial-command.pid";
  Proc p({"tune", "--knob", "num_workers=0", "--out", out(), "--quiet", "--", "sh", "-c",
          "echo $$ > '" + pid_file.string() + "'; exec sleep 300"},
         dir_);
  const pid_t command = wait_for_pid_file(pid_file);
  ASSERT_GT(command, 0);
  strays_.push_back(command);
  p.signal(SIGTERM);
  const Result r = p.wait(std::chrono::seconds(30));
  EXPECT_EQ(r.rc, 143) << r.err;
  EXPECT_TRUE(gone_within(command, std::chrono::milliseconds(2000))) << "the trial's command outlived tune";
}

// ---- item 14: the README's exit-code table is what the binary does -------------------------------------------

// The codes listed in README.md's "Exit codes" table.
std::set<int> readme_exit_codes() {
  std::istringstream in(slurp(fs::path(PT_SOURCE_DIR) / "README.md"));
  std::set<int> codes;
  std::string line;
  bool in_section = false;
  const std::regex row(R"(^\|\s*([0-9]+)\s*\|)");
  while (std::getline(in, line)) {
    if (line.rfind("## ", 0) == 0) in_section = line == "## Exit codes";
    std::smatch m;
    if (in_section && std::regex_search(line, m, row)) codes.insert(std::stoi(m[1]));
  }
  return codes;
}

TEST_F(Reliability, ReadmeExitCodesAreWhatTheBinaryReturns) {
  // One representative case per documented code.
  std::map<int, std::function<Result()>> cases;
  cases[0] = [&] { return run({"analyze", input_bound_trace().string(), "--out", out(), "--format", "json"}); };
  cases[1] = [&] {  // a broken installation: the binary without its capture agent next to it
    const fs::path alone = dir_ / "alone";
    fs::create_directories(alone);
    fs::copy_file(kBinary, alone / "profile-train");
    Proc p({"run", "--out", out(), "--", "true"}, dir_, (alone / "profile-train").string());
    return p.wait();
  };
  cases[2] = [&] { return run({"analyze", (dir_ / "missing.json").string()}); };
  cases[3] = [&] {
    return run({"analyze", input_bound_trace().string(), "--out", out(), "--format", "json", "--fail-on",
                "input_pipeline"});
  };
  cases[4] = [&] { return run({"run", "--out", out(), "--", "false"}); };
  auto stopped_by = [&](int sig) {
    const fs::path pid_file = dir_ / "sleep.pid";
    fs::remove(pid_file);
    Proc p({"run", "--out", out(), "--", "sh", "-c", "echo $$ > '" + pid_file.string() + "'; exec sleep 300"}, dir_);
    EXPECT_GT(wait_for_pid_file(pid_file), 0);
    p.signal(sig);
    return p.wait(std::chrono::seconds(20));
  };
  cases[130] = [&] { return stopped_by(SIGINT); };
  cases[143] = [&] { return stopped_by(SIGTERM); };

  const std::set<int> documented = readme_exit_codes();
  ASSERT_FALSE(documented.empty()) << "no exit-code table found in README.md";
  for (int code : documented) {
    auto it = cases.find(code);
    if (it == cases.end()) {
      ADD_FAILURE() << "README documents exit code " << code << " but this test has no case for it";
      continue;
    }
    const Result r = it->second();
    EXPECT_EQ(r.rc, code) << "README exit code " << code << ": " << r.err;
  }
  for (const auto& [code, fn] : cases)
    EXPECT_TRUE(documented.count(code)) << "the binary returns " << code << " but README.md does not document it";
}

// The cases the issue found in disagreement with the README.
TEST_F(Reliability, NothingCapturedIsBadInputNotAnInternalError) {
  const auto r = run({"run", "--out", out(), "--", "true"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
}

TEST_F(Reliability, TuneWithACommandNotFoundIsBadUsage) {
  const auto r = run({"tune", "--knob", "num_workers=0", "--out", out(), "--", "/no/such/command", "--flag"});
  EXPECT_EQ(r.rc, 2) << r.err;
  EXPECT_EQ(count_lines(r.err), 1) << r.err;
  EXPECT_NE(r.err.find("/no/such/command"), std::string::npos) << r.err;
}

}  // namespace
