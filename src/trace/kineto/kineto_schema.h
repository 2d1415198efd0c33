// The Kineto trace vocabulary: what each `cat` value means for import, the copy / memset / sync names of the
// GPU events, and the record_function names PyTorch itself emits. Every generation from 2021 on: capitalised
// 2021 categories ("Operator", "Kernel", "Runtime", ...), ROCm's, and the current lower-case ones.
#pragma once

#include <cstdint>
#include <cstring>
#include <string_view>

#include "profile_train/trace/model.h"

namespace profile_train::trace::kineto {

// `k` == `lit`, compared with a constant length (inlined; string_view's == calls memcmp for each key).
template <size_t N>
inline bool key_is(std::string_view k, const char (&lit)[N]) {
  return k.size() == N - 1 && std::memcmp(k.data(), lit, N - 1) == 0;
}

// What a `cat` value means for import.
enum class Cls : uint8_t {
  kCpuOp,
  kUserAnnotation,
  kGpuAnnotation,
  kPython,
  kRuntime,
  kDriver,
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kOverhead,
  kCpuInstant,      // cpu_instant_event ([memory] and friends)
  kTraceSpan,       // "Trace": one span covering the capture; ignored
  kFlow,            // ac2g / async / async_cpu_to_gpu / async_gpu / fwdbwd
  kProfilerRange,   // cuda_profiler_range (CUPTI range profiler counters)
  kNone,            // no cat
  kUnknown,
};

Cls classify(std::string_view cat, bool has_cat);
Category to_category(Cls k);

// record_function ranges that PyTorch itself emits. 2021 traces (and some 2023 ones) file them under
// Operator/cpu_op; they are user annotations in the model so step and data-loading detection see one name.
bool is_builtin_record_function(std::string_view name);

// "Memcpy HtoD (Pageable -> Device)" -> HtoD, pageable, device. "Memset (Device)" -> dst device.
void parse_copy_name(std::string_view name, CopyKind* kind, MemoryKind* src, MemoryKind* dst);
SyncKind sync_kind(std::string_view s);  // cuda_sync's "Event Sync", "Stream Sync", ...

inline bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

}  // namespace profile_train::trace::kineto
