// Real GPU records through our own capture path: the kernel, copy, memset, synchronization and runtime rows
// of one process of the real 2x H100 Nsight Systems export are rebuilt as CUPTI activity records, go through
// the agent's translation (cupti::translate) into the recorder, and the native file is read back and analyzed.
// The analysis of that capture must agree with the analysis of the same rows read by the nsys importer (no
// GPU needed: the records are what CUPTI handed nsys on the H100s).
#include <cupti.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/agent_internal.h"
#include "cupti/translate.h"
#include "profile_train/trace/native_reader.h"
#include "profile_train/agent/recorder.h"
#include "profile_train/analysis/analyze.h"
#include "profile_train/trace/importer.h"
#include "report_view.h"
#include "recorder_util.h"
#include "test_util.h"

namespace agent = profile_train::agent;
namespace cupti = profile_train::agent::cupti;
namespace trace = profile_train::trace;
using nlohmann::json;
using namespace pt_agent_test;

namespace {

const fs::path kExport = fs::path(PT_TRACES_DIR) / "nsys" / "h100_2gpu_1s.sqlite";

uint32_t intern_view(std::string_view s) { return agent::intern(s); }

std::string api_name(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  const char* n = nullptr;
  if (cuptiGetCallbackName(domain, cbid, &n) == CUPTI_SUCCESS && n) return n;
  return "cbid_" + std::to_string(cbid);
}

// CUPTI's runtime callback id for nsys's name of the call ("cudaLaunchKernel_v7000"): both name calls the same.
std::map<std::string, CUpti_CallbackId> runtime_cbids() {
  std::map<std::string, CUpti_CallbackId> out;
  for (uint32_t id = 1; id < CUPTI_RUNTIME_TRACE_CBID_SIZE; ++id) {
    const char* n = nullptr;
    if (cuptiGetCallbackName(CUPTI_CB_DOMAIN_RUNTIME_API, id, &n) == CUPTI_SUCCESS && n) out.emplace(n, id);
  }
  return out;
}

class Rows {
 public:
  explicit Rows(const fs::path& p) {
    sqlite3_open_v2(("file:" + p.string() + "?immutable=1").c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, nullptr);
  }
  ~Rows() { sqlite3_close(db_); }
  // Calls f(stmt) per row.
  template <typename F>
  void each(const std::string& sql, F f) {
    sqlite3_stmt* s = nullptr;
    ASSERT_EQ(sqlite3_prepare_v2(db_, sql.c_str(), -1, &s, nullptr), SQLITE_OK) << sqlite3_errmsg(db_) << ": " << sql;
    while (sqlite3_step(s) == SQLITE_ROW) f(s);
    sqlite3_finalize(s);
  }

