// Recorder + native format + NVTX injection tests (no GPU, no Python).
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include <fcntl.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <condition_variable>
#include <mutex>
#include <map>
#include <set>
#include <thread>

#include "core/agent_internal.h"
#include "profile_train/format/native_format.h"
#include "profile_train/trace/native_reader.h"
#include "profile_train/format/protocol.h"
#include "profile_train/agent/recorder.h"
#include "profile_train/common/version.h"
#include "recorder_util.h"
#include "test_util.h"
#include "../trace/test_util.h"
#include "profile_train/trace/importer.h"

namespace agent = profile_train::agent;
namespace fmtn = profile_train::agent::format;
namespace native = profile_train::trace::native;
using profile_train::trace::Category;
using profile_train::trace::Trace;
using namespace pt_agent_test;

namespace {

agent::RecorderConfig config(const fs::path& dir) {
  agent::RecorderConfig c;
  c.out_dir = dir.string();
  return c;
}

std::map<std::string, int> count_names(const Trace& t, Category cat) {
  std::map<std::string, int> m;
  for (const auto& e : t.events)
    if (e.cat == cat) ++m[t.name(e)];
  return m;
}

// Blocks each caller until `n` have arrived (libstdc++ 12's std::latch polls with sleeps: slow with 1000s of
// waiters).
class Rendezvous {
 public:
  explicit Rendezvous(int n) : left_(n) {}
  void arrive_and_wait() {
    std::unique_lock<std::mutex> lock(mu_);
    if (--left_ == 0) cv_.notify_all();
    cv_.wait(lock, [&] { return left_ == 0; });
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  int left_;
};

Trace load_all(const fs::path& dir) {
  auto t = native::load_captures(capture_files(dir));
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? std::move(*t) : Trace{};
}

}  // namespace

TEST(Recorder, ThreadsRecordNestedRangesOnTheirOwnStacks) {
  const fs::path dir = fresh_dir("threads");
  constexpr int kThreads = 4, kPairs = 2000;
  ASSERT_EQ(0, in_this_process([&] {
    if (!start_recorder(config(dir))) return 2;
    const uint32_t outer = agent::intern("outer"), inner = agent::intern("inner");
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; ++i)
      ts.emplace_back([&] {
        for (int k = 0; k < kPairs; ++k) {
          agent::range_push(outer, 0);
          agent::range_push(inner, 0);
          agent::range_pop(0);
          agent::range_pop(0);
        }
      });
    for (auto& t : ts) t.join();
    return 0;
  }));
  const auto files = capture_files(dir);
  ASSERT_EQ(files.size(), 1u);
  Trace t = load_all(dir);
  auto names = count_names(t, Category::kUserAnnotation);
  EXPECT_EQ(names["outer"], kThreads * kPairs);
  EXPECT_EQ(names["inner"], kThreads * kPairs);
  std::set<int64_t> tids;
  for (const auto& e : t.events) tids.insert(e.tid);
  EXPECT_EQ(tids.size(), static_cast<size_t>(kThreads));
  // Every inner range lies inside an outer range of the same thread.
  std::map<int64_t, std::vector<const profile_train::trace::Event*>> outers;
  for (const auto& e : t.events)
    if (t.name(e) == "outer") outers[e.tid].push_back(&e);
  int inside = 0;
  for (const auto& e : t.events) {
    if (t.name(e) != "inner") continue;
    auto& v = outers[e.tid];
    auto it = std::upper_bound(v.begin(), v.end(), e.start_ns,
                               [](int64_t s, const auto* o) { return s < o->start_ns; });
    if (it != v.begin() && (*(it - 1))->end_ns() >= e.end_ns()) ++inside;
  }
  EXPECT_EQ(inside, kThreads * kPairs);
  EXPECT_EQ(t.quality.dropped_records, 0);
  EXPECT_EQ(t.meta.format, "native");
  EXPECT_EQ(t.meta.format_version, "1.0");
}

