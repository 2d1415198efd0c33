// Per-thread state and the chunk pool: chunks of 16 x 4^k records handed to recording threads within the
// process's record budget, recycled by the flusher. See recorder_state.h for the concurrency protocol.
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

void append_slow(ThreadState* t, const Record& r) {
  Global& G = g();
  Chunk* c = t->cur.load(std::memory_order_relaxed);
  {
    std::lock_guard<std::mutex> lock(G.mu);
    if (c) G.full.push_back(c);
    c = new_chunk_locked(t->next_class);
    if (c) t->next_class = std::min(class_of(c->capacity) + 1, G.top_class);
    t->cur.store(c, std::memory_order_release);
    if (!c) {
      G.n_dropped.fetch_add(1, std::memory_order_relaxed);
      return;
    }
  }
  c->recs[0] = r;
  c->committed.store(1, std::memory_order_release);
  ++t->appended;
}

}  // namespace profile_train::agent::detail
