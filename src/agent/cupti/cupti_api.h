// The CUPTI entry points the agent calls, as a table of function pointers. `libcupti_api()` binds them to
// libcupti; unit tests hand the capture a fake table (tests/agent/fake_cupti.h) to drive the buffer path and
// the error paths (a second subscriber, an activity kind that fails, dropped records) without a driver or GPU.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>

namespace profile_train::agent::cupti {

struct CuptiApi {
  CUptiResult(CUPTIAPI* get_result_string)(CUptiResult, const char**) = nullptr;
  CUptiResult(CUPTIAPI* get_version)(uint32_t*) = nullptr;
  CUptiResult(CUPTIAPI* get_callback_name)(CUpti_CallbackDomain, uint32_t, const char**) = nullptr;
  CUptiResult(CUPTIAPI* subscribe)(CUpti_SubscriberHandle*, CUpti_CallbackFunc, void*) = nullptr;
  CUptiResult(CUPTIAPI* unsubscribe)(CUpti_SubscriberHandle) = nullptr;
  CUptiResult(CUPTIAPI* enable_callback)(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain,
                                         CUpti_CallbackId) = nullptr;
  CUptiResult(CUPTIAPI* set_thread_id_type)(CUpti_ActivityThreadIdType) = nullptr;
  CUptiResult(CUPTIAPI* register_timestamp_callback)(CUpti_TimestampCallbackFunc) = nullptr;
  CUptiResult(CUPTIAPI* register_callbacks)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) =
      nullptr;
  CUptiResult(CUPTIAPI* activity_enable)(CUpti_ActivityKind) = nullptr;
  CUptiResult(CUPTIAPI* activity_disable)(CUpti_ActivityKind) = nullptr;
  CUptiResult(CUPTIAPI* get_next_record)(uint8_t*, size_t, CUpti_Activity**) = nullptr;
  CUptiResult(CUPTIAPI* get_num_dropped_records)(CUcontext, uint32_t, size_t*) = nullptr;
  CUptiResult(CUPTIAPI* flush_all)(uint32_t) = nullptr;
};

// The table bound to libcupti (the library the agent links).
const CuptiApi& libcupti_api();

}  // namespace profile_train::agent::cupti
