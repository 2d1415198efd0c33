// The recorder's string table part: process-wide ids for range, kernel and domain names, and its bound (not
// installed; only src/agent/core and the agent's tests include it). The per-thread cache in front of it and the
// public intern() are in string_table.cpp.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace profile_train::agent::detail {

constexpr uint32_t kMaxFlaggedIds = 1u << 20;
constexpr uint8_t kFlagStep = 1;     // "ProfilerStep#..." names: step boundaries for the capture window
// Bound on the name table, which lives in the user's process as long as it runs: distinct names past it (a
// name per step or per sample, an f-string in a loop) share kOtherBuckets hashed "other names" entries,
// counted in the status ("names_bucketed"). 2^17 names of up to 8 MiB in all: about 20 MiB at most.
constexpr uint32_t kMaxStrings = 1u << 17;
constexpr size_t kMaxStringBytes = size_t{8} << 20;
constexpr uint32_t kOtherBuckets = 64;

// Guarded by the recorder's `mu` (passed to id_of), except once `full` is set: from then on names and index
// never change and are read without the lock.
struct StringTable {
  std::deque<std::string> names;  // names[i] has id i + 1
  std::unordered_map<std::string_view, uint32_t> index;
  size_t bytes = 0;
  // Set (release) once the table is full.
  std::atomic<bool> full{false};
  uint32_t other_ids[kOtherBuckets] = {};
  uint32_t other_step_id = 0;  // over the limit, step names still mark steps
  size_t written = 0;          // names already in the file; guarded by io_mu + mu
  uint8_t* flags = nullptr;    // kMaxFlaggedIds entries, zeroed (set by recorder_start; never freed)

  bool is_step(uint32_t id) const { return id < kMaxFlaggedIds && flags && (flags[id] & kFlagStep); }

  // The id of `s` (hash `h`): its own, added if new and the bound allows, else an "other names" id (counted in
  // `bucketed`). `*stored` is set to the table's copy of `s` when the id is its own (the caller may cache it),
  // left as is otherwise. Takes `mu` unless the table is full.
  uint32_t id_of(std::string_view s, uint64_t h, std::mutex& mu, std::atomic<uint64_t>& bucketed,
                 const char** stored);

 private:
  uint32_t insert_locked(std::string_view s);  // no bound check
  void freeze_locked();                         // adds the "other names" entries, sets `full`
  uint32_t other_name_id(std::string_view s, uint64_t h, std::atomic<uint64_t>& bucketed) const;
};

}  // namespace profile_train::agent::detail
