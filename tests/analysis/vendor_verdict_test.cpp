// Issue 23 item 6: verdicts that do not depend on vendor naming, and a verdict needs a material share.
//
// The issue's class-5 failure, rebuilt synthetically: one serving configuration (tensor-parallel decode: GEMMs,
// attention, element-wise kernels and an all-reduce per iteration) written with the kernel and runtime names an
// H100 trace has and with those an MI300X trace has (hipBLASLt "Cijk_" GEMMs, "attn_fwd", RCCL or vLLM custom
// all-reduce, hipLaunchKernel). Both must read the same: gpu_compute at ~81% busy with ~7.3% of exposed
// collective time, which is no communication verdict.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "report_view.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

using testing::TraceBuilder;

struct VendorNames {
  std::string device;
  std::string vendor;
  std::string launch;       // runtime call that launches each kernel
  std::string gemm;
  std::string attention;
  std::string elementwise;
  std::string all_reduce;   // the collective kernel
  bool collective_arg = false;  // the collective is known only by Kineto's "Collective name" arg
};

// A serving trace without ProfilerStep (step = whole trace), 10 decode iterations of 100 us each: per iteration
// the GPU runs 52 us of GEMM, 14 us of attention, 7.7 us of element-wise work and a 7.3 us all-reduce nothing
// overlaps, then idles 19 us while the host schedules the next batch: busy 81%, exposed collective 7.3%.
trace::Trace serving(const VendorNames& v) {
  TraceBuilder b;
  b.device(0, v.device, 132, int64_t{80} << 30);
  b.raw().devices.back().vendor = v.vendor;
  int64_t corr = 1;
  for (int i = 0; i < 10; ++i) {
    const double t0 = i * 100.0;
    b.cpu_op("vllm::execute_model", t0, 4);
    auto launch = [&](const std::string& name, double start, double dur) {
      b.runtime(v.launch, start - 1.0, 0.5, corr).kernel(name, start, dur, corr);
      ++corr;
    };
    launch(v.gemm, t0 + 2, 30);
    launch(v.attention, t0 + 32, 14);
    launch(v.gemm, t0 + 46, 22);
    launch(v.elementwise, t0 + 68, 7.7);
    launch(v.all_reduce, t0 + 75.7, 7.3);
    if (v.collective_arg) b.raw().events.back().collective = true;
  }
  b.cpu_op("vllm::sample_next_batch", 990, 10);  // the window: 0 to 1000 us
  return b.build();
}

const VendorNames kH100{"NVIDIA H100 80GB HBM3",
                        "nvidia",
                        "cudaLaunchKernel",
                        "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_"
                        "segment_k_off_kernel__5x_cublas",
                        "void flash::flash_fwd_splitkv_kernel<Flash_fwd_kernel_traits<128, 64, 128, 4, false, "
                        "false, cutlass::bfloat16_t>, false, true, false, false, true, true, false, false>",
                        "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::"
                        "BFloat16>, std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, "
                        "std::array<char*, 3ul>)",
                        "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"};

VendorNames with_all_reduce(VendorNames v, std::string name, bool arg = false) {
  v.all_reduce = std::move(name);
  v.collective_arg = arg;
  return v;
}

VendorNames mi300x(std::string all_reduce) {
  return {"AMD Instinct MI300X",
          "amd",
          "hipExtModuleLaunchKernel",
          "Cijk_Alik_Bljk_BBS_BH_Bias_HA_S_SAV_UserArgs_MT128x128x64_MI16x16x1_SN_LDSB1_AFC1_AFEM1_AFEM1_ASEM1_CLR1_"
          "CADS0_EPS0_GRVWA8_GRVWB8_GSUAMB_IU1_K1_LBSPPA128_LBSPPB128_LBSPPM0_LPA16_LPB16_LPM0_LRVW8_LWPMn1_MIAV0_"
          "MIWT4_4_MO40_NTn1_NTA0_NTB0_NTC0_NTD0_NEPBS16_NLCA1_NLCB1_ONLL1_PGR2_PLR1_PKA1_SIA3_SS1_SPO0_SRVW0_SSO0_"
          "SVW8_SK0_SKXCCM0_TLDS1_ULSGRO0_USL1_UIOFGRO0_USFGROn1_VSn1_VWA4_VWB4_WSGRA0_WSGRB0_WS64_WG32_8_1",
          "attn_fwd",
          "void at::native::vectorized_elementwise_kernel<8, at::native::CUDAFunctor_add<c10::BFloat16>, "
          "std::array<char*, 3ul> >(int, at::native::CUDAFunctor_add<c10::BFloat16>, std::array<char*, 3ul>)",
          std::move(all_reduce)};
}

struct Read {
  std::string bottleneck;
  double busy = 0, exposed = 0, comm_share = 0;
  nlohmann::json evidence;
};

