// Process-wide recorder: per-thread chunks, string interning, a writer thread streaming to one file per process.
// See include/profile_train/agent/recorder.h for the contract and src/agent/FORMAT.md for the file layout.
//
// Concurrency protocol (the non-obvious part):
// - An application thread owns `ThreadState::cur`; it writes record n, then publishes `committed = n + 1`
//   (release). When the chunk is full it moves it to `g.full` and takes a free chunk, both under `g.mu`.
// - Only a flusher holding `g.io_mu` (the writer thread, or a synchronous flush) reads chunks: it writes
//   records [flushed, committed) of every thread's current chunk and of every full chunk, and recycles full
//   chunks. A chunk is recycled only from `g.full`, i.e. after its owner has let go of it, so a flusher never
//   reads a chunk that another thread is refilling.
// - Fork: the prepare handler takes io_mu then mu, so the child inherits consistent structures; the child
//   forgets every in-flight chunk (the parent writes those), rewrites the whole string table into its own file
//   and starts its own writer thread.
#include "profile_train/agent/recorder.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace profile_train::agent {
namespace {

using format::Record;
using format::RecordKind;

// Per-thread state is sized for thousands of threads (a DataLoader or a thread pool per process): about
// 2.5 KiB each until a thread nests deeper than kInlineDepth, and no chunk until it records.
constexpr int kMaxDepth = 128;       // range stack entries kept per thread (deeper levels are counted only)
constexpr int kInlineDepth = 16;     // stored inline; the stack grows to kMaxDepth on the heap once, if needed
constexpr uint32_t kCacheSize = 64;  // per-thread intern cache entries (direct-mapped)
// Chunk sizes: 16 x 4^k records up to cfg.chunk_records. A thread's first chunk is the smallest and each next
// one is 4x bigger, so a thread holds memory in proportion to how much it records; with many threads alive,
// no thread gets a chunk bigger than a quarter of the budget shared among them (kClassShare).
constexpr uint32_t kSmallestChunk = 16;
constexpr int kClasses = 8;
constexpr uint64_t kClassShare = 4;
constexpr uint32_t kMaxFlaggedIds = 1u << 20;
constexpr uint8_t kFlagStep = 1;     // "ProfilerStep#..." names: step boundaries for the capture window
// Bound on the name table, which lives in the user's process as long as it runs: distinct names past it (a
// name per step or per sample, an f-string in a loop) share kOtherBuckets hashed "other names" entries,
// counted in the status ("names_bucketed"). 2^17 names of up to 8 MiB in all: about 20 MiB at most.
constexpr uint32_t kMaxStrings = 1u << 17;
constexpr size_t kMaxStringBytes = size_t{8} << 20;
constexpr uint32_t kOtherBuckets = 64;

struct Chunk {
  std::atomic<uint32_t> committed{0};
  uint32_t flushed = 0;  // guarded by g.io_mu
  uint32_t capacity = 0;
  Record* recs = nullptr;
};

struct RangeEntry {
  int64_t start_ns;
  uint32_t name;
  uint32_t domain;
  bool recorded;
};

struct CacheEntry {
  uint64_t hash = 0;
  const char* str = nullptr;  // points into Global::strings (stable)
  uint32_t len = 0;
  uint32_t id = 0;
};

struct ThreadState {
  uint64_t tid = 0;
  uint64_t gen = 0;
  std::atomic<Chunk*> cur{nullptr};
  uint64_t appended = 0;  // records appended by this thread (read racily for statistics)
  int depth = 0;  // may exceed stack_cap; entries above it are not stored
  bool discard_next_pop = false;
  bool stack_grown = false;
  int next_class = 0;  // size class of this thread's next chunk
  int stack_cap = kInlineDepth;
  RangeEntry* stack = inline_stack;  // inline_stack, or kMaxDepth entries on the heap (kept when recycled)
  RangeEntry inline_stack[kInlineDepth];
  CacheEntry cache[kCacheSize];
};

struct Global {
  std::mutex io_mu;  // one flusher at a time; taken before mu
  std::mutex mu;     // threads, chunk lists, strings, status
  RecorderConfig cfg;
  std::atomic<bool> started{false};
  std::atomic<bool> accepting{false};
  bool start_ok = false;
  std::atomic<uint64_t> gen{1};
  int64_t pid = 0;
  bool is_fork_child = false;
  int64_t fork_parent = -1;

  std::vector<ThreadState*> threads;
  std::vector<ThreadState*> spare_threads;  // of exited threads, reused (never freed: see ThreadExit)
  std::vector<Chunk*> full;
  std::vector<Chunk*> free_chunks[kClasses];  // by size class
  int top_class = 0;                           // the class of cfg.chunk_records
  uint32_t chunks_total = 0;
  uint64_t records_allocated = 0;  // bounded by cfg.max_chunks * cfg.chunk_records

