// Internal to the Nsight Systems export reader (nsys_export.cpp: the driver, strings, devices, metadata;
// nsys_activity.cpp: the activity tables): the schema's table names, the GlobalId helpers, the name parsers and
// the Reader. Not part of the importer's API (nsys_importer.h).
#pragma once

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "nsys/nsys_importer.h"
#include "nsys/sqlite_db.h"

namespace profile_train::trace::nsys::detail {

constexpr const char* kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kDriverTable = "CUPTI_ACTIVITY_KIND_DRIVER";
constexpr const char* kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kNvtx = "NVTX_EVENTS";
constexpr const char* kOsrt = "OSRT_API";

inline int64_t pid_of(int64_t gid) { return (gid >> 24) & 0xFFFFFF; }
inline int64_t tid_of(int64_t gid) { return gid & 0xFFFFFF; }
// The pid and tid of a CPU-thread row from its globalTid in column `col` (0, 0 when NULL).
inline void set_thread(Event& e, const Stmt& row, int col) {
  e.pid = row.null(col) ? 0 : pid_of(row.i64(col));
  e.tid = row.null(col) ? 0 : tid_of(row.i64(col));
}
inline int64_t process_key(int64_t gid) { return gid >> 24; }  // host + process

inline bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// end - start, 0 and *negative set when it is below zero or does not fit (a hostile file's timestamps).
inline int64_t duration(int64_t start, int64_t end, int64_t* negative) {
  int64_t d = 0;
  if (__builtin_sub_overflow(end, start, &d) || d < 0) {
    ++*negative;
    return 0;
  }
  return d;
}
inline int64_t clamp_nonneg(int64_t v, int64_t hi) { return std::clamp<int64_t>(v, 0, hi); }

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (nsys names API calls with their version suffix).
inline std::string_view strip_version(std::string_view n) {
  const size_t v = n.rfind("_v");
  if (v == std::string_view::npos || v + 2 >= n.size()) return n;
  for (size_t i = v + 2; i < n.size(); ++i)
    if (n[i] < '0' || n[i] > '9') return n;
  return n.substr(0, v);
}

// Kind tables: from the export's ENUM_* tables by symbol name when it has them, else nsys's numbering (the
// same in every release that wrote no ENUM tables).
struct Kinds {
  std::unordered_map<int64_t, CopyKind> copy = {{1, CopyKind::kHtoD}, {2, CopyKind::kDtoH}, {3, CopyKind::kHtoD},
                                                {4, CopyKind::kDtoH}, {5, CopyKind::kDtoD}, {6, CopyKind::kDtoD},
                                                {7, CopyKind::kDtoD}, {8, CopyKind::kDtoD}, {9, CopyKind::kHtoH},
                                                {10, CopyKind::kPtoP}};
  std::unordered_map<int64_t, MemoryKind> mem = {{0, MemoryKind::kPageable}, {1, MemoryKind::kPinned},
                                                 {2, MemoryKind::kDevice},   {3, MemoryKind::kDevice},
                                                 {4, MemoryKind::kManaged},  {5, MemoryKind::kDevice},
                                                 {6, MemoryKind::kManaged}};
  std::unordered_map<int64_t, SyncKind> sync = {{1, SyncKind::kEventSync}, {2, SyncKind::kStreamWaitEvent},
                                                {3, SyncKind::kStreamSync}, {4, SyncKind::kContextSync}};
  std::set<int64_t> nvtx_ranges = {59, 60, 70, 71};  // push/pop, start/end (NVTX and NVTXT)
  std::set<int64_t> nvtx_marks = {34, 65};
  std::set<int64_t> nvtx_domains = {75};
};

// PyTorch's emit_nvtx (nsys --pytorch=autograd-nvtx) names a range "aten::mm, seq = 3, op_id = 7, sizes = [...]";
// record_function annotations come out the same way ("ProfilerStep#2, op_id = 9").
struct TorchRange {
  std::string_view name;
  std::string_view sizes;  // "[[2, 3], [3]]" or empty
  bool torch = false;
};
inline TorchRange parse_torch_range(std::string_view text) {
  TorchRange r{text, {}, false};
  size_t cut = std::string_view::npos;
  for (const char* key : {", seq = ", ", op_id = ", ", sizes = "}) cut = std::min(cut, text.find(key));
  if (cut == std::string_view::npos) return r;
  r.torch = true;
  r.name = text.substr(0, cut);
  const size_t s = text.find(", sizes = ");
  if (s != std::string_view::npos) {
    std::string_view rest = text.substr(s + 10);
    const size_t end = rest.find(", input_op_ids = ");
    r.sizes = rest.substr(0, end);
  }
  return r;
}

// record_function annotations among emit_nvtx ranges; everything else there is an operator.
inline bool torch_annotation(std::string_view n) {
  return contains(n, "#") || n.starts_with("FSDP::") || n.starts_with("DistributedDataParallel") ||
         n.starts_with("nccl:") || n.starts_with("## ");
}

// NCCL's NVTX ranges ("ncclAllReduce", domain "NCCL") -> "nccl:all_reduce", PyTorch's name for the same call;
// empty for other ranges.
inline std::string nccl_collective(std::string_view text, bool nccl_domain) {
  if (!text.starts_with("nccl") || text.size() < 5 || !std::isupper(static_cast<unsigned char>(text[4]))) {
    if (!nccl_domain || text.empty() || text.starts_with("nccl:")) return {};
  } else {
    text.remove_prefix(4);
  }
  std::string out = "nccl:";
  for (size_t i = 0; i < text.size(); ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (std::isupper(c) && i > 0 && out.back() != '_' && out.back() != ':') out += '_';
    out += static_cast<char>(std::tolower(c));
  }
  return out;
}

// What the export lacked or how it was cut, per process.
struct Counts {
  int64_t rows = 0, imported = 0, malformed = 0, negative = 0, unended = 0, osrt = 0, missing_strings = 0;
  int64_t torch_ops = 0, torch_annotations = 0, nvtx = 0, runtime = 0, gpu = 0, nccl_ranges = 0;
  std::map<int64_t, int64_t> domains;  // NVTX domain id -> ranges
};

struct Group {
  std::vector<Event> events;
  Counts c;
  int32_t first_device = INT32_MAX;
  bool nccl = false;
};

class Reader {
 public:
  explicit Reader(Db& db) : db_(db) {}
  StatusOr<std::vector<Trace>> run();