Read read(const trace::Trace& t) {
  const auto r = build_report(t);
  Read out;
  out.bottleneck = r["verdict"]["bottleneck"].get<std::string>();
  const auto& b = r["breakdown"];
  out.busy = b["kernel"].get<double>() + b["memcpy"].get<double>() + b["memset"].get<double>() +
             b["communication"].get<double>();
  out.exposed = r["communication"]["exposed_fraction"].is_number() ? r["communication"]["exposed_fraction"].get<double>()
                                                                   : -1.0;
  out.comm_share = b["communication"].get<double>();
  out.evidence = r["verdict"]["evidence"];
  return out;
}

TEST(VendorVerdict, SameServingConfigurationReadsTheSameOnH100AndMi300x) {
  const std::vector<std::pair<std::string, VendorNames>> cases = {
      {"H100, NCCL >= 2.19", kH100},
      {"H100, NCCL <= 2.18", with_all_reduce(kH100, "ncclKernel_AllReduce_RING_LL_Sum_bf16(ncclWorkElem)")},
      {"H100, symmetric-memory multimem", with_all_reduce(kH100, "multimem_all_reduce_kernel")},
      {"H100, symmetric-memory one-shot", with_all_reduce(kH100, "void c10d::symmetric_memory::one_shot_all_reduce_kernel<c10::BFloat16, 16, 8>(...)")},
      {"H100, vLLM custom all-reduce", with_all_reduce(kH100, "void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __nv_bfloat16*, int, int)")},
      {"B200, TensorRT-LLM fused all-reduce", with_all_reduce(kH100, "void tensorrt_llm::kernels::ar_fusion::allreduce_fusion_kernel_oneshot_lamport<__nv_bfloat16, 8, 4, true>(...)")},
      {"H100, named only by Kineto's Collective name arg", with_all_reduce(kH100, "void custom_comm_kernel<8>(...)", true)},
      {"MI300X, RCCL", mi300x("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)")},
      {"MI300X, RCCL (older)", mi300x("rcclKernel_AllReduce_RING_LL_Sum_bf16")},
      {"MI300X, MSCCL", mi300x("mscclKernel_Sum_bf16_LL(...)")},
      {"MI300X, vLLM custom all-reduce", mi300x("void vllm::cross_device_reduce_2stage<__hip_bfloat16, 8>(vllm::RankData*, vllm::RankSignals, vllm::Signal*, __hip_bfloat16*, int, int)")},
      {"MI300X, quick all-reduce", mi300x("void quickreduce::allreduce_prototype_twoshot<quickreduce::CodecFP<__hip_bfloat16>, false>(...)")},
  };
  for (const auto& [label, names] : cases) {
    const Read r = read(serving(names));
    EXPECT_EQ(r.bottleneck, "gpu_compute") << label;
    EXPECT_NEAR(r.busy, 0.81, 0.005) << label;
    // The all-reduce counts as communication whatever the vendor calls it.
    EXPECT_NEAR(r.comm_share, 0.073, 0.002) << label;
    EXPECT_NEAR(r.exposed, 0.073, 0.002) << label;
  }
}

// The issue's MI300X reading, "communication at 7.3% exposed": the fallback for a GPU busy under half the step
// took any stall of 5% as the verdict. A step whose GPU idles half the time with no host cause and 7.3% of
// exposed collective time is not communication-bound on either vendor's names.
trace::Trace half_idle(const VendorNames& v) {
  TraceBuilder b;
  b.device(0, v.device, 132, int64_t{80} << 30);
  b.raw().devices.back().vendor = v.vendor;
  int64_t corr = 1;
  for (int i = 0; i < 10; ++i) {
    const double t0 = i * 100.0;
    b.annotation("ProfilerStep#" + std::to_string(i + 1), t0, 100);
    // All launches early in the step: the GPU's idle time is not the host's doing (kernel_wait / other).
    b.runtime(v.launch, t0 + 0.5, 0.5, corr).kernel(v.gemm, t0 + 2, 36, corr);
    ++corr;
    b.runtime(v.launch, t0 + 1.0, 0.5, corr).kernel(v.all_reduce, t0 + 60, 7.3, corr);
    ++corr;
  }
  return b.build();
}

TEST(VendorVerdict, SevenPercentExposedCommunicationIsNotCommunicationBound) {
  for (const auto& names : {kH100, mi300x("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)")}) {
    const Read r = read(half_idle(names));
    EXPECT_NEAR(r.exposed, 0.073, 0.002) << names.device;
    EXPECT_LT(r.busy, 0.5) << names.device;
    EXPECT_NE(r.bottleneck, "communication") << names.device;
  }
}