  std::deque<std::string> strings;  // strings[i] has id i + 1
  std::unordered_map<std::string_view, uint32_t> string_index;
  size_t string_bytes = 0;
  // Set (release) once the table is full: from then on strings/string_index never change and are read
  // without the lock.
  std::atomic<bool> strings_full{false};
  uint32_t other_ids[kOtherBuckets] = {};
  uint32_t other_step_id = 0;       // over the limit, step names still mark steps
  size_t strings_written = 0;       // guarded by io_mu + mu
  uint8_t* flags = nullptr;         // kMaxFlaggedIds entries, zeroed

  std::map<std::string, nlohmann::json> status;
  std::vector<std::pair<uint16_t, std::string>> side_chunks;
  bool status_dirty = true;

  int fd = -1;
  bool file_failed = false;
  std::string path;
  std::string open_error;
  pthread_t writer{};
  bool writer_running = false;
  std::atomic<bool> stop_writer{false};
  int wake_pipe[2] = {-1, -1};
  std::atomic<uint64_t> flush_seq{0};

  std::atomic<uint64_t> n_records{0}, n_dropped{0}, n_filtered{0}, n_written{0}, n_open_at_exit{0};
  std::atomic<uint64_t> nvtx_init_calls{0};
  std::atomic<uint64_t> n_bucketed{0}, n_bad_handles{0}, n_handles_refused{0}, n_internal_errors{0};
  std::atomic<uint64_t> next_range_id{1};

  // Capture window (steps): recording flag for synchronous records, timestamps for asynchronous ones.
  std::atomic<bool> recording{true};
  std::atomic<int64_t> window_start{INT64_MIN};
  std::atomic<int64_t> window_stop{INT64_MAX};
  std::atomic<int64_t> steps_seen{0};

  std::atomic<void (*)()> pre_stop_hook{nullptr};
  struct sigaction old_int {}, old_term {};
  bool signals_installed = false;
};

Global& g() {
  static Global* global = new Global;  // never destroyed: threads may record during exit
  return *global;
}

thread_local ThreadState* t_state = nullptr;
thread_local bool t_exited = false;  // records from later thread-exit code are dropped (counted)

struct ThreadExit {
  ~ThreadExit();
};
thread_local ThreadExit t_exit;

uint64_t sys_tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

uint32_t class_capacity(int k) {
  return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{kSmallestChunk} << (2 * k), g().cfg.chunk_records));
}

int class_of(uint32_t capacity) {
  int k = 0;
  while (k < g().top_class && class_capacity(k) < capacity) ++k;
  return k;
}

uint64_t free_records_locked() {
  uint64_t n = 0;
  for (const auto& pool : g().free_chunks)
    for (const Chunk* c : pool) n += c->capacity;
  return n;
}

// A chunk for a thread that wants size class `want`; memory stays within the budget whatever the mix (free
// chunks of other sizes are released to make room). nullptr when the budget is in use.
Chunk* new_chunk_locked(int want) {
  Global& G = g();
  const uint64_t budget = uint64_t{G.cfg.max_chunks} * G.cfg.chunk_records;
  // Many threads alive: smaller chunks, so that their partly filled chunks cannot hold the whole budget.
  const uint64_t threads = std::max<uint64_t>(1, G.threads.size());
  int k = std::min(want, G.top_class);
  while (k > 0 && class_capacity(k) * threads * kClassShare > budget) --k;
  std::vector<Chunk*>& pool = G.free_chunks[k];
  if (!pool.empty()) {
    Chunk* c = pool.back();
    pool.pop_back();
    return c;
  }
  const uint32_t capacity = class_capacity(k);
  for (int other = G.top_class; other >= 0 && G.records_allocated + capacity > budget; --other) {
    auto& spare = G.free_chunks[other];
    while (!spare.empty() && G.records_allocated + capacity > budget) {
      Chunk* c = spare.back();
      spare.pop_back();
      G.records_allocated -= c->capacity;
      --G.chunks_total;
      delete[] c->recs;
      delete c;
    }
  }
  if (G.records_allocated + capacity > budget) return nullptr;
  auto* c = new (std::nothrow) Chunk;
  if (!c) return nullptr;
  c->recs = new (std::nothrow) Record[capacity];
  if (!c->recs) {
    delete c;
    return nullptr;
  }
  c->capacity = capacity;
  ++G.chunks_total;
  G.records_allocated += capacity;
  return c;
}

void recycle_chunk_locked(Chunk* c) {
  c->committed.store(0, std::memory_order_relaxed);
  c->flushed = 0;
  g().free_chunks[class_of(c->capacity)].push_back(c);
}

ThreadState* register_thread() {
  Global& G = g();
  ThreadState* t = t_state;
  if (t_exited) return nullptr;
  if (!t) {
    {
      std::lock_guard<std::mutex> lock(G.mu);
      if (!G.spare_threads.empty()) {
        t = G.spare_threads.back();
        G.spare_threads.pop_back();
      }
    }
    if (!t) t = new (std::nothrow) ThreadState;
    if (!t) return nullptr;
    t->depth = 0;
    t->appended = 0;
    t->next_class = 0;
    t->discard_next_pop = false;
    for (CacheEntry& e : t->cache) e = CacheEntry{};
    (void)&t_exit;  // registers the thread-exit hand-off
    t_state = t;
  } else {
    // Stale generation: this thread forked. Its chunk and open ranges belong to the parent.
    t->cur.store(nullptr, std::memory_order_relaxed);
    t->depth = 0;
    t->appended = 0;
    t->next_class = 0;
    t->discard_next_pop = false;
  }
  t->tid = sys_tid();
  std::lock_guard<std::mutex> lock(G.mu);
  t->gen = G.gen.load(std::memory_order_relaxed);
  G.threads.push_back(t);
  t->cur.store(nullptr, std::memory_order_release);  // a chunk comes with the first record
  return t;
}

