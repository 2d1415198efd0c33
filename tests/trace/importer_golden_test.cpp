// Goldens on the real traces in PT_TRACES_DIR (read in place, never copied).
// Every trace loads; its per-category counts equal an independent count made with nlohmann::json (a
// different parser, and a mapping of Kineto's categories written independently of the importer's); a few
// counts and device names are checked against figures counted once from the files themselves (kManifest).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace profile_train::trace {
namespace {

namespace fs = std::filesystem;

fs::path traces_dir() { return fs::path(PT_TRACES_DIR); }

std::vector<fs::path> all_traces() {
  std::vector<fs::path> out;
  if (!fs::is_directory(traces_dir())) return out;
  for (const auto& e : fs::recursive_directory_iterator(traces_dir())) {
    if (!e.is_regular_file()) continue;
    const std::string rel = fs::relative(e.path(), traces_dir()).string();
    if (rel.rfind("_derived", 0) == 0 || rel == "manifest.json") continue;
    const std::string n = e.path().filename().string();
    if (n.size() > 5 && (n.ends_with(".json") || n.ends_with(".json.gz"))) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

#define SKIP_WITHOUT_TRACES()                                                                   \
  if (!fs::is_directory(traces_dir()))                                                         \
  GTEST_SKIP() << "real traces not found at " << traces_dir() << " (set -DPT_TRACES_DIR=...)"

// Independent model of what the importer should produce: Kineto `cat` values (every generation) -> model category.
struct Expected {
  std::map<std::string, int64_t> by_cat;  // model category name -> count
  int64_t memory = 0, flows = 0, total = 0;
  int64_t gpu = 0;
  int64_t kernel_dur_sum_ns = 0;  // rounded per event from the double value (tolerance applied)
  std::vector<std::string> device_names;
};

Expected independent_count(const nlohmann::json& doc) {
  static const std::map<std::string, std::string> kCat = {
      {"cpu_op", "cpu_op"},           {"Operator", "cpu_op"},
      {"user_annotation", "user_annotation"}, {"gpu_user_annotation", "gpu_user_annotation"},
      {"python_function", "python_function"}, {"cuda_runtime", "cuda_runtime"},
      {"Runtime", "cuda_runtime"},    {"cuda_driver", "cuda_driver"},
      {"kernel", "kernel"},           {"Kernel", "kernel"},
      {"gpu_memcpy", "gpu_memcpy"},   {"Memcpy", "gpu_memcpy"},
      {"gpu_memset", "gpu_memset"},   {"Memset", "gpu_memset"},
      {"cuda_sync", "cuda_sync"},     {"overhead", "overhead"},
      {"cuda_profiler_range", "other"},
  };
  Expected x;
  const auto& evs = doc.is_array() ? doc : doc.at("traceEvents");
  for (const auto& e : evs) {
    ++x.total;
    const std::string ph = e.value("ph", "");
    const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
    const std::string name = e.contains("name") && e["name"].is_string() ? e["name"].get<std::string>() : "";
    if (ph == "s" || ph == "f" || ph == "t") {
      ++x.flows;
    } else if (ph == "i" && name == "[memory]") {
      ++x.memory;
    } else if (ph == "X") {
      if (cat == "Trace") continue;
      auto it = kCat.find(cat);
      std::string c = it == kCat.end() ? "other" : it->second;
      if (c == "cpu_op" && (name.rfind("ProfilerStep#", 0) == 0 || name.rfind("enumerate(DataLoader)#", 0) == 0 ||
                            name.rfind("Optimizer.step#", 0) == 0 || name.rfind("Optimizer.zero_grad#", 0) == 0))
        c = "user_annotation";
      ++x.by_cat[c];
      if (c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "cuda_sync" || c == "gpu_user_annotation")
        ++x.gpu;
      if (c == "kernel") x.kernel_dur_sum_ns += std::llround(e.at("dur").get<double>() * 1000.0);
    }
  }
  if (doc.is_object()) {
    for (const char* key : {"deviceProperties", "computeProperties"}) {
      if (doc.contains(key))
        for (const auto& d : doc[key]) x.device_names.push_back(d.value("name", ""));
    }
  }
  return x;
}

TEST(ImporterGolden, EveryTraceMatchesAnIndependentCount) {
  SKIP_WITHOUT_TRACES();
  const auto files = all_traces();
  ASSERT_GE(files.size(), 20u) << "expected the ~25 traces of the shared corpus";
  for (const auto& f : files) {
    SCOPED_TRACE(f.string());
    auto t = load_trace(f);
    ASSERT_TRUE(t.ok()) << t.status().message();
    const auto doc = nlohmann::json::parse(testing::read_maybe_gzip(f));
    const Expected x = independent_count(doc);

    std::map<std::string, int64_t> got;
    int64_t gpu = 0, kernel_dur = 0;
    for (const auto& e : t->events) {
      ++got[to_string(e.cat)];
      if (e.is_gpu) ++gpu;
      if (e.cat == Category::kKernel) kernel_dur += e.dur_ns;
    }
    EXPECT_EQ(got, x.by_cat);
    EXPECT_EQ(gpu, x.gpu);
    EXPECT_EQ(static_cast<int64_t>(t->memory.size()), x.memory);
    EXPECT_EQ(t->quality.flow_events_skipped, x.flows);
    EXPECT_EQ(t->quality.events_total, x.total);
    EXPECT_EQ(t->quality.malformed_events, 0);
    EXPECT_EQ(t->quality.unknown_categories, 0);
    // Kernel time: exact decimal parsing vs double rounding may differ by 1 ns per event at most.
    EXPECT_LE(std::llabs(kernel_dur - x.kernel_dur_sum_ns), static_cast<long long>(got["kernel"]));
    std::vector<std::string> names;
    for (const auto& d : t->devices) names.push_back(d.name);
    EXPECT_EQ(names, x.device_names);
    EXPECT_EQ(t->quality.missing_device_properties, x.device_names.empty());
    EXPECT_TRUE(std::is_sorted(t->events.begin(), t->events.end(),
                               [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; }));
  }
}

struct ManifestFigures {
  const char* file;
  int64_t events_total;
  int64_t kernels, memcpy, memset, runtime, memory;
  const char* device0;
  size_t devices;
};

// ph/cat counts per file, counted once from the files (they do not change: the corpus is read-only).
const ManifestFigures kManifest[] = {
    {"kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz", 75718, 8772, 12, 312, 11923,
     12838, "Tesla V100-DGXS-32GB", 4},
    {"kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz", 71424, 8868, 12, 378, 12085,
     10980, "Tesla V100-DGXS-32GB", 4},
    {"hta/nccl_parser_config/nccl_data.json.gz", 40573, 2700, 960, 114, 8740, 0, "NVIDIA A100-PG509-200", 8},
    {"hta/negative_queue_length_values_check/rank0.json.gz", 108936, 6080, 1390, 277, 33924, 0,
     "NVIDIA A100-SXM4-80GB", 8},
    {"hta/df_index_resolver/df_index_resolver.json.gz", 216092, 19370, 2040, 880, 42373, 28010,
     "Tesla V100-SXM2-32GB", 2},
    {"hta/trace_diff/test/test.json.gz", 105167, 9876, 4856, 900, 21167, 0, "Tesla V100-SXM2-16GB", 2},
    {"param/resnet_kineto.json.gz", 111631, 9628, 123, 362, 25928, 0, "NVIDIA GeForce RTX 2080 Ti", 8},
    {"hta/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz", 220, 14, 2, 0, 21, 0, "AMD Radeon Graphics", 4},
    {"kineto_tb_plugin/gpu_metrics_test/gpu_metrics_input.json", 340, 30, 2, 0, 42, 0, "Tesla V100-DGXS-32GB", 4},
    {"hta/timeline_analysis/sampled_rank-0.json.gz", 4855, 1154, 40, 10, 1204, 0, nullptr, 0},
};

TEST(ImporterGolden, ManifestFigures) {
  SKIP_WITHOUT_TRACES();
  for (const auto& m : kManifest) {
    SCOPED_TRACE(m.file);
    auto t = load_trace(traces_dir() / m.file);
    ASSERT_TRUE(t.ok()) << t.status().message();
    int64_t k = 0, cp = 0, ms = 0, rt = 0;
    for (const auto& e : t->events) {
      k += e.cat == Category::kKernel;
      cp += e.cat == Category::kMemcpy;
      ms += e.cat == Category::kMemset;
      rt += e.cat == Category::kRuntime;
    }
    EXPECT_EQ(t->quality.events_total, m.events_total);
    EXPECT_EQ(k, m.kernels);
    EXPECT_EQ(cp, m.memcpy);
    EXPECT_EQ(ms, m.memset);
    EXPECT_EQ(rt, m.runtime);
    EXPECT_EQ(static_cast<int64_t>(t->memory.size()), m.memory);
    ASSERT_EQ(t->devices.size(), m.devices);
    if (m.device0 != nullptr) {
      EXPECT_EQ(t->devices[0].name, m.device0);
    }
  }
}

TEST(ImporterGolden, HeaderFacts) {
  SKIP_WITHOUT_TRACES();
  auto nccl = load_trace(traces_dir() / "hta/nccl_parser_config/nccl_data.json.gz");
  ASSERT_TRUE(nccl.ok()) << nccl.status().message();
  EXPECT_EQ(nccl->meta.base_time_ns, 1711964646000000000);
  EXPECT_EQ(nccl->meta.rank, 0);
  EXPECT_EQ(nccl->meta.world_size, 2);
  EXPECT_EQ(nccl->meta.distributed_backend, "nccl");
  // MANIFEST: ts 4458676522690.655 µs + base -> 2024-05-23; every event lands in 2024.
  const int64_t y2024 = 1704067200LL * 1000000000LL, y2025 = 1735689600LL * 1000000000LL;
  EXPECT_GE(nccl->events.front().start_ns, y2024);
  EXPECT_LT(nccl->events.back().start_ns, y2025);
  int nccl_kernels = 0;
  for (const auto& e : nccl->events)
    if (e.cat == Category::kKernel && nccl->name(e).find("ncclKernel") != std::string::npos) ++nccl_kernels;
  EXPECT_EQ(nccl_kernels, 21);  // MANIFEST §4: 15 AllReduce + 6 Broadcast

  auto rn0 = load_trace(traces_dir() / "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz");
  ASSERT_TRUE(rn0.ok());
  int steps = 0;
  int64_t htod_bytes = 0;
  for (const auto& e : rn0->events) {
    if (e.cat == Category::kUserAnnotation && rn0->name(e).rfind("ProfilerStep#", 0) == 0) ++steps;
    if (e.cat == Category::kMemcpy && e.copy_kind == CopyKind::kHtoD) {
      EXPECT_EQ(e.src_mem, MemoryKind::kPageable);
      htod_bytes += e.bytes;
    }
  }
  EXPECT_EQ(steps, 6);
  EXPECT_EQ(htod_bytes, 115607040);  // MANIFEST §3: 12 HtoD copies, 115,607,040 B
  EXPECT_EQ(rn0->devices[0].num_sms, 80);
  EXPECT_EQ(rn0->meta.main_pid, 25738);

  auto cpu = load_trace(traces_dir() / "hta/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz");
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ(cpu->meta.rank, 34);
  EXPECT_EQ(cpu->meta.world_size, 300);
  EXPECT_EQ(cpu->meta.distributed_backend, "gloo");
  EXPECT_FALSE(cpu->meta.gpu_capture_attempted);

  auto sync = load_trace(traces_dir() / "hta/critical_path/alexnet/benchmark_result_2869224_1695835535_trace.json.gz");
  ASSERT_TRUE(sync.ok());
  int sync_events = 0, unknown_kind = 0;
  for (const auto& e : sync->events) {
    if (e.cat != Category::kSync) continue;
    ++sync_events;
    unknown_kind += e.sync_kind == SyncKind::kUnknown;
  }
  EXPECT_EQ(sync_events, 41);
  EXPECT_EQ(unknown_kind, 0);
}

}  // namespace
}  // namespace profile_train::trace
