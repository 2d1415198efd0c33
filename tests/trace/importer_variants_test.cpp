// One test per Kineto format variant, on small inline traces with exact expected model values.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "io/byte_sources.h"
#include "importers/importers_internal.h"
#include "test_util.h"

namespace profile_train::trace {
namespace {

using testing::kineto_doc;
using testing::load_json;

const Event* find_event(const Trace& t, std::string_view name) {
  for (const auto& e : t.events)
    if (t.name(e) == name) return &e;
  return nullptr;
}

Trace load_ok(std::string_view json, bool gzip = false) {
  auto t = load_json(json, gzip);
  EXPECT_TRUE(t.ok()) << t.status().message();
  if (!t.ok()) return Trace{};
  return std::move(t).value();
}

// ---- modern (2024): float µs with ns fractions, baseTimeNanoseconds after traceEvents ---------------------
TEST(KinetoVariants, ModernFloatTimestampsAndBaseTime) {
  const std::string json = R"J({
  "schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "NVIDIA A100-PG509-200", "totalGlobalMem": 42297524224,
     "computeMajor": 8, "computeMinor": 0, "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048,
     "regsPerBlock": 65536, "warpSize": 32, "sharedMemPerBlock": 49152, "numSms": 108,
     "regsPerMultiprocessor": 65536, "sharedMemPerBlockOptin": 166912, "sharedMemPerMultiprocessor": 167936}],
  "cupti_version": 18, "cuda_runtime_version": 12000, "cuda_driver_version": 12000,
  "traceEvents": [
    {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":2910249,"tid":2919752,"ts":4458677051847.046,"dur":33.518,"args":{"External id":13889,"cbid":41,"correlation":64014}},
    {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,"ts":4458677052061.431,"dur":5.088,"args":{"External id":13889,"device":0,"context":1,"stream":7,"correlation":64014,"bytes":4000,"memory bandwidth (GB/s)":0.7861635220125787}},
    {"ph":"X","cat":"user_annotation","name":"ProfilerStep#4","pid":2910249,"tid":2910249,"ts":4458676522690.6555,"dur":1.0004,"args":{}},
    {"ph":"X","cat":"Trace","ts":4458676388068.751,"dur":696181.687,"pid":"Spans","tid":"PyTorch Profiler","name":"PyTorch Profiler (0)","args":{"Op count":0}}
  ],
  "traceName": "/tmp/x.json",
  "displayTimeUnit": "ms",
  "baseTimeNanoseconds": 1711964646000000000
})J";
  Trace t = load_ok(json);
  ASSERT_EQ(t.events.size(), 3u);  // the Trace span is not an event
  EXPECT_EQ(t.meta.format, "kineto_json");
  EXPECT_EQ(t.meta.format_version, "1");
  EXPECT_EQ(t.meta.base_time_ns, 1711964646000000000);
  EXPECT_EQ(t.meta.versions.at("cupti_version"), "18");
  EXPECT_EQ(t.meta.versions.at("cuda_runtime_version"), "12000");
  EXPECT_EQ(t.meta.producer, "PyTorch Profiler (Kineto)");
  EXPECT_EQ(t.meta.main_pid, 2910249);

  const Event* rt = find_event(t, "cudaMemcpyAsync");
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->start_ns, 1711964646000000000 + 4458677051847046);
  EXPECT_EQ(rt->dur_ns, 33518);
  EXPECT_EQ(rt->cat, Category::kRuntime);
  EXPECT_EQ(rt->correlation, 64014);
  EXPECT_EQ(rt->external_id, 13889);
  EXPECT_FALSE(rt->is_gpu);
  EXPECT_EQ(rt->pid, 2910249);
  EXPECT_EQ(rt->tid, 2919752);

  const Event* cp = find_event(t, "Memcpy DtoD (Device -> Device)");
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(cp->cat, Category::kMemcpy);
  EXPECT_TRUE(cp->is_gpu);
  EXPECT_EQ(cp->device, 0);
  EXPECT_EQ(cp->pid, 0);
  EXPECT_EQ(cp->tid, 7);
  EXPECT_EQ(cp->bytes, 4000);
  EXPECT_EQ(cp->copy_kind, CopyKind::kDtoD);
  EXPECT_EQ(cp->src_mem, MemoryKind::kDevice);
  EXPECT_EQ(cp->dst_mem, MemoryKind::kDevice);

  // 4th decimal rounds half up: .6555 µs -> 656 ns; 1.0004 µs -> 1000 ns.
  const Event* step = find_event(t, "ProfilerStep#4");
  ASSERT_NE(step, nullptr);
  EXPECT_EQ(step->start_ns, 1711964646000000000 + 4458676522690656);
  EXPECT_EQ(step->dur_ns, 1000);
  EXPECT_EQ(step->cat, Category::kUserAnnotation);

  ASSERT_EQ(t.devices.size(), 1u);
  const DeviceInfo& d = t.devices[0];
  EXPECT_EQ(d.id, 0);
  EXPECT_EQ(d.name, "NVIDIA A100-PG509-200");
  EXPECT_EQ(d.vendor, "nvidia");
  EXPECT_EQ(d.compute_major, 8);
  EXPECT_EQ(d.compute_minor, 0);
  EXPECT_EQ(d.num_sms, 108);
  EXPECT_EQ(d.max_threads_per_sm, 2048);
  EXPECT_EQ(d.max_threads_per_block, 1024);
  EXPECT_EQ(d.regs_per_sm, 65536);
  EXPECT_EQ(d.shared_mem_per_sm, 167936);
  EXPECT_EQ(d.total_memory_bytes, 42297524224);
  EXPECT_FALSE(t.quality.missing_device_properties);
  EXPECT_EQ(t.quality.events_total, 4);
  EXPECT_EQ(t.quality.events_imported, 3);
  EXPECT_EQ(t.quality.malformed_events, 0);
  // finalize() sorted by start time.
  EXPECT_TRUE(std::is_sorted(t.events.begin(), t.events.end(),
                             [](const Event& a, const Event& b) { return a.start_ns < b.start_ns; }));
}