inline ThreadState* tls() {
  ThreadState* t = t_state;
  if (t && t->gen == g().gen.load(std::memory_order_relaxed)) return t;
  return register_thread();
}

ThreadExit::~ThreadExit() {
  ThreadState* t = t_state;
  t_exited = true;
  t_state = nullptr;
  if (!t) return;
  Global& G = g();
  std::lock_guard<std::mutex> lock(G.mu);
  if (t->gen != G.gen.load(std::memory_order_relaxed)) return;
  if (Chunk* c = t->cur.load(std::memory_order_relaxed)) G.full.push_back(c);
  t->cur.store(nullptr, std::memory_order_release);
  G.n_records.fetch_add(t->appended, std::memory_order_relaxed);
  t->appended = 0;
  for (auto it = G.threads.begin(); it != G.threads.end(); ++it)
    if (*it == t) {
      G.threads.erase(it);
      break;
    }
  // t is never freed: a flusher may still hold it in its snapshot. It is reused by the next new thread (a
  // flusher that reads it then sees that thread's chunk, which is what it would read anyway).
  t->gen = 0;
  G.spare_threads.push_back(t);
}

void append(ThreadState* t, const Record& r) {
  Global& G = g();
  Chunk* c = t->cur.load(std::memory_order_relaxed);
  uint32_t n = c ? c->committed.load(std::memory_order_relaxed) : 0;
  if (!c || n >= c->capacity) {
    std::lock_guard<std::mutex> lock(G.mu);
    if (c) G.full.push_back(c);
    c = new_chunk_locked(t->next_class);
    if (c) t->next_class = std::min(class_of(c->capacity) + 1, G.top_class);
    t->cur.store(c, std::memory_order_release);
    if (!c) {
      G.n_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    n = 0;
  }
  c->recs[n] = r;
  c->committed.store(n + 1, std::memory_order_release);
  ++t->appended;
}

// ---- file output (flusher only: io_mu held) ---------------------------------------------------------------

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

bool write_chunk(format::ChunkType type, const void* payload, size_t bytes) {
  Global& G = g();
  if (G.fd < 0 || G.file_failed) return false;
  format::ChunkHeader h{format::kChunkMagic, static_cast<uint16_t>(type), 0, static_cast<uint32_t>(bytes),
                        format::fnv1a32(payload, bytes)};
  static const char zeros[8] = {};
  iovec iov[3] = {{&h, sizeof h}, {const_cast<void*>(payload), bytes}, {const_cast<char*>(zeros),
                                                                        format::pad8(bytes) - bytes}};
  if (!write_all(G.fd, iov, 3)) {
    G.file_failed = true;
    return false;
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

int64_t unix_ns() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
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
    g().n_internal_errors.fetch_add(1, std::memory_order_relaxed);
    return "{}";
  }
}

void write_meta() {
  Global& G = g();
  nlohmann::json m;
  m["pid"] = G.pid;
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
  m["fork_child"] = G.is_fork_child;
  if (G.is_fork_child) m["fork_parent"] = G.fork_parent;
  m["agent_version"] = "0.1";
  m["chunk_records"] = G.cfg.chunk_records;
  m["max_chunks"] = G.cfg.max_chunks;
  m["flush_interval_ms"] = G.cfg.flush_interval_ms;
  m["warmup_steps"] = G.cfg.warmup_steps;
  m["steps"] = G.cfg.steps;
  const std::string s = dump(m);
  write_chunk(format::ChunkType::kMeta, s.data(), s.size());
}

bool open_file_locked() {
  Global& G = g();
  if (G.fd >= 0) return true;
  if (G.file_failed) return false;
  ::mkdir(G.cfg.out_dir.c_str(), 0777);  // best effort; the launcher normally created it
  char name[128];
  std::snprintf(name, sizeof name, "/pt-%lld-%lld.ptrace", static_cast<long long>(G.pid),
                static_cast<long long>(now_ns() % 1000000000000LL));
  G.path = G.cfg.out_dir + name;
  G.fd = ::open(G.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (G.fd < 0) {
    G.open_error = G.path + ": " + std::strerror(errno);
    G.file_failed = true;
    std::fprintf(stderr, "profile-train agent: cannot write capture file %s; recording disabled\n",
                 G.open_error.c_str());
    return false;
  }
  format::FileHeader h{};
  std::memcpy(h.magic, format::kMagic, sizeof h.magic);
  h.major = format::kMajor;
  h.minor = format::kMinor;
  h.header_bytes = sizeof h;
  h.pid = G.pid;
  h.created_unix_ns = unix_ns();
  iovec iov{&h, sizeof h};
  if (!write_all(G.fd, &iov, 1)) {
    G.file_failed = true;
    return false;
  }
  write_meta();
  return true;
}

uint64_t total_records() {
  Global& G = g();
  uint64_t n = G.n_records.load();
  std::lock_guard<std::mutex> lock(G.mu);
  for (ThreadState* t : G.threads) n += t->appended;
  return n;
}

nlohmann::json status_json(bool final_status) {
  Global& G = g();
  nlohmann::json s = nlohmann::json::object();
  {
    std::lock_guard<std::mutex> lock(G.mu);
    for (const auto& [k, v] : G.status) s[k] = v;
  }
  s["records"] = total_records();
  s["dropped"] = G.n_dropped.load();
  s["filtered"] = G.n_filtered.load();
  s["written"] = G.n_written.load();
  s["nvtx_init_calls"] = G.nvtx_init_calls.load();
  s["steps_seen"] = G.steps_seen.load();
  s["open_ranges_at_exit"] = G.n_open_at_exit.load();
  s["names_bucketed"] = G.n_bucketed.load();
  s["nvtx_bad_handles"] = G.n_bad_handles.load();
  s["nvtx_handles_refused"] = G.n_handles_refused.load();
  s["internal_errors"] = G.n_internal_errors.load();
  s["complete"] = final_status;
  return s;
}

void write_status(bool final_status) {
  const std::string s = dump(status_json(final_status));
  write_chunk(format::ChunkType::kStatus, s.data(), s.size());
}

// Writes everything committed so far. Caller holds io_mu.
void flush_locked(bool final_status) {
  Global& G = g();
  std::vector<Chunk*> full;
  std::vector<ThreadState*> threads;
  std::vector<std::pair<uint16_t, std::string>> side;
  std::string strings_payload;
  bool status_dirty = false;
  {
    std::lock_guard<std::mutex> lock(G.mu);
    full.swap(G.full);
    threads = G.threads;
    side.swap(G.side_chunks);
    status_dirty = G.status_dirty;
    G.status_dirty = false;
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
    std::lock_guard<std::mutex> lock(G.mu);
    for (size_t i = G.strings_written; i < G.strings.size(); ++i) {
      const std::string& s = G.strings[i];
      uint32_t hdr[2] = {static_cast<uint32_t>(i + 1), static_cast<uint32_t>(s.size())};
      strings_payload.append(reinterpret_cast<const char*>(hdr), sizeof hdr);
      strings_payload.append(s);
      strings_payload.append((4 - s.size() % 4) % 4, '\0');
    }
    G.strings_written = G.strings.size();
  }
  const bool have_events = !strings_payload.empty() || !side.empty() ||
                           [&] {
                             for (auto& [c, n] : slices)
                               if (n > c->flushed) return true;
                             return false;
                           }();
  if (G.fd < 0 && (have_events || final_status)) open_file_locked();
  if (!strings_payload.empty()) write_chunk(format::ChunkType::kStrings, strings_payload.data(), strings_payload.size());
  for (auto& [type, json] : side) write_chunk(static_cast<format::ChunkType>(type), json.data(), json.size());
  for (auto& [c, n] : slices) {
    if (n > c->flushed) {
      const uint32_t count = n - c->flushed;
      if (write_chunk(format::ChunkType::kEvents, c->recs + c->flushed, sizeof(Record) * count))
        G.n_written.fetch_add(count, std::memory_order_relaxed);
      else
        G.n_dropped.fetch_add(count, std::memory_order_relaxed);
      c->flushed = n;
    }
  }
  if (!full.empty()) {
    std::lock_guard<std::mutex> lock(G.mu);
    for (Chunk* c : full) recycle_chunk_locked(c);
  }
  if (G.fd >= 0 && (status_dirty || final_status)) write_status(final_status);
  G.flush_seq.fetch_add(1, std::memory_order_release);
}

void* writer_main(void*) {
  Global& G = g();
  uint32_t cycles = 0;
  uint64_t last_dropped = 0;
  while (!G.stop_writer.load(std::memory_order_acquire)) {
    pollfd p{G.wake_pipe[0], POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(G.cfg.flush_interval_ms));
    if (p.revents & POLLIN) {
      char buf[64];
      while (::read(G.wake_pipe[0], buf, sizeof buf) > 0) {
      }
    }
    if (G.stop_writer.load(std::memory_order_acquire)) break;
    // Refresh the status now and then so a crashed process still reports its drops and internal errors.
    if (++cycles % 20 == 0 && G.n_dropped.load() + G.n_internal_errors.load() != last_dropped) {
      last_dropped = G.n_dropped.load() + G.n_internal_errors.load();
      std::lock_guard<std::mutex> lock(G.mu);
      G.status_dirty = true;
    }
    std::lock_guard<std::mutex> io(G.io_mu);
    flush_locked(false);
  }
  return nullptr;
}

bool start_writer() {
  Global& G = g();
  G.stop_writer.store(false);
  if (G.wake_pipe[0] < 0) {
    if (::pipe2(G.wake_pipe, O_CLOEXEC | O_NONBLOCK) != 0) return false;
  }
  // Block every signal in the writer so that process-directed signals reach application threads.
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  const int rc = pthread_create(&G.writer, nullptr, writer_main, nullptr);
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  G.writer_running = rc == 0;
  return G.writer_running;
}

// ---- signals -----------------------------------------------------------------------------------------------

void on_signal(int sig, siginfo_t* info, void* uctx) {
  Global& G = g();
  const int saved_errno = errno;
  const uint64_t before = G.flush_seq.load(std::memory_order_acquire);
  if (G.wake_pipe[1] >= 0) {
    ssize_t ignored = ::write(G.wake_pipe[1], "s", 1);
    (void)ignored;
  }
  struct sigaction& old = sig == SIGINT ? G.old_int : G.old_term;
  if (old.sa_flags & SA_SIGINFO) {
    if (old.sa_sigaction) old.sa_sigaction(sig, info, uctx);
  } else if (old.sa_handler == SIG_IGN) {
  } else if (old.sa_handler == SIG_DFL) {
    // The default action ends the process: give the writer up to 500 ms to flush, then re-raise.
    if (G.writer_running) {
      for (int i = 0; i < 100 && G.flush_seq.load(std::memory_order_acquire) <= before + 1; ++i) {
        timespec ts{0, 5 * 1000 * 1000};
        nanosleep(&ts, nullptr);
      }
    }
    sigaction(sig, &old, nullptr);
    raise(sig);
  } else if (old.sa_handler) {
    old.sa_handler(sig);
  }
  errno = saved_errno;
}

void install_signals() {
  Global& G = g();
  struct sigaction sa {};
  sa.sa_sigaction = on_signal;
  sa.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, &G.old_int);
  sigaction(SIGTERM, &sa, &G.old_term);
  G.signals_installed = true;
}

// ---- fork ----------------------------------------------------------------------------------------------------

void fork_prepare() {
  g().io_mu.lock();
  g().mu.lock();
}
void fork_parent() {
  g().mu.unlock();
  g().io_mu.unlock();
}
void fork_child() {
  Global& G = g();
  G.fork_parent = G.pid;
  G.pid = getpid();
  G.is_fork_child = true;
  G.pre_stop_hook.store(nullptr);  // CUPTI state does not survive fork; the parent flushes its own
  G.gen.fetch_add(1);
  G.threads.clear();
  G.full.clear();  // the parent writes these
  // Chunks held by the parent's other threads are forgotten here (the parent writes them).
  G.records_allocated = free_records_locked();
  G.chunks_total = 0;
  for (const auto& pool : G.free_chunks) G.chunks_total += static_cast<uint32_t>(pool.size());
  G.strings_written = 0;
  G.side_chunks.clear();
  G.status_dirty = true;
  if (G.fd >= 0) ::close(G.fd);
  G.fd = -1;  // opened on the first flush with data: a fork followed by exec leaves no empty file
  G.file_failed = false;
  G.path.clear();
  G.writer_running = false;
  G.n_records = 0;
  G.n_dropped = 0;
  G.n_filtered = 0;
  G.n_written = 0;
  // Worker processes record whatever they do; the step window is decided in the main process.
  G.recording.store(true);
  G.window_start.store(INT64_MIN);
  G.window_stop.store(INT64_MAX);
  if (G.wake_pipe[0] >= 0) {
    ::close(G.wake_pipe[0]);
    ::close(G.wake_pipe[1]);
    G.wake_pipe[0] = G.wake_pipe[1] = -1;
  }
  G.mu.unlock();
  G.io_mu.unlock();
  if (G.accepting.load()) start_writer();
}

void at_exit_handler() { recorder_stop(); }

void set_recording(bool on) {
  Global& G = g();
  const bool was = G.recording.exchange(on);
  if (on && !was) G.window_start.store(now_ns());
  if (!on && was) G.window_stop.store(now_ns());
}

void on_step_boundary() {
  Global& G = g();
  const int64_t n = G.steps_seen.fetch_add(1);
  if (G.cfg.warmup_steps > 0 && n == G.cfg.warmup_steps) set_recording(true);
  if (G.cfg.steps > 0 && n == G.cfg.warmup_steps + G.cfg.steps) set_recording(false);
}

// Caller holds mu. Adds `s` to the table (no bound check).
uint32_t insert_string_locked(std::string_view s) {
  Global& G = g();
  G.strings.emplace_back(s);
  const auto id = static_cast<uint32_t>(G.strings.size());
  const std::string& ref = G.strings.back();
  G.string_index.emplace(std::string_view(ref), id);
  G.string_bytes += s.size();
  if (G.flags && id < kMaxFlaggedIds && ref.rfind("ProfilerStep#", 0) == 0) G.flags[id] = kFlagStep;
  return id;
}

// Caller holds mu. Adds the "other names" entries and freezes the table.
void freeze_strings_locked() {
  Global& G = g();
  for (uint32_t b = 0; b < kOtherBuckets; ++b) {
    char name[64];
    std::snprintf(name, sizeof name, "[other names %02u/%u: the agent's name table was full]", b, kOtherBuckets);
    G.other_ids[b] = insert_string_locked(name);
  }
  G.other_step_id = insert_string_locked("ProfilerStep#[name table full]");
  G.strings_full.store(true, std::memory_order_release);
}

// The id of a name that is not in the full table.
uint32_t other_name_id(std::string_view s, uint64_t h) {
  Global& G = g();
  G.n_bucketed.fetch_add(1, std::memory_order_relaxed);
  if (s.rfind("ProfilerStep#", 0) == 0) return G.other_step_id;
  return G.other_ids[h % kOtherBuckets];
}

uint32_t intern_slow(const char* s, size_t n, uint64_t h, ThreadState* t) {
  Global& G = g();
  const std::string_view sv(s, n);
  uint32_t id;
  const char* stored;
  if (G.strings_full.load(std::memory_order_acquire)) {
    auto it = G.string_index.find(sv);
    if (it == G.string_index.end()) return other_name_id(sv, h);  // not cached: the name is not stored
    id = it->second;
    stored = G.strings[id - 1].data();
  } else {
    std::lock_guard<std::mutex> lock(G.mu);
    auto it = G.string_index.find(sv);
    if (it != G.string_index.end()) {
      id = it->second;
      stored = G.strings[id - 1].data();
    } else if (G.strings_full.load(std::memory_order_relaxed) || G.strings.size() + 1 >= kMaxStrings ||
               G.string_bytes + n > kMaxStringBytes) {
      if (!G.strings_full.load(std::memory_order_relaxed)) freeze_strings_locked();
      return other_name_id(sv, h);
    } else {
      id = insert_string_locked(sv);
      stored = G.strings[id - 1].data();
    }
  }
  if (t) t->cache[h % kCacheSize] = CacheEntry{h, stored, static_cast<uint32_t>(n), id};
  return id;
}

inline uint32_t intern_hashed(const char* s, size_t n, uint64_t h) {
  ThreadState* t = tls();
  if (t) {
    const CacheEntry& e = t->cache[h % kCacheSize];
    if (e.hash == h && e.len == n && e.str && std::memcmp(e.str, s, n) == 0) return e.id;
  }
  return intern_slow(s, n, h, t);
}

inline bool is_step_name(uint32_t id) {
  const Global& G = g();
  return id < kMaxFlaggedIds && G.flags && (G.flags[id] & kFlagStep);
}

}  // namespace

