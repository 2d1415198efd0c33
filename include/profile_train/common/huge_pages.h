// Transparent huge pages for the big arrays of a load or an analysis (the events, their sort keys, per-event
// tables): memory first touched in 2 MiB pages takes one page fault per 2 MiB instead of 512, which on a big
// trace was 5-7% of analyze's CPU time (perf: exc_page_fault, clear_page, the page allocator). A hint to the
// kernel (madvise MADV_HUGEPAGE), given before the memory is touched: where THP is off or the range is small,
// nothing changes, and no error is reported.
#pragma once

#include <cstddef>
#include <vector>

namespace profile_train {

// Ranges under this are left alone (no 2 MiB page fits in them, or not enough to matter).
inline constexpr size_t kHugePageAdviceMin = size_t{4} << 20;

// Asks for huge pages for the whole pages inside [p, p + bytes).
void advise_huge_pages(const void* p, size_t bytes);

// v.reserve(n) with the advice for the new room (before anything is written there).
template <class T>
void reserve_huge(std::vector<T>& v, size_t n) {
  if (n <= v.capacity()) return;
  v.reserve(n);
  advise_huge_pages(v.data(), v.capacity() * sizeof(T));
}

// Before a push_back: when `v` is full, doubles its room as push_back would, the new room advised.
template <class T>
inline void grow_huge(std::vector<T>& v) {
  if (v.size() == v.capacity()) [[unlikely]]
    reserve_huge(v, v.capacity() < 1024 ? 1024 : 2 * v.capacity());
}

// v = n copies of `value`, its room advised first.
template <class T>
void assign_huge(std::vector<T>& v, size_t n, const T& value) {
  v.clear();
  reserve_huge(v, n);
  v.assign(n, value);
}

}  // namespace profile_train