// ---- 2021-06: capitalised categories, string tids/pids, `external id`, [memory] without cat -------------
TEST(KinetoVariants, Schema2021) {
  const std::string events = R"J(
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 25738, "tid": "25738", "ts": 1623142623460000, "dur": 177000, "args": {"Device": 25738, "External id": 1}},
  {"ph": "X", "cat": "Operator", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "pid": 25738, "tid": "25738", "ts": 1623142623460010, "dur": 59000, "args": {"External id": 2}},
  {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 25738, "tid": "25738", "ts": 1623142623529000, "dur": 100, "args": {"External id": 537, "Input Dims": [[32, 3, 224, 224]], "Call stack": "a.py(1): f"}},
  {"ph":"X","cat":"Memcpy","name":"Memcpy HtoD (Pageable -> Device)","pid":0,"tid":"stream 7","ts":1623142623529248,"dur":1940,"args":{"device":0,"context":1,"stream":7,"correlation":34417,"external id":537,"bytes":19267584,"memory bandwidth (GB/s)":9.927016204653041}},
  {"ph":"X","cat":"Runtime","name":"cudaMemcpyAsync","pid":25738,"tid":"25738","ts":1623142623529088,"dur":2022,"args":{"cbid":41,"correlation":34417,"external id":537,"external ts":1623142623529071}},
  {"ph":"X","cat":"Kernel","name":"volta_sgemm_128x64_nn","pid":0,"tid":"stream 7","ts":1623142623531000,"dur":50,"args":{"queued":0,"device":0,"context":1,"stream":7,"correlation":34420,"external id":538,"registers per thread":126,"shared memory":12544,"blocks per SM":0.8,"warps per SM":6.4,"grid":[8,4,2],"block":[256,1,1],"est. achieved occupancy %":13}},
  {"ph":"X","cat":"Memset","name":"Memset (Device)","pid":0,"tid":"stream 7","ts":1623142623532000,"dur":2,"args":{"device":0,"context":1,"stream":7,"correlation":34421,"external id":539,"bytes":512,"memory bandwidth (GB/s)":0.256}},
  {"ph":"f","id":34417,"pid":0,"tid":"stream 7","ts":1623142623529248,"cat":"async","name":"launch","bp":"e"},
  {"ph":"s","id":34417,"pid":25738,"tid":25738,"ts":1623142623529088,"cat":"async","name":"launch"},
  {"ph":"i","s":"t","name":"[memory]","pid":25738,"tid":25738,"ts":1623142623460121,"args":{"Device Type":1,"Device Id":0,"Bytes":4096}},
  {"name": "thread_name", "ph": "M", "ts": 1623142623460016, "pid": 0, "tid": "stream 7 ", "args": {"name": "stream 7 "}},
  {"name": "process_name", "ph": "M", "ts": 1623142623460016, "pid": 25738, "tid": 0, "args": {"name": "python"}},
  {"ph": "X", "cat": "Trace", "ts": 1623142623460016, "dur": 1065723, "pid": "Traces", "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}},
  {"name": "Iteration Start: PyTorch Profiler", "ph": "i", "s": "g", "pid": "Traces", "tid": "Trace PyTorch Profiler", "ts": 1623142623460016},
  {"name": "Record Window End", "ph": "i", "s": "g", "pid": "", "tid": "", "ts": 1623142624633484})J";
  for (bool gz : {false, true}) {
    SCOPED_TRACE(gz ? "gzip" : "plain");
    Trace t = load_ok(kineto_doc(events), gz);
    ASSERT_EQ(t.events.size(), 7u);
    EXPECT_EQ(t.meta.base_time_ns, 0);

    const Event* step = find_event(t, "ProfilerStep#5");
    ASSERT_NE(step, nullptr);
    EXPECT_EQ(step->cat, Category::kUserAnnotation);  // Operator in 2021, a record_function range
    EXPECT_EQ(step->start_ns, 1623142623460000000);
    EXPECT_EQ(step->dur_ns, 177000000);
    EXPECT_EQ(step->pid, 25738);
    EXPECT_EQ(step->tid, 25738);  // "25738" string tid
    EXPECT_EQ(find_event(t, "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__")->cat,
              Category::kUserAnnotation);
    EXPECT_EQ(find_event(t, "aten::conv2d")->cat, Category::kCpuOp);

    const Event* cp = find_event(t, "Memcpy HtoD (Pageable -> Device)");
    ASSERT_NE(cp, nullptr);
    EXPECT_TRUE(cp->is_gpu);
    EXPECT_EQ(cp->tid, 7);
    EXPECT_EQ(cp->external_id, 537);  // lowercase `external id`
    EXPECT_EQ(cp->correlation, 34417);
    EXPECT_EQ(cp->bytes, 19267584);
    EXPECT_EQ(cp->copy_kind, CopyKind::kHtoD);
    EXPECT_EQ(cp->src_mem, MemoryKind::kPageable);
    EXPECT_EQ(cp->dst_mem, MemoryKind::kDevice);

    const Event* rt = find_event(t, "cudaMemcpyAsync");
    ASSERT_NE(rt, nullptr);
    EXPECT_EQ(rt->cat, Category::kRuntime);
    EXPECT_EQ(rt->external_id, 537);

    const Event* k = find_event(t, "volta_sgemm_128x64_nn");
    ASSERT_NE(k, nullptr);
    EXPECT_EQ(k->cat, Category::kKernel);
    EXPECT_TRUE(k->is_gpu);
    EXPECT_EQ(k->device, 0);
    EXPECT_EQ(k->grid_blocks, 64u);
    EXPECT_EQ(k->block_threads, 256u);
    EXPECT_EQ(k->registers_per_thread, 126);
    EXPECT_EQ(k->shared_mem_bytes, 12544);
    EXPECT_FLOAT_EQ(k->blocks_per_sm, 0.8f);
    EXPECT_FLOAT_EQ(k->occupancy_pct, 13.f);

    const Event* ms = find_event(t, "Memset (Device)");
    ASSERT_NE(ms, nullptr);
    EXPECT_EQ(ms->cat, Category::kMemset);
    EXPECT_EQ(ms->bytes, 512);
    EXPECT_EQ(ms->dst_mem, MemoryKind::kDevice);

    ASSERT_EQ(t.memory.size(), 1u);
    EXPECT_EQ(t.memory[0].ts_ns, 1623142623460121000);
    EXPECT_EQ(t.memory[0].device_type, 1);
    EXPECT_EQ(t.memory[0].device_id, 0);
    EXPECT_EQ(t.memory[0].bytes_delta, 4096);
    EXPECT_EQ(t.memory[0].total_allocated, -1);

    EXPECT_EQ((t.meta.thread_names.at({0, 7})), "stream 7");
    EXPECT_EQ(t.meta.process_names.at(25738), "python");
    EXPECT_EQ(t.quality.flow_events_skipped, 2);
    EXPECT_EQ(t.quality.events_total, 15);
    EXPECT_EQ(t.quality.events_imported, 8);  // 7 events + 1 memory sample
    EXPECT_EQ(t.quality.malformed_events, 0);
    EXPECT_EQ(t.quality.unknown_categories, 0);
    EXPECT_TRUE(t.quality.missing_device_properties);  // kineto_doc adds no deviceProperties
    EXPECT_EQ(t.meta.main_pid, 25738);
  }
}

