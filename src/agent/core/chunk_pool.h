// The recorder's chunk pool part: per-thread state (ThreadState, never freed) and the chunks of 16 x 4^k records
// handed to recording threads within the process's record budget (not installed; only src/agent/core includes it).
// Every member function of ChunkPool runs with the recorder's `mu` held (the pool has no lock of its own; see
// recorder_state.h for the concurrency protocol). Cross-part operations (thread registration, the slow append)
// live in chunk_pool.cpp on the Recorder.
#pragma once

#include <atomic>
#include <cstdint>
#include <vector>

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

struct Chunk {
  std::atomic<uint32_t> committed{0};
  uint32_t flushed = 0;  // guarded by the recorder's io_mu
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
  const char* str = nullptr;  // points into StringTable::names (stable)
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

// The threads that record and the chunks they record into. All members: the recorder's `mu` held.
struct ChunkPool {
  std::vector<ThreadState*> threads;
  std::vector<ThreadState*> spare_threads;  // of exited threads, reused (never freed: see ThreadExit)
  std::vector<Chunk*> full;
  std::vector<Chunk*> free_chunks[kClasses];  // by size class
  int top_class = 0;                           // the class of cfg.chunk_records
  uint32_t chunks_total = 0;
  uint64_t records_allocated = 0;  // bounded by cfg.max_chunks * cfg.chunk_records

  // Capacity of size class k: 16 x 4^k records, at most cfg.chunk_records.
  static uint32_t class_capacity(const RecorderConfig& cfg, int k);
  // Sets top_class to the class of cfg.chunk_records (once, at start).
  void set_top_class(const RecorderConfig& cfg);
  int class_of(const RecorderConfig& cfg, uint32_t capacity) const;
  uint64_t free_records() const;
  uint64_t free_chunk_count() const;
  // A chunk for a thread that wants size class `want`, within the budget; nullptr when the budget is in use.
  Chunk* new_chunk(const RecorderConfig& cfg, int want);
  void recycle(const RecorderConfig& cfg, Chunk* c);
  // In a forked child: forgets the threads, the full chunks and the chunks held by the parent's threads (the
  // parent writes those); the free chunks stay.
  void forget_in_flight();
};

}  // namespace profile_train::agent::detail
