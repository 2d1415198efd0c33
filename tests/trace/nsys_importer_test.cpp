// Nsight Systems SQLite exports: what the model holds equals a direct SQL count over the same file (the shared
// exports: a real 2x H100 capture, a full-table mock, a minimal synthetic one), schema variants of older and
// newer nsys releases built here, and bad input (another schema, truncated, corrupt, locked, a huge string).
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>

#include "nsys/nsys_importer.h"
#include "profile_train/trace/importer.h"

namespace {

namespace fs = std::filesystem;
using namespace profile_train;
using namespace profile_train::trace;

const fs::path kNsysDir = fs::path(PT_TRACES_DIR) / "nsys";

// The test's own read-only view of an export.
class Sql {
 public:
  explicit Sql(const fs::path& p) {
    EXPECT_EQ(sqlite3_open_v2(("file:" + p.string() + "?immutable=1").c_str(), &db_,
                              SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr),
              SQLITE_OK);
  }
  ~Sql() { sqlite3_close(db_); }
  int64_t scalar(const std::string& q) {
    sqlite3_stmt* s = nullptr;
    EXPECT_EQ(sqlite3_prepare_v2(db_, q.c_str(), -1, &s, nullptr), SQLITE_OK) << q << ": " << sqlite3_errmsg(db_);
    int64_t v = -1;
    if (sqlite3_step(s) == SQLITE_ROW) v = sqlite3_column_int64(s, 0);
    sqlite3_finalize(s);
    return v;
  }
  bool has_column(const std::string& table, const std::string& col) {
    return scalar("SELECT count(*) FROM pragma_table_info('" + table + "') WHERE name = '" + col + "'") > 0;
  }
  bool has_table(const std::string& table) {
    return scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '" + table + "'") > 0;
  }

