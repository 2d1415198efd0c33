// CUPTI activity record -> our own Record (by value). The only header besides cupti_injection.cpp that sees
// CUPTI types; tests include it to feed hand-built records (no driver, no libcupti calls needed).
#pragma once

#include <cupti.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>

#include "profile_train/format/native_format.h"

namespace profile_train::agent::cupti {

struct TranslateContext {
  // Interns a name (kernel names point into CUPTI's buffer: the copy is made here, before the buffer returns).
  uint32_t (*intern)(std::string_view) = nullptr;
  // Name of a runtime / driver callback id (production: cuptiGetCallbackName, which returns "cudaMemcpy_v3020").
  std::string (*api_name)(CUpti_CallbackDomain, CUpti_CallbackId) = nullptr;
  // contextId -> device, learned from kernel/memcpy/memset records (synchronization records carry no device).
  std::unordered_map<uint32_t, int32_t> context_device;
};

struct Translated {
  enum class What { kNone, kRecord, kDevice } what = What::kNone;
  format::Record rec;
  std::string device_json;  // kDevice: DeviceInfo fields as JSON (see FORMAT.md)
};

// Translates one record of a kind we consume; kNone for kinds we ignore (counted by the caller).
Translated translate(const CUpti_Activity* activity, TranslateContext& ctx);

// Maps of CUPTI enums onto ours (exposed for tests).
format::CopyKind copy_kind_of(uint8_t cupti_copy_kind);
format::MemKind mem_kind_of(uint32_t cupti_memory_kind);
format::SyncKind sync_kind_of(uint32_t cupti_sync_type);

}  // namespace profile_train::agent::cupti
