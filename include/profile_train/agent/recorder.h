// The agent's process-wide recorder (static core `pt_agent_core`, linked into the injected .so and tests).
//
// Threading: every function here may be called from any thread. Application threads write records into their
// own preallocated chunk (no lock, no allocation, no I/O in the steady state); one writer thread streams full
// and partly filled chunks to this process's file every `flush_interval_ms`. Memory is bounded by
// `max_chunks` x `chunk_records` records (a thread's first chunk is a small one, so thousands of threads fit);
// when all are in use new records are dropped and counted. The name table is bounded too (see intern()).
// Fork, exit and signals: handlers the injected library's entry point installs (src/agent/core/process_hooks.h);
// a forked child gets its own file (pt-<pid>-<n>.ptrace) and writer thread.
// Failure: nothing here throws or exits; a failure disables recording and is noted in the file's status.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "profile_train/format/native_format.h"

namespace profile_train::agent {

struct RecorderConfig {
  std::string out_dir;                 // capture folder; created if missing
  uint32_t chunk_records = 1024;       // records per chunk (64 B each)
  uint32_t max_chunks = 256;           // bound on chunk memory per process (256 x 64 KiB = 16 MiB)
  uint32_t flush_interval_ms = 50;     // max data lost by a process that leaves through _exit / a crash
  int64_t warmup_steps = 0;            // ProfilerStep# ranges to skip before recording (0 = record at once)
  int64_t steps = 0;                   // ProfilerStep# ranges to record after warmup (0 = no limit)
};

// Reads PROFILE_TRAIN_OUT (default "./profile-train-capture"), PROFILE_TRAIN_WARMUP_STEPS, PROFILE_TRAIN_STEPS.
RecorderConfig config_from_env();

// Starts the recorder once per process (later calls return the first result). Opens this process's file
// and writes its header and metadata at once, so a launcher can verify that the agent attached.
bool recorder_start(const RecorderConfig& config);
bool recorder_running();
// Flushes everything, writes the final status and closes the file. Records after this are dropped silently.
void recorder_stop();
// Called once before the final flush (the CUPTI part registers cuptiActivityFlushAll here).
void set_pre_stop_hook(void (*hook)());
// Synchronous flush from the calling thread (used for the flush mark and by tests).
void recorder_flush();
// Path of this process's file ("" before start).
std::string recorder_file_path();

// String interning: returns a stable id (> 0) for `s`; ids are process-wide. Cheap on a hit (per-thread cache),
// allocates only for a string never seen before. The table is bounded (2^17 names, 8 MiB): a new name past
// that gets one of a few hashed "other names" ids (a "ProfilerStep#..." name still marks a step), counted as
// names_bucketed in the status.
uint32_t intern(std::string_view s);
uint32_t intern_cstr(const char* s);  // same; s may be null (returns 0)

// Appends one record on the calling thread's buffer (GPU records are appended by the CUPTI thread).
void record(const format::Record& r);

// Monotonic clock shared by every record (CLOCK_MONOTONIC ns); handed to CUPTI as its timestamp source.
int64_t now_ns();
uint64_t current_tid();

// NVTX semantics on the calling thread's range stack. Return values follow NVTX (push: depth, pop: depth or -1).
int range_push(uint32_t name, uint32_t domain);
int range_pop(uint32_t domain);
uint64_t range_start(uint32_t name, uint32_t domain);  // start/end range id
void range_end(uint64_t id);
void mark(uint32_t name, uint32_t domain, std::string_view text);  // handles profile_train:* control marks
void name_thread(uint64_t tid, uint32_t name);

// Capture window for asynchronous (GPU) records: true if [start, end] overlaps the recorded window.
bool in_capture_window(int64_t start_ns, int64_t end_ns);

// Status published in the file (JSON object merged under `key`, e.g. "cupti"). Rare; takes a lock.
void set_status(const std::string& key, const std::string& json_object);
// A rare JSON side chunk (e.g. a device's properties).
void add_json_chunk(format::ChunkType type, const std::string& json_object);

// Counters (for tests and the status chunk).
struct RecorderStats {
  uint64_t records = 0;        // appended
  uint64_t dropped = 0;        // lost: no free chunk
  uint64_t filtered = 0;       // outside the capture window (not a loss)
  uint64_t written = 0;        // reached the file
  uint64_t chunks_in_use = 0;
  uint64_t nvtx_init_calls = 0;
  uint64_t names = 0;            // in the name table
  uint64_t names_bucketed = 0;   // intern calls answered with an "other names" id (table full)
  uint64_t bad_handles = 0;      // NVTX handles passed to us that we never handed out (ignored)
  uint64_t handles_refused = 0;  // NVTX registrations past the handle limit (returned no handle)
  uint64_t internal_errors = 0;  // exceptions the agent caught inside the host process (see note_internal_error)
};
RecorderStats recorder_stats();
void note_nvtx_init_call();
void add_dropped(uint64_t n);  // records lost upstream (e.g. CUPTI's own drops)
void note_bad_nvtx_handle();   // a fabricated / foreign NVTX handle was ignored
void note_nvtx_handle_limit(); // an NVTX registration got no handle (limit reached)
// An exception the agent caught instead of letting it reach the host process (whatever was being recorded
// at that moment may be missing). Counted as internal_errors in the status; lock-free, never throws.
void note_internal_error() noexcept;

}  // namespace profile_train::agent
