// A CuptiApi table with scripted answers, for the capture's unit tests (no driver, no GPU). CUPTI's buffer
// layout is its own; the fake defines one: records back to back, each after an 8-byte size, 8-byte aligned.
// One fake per process (the capture is process-wide): tests run each scenario in a forked child.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <set>
#include <stdexcept>
#include <vector>

#include "cupti/cupti_api.h"

namespace pt_agent_test {

struct FakeCupti {
  // Scripted answers.
  CUptiResult subscribe_result = CUPTI_SUCCESS;
  std::set<CUpti_ActivityKind> failing_kinds;  // cuptiActivityEnable answers CUPTI_ERROR_NOT_COMPATIBLE
  size_t dropped_per_buffer = 0;               // cuptiActivityGetNumDroppedRecords' answer
  bool throw_in_next_record = false;           // a failure inside the buffer path
  // What the capture did.
  CUpti_BuffersCallbackRequestFunc buffer_requested = nullptr;
  CUpti_BuffersCallbackCompleteFunc buffer_completed = nullptr;
  std::set<CUpti_ActivityKind> enabled;
  int unsubscribes = 0;
  int flushes = 0;
};

inline FakeCupti& fake_cupti() {
  static FakeCupti f;
  return f;
}

// Writes `records` (pointer, size) into `buffer` in the fake's layout; returns the valid bytes.
inline size_t pack_records(uint8_t* buffer, size_t size, const std::vector<std::pair<const void*, size_t>>& records) {
  size_t at = 0;
  for (const auto& [rec, bytes] : records) {
    const size_t padded = (bytes + 7) / 8 * 8;
    if (at + 8 + padded > size) break;
    const uint64_t n = bytes;
    std::memcpy(buffer + at, &n, 8);
    std::memcpy(buffer + at + 8, rec, bytes);
    at += 8 + padded;
  }
  return at;
}

namespace fake_impl {

inline CUptiResult CUPTIAPI result_string(CUptiResult r, const char** s) {
  *s = r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
                                                           : "CUPTI_ERROR_FAKE";
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI version(uint32_t* v) {
  *v = 999;
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI callback_name(CUpti_CallbackDomain, uint32_t, const char** n) {
  *n = "cudaLaunchKernel_v7000";
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI subscribe(CUpti_SubscriberHandle* h, CUpti_CallbackFunc, void*) {
  *h = nullptr;
  return fake_cupti().subscribe_result;
}
inline CUptiResult CUPTIAPI unsubscribe(CUpti_SubscriberHandle) {
  ++fake_cupti().unsubscribes;
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI enable_callback(uint32_t, CUpti_SubscriberHandle, CUpti_CallbackDomain, CUpti_CallbackId) {
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI thread_id_type(CUpti_ActivityThreadIdType) { return CUPTI_SUCCESS; }
inline CUptiResult CUPTIAPI timestamp_callback(CUpti_TimestampCallbackFunc) { return CUPTI_SUCCESS; }
inline CUptiResult CUPTIAPI register_callbacks(CUpti_BuffersCallbackRequestFunc req,
                                               CUpti_BuffersCallbackCompleteFunc done) {
  fake_cupti().buffer_requested = req;
  fake_cupti().buffer_completed = done;
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI activity_enable(CUpti_ActivityKind k) {
  if (fake_cupti().failing_kinds.count(k)) return CUPTI_ERROR_NOT_COMPATIBLE;
  fake_cupti().enabled.insert(k);
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI activity_disable(CUpti_ActivityKind k) {
  fake_cupti().enabled.erase(k);
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI next_record(uint8_t* buffer, size_t valid, CUpti_Activity** rec) {
  if (fake_cupti().throw_in_next_record) throw std::bad_alloc();
  size_t at = 0;
  if (*rec) {
    const auto* cur = reinterpret_cast<uint8_t*>(*rec);
    uint64_t n = 0;
    std::memcpy(&n, cur - 8, 8);
    at = static_cast<size_t>(cur - buffer) + (n + 7) / 8 * 8;
  }
  if (at + 8 > valid) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *rec = reinterpret_cast<CUpti_Activity*>(buffer + at + 8);
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI num_dropped(CUcontext, uint32_t, size_t* n) {
  *n = fake_cupti().dropped_per_buffer;
  return CUPTI_SUCCESS;
}
inline CUptiResult CUPTIAPI flush_all(uint32_t) {
  ++fake_cupti().flushes;
  return CUPTI_SUCCESS;
}

}  // namespace fake_impl

inline const profile_train::agent::cupti::CuptiApi& fake_cupti_api() {
  static const profile_train::agent::cupti::CuptiApi api = [] {
    profile_train::agent::cupti::CuptiApi a;
    a.get_result_string = fake_impl::result_string;
    a.get_version = fake_impl::version;
    a.get_callback_name = fake_impl::callback_name;
    a.subscribe = fake_impl::subscribe;
    a.unsubscribe = fake_impl::unsubscribe;
    a.enable_callback = fake_impl::enable_callback;
    a.set_thread_id_type = fake_impl::thread_id_type;
    a.register_timestamp_callback = fake_impl::timestamp_callback;
    a.register_callbacks = fake_impl::register_callbacks;
    a.activity_enable = fake_impl::activity_enable;
    a.activity_disable = fake_impl::activity_disable;
    a.get_next_record = fake_impl::next_record;
    a.get_num_dropped_records = fake_impl::num_dropped;
    a.flush_all = fake_impl::flush_all;
    return a;
  }();
  return api;
}

}  // namespace pt_agent_test