 private:
  sqlite3* db_ = nullptr;
};

struct Sums {
  int64_t kernels = 0, kernel_ns = 0;
  std::map<std::pair<CopyKind, MemoryKind>, std::pair<int64_t, int64_t>> copies;  // (kind, src) -> (ns, bytes)
  int64_t memsets = 0, memset_bytes = 0, syncs = 0, nvtx = 0;
  std::map<std::string, int64_t> api;  // runtime + driver calls by name
};

Sums sums_of(const Trace& t) {
  Sums s;
  for (const Event& e : t.events) {
    switch (e.cat) {
      case Category::kKernel: ++s.kernels; s.kernel_ns += e.dur_ns; break;
      case Category::kMemcpy: {
        auto& c = s.copies[{e.copy_kind, e.copy_kind == CopyKind::kDtoH ? e.dst_mem : e.src_mem}];
        c.first += e.dur_ns;
        c.second += e.bytes;
        break;
      }
      case Category::kMemset: ++s.memsets; s.memset_bytes += e.bytes; break;
      case Category::kSync: ++s.syncs; break;
      case Category::kRuntime:
      case Category::kDriver: ++s.api[t.name(e)]; break;
      case Category::kUserAnnotation:
      case Category::kCpuOp: ++s.nvtx; break;
      default: break;
    }
  }
  return s;
}

// SQL filter for one process's rows (all rows when the table has no process column or the trace is the export).
std::string where_process(Sql& db, const std::string& table, const std::string& col, const Trace& t, bool split) {
  if (!split || !db.has_column(table, col)) return "1";
  return "((" + col + " >> 24) & 16777215) = " + std::to_string(t.meta.main_pid);
}

// Every count and sum of the model against SQL over the same file.
void expect_matches_sql(const fs::path& file) {
  auto traces = load_trace_set(file);
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  Sql db(file);
  const bool split = traces->size() > 1 || (*traces)[0].meta.main_pid >= 0;
  int64_t total_kernels = 0;
  for (const Trace& t : *traces) {
    SCOPED_TRACE(file.filename().string() + " pid " + std::to_string(t.meta.main_pid));
    const Sums s = sums_of(t);
    EXPECT_EQ(t.meta.format, "nsys_sqlite");
    const std::string k = where_process(db, "CUPTI_ACTIVITY_KIND_KERNEL", "globalPid", t, split);
    EXPECT_EQ(s.kernels, db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE " + k));
    EXPECT_EQ(s.kernel_ns, db.scalar("SELECT coalesce(sum(\"end\" - start), 0) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE " + k));
    total_kernels += s.kernels;

    // Copies by direction and source memory (pageable vs pinned), named through the export's own ENUM tables.
    if (db.has_table("CUPTI_ACTIVITY_KIND_MEMCPY")) {
      const std::string m = where_process(db, "CUPTI_ACTIVITY_KIND_MEMCPY", "globalPid", t, split);
      const bool kinds = db.has_column("CUPTI_ACTIVITY_KIND_MEMCPY", "srcKind") && db.has_table("ENUM_CUDA_MEM_KIND");
      for (auto [kind, kid] : {std::pair{CopyKind::kHtoD, 1}, std::pair{CopyKind::kDtoH, 2}, std::pair{CopyKind::kDtoD, 8}}) {
        for (auto [mem, label] : {std::pair{MemoryKind::kPageable, "PAGEABLE"}, std::pair{MemoryKind::kPinned, "PINNED"}}) {
          if (!kinds || kind == CopyKind::kDtoD) continue;
          const std::string host = kind == CopyKind::kHtoD ? "srcKind" : "dstKind";
          const std::string q = " FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE " + m + " AND copyKind = " + std::to_string(kid) +
                                " AND " + host + " IN (SELECT id FROM ENUM_CUDA_MEM_KIND WHERE name LIKE '%" + label + "')";
          auto it = s.copies.find({kind, mem});
          const auto got = it == s.copies.end() ? std::pair<int64_t, int64_t>{0, 0} : it->second;
          EXPECT_EQ(got.first, db.scalar("SELECT coalesce(sum(\"end\" - start), 0)" + q)) << label << " " << kid;
          EXPECT_EQ(got.second, db.scalar("SELECT coalesce(sum(bytes), 0)" + q)) << label << " " << kid;
        }
        int64_t ns = 0, bytes = 0;
        for (const auto& [key, v] : s.copies)
          if (key.first == kind) { ns += v.first; bytes += v.second; }
        const std::string q = " FROM CUPTI_ACTIVITY_KIND_MEMCPY WHERE " + m + " AND copyKind = " + std::to_string(kid);
        EXPECT_EQ(ns, db.scalar("SELECT coalesce(sum(\"end\" - start), 0)" + q)) << kid;
        EXPECT_EQ(bytes, db.scalar("SELECT coalesce(sum(bytes), 0)" + q)) << kid;
      }
    }
    if (db.has_table("CUPTI_ACTIVITY_KIND_MEMSET")) {
      const std::string m = where_process(db, "CUPTI_ACTIVITY_KIND_MEMSET", "globalPid", t, split);
      EXPECT_EQ(s.memsets, db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE " + m));
      EXPECT_EQ(s.memset_bytes, db.scalar("SELECT coalesce(sum(bytes), 0) FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE " + m));
    }
    if (db.has_table("CUPTI_ACTIVITY_KIND_SYNCHRONIZATION")) {
      const std::string m = where_process(db, "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION", "globalPid", t, split);
      EXPECT_EQ(s.syncs, db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE " + m));
    }
    // Runtime calls by name: nsys spells them with a version suffix ("cudaLaunchKernel_v7000").
    const std::string r = where_process(db, "CUPTI_ACTIVITY_KIND_RUNTIME", "globalTid", t, split);
    int64_t api_total = 0;
    for (const auto& [name, n] : s.api) {
      EXPECT_EQ(n, db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s ON s.id = r.nameId WHERE " +
                             r + " AND (s.value = '" + name + "' OR s.value GLOB '" + name + "_v[0-9]*')"))
          << name;
      api_total += n;
    }
    EXPECT_EQ(api_total, db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME WHERE " + r));
    if (db.has_table("NVTX_EVENTS")) {
      const std::string n = where_process(db, "NVTX_EVENTS", "globalTid", t, split);
      // Ranges that ended (push/pop 59, start/end 60) and marks (34), by ENUM_NSYS_EVENT_TYPE's numbering.
      EXPECT_EQ(s.nvtx, db.scalar("SELECT count(*) FROM NVTX_EVENTS WHERE " + n +
                                  " AND ((eventType IN (59, 60) AND \"end\" IS NOT NULL) OR eventType = 34)"));
    }
  }
  EXPECT_EQ(total_kernels, db.scalar("SELECT count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL"));
}

class NsysExports : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!nsys::built_with_sqlite()) GTEST_SKIP() << "built without SQLite (PT_WITH_SQLITE)";
    if (!fs::exists(kNsysDir)) GTEST_SKIP() << kNsysDir << " not found";
    dir_ = fs::temp_directory_path() / ("pt_nsys_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }
  // A fresh SQLite file holding `script`'s tables.
  fs::path make_db(const std::string& name, const std::string& script) {
    const fs::path p = dir_ / name;
    sqlite3* db = nullptr;
    EXPECT_EQ(sqlite3_open(p.c_str(), &db), SQLITE_OK);
    char* err = nullptr;
    EXPECT_EQ(sqlite3_exec(db, script.c_str(), nullptr, nullptr, &err), SQLITE_OK) << (err ? err : "");
    sqlite3_free(err);
    sqlite3_close(db);
    return p;
  }
  fs::path copy_of(const fs::path& src, const std::string& name) {
    const fs::path p = dir_ / name;
    fs::copy_file(src, p);
    fs::permissions(p, fs::perms::owner_read | fs::perms::owner_write);
    return p;
  }
  fs::path dir_;
};

TEST_F(NsysExports, RealTwoGpuExportMatchesSql) { expect_matches_sql(kNsysDir / "h100_2gpu_1s.sqlite"); }
TEST_F(NsysExports, MockExportMatchesSql) { expect_matches_sql(kNsysDir / "mock.sqlite"); }
TEST_F(NsysExports, MinimalExportMatchesSql) { expect_matches_sql(kNsysDir / "healthy_1pct.sqlite"); }

TEST_F(NsysExports, RealExportGivesOneTracePerProcessWithRanksAndVersion) {
  auto traces = load_trace_set(kNsysDir / "h100_2gpu_1s.sqlite");
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 2u);
  Sql db(kNsysDir / "h100_2gpu_1s.sqlite");
  for (int r = 0; r < 2; ++r) {
    const Trace& t = (*traces)[static_cast<size_t>(r)];
    EXPECT_EQ(t.meta.rank, r);
    EXPECT_EQ(t.meta.world_size, 2);
    EXPECT_EQ(t.meta.format_version, "3.25.0");
    EXPECT_EQ(t.meta.producer, "NVIDIA Nsight Systems 2026.2.1.210");
    // Rank r ran on device r, and every GPU event of its trace is on that device.
    EXPECT_EQ(db.scalar("SELECT min(deviceId) FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE ((globalPid >> 24) & 16777215) = " +
                        std::to_string(t.meta.main_pid)),
              r);
    for (const Event& e : t.events)
      if (e.is_gpu) {
        ASSERT_EQ(e.device, r);
      }
  }
  // emit_nvtx names: "aten::mm, op_id = 7" comes out as the operator aten::mm on the CPU thread.
  bool mm = false, fsdp = false;
  for (const Event& e : (*traces)[0].events) {
    if (e.cat == Category::kCpuOp && (*traces)[0].name(e) == "aten::mm") mm = true;
    if (e.cat == Category::kUserAnnotation && (*traces)[0].name(e).starts_with("FSDP::pre_forward (")) fsdp = true;
    EXPECT_EQ((*traces)[0].name(e).find("op_id"), std::string::npos);
  }
  EXPECT_TRUE(mm);
  EXPECT_TRUE(fsdp);
  // load_trace (diff, one trace) gives rank 0 and says the rest exist.
  auto one = load_trace(kNsysDir / "h100_2gpu_1s.sqlite");
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(one->meta.rank, 0);
}

// An older-style export: names inline (no StringIds references), no ENUM tables, the sync kind only in
// deprecatedSyncType, a DRIVER table, devices from TARGET_INFO_GPU + TARGET_INFO_CUDA_DEVICE, OSRT calls,
// emit_nvtx ranges with shapes and ProfilerStep ranges, an NVTX domain.
TEST_F(NsysExports, OlderSchemaVariantLoads) {
  const auto p = make_db("old.sqlite", R"(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    INSERT INTO StringIds VALUES (1, 'ProfilerStep#1'), (2, 'MyDomain');
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, deviceId INTEGER, streamId INTEGER,
      correlationId INTEGER, globalPid INTEGER, demangledName TEXT, gridX INTEGER, gridY INTEGER, gridZ INTEGER,
      blockX INTEGER, blockY INTEGER, blockZ INTEGER, registersPerThread INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1100, 1600, 1, 7, 5, 4278190080, 'volta_sgemm', 4, 2, 1, 128, 1, 1, 32);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (2100, 2600, 1, 7, 9, 4278190080, 'volta_sgemm', 4, 2, 1, 128, 1, 1, 32);
    CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (start INTEGER, "end" INTEGER, deviceId INTEGER, streamId INTEGER,
      correlationId INTEGER, globalPid INTEGER, bytes INTEGER, copyKind INTEGER, srcKind INTEGER, dstKind INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (1000, 1090, 1, 7, 4, 4278190080, 4096, 1, 0, 2);
    CREATE TABLE CUPTI_ACTIVITY_KIND_SYNCHRONIZATION (start INTEGER, "end" INTEGER, deviceId INTEGER,
      streamId INTEGER, correlationId INTEGER, globalPid INTEGER, deprecatedSyncType INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_SYNCHRONIZATION VALUES (2600, 2700, 1, 7, 11, 4278190080, 3);
    CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, "end" INTEGER, globalTid INTEGER, correlationId INTEGER, nameId TEXT);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (990, 1000, 4278190335, 4, 'cudaMemcpyAsync_v3020');
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (1050, 1060, 4278190335, 5, 'cudaLaunchKernel_v7000');
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2050, 2060, 4278190335, 9, 'cudaLaunchKernel_v7000');
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (2600, 2710, 4278190335, 11, 'cudaStreamSynchronize_v3020');
    CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (start INTEGER, "end" INTEGER, globalTid INTEGER, correlationId INTEGER, nameId TEXT);
    INSERT INTO CUPTI_ACTIVITY_KIND_DRIVER VALUES (1055, 1058, 4278190335, 5, 'cuLaunchKernel');
    CREATE TABLE NVTX_EVENTS (start INTEGER, "end" INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER,
      textId INTEGER, domainId INTEGER);
    INSERT INTO NVTX_EVENTS VALUES (900, 2000, 59, NULL, 4278190335, 1, 0);
    INSERT INTO NVTX_EVENTS VALUES (2000, 3000, 59, 'ProfilerStep#2, op_id = 40', 4278190335, NULL, 0);
    INSERT INTO NVTX_EVENTS VALUES (1040, 1062, 59, 'aten::mm, seq = 3, op_id = 41, sizes = [[64, 128], [128, 32]], input_op_ids = [(1, 0)]', 4278190335, NULL, 0);
    INSERT INTO NVTX_EVENTS VALUES (10, NULL, 75, NULL, 4278190335, 2, 5);
    INSERT INTO NVTX_EVENTS VALUES (1500, 1600, 60, 'load', 4278190335, NULL, 5);
    INSERT INTO NVTX_EVENTS VALUES (2500, NULL, 59, 'cut', 4278190335, NULL, 0);
    INSERT INTO NVTX_EVENTS VALUES (2200, 2300, 59, 'ncclAllReduce', 4278190335, NULL, 6);
    INSERT INTO NVTX_EVENTS VALUES (2310, 2320, 59, 'ReduceScatter', 4278190335, NULL, 6);
    INSERT INTO NVTX_EVENTS VALUES (11, NULL, 75, 'NCCL', 4278190335, NULL, 6);
    CREATE TABLE OSRT_API (start INTEGER, "end" INTEGER, globalTid INTEGER, nameId TEXT);
    INSERT INTO OSRT_API VALUES (1200, 1300, 4278190335, 'pthread_cond_wait');
    CREATE TABLE TARGET_INFO_GPU (id INTEGER, name TEXT, totalMemory INTEGER, smCount INTEGER, computeMajor INTEGER,
      computeMinor INTEGER, maxWarpsPerSm INTEGER, threadsPerWarp INTEGER);
    INSERT INTO TARGET_INFO_GPU VALUES (0, 'Tesla V100-SXM2-16GB', 17179869184, NULL, 7, 0, 64, 32);
    CREATE TABLE TARGET_INFO_CUDA_DEVICE (gpuId INTEGER, cudaId INTEGER, pid INTEGER, numMultiprocessors INTEGER);
    INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (0, 1, 255, 80);
    CREATE TABLE META_DATA_EXPORT (name TEXT, value TEXT);
    INSERT INTO META_DATA_EXPORT VALUES ('EXPORT_PRODUCT_VERSION', '2022.4.1.21'), ('EXPORT_SCHEMA_VERSION', '2.7.1');
  )");
  auto traces = load_trace_set(p);
  ASSERT_TRUE(traces.ok()) << traces.status().message();
  ASSERT_EQ(traces->size(), 1u);
  const Trace& t = (*traces)[0];
  EXPECT_EQ(t.meta.main_pid, 255);  // (4278190080 >> 24) & 0xFFFFFF
  EXPECT_EQ(t.meta.rank, -1);       // one process: not a job
  EXPECT_EQ(t.meta.producer, "NVIDIA Nsight Systems 2022.4.1.21");
  EXPECT_EQ(t.meta.format_version, "2.7.1");
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].id, 1);  // CUDA id from TARGET_INFO_CUDA_DEVICE
  EXPECT_EQ(t.devices[0].num_sms, 80);
  EXPECT_EQ(t.devices[0].max_threads_per_sm, 2048);
  std::map<std::string, int> names;
  for (const Event& e : t.events) {
    names[std::string(to_string(e.cat)) + ":" + t.name(e)]++;
    if (e.cat == Category::kKernel) {
      EXPECT_EQ(e.grid_blocks, 8u);
      EXPECT_EQ(e.block_threads, 128u);
      EXPECT_EQ(e.device, 1);
      EXPECT_EQ(e.tid, 7);
    }
    if (e.cat == Category::kMemcpy) {
      EXPECT_EQ(e.copy_kind, CopyKind::kHtoD);
      EXPECT_EQ(e.src_mem, MemoryKind::kPageable);  // nsys numbering without ENUM tables: 0 pageable
    }
    if (e.cat == Category::kSync) {
      EXPECT_EQ(e.sync_kind, SyncKind::kStreamSync);
    }
    if (e.cat == Category::kCpuOp) {
      EXPECT_EQ(t.name(e), "aten::mm");
      ASSERT_NE(e.inputs, 0u);
      EXPECT_EQ(t.strings.get(t.op_inputs[e.inputs].dims), "[[64, 128], [128, 32]]");
    }
  }
  EXPECT_EQ(names[std::string(to_string(Category::kRuntime)) + ":cudaLaunchKernel"], 2);
  EXPECT_EQ(names[std::string(to_string(Category::kDriver)) + ":cuLaunchKernel"], 1);
  EXPECT_EQ(names[std::string(to_string(Category::kUserAnnotation)) + ":ProfilerStep#1"], 1);  // textId
  EXPECT_EQ(names[std::string(to_string(Category::kUserAnnotation)) + ":ProfilerStep#2"], 1);  // emit_nvtx suffix cut
  EXPECT_EQ(names[std::string(to_string(Category::kCpuOp)) + ":aten::mm"], 1);
  EXPECT_EQ(names[std::string(to_string(Category::kOther)) + ":pthread_cond_wait"], 1);
  // NCCL's ranges (its domain, declared after them here) under PyTorch's names for the collectives.
  EXPECT_EQ(names[std::string(to_string(Category::kUserAnnotation)) + ":nccl:all_reduce"], 1);
  EXPECT_EQ(names[std::string(to_string(Category::kUserAnnotation)) + ":nccl:reduce_scatter"], 1);
  bool domain_note = false, unended_note = false;
  for (const auto& n : t.quality.notes) {
    if (n.find("MyDomain 1") != std::string::npos) domain_note = true;
    if (n.find("1 NVTX range never ended") != std::string::npos) unended_note = true;
  }
  EXPECT_TRUE(domain_note);
  EXPECT_TRUE(unended_note);
}

