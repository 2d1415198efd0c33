// Outputs, limits and usage errors under a third hostile pass (issue 29, items 1-4, 9, 10, 13, 14, 17, 18),
// end to end through the binary. Each test failed on the code before its fix (beb4711).
#include <sys/stat.h>

#include <atomic>

#include <nlohmann/json.hpp>

#include "outputs_util.h"
#include "profile_train/common/atomic_file.h"

namespace pt_outputs_test {
namespace {

using nlohmann::json;

struct Raw {
  int rc = -1;  // exit code, or 128 + signal
  std::string err;
  long max_rss_kb = 0;
  double seconds = 0;
};

// Runs profile-train with signals at their defaults (unlike start(), which ignores SIGXFSZ for the child):
// `fsize` limits the file size (RLIMIT_FSIZE, 0: none); with `closed_stdout` stdout is a pipe whose reading end
// is already closed, as for `| head` once head has exited.
Raw run_raw(const std::vector<std::string>& args, const fs::path& err_file, rlim_t fsize = 0, bool closed_stdout = false,
            int timeout_s = 120) {
  int p[2] = {-1, -1};
  if (closed_stdout) {
    EXPECT_EQ(::pipe(p), 0);
  }
  const auto t0 = std::chrono::steady_clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : {SIGPIPE, SIGXFSZ}) ::signal(sig, SIG_DFL);
    const int err = ::open(err_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(err, 2);
    if (closed_stdout) {
      ::close(p[0]);
      ::dup2(p[1], 1);
    } else {
      const int null = ::open("/dev/null", O_WRONLY);
      ::dup2(null, 1);
    }
    ::setenv("NO_COLOR", "1", 1);
    if (fsize > 0) {
      const rlimit lim{fsize, fsize};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    std::vector<char*> argv{const_cast<char*>(kBinary.c_str())};
    for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  if (closed_stdout) {
    ::close(p[0]);  // nobody reads: the first write to stdout raises SIGPIPE / EPIPE
    ::close(p[1]);
  }
  int status = 0;
  rusage ru{};
  const auto until = t0 + std::chrono::seconds(timeout_s);
  while (::wait4(pid, &status, WNOHANG, &ru) == 0) {
    if (std::chrono::steady_clock::now() > until) {
      ::kill(pid, SIGKILL);
      ::wait4(pid, &status, 0, &ru);
      ADD_FAILURE() << "profile-train did not finish in " << timeout_s << " s";
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  Raw r;
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.err = slurp(err_file);
  r.max_rss_kb = ru.ru_maxrss;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

void expect_one_line(const std::string& err, const std::vector<std::string>& words) {
  EXPECT_EQ(count_lines(err), 1u) << err;
  EXPECT_EQ(err.rfind("profile-train", 0), 0u) << err;
  for (const auto& w : words) EXPECT_NE(err.find(w), std::string::npos) << "'" << w << "' not in: " << err;
  for (char c : std::string("\x1b\x07\r\b", 4)) EXPECT_EQ(err.find(c), std::string::npos) << "control byte in: " << err;
}

bool is_named_pipe(const fs::path& p) {
  struct stat st {};
  return ::lstat(p.c_str(), &st) == 0 && S_ISFIFO(st.st_mode);
}

class Hostile3 : public OutputsTest {
 protected:
  Raw raw(const std::vector<std::string>& args, rlim_t fsize = 0, bool closed_stdout = false, int timeout_s = 120) {
    return run_raw(args, dir_ / ("raw" + std::to_string(++runs_) + ".err"), fsize, closed_stdout, timeout_s);
  }
  // small_trace() as rank `rank` of a job of `world` ranks (Kineto distributedInfo).
  fs::path rank_trace(const std::string& name, int rank, int world) {
    std::string text = slurp(small_trace(name));
    text.insert(1, R"("distributedInfo": {"backend": "nccl", "rank": )" + std::to_string(rank) + R"(, "world_size": )" +
                       std::to_string(world) + "}, ");
    return write(name, text);
  }
};

// ---- item 1: the folder lock is never opened through a symlink ------------------------------------------

TEST_F(Hostile3, ALockFileThatIsASymlinkIsRefusedAndItsTargetUntouched) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  const fs::path victim = write("victim.txt", "precious\n");
  fs::create_symlink(victim, out / ".profile-train.lock");
  const Result analyze = run({"analyze", small_trace("t.json").string(), "--out", out.string()});
  EXPECT_EQ(analyze.rc, 2) << analyze.err;
  expect_one_line(analyze.err, {".profile-train.lock", "symbolic link"});
  const Result run_cmd = run({"run", "--out", out.string(), "--", "true"});
  EXPECT_EQ(run_cmd.rc, 2) << run_cmd.err;
  EXPECT_NE(run_cmd.err.find("symbolic link"), std::string::npos) << run_cmd.err;
  EXPECT_EQ(slurp(victim), "precious\n") << "the lock's target was overwritten";
  EXPECT_TRUE(fs::is_symlink(out / ".profile-train.lock"));
}

TEST_F(Hostile3, ALockFileThatIsAFifoIsRefusedWithoutHanging) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  ASSERT_EQ(::mkfifo((out / ".profile-train.lock").c_str(), 0644), 0);
  const Raw r = raw({"analyze", small_trace("t.json").string(), "--out", out.string()}, 0, false, 30);
  EXPECT_EQ(r.rc, 2) << r.err;
  expect_one_line(r.err, {".profile-train.lock", "not a regular file"});
}

// ---- item 2: the atomic writer replaces only regular files -----------------------------------------------

TEST_F(Hostile3, PerfettoNamingAFifoASymlinkOrADeviceIsRefused) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  const fs::path victim = write("victim.txt", "precious\n");
  const fs::path to_victim = dir_ / "to_victim", to_full = dir_ / "to_full";
  fs::create_symlink(victim, to_victim);
  fs::create_symlink("/dev/full", to_full);
  const fs::path t = small_trace("t.json");
  int k = 0;
  for (const auto& [target, what] : std::vector<std::pair<fs::path, std::string>>{
           {fifo, "FIFO"}, {to_victim, "symbolic link"}, {to_full, "symbolic link"}}) {
    const Result r = run({"analyze", t.string(), "--out", (dir_ / ("o" + std::to_string(++k))).string(), "--perfetto",
                          target.string()});
    EXPECT_EQ(r.rc, 2) << target << ": " << r.err;
    expect_one_line(r.err, {target.string(), what});
  }
  EXPECT_TRUE(is_named_pipe(fifo)) << "the FIFO was replaced";
  EXPECT_TRUE(fs::is_symlink(to_victim) && fs::is_symlink(to_full)) << "a symlink was replaced";
  EXPECT_EQ(slurp(victim), "precious\n");
}

TEST_F(Hostile3, AReportPathThatIsASymlinkIsNotReplaced) {
  const fs::path out = dir_ / "out";
  fs::create_directories(out);
  const fs::path victim = write("victim.txt", "precious\n");
  fs::create_symlink(victim, out / "report.json");
  const Result r = run({"analyze", small_trace("t.json").string(), "--out", out.string(), "--format", "json"});
  EXPECT_EQ(r.rc, 2) << r.err;
  expect_one_line(r.err, {"report.json", "symbolic link"});
  EXPECT_TRUE(fs::is_symlink(out / "report.json"));
  EXPECT_EQ(slurp(victim), "precious\n");
}

TEST_F(Hostile3, AtomicWriterRefusesAFifoAndADevice) {
  const fs::path fifo = dir_ / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  for (const fs::path& p : {fifo, fs::path("/dev/null")}) {
    const profile_train::Status s = profile_train::write_file_atomic(p, "x");
    EXPECT_EQ(s.code(), profile_train::StatusCode::kInvalidArgument) << p << ": " << s.message();
    EXPECT_EQ(s.exit_code(), 2);
  }
  EXPECT_TRUE(is_named_pipe(fifo));
  EXPECT_TRUE(profile_train::write_file_atomic(dir_ / "new.txt", "x").ok());
  EXPECT_TRUE(profile_train::write_file_atomic(dir_ / "new.txt", "y").ok());  // a regular file is replaced
  EXPECT_EQ(slurp(dir_ / "new.txt"), "y");
}

// ---- item 3: a file-size limit is "File too large", exit 2, no temporary file ------------------------

TEST_F(Hostile3, FileSizeLimitIsExit2AndLeavesNoTemporaryFile) {
  const fs::path out = dir_ / "out";
  const Raw r = raw({"analyze", small_trace("t.json").string(), "--out", out.string()}, /*fsize=*/4096);
  EXPECT_EQ(r.rc, 2) << "killed by SIGXFSZ? " << r.err;
  EXPECT_NE(r.err.find("File too large"), std::string::npos) << r.err;
  EXPECT_TRUE(temp_files(out).empty()) << temp_files(out)[0];
}

// ---- item 4: stdout closed early (| head) does not kill us before the files are written -----------------

TEST_F(Hostile3, AClosedStdoutStillGetsEveryFileWritten) {
  const fs::path out = dir_ / "out";
  const fs::path r0 = rank_trace("r0.json", 0, 2), r1 = rank_trace("r1.json", 1, 2);
  const Raw r = raw({"analyze", r0.string(), r1.string(), "--out", out.string()}, 0, /*closed_stdout=*/true);
  EXPECT_NE(r.rc, 141) << "killed by SIGPIPE";
  EXPECT_EQ(r.rc, 0) << r.err;
  for (const char* f : {"r0/report.json", "r1/report.html", "job.json", "summary.html"})
    EXPECT_TRUE(fs::exists(out / f)) << f << " missing";
  const Raw diff = raw({"diff", (out / "r0").string(), (out / "r1").string(), "--out", (dir_ / "d").string()}, 0, true);
  EXPECT_EQ(diff.rc, 0) << diff.err;
  EXPECT_TRUE(fs::exists(dir_ / "d" / "diff.html"));
}

// ---- item 9: nesting limit on report.json for diff and rules explain ---------------------------------------

TEST_F(Hostile3, DeeplyNestedReportIsRefusedQuicklyWithLittleMemory) {
  const fs::path good = dir_ / "good";
  ASSERT_EQ(run({"analyze", small_trace("t.json").string(), "--out", good.string(), "--format", "json"}).rc, 0);
  // 8 MB of nested arrays inside an otherwise plausible report.
  const fs::path deep = write("deep.json", R"({"schema_version": "1.0", "x": )" + std::string(8'000'000, '[') + "]}");
  const Raw d = raw({"diff", (good / "report.json").string(), deep.string()});
  EXPECT_EQ(d.rc, 2) << d.err;
  expect_one_line(d.err, {"deep.json", "deeper than 64"});
  EXPECT_LT(d.max_rss_kb, 120 * 1024) << "RSS " << d.max_rss_kb / 1024 << " MiB";
  const Raw e = raw({"rules", "explain", "avoid-host-sync", deep.string()});
  EXPECT_EQ(e.rc, 2) << e.err;
  expect_one_line(e.err, {"deep.json", "deeper than 64"});
  EXPECT_LT(e.max_rss_kb, 120 * 1024) << "RSS " << e.max_rss_kb / 1024 << " MiB";
}

// ---- item 10: launches sharing one correlation id are matched in linear time; the analysis is bounded -----

fs::path shared_correlation_trace(const fs::path& dir, int n) {
  std::string s = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Test GPU", "totalGlobalMem": 1000000}],
    "traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": )" +
                  std::to_string(10 * n + 100) + "}";
  for (int i = 0; i < n; ++i) {
    const std::string ts = std::to_string(1001 + 10 * i);
    s += R"(,{"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":)" + ts +
         R"(,"dur":2,"args":{"correlation":7}})";
    s += R"(,{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":)" + std::to_string(1004 + 10 * i) +
         R"(,"dur":5,"args":{"device":0,"stream":7,"correlation":7}})";
  }
  const fs::path p = dir / "shared_corr.json";
  spit(p, s + "]}");
  return p;
}

TEST_F(Hostile3, ManyLaunchesSharingOneCorrelationIdAreLinear) {
  // 60k launches and 60k kernels under one id: 60k x 60k pairs before the fix (about 30 s on an idle machine),
  // well under a second now.
  const fs::path t = shared_correlation_trace(dir_, 60'000);
  const Raw r = raw({"analyze", t.string(), "--out", (dir_ / "out").string(), "--format", "json"}, 0, false, 60);
  EXPECT_EQ(r.rc, 0) << r.err;
  EXPECT_LT(r.seconds, 10.0);
  const json report = json::parse(slurp(dir_ / "out" / "report.json"));
  EXPECT_EQ(report["steps"]["count"], 1);
}

TEST_F(Hostile3, TheAnalysisHasATimeBound) {
  // Large enough that the analysis (about 0.2 s) cannot finish before a 1 us bound is checked, even when the
  // waiting thread is descheduled on a loaded machine (with 2000 launches it finished first once in CI's run).
  const fs::path t = shared_correlation_trace(dir_, 20000);
  const fs::path out = dir_ / "out";
  const Raw r = raw({"analyze", t.string(), "--out", out.string(), "--max-analysis-seconds", "0.000001"});
  EXPECT_EQ(r.rc, 2) << r.err;
  expect_one_line(r.err, {t.string(), "analysis still running", "--max-analysis-seconds"});
  EXPECT_FALSE(fs::exists(out / "report.json"));
  EXPECT_EQ(raw({"analyze", t.string(), "--out", out.string(), "--max-analysis-seconds", "-1"}).rc, 2);
  const Raw ok = raw({"analyze", t.string(), "--out", out.string(), "--max-analysis-seconds", "inf"});
  EXPECT_EQ(ok.rc, 0) << ok.err;
}

// ---- item 13: a huge --max-load-seconds is no limit, not an overflow ------------------------------------

TEST_F(Hostile3, AHugeOrInfiniteLoadLimitIsNoLimit) {
  const fs::path t = small_trace("t.json");
  for (const char* s : {"9.3e9", "1e10", "1e300", "inf"}) {
    const Result r = run({"analyze", t.string(), "--out", (dir_ / "out").string(), "--max-load-seconds", s});
    EXPECT_EQ(r.rc, 0) << s << ": " << r.err;
  }
}

// ---- item 14: run --out '' ----------------------------------------------------------------------------

TEST_F(Hostile3, AnEmptyOutFolderIsBadUsageForRunAsForAnalyze) {
  const Result r = run({"run", "--out", "", "--", "true"});
  EXPECT_EQ(r.rc, 2) << r.err;
  expect_one_line(r.err, {"--out"});
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  const Result a = run({"analyze", small_trace("t.json").string(), "--out", ""});
  EXPECT_EQ(a.rc, 2) << a.err;
  // tune too: one line naming --out, not ": cannot create output folder: Invalid argument".
  const Result t = run({"tune", "--out", "", "--", "true", "{num_workers}"});
  EXPECT_EQ(t.rc, 2) << t.err;
  expect_one_line(t.err, {"--out", "empty folder name"});
}

// ---- item 17: every usage error is one sanitized line -------------------------------------------------

TEST_F(Hostile3, UsageErrorsAreOneInertLine) {
  const std::string evil = "\x1b[31mred\x07\x1b]0;title\x07";
  const std::string t = small_trace("t.json").string();
  const std::vector<std::vector<std::string>> cases = {
      {"analyze", t, "--max-input-size", evil},           // our own message
      {"run", "--kill-after", evil, "--", "true"},         // CLI11: Could not convert
      {"analyze", t, "--jobs", evil},                      // CLI11: Could not convert
      {"analyze", t, "--no-such-option" + evil},           // CLI11: not expected
      {"rules", "show"},                                   // CLI11: required
      {"analyze", t, "--jobs", "-1"},                      // a range, not 300 digits
      {"run", "--steps", "-3", "--", "true"},
  };
  for (const auto& args : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.rc, 2) << args[1] << " " << args.back() << ": " << r.err;
    expect_one_line(r.err, {});
    EXPECT_LT(r.err.size(), 300u) << r.err;
  }
}

// ---- item 18: an unknown rule id is bad usage everywhere ---------------------------------------------

TEST_F(Hostile3, AnUnknownRuleIdIsExit2ForExplainToo) {
  const fs::path t = small_trace("t.json");
  const Result a = run({"analyze", t.string(), "--out", (dir_ / "out").string(), "--explain", "no_such_rule"});
  EXPECT_EQ(a.rc, 2) << a.err;
  expect_one_line(a.err, {"no_such_rule"});
  ASSERT_EQ(run({"analyze", t.string(), "--out", (dir_ / "ok").string(), "--format", "json"}).rc, 0);
  const Result e = run({"rules", "explain", "no_such_rule", (dir_ / "ok" / "report.json").string()});
  EXPECT_EQ(e.rc, 2) << e.err;
  expect_one_line(e.err, {"no_such_rule"});
  const Result s = run({"rules", "show", "no_such_rule"});
  EXPECT_EQ(s.rc, 2);
}

// ---- a FIFO as the trace: opening one waits for a writer, reading one consumes its bytes ----------------------

TEST_F(Hostile3, ATraceThatIsAFifoWithNoWriterIsOneLineNotAHang) {
  const fs::path fifo = dir_ / "pipe.pt.trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // Before the fix, open() waited for a writer forever (the test's timeout killed it).
  const Raw r = raw({"analyze", fifo.string(), "--out", (dir_ / "out").string()}, 0, false, 30);
  EXPECT_EQ(r.rc, 2) << r.err;
  expect_one_line(r.err, {fifo.string()});
  EXPECT_LT(r.seconds, 20) << r.err;
}

TEST_F(Hostile3, ATraceFedThroughAFifoGivesTheReportOfTheFile) {
  const fs::path trace = small_trace("t.json");
  const Result file = run({"analyze", trace.string(), "--out", (dir_ / "from-file").string(), "--format", "json"});
  ASSERT_EQ(file.rc, 0) << file.err;
  const fs::path fifo = dir_ / "fed.pt.trace.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  // A writer as a shell's `cat trace > fifo` is: its open() waits for a reader, then it writes the trace and
  // closes. The reader may start before the writer has reached its open(): it then reads an empty stream and
  // exits 2, the writer's next write fails (EPIPE), and both try again.
  const auto old_pipe = ::signal(SIGPIPE, SIG_IGN);
  std::atomic<bool> done{false};
  std::thread writer([&] {
    const std::string text = slurp(trace);
    for (bool written = false; !written && !done.load();) {
      const int fd = ::open(fifo.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return;
      if (done.load()) {  // the test's own open, to let this one return
        ::close(fd);
        return;
      }
      size_t at = 0;
      while (at < text.size()) {
        const ssize_t n = ::write(fd, text.data() + at, text.size() - at);
        if (n <= 0) break;
        at += static_cast<size_t>(n);
      }
      written = at == text.size();  // else the reader had gone (EPIPE): the next one gets the whole trace
      ::close(fd);
    }
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  Raw r;
  for (int attempt = 0; attempt < 20; ++attempt) {
    r = raw({"analyze", fifo.string(), "--out", (dir_ / "from-fifo").string(), "--format", "json"}, 0, false, 60);
    if (r.rc == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  done = true;
  const int release = ::open(fifo.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);  // a waiting open() returns
  writer.join();
  if (release >= 0) ::close(release);
  ::signal(SIGPIPE, old_pipe);
  ASSERT_EQ(r.rc, 0) << r.err;
  auto a = json::parse(slurp(dir_ / "from-file" / "report.json"));
  auto b = json::parse(slurp(dir_ / "from-fifo" / "report.json"));
  a["source"].erase("files");
  b["source"].erase("files");
  EXPECT_EQ(a, b);
}

}  // namespace
}  // namespace pt_outputs_test
