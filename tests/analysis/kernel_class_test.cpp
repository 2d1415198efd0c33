// Issue 38 items 1-2: what a kernel computes, from the strongest evidence first (analysis/kernel_class.h).
//   - the sourced name table (data/kernel_names.json): 2026 kernel families by name, and the traps of naive
//     substring rules (conv kernels that say "gemm", GEMVs off the tensor cores, "flash" that is not attention);
//   - the evidence order: Kineto's collective args, the launching operator (communication / matrix operators, ATen
//     input dtypes), then the name;
//   - the mechanism, not a file: the shared modern bf16 traces (TraceLens's H100 and MI300X traces) read the same
//     with their operator dtypes dropped, with every kernel renamed to an opaque name, and say "unknown" (never
//     FP32) with both gone; a synthetic expert-parallel MoE step's DeepEP kernels are communication.
#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <string>
#include <vector>

#include "profile_train/analysis/analyze.h"
#include "profile_train/analysis/analyzers.h"
#include "profile_train/trace/importer.h"
#include "trace_builder.h"

namespace profile_train::analysis {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TraceBuilder;

// ---- The name table ---------------------------------------------------------------------------------------------

TEST(KernelNames, TheBuiltInTableLoadsAndEveryFamilySaysWhereItsNamingComesFrom) {
  const auto& t = KernelNameTable::builtin();
  ASSERT_GT(t.families().size(), 30u);
  EXPECT_EQ(t.format_version().substr(0, 2), "1.");
  for (const auto& f : t.families()) {
    EXPECT_FALSE(f.source.empty()) << f.id;
    EXPECT_FALSE(f.prefix.empty() && f.any.empty()) << f.id;
  }
}

TEST(KernelNames, BadTablesGetOneClearError) {
  auto bad = [](const std::string& text) { return KernelNameTable::parse(text, "my.json").status().message(); };
  EXPECT_NE(bad("{").find("my.json: not valid JSON"), std::string::npos);
  EXPECT_NE(bad(R"({"format_version": "2.0", "families": []})").find("not supported"), std::string::npos);
  EXPECT_NE(bad(R"({"format_version": "1.0", "families": [{"id": "x", "kind": "gemm", "any": ["a"]}]})").find("no \"source\""),
            std::string::npos);
  EXPECT_NE(bad(R"({"format_version": "1.0", "families": [{"id": "x", "kind": "matmul", "any": ["a"], "source": "s"}]})")
                .find("unknown \"kind\""),
            std::string::npos);
  EXPECT_NE(bad(R"({"format_version": "1.0", "families": [{"id": "x", "kind": "gemm", "source": "s"}]})").find("matches nothing"),
            std::string::npos);
  EXPECT_NE(bad(R"({"format_version": "1.0", "families": [{"id": "x", "kind": "gemm", "any": [3], "source": "s"}]})")
                .find("not a non-empty string"),
            std::string::npos);
  auto ok = KernelNameTable::parse(R"({"format_version": "1.1", "families": [{"id": "x", "kind": "attention",
      "any": ["my_attn"], "source": "s", "matrix_units": true}]})", "my.json");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  const KernelClass c = ok->classify_name("my_attn_fwd_bf16");
  EXPECT_EQ(c.kind, KernelKind::kAttention);
  EXPECT_TRUE(c.matrix_units);
  EXPECT_EQ(c.precision, Precision::kUnknown);  // this table has no dtype words
}

struct NameCase {
  const char* name;
  KernelKind kind;
  Precision precision;
  bool matrix_units;
};

class KernelNameCases : public ::testing::TestWithParam<NameCase> {};

TEST_P(KernelNameCases, TheNameAloneSaysWhatItCan) {
  const NameCase& k = GetParam();
  const KernelClass c = classify_kernel_name(k.name);
  EXPECT_EQ(c.kind, k.kind) << k.name << ": " << to_string(c.kind);
  EXPECT_EQ(c.precision, k.precision) << k.name << ": " << to_string(c.precision);
  EXPECT_EQ(c.matrix_units, k.matrix_units) << k.name;
  if (c.kind != KernelKind::kOther) EXPECT_EQ(c.kind_from, Evidence::kKernelName);
}

