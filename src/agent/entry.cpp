// The injected library's only exported symbols (see agent.map). Everything else has hidden visibility.
#include <cstdint>

#include "core/agent_internal.h"
#include "core/process_hooks.h"
#include "profile_train/agent/recorder.h"

namespace {

// The recorder's fork, exit and signal handlers belong to the host process: only this library installs them.
void start_recorder() {
  namespace agent = profile_train::agent;
  if (agent::recorder_start(agent::config_from_env())) agent::install_process_hooks();
}

}  // namespace

extern "C" {

// Called by libcuda inside cuInit when CUDA_INJECTION64_PATH names this library.
__attribute__((visibility("default"))) int InitializeInjection(void) {
  try {
    start_recorder();
    return profile_train::agent::cupti_initialize();
  } catch (...) {
    profile_train::agent::note_internal_error();
    return 0;
  }
}

// Called by each NVTX instance on its first call when NVTX_INJECTION64_PATH names this library.
__attribute__((visibility("default"))) int InitializeInjectionNvtx2(const void* (*get_export_table)(uint32_t)) {
  try {
    start_recorder();
    return profile_train::agent::nvtx_initialize(get_export_table);
  } catch (...) {
    profile_train::agent::note_internal_error();
    return 0;
  }
}

}  // extern "C"
