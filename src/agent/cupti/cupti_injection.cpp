// CUDA injection: enables CUPTI activity records and streams them, translated, into the recorder.
// Protocol after NVIDIA's cupti_trace_injection sample (idempotent init, aligned buffers, record loop until
// MAX_LIMIT_REACHED, fatal-error callback, flush at exit), but every error disables CUPTI instead of exiting.
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
namespace {

constexpr size_t kBufferBytes = 4u << 20;  // per CUPTI activity buffer
constexpr size_t kAlign = 8;

std::mutex g_mu;                    // guards g_status and g_ctx
nlohmann::json g_status = {{"state", "not_initialized"},
                           {"reason", "the CUDA driver never called InitializeInjection (no CUDA use, or no driver)"}};
cupti::TranslateContext g_ctx;
CUpti_SubscriberHandle g_subscriber = nullptr;
std::atomic<bool> g_enabled{false};
std::atomic<uint64_t> g_ignored{0};

std::string result_string(CUptiResult r) {
  const char* s = nullptr;
  if (cuptiGetResultString(r, &s) != CUPTI_SUCCESS || !s) return "CUPTI error " + std::to_string(static_cast<int>(r));
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
  if (cuptiGetCallbackName(domain, cbid, &n) == CUPTI_SUCCESS && n) return n;
  return (domain == CUPTI_CB_DOMAIN_RUNTIME_API ? "cuda_runtime_cbid_" : "cuda_driver_cbid_") + std::to_string(cbid);
}

uint32_t intern_view(std::string_view s) { return intern(s); }

uint64_t CUPTIAPI timestamp() { return static_cast<uint64_t>(now_ns()); }

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  try {
    if (buffer && valid > 0) {
      std::lock_guard<std::mutex> lock(g_mu);
      CUpti_Activity* rec = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        cupti::Translated t = cupti::translate(rec, g_ctx);
        if (t.what == cupti::Translated::What::kRecord) {
          if (in_capture_window(t.rec.start_ns, t.rec.end_ns)) record(t.rec);
        } else if (t.what == cupti::Translated::What::kDevice) {
          add_json_chunk(format::ChunkType::kDevice, t.device_json);
        } else {
          g_ignored.fetch_add(1, std::memory_order_relaxed);
        }
      }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped > 0)
      add_dropped(dropped);
  } catch (...) {
  }
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
  cuptiActivityFlushAll(1);
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

int do_initialize() {
  g_ctx.intern = intern_view;
  g_ctx.api_name = api_name;
  CUptiResult r = cuptiSubscribe(&g_subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_callback), nullptr);
  if (r != CUPTI_SUCCESS) {
    disable("cuptiSubscribe failed: " + result_string(r) +
            (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED
                 ? "; another profiler (Nsight, the PyTorch profiler, ...) is attached to this process"
                 : ""));
    return 0;
  }
  cuptiEnableCallback(1, g_subscriber, CUPTI_CB_DOMAIN_STATE, CUPTI_CBID_STATE_FATAL_ERROR);
  cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  r = cuptiActivityRegisterTimestampCallback(timestamp);
  const bool same_clock = r == CUPTI_SUCCESS;
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) {
    cuptiUnsubscribe(g_subscriber);
    disable("cuptiActivityRegisterCallbacks failed: " + result_string(r));
    return 0;
  }
  nlohmann::json enabled = nlohmann::json::array(), failed = nlohmann::json::object();
  for (const KindSpec& k : kKinds) {
    r = cuptiActivityEnable(k.kind);
    if (r == CUPTI_SUCCESS) {
      enabled.push_back(k.name);
      continue;
    }
    failed[k.name] = result_string(r);
    if (k.required) {
      for (const KindSpec& j : kKinds) cuptiActivityDisable(j.kind);
      cuptiUnsubscribe(g_subscriber);
      disable(std::string("cuptiActivityEnable(") + k.name + ") failed: " + result_string(r) +
              (r == CUPTI_ERROR_UNKNOWN || r == CUPTI_ERROR_NOT_INITIALIZED ? "; no usable CUDA driver/GPU?" : ""));
      return 0;
    }
  }
  uint32_t version = 0;
  cuptiGetVersion(&version);
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

int cupti_initialize() {
  static std::once_flag once;
  static int result = 0;
  try {
    recorder_start(config_from_env());
    std::call_once(once, [] {
      try {
        result = do_initialize();
      } catch (...) {
        disable("internal error while enabling CUPTI");
        result = 0;
      }
    });
  } catch (...) {
    return 0;
  }
  return result;
}

std::string cupti_status_json() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_status.dump();
}

}  // namespace profile_train::agent
