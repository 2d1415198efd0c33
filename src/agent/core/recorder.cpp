// Process-wide recorder: start, stop, flush, status and counters, on the one Recorder object (recorder()). Its
// parts live next to this file, one job each (the list and the concurrency protocol: recorder_state.h); the
// contract is include/profile_train/agent/recorder.h, the file layout src/agent/FORMAT.md.
#include "profile_train/agent/recorder.h"

#include <time.h>
#include <unistd.h>

#include <cstdlib>

#include "core/recorder_state.h"
#include "profile_train/format/protocol.h"

namespace profile_train::agent {

using namespace detail;

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
  const char* out = std::getenv(protocol::kEnvOut);
  c.out_dir = (out && *out) ? out : "./profile-train-capture";
  c.warmup_steps = std::max<int64_t>(0, env_int(protocol::kEnvWarmupSteps, 0));
  c.steps = std::max<int64_t>(0, env_int(protocol::kEnvSteps, 0));
  const int64_t flush = env_int(protocol::kEnvFlushMs, 50);
  c.flush_interval_ms = static_cast<uint32_t>(std::clamp<int64_t>(flush, 5, 10000));
  const int64_t mb = env_int(protocol::kEnvBufferMb, 16);
  c.max_chunks = static_cast<uint32_t>(std::clamp<int64_t>(mb * 16, 4, 1 << 16));  // 16 chunks of 64 KiB per MiB
  return c;
}

bool recorder_start(const RecorderConfig& config) {
  Recorder& rec = recorder();
  std::call_once(rec.start_once, [&] {
    try {
      rec.cfg = config;
      if (rec.cfg.chunk_records < 16) rec.cfg.chunk_records = 16;
      if (rec.cfg.max_chunks < 2) rec.cfg.max_chunks = 2;
      rec.pool.set_top_class(rec.cfg);
      if (rec.cfg.flush_interval_ms == 0) rec.cfg.flush_interval_ms = 50;
      rec.proc.pid = getpid();
      rec.strings.flags = static_cast<uint8_t*>(std::calloc(kMaxFlaggedIds, 1));
      if (rec.cfg.warmup_steps > 0) rec.window.close_for_warmup();
      {
        std::lock_guard<std::mutex> io(rec.io_mu);
        std::lock_guard<std::mutex> lock(rec.mu);
        for (int i = 0; i < 4; ++i)
          if (Chunk* c = rec.pool.new_chunk(rec.cfg, rec.pool.top_class)) rec.pool.recycle(rec.cfg, c);
      }
      {
        std::lock_guard<std::mutex> io(rec.io_mu);
        if (!open_file_locked()) return;
        rec.file.status["nvtx"] = {{"attached", true}};
        rec.file.status["cupti"] = {{"state", "not_initialized"},
                                    {"reason", "the CUDA driver never called InitializeInjection (the program did "
                                               "not initialize CUDA, or there is no CUDA driver)"}};
        rec.file.status_dirty = true;
        flush_locked(false);
      }
      rec.accepting.store(true);
      if (!start_writer()) {
        std::lock_guard<std::mutex> lock(rec.mu);
        rec.file.status["writer"] = {{"error", "writer thread could not start; data is written at exit only"}};
        rec.file.status_dirty = true;
      }
      rec.start_ok = true;
    } catch (...) {
      note_internal_error();
      rec.start_ok = false;
      rec.accepting.store(false);
    }
  });
  rec.started.store(true);
  return rec.start_ok;
}

bool recorder_running() { return recorder().accepting.load(std::memory_order_acquire); }

void set_pre_stop_hook(void (*hook)()) { recorder().pre_stop_hook.store(hook); }

void recorder_stop() {
  Recorder& rec = recorder();
  if (!rec.accepting.load()) return;
  if (auto hook = rec.pre_stop_hook.exchange(nullptr)) {
    try {
      hook();
    } catch (...) {
      note_internal_error();
    }
  }
  if (!rec.accepting.exchange(false)) return;
  try {
    join_writer();
    {
      std::lock_guard<std::mutex> lock(rec.mu);
      uint64_t open = 0;
      for (ThreadState* t : rec.pool.threads) open += static_cast<uint64_t>(std::max(0, t->depth));
      rec.stats.n_open_at_exit.store(open);
    }
    std::lock_guard<std::mutex> io(rec.io_mu);
    flush_locked(true);
    if (rec.file.fd >= 0) {
      ::close(rec.file.fd);
      rec.file.fd = -1;
    }
  } catch (...) {
    note_internal_error();
  }
}

