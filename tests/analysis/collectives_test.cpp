// The collectives section (src/analysis/collectives.cpp) and the job's per-collective wait (src/analysis/job.cpp):
// nccl-tests' formulas one by one; synthetic ranks (a GPU all-reduce with its args, a small-message storm, a planted
// late rank in a 4-rank job, kinds from the launching operator when NCCL names every kernel SendRecv); the shared
// HTA traces with collective args, and the same traces stripped of them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <set>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/collectives.h"
#include "profile_train/analysis/job.h"
#include "profile_train/model/report_json.h"
#include "profile_train/rules/engine.h"
#include "profile_train/trace/importer.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

namespace fs = std::filesystem;
using testing::TraceBuilder;

// ---- nccl-tests' formulas (doc/PERFORMANCE.md) -------------------------------------------------------------------

TEST(CollectiveFormulas, BusFactorsAreNcclTests) {
  EXPECT_DOUBLE_EQ(*bus_factor("all_reduce", 8), 2.0 * 7 / 8);
  EXPECT_DOUBLE_EQ(*bus_factor("all_reduce", 2), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor("all_gather", 8), 7.0 / 8);
  EXPECT_DOUBLE_EQ(*bus_factor("reduce_scatter", 4), 3.0 / 4);
  EXPECT_DOUBLE_EQ(*bus_factor("all_to_all", 16), 15.0 / 16);
  EXPECT_DOUBLE_EQ(*bus_factor("broadcast", -1), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor("reduce", 8), 1.0);
  EXPECT_DOUBLE_EQ(*bus_factor("send_recv", 2), 1.0);
  EXPECT_FALSE(bus_factor("all_reduce", 1));   // one rank moves nothing
  EXPECT_FALSE(bus_factor("all_reduce", -1));  // unknown group
  EXPECT_FALSE(bus_factor("barrier", 8));
}

TEST(CollectiveFormulas, BytesAreNcclTestsS) {
  // all_gather: the whole output (sendcount x n); reduce_scatter: the whole input; all_reduce: the buffer.
  EXPECT_EQ(*collective_bytes("all_gather", 1000, 8000, 2, 8), 16000);
  EXPECT_EQ(*collective_bytes("all_gather", 1000, -1, 2, 8), 16000);
  EXPECT_FALSE(collective_bytes("all_gather", 1000, -1, 2, -1));
  EXPECT_EQ(*collective_bytes("reduce_scatter", 8000, 1000, 4, 8), 32000);
  EXPECT_EQ(*collective_bytes("reduce_scatter", -1, 1000, 4, 8), 32000);
  EXPECT_EQ(*collective_bytes("all_reduce", 6637568, 6637568, 4, 2), 26550272);
  EXPECT_EQ(*collective_bytes("send_recv", 0, 500, 4, 2), 2000);
  EXPECT_FALSE(collective_bytes("all_reduce", 100, 100, 0, 2));  // dtype unknown
  EXPECT_FALSE(collective_bytes("barrier", 1, 1, 4, 2));
}

