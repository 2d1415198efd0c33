// The Kineto trace vocabulary (see kineto_schema.h).
#include "kineto/kineto_schema.h"

namespace profile_train::trace::kineto {
namespace {

MemoryKind memory_kind(std::string_view w) {
  if (key_is(w, "Pageable")) return MemoryKind::kPageable;
  if (key_is(w, "Pinned")) return MemoryKind::kPinned;
  if (key_is(w, "Device")) return MemoryKind::kDevice;
  if (key_is(w, "Managed")) return MemoryKind::kManaged;
  return MemoryKind::kUnknown;  // "Host" (ROCm: pageable or pinned unknown), "Array", ...
}

}  // namespace

Cls classify(std::string_view c, bool has_cat) {
  if (!has_cat) return Cls::kNone;
  // Ordered roughly by frequency in real traces.
  if (key_is(c, "cpu_op") || key_is(c, "Operator")) return Cls::kCpuOp;
  if (key_is(c, "cuda_runtime") || key_is(c, "Runtime")) return Cls::kRuntime;
  if (key_is(c, "kernel") || key_is(c, "Kernel")) return Cls::kKernel;
  if (key_is(c, "ac2g") || key_is(c, "async") || key_is(c, "async_cpu_to_gpu") || key_is(c, "async_gpu") || key_is(c, "fwdbwd")) return Cls::kFlow;
  if (key_is(c, "user_annotation")) return Cls::kUserAnnotation;
  if (key_is(c, "cpu_instant_event")) return Cls::kCpuInstant;
  if (key_is(c, "gpu_memcpy") || key_is(c, "Memcpy")) return Cls::kMemcpy;
  if (key_is(c, "gpu_memset") || key_is(c, "Memset")) return Cls::kMemset;
  if (key_is(c, "python_function")) return Cls::kPython;
  if (key_is(c, "gpu_user_annotation")) return Cls::kGpuAnnotation;
  if (key_is(c, "cuda_driver") || key_is(c, "Driver")) return Cls::kDriver;
  if (key_is(c, "cuda_sync")) return Cls::kSync;
  if (key_is(c, "overhead") || key_is(c, "Overhead")) return Cls::kOverhead;
  if (key_is(c, "Trace")) return Cls::kTraceSpan;
  if (key_is(c, "cuda_profiler_range")) return Cls::kProfilerRange;
  return Cls::kUnknown;
}

Category to_category(Cls k) {
  switch (k) {
    case Cls::kCpuOp: return Category::kCpuOp;
    case Cls::kUserAnnotation: return Category::kUserAnnotation;
    case Cls::kGpuAnnotation: return Category::kGpuAnnotation;
    case Cls::kPython: return Category::kPythonFunction;
    case Cls::kRuntime: return Category::kRuntime;
    case Cls::kDriver: return Category::kDriver;
    case Cls::kKernel: return Category::kKernel;
    case Cls::kMemcpy: return Category::kMemcpy;
    case Cls::kMemset: return Category::kMemset;
    case Cls::kSync: return Category::kSync;
    case Cls::kOverhead: return Category::kOverhead;
    default: return Category::kOther;
  }
}

bool is_builtin_record_function(std::string_view name) {
  return starts_with(name, "ProfilerStep#") || starts_with(name, "enumerate(DataLoader)#") ||
         starts_with(name, "Optimizer.step#") || starts_with(name, "Optimizer.zero_grad#");
}


void parse_copy_name(std::string_view name, CopyKind* kind, MemoryKind* src, MemoryKind* dst) {
  const size_t sp = name.find(' ');
  if (sp != std::string_view::npos) {
    std::string_view k = name.substr(sp + 1, 4);
    if (k == "HtoD") *kind = CopyKind::kHtoD;
    else if (k == "DtoH") *kind = CopyKind::kDtoH;
    else if (k == "DtoD") *kind = CopyKind::kDtoD;
    else if (k == "HtoH") *kind = CopyKind::kHtoH;
    else if (k == "PtoP") *kind = CopyKind::kPtoP;
  }
  const size_t open = name.find('(');
  const size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open) return;
  std::string_view inside = name.substr(open + 1, close - open - 1);
  const size_t arrow = inside.find(" -> ");
  if (arrow == std::string_view::npos) {
    *dst = memory_kind(inside);
    return;
  }
  *src = memory_kind(inside.substr(0, arrow));
  *dst = memory_kind(inside.substr(arrow + 4));
}

SyncKind sync_kind(std::string_view s) {
  if (s == "Event Sync") return SyncKind::kEventSync;
  if (s == "Stream Wait Event") return SyncKind::kStreamWaitEvent;
  if (s == "Stream Sync") return SyncKind::kStreamSync;
  if (s == "Context Sync") return SyncKind::kContextSync;
  return SyncKind::kUnknown;
}

}  // namespace profile_train::trace::kineto
