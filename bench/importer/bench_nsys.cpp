// Load speed of Nsight Systems SQLite exports: rows per second and peak memory of load_trace_set (the whole
// import into the model, one trace per process) against SQLite's own floor over the same tables in the same
// run: `SELECT COUNT(*)` per table (the sqlite3 CLI when it is on PATH, and the library in-process) and a scan
// that reads every column the importer reads. Each measurement runs in its own child process so its peak RSS
// (getrusage ru_maxrss) is its own.
// Usage: pt_bench_nsys EXPORT.sqlite [REPEATS=5] [SCALE=0]   SCALE > 0 also measures a copy with every
// activity table repeated SCALE times (shifted in time), written to $TMPDIR.
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "profile_train/trace/importer.h"

namespace {

namespace fs = std::filesystem;

const std::vector<std::string> kTables = {"CUPTI_ACTIVITY_KIND_KERNEL",  "CUPTI_ACTIVITY_KIND_MEMCPY",
                                          "CUPTI_ACTIVITY_KIND_MEMSET",  "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
                                          "CUPTI_ACTIVITY_KIND_RUNTIME", "NVTX_EVENTS",
                                          "OSRT_API"};

std::vector<std::string> present_tables(sqlite3* db) {
  std::vector<std::string> out;
  for (const auto& t : kTables) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, ("SELECT 1 FROM sqlite_master WHERE type='table' AND name='" + t + "'").c_str(), -1, &s, nullptr);
    if (sqlite3_step(s) == SQLITE_ROW) out.push_back(t);
    sqlite3_finalize(s);
  }
  return out;
}

int64_t count_rows(const fs::path& file) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(("file:" + file.string() + "?immutable=1").c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  int64_t n = 0;
  for (const auto& t : present_tables(db)) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, ("SELECT COUNT(*) FROM " + t).c_str(), -1, &s, nullptr);
    if (sqlite3_step(s) == SQLITE_ROW) n += sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return n;
}

// Runs f in a child; returns (seconds, peak RSS KiB). f returns false on failure.
std::pair<double, long> in_child(const std::function<bool()>& f) {
  int p[2];
  if (::pipe(p) != 0) std::exit(1);
  std::fflush(stdout);
  const pid_t c = ::fork();
  if (c == 0) {
    const auto t0 = std::chrono::steady_clock::now();
    const bool ok = f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    const double out[2] = {ok ? s : -1.0, static_cast<double>(ru.ru_maxrss)};
    (void)!::write(p[1], out, sizeof out);
    ::_exit(0);
  }
  ::close(p[1]);
  double in[2] = {-1, 0};
  (void)!::read(p[0], in, sizeof in);
  ::close(p[0]);
  ::waitpid(c, nullptr, 0);
  return {in[0], static_cast<long>(in[1])};
}

