// The Kineto / PyTorch profiler Chrome-trace JSON importer's parser, shared by its files (not installed):
// kineto_event_reader.cpp reads one traceEvents element into a RawEvent, kineto_metadata.cpp the metadata,
// kineto_json.cpp walks the document and imports the events into the model; kineto_schema.h is the vocabulary.
#pragma once

#include <atomic>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "io/json_reader.h"
#include "kineto/kineto_schema.h"
#include "profile_train/common/utf8.h"
#include "profile_train/trace/importer.h"

namespace profile_train::trace::kineto {

using detail::FormatError;
using detail::JsonError;
using detail::JsonReader;
using detail::NumberText;
using detail::SourceError;

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

inline bool parse_decimal(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

// Strings go into reports as JSON, which must be valid UTF-8: invalid sequences become U+FFFD.
// The all-ASCII fast path (almost every name) costs one pass over 8-byte words.
inline bool all_ascii(std::string_view s) {
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

inline std::string_view utf8_safe(std::string_view s, std::string* scratch) {
  if (all_ascii(s) || is_valid_utf8(s)) return s;
  *scratch = to_valid_utf8(s);
  return *scratch;
}

// Ids made up for string pids/tids ("Spans", "Traces"): kSyntheticIdBase, kSyntheticIdBase - 1, ...
inline constexpr int64_t kSyntheticIdBase = -(int64_t{1} << 40);

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
  int64_t mem_device_type = 0, mem_device_id = -1, mem_bytes = 0, total_allocated = -1, total_reserved = -1,
          mem_addr = -1;
  bool has_mem_bytes = false;
  std::string_view meta_name;
  bool has_meta_name = false;
  bool collective = false;  // "Collective name" present (PyTorch >= 2.1 puts it on NCCL/RCCL kernels too)
  // The collective's args (trace::CollectiveArgs, strings interned as read); has_coll: any of them present.
  trace::CollectiveArgs coll;
  bool has_coll = false;
  // "Input Dims" / "Input type", rendered and interned.
  bool has_input_dims = false, has_input_types = false, has_concrete_inputs = false;
  StringId input_dims = 0, input_types = 0, concrete_inputs = 0;
};

// One part of a trace parsed by several threads (kineto_split.cpp): where it starts, published by the thread
// that parses it once it has found a point that looks like the start of an event, and whether to give up.
struct PartControl {
  static constexpr uint64_t kPending = UINT64_MAX;     // not looked for yet
  static constexpr uint64_t kAbsent = UINT64_MAX - 1;  // no such point: this part is not parsed
  std::atomic<uint64_t> start{kPending};  // notified when set
  std::atomic<bool> cancel{false};
  uint64_t scan_at = 0;  // where its thread looks from: the part before it waits there for `start`
};
struct Cancelled {};  // thrown inside a part's parser when its control says cancel

class KinetoParser {
 public:
  // `base`: the stream offset of `src`'s first byte (a part of the stream that starts at an event).
  KinetoParser(ByteSource& src, const LoadOptions& opt, size_t chunk, uint64_t base = 0);
  ~KinetoParser();
  KinetoParser(const KinetoParser&) = delete;
  KinetoParser& operator=(const KinetoParser&) = delete;

  StatusOr<Trace> run();

 private:
  // kineto_json.cpp: the whole document (the first part); the events from an event on, then the rest of the
  // document (a later part, or a part resumed after its neighbour could not be used); the end of the document.
  void parse_document();
  void parse_tail();
  void end_of_document();
  // Runs f, turning a parse error into the Status the importer returns (ok when f returns).
  template <typename F>
  Status guarded(F&& f);
  Trace finish();
  // kineto_split.cpp: parts parsed by other threads, then joined into this one.
  struct Parts;
  void start_parts();
  Status join_parts();
  bool at_boundary();
  void sort_part();  // finalize's order, for a merge when joined
  static void run_part(Parts& parts, size_t i);
  size_t joinable_prefix(const std::vector<KinetoParser*>& chain) const;
  void absorb(KinetoParser& part);

  void check_depth(int d) {
    if (d > r_.max_depth()) r_.fail_too_deep();
  }
  // kineto_json.cpp: the top-level walk and the events' import into the model.
  void parse_top_object();
  void parse_members();
  void finish_top_object();
  void commit_event();
  void import_complete(const RawEvent& e, Cls cls);
  void import_instant(const RawEvent& e, Cls cls);
  // kineto_event_reader.cpp: one traceEvents element into raw_. The array's readers return false when they
  // stopped at the start of the next part (stopped_).
  bool parse_event_array(int holding_depth);
  bool parse_elements();
  void parse_event(int hd);
  void parse_args(int hd);
  // kineto_metadata.cpp: metadata events and the top-level members other than traceEvents.
  void import_metadata(const RawEvent& e);
  void parse_top_member(std::string_view key, int hd);
  void parse_devices(int hd, bool compute_props, std::vector<DeviceInfo>* out);
  void parse_distributed(int hd);
  std::string scalar_text(int hd);  // number or string value as text; other types skipped ("")

  // Field readers (kineto_event_reader.cpp): a value of the wrong type is skipped and recorded.
  void field_string(std::string_view* out, bool* has, int hd);
  void field_number(NumberText* out, bool* has, int hd);
  void field_id(IdField* f, int hd);
  void arg_int(int64_t* out, int hd, bool* has = nullptr);
  void arg_double(double* out, int hd);
  void arg_string(std::string_view* out, bool* has, int hd);
  // A string or number value interned as text (collective args); marks raw_.has_coll.
  void arg_coll_text(StringId* out, int hd);
  void arg_coll_int(int64_t* out, int hd);
  void arg_dim3(int64_t* dims, int* n, int hd);
  void arg_inputs(StringId* out, bool* has, bool dims, int hd, int cache = -1);
  void render_inputs_list(std::string* out, bool dims, int hd);
  void append_inputs(std::string* out, std::string_view piece);
  uint32_t intern_inputs(const RawEvent& e);
  uint32_t intern_collective(const trace::CollectiveArgs& a);

  int64_t resolve_id(const IdField& f);
  int64_t note_numeric_id(int64_t v) {
    if (v <= kSyntheticIdBase) numeric_in_synthetic_range_ = true;
    return v;
  }

  ByteSource& src_;
  const LoadOptions& opt_;
  size_t chunk_;
  JsonReader r_;
  Trace trace_;
  // The events array: where its elements sit (depth), and whether it is a member of a top-level object.
  int events_hd_ = 0;
  bool top_object_ = false;
  // Parallel parse: this part's control and the next part's (null: parse to the end), whether this parser
  // stopped at the next part's start, the parts other threads parse (kineto_split.cpp).
  PartControl* self_ = nullptr;
  PartControl* next_ = nullptr;
  bool stopped_ = false;
  bool sorted_ = false;  // events and memory in finalize's order (sort_part; parsing more undoes it)
  std::unique_ptr<Parts> parts_;
  // Top-level members this parser read (a later part reads those after traceEvents: they win when joined).
  bool saw_schema_ = false, saw_distributed_ = false;
  // A numeric pid/tid/device/stream at or below kSyntheticIdBase (where ids for string pids are made up).
  bool numeric_in_synthetic_range_ = false;
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
  // The "Input Dims" / "Input type" list being rendered (capacity reused) and whether it was cut at
  // kMaxInputsText; the interned rendering of list texts seen before (dims, types); the index of each
  // (dims, types) pair in trace_.op_inputs.
  struct TextHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::string inputs_text_;
  bool inputs_cut_ = false;
  std::unordered_map<std::string, StringId, TextHash, std::equal_to<>> inputs_cache_[3];
  struct InputsKey {
    StringId dims, types, concrete;
    bool operator==(const InputsKey&) const = default;
  };
  struct InputsKeyHash {
    size_t operator()(const InputsKey& k) const {
      return std::hash<uint64_t>{}((uint64_t{k.dims} << 32 | k.types) ^ (uint64_t{k.concrete} * 0x9E3779B97F4A7C15ull));
    }
  };
  std::unordered_map<InputsKey, uint32_t, InputsKeyHash> inputs_index_;
  // The index of each distinct collective argument set in trace_.collectives.
  struct CollHash {
    size_t operator()(const trace::CollectiveArgs& a) const {
      uint64_t h = 0x9E3779B97F4A7C15ull;
      for (uint64_t v : {uint64_t{a.name}, uint64_t{a.dtype}, uint64_t{a.pg_name}, uint64_t{a.pg_desc},
                         uint64_t{a.pg_ranks}, uint64_t{a.in_split}, uint64_t{a.out_split},
                         static_cast<uint64_t>(a.in_nelems), static_cast<uint64_t>(a.out_nelems),
                         static_cast<uint64_t>(a.seq), static_cast<uint64_t>(a.group_size)})
        h = (h ^ v) * 0x100000001B3ull;
      return static_cast<size_t>(h);
    }
  };
  std::unordered_map<trace::CollectiveArgs, uint32_t, CollHash> coll_index_;
};

template <typename F>
inline Status KinetoParser::guarded(F&& f) {
  const std::string& file = src_.name();
  try {
    f();
  } catch (const JsonError& e) {
    return BadInput(file + ": invalid JSON at byte " + std::to_string(e.offset) + ": " + e.what);
  } catch (const FormatError& e) {
    return BadInput(file + ": " + e.what);
  } catch (const SourceError& e) {
    return e.status;
  }
  return Status();
}

}  // namespace profile_train::trace::kineto
