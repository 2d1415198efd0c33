// Process-wide recorder: start, stop, flush, status and counters. The rest of the recorder lives next to this
// file, one job each (the list and the concurrency protocol: recorder_state.h); the contract is
// include/profile_train/agent/recorder.h, the file layout src/agent/FORMAT.md.
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
    join_writer();
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
