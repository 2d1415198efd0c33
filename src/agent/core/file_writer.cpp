// The capture file: header, META, STRINGS, EVENTS, STATUS and side chunks (layout: src/agent/FORMAT.md), written
// through the recorder's FileWriter part (file_writer.h). Flusher side only: every function that writes holds io_mu.
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "core/recorder_state.h"
#include "profile_train/format/protocol.h"
#include "profile_train/common/version.h"

namespace profile_train::agent::detail {
namespace {

bool write_all(int fd, const iovec* iov_in, int n) {
  iovec iov[4];
  std::memcpy(iov, iov_in, sizeof(iovec) * static_cast<size_t>(n));
  int idx = 0;
  while (idx < n) {
    ssize_t w = ::writev(fd, iov + idx, n - idx);
    if (w < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    size_t left = static_cast<size_t>(w);
    while (idx < n && left >= iov[idx].iov_len) {
      left -= iov[idx].iov_len;
      ++idx;
    }
    if (idx < n) {
      iov[idx].iov_base = static_cast<char*>(iov[idx].iov_base) + left;
      iov[idx].iov_len -= left;
    }
  }
  return true;
}

std::string read_small_file(const char* path) {
  std::string out;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 && out.size() < 65536) out.append(buf, static_cast<size_t>(n));
  ::close(fd);
  return out;
}

}  // namespace

// ---- FileWriter ------------------------------------------------------------------------------------------------

bool FileWriter::write_chunk(format::ChunkType type, const void* payload, size_t bytes) {
  if (fd < 0 || failed) return false;
  format::ChunkHeader h{format::kChunkMagic, static_cast<uint16_t>(type), 0, static_cast<uint32_t>(bytes),
                        format::fnv1a32(payload, bytes)};
  static const char zeros[8] = {};
  iovec iov[3] = {{&h, sizeof h}, {const_cast<void*>(payload), bytes}, {const_cast<char*>(zeros),
                                                                        format::pad8(bytes) - bytes}};
  if (!write_all(fd, iov, 3)) {
    failed = true;
    return false;
  }
  return true;
}

void FileWriter::wake(char why) const {
  if (wake_pipe[1] >= 0) {
    ssize_t ignored = ::write(wake_pipe[1], &why, 1);
    (void)ignored;
  }
}

// ---- the file (across the parts) -------------------------------------------------------------------------------

int64_t unix_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

int above_stdio(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  // The lowest free descriptor is one the program closed: move above them and leave that slot closed, as the
  // program left it.
  const int high = ::fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  const int err = errno;
  ::close(fd);
  errno = err;
  return high;
}

int64_t env_int(const char* name, int64_t fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  long long x = std::strtoll(v, &end, 10);
  return (end && *end == '\0') ? static_cast<int64_t>(x) : fallback;
}

std::string dump(const nlohmann::json& j) {
  try {
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  } catch (...) {
    recorder().stats.n_internal_errors.fetch_add(1, std::memory_order_relaxed);
    return "{}";
  }
}

namespace {

void write_meta() {
  Recorder& rec = recorder();
  nlohmann::json m;
  m["pid"] = rec.proc.pid;
  m["ppid"] = static_cast<int64_t>(getppid());
  std::string comm = read_small_file("/proc/self/comm");
  while (!comm.empty() && (comm.back() == '\n' || comm.back() == '\0')) comm.pop_back();
  m["process_name"] = comm;
  std::string cmd = read_small_file("/proc/self/cmdline");
  for (char& ch : cmd)
    if (ch == '\0') ch = ' ';
  while (!cmd.empty() && cmd.back() == ' ') cmd.pop_back();
  m["cmdline"] = cmd;
  m["rank"] = env_int("RANK", -1);
  m["local_rank"] = env_int("LOCAL_RANK", -1);
  m["world_size"] = env_int("WORLD_SIZE", -1);
  m["clock"] = "CLOCK_MONOTONIC";
  m["monotonic_ns_at_open"] = now_ns();
  m["unix_ns_at_open"] = unix_ns();
  m["fork_child"] = rec.proc.is_fork_child;
  if (rec.proc.is_fork_child) m["fork_parent"] = rec.proc.fork_parent;
  m["agent_version"] = kVersion;
  m["chunk_records"] = rec.cfg.chunk_records;
  m["max_chunks"] = rec.cfg.max_chunks;
  m["flush_interval_ms"] = rec.cfg.flush_interval_ms;
  m["warmup_steps"] = rec.cfg.warmup_steps;
  m["steps"] = rec.cfg.steps;
  const std::string s = dump(m);
  rec.file.write_chunk(format::ChunkType::kMeta, s.data(), s.size());
}

}  // namespace

bool open_file_locked() {
  Recorder& rec = recorder();
  if (rec.file.fd >= 0) return true;
  if (rec.file.failed) return false;
  ::mkdir(rec.cfg.out_dir.c_str(), 0777);  // best effort; the launcher normally created it
  char name[128];
  std::snprintf(name, sizeof name, "/%.*s%lld-%lld%.*s", static_cast<int>(protocol::kCaptureFilePrefix.size()),
                protocol::kCaptureFilePrefix.data(), static_cast<long long>(rec.proc.pid),
                static_cast<long long>(now_ns() % 1000000000000LL),
                static_cast<int>(protocol::kCaptureFileExtension.size()), protocol::kCaptureFileExtension.data());
  rec.file.path = rec.cfg.out_dir + name;
  // A new file, never opened through what was there (a planted symlink or FIFO of the same name): O_EXCL, O_NOFOLLOW.
  rec.file.fd = ::open(rec.file.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  // A program that closed its stdout or stderr would otherwise print into the capture file.
  rec.file.fd = above_stdio(rec.file.fd);
  if (rec.file.fd < 0) {
    rec.file.open_error = rec.file.path + ": " + std::strerror(errno);
    rec.file.failed = true;
    std::fprintf(stderr, "profile-train agent: cannot write capture file %s; recording disabled\n",
                 rec.file.open_error.c_str());
    return false;
  }
  format::FileHeader h{};
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.major = format::kMajor;
  h.minor = format::kMinor;
  h.header_bytes = sizeof h;
  h.pid = rec.proc.pid;
  h.created_unix_ns = unix_ns();
  iovec iov{&h, sizeof h};
  if (!write_all(rec.file.fd, &iov, 1)) {
    rec.file.failed = true;
    return false;
  }
  write_meta();
  return true;
}

uint64_t total_records() {
  Recorder& rec = recorder();
  uint64_t n = rec.stats.n_records.load();
  std::lock_guard<std::mutex> lock(rec.mu);
  for (ThreadState* t : rec.pool.threads) n += t->appended;
  return n;
}

namespace {

nlohmann::json status_json(bool final_status) {
  Recorder& rec = recorder();
  nlohmann::json s = nlohmann::json::object();
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    for (const auto& [k, v] : rec.file.status) s[k] = v;
  }
  s["records"] = total_records();
  s["dropped"] = rec.stats.n_dropped.load();
  s["filtered"] = rec.stats.n_filtered.load();
  s["written"] = rec.stats.n_written.load();
  s["nvtx_init_calls"] = rec.stats.nvtx_init_calls.load();
  s["steps_seen"] = rec.window.steps_seen.load();
  s["open_ranges_at_exit"] = rec.stats.n_open_at_exit.load();
  s["names_bucketed"] = rec.stats.n_bucketed.load();
  s["nvtx_bad_handles"] = rec.stats.n_bad_handles.load();
  s["nvtx_handles_refused"] = rec.stats.n_handles_refused.load();
  s["internal_errors"] = rec.stats.n_internal_errors.load();
  s["complete"] = final_status;
  return s;
}

void write_status(bool final_status) {
  const std::string s = dump(status_json(final_status));
  recorder().file.write_chunk(format::ChunkType::kStatus, s.data(), s.size());
}

}  // namespace

// Writes everything committed so far. Caller holds io_mu.
void flush_locked(bool final_status) {
  Recorder& rec = recorder();
  std::vector<Chunk*> full;
  std::vector<ThreadState*> threads;
  std::vector<std::pair<uint16_t, std::string>> side;
  std::string strings_payload;
  bool status_dirty = false;
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    full.swap(rec.pool.full);
    threads = rec.pool.threads;
    side.swap(rec.file.side_chunks);
    status_dirty = rec.file.status_dirty;
    rec.file.status_dirty = false;
  }
  // Chunk commit counts are read before the string table, so every name they reference is in the table.
  std::vector<std::pair<Chunk*, uint32_t>> slices;
  slices.reserve(threads.size() + full.size());
  for (ThreadState* t : threads) {
    Chunk* c = t->cur.load(std::memory_order_acquire);
    if (c) slices.emplace_back(c, c->committed.load(std::memory_order_acquire));
  }
  for (Chunk* c : full) slices.emplace_back(c, c->committed.load(std::memory_order_acquire));
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    for (size_t i = rec.strings.written; i < rec.strings.names.size(); ++i) {
      const std::string& s = rec.strings.names[i];
      uint32_t hdr[2] = {static_cast<uint32_t>(i + 1), static_cast<uint32_t>(s.size())};
      strings_payload.append(reinterpret_cast<const char*>(hdr), sizeof hdr);
      strings_payload.append(s);
      strings_payload.append((4 - s.size() % 4) % 4, '\0');
    }
    rec.strings.written = rec.strings.names.size();
  }
  const bool have_events = !strings_payload.empty() || !side.empty() ||
                           [&] {
                             for (auto& [c, n] : slices)
                               if (n > c->flushed) return true;
                             return false;
                           }();
  if (rec.file.fd < 0 && (have_events || final_status)) open_file_locked();
  FileWriter& file = rec.file;
  if (!strings_payload.empty())
    file.write_chunk(format::ChunkType::kStrings, strings_payload.data(), strings_payload.size());
  for (auto& [type, json] : side) file.write_chunk(static_cast<format::ChunkType>(type), json.data(), json.size());
  for (auto& [c, n] : slices) {
    if (n > c->flushed) {
      const uint32_t count = n - c->flushed;
      if (file.write_chunk(format::ChunkType::kEvents, c->recs + c->flushed, sizeof(Record) * count))
        rec.stats.n_written.fetch_add(count, std::memory_order_relaxed);
      else
        rec.stats.n_dropped.fetch_add(count, std::memory_order_relaxed);
      c->flushed = n;
    }
  }
  if (!full.empty()) {
    std::lock_guard<std::mutex> lock(rec.mu);
    for (Chunk* c : full) rec.pool.recycle(rec.cfg, c);
  }
  if (file.fd >= 0 && (status_dirty || final_status)) write_status(final_status);
  file.flush_seq.fetch_add(1, std::memory_order_release);
}

}  // namespace profile_train::agent::detail