using K = KernelKind;
using P = Precision;
INSTANTIATE_TEST_SUITE_P(
    Families, KernelNameCases,
    ::testing::Values(
        // cuBLAS(Lt) on Hopper / Blackwell: nvjet type letters (t bf16, h fp16, q fp8, o fp4, s fp32 / tf32).
        NameCase{"nvjet_tst_256x128_64x4_1x2_h_bz_coopA_NNT", K::kGemm, P::kBf16, true},
        NameCase{"nvjet_hsh_128x256_64x4_2x1_v_bz_coopA_TNN", K::kGemm, P::kFp16, true},
        NameCase{"nvjet_sm90_qqtst_128x128_128x6_2x1_v_bz_ovscale_bias_TNT", K::kGemm, P::kFp8, true},
        NameCase{"nvjet_sm100_ootst_256x256_64x4_2x1_2cta_h_bz_Avec16UE4M3_Bvec16UE4M3_TNT", K::kGemm, P::kFp4, true},
        NameCase{"nvjet_tss_128x256_64x4_2x1_v_badd_coopA_NTN", K::kGemm, P::kBf16, true},
        NameCase{"nvjet_sss_tf32_128x256_TNT", K::kGemm, P::kTf32, true},
        NameCase{"sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas",
                 K::kGemm, P::kBf16, true},
        NameCase{"sm90_xmma_gemm_e4m3bf16_e4m3f32_f32_tn_n_tilesize128x128x128_cgasize1x2x1_stage4", K::kGemm, P::kFp8, true},
        NameCase{"ampere_bf16_s16816gemm_bf16_128x256_ldg8_f2f_stages_64x3_tn", K::kGemm, P::kBf16, true},
        NameCase{"volta_sgemm_128x64_nn", K::kGemm, P::kFp32, false},
        NameCase{"void gemv2T_kernel_val<int, int, __half, __half, __half, float, 128, 16, 2, 4, false, false>", K::kGemm,
                 P::kFp16, false},
        NameCase{"void cublasLt::splitKreduce_kernel<(int)32, (int)16, int, float, __nv_bfloat16, float>", K::kGemm, P::kBf16, false},
        // CUTLASS 2 and 3.
        NameCase{"void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_128x128_32x3_nn_align4>(...)", K::kGemm, P::kTf32, true},
        NameCase{"void cutlass::Kernel2<cutlass_80_simt_sgemm_64x64_8x5_tn_align1>(cutlass_80_simt_sgemm_64x64_8x5_tn_align1::Params)",
                 K::kGemm, P::kFp32, false},
        NameCase{"void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, "
                 "long, long>>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecialized<12>, "
                 "cutlass::float_e4m3_t, cutlass::bfloat16_t>>>",
                 K::kGemm, P::kFp8, true},
        // Convolutions whose names say gemm.
        NameCase{"sm90_xmma_fprop_implicit_gemm_bf16bf16_bf16f32_f32_nhwckrsc_nhwc_tilesize128x128x64_warpgroupsize1x1x1_g1",
                 K::kConv, P::kBf16, true},
        NameCase{"sm80_xmma_fprop_implicit_gemm_tf32f32_tf32f32_f32_nhwckrsc_nhwc_tilesize128x128x16_stage4", K::kConv, P::kTf32, true},
        NameCase{"void cudnn::detail::implicit_convolve_sgemm<float, float, 128, 5, 5, 3, 3, 3, 1, true, false, true>(int)", K::kConv,
                 P::kFp32, false},
        NameCase{"volta_scudnn_128x64_relu_interior_nn_v1", K::kConv, P::kFp32, false},
        NameCase{"igemm_fwd_gtcx3_nhwc_bf16_bx0_ex1_bt256x64x8_wt64x16x4_ws1x1_wr2x2", K::kConv, P::kBf16, true},
        NameCase{"void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda, c10::convert<float>>", K::kElementwise,
                 P::kFp32, false},
        // Attention.
        NameCase{"void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<64, 128, 128, 4, false, false, cutlass::bfloat16_t>>",
                 K::kAttention, P::kBf16, true},
        NameCase{"void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<flash::CollectiveMainloopFwdSm90<2, "
                 "256, cutlass::bfloat16_t, float, cutlass::arch::Sm90>>>>",
                 K::kAttention, P::kBf16, true},
        NameCase{"fmha_cutlassF_f16_aligned_64x128_rf_sm80(PyTorchMemEffAttention::AttentionKernel<cutlass::half_t>::Params)",
                 K::kAttention, P::kFp16, true},
        NameCase{"cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_kernel0_0", K::kAttention,
                 P::kUnknown, true},  // its f16 is also written for bf16 inputs: only the operator tells
        NameCase{"_ZN5aiter32fmha_fwd_hd192_hd128_bf16_causalE", K::kAttention, P::kBf16, true},
        NameCase{"void flashinfer::norm::RMSNormKernel<8u, __half>(__half*, __half*)", K::kNorm, P::kFp16, false},
        NameCase{"triton_tem_fused_flex_attention_0", K::kAttention, P::kUnknown, false},
        // FP8 GEMM stacks.
        NameCase{"void deep_gemm::fp8_gemm_kernel<4096u, 7168u, 128u, 160u, 128u, 0u, 64u, 9u, 4u, 128u, 128u, 1u, true, "
                 "(deep_gemm::GemmType)1>(__nv_bfloat16*, float*, int*)",
                 K::kGemm, P::kFp8, true},
        NameCase{"bmm_E4m3_E4m3E4m3_Fp32_t128x64x128u2_s6_et64x64_m64x64x32_c1x1x1_rM_TN_transOut_sm100f", K::kGemm, P::kFp8, true},
        // AMD.
        NameCase{"Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1_SN_1LDSB0_APM1_ABV0", K::kGemm, P::kBf16, true},
        NameCase{"Cijk_Alik_Bljk_B_BS_BH_Bias_HA_S_SAV_UserArgs_MT256x128x64_MI16x16x1_SN_LDSB1", K::kGemm, P::kBf16, true},
        NameCase{"Custom_Cijk_Alik_Bljk_F8B8BS_BH_Bias_HA_S_SAB_SAV_UserArgs_MT256x256x128_MI16x16x1", K::kGemm, P::kFp8, true},
        NameCase{"Cijk_Ailk_Bljk_SB_MT128x64x8_SN_LDSB0_ISA1030_LRVW4_FMA_MIAV0", K::kGemm, P::kFp32, false},
        NameCase{"void ck::kernel_gemm_xdl_cshuffle_v3<ck::GridwiseGemmMultiD_ABScale_xdl_cshuffle_v3<ck::f8_fnuz_t, ck::f8_fnuz_t>>",
                 K::kGemm, P::kFp8, true},
        // Communication beyond NCCL.
        NameCase{"ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", K::kCommunication, P::kBf16, false},
        NameCase{"ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", K::kCommunication, P::kUnknown, false},
        NameCase{"void deep_ep::internode::dispatch<true, 8, 768>(int4*, float*, int*, long*)", K::kCommunication, P::kFp32, false},
        NameCase{"void deep_ep::intranode::cached_notify_combine<(int)8>(void**, int*, int, int)", K::kCommunication, P::kUnknown, false},
        NameCase{"void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(vllm::RankData*, vllm::RankSignals)", K::kCommunication,
                 P::kBf16, false},
        NameCase{"void (anonymous namespace)::multimem_all_reduce_kernel<c10::BFloat16, 16>(c10::BFloat16*, unsigned long)",
                 K::kCommunication, P::kBf16, false},
        NameCase{"void flashinfer::trtllm_allreduce_fusion::allreduce_fusion_kernel_oneshot_lamport<1, __nv_bfloat16, 8>()",
                 K::kCommunication, P::kBf16, false},
        NameCase{"moeA2ADispatchKernel", K::kCommunication, P::kUnknown, false},
        NameCase{"void my_all_gather_kernel_v2<float>(float*)", K::kCommunication, P::kFp32, false},
        NameCase{"void at::native::(anonymous namespace)::indexSelectLargeIndex<float, long>", K::kOther, P::kFp32, false},
        // Inductor and the rest.
        NameCase{"triton_poi_fused_mul_silu_2", K::kElementwise, P::kUnknown, false},
        NameCase{"triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_3", K::kReduction, P::kUnknown, false},
        NameCase{"triton_tem_fused_mm_0", K::kGemm, P::kUnknown, false},
        NameCase{"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
                 "FusedOptimizerTensorListMetadata<4>, at::native::(anonymous namespace)::FusedAdamMathFunctor<float, 4>>",
                 K::kOptimizer, P::kFp32, false},
        NameCase{"void at::native::(anonymous namespace)::multi_tensor_apply_kernel<at::native::(anonymous namespace)::"
                 "TensorListMetadata<2>, at::native::(anonymous namespace)::BinaryOpListAlphaFunctor<float, 2, 2, 0>>",
                 K::kElementwise, P::kFp32, false},
        NameCase{"void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::BFloat16, float, c10::BFloat16>", K::kReduction,
                 P::kBf16, false},
        NameCase{"void at::native::normal_kernel<at::CUDAGeneratorImpl*>(at::TensorBase const&, double, double)", K::kOther,
                 P::kFp64, false}));

