// The recorder's shared state: one Recorder object made of its parts, and the pieces its files share (not
// installed; only src/agent/core includes it). The recorder is split by job, a part and a file each:
// chunk_pool.h/.cpp (ChunkPool: per-thread chunks within the memory budget), string_table.h/.cpp (StringTable:
// name interning), capture_window.h/.cpp (CaptureWindow: steps), file_writer.h/.cpp (FileWriter: chunks to the
// file) and writer_thread.cpp; range_stack.cpp (NVTX semantics on each thread's stack), process_hooks.cpp (fork,
// exit, signals: installed by the injected library's entry point only) and recorder.cpp (start, stop, status,
// counters) work across the parts.
//
// Concurrency protocol (the non-obvious part):
// - An application thread owns `ThreadState::cur`; it writes record n, then publishes `committed = n + 1`
//   (release). When the chunk is full it moves it to `rec.pool.full` and takes a free chunk, both under
//   `rec.mu`.
// - Only a flusher holding `rec.io_mu` (the writer thread, or a synchronous flush) reads chunks: it writes
//   records [flushed, committed) of every thread's current chunk and of every full chunk, and recycles full
//   chunks. A chunk is recycled only from `rec.pool.full`, i.e. after its owner has let go of it, so a flusher
//   never reads a chunk that another thread is refilling.
// - Fork: the prepare handler takes io_mu then mu, so the child inherits consistent structures; the child
//   forgets every in-flight chunk (the parent writes those), rewrites the whole string table into its own file
//   and starts its own writer thread.
#pragma once

#include <signal.h>

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/capture_window.h"
#include "core/chunk_pool.h"
#include "core/file_writer.h"
#include "core/string_table.h"
#include "profile_train/agent/recorder.h"

namespace profile_train::agent::detail {

// This process and where it came from (a forked child has its own file).
struct ProcessIdentity {
  int64_t pid = 0;
  bool is_fork_child = false;
  int64_t fork_parent = -1;
};

// The statistics counters (recorder_stats and the file's status).
struct Counters {
  std::atomic<uint64_t> n_records{0}, n_dropped{0}, n_filtered{0}, n_written{0}, n_open_at_exit{0};
  std::atomic<uint64_t> nvtx_init_calls{0};
  std::atomic<uint64_t> n_bucketed{0}, n_bad_handles{0}, n_handles_refused{0}, n_internal_errors{0};
};

// The handlers that were in place before ours (chained to), installed once by install_process_hooks.
struct SignalChain {
  struct sigaction old_int {}, old_term {};
  bool installed = false;
};

// The process's recorder: its parts, the locks they share, its configuration and start state. One current
// instance (recorder()); the public API of include/profile_train/agent/recorder.h works on it. It starts once;
// renew_recorder() puts a fresh one in its place (tests that run several captures in one process).
class Recorder {
 public:
  Recorder() = default;
  Recorder(const Recorder&) = delete;
  Recorder& operator=(const Recorder&) = delete;

  std::mutex io_mu;  // one flusher at a time; taken before mu
  std::mutex mu;     // threads, chunk lists, strings, status
  RecorderConfig cfg;
  std::once_flag start_once;  // recorder_start configures this instance once
  std::atomic<bool> started{false};
  std::atomic<bool> accepting{false};
  bool start_ok = false;
  std::atomic<uint64_t> gen{1};  // +1 in a forked child: every thread's state is stale there
  ProcessIdentity proc;
  std::atomic<uint64_t> next_range_id{1};  // ids of NVTX start/end ranges

  ChunkPool pool;
  StringTable strings;
  CaptureWindow window;
  FileWriter file;
  Counters stats;

  std::atomic<void (*)()> pre_stop_hook{nullptr};
  SignalChain signals;
};

// The process's current recorder. Never destroyed: threads may record during exit, and a thread's state may
// still point into a recorder that renew_recorder() replaced.
inline std::atomic<Recorder*>& recorder_slot() {
  static std::atomic<Recorder*> slot{new Recorder};
  return slot;
}
inline Recorder& recorder() { return *recorder_slot().load(std::memory_order_acquire); }

// Replaces the current recorder by a fresh, unstarted one whose generation is past the old one's, so every
// thread registers again (as in a forked child) and interns its names again. Refused (false) while the current
// one accepts records: stop it first. For tests that run several captures in one process; the injected
// library never calls it.
bool renew_recorder();

// ---- chunk_pool.cpp: per-thread state and chunks ---------------------------------------------------------------

inline thread_local ThreadState* t_state = nullptr;

ThreadState* register_thread();  // nullptr once the thread has exited (its records are dropped)
uint64_t sys_tid();

// The calling thread's state, registered on first use (and again in a forked child: stale generation).
inline ThreadState* tls() {
  ThreadState* t = t_state;
  if (t && t->gen == recorder().gen.load(std::memory_order_relaxed)) return t;
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

inline bool is_step_name(uint32_t id) { return recorder().strings.is_step(id); }

// ---- capture_window.cpp ----------------------------------------------------------------------------------------

void set_recording(bool on);
void on_step_boundary();  // a ProfilerStep# range was pushed

}  // namespace profile_train::agent::detail
