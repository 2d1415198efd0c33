#include "profile_train/trace/model.h"

#include <algorithm>

#include "profile_train/common/huge_pages.h"

namespace profile_train::trace {

const char* to_string(Category c) {
  switch (c) {
    case Category::kCpuOp: return "cpu_op";
    case Category::kUserAnnotation: return "user_annotation";
    case Category::kPythonFunction: return "python_function";
    case Category::kRuntime: return "cuda_runtime";
    case Category::kDriver: return "cuda_driver";
    case Category::kKernel: return "kernel";
    case Category::kMemcpy: return "gpu_memcpy";
    case Category::kMemset: return "gpu_memset";
    case Category::kSync: return "cuda_sync";
    case Category::kGpuAnnotation: return "gpu_user_annotation";
    case Category::kOverhead: return "overhead";
    case Category::kOther: return "other";
  }
  return "other";
}

const char* to_string(CopyKind k) {
  switch (k) {
    case CopyKind::kHtoD: return "HtoD";
    case CopyKind::kDtoH: return "DtoH";
    case CopyKind::kDtoD: return "DtoD";
    case CopyKind::kHtoH: return "HtoH";
    case CopyKind::kPtoP: return "PtoP";
    case CopyKind::kUnknown: break;
  }
  return "unknown";
}

const char* to_string(MemoryKind k) {
  switch (k) {
    case MemoryKind::kPageable: return "pageable";
    case MemoryKind::kPinned: return "pinned";
    case MemoryKind::kDevice: return "device";
    case MemoryKind::kManaged: return "managed";
    case MemoryKind::kUnknown: break;
  }
  return "unknown";
}

const char* to_string(SyncKind k) {
  switch (k) {
    case SyncKind::kEventSync: return "event_sync";
    case SyncKind::kStreamWaitEvent: return "stream_wait_event";
    case SyncKind::kStreamSync: return "stream_sync";
    case SyncKind::kContextSync: return "context_sync";
    case SyncKind::kUnknown: break;
  }
  return "unknown";
}

namespace {

struct SortKey {
  uint64_t start;  // start_ns - the smallest start_ns (no overflow as unsigned)
  size_t index;    // position in the input
};

// Stable LSD radix sort by `start`, 11 bits per pass, as many passes as the largest value needs: no
// comparisons, so no mispredicted branches (a comparison sort of trace events mispredicts on every other
// comparison). Temporary memory: one second array of keys.
void radix_sort_by_start(std::vector<SortKey>& keys) {
  uint64_t all = 0;
  for (const SortKey& k : keys) all |= k.start;
  constexpr int kDigitBits = 11;
  constexpr size_t kBuckets = size_t{1} << kDigitBits;
  std::vector<SortKey> tmp;
  assign_huge(tmp, keys.size(), SortKey{});
  std::vector<size_t> count(kBuckets);
  for (int shift = 0; shift < 64 && (all >> shift) != 0; shift += kDigitBits) {
    std::fill(count.begin(), count.end(), 0);
    for (const SortKey& k : keys) ++count[(k.start >> shift) & (kBuckets - 1)];
    size_t sum = 0;
    for (size_t& c : count) {
      const size_t n = c;
      c = sum;
      sum += n;
    }
    for (const SortKey& k : keys) tmp[count[(k.start >> shift) & (kBuckets - 1)]++] = k;
    keys.swap(tmp);
  }
}

}  // namespace

void Trace::finalize() {
  sort_events(events);
  sort_memory(memory);
}

void sort_memory(std::vector<MemorySample>& memory) {
  if (!std::is_sorted(memory.begin(), memory.end(), memory_before))
    std::stable_sort(memory.begin(), memory.end(), memory_before);
}

void sort_events(std::vector<Event>& events) {
  // Order: start, then longer first (enclosing ranges first), then the original order: a stable sort. The
  // permutation is computed on 16-byte keys (radix sort by start, then the few events with the same start
  // by duration) and each ~100-byte event is moved once: several times faster than a stable sort of the
  // events themselves (which moves them log n times), with less temporary memory.
  bool sorted = true;
  TimeNs min_start = events.empty() ? 0 : events[0].start_ns;
  for (size_t i = 1; i < events.size(); ++i) {
    const Event& a = events[i - 1];
    const Event& b = events[i];
    if (event_before(b, a)) sorted = false;
    min_start = std::min(min_start, b.start_ns);
  }
  if (!sorted) {
    std::vector<SortKey> keys;
    assign_huge(keys, events.size(), SortKey{});
    for (size_t i = 0; i < events.size(); ++i)
      keys[i] = {static_cast<uint64_t>(events[i].start_ns) - static_cast<uint64_t>(min_start), i};
    radix_sort_by_start(keys);
    // Same start: longer first; equal keys keep the input order (the radix sort is stable, so is this).
    for (size_t i = 0; i < keys.size();) {
      size_t j = i + 1;
      while (j < keys.size() && keys[j].start == keys[i].start) ++j;
      if (j - i > 1) {
        std::stable_sort(keys.begin() + static_cast<ptrdiff_t>(i), keys.begin() + static_cast<ptrdiff_t>(j),
                         [&](const SortKey& a, const SortKey& b) {
                           return events[a.index].dur_ns > events[b.index].dur_ns;
                         });
      }
      i = j;
    }
    // Apply the permutation in place, one cycle at a time (no second copy of the events): position j
    // receives the event at keys[j].index; a position that holds its final event is marked index == j.
    for (size_t i = 0; i < keys.size(); ++i) {
      if (keys[i].index == i) continue;
      const Event first = events[i];
      size_t j = i;
      for (;;) {
        const size_t from = keys[j].index;
        keys[j].index = j;
        if (from == i) {
          events[j] = first;
          break;
        }
        events[j] = events[from];
        j = from;
      }
    }
  }
}

}  // namespace profile_train::trace