// The registry reads a capture through its byte source, as it reads every format: plain, gzipped (the facts file
// beside the .gz still found) or from memory (no folder: no facts), the same model load_captures builds from the
// file; its size limit holds.
TEST(Recorder, TheRegistryLoadsACaptureFromItsByteSource) {
  namespace trace = profile_train::trace;
  const fs::path dir = fresh_dir("registry_stream");
  ASSERT_EQ(0, in_this_process([&] {
    if (!start_recorder(config(dir))) return 2;
    const uint32_t step = agent::intern("ProfilerStep#1"), op = agent::intern("aten::mm");
    for (int i = 0; i < 200; ++i) {
      agent::range_push(step, 0);
      agent::range_push(op, 0);
      agent::range_pop(0);
      agent::range_pop(0);
    }
    return 0;
  }));
  const auto files = capture_files(dir);
  ASSERT_EQ(files.size(), 1u);
  auto info = native::read_capture_info(files[0]);
  ASSERT_TRUE(info.ok());
  const fs::path facts = dir / ("facts-" + std::to_string(info->pid) + ".json");
  std::ofstream(facts) << R"({"versions": {"torch": "2.11.0"}, "capture": {"warmup_steps": 3}})";
  auto direct = native::load_captures({files[0]});
  ASSERT_TRUE(direct.ok()) << direct.status().message();
  EXPECT_EQ(direct->meta.versions["torch"], "2.11.0");
  const std::string expected = trace::testing::model_text(*direct);

  auto plain = trace::load_trace(files[0]);
  ASSERT_TRUE(plain.ok()) << plain.status().message();
  EXPECT_EQ(trace::testing::model_text(*plain), expected);
  EXPECT_EQ(plain->meta.source_files, direct->meta.source_files);

  std::ifstream in(files[0], std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const fs::path gz = fs::path(files[0].string() + ".gz");
  std::ofstream(gz, std::ios::binary) << trace::testing::gzip_bytes(bytes);
  auto zipped = trace::load_trace(gz);
  ASSERT_TRUE(zipped.ok()) << zipped.status().message();
  EXPECT_EQ(trace::testing::model_text(*zipped), expected);
  EXPECT_EQ(zipped->meta.source_files, (std::vector<std::string>{gz.string(), facts.string()}));

  auto memory = trace::load_trace_bytes(bytes, "capture in memory");
  ASSERT_TRUE(memory.ok()) << memory.status().message();
  EXPECT_EQ(memory->meta.source_files, (std::vector<std::string>{"capture in memory"}));
  EXPECT_EQ(memory->meta.versions.count("torch"), 0u);  // no folder, no facts
  EXPECT_EQ(memory->events.size(), direct->events.size());

  trace::LoadOptions small;
  small.max_uncompressed_bytes = bytes.size() / 2;
  auto refused = trace::load_trace(gz, small);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), profile_train::StatusCode::kResourceExhausted) << refused.status().message();
  EXPECT_EQ(refused.status().message().rfind(gz.string() + ": ", 0), 0u) << refused.status().message();
}

// Two captures one after the other in one process (no fork): the second recorder is a fresh one; the thread that
// recorded into the first registers again and interns its names again, so the second file names its ranges
// by its own table (a stale name cache would point into the first recorder's).
TEST(Recorder, TwoCapturesInOneProcessEachHaveTheirOwnNames) {
  const fs::path first = fresh_dir("two_first"), second = fresh_dir("two_second");
  auto record = [](const fs::path& dir, const char* only_here, int n) {
    return in_this_process([&] {
      if (!start_recorder(config(dir))) return 2;
      const uint32_t shared = agent::intern("shared-range"), own = agent::intern(only_here);
      for (int i = 0; i < n; ++i) {
        agent::range_push(shared, 0);
        agent::range_push(own, 0);
        agent::range_pop(0);
        agent::range_pop(0);
      }
      return 0;
    });
  };
  ASSERT_EQ(0, record(first, "only-in-first", 30));
  ASSERT_EQ(0, record(second, "only-in-second", 20));
  const Trace a = load_all(first), b = load_all(second);
  auto na = count_names(a, Category::kUserAnnotation), nb = count_names(b, Category::kUserAnnotation);
  EXPECT_EQ(na["shared-range"], 30);
  EXPECT_EQ(na["only-in-first"], 30);
  EXPECT_EQ(na.count("only-in-second"), 0u);
  EXPECT_EQ(nb["shared-range"], 20);
  EXPECT_EQ(nb["only-in-second"], 20);
  EXPECT_EQ(nb.count("only-in-first"), 0u);
  EXPECT_EQ(b.quality.dropped_records, 0);
  // A running recorder is not replaced.
  ASSERT_TRUE(fresh_recorder());
  ASSERT_TRUE(start_recorder(config(fresh_dir("two_running"))));
  EXPECT_FALSE(agent::detail::renew_recorder());
  agent::recorder_stop();
}

