// Small synthetic traces for report tests ("trace in, expectation out"): a training-like step with a
// ProfilerStep annotation, CPU ops, launches and the GPU kernels/copies they start.
#pragma once

#include <cstdint>
#include <string>

#include "profile_train/trace/model.h"

namespace profile_train::report::testing {

struct Synth {
  trace::Trace t;
  int64_t next_corr = 1;

  trace::Event& add(trace::Category cat, const std::string& name, int64_t start, int64_t dur, int64_t pid,
                    int64_t tid, bool gpu = false) {
    trace::Event e;
    e.cat = cat;
    e.name = t.strings.intern(name);
    e.start_ns = start;
    e.dur_ns = dur;
    e.pid = pid;
    e.tid = tid;
    e.is_gpu = gpu;
    e.device = gpu ? static_cast<int32_t>(pid) : -1;
    t.events.push_back(e);
    return t.events.back();
  }
  // A runtime launch on (pid, tid) at `start` and the kernel it starts on device 0 stream 7 at `gpu_start`.
  void launch(const std::string& kernel, int64_t start, int64_t gpu_start, int64_t gpu_dur, int64_t pid = 100,
              int64_t tid = 101, trace::Category gpu_cat = trace::Category::kKernel) {
    const int64_t corr = next_corr++;
    add(trace::Category::kRuntime, gpu_cat == trace::Category::kKernel ? "cudaLaunchKernel" : "cudaMemcpyAsync",
        start, 4000, pid, tid)
        .correlation = corr;
    auto& g = add(gpu_cat, kernel, gpu_start, gpu_dur, 0, 7, true);
    g.correlation = corr;
    if (gpu_cat == trace::Category::kMemcpy) {
      g.bytes = 4 << 20;
      g.copy_kind = trace::CopyKind::kHtoD;
      g.src_mem = trace::MemoryKind::kPageable;
      g.dst_mem = trace::MemoryKind::kDevice;
    }
  }
};

// `steps` steps of `step_ns` starting at 1'000'000'000 ns, `kernels_per_step` kernels each; one kernel per
// step is named `odd_name` (used for escaping tests). Thread names and a device are set.
inline trace::Trace make_training_trace(int steps, int kernels_per_step, int64_t step_ns,
                                        const std::string& odd_name = "<script>alert(1)</script>") {
  Synth s;
  s.t.meta.format = "kineto_json";
  s.t.meta.main_pid = 100;
  s.t.meta.thread_names[{100, 101}] = "python <main>";
  s.t.meta.process_names[100] = "train.py";
  trace::DeviceInfo dev;
  dev.id = 0;
  dev.name = "Synthetic GPU";
  s.t.devices.push_back(dev);
  const int64_t t0 = 1000000000;
  for (int i = 0; i < steps; ++i) {
    const int64_t st = t0 + i * step_ns;
    s.add(trace::Category::kUserAnnotation, "ProfilerStep#" + std::to_string(i), st, step_ns - 1000, 100, 101);
    s.add(trace::Category::kUserAnnotation, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", st,
          step_ns / 4, 100, 101);
    s.launch("Memcpy HtoD (Pageable -> Device)", st + step_ns / 4 + 1000, st + step_ns / 4 + 5000, step_ns / 20, 100,
             101, trace::Category::kMemcpy);
    const int64_t body = st + step_ns / 3;
    const int64_t slot = (step_ns / 2) / std::max(1, kernels_per_step);
    s.add(trace::Category::kCpuOp, "aten::conv2d", body, slot * kernels_per_step, 100, 101);
    for (int k = 0; k < kernels_per_step; ++k) {
      const std::string name = k == 1 ? odd_name : "volta_sgemm_128x64_nn_" + std::to_string(k % 5);
      s.launch(name, body + k * slot, body + k * slot + 2000, std::max<int64_t>(500, slot * 3 / 4));
    }
  }
  trace::MemorySample m;
  m.device_type = 1;
  m.device_id = 0;
  m.ts_ns = t0 + 10;
  m.bytes_delta = 1 << 20;
  m.total_allocated = 1 << 20;
  s.t.memory.push_back(m);
  m.ts_ns = t0 + 20;
  m.total_allocated = -1;  // unknown total: not a counter sample
  s.t.memory.push_back(m);
  s.t.finalize();
  return std::move(s.t);
}

}  // namespace profile_train::report::testing