// ---- memcpy names -> copy kind and memory kinds -------------------------------------------------------------
TEST(KinetoVariants, MemcpyKinds) {
  struct Case {
    const char* name;
    CopyKind kind;
    MemoryKind src, dst;
  };
  const Case cases[] = {
      {"Memcpy HtoD (Pinned -> Device)", CopyKind::kHtoD, MemoryKind::kPinned, MemoryKind::kDevice},
      {"Memcpy DtoH (Device -> Pageable)", CopyKind::kDtoH, MemoryKind::kDevice, MemoryKind::kPageable},
      {"Memcpy DtoH (Device -> Pinned)", CopyKind::kDtoH, MemoryKind::kDevice, MemoryKind::kPinned},
      {"Memcpy DtoD (Device -> Device)", CopyKind::kDtoD, MemoryKind::kDevice, MemoryKind::kDevice},
      {"Memcpy HtoD (Host -> Device)", CopyKind::kHtoD, MemoryKind::kUnknown, MemoryKind::kDevice},  // ROCm
      {"Memcpy PtoP (Device -> Device)", CopyKind::kPtoP, MemoryKind::kDevice, MemoryKind::kDevice},
      {"Memcpy HtoD (Managed -> Device)", CopyKind::kHtoD, MemoryKind::kManaged, MemoryKind::kDevice},
  };
  std::string events;
  int i = 0;
  for (const auto& c : cases) {
    if (i) events += ",\n";
    events += R"J({"ph":"X","cat":"gpu_memcpy","name":")J" + std::string(c.name) + R"J(","pid":1,"tid":9,"ts":)J" +
              std::to_string(100 + i) + R"J(,"dur":1,"args":{"device":1,"stream":9,"correlation":)J" +
              std::to_string(i) + "}}";
    ++i;
  }
  Trace t = load_ok(kineto_doc(events));
  ASSERT_EQ(t.events.size(), std::size(cases));
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    const Event* e = find_event(t, c.name);
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->copy_kind, c.kind);
    EXPECT_EQ(e->src_mem, c.src);
    EXPECT_EQ(e->dst_mem, c.dst);
    EXPECT_EQ(e->bytes, -1);  // ROCm copies often lack bytes: unknown, not 0
    EXPECT_EQ(e->device, 1);
  }
}

