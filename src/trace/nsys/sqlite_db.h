// A read-only SQLite database, as the Nsight Systems importer needs it: opened without write access, bounded in
// time and memory, every failure a Status whose message starts with the file name. Not thread-safe.
#pragma once

#include <sqlite3.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "profile_train/common/status.h"

namespace profile_train::trace::nsys {

class Db;

// One prepared statement; step() until it returns false. Column accessors read the current row.
class Stmt {
 public:
  Stmt(Db* db, sqlite3_stmt* s) : db_(db), s_(s) {}
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  ~Stmt() { sqlite3_finalize(s_); }
  // True with a row, false at the end; an error (damaged file, time limit) lands in *status.
  bool step(Status* status);
  void reset() { sqlite3_reset(s_); }
  void bind(int i, int64_t v) { sqlite3_bind_int64(s_, i, v); }
  bool null(int c) const { return sqlite3_column_type(s_, c) == SQLITE_NULL; }
  bool is_text(int c) const { return sqlite3_column_type(s_, c) == SQLITE_TEXT; }
  int64_t i64(int c, int64_t if_null = -1) const { return null(c) ? if_null : sqlite3_column_int64(s_, c); }
  double f64(int c) const { return sqlite3_column_double(s_, c); }
  std::string_view text(int c) const {
    const auto* p = reinterpret_cast<const char*>(sqlite3_column_text(s_, c));
    return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, c))) : std::string_view();
  }

 private:
  Db* db_;
  sqlite3_stmt* s_;
};

class Db {
 public:
  // Opens `path` read-only. Locks are honoured (a file another program is writing gives an error naming the
  // lock), nothing is ever written: no journal, no -shm, no schema change. `max_seconds` > 0 bounds every
  // statement together (a hostile file cannot make a query run forever).
  static StatusOr<std::unique_ptr<Db>> open(const std::string& path, double max_seconds);
  // The same over bytes in memory (the fuzz target); `bytes` must outlive the Db.
  static StatusOr<std::unique_ptr<Db>> open_bytes(std::string_view bytes, const std::string& name, double max_seconds);
  ~Db();

  const std::string& name() const { return name_; }
  // Tables (type 'table' only: a view of the same name could run any query) and their columns, read once.
  bool has_table(const std::string& table) const { return columns_.count(table) != 0; }
  bool has_column(const std::string& table, const std::string& column) const;
  // `column` quoted when the table has it, else "NULL": one SELECT serves every schema variant.
  std::string col(const std::string& table, const std::string& column) const;
  StatusOr<Stmt> prepare(const std::string& sql);
  // One line for a failed call: "<name>: <what the file is>" from the SQLite result code.
  Status error(int rc, const std::string& during) const;
  bool timed_out() const { return timed_out_; }

 private:
  Db(sqlite3* h, std::string name, double max_seconds);
  Status read_schema();
  static int on_progress(void* self);

  sqlite3* h_;
  std::string name_;
  std::map<std::string, std::set<std::string>> columns_;
  std::chrono::steady_clock::time_point deadline_;
  bool limited_ = false;
  bool timed_out_ = false;
};

// Double-quotes an SQL identifier.
std::string quote_ident(std::string_view name);

}  // namespace profile_train::trace::nsys