TEST(CollectiveFormulas, KindsFromEveryNaming) {
  EXPECT_EQ(collective_kind("allreduce"), "all_reduce");
  EXPECT_EQ(collective_kind("c10d::allreduce_"), "all_reduce");
  EXPECT_EQ(collective_kind("nccl:all_reduce"), "all_reduce");
  EXPECT_EQ(collective_kind("_allgather_base"), "all_gather");
  EXPECT_EQ(collective_kind("allgather_into_tensor_coalesced"), "all_gather");
  EXPECT_EQ(collective_kind("c10d::_reduce_scatter_base_"), "reduce_scatter");
  EXPECT_EQ(collective_kind("reduce_scatter_tensor_coalesced"), "reduce_scatter");
  EXPECT_EQ(collective_kind("c10d::alltoall_base_"), "all_to_all");
  EXPECT_EQ(collective_kind("gloo:all_to_all"), "all_to_all");
  EXPECT_EQ(collective_kind("gloo:broadcast"), "broadcast");
  EXPECT_EQ(collective_kind("reduce"), "reduce");
  EXPECT_EQ(collective_kind("c10d::send"), "send_recv");
  EXPECT_EQ(collective_kind("recv"), "send_recv");
  EXPECT_EQ(collective_kind("barrier"), "barrier");
  EXPECT_EQ(collective_kind("wait"), "");
  EXPECT_EQ(collective_kind_of_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            "all_reduce");
  EXPECT_EQ(collective_kind_of_kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)"), "all_gather");
  EXPECT_EQ(collective_kind_of_kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t"), "send_recv");
  EXPECT_EQ(collective_kind_of_kernel("ampere_sgemm_128x64_nn"), "");
}

TEST(CollectiveFormulas, DtypesAndTensorSizes) {
  EXPECT_EQ(collective_dtype("Float")->name, "float32");
  EXPECT_EQ(collective_dtype("Float")->bytes, 4);
  EXPECT_EQ(collective_dtype("c10::BFloat16")->name, "bfloat16");
  EXPECT_EQ(collective_dtype("long int")->bytes, 8);
  EXPECT_EQ(collective_dtype("unsigned char")->name, "uint8");
  EXPECT_EQ(collective_dtype("Half")->bytes, 2);
  EXPECT_FALSE(collective_dtype("Scalar"));
  EXPECT_EQ(*tensor_elements("[[8, 1024, 8816]]"), 8 * 1024 * 8816);
  EXPECT_EQ(*tensor_elements("[[366336], []]"), 366336);
  EXPECT_EQ(*tensor_elements("[[2, 3], [4]]"), 10);
  EXPECT_FALSE(tensor_elements("[[], []]"));
  EXPECT_FALSE(tensor_elements("[[2, 3], ...]"));
  EXPECT_EQ(size_bucket(std::nullopt), "unknown");
  EXPECT_EQ(size_bucket(999), "<1 KB");
  EXPECT_EQ(size_bucket(25'000'000), "10-100 MB");
  EXPECT_EQ(size_bucket(2'000'000'000), ">=1 GB");
}

// ---- synthetic ranks ------------------------------------------------------------------------------------------------

// Args as PyTorch >= 2.1 writes them on an NCCL kernel.
trace::CollectiveArgs args(trace::Trace& t, const char* name, int64_t nelems_in, int64_t nelems_out, const char* dtype,
                           int32_t group, const char* pg = "0", int64_t seq = -1) {
  trace::CollectiveArgs a;
  a.name = t.strings.intern(name);
  a.dtype = t.strings.intern(dtype);
  a.pg_name = t.strings.intern(pg);
  a.pg_desc = t.strings.intern("default_pg");
  a.in_nelems = nelems_in;
  a.out_nelems = nelems_out;
  a.group_size = group;
  a.seq = seq;
  t.collectives.push_back(a);
  return a;
}
void set_args_on_last(trace::Trace& t) { t.events.back().coll = static_cast<uint32_t>(t.collectives.size() - 1); }

model::Report analyzed(trace::Trace t) {
  model::Report r = build_typed_report(t);
  auto rules = rules::load_rules();
  EXPECT_TRUE(rules.ok()) << rules.status().message();
  EXPECT_TRUE(rules::apply_rules(**rules, r).ok());
  return r;
}

const model::Recommendation* find_rec(const model::Report& r, const std::string& id) {
  for (const auto& x : r.recommendations)
    if (x.id == id) return &x;
  return nullptr;
}

// One H100 rank: compute 0-60 us, then a 25 MB float32 all-reduce over 8 ranks from 50 to 250 us, per 300 us step.
trace::Trace one_allreduce_rank(int steps = 4) {
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132, int64_t{80} << 30);
  int64_t corr = 0;
  for (int s = 0; s < steps; ++s) {
    const double t0 = s * 300.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 300);
    b.cpu_op("autograd::engine::evaluate_function: AddmmBackward0", t0 + 1, 2);
    b.annotation("Optimizer.step#SGD.step", t0 + 260, 5);
    b.runtime("cudaLaunchKernel", t0 + 1, 1, ++corr);
    b.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", t0, 60, corr);
    b.runtime("cudaLaunchKernel", t0 + 2, 1, ++corr);
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0 + 50, 200, corr);
    args(b.raw(), "allreduce", 6'250'000, 6'250'000, "Float", 8);
    set_args_on_last(b.raw());
  }
  return b.build();
}