// ---- cuda_sync kinds, Context Sync with tid -1 / stream 4294967295 ------------------------------------------
TEST(KinetoVariants, CudaSync) {
  const std::string events = R"J(
  {"ph":"X","cat":"cuda_sync","name":"Stream Wait Event","pid":0,"tid":20,"ts":1695835585751488,"dur":3,"args":{"External id":5170,"cuda_sync_kind":"Stream Wait Event","wait_on_stream":7,"wait_on_cuda_event_record_corr_id":5169,"wait_on_cuda_event_id":1,"stream":20,"correlation":5170,"device":0,"context":1}},
  {"ph":"X","cat":"cuda_sync","name":"Event Sync","pid":0,"tid":7,"ts":1695835585751500,"dur":10,"args":{"cuda_sync_kind":"Event Sync","stream":7,"correlation":5171,"device":0}},
  {"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":1695835585751600,"dur":4,"args":{"cuda_sync_kind":"Stream Sync","stream":7,"correlation":5172,"device":0}},
  {"ph":"X","cat":"cuda_sync","name":"Context Sync","pid":0,"tid":-1,"ts":1695835585751700,"dur":5,"args":{"cuda_sync_kind":"Context Sync","stream":4294967295,"correlation":5173,"device":0}},
  {"ph":"X","cat":"cuda_sync","name":"Stream Sync","pid":0,"tid":7,"ts":1695835585751800,"dur":4,"args":{"stream":7,"correlation":5174,"device":0}})J";
  Trace t = load_ok(kineto_doc(events));
  ASSERT_EQ(t.events.size(), 5u);
  EXPECT_EQ(t.events[0].sync_kind, SyncKind::kStreamWaitEvent);
  EXPECT_EQ(t.events[0].tid, 20);
  EXPECT_EQ(t.events[0].external_id, 5170);
  EXPECT_EQ(t.events[1].sync_kind, SyncKind::kEventSync);
  EXPECT_EQ(t.events[2].sync_kind, SyncKind::kStreamSync);
  EXPECT_EQ(t.events[3].sync_kind, SyncKind::kContextSync);
  EXPECT_EQ(t.events[3].tid, 4294967295);  // args.stream wins over tid -1
  EXPECT_EQ(t.events[4].sync_kind, SyncKind::kStreamSync);  // from the name when the arg is absent
  for (const auto& e : t.events) {
    EXPECT_EQ(e.cat, Category::kSync);
    EXPECT_TRUE(e.is_gpu);
    EXPECT_EQ(e.device, 0);
  }
}

// ---- ROCm: HIP runtime in cuda_runtime, sparse kernel args, string stream ids, ROCm device keys ----------
TEST(KinetoVariants, Rocm) {
  const std::string top = R"J("deviceProperties": [
    {"id": 0, "name": "AMD Radeon Graphics", "totalGlobalMem": 68702699520, "computeMajor": 9, "computeMinor": 0,
     "maxThreadsPerBlock": 1024, "maxThreadsPerMultiprocessor": 2048, "regsPerBlock": 65536, "warpSize": 64,
     "sharedMemPerBlock": 65536, "numSms": 104, "maxSharedMemoryPerMultiProcessor": 65536}],
  "roctracer_version": 4, "hip_runtime_version": 60242134)J";
  const std::string events = R"J(
  {"ph":"X","cat":"kernel","name":"SubTensorOpWithScalar1d","pid":2,"tid":0,"ts":1305516306794.554,"dur":206.678,"args":{"External id":5,"device":2,"stream":0,"correlation":66,"kind":"Dispatch Kernel","grid":[65536,1,1],"block":[256,1,1]}},
  {"ph":"X","cat":"cuda_runtime","name":"hipLaunchKernel","pid":1,"tid":1,"ts":1305516306700.001,"dur":11.502,"args":{"External id":5,"kernel":"SubTensorOpWithScalar1d","cid":107,"correlation":66,"stream":"0x0","grid":[65536,1,1],"block":[256,1,1],"shared memory":0}},
  {"ph":"X","cat":"gpu_memcpy","name":"Memcpy HtoD (Host -> Device)","pid":2,"tid":0,"ts":1305516306900,"dur":19.1,"args":{"device":2,"stream":0,"correlation":70,"kind":"Copy"}})J";
  Trace t = load_ok(kineto_doc(events, top));
  ASSERT_EQ(t.events.size(), 3u);
  const Event* k = find_event(t, "SubTensorOpWithScalar1d");
  ASSERT_NE(k, nullptr);
  EXPECT_TRUE(k->is_gpu);
  EXPECT_EQ(k->device, 2);
  EXPECT_EQ(k->pid, 2);
  EXPECT_EQ(k->tid, 0);
  EXPECT_EQ(k->grid_blocks, 65536u);
  EXPECT_EQ(k->block_threads, 256u);
  EXPECT_EQ(k->registers_per_thread, -1);
  EXPECT_EQ(k->occupancy_pct, -1.f);
  EXPECT_EQ(k->start_ns, 1305516306794554);
  EXPECT_EQ(k->dur_ns, 206678);
  const Event* rt = find_event(t, "hipLaunchKernel");
  ASSERT_NE(rt, nullptr);
  EXPECT_EQ(rt->cat, Category::kRuntime);
  EXPECT_EQ(rt->correlation, 66);
  EXPECT_EQ(rt->grid_blocks, 0u);  // launch config only on kernels
  const Event* cp = find_event(t, "Memcpy HtoD (Host -> Device)");
  ASSERT_NE(cp, nullptr);
  EXPECT_EQ(cp->src_mem, MemoryKind::kUnknown);
  EXPECT_EQ(cp->bytes, -1);
  ASSERT_EQ(t.devices.size(), 1u);
  EXPECT_EQ(t.devices[0].vendor, "amd");
  EXPECT_EQ(t.devices[0].shared_mem_per_sm, 65536);
  EXPECT_EQ(t.devices[0].regs_per_sm, -1);
  EXPECT_EQ(t.meta.versions.at("roctracer_version"), "4");
  EXPECT_EQ(t.quality.notes.end(), std::find_if(t.quality.notes.begin(), t.quality.notes.end(), [](const auto& n) {
              return n.find("unexpected type") != std::string::npos;
            }));
}