// Above the material share the same exposed collective time is the verdict (the threshold is the 15% of the
// stall candidates; 12% on a half-idle GPU is the fallback's, at or above kMaterialShare = 10%).
TEST(VendorVerdict, MaterialExposedCommunicationIsStillCommunication) {
  TraceBuilder b;
  b.device(0);
  int64_t corr = 1;
  for (int i = 0; i < 10; ++i) {
    const double t0 = i * 100.0;
    b.annotation("ProfilerStep#" + std::to_string(i + 1), t0, 100);
    b.runtime("cudaLaunchKernel", t0 + 0.5, 0.5, corr).kernel("sm90_xmma_gemm_bf16bf16", t0 + 2, 30, corr);
    ++corr;
    b.runtime("cudaLaunchKernel", t0 + 1.0, 0.5, corr).kernel("ncclDevKernel_Generic_4", t0 + 60, 12, corr);
    ++corr;
  }
  // The GPU idles 56% of each step while the host runs code the trace does not record: the step is host-bound,
  // and the 12% of exposed communication is not what limits it (issue 38 item 6).
  const auto host_bound = read(b.build());
  EXPECT_EQ(host_bound.bottleneck, "cpu_overhead");
  EXPECT_NE(host_bound.evidence.dump().find("code the trace does not record"), std::string::npos) << host_bound.evidence.dump();
  // With the rest of the step busy computing, a larger exposed collective (22%) is what limits it.
  TraceBuilder busy;
  busy.device(0);
  corr = 1;
  for (int i = 0; i < 10; ++i) {
    const double t0 = i * 100.0;
    busy.annotation("ProfilerStep#" + std::to_string(i + 1), t0, 100);
    busy.runtime("cudaLaunchKernel", t0 + 0.5, 0.5, corr).kernel("sm90_xmma_gemm_bf16bf16", t0 + 2, 48, corr);
    ++corr;
    busy.runtime("cudaLaunchKernel", t0 + 1.0, 0.5, corr).kernel("ncclDevKernel_Generic_4", t0 + 50, 22, corr);
    ++corr;
    busy.runtime("cudaLaunchKernel", t0 + 1.5, 0.5, corr).kernel("sm90_xmma_gemm_bf16bf16", t0 + 72, 26, corr);
    ++corr;
  }
  EXPECT_EQ(read(busy.build()).bottleneck, "communication");
}

// The tracelens timesformer step on H100 and on MI300X: the host spends the first ~60% of the step in Python
// before it launches anything, then the kernels run. HTA's classes only see the small gaps between kernels:
// with the launches queued ahead (H100) they are kernel waits, launched just in time (MI300X) host waits. Both
// GPUs waited on the host: the GPU had nothing queued (gpu.idle.unqueued_fraction), so both are cpu_overhead.
trace::Trace leading_host_idle(const VendorNames& v, bool queued_ahead) {
  TraceBuilder b;
  b.device(0, v.device, 132, int64_t{80} << 30);
  b.raw().devices.back().vendor = v.vendor;
  b.annotation("ProfilerStep#1", 0, 100);
  const double starts[] = {62, 71, 81, 91}, durs[] = {8, 9, 9, 8};
  for (int k = 0; k < 4; ++k) {
    const double launch = queued_ahead ? 60.0 + 0.4 * k : starts[k] - 0.6;
    b.runtime(v.launch, launch, 0.3, k + 1).kernel(v.gemm, starts[k], durs[k], k + 1);
  }
  return b.build();
}

TEST(VendorVerdict, IdleWithNothingQueuedIsTheHostsOnEitherVendor) {
  for (const bool ahead : {true, false})
    for (const auto& names : {kH100, mi300x("ncclDevKernel_Generic_4")}) {
      const auto r = build_report(leading_host_idle(names, ahead));
      EXPECT_EQ(r["verdict"]["bottleneck"], "cpu_overhead") << names.device << " queued ahead " << ahead << "\n"
                                                             << r["verdict"].dump(1) << r["gpu"]["idle"].dump();
      EXPECT_NEAR(r["gpu"]["idle"]["unqueued_fraction"].get<double>(), ahead ? 0.63 : 0.66, 0.005);
    }
}

TEST(VendorVerdict, CollectiveKernelNamesAcrossLibraries) {
  for (const char* n : {"ncclKernel_AllReduce_RING_LL_Sum_float", "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)",
                        "ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", "rcclKernel_Broadcast",
                        "mscclKernel_Sum_bf16_LL", "multimem_all_reduce_kernel", "multimem_all_gather_kernel",
                        "one_shot_all_reduce_kernel", "two_shot_all_reduce_kernel<bf16>",
                        "vllm::cross_device_reduce_1stage<half, 8>", "quickreduce::allreduce_prototype_twoshot",
                        "allreduce_fusion_kernel_oneshot_lamport<bf16>"})
    EXPECT_TRUE(is_communication_kernel(n)) << n;
  for (const char* n : {"void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float>>",
                        "void cub::DeviceReduceKernel<float>", "triton_red_fused_sum_0", "Cijk_Alik_Bljk_BBS_BH",
                        "attn_fwd", "void at::native::vectorized_elementwise_kernel<4, AddFunctor>"})
    EXPECT_FALSE(is_communication_kernel(n)) << n;
}

}  // namespace
}  // namespace profile_train::analysis