TEST(Collectives, AnAllReduceWithArgsGetsNcclTestsBandwidthAgainstNvlink) {
  const model::Report r = analyzed(one_allreduce_rank());
  ASSERT_TRUE(r.collectives);
  const auto& c = *r.collectives;
  EXPECT_EQ(c.timing, "gpu_kernels");
  ASSERT_EQ(c.rows.size(), 1u);
  const auto& row = c.rows[0];
  EXPECT_EQ(row.kind, "all_reduce");
  EXPECT_EQ(row.dtype, std::optional<std::string>("float32"));
  EXPECT_EQ(row.bytes, std::optional<int64_t>(25'000'000));
  EXPECT_EQ(row.group_size, std::optional<int64_t>(8));
  EXPECT_EQ(row.process_group, std::optional<std::string>("0 (default_pg)"));
  EXPECT_DOUBLE_EQ(row.calls_per_step, 1.0);
  EXPECT_NEAR(*row.algbw_gbps, 125.0, 1e-6);          // 25 MB in 200 us
  EXPECT_NEAR(*row.busbw_gbps, 125.0 * 1.75, 1e-6);   // x 2(n-1)/n
  ASSERT_TRUE(c.link);
  EXPECT_EQ(c.link->name, "NVLink 4");
  EXPECT_NEAR(*row.peak_share, 218.75 / 450.0, 1e-6);
  EXPECT_NEAR(*row.exposed_share, 190.0 / 200.0, 1e-6);  // 50-60 us overlaps the GEMM
  // The section's exposed time is the communication section's (the same number everywhere).
  EXPECT_NEAR(*c.exposed_share, *r.communication.exposed_fraction, 1e-6);
  EXPECT_NEAR(*c.exposed_share, 190.0 / 300.0, 1e-6);
  EXPECT_EQ(c.instances.size(), 4u);
  EXPECT_EQ(*c.summary, "all_reduce float32 25 MB x 1/step over 8 ranks: busbw 219 GB/s (49% of NVLink 4), 95% exposed");
  EXPECT_NEAR(*c.fp32_allreduce_exposed_share, 190.0 / 300.0, 1e-6);
  // bf16 compression: half the exposed float32 all-reduce time at best.
  const auto* gc = find_rec(r, "gradient-compression");
  ASSERT_NE(gc, nullptr);
  EXPECT_NEAR(*gc->removable_share, 0.5 * 190.0 / 300.0, 1e-6);
  EXPECT_EQ(find_rec(r, "merge-small-collectives"), nullptr);  // one 25 MB call: nothing to merge
}

TEST(Collectives, TheSameAllReduceInBf16GetsNoCompressionAdvice) {
  trace::Trace t = one_allreduce_rank();
  for (auto& a : t.collectives)
    if (a.dtype != 0) a.dtype = t.strings.intern("BFloat16");
  const model::Report r = analyzed(std::move(t));
  ASSERT_TRUE(r.collectives);
  EXPECT_EQ(r.collectives->rows[0].bytes, std::optional<int64_t>(12'500'000));
  EXPECT_FALSE(r.collectives->fp32_allreduce_exposed_share);
  EXPECT_EQ(find_rec(r, "gradient-compression"), nullptr);
}

// A small-message storm: 20 all-reduces of 100 KB, 20 us each, after the compute, and one 25 MB all-reduce that shows
// what the link does with large messages.
trace::Trace storm_rank(int small_calls) {
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132, int64_t{80} << 30);
  int64_t corr = 0;
  for (int s = 0; s < 4; ++s) {
    const double t0 = s * 1000.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 1000);
    b.cpu_op("autograd::engine::evaluate_function: AddmmBackward0", t0 + 1, 2);
    b.annotation("Optimizer.step#SGD.step", t0 + 900, 5);
    b.runtime("cudaLaunchKernel", t0 + 1, 1, ++corr);
    b.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", t0, 100, corr);
    const int64_t elems = 25'000 * 20 / small_calls;  // 2 MB in all, in `small_calls` calls
    const double dur = 400.0 / small_calls;
    for (int i = 0; i < small_calls; ++i) {
      b.runtime("cudaLaunchKernel", t0 + 2 + i * 0.1, 0.05, ++corr);
      b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0 + 100 + i * dur, dur, corr);
      args(b.raw(), "allreduce", elems, elems, "Float", 8);
      set_args_on_last(b.raw());
    }
    b.runtime("cudaLaunchKernel", t0 + 5, 1, ++corr);
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", t0 + 500, 200, corr);
    args(b.raw(), "allreduce", 6'250'000, 6'250'000, "Float", 8);
    set_args_on_last(b.raw());
  }
  return b.build();
}

