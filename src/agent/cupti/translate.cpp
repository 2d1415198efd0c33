#include "cupti/translate.h"

#include <nlohmann/json.hpp>

#include "profile_train/agent/recorder.h"

namespace profile_train::agent::cupti {

using format::Record;
using format::RecordKind;

format::CopyKind copy_kind_of(uint8_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return format::CopyKind::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return format::CopyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return format::CopyKind::kDtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return format::CopyKind::kHtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return format::CopyKind::kPtoP;
    // Array copies: classify by which side is the host.
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOA: return format::CopyKind::kHtoD;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOH: return format::CopyKind::kDtoH;
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOA:
    case CUPTI_ACTIVITY_MEMCPY_KIND_ATOD:
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOA: return format::CopyKind::kDtoD;
    default: return format::CopyKind::kUnknown;
  }
}

format::MemKind mem_kind_of(uint32_t k) {
  switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return format::MemKind::kPageable;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return format::MemKind::kPinned;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE:
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC:
    case CUPTI_ACTIVITY_MEMORY_KIND_ARRAY: return format::MemKind::kDevice;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return format::MemKind::kManaged;
    default: return format::MemKind::kUnknown;
  }
}

format::SyncKind sync_kind_of(uint32_t t) {
  switch (t) {
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE: return format::SyncKind::kEventSync;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT: return format::SyncKind::kStreamWaitEvent;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE: return format::SyncKind::kStreamSync;
    case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE: return format::SyncKind::kContextSync;
    default: return format::SyncKind::kUnknown;
  }
}

namespace {

uint32_t name_id(TranslateContext& ctx, const char* s) {
  if (!s || !ctx.intern) return 0;
  return ctx.intern(std::string_view(s));
}

void learn_context(TranslateContext& ctx, uint32_t context, uint32_t device) {
  if (ctx.context_device.size() < 4096) ctx.context_device[context] = static_cast<int32_t>(device);
}

Translated make(const Record& r) {
  Translated t;
  t.what = Translated::What::kRecord;
  t.rec = r;
  return t;
}

// The fields every GPU activity record (kernel, memcpy, memset) carries under the same names.
template <typename ActivityRecord>
void set_gpu_activity_fields(Record& r, const ActivityRecord* a) {
  r.start_ns = static_cast<int64_t>(a->start);
  r.end_ns = static_cast<int64_t>(a->end);
  r.tid = a->streamId;
  r.corr = a->correlationId;
  r.device = static_cast<int32_t>(a->deviceId);
}

}  // namespace