TEST_F(NsysExports, SniffedByContentNotByName) {
  // An export named .json still goes to the SQLite importer; a SQLite file of another schema is refused.
  const auto p = copy_of(kNsysDir / "mock.sqlite", "renamed.json");
  auto t = load_trace(p);
  ASSERT_TRUE(t.ok()) << t.status().message();
  EXPECT_EQ(t->meta.format, "nsys_sqlite");
  const auto other = make_db("other.sqlite", "CREATE TABLE invoices (id INTEGER, total REAL); INSERT INTO invoices VALUES (1, 2.5);");
  auto bad = load_trace_set(other);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kBadInput);
  EXPECT_NE(bad.status().message().find("not an Nsight Systems export"), std::string::npos) << bad.status().message();
}

TEST_F(NsysExports, GzippedExportSaysToDecompress) {
  const auto p = copy_of(kNsysDir / "healthy_1pct.sqlite", "h.sqlite");
  ASSERT_EQ(std::system(("gzip -f '" + p.string() + "'").c_str()), 0);
  auto t = load_trace_set(p.string() + ".gz");
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), kExitBadInput);
  EXPECT_NE(t.status().message().find("gunzip"), std::string::npos) << t.status().message();
}

TEST_F(NsysExports, TruncatedAndCorruptFilesAreBadInput) {
  const auto src = kNsysDir / "h100_2gpu_1s.sqlite";
  std::string bytes;
  {
    std::ifstream in(src, std::ios::binary);
    bytes.assign(std::istreambuf_iterator<char>(in), {});
  }
  for (size_t keep : {size_t{50}, size_t{4096}, bytes.size() / 2, bytes.size() - 4096}) {
    const fs::path p = dir_ / ("cut" + std::to_string(keep) + ".sqlite");
    std::ofstream(p, std::ios::binary).write(bytes.data(), static_cast<std::streamsize>(keep));
    auto t = load_trace_set(p);
    ASSERT_FALSE(t.ok()) << keep;
    EXPECT_EQ(t.status().exit_code(), kExitBadInput) << t.status().message();
    EXPECT_EQ(t.status().message().find('\n'), std::string::npos);
    EXPECT_EQ(t.status().message().rfind(p.string(), 0), 0u) << t.status().message();
  }
  // Garbage over the b-tree pages (header intact): an error or a load, never a crash.
  std::string damaged = bytes;
  for (size_t i = 8192; i + 64 < damaged.size(); i += 4096)
    for (size_t k = 0; k < 64; ++k) damaged[i + k] = static_cast<char>(0xA5 ^ k);
  const fs::path p = dir_ / "damaged.sqlite";
  std::ofstream(p, std::ios::binary) << damaged;
  auto t = load_trace_set(p);
  if (!t.ok()) {
    EXPECT_EQ(t.status().exit_code(), kExitBadInput) << t.status().message();
    EXPECT_NE(t.status().message().find("damaged"), std::string::npos) << t.status().message();
  }
}