TEST(Collectives, ASmallMessageStormIsBoundedByTheLatencyItWouldSave) {
  const model::Report r = analyzed(storm_rank(20));
  ASSERT_TRUE(r.collectives && r.collectives->small);
  const auto& sm = *r.collectives->small;
  EXPECT_DOUBLE_EQ(sm.calls_per_step, 20);
  EXPECT_NEAR(sm.exposed_ms_per_step, 0.4, 1e-9);
  // One call moving their 2 MB takes at least max(the shortest call 20 us, 2 MB at 125 GB/s = 16 us).
  EXPECT_NEAR(sm.merged_ms_per_step, 0.020, 1e-9);
  EXPECT_NEAR(sm.removable_share, (0.4 - 0.020) / 1.0, 1e-6);
  const auto* m = find_rec(r, "merge-small-collectives");
  if (m == nullptr) {
    auto rules = rules::load_rules();
    ADD_FAILURE() << rules::explain_rule(**rules, "merge-small-collectives", model::to_json(r));
  }
  ASSERT_NE(m, nullptr);
  EXPECT_NEAR(*m->removable_share, 0.38, 1e-6);
}

TEST(Collectives, TheSameBytesInOneCallAreNotAStorm) {
  // Mechanism check: the rule fires on the number of calls, not on the bytes.
  const model::Report r = analyzed(storm_rank(1));
  ASSERT_TRUE(r.collectives);
  EXPECT_FALSE(r.collectives->small);
  EXPECT_EQ(find_rec(r, "merge-small-collectives"), nullptr);
}

TEST(Collectives, NcclNamesEveryKernelSendRecvTheOperatorSaysWhatItIs) {
  // negative_queue_length-style: every NCCL kernel is ncclKernel_SendRecv; the c10d op and the nccl:* range around
  // the launch say all_reduce and how many elements (no collective args: a 2023 trace).
  TraceBuilder b;
  b.device(0, "NVIDIA A100-SXM4-80GB", 108);
  int64_t corr = 0;
  for (int s = 0; s < 3; ++s) {
    const double t0 = s * 500.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 500);
    b.cpu_op("c10d::allreduce_", t0 + 10, 30);
    b.annotation("nccl:all_reduce", t0 + 12, 20);
    b.raw().events.back().inputs = static_cast<uint32_t>(b.raw().op_inputs.size());
    b.raw().op_inputs.push_back({b.raw().strings.intern("[[366336]]"), b.raw().strings.intern("[float]"), 0});
    b.runtime("cudaLaunchKernel", t0 + 15, 2, ++corr);
    b.kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t", t0 + 40, 100, corr);
  }
  const model::Report r = analyzed(b.build());
  ASSERT_TRUE(r.collectives);
  ASSERT_EQ(r.collectives->rows.size(), 1u);
  EXPECT_EQ(r.collectives->rows[0].kind, "all_reduce");
  EXPECT_EQ(r.collectives->rows[0].bytes, std::optional<int64_t>(366336 * 4));
  EXPECT_EQ(r.collectives->rows[0].evidence, "annotation");
  EXPECT_FALSE(r.collectives->rows[0].busbw_gbps);  // group size unknown: algbw only
  EXPECT_TRUE(r.collectives->rows[0].algbw_gbps);
}

TEST(Collectives, AnInferenceStepGetsTheTensorParallelWordingNotGradientAdvice) {
  // Forward-only steps (no backward, no optimizer) with a large exposed all-reduce: tensor-parallel inference.
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132, int64_t{80} << 30);
  int64_t corr = 0;
  for (int s = 0; s < 4; ++s) {
    const double t0 = s * 300.0;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, 300);
    b.cpu_op("aten::linear", t0 + 1, 5);
    b.runtime("cudaLaunchKernel", t0 + 1, 1, ++corr);
    b.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", t0, 60, corr);
    b.runtime("cudaLaunchKernel", t0 + 2, 1, ++corr);
    b.kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", t0 + 60, 200, corr);
    args(b.raw(), "allreduce", 6'250'000, 6'250'000, "BFloat16", 8);
    set_args_on_last(b.raw());
  }
  const model::Report r = analyzed(b.build());
  ASSERT_EQ(r.source.workload.kind, "inference");
  EXPECT_NE(find_rec(r, "inference-tp-communication"), nullptr);
  EXPECT_EQ(find_rec(r, "comm-overlap"), nullptr);
  EXPECT_EQ(find_rec(r, "merge-small-collectives"), nullptr);
}