// ---- The evidence order ----------------------------------------------------------------------------------------

const DeviceCaps kH100{"nvidia", 9, 0, true};
const DeviceCaps kMi300{"amd", -1, -1, true};
const DeviceCaps kV100{"nvidia", 7, 0, true};

TEST(KernelEvidence, OperatorInputDtypesDecideThePrecision) {
  // The name says nothing (an Inductor template, an opaque CuTe-DSL kernel); the ATen operator's inputs do.
  KernelClass c = classify_kernel("triton_tem_fused_mm_0", false, {"aten::mm", "[c10::BFloat16, c10::BFloat16]"}, kH100);
  EXPECT_EQ(c.kind, KernelKind::kGemm);
  EXPECT_EQ(c.precision, Precision::kBf16);
  EXPECT_EQ(c.precision_from, Evidence::kOperatorInputs);
  EXPECT_TRUE(c.matrix_units);
  c = classify_kernel("kernel_kernel_128_64_0", false, {"aten::_scaled_mm", "[c10::Float8_e4m3fn, c10::Float8_e4m3fn, float, float]"},
                      kH100);
  EXPECT_EQ(c.kind, KernelKind::kGemm);
  EXPECT_EQ(c.kind_from, Evidence::kOperator);
  EXPECT_EQ(c.precision, Precision::kFp8);
  EXPECT_TRUE(c.matrix_units);
  c = classify_kernel("kernel_kernel_128_64_0", false,
                      {"aten::_scaled_dot_product_flash_attention", "[c10::Half, c10::Half, c10::Half, Scalar]"}, kH100);
  EXPECT_EQ(c.kind, KernelKind::kAttention);
  EXPECT_EQ(c.precision, Precision::kFp16);
  // cuDNN SDPA's f16 names read 16-bit: the operator says bf16.
  c = classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7", false,
                      {"aten::_scaled_dot_product_cudnn_attention", "[c10::BFloat16, c10::BFloat16, c10::BFloat16]"}, kH100);
  EXPECT_EQ(c.precision, Precision::kBf16);
}