 private:
  sqlite3* db_ = nullptr;
};

int64_t i64(sqlite3_stmt* s, int c) { return sqlite3_column_int64(s, c); }
std::string str(sqlite3_stmt* s, int c) {
  const auto* p = sqlite3_column_text(s, c);
  return p ? reinterpret_cast<const char*>(p) : "";
}

// nsys's ENUM_CUDA_MEM_KIND symbol -> CUPTI's memory kind.
uint8_t cupti_mem(const std::string& n) {
  if (n.ends_with("PAGEABLE")) return CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  if (n.ends_with("PINNED")) return CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  if (n.ends_with("DEVICE")) return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  if (n.ends_with("ARRAY")) return CUPTI_ACTIVITY_MEMORY_KIND_ARRAY;
  if (n.ends_with("MANAGED")) return CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  return CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN;
}

// Feeds the export's rows of process `pid` through cupti::translate into the running recorder.
void replay(int64_t pid) {
  cupti::TranslateContext ctx;
  ctx.intern = intern_view;
  ctx.api_name = api_name;
  auto feed = [&](const auto& rec) {
    const auto t = cupti::translate(reinterpret_cast<const CUpti_Activity*>(&rec), ctx);
    if (t.what == cupti::Translated::What::kRecord) agent::record(t.rec);
  };
  Rows db(kExport);
  const std::string mine = "((globalPid >> 24) & 16777215) = " + std::to_string(pid);
  std::vector<std::string> names;  // keeps kernel names alive while translate copies them
  db.each("SELECT k.start, k.\"end\", deviceId, contextId, streamId, correlationId, s.value, gridX, gridY, gridZ, "
          "blockX, blockY, blockZ, registersPerThread, staticSharedMemory, dynamicSharedMemory "
          "FROM CUPTI_ACTIVITY_KIND_KERNEL k JOIN StringIds s ON s.id = k.demangledName WHERE " + mine,
          [&](sqlite3_stmt* s) {
            CUpti_ActivityKernel10 k;
            std::memset(&k, 0, sizeof k);
            k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            const std::string name = str(s, 6);
            k.name = name.c_str();
            k.start = static_cast<uint64_t>(i64(s, 0));
            k.end = static_cast<uint64_t>(i64(s, 1));
            k.deviceId = static_cast<uint32_t>(i64(s, 2));
            k.contextId = static_cast<uint32_t>(i64(s, 3));
            k.streamId = static_cast<uint32_t>(i64(s, 4));
            k.correlationId = static_cast<uint32_t>(i64(s, 5));
            k.gridX = static_cast<int32_t>(i64(s, 7));
            k.gridY = static_cast<int32_t>(i64(s, 8));
            k.gridZ = static_cast<int32_t>(i64(s, 9));
            k.blockX = static_cast<int32_t>(i64(s, 10));
            k.blockY = static_cast<int32_t>(i64(s, 11));
            k.blockZ = static_cast<int32_t>(i64(s, 12));
            k.registersPerThread = static_cast<uint16_t>(i64(s, 13));
            k.staticSharedMemory = static_cast<int32_t>(i64(s, 14));
            k.dynamicSharedMemory = static_cast<int32_t>(i64(s, 15));
            feed(k);
          });
  db.each("SELECT m.start, m.\"end\", deviceId, contextId, streamId, correlationId, bytes, copyKind, "
          "(SELECT name FROM ENUM_CUDA_MEM_KIND WHERE id = srcKind), (SELECT name FROM ENUM_CUDA_MEM_KIND WHERE id = dstKind) "
          "FROM CUPTI_ACTIVITY_KIND_MEMCPY m WHERE " + mine,
          [&](sqlite3_stmt* s) {
            CUpti_ActivityMemcpy6 m;
            std::memset(&m, 0, sizeof m);
            m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            m.start = static_cast<uint64_t>(i64(s, 0));
            m.end = static_cast<uint64_t>(i64(s, 1));
            m.deviceId = static_cast<uint32_t>(i64(s, 2));
            m.contextId = static_cast<uint32_t>(i64(s, 3));
            m.streamId = static_cast<uint32_t>(i64(s, 4));
            m.correlationId = static_cast<uint32_t>(i64(s, 5));
            m.bytes = static_cast<uint64_t>(i64(s, 6));
            m.copyKind = static_cast<uint8_t>(i64(s, 7));  // nsys keeps CUPTI's numbering of copy kinds
            m.srcKind = cupti_mem(str(s, 8));
            m.dstKind = cupti_mem(str(s, 9));
            feed(m);
          });
  db.each("SELECT start, \"end\", deviceId, contextId, streamId, correlationId, bytes, value FROM CUPTI_ACTIVITY_KIND_MEMSET WHERE " + mine,
          [&](sqlite3_stmt* s) {
            CUpti_ActivityMemset4 m;
            std::memset(&m, 0, sizeof m);
            m.kind = CUPTI_ACTIVITY_KIND_MEMSET;
            m.start = static_cast<uint64_t>(i64(s, 0));
            m.end = static_cast<uint64_t>(i64(s, 1));
            m.deviceId = static_cast<uint32_t>(i64(s, 2));
            m.contextId = static_cast<uint32_t>(i64(s, 3));
            m.streamId = static_cast<uint32_t>(i64(s, 4));
            m.correlationId = static_cast<uint32_t>(i64(s, 5));
            m.bytes = static_cast<uint64_t>(i64(s, 6));
            m.value = static_cast<uint32_t>(i64(s, 7));
            m.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
            feed(m);
          });
  db.each("SELECT start, \"end\", contextId, streamId, correlationId, syncType FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION WHERE " + mine,
          [&](sqlite3_stmt* s) {
            CUpti_ActivitySynchronization2 y;
            std::memset(&y, 0, sizeof y);
            y.kind = CUPTI_ACTIVITY_KIND_SYNCHRONIZATION;
            y.start = static_cast<uint64_t>(i64(s, 0));
            y.end = static_cast<uint64_t>(i64(s, 1));
            y.contextId = static_cast<uint32_t>(i64(s, 2));
            y.streamId = static_cast<uint32_t>(i64(s, 3));
            y.correlationId = static_cast<uint32_t>(i64(s, 4));
            y.type = static_cast<CUpti_ActivitySynchronizationType>(i64(s, 5));  // same numbering in nsys
            feed(y);
          });
  const auto cbids = runtime_cbids();
  int64_t unknown = 0;
  db.each("SELECT r.start, r.\"end\", r.globalTid & 16777215, r.correlationId, s.value FROM CUPTI_ACTIVITY_KIND_RUNTIME r "
          "JOIN StringIds s ON s.id = r.nameId WHERE ((r.globalTid >> 24) & 16777215) = " + std::to_string(pid),
          [&](sqlite3_stmt* s) {
            auto it = cbids.find(str(s, 4));
            if (it == cbids.end()) {
              ++unknown;
              return;
            }
            CUpti_ActivityAPI a;
            std::memset(&a, 0, sizeof a);
            a.kind = CUPTI_ACTIVITY_KIND_RUNTIME;
            a.cbid = it->second;
            a.start = static_cast<uint64_t>(i64(s, 0));
            a.end = static_cast<uint64_t>(i64(s, 1));
            a.processId = static_cast<uint32_t>(pid);
            a.threadId = static_cast<uint32_t>(i64(s, 2));
            a.correlationId = static_cast<uint32_t>(i64(s, 3));
            feed(a);
          });
  EXPECT_EQ(unknown, 0);  // every runtime call nsys recorded has a CUPTI callback id of the same name
}

double at(const json& j, const std::string& path) {
  const json* p = &j;
  for (size_t a = 0, b; a <= path.size(); a = b + 1) {
    b = path.find('.', a);
    if (b == std::string::npos) b = path.size();
    p = &(*p)[path.substr(a, b - a)];
  }
  return p->is_number() ? p->get<double>() : -1;
}

}  // namespace

