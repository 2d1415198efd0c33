// Helpers shared by the fuzz targets: an in-memory file for readers that take a path, and a real
// report.json (the analysis of a small inline trace) to evaluate rules and diffs against.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "profile_train/analysis/analyze.h"
#include "profile_train/model/report_json.h"
#include "profile_train/trace/importer.h"

namespace model = profile_train::model;

namespace pt_fuzz {

// Replaces the content of one process-wide memfd with `data`; returns a path that opens it.
inline std::string as_file(const uint8_t* data, size_t size) {
  static const int fd = memfd_create("pt-fuzz-input", 0);
  if (fd < 0) __builtin_trap();
  if (ftruncate(fd, 0) != 0) __builtin_trap();
  if (size > 0 && pwrite(fd, data, size, 0) != static_cast<ssize_t>(size)) __builtin_trap();
  return "/proc/self/fd/" + std::to_string(fd);
}

// report.json of a one-step, data-loader-bound Kineto trace with one kernel.
inline const nlohmann::json& sample_report() {
  static const nlohmann::json report = [] {
    const std::string trace = R"({"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU", "totalGlobalMem": 1000000,
      "computeMajor": 8, "computeMinor": 0, "numSms": 80, "maxThreadsPerMultiprocessor": 2048}],
      "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 1000, "dur": 100},
      {"ph": "X", "cat": "user_annotation", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 1, "tid": 1, "ts": 1000, "dur": 40},
      {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1040, "dur": 2, "args": {"correlation": 7}},
      {"ph": "X", "cat": "kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": 7, "ts": 1043, "dur": 55,
       "args": {"device": 0, "stream": 7, "correlation": 7, "grid": [80, 1, 1], "block": [256, 1, 1]}}]})";
    auto t = profile_train::trace::load_trace_bytes(trace, "sample.json");
    if (!t.ok()) __builtin_trap();
    return model::to_json(profile_train::analysis::build_typed_report(*t));
  }();
  return report;
}

}  // namespace pt_fuzz