// The capture names the agent's version: the project's one version string.
TEST(Recorder, CaptureCarriesTheProjectVersion) {
  const fs::path dir = fresh_dir("version");
  ASSERT_EQ(0, in_this_process([&] { return start_recorder(config(dir)) ? 0 : 2; }));
  const Trace t = load_all(dir);
  EXPECT_EQ(t.meta.producer, std::string("profile-train agent ") + profile_train::kVersion);
}

TEST(Recorder, OverflowDropsAreCountedNotHidden) {
  const fs::path dir = fresh_dir("overflow");
  constexpr int kRanges = 20000;
  ASSERT_EQ(0, in_this_process([&] {
    auto c = config(dir);
    c.chunk_records = 16;
    c.max_chunks = 2;
    c.flush_interval_ms = 10000;  // the writer does not drain during the burst
    if (!start_recorder(c)) return 2;
    const uint32_t n = agent::intern("burst");
    for (int k = 0; k < kRanges; ++k) {
      agent::range_push(n, 0);
      agent::range_pop(0);
    }
    const auto s = agent::recorder_stats();
    return s.dropped > 0 && s.records + s.dropped == kRanges ? 0 : 3;
  }));
  Trace t = load_all(dir);
  const auto names = count_names(t, Category::kUserAnnotation);
  const int got = names.count("burst") ? names.at("burst") : 0;
  EXPECT_GT(got, 0);
  EXPECT_LE(got, 32);  // two chunks of 16
  EXPECT_EQ(got + t.quality.dropped_records, kRanges);
  bool noted = false;
  for (const auto& n : t.quality.notes) noted |= n.find("dropped") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(Recorder, ForkedChildWritesItsOwnFileAndFlushMarkSurvivesUnderscoreExit) {
  const fs::path dir = fresh_dir("fork");
  ASSERT_EQ(0, in_fresh_child([&] {
    auto c = config(dir);
    c.flush_interval_ms = 10000;  // only the flush mark can save the child's records
    if (!start_recorder(c)) return 2;
    agent::range_push(agent::intern("parent-before"), 0);
    agent::range_pop(0);
    agent::range_push(agent::intern("open-across-fork"), 0);
    const pid_t child = fork();
    if (child == 0) {
      for (int i = 0; i < 10; ++i) {
        agent::range_push(agent::intern("in-child"), 0);
        agent::range_pop(0);
      }
      agent::mark(agent::intern(profile_train::agent::protocol::kMarkFlush), 0, profile_train::agent::protocol::kMarkFlush);
      _exit(0);  // like a DataLoader worker: no atexit handlers
    }
    int st = 0;
    waitpid(child, &st, 0);
    agent::range_pop(0);
    agent::range_push(agent::intern("parent-after"), 0);
    agent::range_pop(0);
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 3;
  }));
  const auto files = capture_files(dir);
  ASSERT_EQ(files.size(), 2u);
  int children = 0;
  for (const auto& f : files) {
    auto info = native::read_capture_info(f);
    ASSERT_TRUE(info.ok());
    auto t = native::load_captures({f});
    ASSERT_TRUE(t.ok());
    auto names = count_names(*t, Category::kUserAnnotation);
    if (info->fork_child) {
      ++children;
      EXPECT_EQ(names["in-child"], 10);
      EXPECT_EQ(names.count("parent-before"), 0u);
      EXPECT_EQ(names.count("open-across-fork"), 0u);
    } else {
      EXPECT_EQ(names.count("in-child"), 0u);
      EXPECT_EQ(names["parent-before"], 1);
      EXPECT_EQ(names["open-across-fork"], 1);
      EXPECT_EQ(names["parent-after"], 1);
    }
  }
  EXPECT_EQ(children, 1);
  // Both files together: one trace, main process = the parent.
  Trace all = load_all(dir);
  EXPECT_EQ(all.meta.source_files.size(), 2u);
}

TEST(Recorder, WarmupAndStepsBoundTheRecordedWindow) {
  const fs::path dir = fresh_dir("window");
  ASSERT_EQ(0, in_this_process([&] {
    auto c = config(dir);
    c.warmup_steps = 2;
    c.steps = 3;
    if (!start_recorder(c)) return 2;
    for (int s = 0; s < 8; ++s) {
      agent::range_push(agent::intern("ProfilerStep#" + std::to_string(s)), 0);
      agent::range_push(agent::intern("work"), 0);
      agent::range_pop(0);
      agent::range_pop(0);
    }
    return 0;
  }));
  Trace t = load_all(dir);
  auto names = count_names(t, Category::kUserAnnotation);
  EXPECT_EQ(names.count("ProfilerStep#0") + names.count("ProfilerStep#1"), 0u);
  EXPECT_EQ(names["ProfilerStep#2"] + names["ProfilerStep#3"] + names["ProfilerStep#4"], 3);
  EXPECT_EQ(names.count("ProfilerStep#5"), 0u);
  EXPECT_EQ(names["work"], 3);
}

// ---- NVTX injection through fake export tables (what an NVTX instance hands the tool) -------------------------
namespace {
NvtxFunctionPointer g_core[NVTX_CBID_CORE_SIZE];
NvtxFunctionPointer* g_core_slots[NVTX_CBID_CORE_SIZE];
NvtxFunctionPointer g_core2[NVTX_CBID_CORE2_SIZE];
NvtxFunctionPointer* g_core2_slots[NVTX_CBID_CORE2_SIZE];

int fake_get_module(NvtxCallbackModule m, NvtxFunctionTable* out, unsigned int* size) {
  if (m == NVTX_CB_MODULE_CORE) {
    for (int i = 0; i < NVTX_CBID_CORE_SIZE; ++i) g_core_slots[i] = &g_core[i];
    *out = g_core_slots;
    *size = NVTX_CBID_CORE_SIZE;
    return 1;
  }
  if (m == NVTX_CB_MODULE_CORE2) {
    for (int i = 0; i < NVTX_CBID_CORE2_SIZE; ++i) g_core2_slots[i] = &g_core2[i];
    *out = g_core2_slots;
    *size = NVTX_CBID_CORE2_SIZE;
    return 1;
  }
  return 0;
}
const NvtxExportTableCallbacks kCallbacks{sizeof(NvtxExportTableCallbacks), fake_get_module};
const void* fake_export_table(uint32_t id) { return id == NVTX_ETID_CALLBACKS ? &kCallbacks : nullptr; }
}  // namespace

TEST(NvtxInjection, FillsTablesIdempotentlyAndRecordsEveryApiFamily) {
  const fs::path dir = fresh_dir("nvtx");
  ASSERT_EQ(0, in_fresh_child([&] {
    setenv("PROFILE_TRAIN_OUT", dir.c_str(), 1);
    if (agent::nvtx_initialize(fake_export_table) != 1) return 2;
    agent::install_process_hooks(kTestHooks);
    if (agent::nvtx_initialize(fake_export_table) != 1) return 3;  // a second NVTX instance: same recorder
    auto push_a = reinterpret_cast<int (*)(const char*)>(g_core[NVTX_CBID_CORE_RangePushA]);
    auto pop = reinterpret_cast<int (*)()>(g_core[NVTX_CBID_CORE_RangePop]);
    auto push_w = reinterpret_cast<int (*)(const wchar_t*)>(g_core[NVTX_CBID_CORE_RangePushW]);
    auto mark_a = reinterpret_cast<void (*)(const char*)>(g_core[NVTX_CBID_CORE_MarkA]);
    auto start_a = reinterpret_cast<nvtxRangeId_t (*)(const char*)>(g_core[NVTX_CBID_CORE_RangeStartA]);
    auto end = reinterpret_cast<void (*)(nvtxRangeId_t)>(g_core[NVTX_CBID_CORE_RangeEnd]);
    auto name_thread = reinterpret_cast<void (*)(uint32_t, const char*)>(g_core[NVTX_CBID_CORE_NameOsThreadA]);
    auto dom_create = reinterpret_cast<nvtxDomainHandle_t (*)(const char*)>(g_core2[NVTX_CBID_CORE2_DomainCreateA]);
    auto dom_reg = reinterpret_cast<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(
        g_core2[NVTX_CBID_CORE2_DomainRegisterStringA]);
    auto dom_push = reinterpret_cast<int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
        g_core2[NVTX_CBID_CORE2_DomainRangePushEx]);
    auto dom_pop = reinterpret_cast<int (*)(nvtxDomainHandle_t)>(g_core2[NVTX_CBID_CORE2_DomainRangePop]);
    if (!push_a || !pop || !push_w || !mark_a || !start_a || !end || !name_thread || !dom_create || !dom_reg ||
        !dom_push || !dom_pop)
      return 4;
    if (push_a("a-range") != 0) return 5;
    if (push_w(L"w-range\u00e9") != 1) return 6;
    pop();
    pop();
    mark_a("a-mark");
    mark_a("profile_train:not-a-real-control");  // control prefix: not recorded
    const nvtxRangeId_t id = start_a("start-end");
    std::thread([&] { end(id); }).join();  // start/end ranges may end on another thread
    name_thread(static_cast<uint32_t>(agent::current_tid()), "trainer-main");
    nvtxDomainHandle_t d = dom_create("my-domain");
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = dom_reg(d, "registered-range");
    dom_push(d, &attr);
    dom_pop(d);
    return agent::recorder_stats().nvtx_init_calls == 2 ? 0 : 7;
  }));
  Trace t = load_all(dir);
  auto names = count_names(t, Category::kUserAnnotation);
  EXPECT_EQ(names["a-range"], 1);
  EXPECT_EQ(names["w-range\xc3\xa9"], 1);
  EXPECT_EQ(names["a-mark"], 1);
  EXPECT_EQ(names["start-end"], 1);
  EXPECT_EQ(names["registered-range"], 1);
  EXPECT_EQ(names.count("profile_train:not-a-real-control"), 0u);
  bool named = false;
  for (const auto& [k, v] : t.meta.thread_names) named |= v == "trainer-main";
  EXPECT_TRUE(named);
}