void recorder_flush() {
  Recorder& rec = recorder();
  if (!rec.accepting.load()) return;
  try {
    std::lock_guard<std::mutex> io(rec.io_mu);
    flush_locked(false);
  } catch (...) {
    note_internal_error();
  }
}

std::string recorder_file_path() {
  Recorder& rec = recorder();
  std::lock_guard<std::mutex> io(rec.io_mu);
  return rec.file.path;
}

void set_status(const std::string& key, const std::string& json_object) {
  Recorder& rec = recorder();
  try {
    nlohmann::json v = nlohmann::json::parse(json_object, nullptr, false);
    if (v.is_discarded()) v = json_object;
    std::lock_guard<std::mutex> lock(rec.mu);
    rec.file.status[key] = std::move(v);
    rec.file.status_dirty = true;
  } catch (...) {
    note_internal_error();
  }
}

void add_json_chunk(format::ChunkType type, const std::string& json_object) {
  Recorder& rec = recorder();
  try {
    std::lock_guard<std::mutex> lock(rec.mu);
    rec.file.side_chunks.emplace_back(static_cast<uint16_t>(type), json_object);
  } catch (...) {
    note_internal_error();
  }
}

RecorderStats recorder_stats() {
  Recorder& rec = recorder();
  RecorderStats s;
  s.records = total_records();
  s.dropped = rec.stats.n_dropped.load();
  s.filtered = rec.stats.n_filtered.load();
  s.written = rec.stats.n_written.load();
  s.nvtx_init_calls = rec.stats.nvtx_init_calls.load();
  std::lock_guard<std::mutex> lock(rec.mu);
  s.chunks_in_use = rec.pool.chunks_total - rec.pool.free_chunk_count();
  s.names = rec.strings.names.size();
  s.names_bucketed = rec.stats.n_bucketed.load();
  s.bad_handles = rec.stats.n_bad_handles.load();
  s.handles_refused = rec.stats.n_handles_refused.load();
  s.internal_errors = rec.stats.n_internal_errors.load();
  return s;
}

void note_nvtx_init_call() { recorder().stats.nvtx_init_calls.fetch_add(1); }

void add_dropped(uint64_t n) { recorder().stats.n_dropped.fetch_add(n); }

void note_bad_nvtx_handle() { recorder().stats.n_bad_handles.fetch_add(1, std::memory_order_relaxed); }

void note_nvtx_handle_limit() { recorder().stats.n_handles_refused.fetch_add(1, std::memory_order_relaxed); }

void note_internal_error() noexcept { recorder().stats.n_internal_errors.fetch_add(1, std::memory_order_relaxed); }

namespace detail {

bool renew_recorder() {
  Recorder& old = recorder();
  if (old.accepting.load()) return false;
  join_writer();  // a recorder whose stop never ran (it failed to start) may still have a writer
  auto* fresh = new Recorder;
  fresh->gen.store(old.gen.load() + 1);
  {
    std::lock_guard<std::mutex> io(old.io_mu);
    std::lock_guard<std::mutex> lock(old.mu);
    // The threads' current chunks go back to the old pool (they register again with the fresh one).
    for (ThreadState* t : old.pool.threads) {
      if (Chunk* c = t->cur.exchange(nullptr)) old.pool.full.push_back(c);
    }
    if (old.file.fd >= 0) ::close(old.file.fd);
    old.file.fd = -1;
    for (int& fd : old.file.wake_pipe) {
      if (fd >= 0) ::close(fd);
      fd = -1;
    }
  }
  // The old one is kept, reachable (a thread's state may still point into it; never destroyed, as the first).
  static auto* retired = new std::vector<Recorder*>;
  retired->push_back(&old);
  recorder_slot().store(fresh, std::memory_order_release);
  return true;
}

}  // namespace detail

}  // namespace profile_train::agent