// ---- the oldest schema: computeProperties instead of deviceProperties --------------------------------------
TEST(KinetoVariants, ComputeProperties) {
  const std::string top = R"J( "computeProperties": [
     {"id": 0, "name": "Tesla V100-DGXS-32GB", "totalGlobalMem": 34084028416, "major": 7, "minor": 0,
      "maxThreadsPerBlock": 1024, "maxThreadsPerMultiProcessor": 2048, "regsPerBlock": 65536,
      "regsPerMultiprocessor": 65536, "warpSize": 32, "sharedMemPerBlock": 49152,
      "sharedMemPerMultiprocessor": 98304, "multiProcessorCount": 80, "sharedMemPerBlockOptin": 98304},
     {"id": 1, "name": "Tesla V100-DGXS-32GB", "major": 7, "minor": 0, "multiProcessorCount": 80}])J";
  Trace t = load_ok(kineto_doc(R"J({"ph":"X","cat":"Kernel","name":"k","pid":0,"tid":"stream 7","ts":1,"dur":1,"args":{"device":0,"stream":7,"theoretical occupancy %":50}})J", top));
  ASSERT_EQ(t.devices.size(), 2u);
  EXPECT_EQ(t.devices[0].compute_major, 7);
  EXPECT_EQ(t.devices[0].num_sms, 80);
  EXPECT_EQ(t.devices[0].max_threads_per_sm, 2048);
  EXPECT_EQ(t.devices[1].id, 1);
  EXPECT_EQ(t.devices[1].total_memory_bytes, -1);
  EXPECT_FALSE(t.quality.missing_device_properties);
}

TEST(KinetoVariants, MissingAndEmptyDeviceProperties) {
  Trace a = load_ok(R"J({"traceEvents": [{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":2}]})J");
  EXPECT_TRUE(a.quality.missing_device_properties);
  EXPECT_TRUE(a.meta.gpu_capture_attempted);
  EXPECT_EQ(a.meta.gpu_capture_status, "no GPU activity in the trace");
  EXPECT_NE(std::find_if(a.quality.notes.begin(), a.quality.notes.end(),
                         [](const auto& n) { return n.find("no deviceProperties") != std::string::npos; }),
            a.quality.notes.end());
  EXPECT_NE(std::find_if(a.quality.notes.begin(), a.quality.notes.end(),
                         [](const auto& n) { return n.find("no schemaVersion") != std::string::npos; }),
            a.quality.notes.end());
  // CPU-only capture: the profiler listed no GPU at all.
  Trace b = load_ok(R"J({"schemaVersion": 1, "deviceProperties": [ ], "traceEvents": [{"ph":"X","cat":"cpu_op","name":"aten::add","pid":1,"tid":1,"ts":1,"dur":2}]})J");
  EXPECT_TRUE(b.quality.missing_device_properties);
  EXPECT_FALSE(b.meta.gpu_capture_attempted);
}

// ---- distributedInfo: full and partial forms ------------------------------------------------------------------
TEST(KinetoVariants, DistributedInfo) {
  const std::string ev = R"J({"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1,"dur":1})J";
  Trace full = load_ok(kineto_doc(ev, R"J("distributedInfo": {"backend": "nccl", "rank": 3, "world_size": 8, "pg_count": 2, "pg_config": [{"pg_name": "0", "ranks": [0, 1]}], "nccl_version": "2.17.1"})J"));
  EXPECT_EQ(full.meta.rank, 3);
  EXPECT_EQ(full.meta.world_size, 8);
  EXPECT_EQ(full.meta.distributed_backend, "nccl");
  Trace rank_only = load_ok(kineto_doc(ev, R"J("distributedInfo": {"rank": 1})J"));
  EXPECT_EQ(rank_only.meta.rank, 1);
  EXPECT_EQ(rank_only.meta.world_size, -1);
  EXPECT_EQ(rank_only.meta.distributed_backend, "");
  Trace backend_only = load_ok(kineto_doc(ev, R"J("distributedInfo": {"backend": "gloo"})J"));
  EXPECT_EQ(backend_only.meta.rank, -1);
  EXPECT_EQ(backend_only.meta.distributed_backend, "gloo");
}

