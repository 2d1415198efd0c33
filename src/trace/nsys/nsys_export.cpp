// Nsight Systems SQLite export -> trace model, one Trace per process that ran GPU work.
//
// Schema variants handled (nsys 2021-2026; export schema 2.x-3.25): every column is optional except the
// timestamps (a missing one reads as NULL: healthy minimal exports have 5-13 columns per table, current ones
// 12-40); names are StringIds references in current exports and inline TEXT in older ones (both read the same
// way, by the value's type); ENUM_* tables are used when present, nsys's fixed numbering otherwise;
// synchronization kinds in `syncType` or the older `deprecatedSyncType`; devices from TARGET_INFO_GPU
// (+ TARGET_INFO_CUDA_DEVICE for the CUDA id and SM count) when the export has them; driver calls in
// CUPTI_ACTIVITY_KIND_RUNTIME (by name) or a CUPTI_ACTIVITY_KIND_DRIVER table.
// Serialized GlobalIds: bits 0-23 thread id, 24-47 process id, 48-63 host (vm).
#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "nsys/nsys_importer.h"
#include "nsys/sqlite_db.h"

namespace profile_train::trace::nsys {
namespace {

constexpr const char* kKernel = "CUPTI_ACTIVITY_KIND_KERNEL";
constexpr const char* kMemcpy = "CUPTI_ACTIVITY_KIND_MEMCPY";
constexpr const char* kMemset = "CUPTI_ACTIVITY_KIND_MEMSET";
constexpr const char* kRuntime = "CUPTI_ACTIVITY_KIND_RUNTIME";
constexpr const char* kDriverTable = "CUPTI_ACTIVITY_KIND_DRIVER";
constexpr const char* kSyncTable = "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION";
constexpr const char* kNvtx = "NVTX_EVENTS";
constexpr const char* kOsrt = "OSRT_API";

int64_t pid_of(int64_t gid) { return (gid >> 24) & 0xFFFFFF; }
int64_t tid_of(int64_t gid) { return gid & 0xFFFFFF; }
// The pid and tid of a CPU-thread row from its globalTid in column `col` (0, 0 when NULL).
void set_thread(Event& e, const Stmt& row, int col) {
  e.pid = row.null(col) ? 0 : pid_of(row.i64(col));
  e.tid = row.null(col) ? 0 : tid_of(row.i64(col));
}
int64_t process_key(int64_t gid) { return gid >> 24; }  // host + process

bool contains(std::string_view s, std::string_view part) { return s.find(part) != std::string_view::npos; }

// end - start, 0 and *negative set when it is below zero or does not fit (a hostile file's timestamps).
int64_t duration(int64_t start, int64_t end, int64_t* negative) {
  int64_t d = 0;
  if (__builtin_sub_overflow(end, start, &d) || d < 0) {
    ++*negative;
    return 0;
  }
  return d;
}
int64_t clamp_nonneg(int64_t v, int64_t hi) { return std::clamp<int64_t>(v, 0, hi); }

// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (nsys names API calls with their version suffix).
std::string_view strip_version(std::string_view n) {
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

template <typename Map, typename F>
Status read_enum(Db& db, const char* table, Map& out, F classify) {
  if (!db.has_table(table) || !db.has_column(table, "id") || !db.has_column(table, "name")) return Status::Ok();
  auto st = db.prepare(std::string("SELECT id, name FROM ") + quote_ident(table));
  if (!st.ok()) return st.status();
  out.clear();
  Status s;
  while (st->step(&s)) {
    if (st->null(0)) continue;
    if (auto v = classify(std::string(st->text(1)))) out[st->i64(0)] = *v;
  }
  return s;
}

Status read_kinds(Db& db, Kinds& k) {
  PT_RETURN_IF_ERROR(read_enum(db, "ENUM_CUDA_MEMCPY_OPER", k.copy, [](const std::string& n) -> std::optional<CopyKind> {
    if (contains(n, "UVM")) return std::nullopt;  // unified-memory migrations are not program copies
    if (n.ends_with("HTOD") || n.ends_with("HTOA")) return CopyKind::kHtoD;
    if (n.ends_with("DTOH") || n.ends_with("ATOH")) return CopyKind::kDtoH;
    if (n.ends_with("DTOD") || n.ends_with("ATOA") || n.ends_with("ATOD") || n.ends_with("DTOA")) return CopyKind::kDtoD;
    if (n.ends_with("HTOH")) return CopyKind::kHtoH;
    if (n.ends_with("PTOP")) return CopyKind::kPtoP;
    return std::nullopt;
  }));
  PT_RETURN_IF_ERROR(read_enum(db, "ENUM_CUDA_MEM_KIND", k.mem, [](const std::string& n) -> std::optional<MemoryKind> {
    if (n.ends_with("PAGEABLE")) return MemoryKind::kPageable;
    if (n.ends_with("PINNED")) return MemoryKind::kPinned;
    if (contains(n, "MANAGED")) return MemoryKind::kManaged;
    if (contains(n, "DEVICE") || n.ends_with("ARRAY")) return MemoryKind::kDevice;
    return std::nullopt;
  }));
  PT_RETURN_IF_ERROR(read_enum(db, "ENUM_CUPTI_SYNC_TYPE", k.sync, [](const std::string& n) -> std::optional<SyncKind> {
    if (n.ends_with("EVENT_SYNCHRONIZE")) return SyncKind::kEventSync;
    if (n.ends_with("STREAM_WAIT_EVENT")) return SyncKind::kStreamWaitEvent;
    if (n.ends_with("STREAM_SYNCHRONIZE")) return SyncKind::kStreamSync;
    if (n.ends_with("CONTEXT_SYNCHRONIZE")) return SyncKind::kContextSync;
    return std::nullopt;
  }));
  if (db.has_table("ENUM_NSYS_EVENT_TYPE")) {
    std::unordered_map<int64_t, int> types;  // 0 range, 1 mark, 2 domain
    PT_RETURN_IF_ERROR(read_enum(db, "ENUM_NSYS_EVENT_TYPE", types, [](const std::string& n) -> std::optional<int> {
      if (n == "NvtxPushPopRange" || n == "NvtxStartEndRange" || n == "NvtxtPushPopRange" || n == "NvtxtStartEndRange")
        return 0;
      if (n == "NvtxMark" || n == "NvtxtMark") return 1;
      if (n == "NvtxDomainCreate") return 2;
      return std::nullopt;
    }));
    if (!types.empty()) {
      k.nvtx_ranges.clear();
      k.nvtx_marks.clear();
      k.nvtx_domains.clear();
      for (auto [id, kind] : types) (kind == 0 ? k.nvtx_ranges : kind == 1 ? k.nvtx_marks : k.nvtx_domains).insert(id);
    }
  }
  return Status::Ok();
}

// PyTorch's emit_nvtx (nsys --pytorch=autograd-nvtx) names a range "aten::mm, seq = 3, op_id = 7, sizes = [...]";
// record_function annotations come out the same way ("ProfilerStep#2, op_id = 9").
struct TorchRange {
  std::string_view name;
  std::string_view sizes;  // "[[2, 3], [3]]" or empty
  bool torch = false;
};
TorchRange parse_torch_range(std::string_view text) {
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
bool torch_annotation(std::string_view n) {
  return contains(n, "#") || n.starts_with("FSDP::") || n.starts_with("DistributedDataParallel") ||
         n.starts_with("nccl:") || n.starts_with("## ");
}

// NCCL's NVTX ranges ("ncclAllReduce", domain "NCCL") -> "nccl:all_reduce", PyTorch's name for the same call;
// empty for other ranges.
std::string nccl_collective(std::string_view text, bool nccl_domain) {
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
  bool has_gpu_pids_ = false;
};

StatusOr<StringId> Reader::name_at(Stmt& row, int col) {
  if (row.null(col)) return StringId{0};
  if (row.is_text(col)) return strings_.intern(row.text(col));  // inline string (older schemas, NVTX `text`)
  const int64_t id = row.i64(col);
  auto it = string_ids_.find(id);
  if (it != string_ids_.end()) return it->second;
  StringId out = 0;
  if (db_.has_table("StringIds")) {
    if (!string_stmt_) {
      auto st = db_.prepare("SELECT value FROM StringIds WHERE id = ?");
      if (!st.ok()) return st.status();
      string_stmt_.emplace(std::move(*st));
    }
    string_stmt_->reset();
    string_stmt_->bind(1, id);
    Status s;
    if (string_stmt_->step(&s)) out = strings_.intern(string_stmt_->text(0));
    PT_RETURN_IF_ERROR(s);
  }
  if (out == 0) out = strings_.intern("<string " + std::to_string(id) + " missing>");
  string_ids_.emplace(id, out);
  return out;
}

OpInputs Reader::inputs(std::string_view sizes) {
  if (sizes.empty()) return {};
  if (sizes.size() > kMaxInputsText) {
    const size_t cut = sizes.rfind("], ", kMaxInputsText - 4);
    sizes = sizes.substr(0, cut == std::string_view::npos ? 0 : cut + 1);
  }
  OpInputs in;
  in.dims = strings_.intern(std::string(sizes) + (sizes.size() < kMaxInputsText && sizes.ends_with("]") ? "" : "..."));
  return in;
}

// Kernels, copies, memsets, synchronization: GPU pid = device, tid = stream.
Status Reader::read_gpu(const char* table) {
  if (!db_.has_table(table)) return Status::Ok();
  const std::string t = table;
  const bool kernel = t == kKernel, memcpy = t == kMemcpy, memset = t == kMemset;
  has_gpu_pids_ = has_gpu_pids_ || db_.has_column(t, "globalPid");
  std::string sql = "SELECT " + db_.col(t, "start") + "," + db_.col(t, "end") + "," + db_.col(t, "deviceId") + "," +
                    db_.col(t, "streamId") + "," + db_.col(t, "correlationId") + "," + db_.col(t, "globalPid");
  if (kernel)
    sql += "," + db_.col(t, "demangledName") + "," + db_.col(t, "shortName") + "," + db_.col(t, "gridX") + "," +
           db_.col(t, "gridY") + "," + db_.col(t, "gridZ") + "," + db_.col(t, "blockX") + "," + db_.col(t, "blockY") +
           "," + db_.col(t, "blockZ") + "," + db_.col(t, "registersPerThread") + "," +
           db_.col(t, "staticSharedMemory") + "," + db_.col(t, "dynamicSharedMemory");
  else if (memcpy)
    sql += "," + db_.col(t, "bytes") + "," + db_.col(t, "copyKind") + "," + db_.col(t, "srcKind") + "," +
           db_.col(t, "dstKind");
  else if (memset)
    sql += "," + db_.col(t, "bytes") + "," + db_.col(t, "memKind");
  else
    sql += "," + db_.col(t, "syncType") + "," + db_.col(t, "deprecatedSyncType");
  const int ctx_col = kernel ? 17 : memcpy ? 10 : 8;
  sql += "," + db_.col(t, "contextId");
  auto st = db_.prepare(sql + " FROM " + quote_ident(t));
  if (!st.ok()) return st.status();
  Status s;
  while (st->step(&s)) {
    const int64_t key = st->null(5) ? -1 : process_key(st->i64(5));
    Group& g = group(key);
    ++g.c.rows;
    if (st->null(0) || st->null(1)) {
      ++g.c.malformed;
      continue;
    }
    Event e;
    e.start_ns = st->i64(0);
    e.dur_ns = duration(e.start_ns, st->i64(1), &g.c.negative);
    e.is_gpu = true;
    const int64_t dev = st->i64(2, 0);
    e.device = dev >= 0 && dev < INT32_MAX ? static_cast<int32_t>(dev) : 0;
    // Synchronization records say deviceId 0 whatever the device in some releases (nsys 2026.2: every sync
    // record of a process on device 1); their context names the device its kernels and copies ran on.
    const std::pair<int64_t, int64_t> ctx{key, st->i64(ctx_col, -1)};
    if (!st->null(ctx_col)) {
      if (t == kSyncTable) {
        if (auto it = context_device_.find(ctx); it != context_device_.end()) e.device = it->second;
      } else {
        context_device_.emplace(ctx, e.device);
      }
    }
    e.pid = e.device;
    const int64_t stream = st->i64(3, 0);
    e.tid = stream == 0xFFFFFFFFLL ? -1 : stream;
    e.correlation = st->i64(4, -1);
    g.first_device = std::min(g.first_device, e.device);
    if (kernel) {
      e.cat = Category::kKernel;
      auto n = name_at(*st, st->null(6) ? 7 : 6);
      if (!n.ok()) return n.status();
      e.name = *n;
      const auto dim = [&](int c) { return static_cast<uint64_t>(clamp_nonneg(st->i64(c, 1), INT32_MAX)); };
      e.grid_blocks = dim(8) * dim(9) * dim(10);
      e.block_threads = static_cast<uint32_t>(std::min<uint64_t>(dim(11) * dim(12) * dim(13), UINT32_MAX));
      e.registers_per_thread = static_cast<int32_t>(std::clamp<int64_t>(st->i64(14, -1), -1, INT32_MAX));
      if (!st->null(15) || !st->null(16))
        e.shared_mem_bytes = static_cast<int32_t>(
            std::min<int64_t>(clamp_nonneg(st->i64(15, 0), INT32_MAX) + clamp_nonneg(st->i64(16, 0), INT32_MAX), INT32_MAX));
      if (contains(strings_.get(e.name), "nccl")) g.nccl = true;
    } else if (memcpy) {
      e.cat = Category::kMemcpy;
      e.bytes = st->i64(6, -1);
      auto ck = kinds_.copy.find(st->i64(7, -1));
      e.copy_kind = ck == kinds_.copy.end() ? CopyKind::kUnknown : ck->second;
      auto sk = st->null(8) ? kinds_.mem.end() : kinds_.mem.find(st->i64(8));
      auto dk = st->null(9) ? kinds_.mem.end() : kinds_.mem.find(st->i64(9));
      e.src_mem = sk == kinds_.mem.end() ? MemoryKind::kUnknown : sk->second;
      e.dst_mem = dk == kinds_.mem.end() ? MemoryKind::kUnknown : dk->second;
      static const char* kNames[] = {"Memcpy", "Memcpy HtoD", "Memcpy DtoH", "Memcpy DtoD", "Memcpy HtoH", "Memcpy PtoP"};
      std::string n = kNames[static_cast<int>(e.copy_kind)];
      if (e.copy_kind == CopyKind::kHtoD && e.src_mem != MemoryKind::kUnknown)
        n += e.src_mem == MemoryKind::kPinned ? " (Pinned -> Device)" : e.src_mem == MemoryKind::kPageable ? " (Pageable -> Device)" : "";
      if (e.copy_kind == CopyKind::kDtoH && e.dst_mem != MemoryKind::kUnknown)
        n += e.dst_mem == MemoryKind::kPinned ? " (Device -> Pinned)" : e.dst_mem == MemoryKind::kPageable ? " (Device -> Pageable)" : "";
      if (e.copy_kind == CopyKind::kDtoD) n += " (Device -> Device)";
      e.name = strings_.intern(n);
    } else if (memset) {
      e.cat = Category::kMemset;
      e.bytes = st->i64(6, -1);
      auto mk = st->null(7) ? kinds_.mem.end() : kinds_.mem.find(st->i64(7));
      e.dst_mem = mk == kinds_.mem.end() ? MemoryKind::kUnknown : mk->second;
      e.name = strings_.intern("Memset (Device)");
    } else {
      e.cat = Category::kSync;
      auto sk = kinds_.sync.find(st->null(6) ? st->i64(7, 0) : st->i64(6));
      e.sync_kind = sk == kinds_.sync.end() ? SyncKind::kUnknown : sk->second;
      static const char* kNames[] = {"cuda_sync", "Event Sync", "Stream Wait Event", "Stream Sync", "Context Sync"};
      e.name = strings_.intern(kNames[static_cast<int>(e.sync_kind)]);
    }
    ++g.c.gpu;
    ++g.c.imported;
    g.events.push_back(e);
  }
  return s;
}

// CUDA runtime and driver calls on CPU threads (pid, tid from globalTid).
Status Reader::read_api(const char* table, bool driver_table) {
  if (!db_.has_table(table)) return Status::Ok();
  const std::string t = table;
  auto st = db_.prepare("SELECT " + db_.col(t, "start") + "," + db_.col(t, "end") + "," + db_.col(t, "globalTid") + "," +
                        db_.col(t, "correlationId") + "," + db_.col(t, "nameId") + " FROM " + quote_ident(t));
  if (!st.ok()) return st.status();
  Status s;
  std::unordered_map<StringId, std::pair<StringId, bool>> clean;  // raw name -> stripped name, is driver
  while (st->step(&s)) {
    Group& g = thread_group(*st, 2);
    ++g.c.rows;
    if (st->null(0) || st->null(1)) {
      ++g.c.malformed;
      continue;
    }
    Event e;
    e.start_ns = st->i64(0);
    e.dur_ns = duration(e.start_ns, st->i64(1), &g.c.negative);
    set_thread(e, *st, 2);
    e.correlation = st->i64(3, -1);
    auto raw = name_at(*st, 4);
    if (!raw.ok()) return raw.status();
    auto it = clean.find(*raw);
    if (it == clean.end()) {
      const std::string_view n = strip_version(strings_.get(*raw));
      const bool driver = driver_table || (n.starts_with("cu") && !n.starts_with("cuda"));
      it = clean.emplace(*raw, std::make_pair(strings_.intern(n), driver)).first;
    }
    e.name = it->second.first;
    e.cat = it->second.second ? Category::kDriver : Category::kRuntime;
    ++g.c.runtime;
    ++g.c.imported;
    g.events.push_back(e);
  }
  return s;
}

Status Reader::read_nvtx() {
  if (!db_.has_table(kNvtx)) return Status::Ok();
  const std::string t = kNvtx;
  auto st = db_.prepare("SELECT " + db_.col(t, "start") + "," + db_.col(t, "end") + "," + db_.col(t, "eventType") + "," +
                        db_.col(t, "globalTid") + "," + db_.col(t, "text") + "," + db_.col(t, "textId") + "," +
                        db_.col(t, "domainId") + " FROM " + quote_ident(t));
  if (!st.ok()) return st.status();
  Status s;
  // Domain names first (their rows need not precede the ranges): NCCL's own ranges are told by theirs.
  std::set<int64_t> nccl_domains;
  while (st->step(&s)) {
    if (!kinds_.nvtx_domains.count(st->i64(2, -1))) continue;
    auto n = name_at(*st, st->null(4) ? 5 : 4);
    if (!n.ok()) return n.status();
    domain_names_[st->i64(6, 0)] = strings_.get(*n);
    if (strings_.get(*n) == "NCCL") nccl_domains.insert(st->i64(6, 0));
  }
  PT_RETURN_IF_ERROR(s);
  st->reset();
  while (st->step(&s)) {
    const int64_t type = st->i64(2, -1);
    const int col = st->null(4) ? 5 : 4;
    const bool range = kinds_.nvtx_ranges.count(type) != 0, mark = kinds_.nvtx_marks.count(type) != 0;
    if (!range && !mark) continue;  // categories, thread names and other bookkeeping rows
    Group& g = thread_group(*st, 3);
    ++g.c.rows;
    if (st->null(0)) {
      ++g.c.malformed;
      continue;
    }
    if (range && st->null(1)) {  // never ended inside the capture
      ++g.c.unended;
      continue;
    }
    Event e;
    e.start_ns = st->i64(0);
    e.dur_ns = mark ? 0 : duration(e.start_ns, st->i64(1), &g.c.negative);
    set_thread(e, *st, 3);
    // Inline text is parsed before interning: emit_nvtx makes every range's text unique ("op_id = N").
    std::string_view text;
    StringId registered = 0;
    if (st->is_text(col)) {
      text = st->text(col);
    } else {
      auto n = name_at(*st, col);
      if (!n.ok()) return n.status();
      registered = *n;
      text = strings_.get(registered);
    }
    const TorchRange tr = parse_torch_range(text);
    e.cat = Category::kUserAnnotation;
    if (tr.torch) {
      const bool annotation = torch_annotation(tr.name);
      e.cat = annotation ? Category::kUserAnnotation : Category::kCpuOp;
      ++(annotation ? g.c.torch_annotations : g.c.torch_ops);
      const OpInputs in = inputs(tr.sizes);
      e.name = strings_.intern(std::string(tr.name));
      if (!annotation && in.dims != 0) {
        const std::string key = strings_.get(in.dims);
        auto [it, added] = inputs_index_.try_emplace(key, static_cast<uint32_t>(op_inputs_.size()));
        if (added) op_inputs_.push_back(in);
        e.inputs = it->second;
      }
    } else if (auto op = nccl_collective(text, nccl_domains.count(st->i64(6, 0)) != 0); !op.empty()) {
      e.name = strings_.intern(op);  // as PyTorch names the host side of a collective: breakdown and facts know it
      ++g.c.nccl_ranges;
      g.nccl = true;
    } else {
      e.name = registered != 0 ? registered : strings_.intern(text);
    }
    ++g.c.nvtx;
    ++g.c.domains[st->i64(6, 0)];
    ++g.c.imported;
    g.events.push_back(e);
  }
  return s;
}

// OS runtime calls (--trace=osrt): kept as kOther on their thread, so they show on the timeline without
// counting as framework or CUDA time.
Status Reader::read_osrt() {
  if (!db_.has_table(kOsrt)) return Status::Ok();
  const std::string t = kOsrt;
  auto st = db_.prepare("SELECT " + db_.col(t, "start") + "," + db_.col(t, "end") + "," + db_.col(t, "globalTid") + "," +
                        db_.col(t, "nameId") + " FROM " + quote_ident(t));
  if (!st.ok()) return st.status();
  Status s;
  while (st->step(&s)) {
    Group& g = thread_group(*st, 2);
    ++g.c.rows;
    if (st->null(0) || st->null(1)) {
      ++g.c.malformed;
      continue;
    }
    Event e;
    e.start_ns = st->i64(0);
    int64_t ignored = 0;
    e.dur_ns = duration(e.start_ns, st->i64(1), &ignored);
    set_thread(e, *st, 2);
    e.cat = Category::kOther;
    auto n = name_at(*st, 3);
    if (!n.ok()) return n.status();
    e.name = strings_.intern(strip_version(strings_.get(*n)));
    ++g.c.osrt;
    ++g.c.imported;
    g.events.push_back(e);
  }
  return s;
}

Status Reader::read_devices() {
  // CUDA device id and SM count per GPU, when TARGET_INFO_CUDA_DEVICE says them.
  std::map<int64_t, std::pair<int64_t, int64_t>> cuda;  // gpuId -> (cudaId, SMs)
  if (db_.has_table("TARGET_INFO_CUDA_DEVICE")) {
    const std::string t = "TARGET_INFO_CUDA_DEVICE";
    auto st = db_.prepare("SELECT " + db_.col(t, "gpuId") + "," + db_.col(t, "cudaId") + "," +
                          db_.col(t, "numMultiprocessors") + " FROM " + quote_ident(t));
    if (!st.ok()) return st.status();
    Status s;
    while (st->step(&s))
      if (!st->null(0)) cuda.emplace(st->i64(0), std::make_pair(st->i64(1, -1), st->i64(2, -1)));
    PT_RETURN_IF_ERROR(s);
  }
  if (!db_.has_table("TARGET_INFO_GPU")) return Status::Ok();
  const std::string t = "TARGET_INFO_GPU";
  auto st = db_.prepare("SELECT " + db_.col(t, "id") + "," + db_.col(t, "name") + "," + db_.col(t, "cuDevice") + "," +
                        db_.col(t, "smCount") + "," + db_.col(t, "totalMemory") + "," + db_.col(t, "computeMajor") + "," +
                        db_.col(t, "computeMinor") + "," + db_.col(t, "maxShmemPerSm") + "," +
                        db_.col(t, "maxRegistersPerSm") + "," + db_.col(t, "maxWarpsPerSm") + "," +
                        db_.col(t, "threadsPerWarp") + "," + db_.col(t, "maxThreadsPerBlock") + " FROM " + quote_ident(t));
  if (!st.ok()) return st.status();
  Status s;
  std::set<int32_t> seen;
  while (st->step(&s)) {
    const int64_t gpu = st->i64(0, -1);
    int64_t id = st->i64(2, gpu);
    int64_t sms = st->i64(3, -1);
    if (auto it = cuda.find(gpu); it != cuda.end()) {
      if (it->second.first >= 0) id = it->second.first;
      if (sms < 0) sms = it->second.second;
    }
    if (id < 0 || id > INT32_MAX || !seen.insert(static_cast<int32_t>(id)).second) continue;
    auto clamp32 = [](int64_t v) { return static_cast<int32_t>(std::clamp<int64_t>(v, -1, INT32_MAX)); };
    DeviceInfo d;
    d.id = static_cast<int32_t>(id);
    d.name = std::string(st->text(1));
    d.vendor = "nvidia";
    d.num_sms = clamp32(sms);
    d.total_memory_bytes = st->i64(4, -1);
    d.compute_major = clamp32(st->i64(5, -1));
    d.compute_minor = clamp32(st->i64(6, -1));
    d.shared_mem_per_sm = st->i64(7, -1);
    d.regs_per_sm = clamp32(st->i64(8, -1));
    if (!st->null(9))
      d.max_threads_per_sm = clamp32(clamp_nonneg(st->i64(9), 1 << 16) * clamp_nonneg(st->i64(10, 32), 1 << 10));
    d.max_threads_per_block = clamp32(st->i64(11, -1));
    devices_.push_back(std::move(d));
  }
  return s;
}

Status Reader::read_meta() {
  if (db_.has_table("META_DATA_EXPORT") && db_.has_column("META_DATA_EXPORT", "name")) {
    auto st = db_.prepare("SELECT name, " + db_.col("META_DATA_EXPORT", "value") + " FROM META_DATA_EXPORT");
    if (!st.ok()) return st.status();
    Status s;
    while (st->step(&s)) export_meta_[std::string(st->text(0))] = std::string(st->text(1));
    PT_RETURN_IF_ERROR(s);
  }
  if (db_.has_table("PROCESSES") && db_.has_column("PROCESSES", "pid")) {
    auto st = db_.prepare("SELECT pid, " + db_.col("PROCESSES", "name") + " FROM PROCESSES");
    if (!st.ok()) return st.status();
    Status s;
    while (st->step(&s))
      if (!st->null(0) && !st->null(1)) process_names_[st->i64(0)] = std::string(st->text(1));
    PT_RETURN_IF_ERROR(s);
  }
  if (db_.has_table("ThreadNames") && db_.has_column("ThreadNames", "globalTid")) {
    auto st = db_.prepare("SELECT globalTid, " + db_.col("ThreadNames", "nameId") + " FROM ThreadNames");
    if (!st.ok()) return st.status();
    Status s;
    while (st->step(&s)) {
      if (st->null(0)) continue;
      auto n = name_at(*st, 1);
      if (!n.ok()) return n.status();
      thread_names_[{pid_of(st->i64(0)), tid_of(st->i64(0))}] = strings_.get(*n);
    }
    PT_RETURN_IF_ERROR(s);
  }
  return Status::Ok();
}

std::string plural(int64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

StatusOr<std::vector<Trace>> Reader::run() {
  // Detected by content: a SQLite file is only an export when it has nsys's tables.
  const bool activity = db_.has_table(kKernel) || db_.has_table(kMemcpy) || db_.has_table(kRuntime) ||
                        db_.has_table(kNvtx) || db_.has_table(kMemset);
  if (!activity || !(db_.has_table("StringIds") || db_.has_table("META_DATA_EXPORT")))
    return BadInput(db_.name() + ": a SQLite database, but not an Nsight Systems export (no CUPTI_ACTIVITY_KIND_* or "
                                 "NVTX_EVENTS tables next to StringIds / META_DATA_EXPORT)");
  PT_RETURN_IF_ERROR(read_kinds(db_, kinds_));
  PT_RETURN_IF_ERROR(read_meta());
  PT_RETURN_IF_ERROR(read_devices());
  for (const char* t : {kKernel, kMemcpy, kMemset, kSyncTable}) PT_RETURN_IF_ERROR(read_gpu(t));
  PT_RETURN_IF_ERROR(read_api(kRuntime, false));
  PT_RETURN_IF_ERROR(read_api(kDriverTable, true));
  PT_RETURN_IF_ERROR(read_nvtx());
  PT_RETURN_IF_ERROR(read_osrt());

  // Processes that ran GPU work each become one trace; without process ids on GPU records (or without GPU
  // records) the whole export is one.
  std::vector<int64_t> gpu_keys;
  for (const auto& [key, g] : groups_)
    if (g.c.gpu > 0) gpu_keys.push_back(key);
  const bool split = has_gpu_pids_ && !gpu_keys.empty() &&
                     std::find(gpu_keys.begin(), gpu_keys.end(), -1) == gpu_keys.end();
  struct Out { std::vector<int64_t> keys; int32_t first_device = INT32_MAX; };
  std::vector<Out> outs;
  int64_t left_out_rows = 0, left_out_processes = 0;
  if (split) {
    for (int64_t k : gpu_keys) outs.push_back({{k}, groups_[k].first_device});
    for (const auto& [key, g] : groups_)
      if (g.c.gpu == 0) {
        left_out_rows += g.c.rows;
        ++left_out_processes;
      }
    // Ranks follow the processes' first devices (torchrun's LOCAL_RANK picks the device): the export does not
    // record torch ranks.
    std::stable_sort(outs.begin(), outs.end(), [](const Out& a, const Out& b) { return a.first_device < b.first_device; });
  } else {
    Out all;
    for (const auto& [key, g] : groups_) all.keys.push_back(key);
    outs.push_back(std::move(all));
  }

  const std::string version = export_meta_.count("EXPORT_PRODUCT_VERSION") ? export_meta_["EXPORT_PRODUCT_VERSION"] : "";
  const std::string schema = export_meta_.count("EXPORT_SCHEMA_VERSION") ? export_meta_["EXPORT_SCHEMA_VERSION"] : "";
  std::vector<Trace> traces;
  for (size_t r = 0; r < outs.size(); ++r) {
    Trace t;
    t.strings = strings_;
    t.op_inputs = op_inputs_;
    t.devices = devices_;
    t.meta.source_files.push_back(db_.name());
    t.meta.format = "nsys_sqlite";
    t.meta.format_version = schema.empty() ? "unknown" : schema;
    t.meta.producer = version.empty() ? "NVIDIA Nsight Systems" : "NVIDIA Nsight Systems " + version;
    if (!version.empty()) t.meta.versions["nsys"] = version;
    if (!schema.empty()) t.meta.versions["nsys_export_schema"] = schema;
    Counts c;
    bool nccl = false;
    for (int64_t k : outs[r].keys) {
      Group& g = groups_[k];
      nccl = nccl || g.nccl;
      c.rows += g.c.rows;
      c.imported += g.c.imported;
      c.malformed += g.c.malformed;
      c.negative += g.c.negative;
      c.unended += g.c.unended;
      c.osrt += g.c.osrt;
      c.torch_ops += g.c.torch_ops;
      c.torch_annotations += g.c.torch_annotations;
      c.nccl_ranges += g.c.nccl_ranges;
      c.nvtx += g.c.nvtx;
      c.runtime += g.c.runtime;
      c.gpu += g.c.gpu;
      for (auto [d, n] : g.c.domains) c.domains[d] += n;
      if (k >= 0) {
        const int64_t pid = k & 0xFFFFFF;
        if (split) t.meta.main_pid = pid;
        if (auto it = process_names_.find(pid); it != process_names_.end()) t.meta.process_names[pid] = it->second;
      }
      if (t.events.empty()) t.events = std::move(g.events);
      else t.events.insert(t.events.end(), g.events.begin(), g.events.end());
    }
    for (const auto& [pt, name] : thread_names_)
      if (t.meta.process_names.count(pt.first)) t.meta.thread_names[pt] = name;
    if (split && outs.size() > 1) {
      t.meta.rank = static_cast<int32_t>(r);
      t.meta.world_size = static_cast<int32_t>(outs.size());
      if (nccl) t.meta.distributed_backend = "nccl";
    }
    auto& q = t.quality;
    q.events_total = c.rows;
    q.events_imported = c.imported;
    q.malformed_events = c.malformed;
    q.negative_durations = c.negative;
    q.missing_device_properties = devices_.empty();
    q.notes.push_back("Nsight Systems export" + (version.empty() ? std::string() : " from nsys " + version) +
                      (schema.empty() ? std::string() : " (export schema " + schema + ")"));
    if (split && outs.size() > 1)
      q.notes.push_back("process " + std::to_string(t.meta.main_pid) + " of " + std::to_string(outs.size()) +
                        " in the export that ran GPU work; rank " + std::to_string(r) +
                        " by the order of their first GPU (the export records no torch rank)");
    if (!split && gpu_keys.size() > 1)
      q.notes.push_back("the export's GPU records carry no process ids: all processes are analysed as one");
    if (left_out_processes > 0 && r == 0)
      q.notes.push_back(plural(left_out_rows, "record") + " of " + plural(left_out_processes, "process") +
                        " without GPU work left out (launchers, compilers, data workers)");
    if (!db_.has_table(kNvtx) || c.nvtx == 0)
      q.notes.push_back("no NVTX ranges in the export: no steps, phases or operators from annotations (profile with "
                        "`nsys profile --trace=cuda,nvtx --pytorch=autograd-nvtx`)");
    if (!db_.has_table(kRuntime) || c.runtime == 0)
      q.notes.push_back("no CUDA runtime or driver calls in the export (`--trace=cuda`): launch overhead and "
                        "synchronization waits cannot be measured");
    if (c.torch_ops + c.torch_annotations > 0)
      q.notes.push_back("PyTorch NVTX ranges (--pytorch=autograd-nvtx / emit_nvtx): " + plural(c.torch_ops, "operator") +
                        ", " + plural(c.torch_annotations, "annotation"));
    if (c.nvtx > 0) {
      std::string d = "NVTX ranges by domain:";
      for (auto [id, n] : c.domains) {
        auto it = domain_names_.find(id);
        d += " " + (id == 0 ? std::string("default") : it != domain_names_.end() ? it->second : "domain " + std::to_string(id)) +
             " " + std::to_string(n) + ";";
      }
      d.pop_back();
      q.notes.push_back(d);
    }
    if (c.nccl_ranges > 0)
      q.notes.push_back(plural(c.nccl_ranges, "NCCL NVTX range") + " (host side of collectives, named nccl:<op>)");
    if (c.unended > 0)
      q.notes.push_back(plural(c.unended, "NVTX range") + " never ended inside the capture (left out)");
    if (c.osrt > 0) q.notes.push_back(plural(c.osrt, "OS runtime call") + " kept on the timeline only");
    if (auto it = export_meta_.find("DERIVED_WINDOW_NS"); it != export_meta_.end())
      q.notes.push_back("the export is a window cut from a longer capture (DERIVED_WINDOW_NS " + it->second +
                        "): work crossing its edges is cut");
    if (devices_.empty())
      q.notes.push_back("no TARGET_INFO_GPU table: GPU name, SM count and memory are unknown");
    t.finalize();
    traces.push_back(std::move(t));
  }
  return traces;
}

}  // namespace

bool built_with_sqlite() { return true; }

StatusOr<std::vector<Trace>> load_export(const std::filesystem::path& path, const LoadOptions& options) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > options.max_uncompressed_bytes)
    return ResourceExhausted(path.string() + ": file is " + std::to_string(size) + " bytes, more than the limit of " +
                             std::to_string(options.max_uncompressed_bytes));
  auto db = Db::open(path.string(), options.max_load_seconds);
  if (!db.ok()) return db.status();
  Reader reader(**db);
  return reader.run();
}

StatusOr<std::vector<Trace>> load_export_bytes(std::string_view bytes, const std::string& name,
                                               const LoadOptions& options) {
  if (bytes.size() > options.max_uncompressed_bytes)
    return ResourceExhausted(name + ": " + std::to_string(bytes.size()) + " bytes, more than the limit");
  auto db = Db::open_bytes(bytes, name, options.max_load_seconds);
  if (!db.ok()) return db.status();
  Reader reader(**db);
  return reader.run();
}

}  // namespace profile_train::trace::nsys