// The sqlite3 CLI: wall time and peak RSS from wait4 (the whole process).
std::pair<double, long> cli_count(const fs::path& file, const std::vector<std::string>& tables) {
  std::string sql;
  for (const auto& t : tables) sql += "SELECT COUNT(*) FROM " + t + ";";
  const auto t0 = std::chrono::steady_clock::now();
  std::fflush(stdout);
  const pid_t c = ::fork();
  if (c == 0) {
    std::freopen("/dev/null", "w", stdout);
    ::execlp("sqlite3", "sqlite3", "-readonly", file.c_str(), sql.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  rusage ru{};
  ::wait4(c, &status, 0, &ru);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {-1, 0};
  return {s, ru.ru_maxrss};
}

bool lib_scan(const fs::path& file, bool count_only) {
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(("file:" + file.string() + "?mode=ro").c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI,
                      nullptr) != SQLITE_OK)
    return false;
  int64_t sink = 0;
  for (const auto& t : present_tables(db)) {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, ((count_only ? "SELECT COUNT(*) FROM " : "SELECT * FROM ") + t).c_str(), -1, &s, nullptr);
    while (sqlite3_step(s) == SQLITE_ROW)
      for (int c = 0; c < sqlite3_column_count(s); ++c) sink += sqlite3_column_int64(s, c);
    sqlite3_finalize(s);
  }
  sqlite3_close(db);
  return sink != 42;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void measure(const fs::path& file, int repeats) {
  const int64_t rows = count_rows(file);
  sqlite3* db = nullptr;
  sqlite3_open_v2(("file:" + file.string() + "?immutable=1").c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  const auto tables = present_tables(db);
  sqlite3_close(db);
  std::printf("%s: %.1f MiB, %lld rows in %zu activity tables\n", file.filename().c_str(),
              static_cast<double>(fs::file_size(file)) / (1 << 20), static_cast<long long>(rows), tables.size());
  struct Mode { const char* name; std::function<std::pair<double, long>()> run; };
  size_t traces = 0;
  const std::vector<Mode> modes = {
      {"profile-train load_trace_set", [&] {
         return in_child([&] {
           auto t = profile_train::trace::load_trace_set(file);
           if (!t.ok()) std::fprintf(stderr, "%s\n", t.status().message().c_str());
           return t.ok();
         });
       }},
      {"sqlite3 CLI SELECT COUNT(*)", [&] { return cli_count(file, tables); }},
      {"libsqlite3 SELECT COUNT(*)", [&] { return in_child([&] { return lib_scan(file, true); }); }},
      {"libsqlite3 SELECT * (all columns)", [&] { return in_child([&] { return lib_scan(file, false); }); }},
  };
  {
    auto t = profile_train::trace::load_trace_set(file);
    traces = t.ok() ? t->size() : 0;
  }
  double ours = 0;
  std::printf("  %-36s %12s %14s %12s %10s\n", "mode (median of runs)", "ms", "rows/s", "peak RSS MiB", "x ours");
  std::vector<std::pair<std::string, std::pair<double, long>>> results;
  for (const auto& m : modes) {
    std::vector<double> secs;
    long rss = 0;
    for (int i = 0; i < repeats; ++i) {
      auto [s, kib] = m.run();
      if (s < 0) break;
      secs.push_back(s);
      rss = std::max(rss, kib);
    }
    if (secs.empty()) {
      std::printf("  %-36s %12s\n", m.name, "n/a");
      continue;
    }
    const double s = median(secs);
    if (results.empty()) ours = s;
    results.push_back({m.name, {s, rss}});
    std::printf("  %-36s %12.2f %14.0f %12.1f %10.2f\n", m.name, s * 1e3, rows / s, rss / 1024.0, ours / s);
  }
  std::printf("  (%zu trace(s) from the export; \"x ours\" = our time / that mode's time: how many times slower than "
              "the mode's floor)\n", traces);
}

// A copy of `file` with every activity table repeated `scale` times, each copy shifted past the previous.
fs::path scaled_copy(const fs::path& file, int scale) {
  const fs::path out = fs::temp_directory_path() / ("pt_bench_nsys_x" + std::to_string(scale) + ".sqlite");
  fs::remove(out);
  fs::copy_file(file, out);
  fs::permissions(out, fs::perms::owner_read | fs::perms::owner_write);
  sqlite3* db = nullptr;
  sqlite3_open(out.c_str(), &db);
  sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  for (const auto& t : present_tables(db)) {
    // Columns: every column as is, but start/end shifted by k spans (one statement per copy).
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db, ("SELECT name FROM pragma_table_info('" + t + "')").c_str(), -1, &s, nullptr);
    std::vector<std::string> cols;
    while (sqlite3_step(s) == SQLITE_ROW) cols.push_back(reinterpret_cast<const char*>(sqlite3_column_text(s, 0)));
    sqlite3_finalize(s);
    int64_t n0 = 0, span = 0;  // original rows; their time span (ns) + 1
    sqlite3_prepare_v2(db, ("SELECT max(rowid), coalesce(max(\"end\") - min(start), 0) + 1 FROM " + t).c_str(), -1, &s,
                       nullptr);
    if (sqlite3_step(s) == SQLITE_ROW) {
      n0 = sqlite3_column_int64(s, 0);
      span = sqlite3_column_int64(s, 1);
    }
    sqlite3_finalize(s);
    for (int k = 1; k < scale; ++k) {
      std::string sel, names;
      for (const auto& c : cols) {
        names += (names.empty() ? "" : ",") + ("\"" + c + "\"");
        const bool time = c == "start" || c == "end";
        sel += (sel.empty() ? "" : ",") +
               (time ? "\"" + c + "\" + " + std::to_string(k * span) : "\"" + c + "\"");
      }
      const std::string sql = "INSERT INTO " + t + " (" + names + ") SELECT " + sel + " FROM " + t + " WHERE rowid <= " + std::to_string(n0);
      sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr);
    }
  }
  sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: %s EXPORT.sqlite [REPEATS=5] [SCALE=0]\n", argv[0]);
    return 2;
  }
  const fs::path file = argv[1];
  const int repeats = argc > 2 ? std::max(1, std::atoi(argv[2])) : 5;
  const int scale = argc > 3 ? std::atoi(argv[3]) : 0;
  measure(file, repeats);
  if (scale > 1) {
    const fs::path big = scaled_copy(file, scale);
    measure(big, repeats);
    fs::remove(big);
  }
  return 0;
}