// ---- modern [memory] instants with cat, python_function, overhead, gpu_user_annotation, driver ------------
TEST(KinetoVariants, ModernMemoryAndOtherCategories) {
  const std::string events = R"J(
  {"ph":"i","cat":"cpu_instant_event","s":"t","name":"[memory]","pid":783658,"tid":785244,"ts":1669783687464300,"args":{"Ev Idx":42070,"Device Type":1,"Device Id":1,"Addr":139926520725504,"Bytes":-5242880,"Total Allocated":5435638784,"Total Reserved":12782141440}},
  {"ph":"X","cat":"python_function","name":"torch/nn/modules/module.py(1779): _call_impl","pid":783658,"tid":785244,"ts":1669783687464000,"dur":5.5,"args":{"Python id":1,"Python parent id":0}},
  {"ph":"X","cat":"overhead","name":"Activity Buffer Request","pid":-1,"tid":0,"ts":1669783687464001,"dur":10},
  {"ph":"X","cat":"gpu_user_annotation","name":"## backward ##","pid":1,"tid":7,"ts":1669783687465000,"dur":630.099,"args":{"External id":11805}},
  {"ph":"X","cat":"cuda_driver","name":"cuLaunchKernel","pid":783658,"tid":785244,"ts":1669783687466000,"dur":3,"args":{"cbid":307,"correlation":35,"External id":3}},
  {"ph":"X","cat":"fancy_new_cat","name":"x","pid":783658,"tid":785244,"ts":1669783687467000,"dur":3},
  {"ph":"X","cat":"fancy_new_cat","name":"y","pid":783658,"tid":785244,"ts":1669783687467001,"dur":3},
  {"ph":"s","id":1,"pid":1,"tid":1,"ts":1,"cat":"fwdbwd","name":"fwdbwd"},
  {"ph":"f","id":1,"pid":1,"tid":1,"ts":1,"cat":"ac2g","name":"ac2g","bp":"e"},
  {"ph":"C","name":"GPU 0 Est. SM Efficiency","pid":0,"ts":1,"args":{"value":0.5}})J";
  Trace t = load_ok(kineto_doc(events, R"J("displayTimeUnit": "ns")J"));
  ASSERT_EQ(t.memory.size(), 1u);
  EXPECT_EQ(t.memory[0].bytes_delta, -5242880);
  EXPECT_EQ(t.memory[0].total_allocated, 5435638784);
  EXPECT_EQ(t.memory[0].total_reserved, 12782141440);
  EXPECT_EQ(t.memory[0].device_id, 1);
  EXPECT_EQ(find_event(t, "torch/nn/modules/module.py(1779): _call_impl")->cat, Category::kPythonFunction);
  EXPECT_EQ(find_event(t, "torch/nn/modules/module.py(1779): _call_impl")->dur_ns, 5500);  // µs even with "ns"
  EXPECT_EQ(find_event(t, "Activity Buffer Request")->cat, Category::kOverhead);
  const Event* ga = find_event(t, "## backward ##");
  ASSERT_NE(ga, nullptr);
  EXPECT_EQ(ga->cat, Category::kGpuAnnotation);
  EXPECT_TRUE(ga->is_gpu);
  EXPECT_EQ(ga->device, 1);
  EXPECT_EQ(ga->tid, 7);
  EXPECT_EQ(ga->dur_ns, 630099);
  EXPECT_EQ(find_event(t, "cuLaunchKernel")->cat, Category::kDriver);
  EXPECT_EQ(find_event(t, "x")->cat, Category::kOther);
  EXPECT_EQ(t.quality.unknown_categories, 2);
  EXPECT_EQ(t.quality.flow_events_skipped, 2);
  EXPECT_NE(std::find_if(t.quality.notes.begin(), t.quality.notes.end(),
                         [](const auto& n) { return n.find("fancy_new_cat (2)") != std::string::npos; }),
            t.quality.notes.end());
  EXPECT_EQ(t.quality.events_total, 10);
  EXPECT_EQ(t.quality.events_imported, 7);  // 6 events + 1 memory sample
}

// ---- bare top-level array (Chrome JSON array format) --------------------------------------------------------
TEST(KinetoVariants, BareArray) {
  Trace t = load_ok(R"J([{"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":2,"ts":10,"dur":5},
                         {"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":11,"dur":1}])J");
  ASSERT_EQ(t.events.size(), 2u);
  EXPECT_EQ(t.events[0].start_ns, 10000);
  EXPECT_EQ(t.events[1].cat, Category::kKernel);
  EXPECT_EQ(t.events[1].device, 0);  // from pid when args.device is absent
  EXPECT_EQ(t.events[1].tid, 7);
}

// ---- wrong field types are counted and skipped, never fatal ------------------------------------------------
TEST(KinetoVariants, MalformedEventsCounted) {
  const std::string events = R"J(
  {"ph":"X","cat":"cpu_op","name":"good","pid":1,"tid":1,"ts":1,"dur":1},
  {"ph":"X","cat":"cpu_op","name":"bad_ts","pid":1,"tid":1,"ts":"soon","dur":1},
  {"ph":"X","cat":"cpu_op","name":42,"pid":1,"tid":1,"ts":1,"dur":1},
  {"ph":"X","cat":"cpu_op","name":"bad_pid","pid":{"a":1},"tid":1,"ts":1,"dur":1},
  {"ph":"X","cat":"cpu_op","name":"no_dur","pid":1,"tid":1,"ts":1},
  {"ph":"X","cat":"cpu_op","name":"neg","pid":1,"tid":1,"ts":5,"dur":-3},
  {"ph":7,"name":"bad_ph"},
  {"name":"no_ph","ts":1},
  {},
  12,
  [1, 2],
  "str",
  null,
  {"ph":"X","cat":"kernel","name":"k_bad_args","pid":0,"tid":7,"ts":1,"dur":1,"args":{"grid":{"x":1},"device":true,"stream":[7]}},
  {"ph":"X","cat":"cpu_op","name":"huge_ts","pid":1,"tid":1,"ts":123456789012345678901234567890,"dur":1})J";
  Trace t = load_ok(kineto_doc(events));
  EXPECT_EQ(t.quality.events_total, 15);
  EXPECT_EQ(t.quality.malformed_events, 12);
  ASSERT_EQ(t.events.size(), 3u);
  EXPECT_NE(find_event(t, "good"), nullptr);
  const Event* neg = find_event(t, "neg");
  ASSERT_NE(neg, nullptr);
  EXPECT_EQ(neg->dur_ns, 0);
  EXPECT_EQ(t.quality.negative_durations, 1);
  const Event* k = find_event(t, "k_bad_args");
  ASSERT_NE(k, nullptr);  // bad args are ignored, the event is kept
  EXPECT_EQ(k->grid_blocks, 0u);
  EXPECT_EQ(k->device, 0);
  EXPECT_NE(std::find_if(t.quality.notes.begin(), t.quality.notes.end(),
                         [](const auto& n) { return n.find("1 events have args of an unexpected type") == 0; }),
            t.quality.notes.end());
}