TEST(NsysThroughCupti, RealH100RecordsAnalyzeTheSameThroughOurCapturePath) {
  if (!fs::exists(kExport)) GTEST_SKIP() << kExport << " not found";
  // The nsys importer's view of rank 0, without its NVTX ranges (the replay feeds GPU and runtime records only).
  auto set = trace::load_trace_set(kExport);
  ASSERT_TRUE(set.ok()) << set.status().message();
  trace::Trace direct = std::move((*set)[0]);
  const int64_t pid = direct.meta.main_pid;
  std::erase_if(direct.events, [](const trace::Event& e) {
    return e.cat == trace::Category::kUserAnnotation || e.cat == trace::Category::kCpuOp || e.cat == trace::Category::kOther;
  });

  const fs::path dir = fresh_dir("nsys_cupti");
  const int rc = in_child([&] {
    agent::RecorderConfig c;
    c.out_dir = dir.string();
    if (!start_recorder(c)) return 2;
    agent::set_status("cupti", R"({"state":"enabled","kinds":["kernel","memcpy","memset","runtime"]})");
    replay(pid);
    agent::recorder_stop();
    return ::testing::Test::HasFailure() ? 3 : 0;
  });
  ASSERT_EQ(rc, 0);
  auto captured = trace::native::load_captures(capture_files(dir));
  ASSERT_TRUE(captured.ok()) << captured.status().message();
  fs::remove_all(dir);

  // Same records on both sides.
  auto count = [](const trace::Trace& t, trace::Category c) {
    return std::count_if(t.events.begin(), t.events.end(), [c](const trace::Event& e) { return e.cat == c; });
  };
  for (auto c : {trace::Category::kKernel, trace::Category::kMemcpy, trace::Category::kMemset, trace::Category::kSync,
                 trace::Category::kRuntime})
    EXPECT_EQ(count(direct, c), count(*captured, c)) << trace::to_string(c);
  EXPECT_EQ(captured->quality.dropped_records, 0);

  // And the same analysis.
  const json a = profile_train::analysis::build_report(direct);
  const json b = profile_train::analysis::build_report(*captured);
  EXPECT_EQ(a["verdict"]["bottleneck"], "host_to_device");
  EXPECT_EQ(a["verdict"]["bottleneck"], b["verdict"]["bottleneck"]) << b["verdict"].dump();
  for (const char* path : {"steps.mean_ms", "gpu.utilization", "gpu.memcpy.h2d.bytes_per_step",
                           "gpu.memcpy.h2d.pageable_fraction", "gpu.memcpy.h2d.count_per_step", "gpu.memcpy.d2d.bytes_per_step",
                           "host.launches_per_step", "breakdown.kernel", "breakdown.memcpy", "breakdown.runtime"}) {
    const double x = at(a, path), y = at(b, path);
    EXPECT_GE(x, 0) << path << ": not in the report";
    EXPECT_NEAR(x, y, 1e-6 * std::max(1.0, std::abs(x))) << path;
  }
  EXPECT_EQ(a["data_quality"]["unmatched_correlations"], b["data_quality"]["unmatched_correlations"]);
  std::printf("replayed %lld records; h2d %.0f B/step, util %.4f, launches/step %.0f, verdict %s\n",
              static_cast<long long>(count(*captured, trace::Category::kKernel)), at(b, "gpu.memcpy.h2d.bytes_per_step"),
              at(b, "gpu.utilization"), at(b, "host.launches_per_step"), b["verdict"]["bottleneck"].dump().c_str());
}
