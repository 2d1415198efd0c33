// NVTX injection: fills the callback tables of every NVTX instance that loads us (one per library or executable
// embedding NVTX) with hooks that feed the recorder. See nvtx3/nvtxDetail/nvtxInit.h for the protocol.
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <cwchar>
#include <string>

#include "agent_internal.h"
#include "profile_train/agent/recorder.h"

// NVTX leaves these handle structs opaque to applications; the tool defines them.
struct nvtxDomainRegistration_st {
  uint32_t value;  // interned domain name
};
struct nvtxStringRegistration_st {
  uint32_t value;  // interned string
};

namespace profile_train::agent {
namespace {

// Handles given to the application are slots of fixed arrays, never heap pointers: a handle is dereferenced
// only when it is a slot we handed out. A fabricated, stale or foreign pointer passed back to a range or mark
// call is counted (status "nvtx_bad_handles") and the call goes on without its name or domain: the host
// program must not crash on it. Slots live as long as the process, as NVTX expects.
constexpr uint32_t kMaxStringHandles = 1u << 16;  // 256 KiB of .bss, touched only as used
constexpr uint32_t kMaxDomainHandles = 1u << 12;

template <typename Slot, uint32_t N>
class HandleSlots {
 public:
  // A fresh slot holding `value` (the existing one when `dedupe` finds it), or nullptr once all N are in use
  // (counted: the caller gets no handle, its events go without that name or domain).
  Slot* take(uint32_t value, bool dedupe = false) {
    if (dedupe) {
      const uint32_t used = std::min(next_.load(std::memory_order_acquire), N);
      for (uint32_t i = 0; i < used; ++i)
        if (slots_[i].value == value) return &slots_[i];
    }
    uint32_t i = next_.load(std::memory_order_relaxed);
    do {
      if (i >= N) {
        note_nvtx_handle_limit();
        return nullptr;
      }
    } while (!next_.compare_exchange_weak(i, i + 1, std::memory_order_acq_rel));
    slots_[i].value = value;
    return &slots_[i];
  }
  // The value behind `h` when it is one of our slots; 0 (and counted) otherwise. h == nullptr is NVTX's
  // "none" and is not an error.
  uint32_t value(const Slot* h) const {
    if (h == nullptr) return 0;
    const auto p = reinterpret_cast<uintptr_t>(h);
    const auto base = reinterpret_cast<uintptr_t>(&slots_[0]);
    const uint32_t used = std::min(next_.load(std::memory_order_acquire), N);
    if (p < base || p >= base + uintptr_t{used} * sizeof(Slot) || (p - base) % sizeof(Slot) != 0) {
      note_bad_nvtx_handle();
      return 0;
    }
    return h->value;
  }