// ---- public API ----------------------------------------------------------------------------------------------

int64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

uint64_t current_tid() {
  ThreadState* t = tls();
  return t ? t->tid : sys_tid();
}

RecorderConfig config_from_env() {
  RecorderConfig c;
  const char* out = std::getenv("PROFILE_TRAIN_OUT");
  c.out_dir = (out && *out) ? out : "./profile-train-capture";
  c.warmup_steps = std::max<int64_t>(0, env_int("PROFILE_TRAIN_WARMUP_STEPS", 0));
  c.steps = std::max<int64_t>(0, env_int("PROFILE_TRAIN_STEPS", 0));
  const int64_t flush = env_int("PROFILE_TRAIN_FLUSH_MS", 50);
  c.flush_interval_ms = static_cast<uint32_t>(std::clamp<int64_t>(flush, 5, 10000));
  const int64_t mb = env_int("PROFILE_TRAIN_BUFFER_MB", 16);
  c.max_chunks = static_cast<uint32_t>(std::clamp<int64_t>(mb * 16, 4, 1 << 16));  // 16 chunks of 64 KiB per MiB
  return c;
}

bool recorder_start(const RecorderConfig& config) {
  Global& G = g();
  static std::once_flag once;
  std::call_once(once, [&] {
    try {
      G.cfg = config;
      if (G.cfg.chunk_records < 16) G.cfg.chunk_records = 16;
      if (G.cfg.max_chunks < 2) G.cfg.max_chunks = 2;
      while (G.top_class + 1 < kClasses && class_capacity(G.top_class) < G.cfg.chunk_records) ++G.top_class;
      if (G.cfg.flush_interval_ms == 0) G.cfg.flush_interval_ms = 50;
      G.pid = getpid();
      G.flags = static_cast<uint8_t*>(std::calloc(kMaxFlaggedIds, 1));
      if (G.cfg.warmup_steps > 0) {
        G.recording.store(false);
        G.window_start.store(INT64_MAX);
      }
      {
        std::lock_guard<std::mutex> io(G.io_mu);
        std::lock_guard<std::mutex> lock(G.mu);
        for (int i = 0; i < 4; ++i)
          if (Chunk* c = new_chunk_locked(G.top_class)) recycle_chunk_locked(c);
      }
      {
        std::lock_guard<std::mutex> io(G.io_mu);
        if (!open_file_locked()) return;
        G.status["nvtx"] = {{"attached", true}};
        G.status["cupti"] = {{"state", "not_initialized"},
                             {"reason", "the CUDA driver never called InitializeInjection (the program did not "
                                        "initialize CUDA, or there is no CUDA driver)"}};
        G.status_dirty = true;
        flush_locked(false);
      }
      G.accepting.store(true);
      if (!start_writer()) {
        std::lock_guard<std::mutex> lock(G.mu);
        G.status["writer"] = {{"error", "writer thread could not start; data is written at exit only"}};
        G.status_dirty = true;
      }
      if (G.cfg.install_atfork) pthread_atfork(fork_prepare, fork_parent, fork_child);
      if (G.cfg.install_atexit) std::atexit(at_exit_handler);
      if (G.cfg.install_signal_handlers) install_signals();
      G.start_ok = true;
    } catch (...) {
      note_internal_error();
      G.start_ok = false;
      G.accepting.store(false);
    }
  });
  G.started.store(true);
  return G.start_ok;
}