TEST_F(NsysExports, LockedFileIsReportedNotRead) {
  const auto p = copy_of(kNsysDir / "mock.sqlite", "locked.sqlite");
  sqlite3* writer = nullptr;
  ASSERT_EQ(sqlite3_open(p.c_str(), &writer), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(writer, "BEGIN EXCLUSIVE; CREATE TABLE scratch (x INTEGER);", nullptr, nullptr, nullptr), SQLITE_OK);
  auto t = load_trace_set(p);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), kExitBadInput);
  EXPECT_NE(t.status().message().find("locked"), std::string::npos) << t.status().message();
  sqlite3_exec(writer, "ROLLBACK", nullptr, nullptr, nullptr);
  sqlite3_close(writer);
  EXPECT_TRUE(load_trace_set(p).ok());  // once the writer is gone
}

TEST_F(NsysExports, HugeStringIsRefusedAndUnusedStringsCostNothing) {
  const std::string schema = R"(
    CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
    CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, "end" INTEGER, deviceId INTEGER, streamId INTEGER,
      globalPid INTEGER, demangledName INTEGER, shortName INTEGER);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 10, 0, 7, 16777216, 1, 1);)";
  const auto huge = make_db("huge.sqlite", schema + "INSERT INTO StringIds VALUES (1, zeroblob(20 * 1024 * 1024) || 'x');");
  auto t = load_trace_set(huge);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().exit_code(), kExitBadInput);
  EXPECT_NE(t.status().message().find("16 MiB"), std::string::npos) << t.status().message();
  // 200k strings nothing refers to are never read.
  const auto many = make_db("many.sqlite", schema + R"(INSERT INTO StringIds VALUES (1, 'k');
    WITH RECURSIVE n(i) AS (SELECT 2 UNION ALL SELECT i + 1 FROM n WHERE i < 200000)
    INSERT INTO StringIds SELECT i, printf('%0100d', i) FROM n;)");
  auto ok = load_trace_set(many);
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_LT((*ok)[0].strings.size(), 20u);
}

TEST_F(NsysExports, NeverWritesTheExport) {
  const auto p = copy_of(kNsysDir / "mock.sqlite", "ro.sqlite");
  const auto before = fs::last_write_time(p);
  const auto size = fs::file_size(p);
  ASSERT_TRUE(load_trace_set(p).ok());
  EXPECT_EQ(fs::last_write_time(p), before);
  EXPECT_EQ(fs::file_size(p), size);
  EXPECT_FALSE(fs::exists(p.string() + "-journal"));
  EXPECT_FALSE(fs::exists(p.string() + "-wal"));
}

TEST_F(NsysExports, BytesLoaderAgreesWithFileLoader) {
  std::ifstream in(kNsysDir / "mock.sqlite", std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), {});
  auto a = nsys::load_export_bytes(bytes, "mock", LoadOptions{});
  auto b = load_trace_set(kNsysDir / "mock.sqlite");
  ASSERT_TRUE(a.ok()) << a.status().message();
  ASSERT_TRUE(b.ok());
  ASSERT_EQ(a->size(), b->size());
  EXPECT_EQ((*a)[0].events.size(), (*b)[0].events.size());
}

}  // namespace
