// The memory analyzer (analysis/memory.h): against the TensorBoard plugin 0.4.3's own memory parsing on the
// shared traces (figures printed by bench/memory/tb_plugin_reference.py, committed in
// tests/data/memory/tb_plugin_reference.json), and on small built traces for what the plugin does not do
// (reconstruction from deltas, live blocks at the peak, bad samples).
#include <filesystem>
#include <fstream>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/memory.h"
#include "profile_train/trace/importer.h"
#include "trace_builder.h"

namespace profile_train::analysis {

using namespace profile_train::model;  // the documents' types
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TraceBuilder;

json reference() {
  std::ifstream in(fs::path(PT_SOURCE_DIR) / "tests/data/memory/tb_plugin_reference.json");
  return json::parse(in);
}

const MemoryDevice* find_device(const Memory& m, const std::string& name) {
  for (const auto& d : m.devices)
    if (d.device == name) return &d;
  return nullptr;
}

class PluginReference : public ::testing::TestWithParam<std::string> {};

// Peaks, the allocated / reserved curve and the per-operator table equal the plugin's, byte for byte.
TEST_P(PluginReference, PeaksCurveAndOperatorTableEqualThePlugin) {
  const fs::path file = fs::path(PT_TRACES_DIR) / GetParam();
  if (!fs::exists(file)) GTEST_SKIP() << "missing " << file;
  const json ref = reference().at("traces").at(GetParam());
  auto tr = trace::load_trace(file.string());
  ASSERT_TRUE(tr.ok()) << tr.status().message();
  const Report r = build_typed_report(*tr, {});
  ASSERT_TRUE(r.memory.has_value());
  const Memory& m = *r.memory;
  EXPECT_EQ(m.rejected_events, 0);

  // Peak per device (the plugin names the CPU and CUDA devices; it leaves HIP's type 6 unnamed).
  for (const auto& [name, peak] : ref.at("peaks").items()) {
    const std::string ours = name.starts_with("unnamed(") ? "GPU" + name.substr(name.rfind(',') + 1, 1) : name;
    const MemoryDevice* d = find_device(m, ours);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_EQ(d->peak_allocated_bytes, peak.get<int64_t>()) << name;
    EXPECT_EQ(d->totals, "running_totals");
  }
  // The curve: as many points, the same peak, reserved at the peak and highest reserved.
  for (const auto& [name, c] : ref.at("curve").items()) {
    const MemoryDevice* d = find_device(m, name);
    ASSERT_NE(d, nullptr) << name;
    EXPECT_EQ(d->samples_with_totals, c.at("points").get<int64_t>()) << name;
    EXPECT_EQ(d->peak_allocated_bytes, c.at("peak_allocated").get<int64_t>()) << name;
    ASSERT_TRUE(d->reserved_at_peak_bytes.has_value()) << name;
    EXPECT_EQ(*d->reserved_at_peak_bytes, c.at("reserved_at_peak").get<int64_t>()) << name;
    EXPECT_EQ(d->peak_reserved_bytes.value_or(-1), c.at("peak_reserved").get<int64_t>()) << name;
    if (*d->reserved_at_peak_bytes >= d->peak_allocated_bytes)  // the CPU allocator reports 0 reserved
      EXPECT_EQ(d->unused_reserved_at_peak_bytes, *d->reserved_at_peak_bytes - d->peak_allocated_bytes);
    else
      EXPECT_FALSE(d->unused_reserved_at_peak_bytes.has_value());
  }
  if (ref.at("curve").empty() && ref.at("memory_records").get<int64_t>() > 0 && ref.at("peaks").empty()) {
    // No running totals (2021-06 traces): the plugin draws no curve; we reconstruct from the deltas and say so.
    for (const auto& d : m.devices) {
      EXPECT_EQ(d.totals, "reconstructed_from_deltas") << d.device;
      EXPECT_TRUE(d.reconstruction.has_value());
      EXPECT_GT(d.peak_allocated_bytes, 0);
      EXPECT_FALSE(d.reserved_at_peak_bytes.has_value());
    }
  }
  // The operator table: every row of the plugin's, with the same seven figures, and no row it lacks.
  const auto cols = reference().at("operator_columns");
  ASSERT_EQ(cols.size(), 7u);
  for (const auto& [dev, rows] : ref.at("operators").items()) {
    const MemoryDevice* d = find_device(m, dev);
    ASSERT_NE(d, nullptr) << dev;
    EXPECT_EQ(d->operators_total, static_cast<int64_t>(rows.size())) << dev;
    for (const auto& [op, v] : rows.items()) {
      const MemoryOperator* row = nullptr;
      for (const auto& o : d->operators)
        if (o.name == op) row = &o;
      ASSERT_NE(row, nullptr) << dev << " " << op;
      const int64_t ours[7] = {row->calls, row->increase_bytes, row->self_increase_bytes, row->allocation_count,
                               row->self_allocation_count, row->allocation_bytes, row->self_allocation_bytes};
      for (size_t i = 0; i < 7; ++i) EXPECT_EQ(ours[i], v[i].get<int64_t>()) << dev << " " << op << " " << cols[i];
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    Traces, PluginReference,
    ::testing::Values("tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
                      "tracelens/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
                      "tracelens/h100/google_owlv2-large-patch14-ensemble__1016001.json.gz",
                      "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
                      "tracelens/mi300/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
                      "tracelens/mi300/google_owlv2-large-patch14-ensemble__1016001.json.gz",
                      "kineto_tb_plugin/resnet50_num_workers_0/worker0.1623143089861.pt.trace.json.gz",
                      "kineto_tb_plugin/resnet50_num_workers_4/worker0.1623212756351.pt.trace.json.gz"));

trace::MemorySample sample(double ts_us, int64_t bytes, int64_t addr, int64_t total = -1, int64_t reserved = -1,
                           int32_t type = 1, int32_t id = 0) {
  trace::MemorySample m;
  m.ts_ns = TraceBuilder::ns(ts_us);
  m.device_type = type;
  m.device_id = type == 0 ? -1 : id;
  m.bytes_delta = bytes;
  m.addr = addr;
  m.total_allocated = total;
  m.total_reserved = reserved;
  m.pid = TraceBuilder::kPid;
  m.tid = TraceBuilder::kTid;
  return m;
}

// Peak step and phase, what is live at the peak, reserved minus allocated, nested operators' inclusive figures.
TEST(MemorySection, PeakPlacedAndExplained) {
  auto t = TraceBuilder()
               .device(0, "GPU", 80, int64_t{1000})
               .annotation("ProfilerStep#1", 0, 100)
               .annotation("## forward ##", 1, 40)
               .cpu_op("aten::linear", 2, 30)
               .cpu_op("aten::empty", 3, 2)
               .annotation("## backward ##", 50, 30)
               .cpu_op("aten::mm", 55, 10)
               .build();
  t.memory = {sample(3.5, 100, 1, 100, 200),  // aten::empty, inside aten::linear
              sample(10, 300, 2, 400, 600),   // aten::linear itself
              sample(20, -100, 1, 300, 600),  // free of block 1
              sample(56, 250, 3, 550, 600),   // aten::mm: the peak, in the backward
              sample(70, -250, 3, 300, 600)};
  t.finalize();
  const Report r = build_typed_report(t, {});
  ASSERT_TRUE(r.memory.has_value());
  const MemoryDevice* d = find_device(*r.memory, "GPU0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->peak_allocated_bytes, 550);
  EXPECT_EQ(d->reserved_at_peak_bytes, 600);
  EXPECT_EQ(d->unused_reserved_at_peak_bytes, 50);
  EXPECT_EQ(d->peak_step, "ProfilerStep#1");
  EXPECT_EQ(d->peak_phase, "backward");
  EXPECT_DOUBLE_EQ(*d->peak_fraction, 0.55);
  ASSERT_EQ(d->live_at_peak.size(), 2u);
  EXPECT_EQ(d->live_at_peak[0].op, "aten::linear");
  EXPECT_EQ(d->live_at_peak[0].bytes, 300);
  EXPECT_EQ(d->live_at_peak[1].op, "aten::mm");
  EXPECT_EQ(d->live_at_peak_bytes, 550);
  EXPECT_EQ(d->live_unattributed_bytes, 0);
  const MemoryOperator* lin = nullptr;
  for (const auto& o : d->operators)
    if (o.name == "aten::linear") lin = &o;
  ASSERT_NE(lin, nullptr);
  EXPECT_EQ(lin->self_increase_bytes, 300 - 100);  // its own allocation and the free of aten::empty's block
  EXPECT_EQ(lin->increase_bytes, 300);             // with aten::empty's allocation
  EXPECT_EQ(lin->allocation_count, 2);
  EXPECT_EQ(lin->self_allocation_count, 1);
  EXPECT_EQ(lin->allocation_bytes, 400);
  EXPECT_EQ(lin->calls, 1);
  EXPECT_EQ(d->timeline.allocated_bytes.size(), 5u);
}

// Without phase ranges the operators around the peak give its phase.
TEST(MemorySection, PeakPhaseFromOperatorsWithoutPhaseRanges) {
  for (const bool peak_in_backward : {false, true}) {
    auto t = TraceBuilder()
                 .device(0)
                 .annotation("ProfilerStep#1", 0, 100)
                 .cpu_op("aten::linear", 2, 30)
                 .cpu_op("autograd::engine::evaluate_function: MmBackward0", 50, 30)
                 .build();
    const int64_t fwd = peak_in_backward ? 100 : 500, bwd = peak_in_backward ? 900 : 50;
    t.memory = {sample(10, fwd, 1, fwd, 1000), sample(20, -fwd, 1, 0, 1000), sample(60, bwd, 2, bwd, 1000)};
    t.finalize();
    const Report r = build_typed_report(t, {});
    ASSERT_TRUE(r.memory.has_value());
    EXPECT_EQ(r.memory->devices.at(0).peak_phase, peak_in_backward ? "backward" : "forward");
  }
}

// Without running totals the curve is rebuilt from the deltas, raised by what was freed before it was allocated.
TEST(MemorySection, ReconstructsFromDeltas) {
  auto t = TraceBuilder().annotation("ProfilerStep#1", 0, 100).cpu_op("aten::add", 1, 50).build();
  t.memory = {sample(2, -64, -1), sample(3, 256, -1), sample(4, 128, -1), sample(5, -256, -1)};
  t.finalize();
  int64_t rejected = -1;
  const auto m = memory_section(t, {}, nullptr, &rejected);
  ASSERT_TRUE(m.has_value());
  const MemoryDevice& d = m->devices.at(0);
  EXPECT_EQ(d.totals, "reconstructed_from_deltas");
  EXPECT_EQ(d.baseline_bytes, 64);
  EXPECT_EQ(d.peak_allocated_bytes, 64 - 64 + 256 + 128);
  EXPECT_FALSE(d.peak_reserved_bytes.has_value());
  EXPECT_TRUE(d.live_at_peak.empty());  // no addresses: nothing to pair
  EXPECT_EQ(rejected, 0);
}

// Bad samples are counted in data_quality and never become a peak.
TEST(MemorySection, BadSamplesCountedNeverAPeak) {
  auto t = TraceBuilder().device(0).annotation("ProfilerStep#1", 0, 100).build();
  t.memory = {sample(1, 100, 1, 100, 200), sample(2, int64_t{1} << 60, 2, 200, 300),
              sample(3, 10, 3, int64_t{1} << 62, 300), sample(4, 10, 4, -5, 300), sample(5, 10, 5, 110, 200, -3)};
  t.finalize();
  const Report r = build_typed_report(t, {});
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_EQ(r.memory->rejected_events, 4);
  EXPECT_EQ(r.data_quality.memory_events_rejected, 4);
  ASSERT_EQ(r.memory->devices.size(), 1u);
  EXPECT_EQ(r.memory->devices[0].peak_allocated_bytes, 100);
  // Deltas that sum past any device's size: the device is dropped, its events counted.
  auto u = TraceBuilder().annotation("ProfilerStep#1", 0, 100).build();
  for (int i = 0; i < 20; ++i) u.memory.push_back(sample(1 + i, int64_t{1} << 49, 10 + i));
  u.finalize();
  int64_t rejected = 0;
  EXPECT_FALSE(memory_section(u, {}, nullptr, &rejected).has_value() &&
               !memory_section(u, {}, nullptr, &rejected)->devices.empty());
  EXPECT_EQ(rejected, 20);
}

// Every generation of [memory] event through the importer: 2021-06 (no cat, Device Type/Id/Bytes only), modern
// cpu_instant_event with Addr and running totals, ROCm's `finished`; damaged ones are counted, never a peak.
TEST(MemorySection, KinetoMemoryEventsOfEveryGeneration) {
  const std::string json = R"({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 7, "tid": 7, "ts": 0, "dur": 100},
    {"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 7, "tid": 7, "ts": 1, "dur": 10},
    {"ph": "i", "s": "t", "name": "[memory]", "pid": 7, "tid": 7, "ts": 2,
     "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64}},
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 3,
     "args": {"Total Reserved": 2048, "Total Allocated": 1024, "Bytes": 1024, "Addr": 4096, "Device Id": 0,
              "Device Type": 1}},
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 4,
     "args": {"Total Reserved": 4096, "Total Allocated": 3072, "Bytes": 2048, "Addr": 8192, "Device Id": 1,
              "Device Type": 6, "finished": true}},
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 5,
     "args": {"Total Allocated": 1e30, "Bytes": 100000000000000000000, "Addr": 1, "Device Id": 0, "Device Type": 1}},
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 6,
     "args": {"Total Allocated": -7, "Bytes": 8, "Addr": 2, "Device Id": 0, "Device Type": 1}},
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 7,
     "args": {"Total Allocated": 99999999999999999, "Bytes": 8, "Addr": 3, "Device Id": 0, "Device Type": 1}},
    {"ph": "i", "s": "t", "cat": "cpu_instant_event", "name": "[memory]", "pid": 7, "tid": 7, "ts": 8,
     "args": {"Device Id": 0, "Device Type": 1}}
  ]})";
  auto tr = trace::load_trace_bytes(json, "mem.json");
  ASSERT_TRUE(tr.ok()) << tr.status().message();
  EXPECT_EQ(tr->memory.size(), 5u);         // the overflowing Bytes and the one without Bytes are malformed
  EXPECT_GE(tr->quality.malformed_events, 2);
  EXPECT_EQ(tr->memory[1].addr, 4096);
  EXPECT_EQ(tr->memory[1].tid, 7);
  const Report r = build_typed_report(*tr, {});
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_EQ(r.data_quality.memory_events_rejected, 2);  // Total Allocated -7 and 10^17 (above 2^50)
  ASSERT_EQ(r.memory->devices.size(), 3u);              // GPU0, GPU1 (HIP), CPU
  EXPECT_EQ(r.memory->devices[0].device, "GPU0");
  EXPECT_EQ(r.memory->devices[0].peak_allocated_bytes, 1024);
  EXPECT_EQ(r.memory->devices[0].live_at_peak.at(0).op, "aten::empty");
  EXPECT_EQ(r.memory->devices[1].device, "GPU1");
  EXPECT_EQ(r.memory->devices[1].device_type, 6);
  EXPECT_EQ(r.memory->devices[1].peak_allocated_bytes, 3072);
  EXPECT_EQ(r.memory->devices[2].device, "CPU");
  EXPECT_EQ(r.memory->devices[2].totals, "reconstructed_from_deltas");
  EXPECT_EQ(r.memory->devices[2].peak_allocated_bytes, 64);
}

