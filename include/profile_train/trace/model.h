// The owned trace model. It does not know where its data came from: the Kineto JSON importer and the
// native-capture reader (the agent's files) both fill it, and every analyzer reads only this.
//
// Units: all times are integer nanoseconds on one clock per trace (absolute Unix-epoch ns when the source
// says so, otherwise whatever the source clock is; only differences are meaningful to analyzers).
// Ownership: a Trace owns all of its strings (interned in `strings`). Not thread-safe for mutation.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "profile_train/common/data_quality_counters.h"

namespace profile_train::trace {

using TimeNs = int64_t;
using StringId = uint32_t;

// Interned strings. Ids are dense and stable; id 0 is the empty string.
class StringTable {
 public:
  StringTable() { intern(""); }
  // Copies rebuild the index: the default copy would keep views into the source's storage.
  StringTable(const StringTable& other) : storage_(other.storage_) { rebuild_index(); }
  StringTable& operator=(const StringTable& other) {
    if (this != &other) {
      storage_ = other.storage_;
      rebuild_index();
    }
    return *this;
  }
  StringTable(StringTable&&) = default;  // deque moves keep element addresses
  StringTable& operator=(StringTable&&) = default;
  StringId intern(std::string_view s) {
    auto it = index_.find(s);
    if (it != index_.end()) return it->second;
    storage_.emplace_back(s);
    const auto id = static_cast<StringId>(storage_.size() - 1);
    index_.emplace(std::string_view(storage_.back()), id);
    return id;
  }
  const std::string& get(StringId id) const { return storage_.at(id); }
  size_t size() const { return storage_.size(); }

 private:
  void rebuild_index() {
    index_.clear();
    for (size_t i = 0; i < storage_.size(); ++i) index_.emplace(std::string_view(storage_[i]), static_cast<StringId>(i));
  }
  std::deque<std::string> storage_;  // deque: references stay valid as it grows
  std::unordered_map<std::string_view, StringId> index_;
};

// What an event is. Names follow modern Kineto categories; the native capture maps onto the same set.
enum class Category : uint8_t {
  kCpuOp,           // framework operator (aten op, autograd node)
  kUserAnnotation,  // record_function / NVTX range on a CPU thread (ProfilerStep#N, DataLoader, ...)
  kPythonFunction,  // Python frame (with_stack)
  kRuntime,         // CUDA/HIP runtime API call on a CPU thread
  kDriver,          // CUDA driver API call on a CPU thread
  kKernel,          // GPU kernel execution
  kMemcpy,          // GPU copy
  kMemset,          // GPU memset
  kSync,            // GPU-side synchronization record (cuda_sync / CUPTI synchronization)
  kGpuAnnotation,   // annotation projected on a GPU stream (ignored for step windows)
  kOverhead,        // profiler overhead spans
  kOther,
};

enum class CopyKind : uint8_t { kUnknown, kHtoD, kDtoH, kDtoD, kHtoH, kPtoP };
enum class MemoryKind : uint8_t { kUnknown, kPageable, kPinned, kDevice, kManaged };
enum class SyncKind : uint8_t { kUnknown, kEventSync, kStreamWaitEvent, kStreamSync, kContextSync };

const char* to_string(Category c);
const char* to_string(CopyKind k);
const char* to_string(MemoryKind k);
const char* to_string(SyncKind k);

// One duration event (instants have dur_ns == 0). Plain data, ~100 bytes.
struct Event {
  TimeNs start_ns = 0;
  TimeNs dur_ns = 0;
  int64_t pid = 0;           // CPU: OS process id; GPU: device index
  int64_t tid = 0;           // CPU: OS thread id;  GPU: stream id
  int64_t correlation = -1;  // runtime/driver call <-> GPU activity; -1 if none
  int64_t external_id = -1;  // cpu op <-> runtime call / GPU activity; -1 if none
  int64_t bytes = -1;        // memcpy / memset bytes; -1 if unknown
  StringId name = 0;
  Category cat = Category::kOther;
  CopyKind copy_kind = CopyKind::kUnknown;   // memcpy only
  MemoryKind src_mem = MemoryKind::kUnknown; // memcpy only
  MemoryKind dst_mem = MemoryKind::kUnknown; // memcpy / memset
  SyncKind sync_kind = SyncKind::kUnknown;   // kSync only
  bool is_gpu = false;       // true for kernel/memcpy/memset/sync/gpu-annotation (pid = device, tid = stream)
  bool collective = false;   // kernels: the source marked it a collective (Kineto's "Collective name" arg)
  int32_t device = -1;       // GPU events: device index (== pid); -1 otherwise
  // Kernel launch configuration; 0 / -1 when unknown.
  uint64_t grid_blocks = 0;        // gridX*gridY*gridZ
  uint32_t block_threads = 0;      // blockX*blockY*blockZ
  int32_t registers_per_thread = -1;
  int32_t shared_mem_bytes = -1;   // static + dynamic
  float blocks_per_sm = -1.f;      // as reported by the source, if any
  float occupancy_pct = -1.f;      // estimated achieved occupancy %, if reported
  uint32_t inputs = 0;             // CPU operators: index into Trace::op_inputs; 0 when none are recorded
  uint32_t coll = 0;               // collective args (kernels, CPU ops): index into Trace::collectives; 0 when none

