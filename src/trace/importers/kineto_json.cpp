// Kineto / PyTorch profiler Chrome-trace JSON importer (owner: trace component).
//
// Streams the decompressed file through JsonReader: the top-level object is walked member by member, each
// element of `traceEvents` is parsed straight from the read buffer into a RawEvent (string_views, number
// text) and then committed into the model. Per event, nothing is allocated once the buffers are warm except
// new interned names. Every schema generation in ../shared/traces is handled (see MANIFEST.md §5):
// 2021 capitalised categories and string tids, `external id`, int or float µs timestamps with ns fractions,
// baseTimeNanoseconds, deviceProperties / computeProperties, distributedInfo, ROCm, cuda_sync, [memory]
// instants with or without cat. Bad events are counted in DataQuality, never fatal; only an unreadable
// container (empty, not JSON, truncated, no traceEvents array, too deep) is BadInput.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "importers/importers_internal.h"
#include "importers/json_reader.h"
#include "profile_train/common/utf8.h"

namespace profile_train::trace {
namespace {

using detail::FormatError;
using detail::JsonError;
using detail::JsonReader;
using detail::NumberText;
using detail::SourceError;

// What a `cat` value means for import.
enum class Cls : uint8_t {
  kCpuOp,
  kUserAnnotation,
  kGpuAnnotation,
  kPython,
  kRuntime,
  kDriver,
  kKernel,
  kMemcpy,
  kMemset,
  kSync,
  kOverhead,
  kCpuInstant,      // cpu_instant_event ([memory] and friends)
  kTraceSpan,       // "Trace": one span covering the capture; ignored
  kFlow,            // ac2g / async / async_cpu_to_gpu / async_gpu / fwdbwd
  kProfilerRange,   // cuda_profiler_range (CUPTI range profiler counters)
  kNone,            // no cat
  kUnknown,
};

Cls classify(std::string_view c, bool has_cat) {
  if (!has_cat) return Cls::kNone;
  // Ordered roughly by frequency in real traces.
  if (c == "cpu_op" || c == "Operator") return Cls::kCpuOp;
  if (c == "cuda_runtime" || c == "Runtime") return Cls::kRuntime;
  if (c == "kernel" || c == "Kernel") return Cls::kKernel;
  if (c == "ac2g" || c == "async" || c == "async_cpu_to_gpu" || c == "async_gpu" || c == "fwdbwd") return Cls::kFlow;
  if (c == "user_annotation") return Cls::kUserAnnotation;
  if (c == "cpu_instant_event") return Cls::kCpuInstant;
  if (c == "gpu_memcpy" || c == "Memcpy") return Cls::kMemcpy;
  if (c == "gpu_memset" || c == "Memset") return Cls::kMemset;
  if (c == "python_function") return Cls::kPython;
  if (c == "gpu_user_annotation") return Cls::kGpuAnnotation;
  if (c == "cuda_driver" || c == "Driver") return Cls::kDriver;
  if (c == "cuda_sync") return Cls::kSync;
  if (c == "overhead" || c == "Overhead") return Cls::kOverhead;
  if (c == "Trace") return Cls::kTraceSpan;
  if (c == "cuda_profiler_range") return Cls::kProfilerRange;
  return Cls::kUnknown;
}

Category to_category(Cls k) {
  switch (k) {
    case Cls::kCpuOp: return Category::kCpuOp;
    case Cls::kUserAnnotation: return Category::kUserAnnotation;
    case Cls::kGpuAnnotation: return Category::kGpuAnnotation;
    case Cls::kPython: return Category::kPythonFunction;
    case Cls::kRuntime: return Category::kRuntime;
    case Cls::kDriver: return Category::kDriver;
    case Cls::kKernel: return Category::kKernel;
    case Cls::kMemcpy: return Category::kMemcpy;
    case Cls::kMemset: return Category::kMemset;
    case Cls::kSync: return Category::kSync;
    case Cls::kOverhead: return Category::kOverhead;
    default: return Category::kOther;
  }
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// record_function ranges that PyTorch itself emits. 2021 traces (and some 2023 ones) file them under
// Operator/cpu_op; they are user annotations in the model so step and data-loading detection see one name.
bool is_builtin_record_function(std::string_view name) {
  return starts_with(name, "ProfilerStep#") || starts_with(name, "enumerate(DataLoader)#") ||
         starts_with(name, "Optimizer.step#") || starts_with(name, "Optimizer.zero_grad#");
}

MemoryKind memory_kind(std::string_view w) {
  if (w == "Pageable") return MemoryKind::kPageable;
  if (w == "Pinned") return MemoryKind::kPinned;
  if (w == "Device") return MemoryKind::kDevice;
  if (w == "Managed") return MemoryKind::kManaged;
  return MemoryKind::kUnknown;  // "Host" (ROCm: pageable or pinned unknown), "Array", ...
}

// "Memcpy HtoD (Pageable -> Device)" -> HtoD, pageable, device. "Memset (Device)" -> dst device.
void parse_copy_name(std::string_view name, CopyKind* kind, MemoryKind* src, MemoryKind* dst) {
  const size_t sp = name.find(' ');
  if (sp != std::string_view::npos) {
    std::string_view k = name.substr(sp + 1, 4);
    if (k == "HtoD") *kind = CopyKind::kHtoD;
    else if (k == "DtoH") *kind = CopyKind::kDtoH;
    else if (k == "DtoD") *kind = CopyKind::kDtoD;
    else if (k == "HtoH") *kind = CopyKind::kHtoH;
    else if (k == "PtoP") *kind = CopyKind::kPtoP;
  }
  const size_t open = name.find('(');
  const size_t close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open) return;
  std::string_view inside = name.substr(open + 1, close - open - 1);
  const size_t arrow = inside.find(" -> ");
  if (arrow == std::string_view::npos) {
    *dst = memory_kind(inside);
    return;
  }
  *src = memory_kind(inside.substr(0, arrow));
  *dst = memory_kind(inside.substr(arrow + 4));
}

SyncKind sync_kind(std::string_view s) {
  if (s == "Event Sync") return SyncKind::kEventSync;
  if (s == "Stream Wait Event") return SyncKind::kStreamWaitEvent;
  if (s == "Stream Sync") return SyncKind::kStreamSync;
  if (s == "Context Sync") return SyncKind::kContextSync;
  return SyncKind::kUnknown;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool parse_decimal(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Strings go into reports as JSON, which must be valid UTF-8: invalid sequences become U+FFFD.
// The all-ASCII fast path (almost every name) costs one pass over 8-byte words.
bool all_ascii(std::string_view s) {
  size_t i = 0;
  uint64_t acc = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    acc |= w;
  }
  for (; i < s.size(); ++i) acc |= static_cast<unsigned char>(s[i]);
  return (acc & 0x8080808080808080ull) == 0;
}

std::string_view utf8_safe(std::string_view s, std::string* scratch) {
  if (all_ascii(s) || is_valid_utf8(s)) return s;
  *scratch = to_valid_utf8(s);
  return *scratch;
}

struct IdField {
  bool present = false;
  bool is_str = false;
  int64_t num = 0;
  std::string_view str;
};

// One traceEvents element as read from the buffer (views valid until the next element is read).
struct RawEvent {
  std::string_view ph, cat, name;
  bool has_ph = false, has_cat = false, has_name = false;
  NumberText ts, dur;
  bool has_ts = false, has_dur = false;
  IdField pid, tid;
  bool malformed = false;
  bool not_object = false;
  int arg_issues = 0;
  // args
  int64_t external_id = -1, correlation = -1, device = -1, stream = -1, bytes = -1;
  bool has_device = false, has_stream = false;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  int grid_n = 0, block_n = 0;
  int64_t regs = -1, shmem = -1;
  double blocks_per_sm = -1, occupancy = -1;
  std::string_view sync_kind;
  bool has_sync_kind = false;
  int64_t mem_device_type = 0, mem_device_id = -1, mem_bytes = 0, total_allocated = -1, total_reserved = -1;
  bool has_mem_bytes = false;
  std::string_view meta_name;
  bool has_meta_name = false;
};

class KinetoParser {
 public:
  KinetoParser(ByteSource& src, const LoadOptions& opt, size_t chunk) : src_(src), r_(src, opt.max_json_depth, chunk, opt.max_json_value_bytes) {}

  StatusOr<Trace> run();

 private:
  void check_depth(int d) {
    if (d > r_.max_depth()) r_.fail("nesting deeper than " + std::to_string(r_.max_depth()) + " levels");
  }
  void parse_top_object();
  void parse_event_array(int holding_depth);
  void parse_event(int hd);
  void parse_args(int hd);
  void commit_event();
  void import_complete(const RawEvent& e, Cls cls);
  void import_instant(const RawEvent& e, Cls cls);
  void import_metadata(const RawEvent& e);
  void parse_top_member(std::string_view key, int hd);
  void parse_devices(int hd, bool compute_props, std::vector<DeviceInfo>* out);
  void parse_distributed(int hd);
  std::string scalar_text(int hd);  // number or string value as text; other types skipped ("")

  // Field readers: a value of the wrong type is skipped and recorded.
  void field_string(std::string_view* out, bool* has, int hd) {
    if (r_.peek() == '"') {
      *out = r_.read_string();
      *has = true;
    } else {
      r_.skip_value(hd);
      raw_.malformed = true;
    }
  }
  void field_number(NumberText* out, bool* has, int hd) {
    const char c = r_.peek();
    if (c == '-' || JsonReader::is_digit(c)) {
      *out = r_.read_number();
      *has = true;
    } else {
      r_.skip_value(hd);
      raw_.malformed = true;
    }
  }
  void field_id(IdField* f, int hd) {
    const char c = r_.peek();
    if (c == '"') {
      f->str = r_.read_string();
      f->is_str = true;
      f->present = true;
    } else if (c == '-' || JsonReader::is_digit(c)) {
      if (detail::number_to_i64(r_.read_number(), &f->num)) f->present = true;
      else raw_.malformed = true;
    } else {
      r_.skip_value(hd);
      raw_.malformed = true;
    }
  }
  void arg_int(int64_t* out, int hd, bool* has = nullptr) {
    const char c = r_.peek();
    if (c == '-' || JsonReader::is_digit(c)) {
      if (detail::number_to_i64(r_.read_number(), out)) {
        if (has != nullptr) *has = true;
      } else {
        ++raw_.arg_issues;
      }
    } else if (c == '"') {
      // ROCm writes some ids as strings ("stream": "0x0"); accept decimal or hex text, ignore other text.
      const std::string_view s = trim(r_.read_string());
      int64_t v = 0;
      bool ok = false;
      if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
        auto [ptr, ec] = std::from_chars(s.data() + 2, s.data() + s.size(), v, 16);
        ok = ec == std::errc() && ptr == s.data() + s.size();
      } else {
        ok = parse_decimal(s, &v);
      }
      if (ok) {
        *out = v;
        if (has != nullptr) *has = true;
      }
    } else {
      r_.skip_value(hd);
      if (c != 'n') ++raw_.arg_issues;  // null is a legitimate "unknown"
    }
  }
  void arg_double(double* out, int hd) {
    const char c = r_.peek();
    if (c == '-' || JsonReader::is_digit(c)) {
      if (!detail::number_to_double(r_.read_number(), out)) ++raw_.arg_issues;
    } else {
      r_.skip_value(hd);
      if (c != 'n') ++raw_.arg_issues;
    }
  }
  void arg_string(std::string_view* out, bool* has, int hd) {
    if (r_.peek() == '"') {
      *out = r_.read_string();
      *has = true;
    } else {
      r_.skip_value(hd);
      ++raw_.arg_issues;
    }
  }
  void arg_dim3(int64_t* dims, int* n, int hd) {
    if (r_.peek() != '[') {
      const char c = r_.peek();
      r_.skip_value(hd);
      if (c != '"' && c != 'n') ++raw_.arg_issues;  // Triton cpu_ops write "grid": "grid(100,)"
      return;
    }
    check_depth(hd + 1);
    r_.expect('[');
    if (r_.try_close(']')) return;
    int k = 0;
    do {
      const char c = r_.peek();
      if (k < 3 && (c == '-' || JsonReader::is_digit(c))) {
        int64_t v = 0;
        if (detail::number_to_i64(r_.read_number(), &v) && v >= 0) {
          dims[k++] = v;
        } else {
          ++raw_.arg_issues;
        }
      } else {
        r_.skip_value(hd + 1);
      }
    } while (r_.next_or_close(']'));
    *n = k;
  }

  int64_t resolve_id(const IdField& f);

  ByteSource& src_;
  JsonReader r_;
  Trace trace_;
  RawEvent raw_;
  bool saw_events_ = false;
  bool saw_device_props_ = false;
  bool empty_device_props_ = false;
  bool has_base_time_ = false;
  int64_t base_time_ns_ = 0;
  std::vector<DeviceInfo> devices_;
  std::map<std::string, int64_t, std::less<>> synthetic_ids_;
  std::vector<std::pair<int64_t, int64_t>> cpu_pid_counts_;  // (pid, events) of CPU ops, few entries
  int64_t step_pid_ = INT64_MIN;
  int64_t gpu_events_ = 0;
  // Tallies for notes (deterministic order when reported).
  int64_t arg_issue_events_ = 0;
  int64_t trace_spans_ = 0, other_instants_ = 0, counters_ = 0, begin_end_ = 0, unknown_phase_ = 0;
  int64_t profiler_ranges_ = 0, not_objects_ = 0;
  std::map<std::string, int64_t, std::less<>> unknown_cats_;
  bool saw_pytorch_span_ = false;
  std::string utf8_scratch_;  // reused by utf8_safe
};

int64_t KinetoParser::resolve_id(const IdField& f) {
  if (!f.present) return 0;
  if (!f.is_str) return f.num;
  std::string_view s = trim(f.str);
  int64_t v = 0;
  if (parse_decimal(s, &v)) return v;
  if (starts_with(s, "stream ") && parse_decimal(trim(s.substr(7)), &v)) return v;  // 2021 GPU tids
  // Other strings ("Spans", "Traces", "PyTorch Profiler"): stable synthetic ids far from real ones.
  auto it = synthetic_ids_.find(s);
  if (it != synthetic_ids_.end()) return it->second;
  const int64_t id = -(int64_t{1} << 40) - static_cast<int64_t>(synthetic_ids_.size());
  synthetic_ids_.emplace(std::string(s), id);
  return id;
}

void KinetoParser::parse_args(int hd) {
  if (r_.peek() != '{') {
    const char c = r_.peek();
    r_.skip_value(hd);
    if (c != 'n') ++raw_.arg_issues;
    return;
  }
  check_depth(hd + 1);
  r_.expect('{');
  if (r_.try_close('}')) return;
  const int vd = hd + 1;  // depth holding the arg values
  do {
    const std::string_view k = r_.read_string();
    r_.expect(':');
    switch (k.size()) {
      case 4:
        if (k == "grid") arg_dim3(raw_.grid, &raw_.grid_n, vd);
        else if (k == "name") arg_string(&raw_.meta_name, &raw_.has_meta_name, vd);
        else r_.skip_value(vd);
        break;
      case 5:
        if (k == "bytes") arg_int(&raw_.bytes, vd);
        else if (k == "Bytes") arg_int(&raw_.mem_bytes, vd, &raw_.has_mem_bytes);
        else if (k == "block") arg_dim3(raw_.block, &raw_.block_n, vd);
        else r_.skip_value(vd);
        break;
      case 6:
        if (k == "device") arg_int(&raw_.device, vd, &raw_.has_device);
        else if (k == "stream") arg_int(&raw_.stream, vd, &raw_.has_stream);
        else r_.skip_value(vd);
        break;
      case 9:
        if (k == "Device Id") arg_int(&raw_.mem_device_id, vd);
        else r_.skip_value(vd);
        break;
      case 11:
        if (k == "External id" || k == "external id") arg_int(&raw_.external_id, vd);
        else if (k == "correlation") arg_int(&raw_.correlation, vd);
        else if (k == "Device Type") arg_int(&raw_.mem_device_type, vd);
        else r_.skip_value(vd);
        break;
      case 13:
        if (k == "shared memory") arg_int(&raw_.shmem, vd);
        else if (k == "blocks per SM") arg_double(&raw_.blocks_per_sm, vd);
        else r_.skip_value(vd);
        break;
      case 14:
        if (k == "cuda_sync_kind") arg_string(&raw_.sync_kind, &raw_.has_sync_kind, vd);
        else if (k == "Total Reserved") arg_int(&raw_.total_reserved, vd);
        else r_.skip_value(vd);
        break;
      case 15:
        if (k == "Total Allocated") arg_int(&raw_.total_allocated, vd);
        else r_.skip_value(vd);
        break;
      case 20:
        if (k == "registers per thread") arg_int(&raw_.regs, vd);
        else r_.skip_value(vd);
        break;
      case 25:
        if (k == "est. achieved occupancy %") arg_double(&raw_.occupancy, vd);
        else r_.skip_value(vd);
        break;
      default:
        r_.skip_value(vd);
    }
  } while (r_.next_or_close('}'));
}

void KinetoParser::parse_event(int hd) {
  raw_ = RawEvent{};
  if (r_.peek() != '{') {
    r_.skip_value(hd);
    raw_.malformed = true;
    raw_.not_object = true;
    return;
  }
  check_depth(hd + 1);
  r_.expect('{');
  if (r_.try_close('}')) {
    raw_.malformed = true;
    return;
  }
  const int vd = hd + 1;
  do {
    const std::string_view k = r_.read_string();
    r_.expect(':');
    switch (k.size()) {
      case 2:
        if (k == "ph") field_string(&raw_.ph, &raw_.has_ph, vd);
        else if (k == "ts") field_number(&raw_.ts, &raw_.has_ts, vd);
        else r_.skip_value(vd);
        break;
      case 3:
        if (k == "cat") field_string(&raw_.cat, &raw_.has_cat, vd);
        else if (k == "pid") field_id(&raw_.pid, vd);
        else if (k == "tid") field_id(&raw_.tid, vd);
        else if (k == "dur") field_number(&raw_.dur, &raw_.has_dur, vd);
        else r_.skip_value(vd);
        break;
      case 4:
        if (k == "name") field_string(&raw_.name, &raw_.has_name, vd);
        else if (k == "args") parse_args(vd);
        else r_.skip_value(vd);
        break;
      default:
        r_.skip_value(vd);
    }
  } while (r_.next_or_close('}'));
}

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
  if (gpu) {
    // pid = device index, tid = stream; args win over the (sometimes string) pid/tid.
    const int64_t dev = e.has_device ? e.device : resolve_id(e.pid);
    const int64_t stream = e.has_stream ? e.stream : resolve_id(e.tid);
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
  trace_.events.push_back(ev);
  ++trace_.quality.events_imported;
}

void KinetoParser::import_instant(const RawEvent& e, Cls cls) {
  if (e.name == "[memory]") {
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
    trace_.memory.push_back(m);
    ++trace_.quality.events_imported;
    return;
  }
  // Kineto's global markers ("Iteration Start: PyTorch Profiler", "Record Window End") are expected and
  // carry nothing the analyses use; other instants are counted so a note can say they were dropped.
  (void)cls;
  if (!starts_with(e.name, "Iteration Start: ") && e.name != "Record Window End") ++other_instants_;
}

void KinetoParser::import_metadata(const RawEvent& e) {
  if (!e.has_meta_name) return;
  if (e.name == "process_name") {
    trace_.meta.process_names[resolve_id(e.pid)] = std::string(utf8_safe(trim(e.meta_name), &utf8_scratch_));
  } else if (e.name == "thread_name") {
    trace_.meta.thread_names[{resolve_id(e.pid), resolve_id(e.tid)}] =
        std::string(utf8_safe(trim(e.meta_name), &utf8_scratch_));
  }
}

std::string KinetoParser::scalar_text(int hd) {
  const char c = r_.peek();
  if (c == '"') return std::string(utf8_safe(r_.read_string(), &utf8_scratch_));
  if (c == '-' || JsonReader::is_digit(c)) return std::string(r_.read_number().text);
  r_.skip_value(hd);
  return {};
}

void KinetoParser::parse_devices(int hd, bool compute_props, std::vector<DeviceInfo>* out) {
  if (r_.peek() != '[') {
    r_.skip_value(hd);
    trace_.quality.notes.push_back(std::string(compute_props ? "computeProperties" : "deviceProperties") +
                                   " is not a list; ignored");
    return;
  }
  check_depth(hd + 1);
  r_.expect('[');
  if (r_.try_close(']')) return;
  do {
    if (r_.peek() != '{') {
      r_.skip_value(hd + 1);
      continue;
    }
    check_depth(hd + 2);
    r_.expect('{');
    DeviceInfo d;
    d.id = static_cast<int32_t>(out->size());
    bool amd_keys = false;
    int64_t warp = -1;
    if (!r_.try_close('}')) {
      do {
        const std::string k(r_.read_string());
        r_.expect(':');
        if (k == "name") {
          if (r_.peek() == '"') d.name = std::string(utf8_safe(r_.read_string(), &utf8_scratch_));
          else r_.skip_value(hd + 2);
          continue;
        }
        const char c = r_.peek();
        if (!(c == '-' || JsonReader::is_digit(c))) {
          r_.skip_value(hd + 2);
          continue;
        }
        int64_t v = 0;
        if (!detail::number_to_i64(r_.read_number(), &v)) continue;
        const auto i32 = [](int64_t x) { return static_cast<int32_t>(std::clamp<int64_t>(x, -1, INT32_MAX)); };
        if (k == "id") d.id = i32(v);
        else if (k == "computeMajor" || k == "major") d.compute_major = i32(v);
        else if (k == "computeMinor" || k == "minor") d.compute_minor = i32(v);
        else if (k == "numSms" || k == "multiProcessorCount") d.num_sms = i32(v);
        else if (k == "maxThreadsPerMultiprocessor" || k == "maxThreadsPerMultiProcessor") d.max_threads_per_sm = i32(v);
        else if (k == "maxThreadsPerBlock") d.max_threads_per_block = i32(v);
        else if (k == "regsPerMultiprocessor") d.regs_per_sm = i32(v);
        else if (k == "sharedMemPerMultiprocessor") d.shared_mem_per_sm = v;
        else if (k == "maxSharedMemoryPerMultiProcessor") {
          d.shared_mem_per_sm = v;
          amd_keys = true;
        } else if (k == "totalGlobalMem") d.total_memory_bytes = v;
        else if (k == "warpSize") warp = v;
      } while (r_.next_or_close('}'));
    }
    const bool amd_name = d.name.find("AMD") != std::string::npos || d.name.find("Radeon") != std::string::npos ||
                          d.name.find("Instinct") != std::string::npos;
    if (amd_name || amd_keys || warp == 64) d.vendor = "amd";
    else if (!d.name.empty()) d.vendor = "nvidia";
    out->push_back(std::move(d));
  } while (r_.next_or_close(']'));
}

void KinetoParser::parse_distributed(int hd) {
  if (r_.peek() != '{') {
    r_.skip_value(hd);
    return;
  }
  check_depth(hd + 1);
  r_.expect('{');
  if (r_.try_close('}')) return;
  int32_t rank = -1, world = -1;
  std::string backend;
  do {
    const std::string_view k = r_.read_string();
    r_.expect(':');
    const char c = r_.peek();
    if ((k == "rank" || k == "world_size") && (c == '-' || JsonReader::is_digit(c))) {
      int64_t v = -1;
      if (detail::number_to_i64(r_.read_number(), &v) && v >= 0 && v <= INT32_MAX)
        (k == "rank" ? rank : world) = static_cast<int32_t>(v);
    } else if (k == "backend" && c == '"') {
      backend = std::string(utf8_safe(r_.read_string(), &utf8_scratch_));
    } else {
      r_.skip_value(hd + 1);
    }
  } while (r_.next_or_close('}'));
  trace_.meta.rank = rank;
  trace_.meta.world_size = world;
  trace_.meta.distributed_backend = backend;
}

// One top-level member other than traceEvents; `hd` is the depth holding its value (1).
void KinetoParser::parse_top_member(std::string_view key, int hd) {
  if (key == "deviceProperties" || key == "computeProperties") {
    std::vector<DeviceInfo> devs;
    parse_devices(hd, key == "computeProperties", &devs);
    saw_device_props_ = true;
    empty_device_props_ = devs.empty();
    devices_ = std::move(devs);
  } else if (key == "distributedInfo") {
    parse_distributed(hd);
  } else if (key == "baseTimeNanoseconds") {
    const char c = r_.peek();
    int64_t v = 0;
    if ((c == '-' || JsonReader::is_digit(c)) && detail::number_to_i64(r_.read_number(), &v)) {
      base_time_ns_ = v;
      has_base_time_ = true;
    } else {
      if (c != '-' && !JsonReader::is_digit(c)) r_.skip_value(hd);
      trace_.quality.notes.push_back("baseTimeNanoseconds is not an integer; ignored");
    }
  } else if (key == "schemaVersion") {
    trace_.meta.format_version = scalar_text(hd);
  } else if (key == "cupti_version" || key == "cuda_runtime_version" || key == "cuda_driver_version" ||
             key == "roctracer_version" || key == "hip_runtime_version" || key == "hip_driver_version") {
    std::string v = scalar_text(hd);
    if (!v.empty()) trace_.meta.versions[std::string(key)] = std::move(v);
  } else {
    // displayTimeUnit (a viewer hint: ts/dur are always µs), traceName, INFO/ERROR logs, run flags, ...
    r_.skip_value(hd);
  }
}

void KinetoParser::parse_event_array(int holding_depth) {
  // At '[' (already checked). `holding_depth` is the depth of the container holding the array.
  bool empty = false;
  r_.element([&] {
    check_depth(holding_depth + 1);
    r_.expect('[');
    empty = r_.try_close(']');
  });
  saw_events_ = true;
  if (empty) return;
  const int hd = holding_depth + 1;
  bool more = true;
  while (more) {
    r_.element([&] {
      parse_event(hd);
      more = r_.next_or_close(']');
    });
    commit_event();
  }
}

void KinetoParser::parse_top_object() {
  bool empty = false;
  r_.element([&] {
    r_.expect('{');
    empty = r_.try_close('}');
  });
  if (empty) return;
  bool more = true;
  while (more) {
    bool is_events = false;
    std::string key;
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
    if (is_events) parse_event_array(1);
    r_.element([&] { more = r_.next_or_close('}'); });
  }
}

StatusOr<Trace> KinetoParser::run() {
  const std::string& file = src_.name();
  try {
    int c = r_.peek_top();
    if (c == 0xEF) {  // UTF-8 byte order mark
      r_.element([&] { (void)r_.starts_with("\xEF\xBB\xBF"); });
      c = r_.peek_top();
    }
    if (c == JsonReader::kEof) return BadInput(file + ": empty file");
    if (c == '{') {
      parse_top_object();
      if (!saw_events_) return BadInput(file + ": no 'traceEvents' array (not a Kineto/Chrome trace)");
    } else if (c == '[') {
      parse_event_array(0);  // Chrome's bare-array form
    } else {
      return BadInput(file + ": not JSON (expected '{' or '[' at the start)");
    }
    if (r_.peek_top() != JsonReader::kEof) {
      return BadInput(file + ": invalid JSON at byte " + std::to_string(r_.offset()) +
                      ": unexpected data after the end of the top-level value");
    }
  } catch (const JsonError& e) {
    return BadInput(file + ": invalid JSON at byte " + std::to_string(e.offset) + ": " + e.what);
  } catch (const FormatError& e) {
    return BadInput(file + ": " + e.what);
  } catch (const SourceError& e) {
    return e.status;
  }

  Trace& t = trace_;
  t.meta.format = "kineto_json";
  t.meta.producer = saw_pytorch_span_ ? "PyTorch Profiler (Kineto)" : "Chrome trace JSON";
  if (has_base_time_) {
    // Timestamps were offsets from baseTimeNanoseconds (which Kineto writes after traceEvents).
    for (auto& ev : t.events) ev.start_ns += base_time_ns_;
    for (auto& m : t.memory) m.ts_ns += base_time_ns_;
    t.meta.base_time_ns = base_time_ns_;
  }
  int64_t negative_ts = 0;
  for (const auto& ev : t.events) negative_ts += ev.start_ns < 0;
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
  t.finalize();
  return std::move(trace_);
}

bool sniff_json(std::string_view head) {
  size_t i = 0;
  if (head.substr(0, 3) == "\xEF\xBB\xBF") i = 3;
  while (i < head.size() && JsonReader::is_ws(head[i])) ++i;
  return i < head.size() && (head[i] == '{' || head[i] == '[');
}

}  // namespace

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
