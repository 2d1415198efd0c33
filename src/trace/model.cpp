#include "profile_train/trace/model.h"

#include <algorithm>

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

void Trace::finalize() {
  // Order: start, then longer first (enclosing ranges first), then the original order: a stable sort. Sorting
  // 24-byte keys and moving each ~100-byte event once is several times faster than a stable sort of the
  // events themselves (which moves them log n times), and needs less than half of its temporary memory.
  struct Key {
    TimeNs start, dur;
    size_t index;
  };
  std::vector<Key> keys(events.size());
  bool sorted = true;
  for (size_t i = 0; i < events.size(); ++i) {
    keys[i] = {events[i].start_ns, events[i].dur_ns, i};
    if (i > 0 && (keys[i].start < keys[i - 1].start ||
                  (keys[i].start == keys[i - 1].start && keys[i].dur > keys[i - 1].dur)))
      sorted = false;
  }
  if (!sorted) {
    std::sort(keys.begin(), keys.end(), [](const Key& a, const Key& b) {
      if (a.start != b.start) return a.start < b.start;
      if (a.dur != b.dur) return a.dur > b.dur;
      return a.index < b.index;
    });
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
  std::stable_sort(memory.begin(), memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.ts_ns < b.ts_ns; });
}

}  // namespace profile_train::trace