bool recorder_running() { return g().accepting.load(std::memory_order_acquire); }

void set_pre_stop_hook(void (*hook)()) { g().pre_stop_hook.store(hook); }

void recorder_stop() {
  Global& G = g();
  if (!G.accepting.load()) return;
  if (auto hook = G.pre_stop_hook.exchange(nullptr)) {
    try {
      hook();
    } catch (...) {
      note_internal_error();
    }
  }
  if (!G.accepting.exchange(false)) return;
  try {
    if (G.writer_running) {
      G.stop_writer.store(true, std::memory_order_release);
      if (G.wake_pipe[1] >= 0) {
        ssize_t ignored = ::write(G.wake_pipe[1], "x", 1);
        (void)ignored;
      }
      pthread_join(G.writer, nullptr);
      G.writer_running = false;
    }
    {
      std::lock_guard<std::mutex> lock(G.mu);
      uint64_t open = 0;
      for (ThreadState* t : G.threads) open += static_cast<uint64_t>(std::max(0, t->depth));
      G.n_open_at_exit.store(open);
    }
    std::lock_guard<std::mutex> io(G.io_mu);
    flush_locked(true);
    if (G.fd >= 0) {
      ::close(G.fd);
      G.fd = -1;
    }
  } catch (...) {
    note_internal_error();
  }
}

