// Kineto / PyTorch profiler Chrome-trace JSON importer (owner: trace component).
//
// Streams the decompressed file through JsonReader: the top-level object is walked member by member, each
// element of `traceEvents` is parsed straight from the read buffer into a RawEvent (kineto_event_reader.cpp)
// and then committed into the model here. Per event, nothing is allocated once the buffers are warm except
// new interned names. Every schema generation from 2021 on is handled: 2021 capitalised categories and
// string tids, `external id`, int or float µs timestamps with ns fractions, baseTimeNanoseconds,
// deviceProperties / computeProperties, distributedInfo, ROCm, cuda_sync, [memory] instants with or without
// cat. Bad events are counted in DataQuality, never fatal; only an unreadable container (empty, not JSON,
// truncated, no traceEvents array, too deep) is BadInput.
#include <algorithm>
#include <cmath>

#include "importers/importers_internal.h"
#include "kineto/kineto_parser.h"
#include "profile_train/common/huge_pages.h"

namespace profile_train::trace {
namespace kineto {

void KinetoParser::commit_event() {
  const RawEvent& e = raw_;
  ++trace_.quality.events_total;
  if (e.not_object) ++not_objects_;
  if (e.malformed || !e.has_ph || e.ph.empty()) {
    ++trace_.quality.malformed_events;
    return;
  }
  if (e.arg_issues > 0) ++arg_issue_events_;
  const Cls cls = classify(e.cat, e.has_cat);
  switch (e.ph[0]) {
    case 'X':
      import_complete(e, cls);
      return;
    case 's':
    case 'f':
    case 't':
      ++trace_.quality.flow_events_skipped;
      return;
    case 'i':
    case 'I':
      import_instant(e, cls);
      return;
    case 'M':
      import_metadata(e);
      return;
    case 'C':
      ++counters_;
      return;
    case 'B':
    case 'E':
      ++begin_end_;
      return;
    default:
      ++unknown_phase_;
      return;
  }
}

void KinetoParser::import_complete(const RawEvent& e, Cls cls) {
  Event ev;
  if (!e.has_ts || !e.has_dur || !detail::us_text_to_ns(e.ts, &ev.start_ns) ||
      !detail::us_text_to_ns(e.dur, &ev.dur_ns)) {
    ++trace_.quality.malformed_events;
    return;
  }
  if (ev.dur_ns < 0) {
    ++trace_.quality.negative_durations;
    ev.dur_ns = 0;
  }
  switch (cls) {
    case Cls::kTraceSpan:
      ++trace_spans_;
      if (starts_with(e.name, "PyTorch Profiler")) saw_pytorch_span_ = true;
      return;
    case Cls::kFlow:
      ++trace_.quality.flow_events_skipped;
      return;
    case Cls::kProfilerRange: ++profiler_ranges_; break;
    case Cls::kUnknown:
    case Cls::kNone: {
      ++trace_.quality.unknown_categories;
      const std::string_view key = e.has_cat ? utf8_safe(e.cat, &utf8_scratch_) : std::string_view("(no cat)");
      auto it = unknown_cats_.find(key);
      if (it != unknown_cats_.end()) ++it->second;
      else if (unknown_cats_.size() < 64) unknown_cats_.emplace(std::string(key), 1);
      break;
    }
    default: break;
  }
  ev.cat = to_category(cls);
  ev.name = trace_.strings.intern(utf8_safe(e.name, &utf8_scratch_));
  ev.correlation = e.correlation;
  ev.external_id = e.external_id;
  const bool gpu = cls == Cls::kKernel || cls == Cls::kMemcpy || cls == Cls::kMemset || cls == Cls::kSync ||
                   cls == Cls::kGpuAnnotation;
  if (e.has_coll) ev.coll = intern_collective(e.coll);
  if (gpu) {
    // pid = device index, tid = stream; args win over the (sometimes string) pid/tid.
    const int64_t dev = e.has_device ? note_numeric_id(e.device) : resolve_id(e.pid);
    const int64_t stream = e.has_stream ? note_numeric_id(e.stream) : resolve_id(e.tid);
    ev.is_gpu = true;
    ev.pid = dev;
    ev.tid = stream;
    ev.device = (dev >= 0 && dev <= INT32_MAX) ? static_cast<int32_t>(dev) : -1;
    ++gpu_events_;
    if (cls == Cls::kKernel) {
      if (e.grid_n > 0) {
        uint64_t g = 1;
        for (int i = 0; i < e.grid_n; ++i) g *= static_cast<uint64_t>(e.grid[i]);
        ev.grid_blocks = g;
      }
      if (e.block_n > 0) {
        uint64_t b = 1;
        for (int i = 0; i < e.block_n; ++i) b *= static_cast<uint64_t>(e.block[i]);
        ev.block_threads = b > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(b);
      }
      if (e.regs >= 0 && e.regs <= INT32_MAX) ev.registers_per_thread = static_cast<int32_t>(e.regs);
      if (e.shmem >= 0 && e.shmem <= INT32_MAX) ev.shared_mem_bytes = static_cast<int32_t>(e.shmem);
      if (e.blocks_per_sm >= 0) ev.blocks_per_sm = static_cast<float>(e.blocks_per_sm);
      if (e.occupancy >= 0) ev.occupancy_pct = static_cast<float>(e.occupancy);
      ev.collective = e.collective;
    } else if (cls == Cls::kMemcpy || cls == Cls::kMemset) {
      ev.bytes = e.bytes;
      parse_copy_name(e.name, &ev.copy_kind, &ev.src_mem, &ev.dst_mem);
      if (cls == Cls::kMemset) ev.copy_kind = CopyKind::kUnknown;
    } else if (cls == Cls::kSync) {
      ev.sync_kind = sync_kind(e.has_sync_kind ? e.sync_kind : e.name);
    }
  } else {
    ev.pid = resolve_id(e.pid);
    ev.tid = resolve_id(e.tid);
    if (e.has_input_dims || e.has_input_types || e.has_concrete_inputs) ev.inputs = intern_inputs(e);
    if (cls == Cls::kCpuOp && is_builtin_record_function(e.name)) ev.cat = Category::kUserAnnotation;
    if (ev.cat == Category::kCpuOp || ev.cat == Category::kUserAnnotation) {
      if (step_pid_ == INT64_MIN && starts_with(e.name, "ProfilerStep#")) step_pid_ = ev.pid;
      bool found = false;
      for (auto& pc : cpu_pid_counts_) {
        if (pc.first == ev.pid) {
          ++pc.second;
          found = true;
          break;
        }
      }
      if (!found && cpu_pid_counts_.size() < 256) cpu_pid_counts_.emplace_back(ev.pid, 1);
    }
  }
  grow_huge(trace_.events);
  trace_.events.push_back(ev);
  ++trace_.quality.events_imported;
}

void KinetoParser::import_instant(const RawEvent& e, Cls cls) {
  if (key_is(e.name, "[memory]")) {
    MemorySample m;
    if (!e.has_ts || !detail::us_text_to_ns(e.ts, &m.ts_ns) || !e.has_mem_bytes) {
      ++trace_.quality.malformed_events;
      return;
    }
    m.device_type = static_cast<int32_t>(std::clamp<int64_t>(e.mem_device_type, INT32_MIN, INT32_MAX));
    m.device_id = static_cast<int32_t>(std::clamp<int64_t>(e.mem_device_id, INT32_MIN, INT32_MAX));
    m.bytes_delta = e.mem_bytes;
    m.total_allocated = e.total_allocated;
    m.total_reserved = e.total_reserved;
    m.addr = e.mem_addr;
    m.pid = resolve_id(e.pid);
    m.tid = resolve_id(e.tid);
    grow_huge(trace_.memory);
    trace_.memory.push_back(m);
    ++trace_.quality.events_imported;
    return;
  }
  // Kineto's global markers ("Iteration Start: PyTorch Profiler", "Record Window End") are expected and
  // carry nothing the analyses use; other instants are counted so a note can say they were dropped.
  (void)cls;
  if (!starts_with(e.name, "Iteration Start: ") && e.name != "Record Window End") ++other_instants_;
}

void KinetoParser::parse_top_object() {
  bool empty = false;
  r_.element([&] {
    r_.expect('{');
    empty = r_.try_close('}');
  });
  if (!empty) parse_members();
}

// From a member's key to the object's '}'; returns early when the events stopped at the next part's start.
void KinetoParser::parse_members() {
  bool more = true;
  while (more) {
    bool is_events = false;
    r_.element([&] {
      const std::string_view k = r_.read_string();
      r_.expect(':');
      if (k == "traceEvents") {
        const char c = r_.peek();
        if (c != '[') throw FormatError{"'traceEvents' is not an array"};
        is_events = true;
        return;
      }
      parse_top_member(k, 1);  // commits its results; the separator is read in its own element below
    });
    if (is_events && !parse_event_array(1)) return;
    r_.element([&] { more = r_.next_or_close('}'); });
  }
}

// After the events array's ']': the members that follow it.
void KinetoParser::finish_top_object() {
  bool more = false;
  r_.element([&] { more = r_.next_or_close('}'); });
  if (more) parse_members();
}

void KinetoParser::end_of_document() {
  if (r_.peek_top() != JsonReader::kEof)
    throw JsonError{r_.offset(), "unexpected data after the end of the top-level value"};
}

void KinetoParser::parse_document() {
  int c = r_.peek_top();
  if (c == 0xEF) {  // UTF-8 byte order mark
    r_.element([&] { (void)r_.starts_with("\xEF\xBB\xBF"); });
    c = r_.peek_top();
  }
  if (c == JsonReader::kEof) throw FormatError{"empty file"};
  if (c == '{') {
    parse_top_object();
    if (stopped_) return;
    if (!saw_events_) throw FormatError{"no 'traceEvents' array (not a Kineto/Chrome trace)"};
  } else if (c == '[') {
    if (!parse_event_array(0)) return;  // Chrome's bare-array form
  } else {
    throw FormatError{"not JSON (expected '{' or '[' at the start)"};
  }
  end_of_document();
}

// At the start of an event of the array (a part of the stream that starts there, or this parser where it
// stopped): the events to the array's end, the rest of the document, its end.
void KinetoParser::parse_tail() {
  stopped_ = false;
  sorted_ = false;
  saw_events_ = true;
  if (!parse_elements()) return;
  if (top_object_) finish_top_object();
  end_of_document();
}

StatusOr<Trace> KinetoParser::run() {
  Status st = guarded([&] { parse_document(); });
  Status joined = join_parts();  // the parts other threads parsed (when this parser started them)
  if (!st.ok()) return st;
  if (!joined.ok()) return joined;
  return finish();
}

Trace KinetoParser::finish() {
  Trace& t = trace_;
  t.meta.format = "kineto_json";
  t.meta.producer = saw_pytorch_span_ ? "PyTorch Profiler (Kineto)" : "Chrome trace JSON";
  if (has_base_time_) {
    // Timestamps were offsets from baseTimeNanoseconds (which Kineto writes after traceEvents).
    for (auto& ev : t.events) ev.start_ns += base_time_ns_;
    for (auto& m : t.memory) m.ts_ns += base_time_ns_;
    t.meta.base_time_ns = base_time_ns_;
  }
  int64_t negative_ts = 0, runtime_events = 0;  // one pass over the events for both
  for (const auto& ev : t.events) {
    negative_ts += ev.start_ns < 0;
    runtime_events += ev.cat == Category::kRuntime || ev.cat == Category::kDriver;
  }
  if (negative_ts > 0) {
    t.quality.clock_anomalies += negative_ts;
    t.quality.notes.push_back(std::to_string(negative_ts) + " events start before time 0 (clock anomaly)");
  }
  t.devices = std::move(devices_);
  if (t.devices.empty()) {
    t.quality.missing_device_properties = true;
    t.quality.notes.push_back(saw_device_props_ ? "deviceProperties is empty: GPU metrics that need SM counts are unavailable"
                                                : "no deviceProperties in the trace: GPU metrics that need SM counts are unavailable");
  }
  // What the capture traced: GPU activity or CUDA/HIP runtime calls show that ProfilerActivity.CUDA was on.
  using Traced = trace::TraceMeta::Traced;
  if (gpu_events_ > 0 || runtime_events > 0) {
    t.meta.gpu_traced = Traced::kYes;
    t.meta.traced = "Kineto CUDA activity: " + std::to_string(gpu_events_) + " GPU events, " +
                    std::to_string(runtime_events) + " runtime calls";
  } else if (saw_device_props_ && empty_device_props_) {
    t.meta.gpu_traced = Traced::kNo;
    t.meta.traced = "Kineto: no GPU in deviceProperties, no GPU or CUDA runtime events";
  } else {
    t.meta.traced = "Kineto: no GPU events and no CUDA runtime calls (the trace does not record whether "
                    "ProfilerActivity.CUDA was requested)";
  }
  if (saw_device_props_ && empty_device_props_ && gpu_events_ == 0) {
    t.meta.gpu_capture_attempted = false;
    t.meta.gpu_capture_status = "the profiler saw no GPU (empty deviceProperties)";
  } else if (gpu_events_ == 0) {
    t.meta.gpu_capture_status = profiler_ranges_ > 0 ? "CUPTI range-profiler mode: counters only, no GPU timeline"
                                                      : "no GPU activity in the trace";
  }
  if (step_pid_ != INT64_MIN) {
    t.meta.main_pid = step_pid_;
  } else if (!cpu_pid_counts_.empty()) {
    t.meta.main_pid = std::max_element(cpu_pid_counts_.begin(), cpu_pid_counts_.end(),
                                       [](const auto& a, const auto& b) { return a.second < b.second; })
                          ->first;
  }
  if (t.meta.format_version.empty()) t.quality.notes.push_back("no schemaVersion (trimmed or very old trace)");
  else if (t.meta.format_version != "1") t.quality.notes.push_back("schemaVersion " + t.meta.format_version + " is newer than the versions seen so far (1); read as 1");

  auto note_count = [&](int64_t n, const std::string& what) {
    if (n > 0) t.quality.notes.push_back(std::to_string(n) + " " + what);
  };
  note_count(not_objects_, "traceEvents elements are not objects (counted as malformed)");
  note_count(arg_issue_events_, "events have args of an unexpected type (those args ignored)");
  note_count(other_instants_, "instant events other than [memory] ignored");
  note_count(counters_, "counter (ph C) events ignored");
  note_count(begin_end_, "begin/end (ph B/E) events ignored (Kineto writes complete events)");
  note_count(unknown_phase_, "events with an unknown ph ignored");
  note_count(profiler_ranges_, "cuda_profiler_range events (CUPTI range-profiler counters) imported as 'other'");
  if (!unknown_cats_.empty()) {
    std::string s = "unknown categories imported as 'other':";
    for (const auto& [cat, n] : unknown_cats_) s += " " + cat + " (" + std::to_string(n) + ")";
    t.quality.notes.push_back(s);
  }
  if (!sorted_) t.finalize();  // the parts were each sorted and merged in finalize's order (join_parts)
  return std::move(trace_);
}

bool sniff_json(std::string_view head) {
  size_t i = 0;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < head.size() && JsonReader::is_ws(head[i])) ++i;
  return i < head.size() && (head[i] == '{' || head[i] == '[');
}

}  // namespace kineto

using kineto::KinetoParser;
using kineto::sniff_json;

Importer make_kineto_json_importer() {
  Importer imp;
  imp.name = "kineto_json";
  imp.sniff = sniff_json;
  imp.load_stream = [](ByteSource& src, const LoadOptions& options) -> StatusOr<Trace> {
    return load_kineto_json(src, options, size_t{4} << 20);
  };
  return imp;
}

StatusOr<Trace> load_kineto_json(ByteSource& source, const LoadOptions& options, size_t chunk_bytes) {
  KinetoParser parser(source, options, std::max<size_t>(chunk_bytes, 16));
  return parser.run();
}

}  // namespace profile_train::trace