TEST(KernelEvidence, FloatInputsOnTensorCoresAreTf32OnNvidiaAndFp32MatrixCoresOnAmd) {
  KernelClass c = classify_kernel("void cutlass::Kernel2<cutlass_80_tensorop_s1688gemm_256x64_16x4_nn_align4>", false,
                                  {"aten::mm", "[float, float]"}, kH100);
  EXPECT_EQ(c.precision, Precision::kTf32);
  EXPECT_FALSE(c.fp32_matrix());
  c = classify_kernel("volta_sgemm_128x64_nn", false, {"aten::mm", "[float, float]"}, kV100);
  EXPECT_EQ(c.precision, Precision::kFp32);
  EXPECT_TRUE(c.fp32_matrix());  // what AMP / TF32 would speed up
  c = classify_kernel("Cijk_Alik_Bljk_SB_Bias_AS_SAV_UserArgs_MT64x16x32_MI16x16x1_SN_LDSB0", false, {"aten::addmm", "[float, float, float]"},
                      kMi300);
  EXPECT_EQ(c.precision, Precision::kFp32);
  EXPECT_TRUE(c.matrix_units);
  EXPECT_TRUE(c.fp32_matrix());
}

TEST(KernelEvidence, A16BitGemmOnAGpuWithoutSuchUnitsIsNotOnTensorCores) {
  KernelClass c = classify_kernel("triton_tem_fused_mm_0", false, {"aten::mm", "[c10::BFloat16, c10::BFloat16]"}, kV100);
  EXPECT_EQ(c.precision, Precision::kBf16);
  EXPECT_FALSE(c.matrix_units);  // Volta has fp16 tensor cores only
  c = classify_kernel("triton_tem_fused_mm_0", false, {"aten::mm", "[c10::Half, c10::Half]"}, kV100);
  EXPECT_TRUE(c.matrix_units);
}

