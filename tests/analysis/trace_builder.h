// A tiny fluent builder of trace::Trace for "trace in, expectation out" tests. Times are given in
// microseconds (double) and stored as integer nanoseconds. Header-only; other components' tests may use it.
//
//   auto t = TraceBuilder()
//       .device(0, "NVIDIA H100", 132)
//       .annotation("ProfilerStep#1", 0, 100)
//       .runtime("cudaLaunchKernel", 5, 2, /*corr=*/1)
//       .kernel("sgemm_128x64", 10, 50, /*corr=*/1)
//       .build();
#pragma once

#include <cmath>
#include <string>
#include <utility>

#include "profile_train/trace/model.h"

namespace profile_train::testing {

class TraceBuilder {
 public:
  static constexpr int64_t kPid = 100;   // the training process
  static constexpr int64_t kTid = 1;     // its main thread
  static constexpr int64_t kStream = 7;

  static trace::TimeNs ns(double us) { return static_cast<trace::TimeNs>(std::llround(us * 1000.0)); }

  TraceBuilder& device(int32_t id, std::string name = "Test GPU", int32_t num_sms = 80,
                       int64_t memory_bytes = int64_t{32} << 30) {
    trace::DeviceInfo d;
    d.id = id;
    d.name = std::move(name);
    d.vendor = "nvidia";
    d.compute_major = 8;
    d.compute_minor = 0;
    d.num_sms = num_sms;
    d.max_threads_per_sm = 2048;
    d.total_memory_bytes = memory_bytes;
    t_.devices.push_back(d);
    return *this;
  }

  // Host-side ranges.
  TraceBuilder& cpu_op(const std::string& name, double start_us, double dur_us, int64_t tid = kTid,
                       int64_t external_id = -1) {
    auto& e = add(name, trace::Category::kCpuOp, start_us, dur_us, kPid, tid);
    e.external_id = external_id;
    return *this;
  }
  TraceBuilder& annotation(const std::string& name, double start_us, double dur_us, int64_t tid = kTid) {
    add(name, trace::Category::kUserAnnotation, start_us, dur_us, kPid, tid);
    return *this;
  }
  TraceBuilder& python(const std::string& name, double start_us, double dur_us, int64_t tid = kTid) {
    add(name, trace::Category::kPythonFunction, start_us, dur_us, kPid, tid);
    return *this;
  }
  TraceBuilder& runtime(const std::string& name, double start_us, double dur_us, int64_t correlation = -1,
                        int64_t tid = kTid, int64_t external_id = -1) {
    auto& e = add(name, trace::Category::kRuntime, start_us, dur_us, kPid, tid);
    e.correlation = correlation;
    e.external_id = external_id;
    return *this;
  }

  // GPU activities (pid = device, tid = stream).
  TraceBuilder& kernel(const std::string& name, double start_us, double dur_us, int64_t correlation = -1,
                       int64_t stream = kStream, int32_t dev = 0) {
    auto& e = add_gpu(name, trace::Category::kKernel, start_us, dur_us, correlation, stream, dev);
    (void)e;
    return *this;
  }
  // Sets launch configuration / occupancy on the last added event.
  TraceBuilder& launch_config(uint64_t grid_blocks, uint32_t block_threads, float blocks_per_sm = -1.f,
                              float occupancy_pct = -1.f) {
    auto& e = t_.events.back();
    e.grid_blocks = grid_blocks;
    e.block_threads = block_threads;
    e.blocks_per_sm = blocks_per_sm;
    e.occupancy_pct = occupancy_pct;
    return *this;
  }
  TraceBuilder& external_id(int64_t id) {
    t_.events.back().external_id = id;
    return *this;
  }
  TraceBuilder& memcpy(trace::CopyKind kind, trace::MemoryKind src, trace::MemoryKind dst, double start_us,
                       double dur_us, int64_t bytes, int64_t correlation = -1, int64_t stream = kStream) {
    std::string name = std::string("Memcpy ") + trace::to_string(kind);
    auto& e = add_gpu(name, trace::Category::kMemcpy, start_us, dur_us, correlation, stream, 0);
    e.copy_kind = kind;
    e.src_mem = src;
    e.dst_mem = dst;
    e.bytes = bytes;
    return *this;
  }
  TraceBuilder& memset(double start_us, double dur_us, int64_t bytes, int64_t correlation = -1) {
    auto& e = add_gpu("Memset (Device)", trace::Category::kMemset, start_us, dur_us, correlation, kStream, 0);
    e.bytes = bytes;
    e.dst_mem = trace::MemoryKind::kDevice;
    return *this;
  }
  TraceBuilder& gpu_annotation(const std::string& name, double start_us, double dur_us) {
    add_gpu(name, trace::Category::kGpuAnnotation, start_us, dur_us, -1, kStream, 0);
    return *this;
  }
  TraceBuilder& memory_sample(double ts_us, int64_t delta, int64_t total_allocated, int32_t dev = 0) {
    trace::MemorySample m;
    m.ts_ns = ns(ts_us);
    m.device_type = 1;
    m.device_id = dev;
    m.bytes_delta = delta;
    m.total_allocated = total_allocated;
    t_.memory.push_back(m);
    return *this;
  }
  TraceBuilder& fact(const std::string& group, const std::string& key, nlohmann::json value) {
    t_.facts[group][key] = std::move(value);
    return *this;
  }
  TraceBuilder& format(const std::string& f) {
    t_.meta.format = f;
    t_.meta.steps_from_capture = f == "native";  // as the native importer sets it
    return *this;
  }
  trace::Trace& raw() { return t_; }

  trace::Trace build() {
    t_.quality.events_total = t_.quality.events_imported = static_cast<int64_t>(t_.events.size());
    t_.finalize();
    return std::move(t_);
  }

 private:
  trace::Event& add(const std::string& name, trace::Category cat, double start_us, double dur_us, int64_t pid,
                    int64_t tid) {
    trace::Event e;
    e.name = t_.strings.intern(name);
    e.cat = cat;
    e.start_ns = ns(start_us);
    e.dur_ns = ns(dur_us);
    e.pid = pid;
    e.tid = tid;
    t_.events.push_back(e);
    return t_.events.back();
  }
  trace::Event& add_gpu(const std::string& name, trace::Category cat, double start_us, double dur_us,
                        int64_t correlation, int64_t stream, int32_t dev) {
    auto& e = add(name, cat, start_us, dur_us, dev, stream);
    e.is_gpu = true;
    e.device = dev;
    e.correlation = correlation;
    return e;
  }

  trace::Trace t_;
};

}  // namespace profile_train::testing