Translated translate(const CUpti_Activity* activity, TranslateContext& ctx) {
  if (!activity) return {};
  Record r;
  switch (activity->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(activity);
      r.kind = static_cast<uint8_t>(RecordKind::kKernel);
      r.name = name_id(ctx, k->name);
      set_gpu_activity_fields(r, k);
      r.value = int64_t{k->gridX} * k->gridY * k->gridZ;
      r.x0 = static_cast<uint32_t>(k->blockX * k->blockY * k->blockZ);
      r.x1 = k->registersPerThread;
      r.x2 = static_cast<uint32_t>(k->staticSharedMemory + k->dynamicSharedMemory);
      learn_context(ctx, k->contextId, k->deviceId);
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(activity);
      r.kind = static_cast<uint8_t>(RecordKind::kMemcpy);
      r.a = static_cast<uint8_t>(copy_kind_of(m->copyKind));
      r.b = static_cast<uint8_t>(mem_kind_of(m->srcKind));
      r.c = static_cast<uint8_t>(mem_kind_of(m->dstKind));
      set_gpu_activity_fields(r, m);
      r.value = static_cast<int64_t>(m->bytes);
      r.x1 = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
      r.x0 = r.x2 = UINT32_MAX;
      learn_context(ctx, m->contextId, m->deviceId);
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpyPtoP4*>(activity);
      r.kind = static_cast<uint8_t>(RecordKind::kMemcpy);
      r.a = static_cast<uint8_t>(format::CopyKind::kPtoP);
      r.b = static_cast<uint8_t>(mem_kind_of(m->srcKind));
      r.c = static_cast<uint8_t>(mem_kind_of(m->dstKind));
      set_gpu_activity_fields(r, m);
      r.value = static_cast<int64_t>(m->bytes);
      r.x1 = (m->flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0;
      r.x0 = m->srcDeviceId;
      r.x2 = m->dstDeviceId;
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(activity);
      r.kind = static_cast<uint8_t>(RecordKind::kMemset);
      r.c = static_cast<uint8_t>(mem_kind_of(m->memoryKind));
      set_gpu_activity_fields(r, m);
      r.value = static_cast<int64_t>(m->bytes);
      learn_context(ctx, m->contextId, m->deviceId);
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(activity);
      r.kind = static_cast<uint8_t>(RecordKind::kSync);
      r.a = static_cast<uint8_t>(sync_kind_of(s->type));
      r.start_ns = static_cast<int64_t>(s->start);
      r.end_ns = static_cast<int64_t>(s->end);
      r.tid = s->streamId;  // CUPTI_SYNCHRONIZATION_INVALID_VALUE (UINT32_MAX) when not a stream sync
      r.corr = s->correlationId;
      auto it = ctx.context_device.find(s->contextId);
      r.device = it == ctx.context_device.end() ? -1 : it->second;
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER: {
      const auto* a = reinterpret_cast<const CUpti_ActivityAPI*>(activity);
      const bool runtime = activity->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      r.kind = static_cast<uint8_t>(runtime ? RecordKind::kRuntime : RecordKind::kDriver);
      if (ctx.api_name && ctx.intern) {
        const std::string n = ctx.api_name(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, a->cbid);
        r.name = ctx.intern(n);
      }
      r.start_ns = static_cast<int64_t>(a->start);
      r.end_ns = static_cast<int64_t>(a->end);
      r.tid = a->threadId;  // system thread id (cuptiSetThreadIdType(SYSTEM)), same as NVTX records
      r.corr = a->correlationId;
      r.value = a->processId;
      r.x0 = a->cbid;
      r.x1 = a->returnValue;
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(activity);
      const bool alloc = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
      const bool release = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
      if (!alloc && !release) return {};
      r.kind = static_cast<uint8_t>(RecordKind::kMemory);
      r.a = static_cast<uint8_t>(mem_kind_of(m->memoryKind));
      r.start_ns = r.end_ns = static_cast<int64_t>(m->timestamp);
      r.device = static_cast<int32_t>(m->deviceId);
      r.tid = m->streamId;
      r.corr = m->correlationId;
      r.value = alloc ? static_cast<int64_t>(m->bytes) : -static_cast<int64_t>(m->bytes);
      return make(r);
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(activity);
      Translated t;
      t.what = Translated::What::kDevice;
      nlohmann::json j;
      j["id"] = d->id;
      j["name"] = d->name ? std::string(d->name) : std::string();
      j["vendor"] = "nvidia";
      j["compute_major"] = d->computeCapabilityMajor;
      j["compute_minor"] = d->computeCapabilityMinor;
      j["num_sms"] = d->numMultiprocessors;
      j["max_threads_per_sm"] = d->maxWarpsPerMultiprocessor * d->numThreadsPerWarp;
      j["max_threads_per_block"] = d->maxThreadsPerBlock;
      j["regs_per_sm"] = d->maxRegistersPerMultiprocessor;
      j["shared_mem_per_sm"] = d->maxSharedMemoryPerMultiprocessor;
      j["total_memory_bytes"] = d->globalMemorySize;
      try {
        t.device_json = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
      } catch (...) {
        note_internal_error();
        return {};
      }
      return t;
    }
    default:
      return {};
  }
}

}  // namespace profile_train::agent::cupti