// A handle the program made up (or one from another tool) passed back to a range or mark call: the agent must
// neither dereference it nor crash the host program; it counts it and records the event without the name.
TEST(NvtxInjection, FabricatedHandlesAreCountedNotDereferenced) {
  const fs::path dir = fresh_dir("nvtx_bad_handles");
  ASSERT_EQ(0, in_fresh_child([&] {
    setenv("PROFILE_TRAIN_OUT", dir.c_str(), 1);
    if (agent::nvtx_initialize(fake_export_table) != 1) return 2;
    agent::install_process_hooks(kTestHooks);
    auto dom_create = reinterpret_cast<nvtxDomainHandle_t (*)(const char*)>(g_core2[NVTX_CBID_CORE2_DomainCreateA]);
    auto dom_reg = reinterpret_cast<nvtxStringHandle_t (*)(nvtxDomainHandle_t, const char*)>(
        g_core2[NVTX_CBID_CORE2_DomainRegisterStringA]);
    auto dom_push = reinterpret_cast<int (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
        g_core2[NVTX_CBID_CORE2_DomainRangePushEx]);
    auto dom_pop = reinterpret_cast<int (*)(nvtxDomainHandle_t)>(g_core2[NVTX_CBID_CORE2_DomainRangePop]);
    auto dom_mark = reinterpret_cast<void (*)(nvtxDomainHandle_t, const nvtxEventAttributes_t*)>(
        g_core2[NVTX_CBID_CORE2_DomainMarkEx]);
    nvtxDomainHandle_t d = dom_create("real-domain");
    nvtxEventAttributes_t attr{};
    attr.version = NVTX_VERSION;
    attr.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attr.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
    attr.message.registered = dom_reg(d, "real-registered");
    dom_push(d, &attr);
    dom_pop(d);
    // Unmapped addresses, and a mapped one that is not a handle of ours.
    uint64_t not_a_handle[4] = {0xdeadbeefdeadbeefull, 1, 2, 3};
    const nvtxStringHandle_t fakes[] = {reinterpret_cast<nvtxStringHandle_t>(uintptr_t{0x10}),
                                        reinterpret_cast<nvtxStringHandle_t>(~uintptr_t{0} - 7),
                                        reinterpret_cast<nvtxStringHandle_t>(&not_a_handle[1]),
                                        reinterpret_cast<nvtxStringHandle_t>(reinterpret_cast<char*>(attr.message.registered) + 1)};
    for (nvtxStringHandle_t f : fakes) {
      attr.message.registered = f;
      dom_push(d, &attr);
      dom_pop(d);
      dom_mark(d, &attr);
    }
    const auto fake_domain = reinterpret_cast<nvtxDomainHandle_t>(uintptr_t{0x20});
    attr.message.registered = nullptr;  // NVTX's "no handle": not an error
    dom_push(fake_domain, &attr);
    dom_pop(fake_domain);
    const auto s = agent::recorder_stats();
    // 4 fake strings x (push + mark), the fake domain on push and pop.
    return s.bad_handles == 4 * 2 + 2 ? 0 : 10 + static_cast<int>(s.bad_handles);
  }));
  Trace t = load_all(dir);
  auto names = count_names(t, Category::kUserAnnotation);
  EXPECT_EQ(names["real-registered"], 1);
  bool noted = false;
  for (const auto& n : t.quality.notes) noted |= n.find("handle the agent never returned") != std::string::npos;
  EXPECT_TRUE(noted);
}

