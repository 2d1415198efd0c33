// Reading the agent's native capture files (format: src/agent/FORMAT.md) into the trace model.
// Implemented in src/trace/native/native.cpp (part of pt_trace), so `analyze` and `run` share it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "profile_train/common/status.h"
#include "profile_train/trace/importer.h"
#include "profile_train/trace/model.h"

namespace profile_train::trace::native {

// What a capture file says about its process (its META chunk); cheap: reads the start of the file only.
struct CaptureFileInfo {
  std::filesystem::path path;
  int64_t pid = -1;
  int64_t ppid = -1;
  int32_t rank = -1;        // env RANK of the process (-1 if unset)
  int32_t local_rank = -1;  // env LOCAL_RANK
  int32_t world_size = -1;  // env WORLD_SIZE
  bool fork_child = false;  // started by fork() from another captured process (DataLoader worker)
  std::string process_name;
  std::string cmdline;
};
StatusOr<CaptureFileInfo> read_capture_info(const std::filesystem::path& file);

// Loads one or more capture files (e.g. a training process and its DataLoader workers) into one Trace.
// Facts written by the Python shim as facts-<pid>.json next to a capture file are merged into trace.facts.
// Errors: NotFound, BadInput (not a capture / corrupt header), Unsupported (unknown major version).
// A truncated or partly corrupt file is not an error: what could be read is kept and the loss is counted
// in trace.quality.
StatusOr<Trace> load_captures(const std::vector<std::filesystem::path>& files, const LoadOptions& options = {});

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (CUPTI callback names carry the API version).
std::string strip_api_version(const std::string& name);

}  // namespace profile_train::trace::native
