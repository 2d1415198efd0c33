// The injected library's only exported symbols (see agent.map). Everything else has hidden visibility.
#include <cstdint>

#include "core/agent_internal.h"
#include "profile_train/agent/recorder.h"

extern "C" {

// Called by libcuda inside cuInit when CUDA_INJECTION64_PATH names this library.
__attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    return profile_train::agent::cupti_initialize();
  } catch (...) {
    profile_train::agent::note_internal_error();
    return 0;
  }
}

// Called by each NVTX instance on its first call when NVTX_INJECTION64_PATH names this library.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* (*get_export_table)(uint32_t)) {
  try {
    return profile_train::agent::nvtx_initialize(get_export_table);
  } catch (...) {
    profile_train::agent::note_internal_error();
    return 0;
  }
}

}  // extern "C"
