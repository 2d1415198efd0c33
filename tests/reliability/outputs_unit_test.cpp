// The helpers behind the output guarantees (issue 16): atomic replacement, the folder lock, UTF-8 repair and
// the terminal sanitizer.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "profile_train/common/atomic_file.h"
#include "profile_train/common/folder_lock.h"
#include "profile_train/common/terminal.h"
#include "profile_train/common/utf8.h"

namespace {

namespace fs = std::filesystem;
using namespace profile_train;

fs::path fresh(const std::string& name) {
  const fs::path d = fs::temp_directory_path() / ("pt_outputs_unit_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

size_t entries(const fs::path& d) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(d)) ++n;
  return n;
}

TEST(AtomicFile, ReplacesOnlyOnCommit) {
  const fs::path d = fresh("commit");
  ASSERT_TRUE(write_file_atomic(d / "f", "old").ok());
  {
    auto f = AtomicFile::create(d / "f");
    ASSERT_TRUE(f.ok());
    f->write("new, half written");
    EXPECT_EQ(slurp(d / "f"), "old");
  }  // dropped without commit: discarded
  EXPECT_EQ(slurp(d / "f"), "old");
  EXPECT_EQ(entries(d), 1u) << "the temporary file was left behind";
  ASSERT_TRUE(write_file_atomic(d / "f", "new").ok());
  EXPECT_EQ(slurp(d / "f"), "new");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFile, WriteErrorNamesThePathAndTheReasonAndKeepsTheOldFile) {
  const fs::path d = fresh("error");
  ASSERT_TRUE(write_file_atomic(d / "report.json", "old").ok());
  // A forked child under a 1 KiB file-size limit (SIGXFSZ ignored: write() fails with EFBIG).
  const pid_t pid = ::fork();
  if (pid == 0) {
    std::signal(SIGXFSZ, SIG_IGN);
    const rlimit lim{1024, 1024};
    ::setrlimit(RLIMIT_FSIZE, &lim);
    const Status s = write_file_atomic(d / "report.json", std::string(4096, 'x'));
    const bool named = s.message().find((d / "report.json").string()) != std::string::npos &&
                       s.message().find("File too large") != std::string::npos;
    ::_exit(s.ok() ? 1 : named ? 0 : 2);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
  EXPECT_EQ(slurp(d / "report.json"), "old");
  EXPECT_EQ(entries(d), 1u);
  fs::remove_all(d);
}

TEST(AtomicFile, MissingFolderIsAnIoError) {
  const Status s = write_file_atomic("/nonexistent-folder-pt/report.json", "x");
  EXPECT_EQ(s.code(), StatusCode::kIoError);
  EXPECT_NE(s.message().find("/nonexistent-folder-pt/report.json"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("No such file or directory"), std::string::npos) << s.message();
}

TEST(FolderLock, SecondLockFailsUntilTheFirstIsReleased) {
  const fs::path d = fresh("lock");
  {
    auto first = lock_output_folder(d, "run");
    ASSERT_TRUE(first.ok()) << first.status().message();
    // flock locks belong to the open file: a second open in this very process conflicts too.
    auto second = lock_output_folder(d, "analyze");
    ASSERT_FALSE(second.ok());
    EXPECT_EQ(second.status().exit_code(), kExitBadInput);
    EXPECT_NE(second.status().message().find("pid " + std::to_string(::getpid()) + ", run"), std::string::npos)
        << second.status().message();
  }
  EXPECT_TRUE(lock_output_folder(d, "analyze").ok());
  fs::remove_all(d);
}

TEST(Utf8, RepairReplacesInvalidBytesInValuesAndKeys) {
  nlohmann::json j = {{"ok", "caf\xC3\xA9"}, {"bad", "a\xff" "b"}, {"list", {"\xc3\x28", 1}}};
  j["k\xfe"] = "v";
  EXPECT_EQ(repair_utf8(j), 3u);
  EXPECT_EQ(j["ok"], "caf\xC3\xA9");
  EXPECT_EQ(j["bad"], "a\xEF\xBF\xBD" "b");
  EXPECT_EQ(j["list"][0], "\xEF\xBF\xBD(");
  EXPECT_EQ(j["k\xEF\xBF\xBD"], "v");
  EXPECT_NO_THROW((void)j.dump());
  EXPECT_EQ(repair_utf8(j), 0u);
}

TEST(TerminalSafe, ControlsBecomeVisibleEscapes) {
  EXPECT_EQ(terminal_safe("a\x1b[31mb\x07\r\n"), "a\\x1b[31mb\\x07\\x0d\\x0a");
  EXPECT_EQ(terminal_safe(std::string("x\0y", 3)), "x\\x00y");
  EXPECT_EQ(terminal_safe("line1\nline2\ttab", true), "line1\nline2\ttab");
  EXPECT_EQ(terminal_safe("\xC2\x9B" "2J"), "\\u009b2J");                 // C1 CSI
  EXPECT_EQ(terminal_safe("\xE2\x80\xAE" "txt"), "\\u202etxt");           // right-to-left override
  EXPECT_EQ(terminal_safe("bad\xff"), "bad\xEF\xBF\xBD");
  EXPECT_EQ(terminal_safe("caf\xC3\xA9 \xE2\x9C\x93"), "caf\xC3\xA9 \xE2\x9C\x93");  // printable UTF-8 stays
}

}  // namespace
