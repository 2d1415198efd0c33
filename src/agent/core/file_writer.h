// The recorder's file writer part: this process's capture file, the writer thread that streams to it, and what
// goes into the file besides events (status, side chunks). Not installed; only src/agent/core includes it.
// Layout of the file: src/agent/FORMAT.md.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/format/native_format.h"

namespace profile_train::agent::detail {

struct FileWriter {
  // The file: written by a flusher holding io_mu.
  int fd = -1;
  bool failed = false;  // a write failed or the file could not be opened: nothing more is written
  std::string path;
  std::string open_error;
  // The writer thread and its wake-up pipe (both ends above fds 0-2).
  pthread_t writer{};
  bool writer_running = false;
  std::atomic<bool> stop_writer{false};
  int wake_pipe[2] = {-1, -1};
  std::atomic<uint64_t> flush_seq{0};  // +1 (release) after every flush
  // Published with the next flush; guarded by mu.
  std::map<std::string, nlohmann::json> status;
  std::vector<std::pair<uint16_t, std::string>> side_chunks;
  bool status_dirty = true;

  // One chunk (header, payload, padding) to the file; false (and the file marked failed) on a write error.
  // Caller holds io_mu.
  bool write_chunk(format::ChunkType type, const void* payload, size_t bytes);
  // Wakes the writer thread (async-signal-safe).
  void wake(char why) const;
};

// ---- file_writer.cpp (io_mu held where marked _locked) ---------------------------------------------------------

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
