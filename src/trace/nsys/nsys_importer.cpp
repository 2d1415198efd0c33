// The Nsight Systems importer's registry entry, and .nsys-rep reports converted with `nsys export`. Built with
// or without SQLite (nsys_export.cpp / nsys_stub.cpp hold the reader).
#include "nsys/nsys_importer.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>

extern char** environ;

namespace profile_train::trace::nsys {
namespace {

namespace fs = std::filesystem;

// The first executable `nsys` on PATH, or empty.
fs::path find_nsys() {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return {};
  std::string_view rest(path);
  while (!rest.empty()) {
    const size_t colon = rest.find(':');
    const std::string dir(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    const fs::path candidate = fs::path(dir.empty() ? "." : dir) / "nsys";
    if (::access(candidate.c_str(), X_OK) == 0 && !fs::is_directory(candidate)) return candidate;
  }
  return {};
}

std::string last_line(const fs::path& log) {
  std::ifstream in(log);
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 200) last = last.substr(0, 200) + "...";
  return last;
}

// A temporary folder removed when this goes out of scope.
struct TempDir {
  fs::path path;
  ~TempDir() {
    std::error_code ec;
    if (!path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

bool looks_like_sqlite(std::string_view head) {
  return head.size() >= 16 && std::memcmp(head.data(), "SQLite format 3\0", 16) == 0;
}

bool is_report_path(const fs::path& path) {
  const std::string ext = path.extension().string();
  return ext == ".nsys-rep" || ext == ".qdrep";
}

StatusOr<std::vector<Trace>> load_report(const fs::path& path, const LoadOptions& options) {
  const std::string name = path.string();
  std::error_code ec;
  if (!fs::exists(path, ec)) return NotFound(name + ": no such file");
  const std::string hint = "convert it with `nsys export --type sqlite --output " +
                           fs::path(path).replace_extension(".sqlite").string() + " " + name +
                           "` and analyze the .sqlite";
  const fs::path nsys = find_nsys();
  if (nsys.empty())
    return Unsupported(name + ": an Nsight Systems report, and `nsys` is not on the PATH to read it: " + hint);
  if (!built_with_sqlite())
    return Unsupported(name + ": this profile-train was built without SQLite support (libsqlite3-dev), which "
                              "Nsight Systems exports need");
  TempDir tmp;
  std::string tmpl = (fs::temp_directory_path(ec) / "profile-train-nsys-XXXXXX").string();
  if (::mkdtemp(tmpl.data()) == nullptr) return IoError(name + ": cannot create a temporary folder for nsys export");
  tmp.path = tmpl;
  const fs::path out = tmp.path / (path.stem().string() + ".sqlite");
  const fs::path log = tmp.path / "nsys-export.log";
  std::vector<std::string> args = {nsys.string(), "export", "--type", "sqlite", "--force-overwrite", "true",
                                   "--output", out.string(), name};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_adddup2(&fa, 1, 2);
  pid_t child = -1;
  const int rc = ::posix_spawn(&child, nsys.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) return IoError(name + ": cannot run " + nsys.string() + ": " + std::strerror(rc) + "; " + hint);
  // nsys export takes seconds to minutes on large reports; the load time limit covers it too.
  const auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    const pid_t w = ::waitpid(child, &status, WNOHANG);
    if (w == child) break;
    if (w < 0 && errno != EINTR) return IoError(name + ": lost track of nsys export");
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (options.max_load_seconds > 0 && waited > options.max_load_seconds) {
      ::kill(child, SIGKILL);
      ::waitpid(child, &status, 0);
      return ResourceExhausted(name + ": nsys export took longer than the time limit (--max-load-seconds); " + hint);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !fs::exists(out, ec)) {
    const std::string why = last_line(log);
    return BadInput(name + ": nsys export failed" +
                    (WIFEXITED(status) ? " (exit code " + std::to_string(WEXITSTATUS(status)) + ")" : std::string()) +
                    (why.empty() ? std::string() : ": " + why));
  }
  auto traces = load_export(out, options);
  if (!traces.ok()) return traces.status();
  for (Trace& t : *traces) {
    t.meta.source_files = {name};
    t.quality.notes.push_back("converted from " + path.filename().string() + " with " + nsys.string() +
                              " export --type sqlite");
  }
  return traces;
}

}  // namespace profile_train::trace::nsys

namespace profile_train::trace {

Importer make_nsys_importer() {
  Importer imp;
  imp.name = "nsys_sqlite";
  imp.sniff = [](std::string_view head) { return nsys::looks_like_sqlite(head); };
  imp.load = [](const std::filesystem::path& path, const LoadOptions& options) -> StatusOr<Trace> {
    auto all = nsys::load_export(path, options);
    if (!all.ok()) return all.status();
    Trace t = std::move(all->front());
    if (all->size() > 1)
      t.quality.notes.push_back("the export holds " + std::to_string(all->size()) +
                                " processes with GPU work; this is rank 0 alone (`analyze` reports every one)");
    return t;
  };
  imp.load_set = [](const std::filesystem::path& path, const LoadOptions& options) {
    return nsys::load_export(path, options);
  };
  return imp;
}

}  // namespace profile_train::trace
