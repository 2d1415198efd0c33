// Timeline export as Chrome-trace JSON (the "JSON Object Format" that Perfetto UI and chrome://tracing
// open). Streamed: memory stays flat for any trace size. Owner: report component.
//
// Layout: CPU events keep their process/thread ids; GPU device d becomes process kGpuPidBase + d with one
// thread per stream (GPU annotations on a separate thread per stream, since they overlap kernels without
// nesting). Timestamps are microseconds (3 decimals = ns precision) relative to the earliest event, so that
// epoch-based clocks keep full precision in a double; the offset is in otherData.base_time_ns.
#include <algorithm>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "profile_train/common/atomic_file.h"
#include "profile_train/report/escape.h"
#include "profile_train/report/writers.h"

namespace profile_train::report {
namespace {

using trace::Category;
using trace::Event;

constexpr int64_t kGpuPidBase = 1000000000;        // well above any OS pid
constexpr int64_t kAnnotationTidBase = 1000000000; // GPU annotation thread = this + stream

class Sink {
 public:
  explicit Sink(AtomicFile& out) : out_(out) { buf_.reserve(1 << 20); }
  std::string& buf() { return buf_; }
  void maybe_flush() {
    if (buf_.size() >= (1 << 20)) flush();
  }
  void flush() {
    out_.write(buf_);
    buf_.clear();
  }
  // Starts a new element of the traceEvents array.
  void begin_event() {
    buf_ += first_ ? "\n" : ",\n";
    first_ = false;
  }

