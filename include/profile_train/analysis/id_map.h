// IdMap: a map from a non-negative 64-bit id (a correlation id, an external id) to a small value, for the
// per-event lookups of the analysis. Two layouts: pages of 4096 consecutive ids, each an array indexed by id
// (where a trace's ids come in runs, as they mostly do: a lookup is two array reads, an insert no hashing), and
// an open-addressing hash table (one flat array of keys and one of values, linear probing, at most half full)
// for ids spread wider. No node per entry (std::unordered_map's one allocation per id cost more than the
// lookups themselves on big traces), and nothing to free one by one.
#pragma once

#include <cstddef>
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "profile_train/common/huge_pages.h"

namespace profile_train::analysis {

template <class V>
class IdMap {
 public:
  // The value of `key`, or nullptr. Negative keys are never stored: they find nothing.
  const V* find(int64_t key) const {
    if (key < 0 || size_ == 0) return nullptr;
    if (paged_) {
      if (key < min_) return nullptr;
      const uint64_t at = static_cast<uint64_t>(key) - static_cast<uint64_t>(min_);
      const uint64_t page = at >> kPageBits;
      if (page >= page_of_.size() || page_of_[page] == 0) return nullptr;
      const size_t slot_at = slot_in(page_of_[page], at);
      return present_[slot_at] ? &vals_[slot_at] : nullptr;
    }
    for (size_t at = slot(key);; at = (at + 1) & mask_) {
      if (keys_[at] == key) return &vals_[at];
      if (keys_[at] == kEmpty) return nullptr;
    }
  }
  V* find(int64_t key) { return const_cast<V*>(std::as_const(*this).find(key)); }
  bool contains(int64_t key) const { return find(key) != nullptr; }
  // Inserts `value` under `key` (>= 0) unless the key is present; returns the stored value and whether it is new.
  // A map starts paged (see pack()): ids that come in runs are stored in their pages as they come, without
  // hashing; the first id that would break the pages' bounds turns it into the hash table.
  std::pair<V*, bool> try_emplace(int64_t key, V value) {
    if (paged_) {
      std::pair<V*, bool> out;
      if (paged_try_emplace(key, value, &out)) return out;
      unpack();
    }
    if ((size_ + 1) * 2 > keys_.size()) grow();
    for (size_t at = slot(key);; at = (at + 1) & mask_) {
      if (keys_[at] == key) return {&vals_[at], false};
      if (keys_[at] == kEmpty) {
        keys_[at] = key;
        vals_[at] = std::move(value);
        ++size_;
        return {&vals_[at], true};
      }
    }
  }
  V& operator[](int64_t key) { return *try_emplace(key, V{}).first; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  // Once filled, for a map that left the pages while filling: when the ids lie in runs (a trace's ids mostly
  // count up, with gaps: CUPTI numbers every runtime call, Kineto keeps a few; traces joined end to end start new
  // runs), stores the values in pages of kPage consecutive ids, each page an array indexed by id, so that a
  // lookup is two array reads and lookups in id order read memory in order instead of at hashed places. Packed
  // only while the pages hold at most kMaxSlots slots per id (at most 8 * (sizeof(V) + 1) bytes per id; the hash
  // table takes 2 * (8 + sizeof(V))) and the page table at most one entry per id: ids spread wider (a hostile or
  // merged trace) keep the hash table. A later insert that breaks those bounds undoes it.
  void pack() {
    if (paged_ || size_ == 0) return;
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int64_t k : keys_)
      if (k != kEmpty) lo = std::min(lo, k), hi = std::max(hi, k);
    const uint64_t span_pages = ((static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo)) >> kPageBits) + 1;
    if (span_pages > size_ + 1) return;
    std::vector<uint32_t> page_of(span_pages, 0);
    uint32_t pages = 0;
    for (int64_t k : keys_) {
      if (k == kEmpty) continue;
      uint32_t& p = page_of[(static_cast<uint64_t>(k) - static_cast<uint64_t>(lo)) >> kPageBits];
      if (p == 0) {
        p = ++pages;
        if (uint64_t{pages} * kPage > kMaxSlots * static_cast<uint64_t>(size_) + kPage) return;
      }
    }
    std::vector<char> present;
    std::vector<V> vals;
    assign_huge(present, size_t{pages} << kPageBits, char{0});
    assign_huge(vals, size_t{pages} << kPageBits, V{});
    for (size_t i = 0; i < keys_.size(); ++i) {
      if (keys_[i] == kEmpty) continue;
      const uint64_t at = static_cast<uint64_t>(keys_[i]) - static_cast<uint64_t>(lo);
      const size_t slot_at = slot_in(page_of[at >> kPageBits], at);
      present[slot_at] = 1;
      vals[slot_at] = std::move(vals_[i]);
    }
    keys_.clear();
    keys_.shrink_to_fit();
    vals_ = std::move(vals);
    present_ = std::move(present);
    page_of_ = std::move(page_of);
    min_ = lo;
    paged_ = true;
  }

