// CUDA injection: enables CUPTI activity records and streams them, translated, into the recorder. Every CUPTI
// call goes through the CuptiApi table, so tests drive this file with a fake. The protocol: initialization
// runs once, buffers are 8-byte aligned, a completed buffer is read record by record until CUPTI reports its
// end, a fatal-error callback disables the capture, and CUPTI flushes what it holds before the recorder's
// final flush. Every error disables CUPTI (and says why in the status) instead of exiting the user's process.
#include "cupti/cupti_injection.h"

#include <cupti.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/agent_internal.h"
#include "cupti/translate.h"
#include "profile_train/agent/recorder.h"

namespace profile_train::agent {
namespace cupti {
namespace {

constexpr size_t kBufferBytes = 4u << 20;  // per CUPTI activity buffer
constexpr size_t kAlign = 8;

const CuptiApi* g_api = nullptr;    // set once, before any callback can run
std::mutex g_mu;                    // guards g_status and g_ctx
nlohmann::json g_status = {{"state", "not_initialized"},
                           {"reason", "the CUDA driver never called InitializeInjection (no CUDA use, or no driver)"}};
TranslateContext g_ctx;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_enabled{false};
std::atomic<uint64_t> g_requested{0}, g_returned{0}, g_translated{0}, g_ignored{0}, g_dropped{0};

std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  if (g_api->get_result_string(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(static_cast<int>(r));
  return std::string(s) + " (" + std::to_string(static_cast<int>(r)) + ")";
}

void publish_locked() {
  set_status("cupti", g_status.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

void disable(const std::string& reason) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_enabled.store(false);
  g_status["state"] = "disabled";
  g_status["reason"] = reason;
  publish_locked();
}

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* n = nullptr;
  if (g_api->get_callback_name(domain, cbid, &n) == CUPTI_SUCCESS && n) return n;
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda_runtime_cbid_" : "cuda_driver_cbid_") + std::to_string(cbid);
}

uint32_t intern_view(std::string_view s) { return intern(s); }

uint64_t CUPTIAPI timestamp() { return static_cast<uint64_t>(now_ns()); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
  if (*buffer) g_requested.fetch_add(1, std::memory_order_relaxed);
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  try {
    if (buffer && valid > 0) {
      std::lock_guard<std::mutex> lock(g_mu);
      CUpti_Activity* rec = nullptr;
      while (g_api->get_next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        Translated t = translate(rec, g_ctx);
        if (t.what == Translated::What::kRecord) {
          if (in_capture_window(t.rec.start_ns, t.rec.end_ns)) record(t.rec);
        } else if (t.what == Translated::What::kDevice) {
          add_json_chunk(format::ChunkType::kDevice, t.device_json);
        } else {
          g_ignored.fetch_add(1, std::memory_order_relaxed);
          continue;
        }
        g_translated.fetch_add(1, std::memory_order_relaxed);
      }
    }
    size_t dropped = 0;
    if (g_api->get_num_dropped_records(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0) {
      add_dropped(dropped);
      const uint64_t total = g_dropped.fetch_add(dropped) + dropped;
      std::lock_guard<std::mutex> lock(g_mu);
      g_status["records_dropped"] = total;
      publish_locked();
    }
  } catch (...) {
    note_internal_error();
  }
  if (buffer) g_returned.fetch_add(1, std::memory_order_relaxed);
  std::free(buffer);
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  if (domain == CUPTI_CB_DOMAIN_STATE && cbid == CUPTI_CBID_STATE_FATAL_ERROR) {
    const auto* s = static_cast<const CUpti_StateData*>(data);
    std::string msg = "CUPTI fatal error";
    if (s && s->notification.message) msg += std::string(": ") + s->notification.message;
    disable(msg);
  }
}

void at_exit_flush() {
  if (!g_enabled.load()) return;
  g_api->flush_all(1);
}

struct KindSpec {
  CUpti_ActivityKind kind;
  const char* name;
  bool required;
};

const KindSpec kKinds[] = {
    {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, "kernel", true},
    {CUPTI_ACTIVITY_KIND_MEMCPY, "memcpy", true},
    {CUPTI_ACTIVITY_KIND_MEMSET, "memset", true},
    {CUPTI_ACTIVITY_KIND_RUNTIME, "runtime", true},
    {CUPTI_ACTIVITY_KIND_DRIVER, "driver", false},
    {CUPTI_ACTIVITY_KIND_MEMCPY2, "memcpy_p2p", false},
    {CUPTI_ACTIVITY_KIND_SYNCHRONIZATION, "synchronization", false},
    {CUPTI_ACTIVITY_KIND_MEMORY2, "memory", false},
    {CUPTI_ACTIVITY_KIND_DEVICE, "device", false},
};

int do_initialize(const CuptiApi& api) {
  g_api = &api;
  g_ctx.intern = intern_view;
  g_ctx.api_name = api_name;
  CUptiResult r = api.subscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr);
  if (r != CUPTI_SUCCESS) {
    disable("cuptiSubscribe failed: " + result_string(r) +
            (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                 ? "; another profiler (Nsight, the PyTorch profiler, ...) is attached to this process"
                 : ""));
    return 0;
  }
  api.enable_callback(1, g_subscriber, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
  api.set_thread_id_type(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  r = api.register_timestamp_callback(timestamp);
  const bool same_clock = r == CUPTI_SUCCESS;
  r = api.register_callbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    api.unsubscribe(g_subscriber);
    disable("cuptiActivityRegisterCallbacks failed: " + result_string(r));
    return 0;
  }
  nlohmann::json enabled = nlohmann::json::array(), failed = nlohmann::json::object();
  for (const KindSpec& k : kKinds) {
    r = api.activity_enable(k.kind);
    if (r == CUPTI_SUCCESS) {
      enabled.push_back(k.name);
      continue;
    }
    failed[k.name] = result_string(r);
    if (k.required) {
      for (const KindSpec& j : kKinds) api.activity_disable(j.kind);
      api.unsubscribe(g_subscriber);
      disable(std::string("cuptiActivityEnable(") + k.name + ") failed: " + result_string(r) +
              (r == CUPTI_ERROR_UNKNOWN || r == CUPTI_ERROR_NOT_INITIALIZED ? "; no usable CUDA driver/GPU?" : ""));
      return 0;
    }
  }
  uint32_t version = 0;
  api.get_version(&version);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_enabled.store(true);
    g_status = {{"state", "enabled"}, {"kinds", enabled}, {"kinds_failed", failed},
                {"cupti_api_version", version}, {"timestamps", same_clock ? "CLOCK_MONOTONIC" : "cupti_default"}};
    publish_locked();
  }
  // Before the recorder's final flush (at exit, or the shim's finalize mark), CUPTI hands over what it holds.
  set_pre_stop_hook(at_exit_flush);
  return 1;
}

}  // namespace

int start_capture(const CuptiApi& api) {
  static std::once_flag once;
  static int result = 0;
  try {
    std::call_once(once, [&api] {
      try {
        result = do_initialize(api);
      } catch (...) {
        note_internal_error();
        disable("internal error while enabling CUPTI");
        result = 0;
      }
    });
  } catch (...) {
    note_internal_error();
    return 0;
  }
  return result;
}

CaptureStats capture_stats() {
  CaptureStats s;
  s.buffers_requested = g_requested.load();
  s.buffers_returned = g_returned.load();
  s.records_translated = g_translated.load();
  s.records_ignored = g_ignored.load();
  s.records_dropped = g_dropped.load();
  return s;
}

}  // namespace cupti

int cupti_initialize() {
  try {
    recorder_start(config_from_env());
  } catch (...) {
    note_internal_error();
    return 0;
  }
  return cupti::start_capture(cupti::libcupti_api());
}

std::string cupti_status_json() {
  std::lock_guard<std::mutex> lock(cupti::g_mu);
  return cupti::g_status.dump();
}

}  // namespace profile_train::agent
