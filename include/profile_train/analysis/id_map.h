// IdMap: an open-addressing hash map from a non-negative 64-bit id (a correlation id, an external id) to a small
// value, for the per-event lookups of the analysis. One flat array of keys and one of values, linear probing,
// at most half full: no node per entry (std::unordered_map's one allocation per id cost more than the lookups
// themselves on big traces), and nothing to free one by one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace profile_train::analysis {

template <class V>
class IdMap {
 public:
  // The value of `key`, or nullptr. Negative keys are never stored: they find nothing.
  const V* find(int64_t key) const {
    if (key < 0 || size_ == 0) return nullptr;
    for (size_t at = slot(key);; at = (at + 1) & mask_) {
      if (keys_[at] == key) return &vals_[at];
      if (keys_[at] == kEmpty) return nullptr;
    }
  }
  V* find(int64_t key) { return const_cast<V*>(std::as_const(*this).find(key)); }
  bool contains(int64_t key) const { return find(key) != nullptr; }
  // Inserts `value` under `key` (>= 0) unless the key is present; returns the stored value and whether it is new.
  std::pair<V*, bool> try_emplace(int64_t key, V value) {
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

 private:
  static constexpr int64_t kEmpty = -1;
  size_t slot(int64_t key) const {
    // Fibonacci hashing: ids are often consecutive; the multiply spreads them over the high bits.
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<int64_t> keys = std::move(keys_);
    std::vector<V> vals = std::move(vals_);
    const size_t cap = keys.empty() ? 16 : keys.size() * 2;
    keys_.assign(cap, kEmpty);
    vals_.assign(cap, V{});
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
};

}  // namespace profile_train::analysis
