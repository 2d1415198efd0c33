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
  std::stable_sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
    if (a.start_ns != b.start_ns) return a.start_ns < b.start_ns;
    return a.dur_ns > b.dur_ns;  // enclosing ranges first
  });
  std::stable_sort(memory.begin(), memory.end(),
                   [](const MemorySample& a, const MemorySample& b) { return a.ts_ns < b.ts_ns; });
}

}  // namespace profile_train::trace
