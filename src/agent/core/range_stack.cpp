// NVTX semantics on the calling thread: push/pop ranges on its range stack (one stack, popped per domain),
// start/end ranges, marks (and the profile_train:* control marks), thread names. Every record goes to the
// thread's own chunk (chunk_pool.cpp) without a lock.
#include "core/recorder_state.h"
#include "profile_train/format/protocol.h"

namespace profile_train::agent {

using namespace detail;

void record(const Record& r) {
  Recorder& rec = recorder();
  if (!rec.accepting.load(std::memory_order_relaxed)) return;
  ThreadState* t = tls();
  if (!t) {
    rec.stats.n_dropped.fetch_add(1, std::memory_order_relaxed);
    return;
  }
  append(t, r);
}

int range_push(uint32_t name, uint32_t domain) {
  Recorder& rec = recorder();
  if (!rec.accepting.load(std::memory_order_relaxed)) return -1;
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
    const bool recorded = rec.window.recording.load(std::memory_order_relaxed);
    if (!recorded) rec.stats.n_filtered.fetch_add(1, std::memory_order_relaxed);
    t->stack[level] = RangeEntry{now_ns(), name, domain, recorded};
  }
  return level;
}

int range_pop(uint32_t domain) {
  Recorder& rec = recorder();
  if (!rec.accepting.load(std::memory_order_relaxed)) return -1;
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
  Recorder& rec = recorder();
  const uint64_t id = rec.next_range_id.fetch_add(1, std::memory_order_relaxed);
  if (!rec.accepting.load(std::memory_order_relaxed)) return id;
  if (!rec.window.recording.load(std::memory_order_relaxed)) {
    rec.stats.n_filtered.fetch_add(1, std::memory_order_relaxed);
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
  Recorder& rec = recorder();
  if (!rec.accepting.load(std::memory_order_relaxed)) return;
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
  Recorder& rec = recorder();
  if (!rec.accepting.load(std::memory_order_relaxed)) return;
  if (text.rfind(protocol::kControlPrefix, 0) == 0) {
    if (text == protocol::kMarkFlush) {
      recorder_flush();
    } else if (text == protocol::kMarkCaptureStart) {
      set_recording(true);
    } else if (text == protocol::kMarkCaptureStop) {
      set_recording(false);
      recorder_flush();
    } else if (text == protocol::kMarkFinalize) {
      recorder_stop();
    } else if (text == protocol::kMarkDiscardNextPop) {
      if (ThreadState* t = tls()) t->discard_next_pop = true;
    }
    return;  // control marks are not events
  }
  if (!rec.window.recording.load(std::memory_order_relaxed)) {
    rec.stats.n_filtered.fetch_add(1, std::memory_order_relaxed);
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

}  // namespace profile_train::agent
