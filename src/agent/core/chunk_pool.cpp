// Per-thread state and the chunk pool: chunks of 16 x 4^k records handed to recording threads within the
// process's record budget, recycled by the flusher. The pool itself is chunk_pool.h's ChunkPool; see
// recorder_state.h for the concurrency protocol.
#include <sys/syscall.h>
#include <unistd.h>

#include <new>

#include "core/recorder_state.h"

namespace profile_train::agent::detail {
namespace {

thread_local bool t_exited = false;  // records from later thread-exit code are dropped (counted)

struct ThreadExit {
  ~ThreadExit();
};
thread_local ThreadExit t_exit;

}  // namespace

uint64_t sys_tid() { return static_cast<uint64_t>(syscall(SYS_gettid)); }

// ---- ChunkPool (mu held) ---------------------------------------------------------------------------------------

uint32_t ChunkPool::class_capacity(const RecorderConfig& cfg, int k) {
  return static_cast<uint32_t>(std::min<uint64_t>(uint64_t{kSmallestChunk} << (2 * k), cfg.chunk_records));
}

void ChunkPool::set_top_class(const RecorderConfig& cfg) {
  while (top_class + 1 < kClasses && class_capacity(cfg, top_class) < cfg.chunk_records) ++top_class;
}

int ChunkPool::class_of(const RecorderConfig& cfg, uint32_t capacity) const {
  int k = 0;
  while (k < top_class && class_capacity(cfg, k) < capacity) ++k;
  return k;
}

uint64_t ChunkPool::free_records() const {
  uint64_t n = 0;
  for (const auto& pool : free_chunks)
    for (const Chunk* c : pool) n += c->capacity;
  return n;
}

uint64_t ChunkPool::free_chunk_count() const {
  uint64_t n = 0;
  for (const auto& pool : free_chunks) n += pool.size();
  return n;
}

// Memory stays within the budget whatever the mix (free chunks of other sizes are released to make room).
Chunk* ChunkPool::new_chunk(const RecorderConfig& cfg, int want) {
  const uint64_t budget = uint64_t{cfg.max_chunks} * cfg.chunk_records;
  // Many threads alive: smaller chunks, so that their partly filled chunks cannot hold the whole budget.
  const uint64_t n_threads = std::max<uint64_t>(1, threads.size());
  int k = std::min(want, top_class);
  while (k > 0 && class_capacity(cfg, k) * n_threads * kClassShare > budget) --k;
  std::vector<Chunk*>& pool = free_chunks[k];
  if (!pool.empty()) {
    Chunk* c = pool.back();
    pool.pop_back();
    return c;
  }
  const uint32_t capacity = class_capacity(cfg, k);
  for (int other = top_class; other >= 0 && records_allocated + capacity > budget; --other) {
    auto& spare = free_chunks[other];
    while (!spare.empty() && records_allocated + capacity > budget) {
      Chunk* c = spare.back();
      spare.pop_back();
      records_allocated -= c->capacity;
      --chunks_total;
      delete[] c->recs;
      delete c;
    }
  }
  if (records_allocated + capacity > budget) return nullptr;
  auto* c = new (std::nothrow) Chunk;
  if (!c) return nullptr;
  c->recs = new (std::nothrow) Record[capacity];
  if (!c->recs) {
    delete c;
    return nullptr;
  }
  c->capacity = capacity;
  ++chunks_total;
  records_allocated += capacity;
  return c;
}

void ChunkPool::recycle(const RecorderConfig& cfg, Chunk* c) {
  c->committed.store(0, std::memory_order_relaxed);
  c->flushed = 0;
  free_chunks[class_of(cfg, c->capacity)].push_back(c);
}

void ChunkPool::forget_in_flight() {
  threads.clear();
  full.clear();  // the parent writes these
  // Chunks held by the parent's other threads are forgotten here (the parent writes them).
  records_allocated = free_records();
  chunks_total = 0;
  for (const auto& pool : free_chunks) chunks_total += static_cast<uint32_t>(pool.size());
}

// ---- threads (across the parts) --------------------------------------------------------------------------------

ThreadState* register_thread() {
  Recorder& rec = recorder();
  ThreadState* t = t_state;
  if (t_exited) return nullptr;
  if (!t) {
    {
      std::lock_guard<std::mutex> lock(rec.mu);
      if (!rec.pool.spare_threads.empty()) {
        t = rec.pool.spare_threads.back();
        rec.pool.spare_threads.pop_back();
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
    // Stale generation: this thread forked (its chunk and open ranges belong to the parent), or the recorder
    // was renewed (its chunk and names belong to the old one: the name cache is emptied too).
    t->cur.store(nullptr, std::memory_order_relaxed);
    t->depth = 0;
    t->appended = 0;
    t->next_class = 0;
    t->discard_next_pop = false;
    for (CacheEntry& e : t->cache) e = CacheEntry{};
  }
  t->tid = sys_tid();
  std::lock_guard<std::mutex> lock(rec.mu);
  t->gen = rec.gen.load(std::memory_order_relaxed);
  rec.pool.threads.push_back(t);
  t->cur.store(nullptr, std::memory_order_release);  // a chunk comes with the first record
  return t;
}

ThreadExit::~ThreadExit() {
  ThreadState* t = t_state;
  t_exited = true;
  t_state = nullptr;
  if (!t) return;
  Recorder& rec = recorder();
  std::lock_guard<std::mutex> lock(rec.mu);
  if (t->gen != rec.gen.load(std::memory_order_relaxed)) return;
  if (Chunk* c = t->cur.load(std::memory_order_relaxed)) rec.pool.full.push_back(c);
  t->cur.store(nullptr, std::memory_order_release);
  rec.stats.n_records.fetch_add(t->appended, std::memory_order_relaxed);
  t->appended = 0;
  std::vector<ThreadState*>& threads = rec.pool.threads;
  for (auto it = threads.begin(); it != threads.end(); ++it)
    if (*it == t) {
      threads.erase(it);
      break;
    }
  // t is never freed: a flusher may still hold it in its snapshot. It is reused by the next new thread (a
  // flusher that reads it then sees that thread's chunk, which is what it would read anyway).
  t->gen = 0;
  rec.pool.spare_threads.push_back(t);
}

void append_slow(ThreadState* t, const Record& r) {
  Recorder& rec = recorder();
  Chunk* c = t->cur.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(rec.mu);
    if (c) rec.pool.full.push_back(c);
    c = rec.pool.new_chunk(rec.cfg, t->next_class);
    if (c) t->next_class = std::min(rec.pool.class_of(rec.cfg, c->capacity) + 1, rec.pool.top_class);
    t->cur.store(c, std::memory_order_release);
    if (!c) {
      rec.stats.n_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  c->recs[0] = r;
  c->committed.store(1, std::memory_order_release);
  ++t->appended;
}

}  // namespace profile_train::agent::detail