TEST(KernelEvidence, CollectiveArgsAndCommunicationOperatorsMakeCommunication) {
  KernelClass c = classify_kernel("kernel_kernel_0", true, {}, kH100);
  EXPECT_EQ(c.kind, KernelKind::kCommunication);
  EXPECT_EQ(c.kind_from, Evidence::kCollectiveArgs);
  c = classify_kernel("void custom_ar::opaque_kernel<8>(...)", false, {"record_param_comms", "[c10::BFloat16]"}, kH100);
  EXPECT_EQ(c.kind, KernelKind::kCommunication);
  c = classify_kernel("my_ag_kernel_v2", false, {"_c10d_functional::all_gather_into_tensor", ""}, kH100);
  EXPECT_EQ(c.kind, KernelKind::kCommunication);
  EXPECT_EQ(c.kind_from, Evidence::kOperator);
  // A copy a collective operator launches (flattening the buckets) stays the copy it is.
  c = classify_kernel("void at::native::(anonymous namespace)::CatArrayBatchedCopy<float>", false, {"c10d::allgather_", ""}, kH100);
  EXPECT_EQ(c.kind, KernelKind::kMemory);
}

TEST(KernelEvidence, WrappersOfCompiledCodeDoNotLendTheirInputs) {
  EXPECT_FALSE(operator_inputs_are_kernel_inputs("CompiledFunction"));
  EXPECT_FALSE(operator_inputs_are_kernel_inputs("autograd::engine::evaluate_function: MmBackward0"));
  EXPECT_FALSE(operator_inputs_are_kernel_inputs("## Call CompiledFxGraph fx2 ##"));
  EXPECT_FALSE(operator_inputs_are_kernel_inputs("c10d::allreduce_"));
  EXPECT_TRUE(operator_inputs_are_kernel_inputs("aten::mm"));
  EXPECT_TRUE(operator_inputs_are_kernel_inputs("flash_attn::_flash_attn_forward"));
  // Through the index: a triton kernel under CompiledFunction([float]) with autocast inside stays unknown.
  TraceBuilder b;
  b.device(0, "NVIDIA H100 80GB HBM3", 132);
  b.cpu_op("CompiledFunction", 0, 50, TraceBuilder::kTid, 7);
  b.raw().events.back().inputs = static_cast<uint32_t>(b.raw().op_inputs.size());
  b.raw().op_inputs.push_back({b.raw().strings.intern("[[64, 64]]"), b.raw().strings.intern("[float]"), 0});
  b.runtime("cudaLaunchKernel", 1, 2, 1, TraceBuilder::kTid, 7).kernel("triton_tem_fused_mm_0", 5, 20, 1).external_id(7);
  const trace::Trace t = b.build();
  const TraceIndex idx = build_index(t);
  ASSERT_EQ(idx.kernels.size(), 1u);
  EXPECT_EQ(idx.kernel_class(0).precision, Precision::kUnknown);
  EXPECT_EQ(idx.kernel_class(0).kind, KernelKind::kGemm);
}

TEST(KernelEvidence, ModernDtypeSpellings) {
  EXPECT_EQ(precision_of_dtype("c10::BFloat16"), Precision::kBf16);
  EXPECT_EQ(precision_of_dtype("c10::Half"), Precision::kFp16);
  EXPECT_EQ(precision_of_dtype("c10::Float8_e4m3fn"), Precision::kFp8);
  EXPECT_EQ(precision_of_dtype("c10::Float8_e5m2fnuz"), Precision::kFp8);
  EXPECT_EQ(precision_of_dtype("c10::Float4_e2m1fn_x2"), Precision::kFp4);
  EXPECT_EQ(precision_of_dtype("float"), Precision::kFp32);
  EXPECT_EQ(precision_of_dtype("signed char"), Precision::kInt8);
  EXPECT_EQ(precision_of_dtype("long int"), Precision::kInt);
  EXPECT_EQ(precision_of_dtype("Scalar"), Precision::kUnknown);
}

// ---- A synthetic expert-parallel MoE step --------------------------------------------------------------------------