// Millions of distinct range names (a name per step or per sample) must not grow the user's process without
// bound: past the table's limit new names share hashed "other names" entries, counted; names interned before
// keep their id, and step names still mark steps.
TEST(Recorder, NameTableIsBoundedAndOverflowIsCounted) {
  const fs::path dir = fresh_dir("names");
  constexpr int kNames = 300000;
  ASSERT_EQ(0, in_this_process([&] {
    if (!start_recorder(config(dir))) return 2;
    const uint32_t early = agent::intern("early-name");
    char name[64];
    for (int i = 0; i < kNames; ++i) {
      std::snprintf(name, sizeof name, "distinct-%d", i);
      agent::range_push(agent::intern(name), 0);
      agent::range_pop(0);
    }
    const auto s = agent::recorder_stats();
    if (s.names >= static_cast<uint64_t>(kNames) / 2) return 3;         // bounded well below what was asked
    if (s.names + s.names_bucketed < static_cast<uint64_t>(kNames)) return 4;  // every refused name counted
    if (agent::intern("early-name") != early) return 5;
    agent::range_push(agent::intern("ProfilerStep#999999"), 0);  // past the limit: still a step boundary
    agent::range_pop(0);
    return 0;
  }));
  Trace t = load_all(dir);
  EXPECT_LT(t.strings.size(), static_cast<size_t>(kNames) / 2);
  auto names = count_names(t, Category::kUserAnnotation);
  int steps = 0, others = 0;
  for (const auto& [n, c] : names) {
    steps += n.rfind("ProfilerStep#", 0) == 0 ? c : 0;
    others += n.rfind("[other names", 0) == 0 ? c : 0;
  }
  EXPECT_EQ(steps, 1);
  EXPECT_GT(others, 0);
  bool noted = false;
  for (const auto& n : t.quality.notes) noted |= n.find("name table was full") != std::string::npos;
  EXPECT_TRUE(noted);
}