 private:
  Slot slots_[N]{};
  std::atomic<uint32_t> next_{0};
};

// constinit: usable by an NVTX call made while shared libraries are still being initialized.
constinit HandleSlots<nvtxStringRegistration_st, kMaxStringHandles> g_strings;
constinit HandleSlots<nvtxDomainRegistration_st, kMaxDomainHandles> g_domains;

uint32_t domain_id(nvtxDomainHandle_t d) { return g_domains.value(d); }

std::string utf8_from_wide(const wchar_t* w) {
  std::string out;
  if (!w) return out;
  for (; *w; ++w) {
    const auto c = static_cast<uint32_t>(*w);
    if (c < 0x80) {
      out.push_back(static_cast<char>(c));
    } else if (c < 0x800) {
      out.push_back(static_cast<char>(0xC0 | (c >> 6)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else if (c < 0x10000) {
      out.push_back(static_cast<char>(0xE0 | (c >> 12)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    } else {
      out.push_back(static_cast<char>(0xF0 | (c >> 18)));
      out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
      out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
    }
  }
  return out;
}

// Name id of an event's message (0 if none). `text` receives the ASCII text when there is one (for marks).
uint32_t message_id(const nvtxEventAttributes_t* a, const char** text = nullptr) {
  if (!a) return 0;
  // An attribute struct too small to hold a message (an older or broken caller) has none.
  if (a->size < offsetof(nvtxEventAttributes_t, message) + sizeof(a->message)) return 0;
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII:
      if (text) *text = a->message.ascii;
      return intern_cstr(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE:
      return intern(utf8_from_wide(a->message.unicode));
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return g_strings.value(a->message.registered);
    default:
      return 0;
  }
}

// ---- core module ----
void MarkEx(const nvtxEventAttributes_t* a) {
  const char* text = nullptr;
  const uint32_t id = message_id(a, &text);
  mark(id, 0, text ? std::string_view(text) : std::string_view());
}
void MarkA(const char* m) { mark(intern_cstr(m), 0, m ? std::string_view(m) : std::string_view()); }
void MarkW(const wchar_t* m) { mark(intern(utf8_from_wide(m)), 0, {}); }
nvtxRangeId_t RangeStartEx(const nvtxEventAttributes_t* a) { return range_start(message_id(a), 0); }
nvtxRangeId_t RangeStartA(const char* m) { return range_start(intern_cstr(m), 0); }
nvtxRangeId_t RangeStartW(const wchar_t* m) { return range_start(intern(utf8_from_wide(m)), 0); }
void RangeEnd(nvtxRangeId_t id) { range_end(id); }
int RangePushEx(const nvtxEventAttributes_t* a) { return range_push(message_id(a), 0); }
int RangePushA(const char* m) { return range_push(intern_cstr(m), 0); }
int RangePushW(const wchar_t* m) { return range_push(intern(utf8_from_wide(m)), 0); }
int RangePop() { return range_pop(0); }
void NameCategoryA(uint32_t, const char*) {}
void NameCategoryW(uint32_t, const wchar_t*) {}
void NameOsThreadA(uint32_t tid, const char* name) { name_thread(tid, intern_cstr(name)); }
void NameOsThreadW(uint32_t tid, const wchar_t* name) { name_thread(tid, intern(utf8_from_wide(name))); }

// ---- core2 module (domains) ----
void DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  const char* text = nullptr;
  const uint32_t id = message_id(a, &text);
  mark(id, domain_id(d), text ? std::string_view(text) : std::string_view());
}
nvtxRangeId_t DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return range_start(message_id(a), domain_id(d));
}
void DomainRangeEnd(nvtxDomainHandle_t, nvtxRangeId_t id) { range_end(id); }
int DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t* a) {
  return range_push(message_id(a), domain_id(d));
}
int DomainRangePop(nvtxDomainHandle_t d) { return range_pop(domain_id(d)); }
nvtxResourceHandle_t DomainResourceCreate(nvtxDomainHandle_t, nvtxResourceAttributes_t*) { return nullptr; }
void DomainResourceDestroy(nvtxResourceHandle_t) {}
void DomainNameCategoryA(nvtxDomainHandle_t, uint32_t, const char*) {}
void DomainNameCategoryW(nvtxDomainHandle_t, uint32_t, const wchar_t*) {}
nvtxStringHandle_t DomainRegisterStringA(nvtxDomainHandle_t, const char* s) { return g_strings.take(intern_cstr(s)); }
nvtxStringHandle_t DomainRegisterStringW(nvtxDomainHandle_t, const wchar_t* s) {
  return g_strings.take(intern(utf8_from_wide(s)));
}
// A domain created again under the same name gets the same handle (some programs create one per call site).
nvtxDomainHandle_t DomainCreateA(const char* name) { return g_domains.take(intern_cstr(name ? name : ""), true); }
nvtxDomainHandle_t DomainCreateW(const wchar_t* name) { return g_domains.take(intern(utf8_from_wide(name)), true); }
void DomainDestroy(nvtxDomainHandle_t) {}  // handles stay valid: records may still reference the name
void Initialize(const void*) {}

template <typename F>
void set_slot(NvtxFunctionTable table, unsigned int size, unsigned int id, F fn) {
  if (id >= 1 && id < size && table[id]) *table[id] = reinterpret_cast<NvtxFunctionPointer>(fn);
}

}  // namespace

int nvtx_initialize(const void* (*get_export_table)(uint32_t)) {
  try {
    note_nvtx_init_call();
    if (!recorder_start(config_from_env())) return 0;
    if (!get_export_table) return 0;
    const auto* cb = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
    if (!cb || !cb->GetModuleFunctionTable) return 0;
    NvtxFunctionTable t = nullptr;
    unsigned int n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) && t) {
      set_slot(t, n, NVTX_CBID_CORE_MarkEx, MarkEx);
      set_slot(t, n, NVTX_CBID_CORE_MarkA, MarkA);
      set_slot(t, n, NVTX_CBID_CORE_MarkW, MarkW);
      set_slot(t, n, NVTX_CBID_CORE_RangeStartEx, RangeStartEx);
      set_slot(t, n, NVTX_CBID_CORE_RangeStartA, RangeStartA);
      set_slot(t, n, NVTX_CBID_CORE_RangeStartW, RangeStartW);
      set_slot(t, n, NVTX_CBID_CORE_RangeEnd, RangeEnd);
      set_slot(t, n, NVTX_CBID_CORE_RangePushEx, RangePushEx);
      set_slot(t, n, NVTX_CBID_CORE_RangePushA, RangePushA);
      set_slot(t, n, NVTX_CBID_CORE_RangePushW, RangePushW);
      set_slot(t, n, NVTX_CBID_CORE_RangePop, RangePop);
      set_slot(t, n, NVTX_CBID_CORE_NameCategoryA, NameCategoryA);
      set_slot(t, n, NVTX_CBID_CORE_NameCategoryW, NameCategoryW);
      set_slot(t, n, NVTX_CBID_CORE_NameOsThreadA, NameOsThreadA);
      set_slot(t, n, NVTX_CBID_CORE_NameOsThreadW, NameOsThreadW);
    } else {
      return 0;
    }
    t = nullptr;
    n = 0;
    if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
      set_slot(t, n, NVTX_CBID_CORE2_DomainMarkEx, DomainMarkEx);
      set_slot(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, DomainRangeStartEx);
      set_slot(t, n, NVTX_CBID_CORE2_DomainRangeEnd, DomainRangeEnd);
      set_slot(t, n, NVTX_CBID_CORE2_DomainRangePushEx, DomainRangePushEx);
      set_slot(t, n, NVTX_CBID_CORE2_DomainRangePop, DomainRangePop);
      set_slot(t, n, NVTX_CBID_CORE2_DomainResourceCreate, DomainResourceCreate);
      set_slot(t, n, NVTX_CBID_CORE2_DomainResourceDestroy, DomainResourceDestroy);
      set_slot(t, n, NVTX_CBID_CORE2_DomainNameCategoryA, DomainNameCategoryA);
      set_slot(t, n, NVTX_CBID_CORE2_DomainNameCategoryW, DomainNameCategoryW);
      set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, DomainRegisterStringA);
      set_slot(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, DomainRegisterStringW);
      set_slot(t, n, NVTX_CBID_CORE2_DomainCreateA, DomainCreateA);
      set_slot(t, n, NVTX_CBID_CORE2_DomainCreateW, DomainCreateW);
      set_slot(t, n, NVTX_CBID_CORE2_DomainDestroy, DomainDestroy);
      set_slot(t, n, NVTX_CBID_CORE2_Initialize, Initialize);
    }
    return 1;
  } catch (...) {
    note_internal_error();
    return 0;
  }
}

}  // namespace profile_train::agent
