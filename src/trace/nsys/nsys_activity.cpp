// The activity tables of an Nsight Systems export -> events of the Reader's process groups: kernels, copies,
// memsets and synchronization (GPU), runtime and driver API calls, NVTX ranges (PyTorch's emit_nvtx operators
// and annotations, NCCL's collectives), OS runtime calls. The driver and the other tables: nsys_export.cpp.
#include <algorithm>
#include <climits>
#include <string>
#include <string_view>

#include "nsys/nsys_reader.h"
#include "nsys/sqlite_db.h"

namespace profile_train::trace::nsys::detail {

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

}  // namespace profile_train::trace::nsys::detail