// ---- strings with escapes, unicode, keys in any order -------------------------------------------------------
TEST(KinetoVariants, EscapesAndKeyOrder) {
  Trace t = load_ok(kineto_doc(
      R"J({"args":{"External id":9},"dur":2,"ts":3,"tid":4,"pid":5,"name":"a\"b\\c\/d\u00e9\ud83d\ude00\n","cat":"cpu_op","ph":"X"})J"));
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.name(t.events[0]), "a\"b\\c/d\xC3\xA9\xF0\x9F\x98\x80\n");
  EXPECT_EQ(t.events[0].external_id, 9);
  EXPECT_EQ(t.events[0].pid, 5);
  EXPECT_EQ(t.events[0].start_ns, 3000);
}

// ---- timestamps: integer, float, exponent, negative; rounding -----------------------------------------------
TEST(KinetoVariants, TimestampConversion) {
  const std::string events = R"J(
  {"ph":"X","cat":"cpu_op","name":"a","pid":1,"tid":1,"ts":1623142623460111,"dur":25},
  {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":4458677051847.0465,"dur":0.0005},
  {"ph":"X","cat":"cpu_op","name":"c","pid":1,"tid":1,"ts":1.5e3,"dur":2.5E-1},
  {"ph":"X","cat":"cpu_op","name":"d","pid":1,"tid":1,"ts":-12.3456,"dur":1.9994},
  {"ph":"X","cat":"cpu_op","name":"e","pid":1,"tid":1,"ts":68.0,"dur":7.10})J";
  Trace t = load_ok(kineto_doc(events));
  EXPECT_EQ(find_event(t, "a")->start_ns, 1623142623460111000);
  EXPECT_EQ(find_event(t, "a")->dur_ns, 25000);
  EXPECT_EQ(find_event(t, "b")->start_ns, 4458677051847047);
  EXPECT_EQ(find_event(t, "b")->dur_ns, 1);
  EXPECT_EQ(find_event(t, "c")->start_ns, 1500000);
  EXPECT_EQ(find_event(t, "c")->dur_ns, 250);
  EXPECT_EQ(find_event(t, "d")->start_ns, -12346);
  EXPECT_EQ(find_event(t, "d")->dur_ns, 1999);
  EXPECT_EQ(find_event(t, "e")->start_ns, 68000);
  EXPECT_EQ(find_event(t, "e")->dur_ns, 7100);
  EXPECT_EQ(t.quality.clock_anomalies, 1);  // "d" starts before 0
}

// ---- the stream reader restarts elements across refills: tiny buffers give the same model ----------------
TEST(KinetoVariants, TinyBuffersGiveTheSameResult) {
  const std::string doc = kineto_doc(
      R"J({"ph":"X","cat":"Kernel","name":"a kernel with a long name \u00e9 and escapes \" inside","pid":0,"tid":"stream 7","ts":1623142623531000,"dur":50,"args":{"device":0,"stream":7,"correlation":34420,"external id":538,"grid":[8,4,2],"block":[256,1,1],"Call stack":"x.py(1): f;y.py(2): g"}},
         {"ph":"X","cat":"cpu_op","name":"b","pid":1,"tid":1,"ts":4458677051847.0465,"dur":0.0005},
         {"ph":"i","s":"t","name":"[memory]","pid":25738,"tid":25738,"ts":1623142623460121,"args":{"Device Type":1,"Device Id":0,"Bytes":4096}})J",
      R"J("deviceProperties": [{"id": 0, "name": "Tesla V100-DGXS-32GB", "numSms": 80}], "distributedInfo": {"rank": 2})J");
  detail::MemorySource ref_src(doc, "ref");
  auto ref = load_kineto_json(ref_src, {}, size_t{4} << 20);
  ASSERT_TRUE(ref.ok()) << ref.status().message();
  for (size_t chunk : {16, 17, 31, 64, 100, 257}) {
    SCOPED_TRACE(chunk);
    detail::MemorySource src(doc, "tiny");
    auto t = load_kineto_json(src, {}, chunk);
    ASSERT_TRUE(t.ok()) << t.status().message();
    ASSERT_EQ(t->events.size(), ref->events.size());
    for (size_t i = 0; i < t->events.size(); ++i) {
      EXPECT_EQ(t->name(t->events[i]), ref->name(ref->events[i]));
      EXPECT_EQ(t->events[i].start_ns, ref->events[i].start_ns);
      EXPECT_EQ(t->events[i].grid_blocks, ref->events[i].grid_blocks);
    }
    EXPECT_EQ(t->memory.size(), 1u);
    EXPECT_EQ(t->devices.size(), 1u);
    EXPECT_EQ(t->meta.rank, 2);
  }
}

}  // namespace
}  // namespace profile_train::trace