// A leak: the allocated figure grows from step to step.
TEST(MemorySection, GrowthAcrossSteps) {
  TraceBuilder b;
  std::vector<trace::MemorySample> ms;
  int64_t total = 0;
  for (int s = 0; s < 5; ++s) {
    b.annotation("ProfilerStep#" + std::to_string(s), s * 100.0, 100);
    total += 1000;
    ms.push_back(sample(s * 100.0 + 10, 1000, 100 + s, total, total));
  }
  auto t = b.build();
  t.memory = ms;
  t.finalize();
  const Report r = build_typed_report(t, {});
  ASSERT_TRUE(r.memory.has_value());
  EXPECT_EQ(r.memory->devices.at(0).growth_per_step_bytes, 1000);
  // Steady steps (each frees what it allocated, peaks that wobble) do not grow.
  TraceBuilder c;
  std::vector<trace::MemorySample> ns;
  for (int s = 0; s < 5; ++s) {
    c.annotation("ProfilerStep#" + std::to_string(s), s * 100.0, 100);
    const int64_t act = 1000 + 300 * (s % 2) + 100 * s;  // rising, wobbling step peaks
    ns.push_back(sample(s * 100.0 + 5, 10, 200 + s, 500, 5000));
    ns.push_back(sample(s * 100.0 + 10, act, 300 + s, 500 + act, 5000));
    ns.push_back(sample(s * 100.0 + 90, -act, 300 + s, 500, 5000));
  }
  auto u = c.build();
  u.memory = ns;
  u.finalize();
  const Report q = build_typed_report(u, {});
  ASSERT_TRUE(q.memory.has_value());
  EXPECT_EQ(q.memory->devices.at(0).growth_per_step_bytes, 0);
}

}  // namespace
}  // namespace profile_train::analysis