// A process with a thousand recording threads alive at once (thread pools, DataLoader threads) keeps every
// record with the default buffer: a thread does not pin a full chunk before it has filled one.
TEST(Recorder, AThousandThreadsRecordWithoutDrops) {
  const fs::path dir = fresh_dir("many_threads");
  constexpr int kThreads = 1000, kRanges = 20;
  ASSERT_EQ(0, in_this_process([&] {
    if (!start_recorder(config(dir))) return 2;
    const uint32_t n = agent::intern("pool-range");
    Rendezvous all_recorded(kThreads);  // every thread stays alive (holding its buffer) until all have recorded
    std::vector<std::thread> ts;
    for (int i = 0; i < kThreads; ++i)
      ts.emplace_back([&] {
        for (int k = 0; k < kRanges; ++k) {
          agent::range_push(n, 0);
          agent::range_pop(0);
        }
        all_recorded.arrive_and_wait();
      });
    for (auto& t : ts) t.join();
    return agent::recorder_stats().dropped == 0 ? 0 : 3;
  }));
  Trace t = load_all(dir);
  EXPECT_EQ(count_names(t, Category::kUserAnnotation)["pool-range"], kThreads * kRanges);
  EXPECT_EQ(t.quality.dropped_records, 0);
}

// ---- native format ----------------------------------------------------------------------------------------
namespace {
fmtn::Record rec(fmtn::RecordKind k, int64_t start, int64_t end) {
  fmtn::Record r;
  r.kind = static_cast<uint8_t>(k);
  r.start_ns = start;
  r.end_ns = end;
  return r;
}

// A capture with one record of every kind (as the CUPTI adapter would produce them).
fs::path write_all_kinds(const std::string& name) {
  const fs::path dir = fresh_dir(name);
  EXPECT_EQ(0, in_this_process([&] {
    if (!start_recorder(config(dir))) return 2;
    agent::range_push(agent::intern("ProfilerStep#0"), 0);
    auto k = rec(fmtn::RecordKind::kKernel, 1000, 3000);
    k.name = agent::intern("void gemm_kernel<float>(...)");
    k.device = 0;
    k.tid = 7;
    k.corr = 42;
    k.value = 128;
    k.x0 = 256;
    k.x1 = 32;
    k.x2 = 4096;
    agent::record(k);
    agent::recorder_flush();  // several event chunks: a cut can fall between them
    auto m = rec(fmtn::RecordKind::kMemcpy, 3000, 4000);
    m.a = static_cast<uint8_t>(fmtn::CopyKind::kHtoD);
    m.b = static_cast<uint8_t>(fmtn::MemKind::kPageable);
    m.c = static_cast<uint8_t>(fmtn::MemKind::kDevice);
    m.value = 1 << 20;
    m.device = 0;
    m.tid = 7;
    m.corr = 43;
    agent::record(m);
    agent::recorder_flush();
    auto ms = rec(fmtn::RecordKind::kMemset, 4000, 4100);
    ms.value = 512;
    ms.device = 0;
    ms.c = static_cast<uint8_t>(fmtn::MemKind::kDevice);
    agent::record(ms);
    auto sy = rec(fmtn::RecordKind::kSync, 4100, 5000);
    sy.a = static_cast<uint8_t>(fmtn::SyncKind::kStreamSync);
    sy.device = 0;
    sy.tid = 7;
    agent::record(sy);
    agent::recorder_flush();
    auto api = rec(fmtn::RecordKind::kRuntime, 900, 950);
    api.name = agent::intern("cudaLaunchKernel_v7000");
    api.tid = agent::current_tid();
    api.corr = 42;
    agent::record(api);
    auto drv = rec(fmtn::RecordKind::kDriver, 960, 970);
    drv.name = agent::intern("cuLaunchKernel");
    drv.tid = agent::current_tid();
    agent::record(drv);
    auto mem = rec(fmtn::RecordKind::kMemory, 800, 800);
    mem.value = 2 << 20;
    mem.device = 0;
    agent::record(mem);
    agent::add_json_chunk(fmtn::ChunkType::kDevice,
                          R"({"id":0,"name":"Test GPU","vendor":"nvidia","compute_major":9,"compute_minor":0,)"
                          R"("num_sms":132,"total_memory_bytes":80000000000})");
    agent::set_status("cupti", R"({"state":"enabled","cupti_api_version":130001})");
    agent::range_pop(0);
    return 0;
  }));
  return dir;
}
}  // namespace