// ---- the job: a planted late rank -----------------------------------------------------------------------------------

// One rank of a 4-rank DDP job: data loading `load_us`, compute 100 us, then the all-reduce (seq k in group "0"),
// which lasts until the slowest rank has arrived and then 200 us of transfer.
model::Report job_rank(int rank, int late_rank, bool with_seq) {
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132, int64_t{80} << 30);
  b.raw().meta.rank = rank;
  b.raw().meta.world_size = 4;
  int64_t corr = 0;
  const double late_load = 400, load = 50, step = 900;
  for (int s = 0; s < 5; ++s) {
    const double t0 = s * step;
    const double my_load = rank == late_rank ? late_load : load;
    b.annotation("ProfilerStep#" + std::to_string(s), t0, step);
    b.annotation("enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__", t0, my_load);
    b.runtime("cudaLaunchKernel", t0 + my_load, 1, ++corr);
    b.kernel("sm90_xmma_gemm_bf16bf16_bf16f32", t0 + my_load + 1, 100, corr);
    b.runtime("cudaLaunchKernel", t0 + my_load + 2, 1, ++corr);
    const double arrive = t0 + my_load + 101, all_in = t0 + late_load + 101;
    b.kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL", arrive, all_in - arrive + 200, corr);
    args(b.raw(), "allreduce", 6'250'000, 6'250'000, "Float", 4, "0", with_seq ? s : -1);
    set_args_on_last(b.raw());
  }
  return analyzed(b.build());
}

std::vector<model::RankReport> job(int late_rank, bool with_seq) {
  std::vector<model::RankReport> out;
  for (int r = 0; r < 4; ++r) out.push_back({"rank" + std::to_string(r) + ".json", job_rank(r, late_rank, with_seq)});
  return out;
}

TEST(JobCollectives, ThePlantedLateRankIsTheOneTheOthersWaitFor) {
  for (bool with_seq : {true, false}) {
    SCOPED_TRACE(with_seq ? "matched by sequence number" : "matched by order");
    const model::JobSummary s = summarize_job(job(3, with_seq));
    ASSERT_TRUE(s.collectives);
    const auto& c = *s.collectives;
    EXPECT_EQ(c.matched_by, with_seq ? "process group and sequence number" : "process group and order in each step");
    EXPECT_EQ(c.matched, 5);
    EXPECT_EQ(c.unmatched, 0);
    ASSERT_EQ(c.rows.size(), 1u);
    const auto& row = c.rows[0];
    EXPECT_EQ(row.last_rank, 3);
    EXPECT_DOUBLE_EQ(row.last_rank_share, 1.0);
    EXPECT_NEAR(row.transfer_ms, 0.2, 1e-9);
    // Ranks 0-2 wait 350 us each, rank 3 none: per call and rank 262.5 us.
    EXPECT_NEAR(row.wait_ms, 0.2625, 1e-9);
    ASSERT_EQ(row.wait_ms_by_rank.size(), 4u);
    EXPECT_NEAR(row.wait_ms_by_rank[0], 0.35, 1e-9);
    EXPECT_NEAR(row.wait_ms_by_rank[3], 0.0, 1e-9);
    EXPECT_NEAR(row.wait_share, 3 * 0.35 / (3 * 0.55 + 0.2), 1e-6);
    EXPECT_EQ(row.last_rank_phase, std::optional<model::StragglerPhase>(model::StragglerPhase::kInput));
    // busbw from the transfer time: 25 MB in 200 us x 2(4-1)/4.
    EXPECT_NEAR(*row.busbw_gbps, 125.0 * 1.5, 1e-6);
    EXPECT_EQ(c.last_rank, std::optional<int64_t>(3));
    EXPECT_NEAR(c.wait_ms_per_step, 0.2625, 1e-9);
    EXPECT_NE(c.summary.find("for rank 3 (data loading)"), std::string::npos) << c.summary;
  }
}

TEST(JobCollectives, MovingTheLateRankMovesTheVerdict) {
  const model::JobSummary s = summarize_job(job(1, true));
  ASSERT_TRUE(s.collectives);
  EXPECT_EQ(s.collectives->last_rank, std::optional<int64_t>(1));
  EXPECT_EQ(s.collectives->rows[0].last_rank, 1);
  EXPECT_NEAR(s.collectives->rows[0].wait_ms_by_rank[1], 0.0, 1e-9);
}