namespace profile_train::trace {
namespace {

TEST(TraceModel, CopiedStringTableOwnsItsIndex) {
  StringTable copy;
  {
    StringTable a;
    a.intern("kernel_a");
    a.intern("a_string_long_enough_to_live_on_the_heap_not_in_sso");
    copy = a;
  }  // `a` is gone: the copy must not point into it
  EXPECT_EQ(copy.intern("kernel_a"), 1u);
  EXPECT_EQ(copy.intern("a_string_long_enough_to_live_on_the_heap_not_in_sso"), 2u);
  EXPECT_EQ(copy.intern("new"), 3u);
  EXPECT_EQ(copy.get(3), "new");
}

}  // namespace
}  // namespace profile_train::trace

namespace profile_train::trace {
namespace {

TEST(KinetoVariants, InvalidUtf8IsReplaced) {
  Trace t = load_ok(kineto_doc(
      "{\"ph\":\"X\",\"cat\":\"cpu_op\",\"name\":\"bad\xff\xfe name \xc3\xa9\",\"pid\":1,\"tid\":1,\"ts\":1,\"dur\":1},"
      "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":1,\"tid\":1,\"args\":{\"name\":\"t\xc3\"}}"));
  ASSERT_EQ(t.events.size(), 1u);
  EXPECT_EQ(t.name(t.events[0]), "bad\xEF\xBF\xBD\xEF\xBF\xBD name \xC3\xA9");  // valid é kept
  EXPECT_EQ((t.meta.thread_names.at({1, 1})), "t\xEF\xBF\xBD");
}

// PyTorch >= 2.1 puts the c10d collective's metadata on its kernels ("Collective name", "In msg nelems", ...):
// the kernel is a collective whatever its name (issue 23 item 6); a kernel without the arg is not marked.
TEST(KinetoVariants, CollectiveNameArgMarksTheKernelACollective) {
  Trace t = load_ok(kineto_doc(
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"custom_comm\",\"pid\":0,\"tid\":7,\"ts\":1,\"dur\":5,"
      "\"args\":{\"device\":0,\"stream\":7,\"correlation\":3,\"Collective name\":\"allreduce\","
      "\"In msg nelems\":1024,\"dtype\":\"BFloat16\"}},"
      "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"gemm\",\"pid\":0,\"tid\":7,\"ts\":7,\"dur\":5,"
      "\"args\":{\"device\":0,\"stream\":7,\"correlation\":4}}"));
  const Event* c = find_event(t, "custom_comm");
  const Event* g = find_event(t, "gemm");
  ASSERT_NE(c, nullptr);
  ASSERT_NE(g, nullptr);
  EXPECT_TRUE(c->collective);
  EXPECT_FALSE(g->collective);
}

}  // namespace
}  // namespace profile_train::trace

namespace profile_train::trace {
namespace {

// A registry is an instance: one built for a test (or a plugin) adds its own importer, which gets the
// registry's byte source (gzip already inflated, limits held) and leaves the built-in registry as it was.
TEST(ImporterRegistry, AnInstanceWithItsOwnImporterReadsTheRegistrysStream) {
  Importer fake;
  fake.name = "fake";
  fake.sniff = [](std::string_view head) { return head.rfind("FAKE-TRACE", 0) == 0; };
  fake.load_stream = [](ByteSource& source, const LoadOptions&) -> StatusOr<Trace> {
    std::string all;
    char buf[7];  // small reads: the stream is read to its end, in pieces
    for (;;) {
      auto n = source.read(buf, sizeof buf);
      if (!n.ok()) return n.status();
      if (*n == 0) break;
      all.append(buf, *n);
    }
    Trace t;
    t.meta.format = "fake";
    t.meta.producer = std::to_string(all.size()) + " bytes";
    t.finalize();
    return t;
  };
  ImporterRegistry mine = ImporterRegistry::builtins();
  mine.add(fake);
  ASSERT_EQ(mine.importers().size(), builtin_importers().importers().size() + 1);
  EXPECT_EQ(mine.importers().back().name, "fake");
  const std::string text = "FAKE-TRACE " + std::string(100000, 'x');
  testing::TempFile gz(text, ".fake.gz", /*gzip=*/true);
  auto loaded = mine.load(gz.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status().message();
  EXPECT_EQ(loaded->meta.format, "fake");
  EXPECT_EQ(loaded->meta.producer, std::to_string(text.size()) + " bytes");  // inflated by the registry
  EXPECT_EQ(loaded->meta.source_files, std::vector<std::string>{gz.path().string()});
  auto set = mine.load_set(gz.path());
  ASSERT_TRUE(set.ok()) << set.status().message();
  EXPECT_EQ(set->size(), 1u);
  LoadOptions small;
  small.max_uncompressed_bytes = 1000;
  auto refused = mine.load(gz.path(), small);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), StatusCode::kResourceExhausted) << refused.status().message();
  // The built-in registry does not know it.
  auto builtin = load_trace(gz.path());
  ASSERT_FALSE(builtin.ok());
  EXPECT_NE(builtin.status().message().find("not JSON and not a known trace format"), std::string::npos)
      << builtin.status().message();
  // Same name replaces in place: Kineto JSON's slot, now the fake.
  ImporterRegistry replaced = ImporterRegistry::builtins();
  fake.name = "kineto_json";
  replaced.add(fake);
  EXPECT_EQ(replaced.importers().size(), builtin_importers().importers().size());
  auto json = replaced.load_bytes("{\"traceEvents\": []}", "doc.json");
  ASSERT_FALSE(json.ok());  // no importer claims JSON any more
  EXPECT_EQ(json.status().code(), StatusCode::kBadInput);
}

}  // namespace
}  // namespace profile_train::trace