TEST(NativeFormat, RoundTripOfEveryRecordKind) {
  const fs::path dir = write_all_kinds("roundtrip");
  Trace t = load_all(dir);
  int kernels = 0, copies = 0, memsets = 0, syncs = 0, runtime = 0, driver = 0;
  for (const auto& e : t.events) {
    switch (e.cat) {
      case Category::kKernel:
        ++kernels;
        EXPECT_EQ(t.name(e), "void gemm_kernel<float>(...)");
        EXPECT_TRUE(e.is_gpu);
        EXPECT_EQ(e.device, 0);
        EXPECT_EQ(e.tid, 7);
        EXPECT_EQ(e.correlation, 42);
        EXPECT_EQ(e.grid_blocks, 128u);
        EXPECT_EQ(e.block_threads, 256u);
        EXPECT_EQ(e.registers_per_thread, 32);
        EXPECT_EQ(e.shared_mem_bytes, 4096);
        EXPECT_EQ(e.dur_ns, 2000);
        break;
      case Category::kMemcpy:
        ++copies;
        EXPECT_EQ(e.copy_kind, profile_train::trace::CopyKind::kHtoD);
        EXPECT_EQ(e.src_mem, profile_train::trace::MemoryKind::kPageable);
        EXPECT_EQ(e.dst_mem, profile_train::trace::MemoryKind::kDevice);
        EXPECT_EQ(e.bytes, 1 << 20);
        break;
      case Category::kMemset:
        ++memsets;
        EXPECT_EQ(e.bytes, 512);
        break;
      case Category::kSync:
        ++syncs;
        EXPECT_EQ(e.sync_kind, profile_train::trace::SyncKind::kStreamSync);
        break;
      case Category::kRuntime:
        ++runtime;
        EXPECT_EQ(t.name(e), "cudaLaunchKernel");  // version suffix stripped
        EXPECT_EQ(e.correlation, 42);
        break;
      case Category::kDriver:
        ++driver;
        EXPECT_EQ(t.name(e), "cuLaunchKernel");
        break;
      default:
        break;
    }
  }
  EXPECT_EQ(kernels, 1);
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(memsets, 1);
  EXPECT_EQ(syncs, 1);
  EXPECT_EQ(runtime, 1);
  EXPECT_EQ(driver, 1);
  ASSERT_EQ(t.memory.size(), 1u);
  EXPECT_EQ(t.memory[0].bytes_delta, 2 << 20);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].name, "Test GPU");
  EXPECT_EQ(t.devices[0].num_sms, 132);
  EXPECT_TRUE(t.meta.gpu_capture_attempted);
  EXPECT_EQ(t.meta.versions["cupti_api_version"], "130001");
  EXPECT_FALSE(t.quality.missing_device_properties);
}