TEST(JobCollectives, OneRankAloneMatchesNothing) {
  std::vector<model::RankReport> one{{"rank0.json", job_rank(0, 3, true)}};
  EXPECT_FALSE(summarize_job(one).collectives);
}

// ---- the shared traces ------------------------------------------------------------------------------------------------

fs::path traces() { return fs::path(PT_TRACES_DIR); }

TEST(CollectivesCorpus, NcclDataHasTheDdpBucketsAtNcclTestsBandwidth) {
  const fs::path f = traces() / "hta/nccl_parser_config/nccl_data.json.gz";
  if (!fs::exists(f)) GTEST_SKIP() << "missing " << f;
  auto t = trace::load_trace(f);
  ASSERT_TRUE(t.ok()) << t.status().message();
  // The importer keeps the args of the 21 NCCL kernels and the 27 record_param_comms ops.
  int64_t kernels_with_args = 0;
  for (const auto& e : t->events)
    if (e.cat == trace::Category::kKernel && e.coll != 0) ++kernels_with_args;
  EXPECT_EQ(kernels_with_args, 21);
  const model::Report full = build_typed_report(*t);
  ASSERT_TRUE(full.collectives);
  bool bucket = false;
  for (const auto& row : full.collectives->rows) {
    EXPECT_NE(row.kind, "other");
    // DDP's buckets of 7875584, 6563840 and 6637568 float32 elements fall in 10-100 MB: their mean.
    if (row.kind == "all_reduce" && row.size_bucket == "10-100 MB") {
      bucket = true;
      EXPECT_EQ(row.bytes, std::optional<int64_t>((7875584 + 6563840 + 6637568) * 4 / 3));
      EXPECT_EQ(row.busbw_gbps, row.algbw_gbps);
      EXPECT_EQ(row.group_size, std::optional<int64_t>(2));
      EXPECT_EQ(row.bus_factor, std::optional<double>(1.0));  // 2(n-1)/n with n = 2
      EXPECT_EQ(row.evidence, "collective_args");
    }
  }
  EXPECT_TRUE(bucket);
  // Stripped: the kernels lose their args; record_param_comms (same External id) still says the same.
  trace::Trace stripped = *t;
  for (auto& e : stripped.events)
    if (e.cat == trace::Category::kKernel) e.coll = 0;
  const model::Report s = build_typed_report(stripped);
  ASSERT_TRUE(s.collectives);
  ASSERT_EQ(s.collectives->rows.size(), full.collectives->rows.size());
  for (size_t i = 0; i < s.collectives->rows.size(); ++i) {
    EXPECT_EQ(s.collectives->rows[i].kind, full.collectives->rows[i].kind);
    EXPECT_EQ(s.collectives->rows[i].bytes, full.collectives->rows[i].bytes);
    EXPECT_EQ(s.collectives->rows[i].busbw_gbps, full.collectives->rows[i].busbw_gbps);
  }
  // Stripped of every arg: the kinds still come from the operators and the kernel names, never "other".
  trace::Trace bare = *t;
  for (auto& e : bare.events) e.coll = 0;
  const model::Report b = build_typed_report(bare);
  ASSERT_TRUE(b.collectives);
  for (const auto& row : b.collectives->rows) EXPECT_TRUE(row.kind == "all_reduce" || row.kind == "broadcast") << row.kind;
}

TEST(CollectivesCorpus, SendRecvKernelsOfA16RankJobAreTheCollectivesTheirOperatorsRan) {
  const fs::path f = traces() / "hta/negative_queue_length_values_check/rank0.json.gz";
  if (!fs::exists(f)) GTEST_SKIP() << "missing " << f;
  auto t = trace::load_trace(f);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const model::Report r = build_typed_report(*t);
  ASSERT_TRUE(r.collectives);
  std::set<std::string> kinds;
  for (const auto& row : r.collectives->rows) kinds.insert(row.kind);
  EXPECT_EQ(kinds.count("send_recv"), 0u) << "every kernel is named SendRecv; the operators say what they are";
  EXPECT_EQ(kinds.count("all_to_all"), 1u);
}

}  // namespace
}  // namespace profile_train::analysis