 private:
  StatusOr<StringId> name_at(Stmt& row, int col);
  Status read_gpu(const char* table);
  Status read_api(const char* table, bool driver_table);
  Status read_nvtx();
  Status read_osrt();
  Status read_devices();
  Status read_meta();
  OpInputs inputs(std::string_view sizes);
  Group& group(int64_t key) { return groups_[key]; }
  // A CPU-thread row's process group from its globalTid in column `col` (NULL: the group of unknown process).
  Group& thread_group(const Stmt& row, int col) { return group(row.null(col) ? -1 : process_key(row.i64(col))); }

  Db& db_;
  Kinds kinds_;
  StringTable strings_;
  std::vector<OpInputs> op_inputs_ = {OpInputs{}};
  std::unordered_map<std::string, uint32_t> inputs_index_;
  std::unordered_map<int64_t, StringId> string_ids_;  // export StringIds id -> our id
  std::optional<Stmt> string_stmt_;
  std::map<int64_t, Group> groups_;
  std::map<std::pair<int64_t, int64_t>, int32_t> context_device_;  // (process key, context id) -> device  // process key (-1: no process id) -> its records
  std::map<int64_t, std::string> domain_names_;
  std::map<int64_t, std::string> process_names_;  // OS pid -> name
  std::map<std::pair<int64_t, int64_t>, std::string> thread_names_;
  std::vector<DeviceInfo> devices_;
  std::map<std::string, std::string> export_meta_;
  std::vector<std::string> capture_types_;  // META_DATA_CAPTURE CAPTURE_EVENT_TYPE rows: what nsys traced (Cuda, ...)
  bool has_gpu_pids_ = false;
};

}  // namespace profile_train::trace::nsys::detail