TEST(NativeFormat, TruncatedFileKeepsWhatPrecedesTheCut) {
  const fs::path dir = write_all_kinds("truncated");
  const auto files = capture_files(dir);
  ASSERT_EQ(files.size(), 1u);
  std::ifstream in(files[0], std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto full = native::load_captures(files);
  ASSERT_TRUE(full.ok());
  const size_t full_events = full->events.size();
  size_t previous = 0;
  bool saw_partial = false;
  for (size_t cut = sizeof(fmtn::FileHeader); cut < data.size(); cut += 8) {
    const fs::path p = dir / "cut.ptrace.bin";
    std::ofstream(p, std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(cut));
    auto t = native::load_captures({p});
    ASSERT_TRUE(t.ok()) << "cut at " << cut << ": " << t.status().message();
    EXPECT_LE(t->events.size(), full_events);
    EXPECT_GE(t->events.size(), previous);  // never fewer events for a longer prefix
    previous = t->events.size();
    if (t->events.size() > 0 && t->events.size() < full_events) saw_partial = true;
    bool noted = false;
    for (const auto& n : t->quality.notes) noted |= n.find("truncated") != std::string::npos;
    // A cut inside a chunk is reported (a cut exactly between chunks is indistinguishable from a crash).
    if (!noted) {
      bool crash_note = false;
      for (const auto& n : t->quality.notes) crash_note |= n.find("without a final flush") != std::string::npos;
      EXPECT_TRUE(crash_note) << "cut at " << cut;
    }
  }
  EXPECT_TRUE(saw_partial);
}

TEST(NativeFormat, UnknownMajorVersionIsRejectedClearly) {
  const fs::path dir = write_all_kinds("major");
  const auto files = capture_files(dir);
  ASSERT_EQ(files.size(), 1u);
  {
    std::fstream f(files[0], std::ios::binary | std::ios::in | std::ios::out);
    const uint16_t major = 9;
    f.seekp(8);
    f.write(reinterpret_cast<const char*>(&major), 2);
  }
  auto t = native::load_captures(files);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), profile_train::StatusCode::kUnsupported);
  EXPECT_NE(t.status().message().find("version 9.0"), std::string::npos) << t.status().message();
}

TEST(NativeFormat, NotACaptureIsBadInput) {
  const fs::path dir = fresh_dir("garbage");
  const fs::path p = dir / "x.ptrace";
  std::ofstream(p) << "{\"traceEvents\": []}";
  auto t = native::load_captures({p});
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.status().code(), profile_train::StatusCode::kBadInput);
}

TEST(NativeFormat, CorruptChecksumIsNotedAsADamagedRegion) {
  const fs::path dir = write_all_kinds("checksum");
  const auto files = capture_files(dir);
  std::ifstream in(files[0], std::ios::binary);
  std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  data[data.size() - 20] ^= 0x5a;  // inside the last chunk
  std::ofstream(files[0], std::ios::binary | std::ios::trunc).write(data.data(), static_cast<std::streamsize>(data.size()));
  auto t = native::load_captures(files);
  ASSERT_TRUE(t.ok());
  bool noted = false;
  for (const auto& n : t->quality.notes) noted |= n.find("damaged region") != std::string::npos;
  EXPECT_TRUE(noted);
}

TEST(NativeFormat, StripsCuptiVersionSuffixes) {
  EXPECT_EQ(native::strip_api_version("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(native::strip_api_version("cudaMemcpy_v3020"), "cudaMemcpy");
  EXPECT_EQ(native::strip_api_version("cuMemAlloc_v2"), "cuMemAlloc");
  EXPECT_EQ(native::strip_api_version("cudaStreamSynchronize"), "cudaStreamSynchronize");
  EXPECT_EQ(native::strip_api_version("my_v"), "my_v");
  EXPECT_EQ(native::strip_api_version("a_vx1"), "a_vx1");
}
