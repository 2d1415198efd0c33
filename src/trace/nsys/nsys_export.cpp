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
// This file: the driver (Reader::run), strings, devices and metadata; the activity tables: nsys_activity.cpp;
// the shared helpers and the Reader class: nsys_reader.h.
#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "nsys/nsys_importer.h"
#include "nsys/nsys_reader.h"
#include "nsys/sqlite_db.h"

namespace profile_train::trace::nsys {
namespace detail {
namespace {

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

std::string plural(int64_t n, const char* what) { return std::to_string(n) + " " + what + (n == 1 ? "" : "s"); }

}  // namespace

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
  if (db_.has_table("META_DATA_CAPTURE") && db_.has_column("META_DATA_CAPTURE", "name") &&
      db_.has_column("META_DATA_CAPTURE", "value")) {
    auto st = db_.prepare("SELECT value FROM META_DATA_CAPTURE WHERE name = 'CAPTURE_EVENT_TYPE'");
    if (!st.ok()) return st.status();
    Status s;
    while (st->step(&s))
      if (!st->null(0) && capture_types_.size() < 64) capture_types_.emplace_back(st->text(0));
    PT_RETURN_IF_ERROR(s);
  }
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
    // What nsys traced (absent is not zero): the capture's event types, else the tables the export holds.
    {
      using Traced = trace::TraceMeta::Traced;
      std::string types;
      bool cuda = false;
      for (const auto& ty : capture_types_) {
        types += (types.empty() ? "" : ", ") + ty;
        cuda = cuda || ty == "Cuda";
      }
      std::string tables;
      for (const char* tb : {kKernel, kMemcpy, kMemset, kRuntime, kNvtx})
        if (db_.has_table(tb)) tables += (tables.empty() ? "" : ", ") + std::string(tb);
      const bool gpu_tables = db_.has_table(kKernel) || db_.has_table(kMemcpy) || db_.has_table(kMemset);
      if (cuda || gpu_tables) t.meta.gpu_traced = Traced::kYes;
      else if (!capture_types_.empty()) t.meta.gpu_traced = Traced::kNo;
      t.meta.traced = "nsys traced: " + (types.empty() ? std::string("not recorded (no META_DATA_CAPTURE)") : types) +
                      "; tables: " + (tables.empty() ? std::string("none") : tables) + "; " +
                      plural(c.gpu, "GPU record") + ", " + plural(c.runtime, "runtime call");
    }
    t.finalize();
    traces.push_back(std::move(t));
  }
  return traces;
}

}  // namespace detail

bool built_with_sqlite() { return true; }

StatusOr<std::vector<Trace>> load_export(const std::filesystem::path& path, const LoadOptions& options) {
  std::error_code ec;
  const uint64_t size = std::filesystem::file_size(path, ec);
  if (!ec && size > options.max_uncompressed_bytes)
    return ResourceExhausted(path.string() + ": file is " + std::to_string(size) + " bytes, more than the limit of " +
                             std::to_string(options.max_uncompressed_bytes));
  auto db = Db::open(path.string(), options.max_load_seconds);
  if (!db.ok()) return db.status();
  detail::Reader reader(**db);
  return reader.run();
}

StatusOr<std::vector<Trace>> load_export_bytes(std::string_view bytes, const std::string& name,
                                               const LoadOptions& options) {
  if (bytes.size() > options.max_uncompressed_bytes)
    return ResourceExhausted(name + ": " + std::to_string(bytes.size()) + " bytes, more than the limit");
  auto db = Db::open_bytes(bytes, name, options.max_load_seconds);
  if (!db.ok()) return db.status();
  detail::Reader reader(**db);
  return reader.run();
}

}  // namespace profile_train::trace::nsys
