// Read-only SQLite access for the Nsight Systems importer. A file from outside is hostile until proven
// otherwise: no views, triggers or virtual tables are run, no schema function is trusted, strings are capped,
// and a progress handler enforces the time limit.
#include "sqlite_db.h"

#include <cstring>
#include <cctype>
#include <fstream>
#include <vector>

namespace profile_train::trace::nsys {
namespace {

// No string in an export comes near this (the longest are demangled template names, ~10 KiB); a longer value
// makes SQLite stop with SQLITE_TOOBIG instead of allocating it.
constexpr int kMaxValueBytes = 16 << 20;

// "file:" URI for a path: everything but unreserved characters and '/' percent-encoded.
std::string file_uri(const std::string& path, const char* query) {
  std::string out = "file:";
  static const char* hex = "0123456789ABCDEF";
  for (unsigned char c : path) {
    if (std::isalnum(c) || c == '/' || c == '-' || c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  return out + "?" + query;
}

uint32_t be32(const unsigned char* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

// The file header (first 100 bytes) against the file size: a valid in-header page count that the file
// cannot hold means the copy was cut short.
Status check_header(const unsigned char* h, size_t have, uint64_t file_size, const std::string& name) {
  if (have >= 2 && h[0] == 0x1f && h[1] == 0x8b)
    return BadInput(name + ": a gzip-compressed SQLite file: decompress it (gunzip) and analyze the .sqlite");
  if (have < 100 || std::memcmp(h, "SQLite format 3", 16) != 0)
    return BadInput(name + ": not a SQLite database (the file is shorter than a SQLite header or starts differently)");
  uint32_t page = (uint32_t{h[16]} << 8) | h[17];
  if (page == 1) page = 65536;
  if (page < 512 || (page & (page - 1)) != 0)
    return BadInput(name + ": damaged SQLite file (page size " + std::to_string(page) + " in the header)");
  const uint32_t pages = be32(h + 28);
  const bool count_valid = pages != 0 && be32(h + 24) == be32(h + 92);
  if (count_valid && uint64_t{pages} * page > file_size)
    return BadInput(name + ": truncated SQLite file (" + std::to_string(file_size) + " bytes; its header says " +
                    std::to_string(uint64_t{pages} * page) + "): copy the export again");
  if (file_size < page) return BadInput(name + ": truncated SQLite file (shorter than one page)");
  return Status::Ok();
}

bool wanted_table(const std::string& t) {
  for (const char* p : {"CUPTI_ACTIVITY_KIND_", "NVTX_EVENTS", "StringIds", "TARGET_INFO_", "OSRT_API", "ENUM_",
                        "META_DATA_", "PROCESSES", "ThreadNames"})
    if (t.rfind(p, 0) == 0) return true;
  return false;
}

}  // namespace

std::string quote_ident(std::string_view name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

bool Stmt::step(Status* status) {
  const int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc != SQLITE_DONE) *status = db_->error(rc, "reading");
  return false;
}

Db::Db(sqlite3* h, std::string name, double max_seconds) : h_(h), name_(std::move(name)) {
  if (max_seconds > 0) {
    limited_ = true;
    deadline_ = std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(max_seconds));
  }
  sqlite3_extended_result_codes(h_, 1);
  sqlite3_limit(h_, SQLITE_LIMIT_LENGTH, kMaxValueBytes);
  sqlite3_db_config(h_, SQLITE_DBCONFIG_DEFENSIVE, 1, nullptr);
  sqlite3_db_config(h_, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, nullptr);
#ifdef SQLITE_DBCONFIG_TRUSTED_SCHEMA
  sqlite3_db_config(h_, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, nullptr);
#endif
#ifdef SQLITE_DBCONFIG_ENABLE_VIEW
  sqlite3_db_config(h_, SQLITE_DBCONFIG_ENABLE_VIEW, 0, nullptr);
#endif
  sqlite3_busy_timeout(h_, 1000);  // a writer holding the lock for longer: "locked", not a hang
  sqlite3_progress_handler(h_, 10000, &Db::on_progress, this);
  sqlite3_exec(h_, "PRAGMA cell_size_check=ON", nullptr, nullptr, nullptr);
}

Db::~Db() { sqlite3_close_v2(h_); }

int Db::on_progress(void* self) {
  auto* db = static_cast<Db*>(self);
  if (db->limited_ && std::chrono::steady_clock::now() > db->deadline_) {
    db->timed_out_ = true;
    return 1;  // interrupts the statement (SQLITE_INTERRUPT)
  }
  return 0;
}

Status Db::error(int rc, const std::string& during) const {
  const int primary = rc & 0xff;
  const char* msg = h_ ? sqlite3_errmsg(h_) : sqlite3_errstr(rc);
  if (timed_out_ || primary == SQLITE_INTERRUPT)
    return ResourceExhausted(name_ + ": loading took longer than the time limit (--max-load-seconds)");
  switch (primary) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      return IoError(name_ + ": the database is locked by another program (is nsys still writing it?); try again "
                             "when it has finished");
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
    case SQLITE_FORMAT:
      return BadInput(name_ + ": damaged SQLite file (" + msg + ") while " + during + ": export it again");
    case SQLITE_TOOBIG:
      return BadInput(name_ + ": a value over " + std::to_string(kMaxValueBytes >> 20) +
                      " MiB (a huge string table entry) while " + during + ": not an Nsight Systems export as nsys writes it");
    case SQLITE_NOMEM: return ResourceExhausted(name_ + ": out of memory while " + during);
    case SQLITE_CANTOPEN: return IoError(name_ + ": cannot open the SQLite file (" + msg + ")");
    case SQLITE_IOERR:
      return BadInput(name_ + ": cannot read the SQLite file (" + msg + ", truncated or unreadable) while " + during);
    default: return BadInput(name_ + ": SQLite error while " + during + ": " + msg);
  }
}

StatusOr<std::unique_ptr<Db>> Db::open(const std::string& path, double max_seconds) {
  unsigned char header[100] = {};
  std::ifstream in(path, std::ios::binary);
  if (!in) return NotFound(path + ": cannot open the file");
  in.read(reinterpret_cast<char*>(header), sizeof header);
  const auto have = static_cast<size_t>(in.gcount());
  in.seekg(0, std::ios::end);
  const auto size = static_cast<uint64_t>(in.tellg());
  PT_RETURN_IF_ERROR(check_header(header, have, size, path));
  sqlite3* h = nullptr;
  // mode=ro: never written, and a writer's lock is seen (immutable=1 would read a half-written file).
  const int rc = sqlite3_open_v2(file_uri(path, "mode=ro").c_str(), &h,
                                 SQLITE_OPEN_READONLY | SQLITE_OPEN_URI | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<Db> db(new Db(h, path, max_seconds));
  if (rc != SQLITE_OK) return db->error(rc, "opening");
  PT_RETURN_IF_ERROR(db->read_schema());
  return db;
}

StatusOr<std::unique_ptr<Db>> Db::open_bytes(std::string_view bytes, const std::string& name, double max_seconds) {
  PT_RETURN_IF_ERROR(check_header(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), bytes.size(), name));
  sqlite3* h = nullptr;
  int rc = sqlite3_open_v2(":memory:", &h, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  std::unique_ptr<Db> db(new Db(h, name, max_seconds));
  if (rc != SQLITE_OK) return db->error(rc, "opening");
  // READONLY: SQLite never writes into the caller's buffer; no FREEONCLOSE: the caller owns it.
  rc = sqlite3_deserialize(h, "main", reinterpret_cast<unsigned char*>(const_cast<char*>(bytes.data())),
                           static_cast<sqlite3_int64>(bytes.size()), static_cast<sqlite3_int64>(bytes.size()),
                           SQLITE_DESERIALIZE_READONLY);
  if (rc != SQLITE_OK) return db->error(rc, "opening");
  PT_RETURN_IF_ERROR(db->read_schema());
  return db;
}

Status Db::read_schema() {
  std::vector<std::string> tables;
  {
    auto st = prepare("SELECT name FROM sqlite_master WHERE type = 'table' AND coalesce(sql, '') NOT LIKE 'CREATE VIRTUAL%'");
    if (!st.ok()) return st.status();
    Status s;
    while (st->step(&s)) {
      std::string t(st->text(0));
      if (wanted_table(t)) tables.push_back(std::move(t));
    }
    PT_RETURN_IF_ERROR(s);
  }
  for (const auto& t : tables) {
    auto st = prepare("PRAGMA table_info(" + quote_ident(t) + ")");
    if (!st.ok()) return st.status();
    Status s;
    auto& cols = columns_[t];
    while (st->step(&s)) cols.insert(std::string(st->text(1)));
    PT_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

bool Db::has_column(const std::string& table, const std::string& column) const {
  auto it = columns_.find(table);
  return it != columns_.end() && it->second.count(column) != 0;
}

std::string Db::col(const std::string& table, const std::string& column) const {
  return has_column(table, column) ? quote_ident(column) : std::string("NULL");
}

StatusOr<Stmt> Db::prepare(const std::string& sql) {
  sqlite3_stmt* s = nullptr;
  const int rc = sqlite3_prepare_v2(h_, sql.c_str(), static_cast<int>(sql.size()), &s, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(s);
    return error(rc, "reading the schema");
  }
  return Stmt(this, s);
}

}  // namespace profile_train::trace::nsys
