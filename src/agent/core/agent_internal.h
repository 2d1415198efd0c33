// Entry points shared between the static core, the CUPTI part and the injected .so (not installed).
#pragma once

#include <cstdint>
#include <string>

namespace profile_train::agent {

// NVTX: fills the calling NVTX instance's callback tables. Returns 1 on success (NVTX's convention).
int nvtx_initialize(const void* (*get_export_table)(uint32_t));

// CUDA injection (called by libcuda inside cuInit). Returns 1 if CUPTI activity recording is enabled,
// 0 if it was disabled; never fails the host. The reason is recorded in the file's status ("cupti").
int cupti_initialize();

// Last CUPTI status as a JSON object string (for tests): {"state": "enabled"|"disabled"|..., "reason": ...}.
std::string cupti_status_json();

}  // namespace profile_train::agent
