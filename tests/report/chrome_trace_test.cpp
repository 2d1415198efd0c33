// Chrome-trace JSON export (--perfetto): valid JSON, one X event per model event, flows, counters, names escaped.
// Expected counts are computed here directly from the trace model, not from the writer.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <unordered_map>

#include "profile_train/report/writers.h"
#include "profile_train/trace/importer.h"
#include "synthetic.h"
#include "test_util.h"

namespace profile_train::report {
namespace {

using namespace profile_train::report::testing;
using nlohmann::json;

struct Expected {
  size_t x = 0, flows = 0, counters = 0, cpu_threads = 0, gpu_tracks = 0;
};

Expected expected_counts(const trace::Trace& t) {
  Expected e;
  e.x = t.events.size();
  std::set<int64_t> launches;
  std::set<std::pair<int64_t, int64_t>> cpu, gpu;
  for (const auto& ev : t.events) {
    if (!ev.is_gpu && ev.correlation >= 0 &&
        (ev.cat == trace::Category::kRuntime || ev.cat == trace::Category::kDriver))
      launches.insert(ev.correlation);
    if (ev.is_gpu) gpu.insert({ev.device, ev.tid * 2 + (ev.cat == trace::Category::kGpuAnnotation)});
    else cpu.insert({ev.pid, ev.tid});
  }
  std::set<int64_t> flowed;
  for (const auto& ev : t.events)
    if (ev.is_gpu && ev.cat != trace::Category::kGpuAnnotation && launches.count(ev.correlation))
      flowed.insert(ev.correlation);
  e.flows = flowed.size();
  for (const auto& m : t.memory) e.counters += m.total_allocated >= 0;
  e.cpu_threads = cpu.size();
  e.gpu_tracks = gpu.size();
  return e;
}

void check_export(const trace::Trace& t, const std::filesystem::path& file) {
  ASSERT_TRUE(write_chrome_trace(t, file).ok());
  json doc;
  ASSERT_NO_THROW(doc = json::parse(read_file(file))) << file;
  ASSERT_TRUE(doc.contains("traceEvents") && doc["traceEvents"].is_array());
  std::map<std::string, size_t> by_ph;
  std::map<std::string, size_t> meta;
  std::set<std::pair<int64_t, int64_t>> x_tracks;
  std::unordered_map<int64_t, int> flow_ids;
  for (const auto& e : doc["traceEvents"]) {
    const std::string ph = e.at("ph");
    ++by_ph[ph];
    if (ph == "M") ++meta[e.at("name").get<std::string>()];
    if (ph == "X") {
      ASSERT_TRUE(e.at("ts").is_number() && e.at("dur").is_number() && e.at("pid").is_number() && e.at("tid").is_number());
      ASSERT_GE(e["dur"].get<double>(), 0.0);
      x_tracks.insert({e["pid"].get<int64_t>(), e["tid"].get<int64_t>()});
    }
    if (ph == "s") ++flow_ids[e.at("id").get<int64_t>()];
    if (ph == "f") {
      EXPECT_EQ(e.at("bp"), "e");
      ++flow_ids[e.at("id").get<int64_t>()];
    }
  }
  const Expected want = expected_counts(t);
  EXPECT_EQ(by_ph["X"], want.x);
  EXPECT_EQ(by_ph["s"], want.flows);
  EXPECT_EQ(by_ph["f"], want.flows);
  for (const auto& [id, n] : flow_ids) EXPECT_EQ(n, 2) << "flow " << id << " is not one start + one finish";
  EXPECT_EQ(by_ph["C"], want.counters);
  EXPECT_EQ(meta["thread_name"], want.cpu_threads + want.gpu_tracks);
  EXPECT_EQ(x_tracks.size(), want.cpu_threads + want.gpu_tracks);
}

TEST(ChromeTrace, SyntheticTraceCountsFlowsAndEscaping) {
  auto t = make_training_trace(3, 12, 20'000'000, "kern\"<script>alert(1)</script>\\\x01");
  const auto file = temp_dir("perfetto") / "trace.json";
  check_export(t, file);
  const std::string text = read_file(file);
  EXPECT_EQ(text.find("<script>"), std::string::npos);  // \u003c escapes
  const json doc = json::parse(text);
  bool found = false, gpu_named = false;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "X" && e["name"] == "kern\"<script>alert(1)</script>\\\x01") found = true;
    if (e["ph"] == "M" && e["name"] == "process_name" && e["args"]["name"] == "GPU 0 \xC2\xB7 Synthetic GPU") gpu_named = true;
  }
  EXPECT_TRUE(found);
  EXPECT_TRUE(gpu_named);
  // Timestamps are relative to the first event: the first ProfilerStep starts at 0.
  double min_ts = 1e300;
  for (const auto& e : doc["traceEvents"])
    if (e["ph"] == "X") min_ts = std::min(min_ts, e["ts"].get<double>());
  EXPECT_EQ(min_ts, 0.0);
  EXPECT_EQ(doc["otherData"]["base_time_ns"], 1000000000);
}

TEST(ChromeTrace, EmptyTraceIsValidJson) {
  trace::Trace t;
  const auto file = temp_dir("perfetto-empty") / "trace.json";
  ASSERT_TRUE(write_chrome_trace(t, file).ok());
  const json doc = json::parse(read_file(file));
  EXPECT_TRUE(doc["traceEvents"].empty());
}

TEST(ChromeTrace, UnwritablePathIsAnIoError) {
  trace::Trace t;
  const Status s = write_chrome_trace(t, temp_dir("perfetto-bad") / "missing" / "t.json");
  EXPECT_FALSE(s.ok());
}

TEST(ChromeTrace, TbPluginTraceExportMatchesTheModel) {
  const std::filesystem::path file = std::filesystem::path(PT_TRACES_DIR) /
                                     "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << "trace corpus not present: " << file;
  auto loaded = trace::load_trace(file);
  if (!loaded.ok()) GTEST_SKIP() << "Kineto importer cannot load the tb trace yet: " << loaded.status().message();
  if (loaded->events.empty()) GTEST_SKIP() << "Kineto importer returned no events yet";
  const auto out = temp_dir("perfetto-tb") / "tb.perfetto.json";
  check_export(*loaded, out);
  // The sample has GPU kernels launched from the CPU: flows must exist.
  EXPECT_GT(expected_counts(*loaded).flows, 0u);
}

}  // namespace
}  // namespace profile_train::report