 private:
  AtomicFile& out_;
  std::string buf_;
  bool first_ = true;
};

void append_int(std::string& s, int64_t v) { s += std::to_string(v); }

// Microseconds with 3 decimals from a nanosecond offset; exact integer arithmetic, no rounding drift.
void append_us(std::string& s, int64_t ns) {
  if (ns < 0) {
    s += '-';
    ns = -ns;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld.%03lld", static_cast<long long>(ns / 1000), static_cast<long long>(ns % 1000));
  s += buf;
}

int64_t out_pid(const Event& e) { return e.is_gpu ? kGpuPidBase + (e.device >= 0 ? e.device : e.pid) : e.pid; }
int64_t out_tid(const Event& e) {
  return e.is_gpu && e.cat == Category::kGpuAnnotation ? kAnnotationTidBase + e.tid : e.tid;
}

void metadata(Sink& sink, const char* name, int64_t pid, const int64_t* tid, const std::string& key,
              const std::string& value) {
  sink.begin_event();
  std::string& b = sink.buf();
  b += "{\"ph\":\"M\",\"name\":\"";
  b += name;
  b += "\",\"pid\":";
  append_int(b, pid);
  if (tid) {
    b += ",\"tid\":";
    append_int(b, *tid);
  }
  b += ",\"args\":{";
  detail::append_json_string(b, key);
  b += ':';
  b += value;
  b += "}}";
}

std::string json_str(const std::string& s) {
  std::string out;
  detail::append_json_string(out, s);
  return out;
}

}  // namespace

Status write_chrome_trace(const trace::Trace& trace, const std::filesystem::path& path) {
  auto file = AtomicFile::create(path);
  if (!file.ok()) return file.status();
  AtomicFile& out = *file;
  Sink sink(out);

  int64_t base = 0;
  bool any = false;
  for (const auto& e : trace.events) {
    if (!any || e.start_ns < base) base = e.start_ns;
    any = true;
  }
  for (const auto& m : trace.memory) {
    if (!any || m.ts_ns < base) base = m.ts_ns;
    any = true;
  }

  sink.buf() += "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"producer\":\"profile-train\",\"base_time_ns\":";
  append_int(sink.buf(), base);
  sink.buf() += ",\"source_format\":";
  sink.buf() += json_str(trace.meta.format);
  sink.buf() += "},\"traceEvents\":[";

  // Track metadata: process / thread names and a sort order that puts the training process first and GPUs
  // after the CPU processes.
  std::set<int64_t> cpu_pids, gpu_devices;
  std::set<std::pair<int64_t, int64_t>> cpu_threads, gpu_threads;
  for (const auto& e : trace.events) {
    if (e.is_gpu) {
      gpu_devices.insert(e.device >= 0 ? e.device : e.pid);
      gpu_threads.insert({out_pid(e), out_tid(e)});
    } else {
      cpu_pids.insert(e.pid);
      cpu_threads.insert({e.pid, e.tid});
    }
  }
  for (int64_t pid : cpu_pids) {
    auto it = trace.meta.process_names.find(pid);
    std::string name = it != trace.meta.process_names.end() && !it->second.empty() ? it->second
                                                                                    : "process " + std::to_string(pid);
    if (pid == trace.meta.main_pid) name += " (training loop)";
    metadata(sink, "process_name", pid, nullptr, "name", json_str(name));
    metadata(sink, "process_sort_index", pid, nullptr, "sort_index", pid == trace.meta.main_pid ? "0" : "1");
  }
  for (const auto& [pid, tid] : cpu_threads) {
    auto it = trace.meta.thread_names.find({pid, tid});
    const std::string tid_text = std::to_string(tid);
    std::string name = "thread " + tid_text;
    if (it != trace.meta.thread_names.end() && !it->second.empty())
      name = it->second.find(tid_text) != std::string::npos ? it->second : it->second + " (" + tid_text + ")";
    metadata(sink, "thread_name", pid, &tid, "name", json_str(name));
  }
  for (int64_t d : gpu_devices) {
    std::string name = "GPU " + std::to_string(d);
    if (const auto* dev = trace.device(static_cast<int32_t>(d)); dev && !dev->name.empty()) name += " \xC2\xB7 " + dev->name;
    metadata(sink, "process_name", kGpuPidBase + d, nullptr, "name", json_str(name));
    metadata(sink, "process_sort_index", kGpuPidBase + d, nullptr, "sort_index", std::to_string(10 + d));
  }
  for (const auto& [pid, tid] : gpu_threads) {
    const std::string name = tid >= kAnnotationTidBase ? "stream " + std::to_string(tid - kAnnotationTidBase) + " annotations"
                                                       : "stream " + std::to_string(tid);
    metadata(sink, "thread_name", pid, &tid, "name", json_str(name));
    metadata(sink, "thread_sort_index", pid, &tid, "sort_index", std::to_string(tid >= kAnnotationTidBase ? tid - kAnnotationTidBase : tid));
  }

  // Launch -> GPU activity flows: the first GPU activity of each correlation id that has a runtime/driver
  // call on a CPU thread.
  std::unordered_map<int64_t, const Event*> launches;
  for (const auto& e : trace.events)
    if (!e.is_gpu && e.correlation >= 0 && (e.cat == Category::kRuntime || e.cat == Category::kDriver))
      launches.emplace(e.correlation, &e);
  std::unordered_map<int64_t, bool> flow_done;

  std::string& b = sink.buf();
  // One flow event: `head` ends with "\"id\":".
  auto flow_event = [&](const char* head, int64_t id, int64_t pid, int64_t tid, int64_t ts_ns) {
    sink.begin_event();
    b += head;
    append_int(b, id);
    b += ",\"pid\":";
    append_int(b, pid);
    b += ",\"tid\":";
    append_int(b, tid);
    b += ",\"ts\":";
    append_us(b, ts_ns - base);
    b += "}";
  };
  for (const auto& e : trace.events) {
    sink.begin_event();
    b += "{\"ph\":\"X\",\"name\":";
    detail::append_json_string(b, trace.name(e));
    b += ",\"cat\":\"";
    b += trace::to_string(e.cat);
    b += "\",\"pid\":";
    append_int(b, out_pid(e));
    b += ",\"tid\":";
    append_int(b, out_tid(e));
    b += ",\"ts\":";
    append_us(b, e.start_ns - base);
    b += ",\"dur\":";
    append_us(b, std::max<int64_t>(0, e.dur_ns));
    b += ",\"args\":{";
    bool first_arg = true;
    auto arg = [&](const char* k) {
      if (!first_arg) b += ',';
      first_arg = false;
      b += '"';
      b += k;
      b += "\":";
    };
    if (e.correlation >= 0) arg("correlation"), append_int(b, e.correlation);
    if (e.external_id >= 0) arg("external_id"), append_int(b, e.external_id);
    if (e.bytes >= 0) arg("bytes"), append_int(b, e.bytes);
    if (e.cat == Category::kMemcpy) {
      arg("kind"), b += '"', b += trace::to_string(e.copy_kind), b += '"';
      arg("src_memory"), b += '"', b += trace::to_string(e.src_mem), b += '"';
      arg("dst_memory"), b += '"', b += trace::to_string(e.dst_mem), b += '"';
      if (e.bytes > 0 && e.dur_ns > 0) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(e.bytes) / static_cast<double>(e.dur_ns));
        arg("bandwidth_gbps"), b += buf;
      }
    }
    if (e.cat == Category::kSync) arg("sync_kind"), b += '"', b += trace::to_string(e.sync_kind), b += '"';
    if (e.cat == Category::kKernel) {
      if (e.grid_blocks > 0) arg("grid_blocks"), append_int(b, static_cast<int64_t>(e.grid_blocks));
      if (e.block_threads > 0) arg("block_threads"), append_int(b, e.block_threads);
      if (e.registers_per_thread >= 0) arg("registers_per_thread"), append_int(b, e.registers_per_thread);
      if (e.shared_mem_bytes >= 0) arg("shared_memory_bytes"), append_int(b, e.shared_mem_bytes);
    }
    b += "}}";
    if (e.is_gpu && e.correlation >= 0 && e.cat != Category::kGpuAnnotation) {
      auto it = launches.find(e.correlation);
      if (it != launches.end() && !flow_done[e.correlation]) {
        flow_done[e.correlation] = true;
        const Event& l = *it->second;
        // Flow start inside the launch call (binds to it), finish bound to the enclosing GPU slice.
        flow_event("{\"ph\":\"s\",\"name\":\"launch\",\"cat\":\"ac2g\",\"id\":", e.correlation, l.pid, l.tid,
                   l.start_ns);
        flow_event("{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"launch\",\"cat\":\"ac2g\",\"id\":", e.correlation,
                   out_pid(e), out_tid(e), e.start_ns);
      }
    }
    sink.maybe_flush();
  }

  // Allocator samples as counters (only where the running total is known).
  for (const auto& m : trace.memory) {
    // Totals beyond 2^50 bytes are damage (analysis/memory.h, kMaxMemoryBytes): never drawn as a level.
    if (m.total_allocated < 0 || m.total_allocated > (int64_t{1} << 50)) continue;
    sink.begin_event();
    b += "{\"ph\":\"C\",\"name\":\"";
    b += m.device_type != 0 ? "GPU memory allocated" : "CPU memory allocated";  // CUDA 1, HIP 6
    b += "\",\"pid\":";
    append_int(b, m.device_type != 0 ? kGpuPidBase + std::max(0, m.device_id)
                                     : (trace.meta.main_pid >= 0 ? trace.meta.main_pid : 0));
    b += ",\"ts\":";
    append_us(b, m.ts_ns - base);
    b += ",\"args\":{\"MB\":";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", static_cast<double>(m.total_allocated) / 1e6);
    b += buf;
    b += "}}";
    sink.maybe_flush();
  }
  b += "\n]}\n";
  sink.flush();
  return out.commit();
}

}  // namespace profile_train::report