// 5 steps of 1 ms on an H800: FP8 grouped GEMMs (CUTLASS 3) 400 us, DeepEP dispatch 200 us and combine 200 us (no
// "nccl" anywhere), one attention kernel 100 us, elementwise 50 us, GPU idle 50 us.
trace::Trace moe_step(bool with_names) {
  TraceBuilder b;
  b.device(0, "NVIDIA H800", 132, int64_t{80} << 30);
  b.raw().devices.back().compute_major = 9;
  int64_t corr = 1;
  for (int s = 0; s < 5; ++s) {
    const double t0 = s * 1000.0;
    b.annotation("ProfilerStep#" + std::to_string(s + 1), t0, 1000);
    b.annotation("## backward ##", t0 + 600, 300);
    double at = t0 + 10;
    auto launch = [&](const std::string& name, double dur) {
      b.runtime("cudaLaunchKernel", at - 5, 2, corr).kernel(with_names ? name : "kernel_" + std::to_string(corr % 7), at, dur, corr);
      ++corr;
      at += dur;
    };
    launch("void deep_ep::internode::dispatch<true, 8, 768>(int4*, float*, int*, long*)", 200);
    launch("void cutlass::device_kernel<cutlass::gemm::kernel::GemmUniversal<cutlass::gemm::GroupProblemShape<cute::tuple<long, long, "
           "long>>, cutlass::gemm::collective::CollectiveMma<cutlass::gemm::MainloopSm90ArrayTmaGmmaWarpSpecialized<12>, "
           "cutlass::float_e4m3_t, cutlass::bfloat16_t>>>",
           400);
    launch("void deep_ep::internode::combine<__nv_bfloat16, 8, 768, 4096>(...)", 200);
    launch("void cutlass::device_kernel<flash::enable_sm90_or_later<flash::FlashAttnFwdSm90<cutlass::bfloat16_t>>>", 100);
    launch("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>", 50);
  }
  return b.build();
}

TEST(KernelEvidence, ExpertParallelDispatchAndCombineAreCommunication) {
  const model::Report r = build_typed_report(moe_step(true));
  EXPECT_NEAR(r.breakdown.value_or_zero(Role::kCommunication), 0.40, 0.02);
  EXPECT_NEAR(r.breakdown.value_or_zero(Role::kKernel), 0.55, 0.02);
  ASSERT_TRUE(r.communication.kernel_fraction.has_value());
  EXPECT_NEAR(*r.communication.kernel_fraction, 0.40, 0.02);
  const model::KernelClassRow* gemm = nullptr;
  for (const auto& c : r.gpu.kernel_classes)
    if (c.kind == "gemm") gemm = &c;
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->precision, "fp8");
  EXPECT_DOUBLE_EQ(gemm->matrix_unit_share, 1.0);
  // Of compute time (dispatch and combine left out): GEMM 400, attention 100 on tensor cores of 550.
  ASSERT_TRUE(r.gpu.tensor_core_kernel_share.has_value());
  EXPECT_NEAR(*r.gpu.tensor_core_kernel_share, 500.0 / 550.0, 1e-3);
  EXPECT_NEAR(r.gpu.fp32_eligible_kernel_share.value_or(1), 0.0, 1e-9);
  EXPECT_NE(r.verdict.bottleneck, Bottleneck::kGpuCompute) << r.verdict.summary;
  // Opaque names, no operators: nothing tells, and nothing is counted as compute that might be communication
  // beyond what the trace shows; the shares are of unknown precision, never FP32.
  const model::Report opaque = build_typed_report(moe_step(false));
  EXPECT_DOUBLE_EQ(opaque.breakdown.value_or_zero(Role::kCommunication), 0.0);
  EXPECT_NEAR(opaque.gpu.fp32_eligible_kernel_share.value_or(1), 0.0, 1e-9);
  EXPECT_NEAR(opaque.gpu.tensor_core_kernel_share.value_or(1), 0.0, 1e-9);
}

// ---- The shared modern traces, stripped ---------------------------------------------------------------------------

std::string read_gz(const fs::path& p) {
  std::string out;
  gzFile f = gzopen(p.c_str(), "rb");
  if (f == nullptr) return out;
  char buf[1 << 16];
  int n = 0;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(f);
  return out;
}

enum Strip : unsigned { kKeep = 0, kNoInputTypes = 1, kOpaqueNames = 2 };

model::Report analyzed_variant(const json& original, unsigned strip) {
  json j = original;
  int64_t n = 0;
  for (auto& e : j["traceEvents"]) {
    if (!e.is_object()) continue;
    if ((strip & kNoInputTypes) && e.contains("args") && e["args"].is_object()) e["args"].erase("Input type");
    if ((strip & kOpaqueNames) && e.value("cat", "") == "kernel") e["name"] = "kernel_" + std::to_string(n++ % 97);
  }
  auto t = trace::load_trace_bytes(j.dump(), "variant.json");
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? build_typed_report(*t) : model::Report{};
}

