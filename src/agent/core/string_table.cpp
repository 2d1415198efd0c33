// The name table: process-wide ids for range, kernel and domain names, a per-thread cache in front of it, and
// its bound (kMaxStrings names, kMaxStringBytes of text; past it new names share kOtherBuckets hashed "other
// names" entries, counted as names_bucketed in the status).
#include <cstdio>

#include "core/recorder_state.h"
#include "profile_train/format/protocol.h"

namespace profile_train::agent {
namespace detail {
namespace {

// Caller holds mu. Adds `s` to the table (no bound check).
uint32_t insert_string_locked(std::string_view s) {
  Global& G = g();
  G.strings.emplace_back(s);
  const auto id = static_cast<uint32_t>(G.strings.size());
  const std::string& ref = G.strings.back();
  G.string_index.emplace(std::string_view(ref), id);
  G.string_bytes += s.size();
  if (G.flags && id < kMaxFlaggedIds && ref.rfind(protocol::kStepRangePrefix, 0) == 0) G.flags[id] = kFlagStep;
  return id;
}

// Caller holds mu. Adds the "other names" entries and freezes the table.
void freeze_strings_locked() {
  Global& G = g();
  for (uint32_t b = 0; b < kOtherBuckets; ++b) {
    char name[64];
    std::snprintf(name, sizeof name, "[other names %02u/%u: the agent's name table was full]", b, kOtherBuckets);
    G.other_ids[b] = insert_string_locked(name);
  }
  G.other_step_id = insert_string_locked(std::string(protocol::kStepRangePrefix) + "[name table full]");
  G.strings_full.store(true, std::memory_order_release);
}

// The id of a name that is not in the full table.
uint32_t other_name_id(std::string_view s, uint64_t h) {
  Global& G = g();
  G.n_bucketed.fetch_add(1, std::memory_order_relaxed);
  if (s.rfind(protocol::kStepRangePrefix, 0) == 0) return G.other_step_id;
  return G.other_ids[h % kOtherBuckets];
}

uint32_t intern_slow(const char* s, size_t n, uint64_t h, ThreadState* t) {
  Global& G = g();
  const std::string_view sv(s, n);
  uint32_t id;
  const char* stored;
  if (G.strings_full.load(std::memory_order_acquire)) {
    auto it = G.string_index.find(sv);
    if (it == G.string_index.end()) return other_name_id(sv, h);  // not cached: the name is not stored
    id = it->second;
    stored = G.strings[id - 1].data();
  } else {
    std::lock_guard<std::mutex> lock(G.mu);
    auto it = G.string_index.find(sv);
    if (it != G.string_index.end()) {
      id = it->second;
      stored = G.strings[id - 1].data();
    } else if (G.strings_full.load(std::memory_order_relaxed) || G.strings.size() + 1 >= kMaxStrings ||
               G.string_bytes + n > kMaxStringBytes) {
      if (!G.strings_full.load(std::memory_order_relaxed)) freeze_strings_locked();
      return other_name_id(sv, h);
    } else {
      id = insert_string_locked(sv);
      stored = G.strings[id - 1].data();
    }
  }
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
