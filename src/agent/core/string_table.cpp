// The name table: process-wide ids for range, kernel and domain names (string_table.h's StringTable), a
// per-thread cache in front of it, and its bound (kMaxStrings names, kMaxStringBytes of text; past it new names
// share kOtherBuckets hashed "other names" entries, counted as names_bucketed in the status).
#include <cstdio>

#include "core/recorder_state.h"
#include "profile_train/format/protocol.h"

namespace profile_train::agent {
namespace detail {

// ---- StringTable -----------------------------------------------------------------------------------------------

// Caller holds mu.
uint32_t StringTable::insert_locked(std::string_view s) {
  names.emplace_back(s);
  const auto id = static_cast<uint32_t>(names.size());
  const std::string& ref = names.back();
  index.emplace(std::string_view(ref), id);
  bytes += s.size();
  if (flags && id < kMaxFlaggedIds && ref.rfind(protocol::kStepRangePrefix, 0) == 0) flags[id] = kFlagStep;
  return id;
}

// Caller holds mu.
void StringTable::freeze_locked() {
  for (uint32_t b = 0; b < kOtherBuckets; ++b) {
    char name[64];
    std::snprintf(name, sizeof name, "[other names %02u/%u: the agent's name table was full]", b, kOtherBuckets);
    other_ids[b] = insert_locked(name);
  }
  other_step_id = insert_locked(std::string(protocol::kStepRangePrefix) + "[name table full]");
  full.store(true, std::memory_order_release);
}

// The id of a name that is not in the full table.
uint32_t StringTable::other_name_id(std::string_view s, uint64_t h, std::atomic<uint64_t>& bucketed) const {
  bucketed.fetch_add(1, std::memory_order_relaxed);
  if (s.rfind(protocol::kStepRangePrefix, 0) == 0) return other_step_id;
  return other_ids[h % kOtherBuckets];
}

uint32_t StringTable::id_of(std::string_view sv, uint64_t h, std::mutex& mu, std::atomic<uint64_t>& bucketed,
                            const char** stored) {
  if (full.load(std::memory_order_acquire)) {
    auto it = index.find(sv);
    if (it == index.end()) return other_name_id(sv, h, bucketed);  // not cached: the name is not stored
    *stored = names[it->second - 1].data();
    return it->second;
  }
  std::lock_guard<std::mutex> lock(mu);
  auto it = index.find(sv);
  if (it != index.end()) {
    *stored = names[it->second - 1].data();
    return it->second;
  }
  if (full.load(std::memory_order_relaxed) || names.size() + 1 >= kMaxStrings || bytes + sv.size() > kMaxStringBytes) {
    if (!full.load(std::memory_order_relaxed)) freeze_locked();
    return other_name_id(sv, h, bucketed);
  }
  const uint32_t id = insert_locked(sv);
  *stored = names[id - 1].data();
  return id;
}

// ---- the per-thread cache in front of it -----------------------------------------------------------------------

namespace {

uint32_t intern_slow(const char* s, size_t n, uint64_t h, ThreadState* t) {
  Recorder& rec = recorder();
  const char* stored = nullptr;
  const uint32_t id = rec.strings.id_of(std::string_view(s, n), h, rec.mu, rec.stats.n_bucketed, &stored);
  if (!stored) return id;  // an "other names" id: not cached
  if (t) t->cache[h % kCacheSize] = CacheEntry{h, stored, static_cast<uint32_t>(n), id};
  return id;
}

inline uint32_t intern_hashed(const char* s, size_t n, uint64_t h) {
  ThreadState* t = tls();
  if (t) {
    const CacheEntry& e = t->cache[h % kCacheSize];
    if (e.hash == h && e.len == n && e.str && std::memcmp(e.str, s, n) == 0) return e.id;
  }
  return intern_slow(s, n, h, t);
}

// Word-wise FNV-1a style hash (8 bytes per step); names are hashed on every NVTX call, so this is hot.
inline uint64_t hash_bytes(const char* s, size_t n) {
  uint64_t h = 1469598103934665603ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, s + i, 8);
    h = (h ^ w) * 1099511628211ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, s + i, n - i);
  h = (h ^ tail) * 1099511628211ull;
  return h ^ (h >> 29);
}

}  // namespace
}  // namespace detail

using detail::hash_bytes;
using detail::intern_hashed;

uint32_t intern(std::string_view s) { return intern_hashed(s.data(), s.size(), hash_bytes(s.data(), s.size())); }

uint32_t intern_cstr(const char* s) {
  if (!s) return 0;
  const size_t n = std::strlen(s);
  return intern_hashed(s, n, hash_bytes(s, n));
}

}  // namespace profile_train::agent
