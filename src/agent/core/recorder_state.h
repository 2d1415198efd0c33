// The recorder's shared state and the pieces its files share (not installed; only src/agent/core includes it).
// The recorder is split by job: chunk_pool.cpp (per-thread chunks within the memory budget), string_table.cpp
// (name interning), range_stack.cpp (NVTX semantics on each thread's stack), capture_window.cpp (steps),
// file_writer.cpp (chunks to the file), writer_thread.cpp, process_hooks.cpp (fork, exit, signals: installed by
// the injected library's entry point only) and recorder.cpp (start, stop, status, counters).
//
// Concurrency protocol (the non-obvious part):
// - An application thread owns `ThreadState::cur`; it writes record n, then publishes `committed = n + 1`
//   (release). When the chunk is full it moves it to `g().full` and takes a free chunk, both under `g().mu`.
// - Only a flusher holding `g().io_mu` (the writer thread, or a synchronous flush) reads chunks: it writes
//   records [flushed, committed) of every thread's current chunk and of every full chunk, and recycles full
//   chunks. A chunk is recycled only from `g().full`, i.e. after its owner has let go of it, so a flusher never
//   reads a chunk that another thread is refilling.
// - Fork: the prepare handler takes io_mu then mu, so the child inherits consistent structures; the child
//   forgets every in-flight chunk (the parent writes those), rewrites the whole string table into its own file
//   and starts its own writer thread.
#pragma once

#include <pthread.h>
#include <signal.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/agent/recorder.h"

namespace profile_train::agent::detail {

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

inline Global& g() {
  static Global* global = new Global;  // never destroyed: threads may record during exit
  return *global;
}

// ---- chunk_pool.cpp: per-thread state and chunks (mu held where marked _locked) ------------------------------

inline thread_local ThreadState* t_state = nullptr;

uint32_t class_capacity(int k);
int class_of(uint32_t capacity);
uint64_t free_records_locked();
Chunk* new_chunk_locked(int want);
void recycle_chunk_locked(Chunk* c);
ThreadState* register_thread();  // nullptr once the thread has exited (its records are dropped)
uint64_t sys_tid();

// The calling thread's state, registered on first use (and again in a forked child: stale generation).
inline ThreadState* tls() {
  ThreadState* t = t_state;
  if (t && t->gen == g().gen.load(std::memory_order_relaxed)) return t;
  return register_thread();
}

// Appends one record to the thread's current chunk, taking a new chunk when it is full (dropped and counted
// when the budget is in use). Lock-free except on a chunk change.
void append_slow(ThreadState* t, const Record& r);
inline void append(ThreadState* t, const Record& r) {
  Chunk* c = t->cur.load(std::memory_order_relaxed);
  if (!c) return append_slow(t, r);
  const uint32_t n = c->committed.load(std::memory_order_relaxed);
  if (n >= c->capacity) return append_slow(t, r);
  c->recs[n] = r;
  c->committed.store(n + 1, std::memory_order_release);
  ++t->appended;
}

// ---- string_table.cpp ------------------------------------------------------------------------------------------

inline bool is_step_name(uint32_t id) {
  const Global& G = g();
  return id < kMaxFlaggedIds && G.flags && (G.flags[id] & kFlagStep);
}

// ---- capture_window.cpp ----------------------------------------------------------------------------------------

void set_recording(bool on);
void on_step_boundary();  // a ProfilerStep# range was pushed

// ---- file_writer.cpp (io_mu held) ------------------------------------------------------------------------------

bool open_file_locked();
void flush_locked(bool final_status);  // writes everything committed so far
uint64_t total_records();
std::string dump(const nlohmann::json& j);  // never throws ("{}" on failure, counted)
int64_t env_int(const char* name, int64_t fallback);  // fallback when unset or not an integer
// `fd` moved above stdin, stdout and stderr (close-on-exec), the original closed: a descriptor the agent opens
// in a program that closed one of those must not take its place, or the program's reads and writes there would
// reach the agent's file or pipe. Returns `fd` itself when it is already above them; -1 (errno set) on failure.
int above_stdio(int fd);
int64_t unix_ns();                                     // CLOCK_REALTIME

// ---- writer_thread.cpp ------------------------------------------------------------------------------------------

bool start_writer();
void join_writer();  // wakes the writer thread and waits for it to end (no-op if it is not running)

}  // namespace profile_train::agent::detail