void recorder_flush() {
  Global& G = g();
  if (!G.accepting.load()) return;
  try {
    std::lock_guard<std::mutex> io(G.io_mu);
    flush_locked(false);
  } catch (...) {
    note_internal_error();
  }
}

std::string recorder_file_path() {
  std::lock_guard<std::mutex> io(g().io_mu);
  return g().path;
}

namespace {
// Word-wise FNV-1a style hash (8 bytes per step); names are hashed on every NVTX call, so this is hot.
inline uint64_t hash_bytes(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s + i, n - i);
  h = (h ^ tail) * 1099511628211ull;
  return h ^ (h >> 29);
}
}  // namespace

uint32_t intern(std::string_view s) { return intern_hashed(s.data(), s.size(), hash_bytes(s.data(), s.size())); }

uint32_t intern_cstr(const char* s) {
  if (!s) return 0;
  const size_t n = std::strlen(s);
  return intern_hashed(s, n, hash_bytes(s, n));
}

void record(const Record& r) {
  Global& G = g();
  if (!G.accepting.load(std::memory_order_relaxed)) return;
  ThreadState* t = tls();
  if (!t) {
    G.n_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  append(t, r);
}

int range_push(uint32_t name, uint32_t domain) {
  Global& G = g();
  if (!G.accepting.load(std::memory_order_relaxed)) return -1;
  ThreadState* t = tls();
  if (!t) return -1;
  if (is_step_name(name)) on_step_boundary();
  const int level = t->depth++;
  if (level >= t->stack_cap && !t->stack_grown) {  // once per thread, at most: deep nesting is rare
    auto* big = new (std::nothrow) RangeEntry[kMaxDepth];
    if (big) {
      std::copy(t->stack, t->stack + t->stack_cap, big);
      t->stack = big;
      t->stack_cap = kMaxDepth;
    }
    t->stack_grown = true;  // no further attempt either way: the cap only grows once
  }
  if (level < t->stack_cap) {
    const bool rec = G.recording.load(std::memory_order_relaxed);
    if (!rec) G.n_filtered.fetch_add(1, std::memory_order_relaxed);
    t->stack[level] = RangeEntry{now_ns(), name, domain, rec};
  }
  return level;
}

int range_pop(uint32_t domain) {
  Global& G = g();
  if (!G.accepting.load(std::memory_order_relaxed)) return -1;
  ThreadState* t = tls();
  if (!t || t->depth <= 0) return -1;
  const int64_t end = now_ns();
  const int level = --t->depth;
  if (level >= t->stack_cap) return level;
  // NVTX keeps one stack per domain: pop the innermost range of this domain.
  int at = level;
  while (at >= 0 && t->stack[at].domain != domain) --at;
  if (at < 0) {
    ++t->depth;  // no open range in this domain
    return -1;
  }
  const RangeEntry e = t->stack[at];
  for (int i = at; i < level; ++i) t->stack[i] = t->stack[i + 1];
  if (t->discard_next_pop) {
    t->discard_next_pop = false;
    return level;
  }
  if (!e.recorded) return level;
  Record r;
  r.kind = static_cast<uint8_t>(RecordKind::kRange);
  r.name = e.name;
  r.start_ns = e.start_ns;
  r.end_ns = end;
  r.tid = t->tid;
  r.x0 = e.domain;
  r.x1 = static_cast<uint32_t>(at);
  append(t, r);
  return level;
}

uint64_t range_start(uint32_t name, uint32_t domain) {
  Global& G = g();
  const uint64_t id = G.next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (!G.accepting.load(std::memory_order_relaxed)) return id;
  if (!G.recording.load(std::memory_order_relaxed)) {
    G.n_filtered.fetch_add(1, std::memory_order_relaxed);
    return id;
  }
  ThreadState* t = tls();
  if (!t) return id;
  Record r;
  r.kind = static_cast<uint8_t>(RecordKind::kRangeStart);
  r.name = name;
  r.start_ns = now_ns();
  r.end_ns = r.start_ns;
  r.tid = t->tid;
  r.corr = static_cast<int64_t>(id);
  r.x0 = domain;
  append(t, r);
  return id;
}

void range_end(uint64_t id) {
  Global& G = g();
  if (!G.accepting.load(std::memory_order_relaxed)) return;
  ThreadState* t = tls();
  if (!t) return;
  Record r;
  r.kind = static_cast<uint8_t>(RecordKind::kRangeEnd);
  r.start_ns = r.end_ns = now_ns();
  r.tid = t->tid;
  r.corr = static_cast<int64_t>(id);
  append(t, r);  // an end without its start (outside the window) is dropped by the reader
}

void mark(uint32_t name, uint32_t domain, std::string_view text) {
  Global& G = g();
  if (!G.accepting.load(std::memory_order_relaxed)) return;
  if (text.rfind(format::kControlPrefix, 0) == 0) {
    if (text == format::kMarkFlush) {
      recorder_flush();
    } else if (text == format::kMarkCaptureStart) {
      set_recording(true);
    } else if (text == format::kMarkCaptureStop) {
      set_recording(false);
      recorder_flush();
    } else if (text == format::kMarkFinalize) {
      recorder_stop();
    } else if (text == format::kMarkDiscardNextPop) {
      if (ThreadState* t = tls()) t->discard_next_pop = true;
    }
    return;  // control marks are not events
  }
  if (!G.recording.load(std::memory_order_relaxed)) {
    G.n_filtered.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  ThreadState* t = tls();
  if (!t) return;
  Record r;
  r.kind = static_cast<uint8_t>(RecordKind::kMark);
  r.name = name;
  r.start_ns = r.end_ns = now_ns();
  r.tid = t->tid;
  r.x0 = domain;
  append(t, r);
}

void name_thread(uint64_t tid, uint32_t name) {
  Record r;
  r.kind = static_cast<uint8_t>(RecordKind::kThreadName);
  r.name = name;
  r.start_ns = r.end_ns = now_ns();
  r.tid = tid;
  record(r);
}

bool in_capture_window(int64_t start_ns, int64_t end_ns) {
  const Global& G = g();
  const bool ok = end_ns >= G.window_start.load(std::memory_order_relaxed) &&
                  start_ns <= G.window_stop.load(std::memory_order_relaxed);
  if (!ok) g().n_filtered.fetch_add(1, std::memory_order_relaxed);
  return ok;
}

void set_status(const std::string& key, const std::string& json_object) {
  Global& G = g();
  try {
    nlohmann::json v = nlohmann::json::parse(json_object, nullptr, false);
    if (v.is_discarded()) v = json_object;
    std::lock_guard<std::mutex> lock(G.mu);
    G.status[key] = std::move(v);
    G.status_dirty = true;
  } catch (...) {
    note_internal_error();
  }
}

void add_json_chunk(format::ChunkType type, const std::string& json_object) {
  Global& G = g();
  try {
    std::lock_guard<std::mutex> lock(G.mu);
    G.side_chunks.emplace_back(static_cast<uint16_t>(type), json_object);
  } catch (...) {
    note_internal_error();
  }
}

RecorderStats recorder_stats() {
  Global& G = g();
  RecorderStats s;
  s.records = total_records();
  s.dropped = G.n_dropped.load();
  s.filtered = G.n_filtered.load();
  s.written = G.n_written.load();
  s.nvtx_init_calls = G.nvtx_init_calls.load();
  std::lock_guard<std::mutex> lock(G.mu);
  uint64_t free_chunks = 0;
  for (const auto& pool : G.free_chunks) free_chunks += pool.size();
  s.chunks_in_use = G.chunks_total - free_chunks;
  s.names = G.strings.size();
  s.names_bucketed = G.n_bucketed.load();
  s.bad_handles = G.n_bad_handles.load();
  s.handles_refused = G.n_handles_refused.load();
  s.internal_errors = G.n_internal_errors.load();
  return s;
}

void note_nvtx_init_call() { g().nvtx_init_calls.fetch_add(1); }

void add_dropped(uint64_t n) { g().n_dropped.fetch_add(n); }

void note_bad_nvtx_handle() { g().n_bad_handles.fetch_add(1, std::memory_order_relaxed); }

void note_nvtx_handle_limit() { g().n_handles_refused.fetch_add(1, std::memory_order_relaxed); }

void note_internal_error() noexcept { g().n_internal_errors.fetch_add(1, std::memory_order_relaxed); }

}  // namespace profile_train::agent