  TimeNs end_ns() const { return start_ns + dur_ns; }
};

// What a CPU operator was called with, as the source recorded it (Kineto `record_shapes`: "Input Dims",
// "Input type"), in display form: dims "[[256, 1024], [1024, 4096], []]", types "[float, float, Scalar]"
// (one entry per input; "?" where the source wrote something other than a number / a string). Each text is
// at most kMaxInputsText bytes (cut at an entry boundary, ending in "..."), valid UTF-8. A StringId of 0
// (the empty string) means the source recorded no such list. `concrete`: Kineto's "Concrete Inputs", the values
// of scalar and scalar-list arguments ("['', '', '[2, 2]', '1']" rendered "[, , [2, 2], 1]": one entry per
// input, "" for tensors), which size a convolution's output and say whether attention is causal.
struct OpInputs {
  StringId dims = 0;
  StringId types = 0;
  StringId concrete = 0;
  bool operator==(const OpInputs&) const = default;
};
inline constexpr size_t kMaxInputsText = 512;

// A collective's arguments as the source recorded them (Kineto's record_param_comms / NCCL kernel args, PyTorch
// >= 2.1: "Collective name", "In msg nelems", "Out msg nelems", "dtype", "Group size", "Process Group Name"
// (older: the integer "Process Group ID", rendered as text), "Process Group Description", "Process Group Ranks",
// "In split size", "Out split size", "Seq"). Strings are interned (0: not recorded); numbers -1 when not recorded.
// Shared by the events that carry the same arguments (Event::coll); [0] = none.
struct CollectiveArgs {
  StringId name = 0;        // "allreduce", "_allgather_base", "wait", ... as written
  StringId dtype = 0;       // c10 ScalarType name: "Float", "BFloat16", "Long", "Byte", ...
  StringId pg_name = 0;     // "0", "default_pg"'s name; the integer "Process Group ID" as text
  StringId pg_desc = 0;     // "default_pg", "undefined", ...
  StringId pg_ranks = 0;    // "[0, 1]" as written
  StringId in_split = 0, out_split = 0;  // "[]", "[4, 4]" as written
  int64_t in_nelems = -1, out_nelems = -1;
  int64_t seq = -1;         // "Seq" (newer PyTorch): the collective's sequence number in its process group
  int32_t group_size = -1;
  bool operator==(const CollectiveArgs&) const = default;
};

// Allocator sample (PyTorch [memory] instants, CUPTI memory records).
struct MemorySample {
  TimeNs ts_ns = 0;
  int32_t device_type = 0;  // 0 = CPU, 1 = CUDA, other values as c10::DeviceType writes them (ROCm: 6 = HIP)
  int32_t device_id = -1;
  int64_t bytes_delta = 0;        // + allocation / - free
  int64_t total_allocated = -1;   // -1 if unknown (2021-06 Kineto and CUPTI records carry no running totals)
  int64_t total_reserved = -1;
  int64_t addr = -1;              // block address ("Addr"); -1 if unknown. Pairs a free with its allocation
  int64_t pid = -1, tid = -1;     // the thread that allocated / freed (-1 if unknown); places it in an operator
};

struct DeviceInfo {
  int32_t id = -1;
  std::string name;
  std::string vendor;             // "nvidia", "amd", "" if unknown
  int32_t compute_major = -1, compute_minor = -1;
  int32_t num_sms = -1;
  int32_t max_threads_per_sm = -1;
  int32_t max_threads_per_block = -1;
  int32_t regs_per_sm = -1;
  int64_t shared_mem_per_sm = -1;
  int64_t total_memory_bytes = -1;
};

// Counted data problems; never silent. Importers and readers increment these.
struct DataQuality {
  // events_total, malformed_events, clock_anomalies, ... (the list: common/data_quality_counters.h);
  // unmatched_correlations is completed by analysis (GPU activity without a runtime call, or vice versa).
  PT_DATA_QUALITY_COUNTERS(PT_DATA_QUALITY_DECLARE_COUNTER)
  int64_t agent_internal_errors = -1;  // native captures: exceptions the agent caught (-1: not a native capture)
  bool missing_device_properties = false;
  std::vector<std::string> notes;      // human-readable, deterministic order
};

struct TraceMeta {
  std::vector<std::string> source_files;
  std::string format;            // "kineto_json" | "native" | "nsys_sqlite" (for people: analyses read the hints)
  // A hint for the step detection: the ProfilerStep# ranges were written by profile-train's own capture (the
  // agent's NVTX ranges, the Python shim's steps: a native capture) rather than by the profiled program
  // (torch.profiler's step(): Kineto and other imports).
  bool steps_from_capture = false;
  std::string format_version;    // e.g. schemaVersion "1", native "1.0"
  std::string producer;          // e.g. "PyTorch Profiler", "profile-train agent 0.1"
  int64_t base_time_ns = 0;      // Kineto baseTimeNanoseconds, already applied to event times
  int32_t rank = -1, world_size = -1;
  std::string distributed_backend;
  int64_t main_pid = -1;         // process that ran the training loop, if known
  std::map<std::string, std::string> versions;  // cuda_runtime_version, cupti_version, torch, ...
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names;  // (pid, tid) -> name
  std::map<int64_t, std::string> process_names;
  int32_t parsed_in_parts = 1;   // threads whose parts of the file the model was joined from (importer detail)
  bool gpu_capture_attempted = true;     // false when the source could not record GPU activity at all
  std::string gpu_capture_status;        // why GPU activity is missing, if it is ("no CUDA driver", ...)
  // What the capture traced, as the source says it (absent is not zero: a kind the capture did not trace is
  // unknown, not "none happened"). kYes: GPU activity (kernels, copies) was traced, so none in the trace means
  // none ran; kNo: it was not traced; kUnknown: the source does not say (a Kineto trace without GPU or CUDA runtime
  // events does not record whether ProfilerActivity.CUDA was requested).
  enum class Traced : uint8_t { kUnknown, kYes, kNo };
  Traced gpu_traced = Traced::kUnknown;
  std::string traced;  // for people: "nsys -t: Cuda, NvtxEvents; tables: CUPTI_ACTIVITY_KIND_RUNTIME, ..."
};

struct Trace {
  StringTable strings;
  std::vector<Event> events;          // sorted by (start_ns, longer first) after finalize()
  // Distinct operator input signatures, shared by the events that name them (Event::inputs); [0] = none.
  std::vector<OpInputs> op_inputs = {OpInputs{}};
  // Distinct collective argument sets, shared by the events that carry them (Event::coll); [0] = none.
  std::vector<CollectiveArgs> collectives = {CollectiveArgs{}};
  std::vector<MemorySample> memory;   // sorted by ts after finalize()
  std::vector<DeviceInfo> devices;
  TraceMeta meta;
  DataQuality quality;
  // Configuration facts recorded by the capture (Python shim, workload) or inferred by importers.
  // A JSON object; keys are documented in reports/REPORT_FORMAT.md ("facts").
  nlohmann::json facts = nlohmann::json::object();

  const std::string& name(const Event& e) const { return strings.get(e.name); }
  // True when some operator has recorded inputs (a Kineto trace recorded with record_shapes=True).
  bool has_input_shapes() const { return op_inputs.size() > 1; }
  const DeviceInfo* device(int32_t id) const {
    for (const auto& d : devices)
      if (d.id == id) return &d;
    return nullptr;
  }
  // Sorts events and memory samples; call once after filling.
  void finalize();  // sort_events(events), sort_memory(memory)
};

// finalize's orders: events by start, then longer first, then input order (a stable sort); memory samples by
// time, then input order. An importer that parses parts on several threads sorts each part with them and merges.
void sort_events(std::vector<Event>& events);
void sort_memory(std::vector<MemorySample>& memory);
inline bool event_before(const Event& a, const Event& b) {
  return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.dur_ns > b.dur_ns);
}
inline bool memory_before(const MemorySample& a, const MemorySample& b) { return a.ts_ns < b.ts_ns; }

}  // namespace profile_train::trace