const model::KernelClassRow* row(const model::Report& r, const std::string& kind) {
  for (const auto& c : r.gpu.kernel_classes)
    if (c.kind == kind) return &c;
  return nullptr;
}

class ModernTraceVariants : public ::testing::TestWithParam<const char*> {};

TEST_P(ModernTraceVariants, Bf16StepsReadBf16WhateverTheTraceLacks) {
  const fs::path p = fs::path(PT_TRACES_DIR) / GetParam();
  if (!fs::exists(p)) GTEST_SKIP() << "shared trace absent: " << p;
  const json original = json::parse(read_gz(p));
  const model::Report full = analyzed_variant(original, kKeep);
  const model::KernelClassRow* gemm = row(full, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->precision, "bf16");
  EXPECT_EQ(gemm->precision_from, "operator_inputs");
  EXPECT_GT(gemm->matrix_unit_share, 0.95);
  const double tc = full.gpu.tensor_core_kernel_share.value_or(0);
  EXPECT_GT(tc, 0.3);
  EXPECT_LT(full.gpu.fp32_eligible_kernel_share.value_or(1), 0.02);
  EXPECT_GT(full.gpu.low_precision_matrix_share.value_or(0), 0.3);
  // The roofline says what the GPU section says.
  ASSERT_TRUE(full.efficiency.dtype.has_value());
  EXPECT_EQ(*full.efficiency.dtype, gemm->precision);
  for (const auto& k : full.gpu.top_kernels)
    if (k.category == "gemm") EXPECT_EQ(k.precision, "bf16") << k.name;

  // No "Input type": the names (nvjet / cutlass / xmma / Tensile) still say bf16 on tensor / matrix cores.
  const model::Report no_types = analyzed_variant(original, kNoInputTypes);
  gemm = row(no_types, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->precision, "bf16");
  EXPECT_EQ(gemm->precision_from, "kernel_name");
  EXPECT_NEAR(gemm->matrix_unit_share, row(full, "gemm")->matrix_unit_share, 0.02);
  // What the names cannot tell (ROCm's Triton attn_fwd) turns unknown, not FP32: no share moves to FP32.
  EXPECT_NEAR(no_types.gpu.low_precision_matrix_share.value_or(0) + no_types.gpu.matrix_precision_unknown_share.value_or(0),
              full.gpu.low_precision_matrix_share.value_or(0), 0.02);
  EXPECT_LE(no_types.gpu.tensor_core_kernel_share.value_or(0), tc + 1e-9);
  EXPECT_LT(no_types.gpu.fp32_eligible_kernel_share.value_or(1), 0.02);

  // Every kernel renamed: the operators say what and in which precision.
  const model::Report opaque = analyzed_variant(original, kOpaqueNames);
  gemm = row(opaque, "gemm");
  ASSERT_NE(gemm, nullptr);
  EXPECT_EQ(gemm->kind_from, "operator");
  EXPECT_EQ(gemm->precision, "bf16");
  EXPECT_NEAR(opaque.gpu.tensor_core_kernel_share.value_or(0), tc, 0.05);
  EXPECT_LT(opaque.gpu.fp32_eligible_kernel_share.value_or(1), 0.02);

  // Both gone: unknown, never FP32.
  const model::Report neither = analyzed_variant(original, kNoInputTypes | kOpaqueNames);
  EXPECT_LT(neither.gpu.fp32_eligible_kernel_share.value_or(0), 0.02);
  gemm = row(neither, "gemm");
  if (gemm != nullptr) EXPECT_EQ(gemm->precision, "unknown");
}

INSTANTIATE_TEST_SUITE_P(TraceLens, ModernTraceVariants,
                         ::testing::Values("tracelens/h100/Falconsai_nsfw_image_detection__1016002.json.gz",
                                           "tracelens/mi300/Falconsai_nsfw_image_detection__1016002.json.gz",
                                           "tracelens/h100/facebook_timesformer-base-finetuned-k400__1016002.json.gz",
                                           "tracelens/mi300/facebook_timesformer-base-finetuned-k400__1016002.json.gz"));

}  // namespace
}  // namespace profile_train::analysis