 private:
  // The slot of the id at offset `at` from the pages' start, in the page numbered `number` (>= 1).
  static size_t slot_in(uint32_t number, uint64_t at) {
    return (size_t{number - 1} << kPageBits) | static_cast<size_t>(at & (kPage - 1));
  }
  // Inserts into the pages; false (nothing changed) when `key` is negative or needs more than the bounds pack()
  // keeps: a page table of at most one entry per id, pages of at most kMaxSlots slots per id.
  bool paged_try_emplace(int64_t key, V& value, std::pair<V*, bool>* out) {
    if (key < 0) return false;
    const int64_t key_page_start = key & ~static_cast<int64_t>(kPage - 1);
    if (page_of_.empty()) {
      min_ = key_page_start;
    } else if (key < min_) {
      const uint64_t shift = (static_cast<uint64_t>(min_) - static_cast<uint64_t>(key_page_start)) >> kPageBits;
      if (page_of_.size() + shift > size_ + 1) return false;
      page_of_.insert(page_of_.begin(), static_cast<size_t>(shift), 0);
      min_ = key_page_start;
    }
    const uint64_t at = static_cast<uint64_t>(key) - static_cast<uint64_t>(min_);
    const uint64_t page = at >> kPageBits;
    if (page >= page_of_.size()) {
      if (page + 1 > size_ + 1) return false;
      page_of_.resize(static_cast<size_t>(page + 1), 0);
    }
    if (page_of_[page] == 0) {
      const size_t pages = present_.size() >> kPageBits;
      if ((pages + 1) * kPage > kMaxSlots * (size_ + 1) + kPage) return false;
      present_.resize(present_.size() + kPage, 0);
      vals_.resize(vals_.size() + kPage, V{});
      page_of_[page] = static_cast<uint32_t>(pages + 1);
    }
    const size_t slot_at = slot_in(page_of_[page], at);
    if (present_[slot_at]) {
      *out = {&vals_[slot_at], false};
      return true;
    }
    present_[slot_at] = 1;
    vals_[slot_at] = std::move(value);
    ++size_;
    *out = {&vals_[slot_at], true};
    return true;
  }
  void unpack() {
    std::vector<char> present = std::move(present_);
    std::vector<V> vals = std::move(vals_);
    std::vector<uint32_t> page_of = std::move(page_of_);
    present_.clear();
    vals_.clear();
    page_of_.clear();
    keys_.clear();
    paged_ = false;
    const size_t n = size_;
    size_ = 0;
    mask_ = 0;
    shift_ = 64;
    while (keys_.size() < 2 * n + 2) keys_.resize(keys_.empty() ? 16 : keys_.size() * 2);
    const size_t cap = keys_.size();
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, V{});
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    for (size_t page = 0; page < page_of.size(); ++page) {
      if (page_of[page] == 0) continue;
      const size_t first = slot_in(page_of[page], 0);
      for (size_t j = 0; j < kPage; ++j)
        if (present[first + j])
          try_emplace(static_cast<int64_t>(static_cast<uint64_t>(min_) + (uint64_t{page} << kPageBits) + j),
                      std::move(vals[first + j]));
    }
  }
  static constexpr int64_t kEmpty = -1;
  size_t slot(int64_t key) const {
    // Fibonacci hashing: ids are often consecutive; the multiply spreads them over the high bits.
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<int64_t> keys = std::move(keys_);
    std::vector<V> vals = std::move(vals_);
    const size_t cap = keys.empty() ? 16 : keys.size() * 2;
    assign_huge(keys_, cap, kEmpty);
    assign_huge(vals_, cap, V{});
    mask_ = cap - 1;
    shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(cap));
    size_ = 0;
    for (size_t i = 0; i < keys.size(); ++i)
      if (keys[i] != kEmpty) try_emplace(keys[i], std::move(vals[i]));
  }
  std::vector<int64_t> keys_;
  std::vector<V> vals_;
  size_t mask_ = 0, size_ = 0;
  unsigned shift_ = 64;
  static constexpr unsigned kPageBits = 12;
  static constexpr size_t kPage = size_t{1} << kPageBits;
  // Slots per id the pages may take (CUPTI's correlation ids in a Kineto trace: about 6).
  static constexpr size_t kMaxSlots = 8;
  // pack(): id's page p = (id - min_) >> kPageBits; page_of_[p] = its page's number + 1 (0: no id there); the
  // value at vals_[(number << kPageBits) | (id - min_) % kPage] where present_ says so.
  bool paged_ = true;
  std::vector<uint32_t> page_of_;
  std::vector<char> present_;
  int64_t min_ = 0;
};

}  // namespace profile_train::analysis
